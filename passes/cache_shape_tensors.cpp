#include "passes/cache_shape_tensors.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/ir.h>

#include "src/error.h"
#include "src/shape_tensors.h"

namespace torchfuse {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

c10::Symbol sym(const char* qual) { return c10::Symbol::fromQualString(qual); }

bool is_constant(const Value* v) { return v->node()->kind() == c10::prim::Constant; }
bool is_int(const Value* v) { return v->type()->kind() == c10::TypeKind::IntType; }
bool is_tensor(const Value* v) { return v->type()->kind() == c10::TypeKind::TensorType; }
// What the call can hand back to the graph: tensors and ints.
bool exportable(const Value* v) { return is_tensor(v) || is_int(v); }

// Computes the same outputs from the same inputs, writes nothing and does nothing else.
bool pure(const Node* n) {
  if (!n->blocks().empty()) return false;
  static const std::set<c10::Symbol> plumbing = {c10::prim::ListConstruct, c10::prim::ListUnpack,
                                                 c10::prim::TupleConstruct, c10::prim::TupleUnpack,
                                                 c10::prim::NumToTensor};
  if (plumbing.count(n->kind())) return true;
  if (n->kind().is_prim()) return false;  // GetAttr, calls, If/Loop, Python ops, ...
  if (n->hasSideEffects() || n->isNondeterministic()) return false;
  const c10::FunctionSchema* schema = n->maybeSchema();
  return schema && !schema->is_mutable();
}

// The pass's state over one graph.
class ShapeTensorCut {
 public:
  explicit ShapeTensorCut(RewriteContext& ctx) : ctx_(ctx), graph_(ctx.graph) {}

  void run() {
    pin_devices();
    db_ = std::make_unique<torch::jit::AliasDb>(std::shared_ptr<Graph>(&graph_, [](Graph*) {}));
    find_returned();
    find_region();
    add_causal_checks();
    shrink_to_exportable();
    for (const std::vector<Node*>& part : parts()) cut(part);
    undo_unused_causal_checks();
  }

 private:
  bool in_region(const Value* v) const { return region_.count(v->node()) > 0; }

  // A tensor's device is the same on every call of a specialization (its inputs' devices are
  // guarded): `x.device` becomes a constant, so that `arange(t, device=x.device)` depends on
  // sizes alone.
  void pin_devices() {
    for (Node* n : graph_.nodes()) {
      if (n->kind() != c10::prim::device || n->inputs().size() != 1) continue;
      const ir::Type* t = ctx_.type_of(n->input());
      if (!t || !t->is_tensor()) continue;
      torch::jit::WithInsertPoint point(n);
      n->output()->replaceAllUsesWith(graph_.insertConstant(t->device));
    }
  }

  // Nodes whose every input is a constant, an int (a size: part of the key) or a region value.
  void find_region() {
    for (Node* n : graph_.nodes()) {
      if (!pure(n)) continue;
      bool ok = true;
      for (const Value* v : n->inputs()) ok = ok && (is_constant(v) || in_region(v) || is_int(v));
      if (!ok) continue;
      // The call hands out the same tensors on every call: nothing may write them or their
      // inputs, and the caller may not get them (it could write them).
      if (db_->hasWriters(n)) continue;
      bool returned = false;
      for (const Value* v : n->outputs()) returned = returned || returned_.count(v) > 0;
      if (returned) continue;
      region_.insert(n);
    }
  }

  // Values whose memory the graph's outputs may share: the outputs, what the containers among
  // them hold, and what the views among those view (the schemas' alias annotations); anything
  // with no schema (If, dicts, ...) may share its inputs'. (AliasDb answers this for the whole
  // type once any tensor of it reaches a list of optional tensors, as aten::index's indices do.)
  void find_returned() {
    std::vector<const Value*> work(graph_.outputs().begin(), graph_.outputs().end());
    while (!work.empty()) {
      const Value* v = work.back();
      work.pop_back();
      if (!returned_.insert(v).second) continue;
      const Node* p = v->node();
      if (p->kind() == c10::prim::Param || p->kind() == c10::prim::Constant) continue;
      const c10::FunctionSchema* schema = p->kind().is_prim() ? nullptr : p->maybeSchema();
      if (schema && p->blocks().empty()) {
        if (v->offset() >= schema->returns().size() || !schema->returns()[v->offset()].alias_info()) continue;
        for (size_t j = 0; j < p->inputs().size(); ++j)
          if (j >= schema->arguments().size() || schema->arguments()[j].alias_info()) work.push_back(p->input(j));
        continue;
      }
      for (const Value* in : p->inputs()) work.push_back(in);
      for (const torch::jit::Block* b : p->blocks())
        for (const Value* out : b->outputs()) work.push_back(out);
    }
  }

  // Prepared masks of attention calls computed in the region: the region checks what they are
  // (torchfuse::mask_kind: causal, open or any) and the call reads the answer as its mask_kind.
  void add_causal_checks() {
    for (Node* n : graph_.nodes()) {
      if (!is_kind(n, "torchfuse::attention") || n->inputs().size() != 10) continue;
      Value* mask = n->input(3);
      const auto causal = torch::jit::toIValue(n->input(5));
      const auto prepared = torch::jit::toIValue(n->input(6));
      if (!in_region(mask) || !causal || causal->toBool() || !prepared || !prepared->toBool()) continue;
      Node* check = graph_.create(sym("torchfuse::mask_kind"), {mask}, 1);
      check->output()->setType(c10::IntType::get());
      check->insertAfter(mask->node());
      region_.insert(check);
      checks_.push_back({n, check, n->input(8), false});
      n->replaceInput(8, check->output());
    }
  }

  bool used_outside(const Value* v) const {
    for (const torch::jit::Use& u : v->uses())
      if (!region_.count(u.user)) return true;
    return false;
  }

  // Nodes whose values the rest of the graph reads in a type the call cannot return stay out.
  void shrink_to_exportable() {
    for (bool changed = true; changed;) {
      changed = false;
      for (Node* n : graph_.nodes().reverse()) {
        if (!region_.count(n)) continue;
        for (const Value* v : n->outputs()) {
          if (!used_outside(v) || exportable(v)) continue;
          region_.erase(n);
          changed = true;
          break;
        }
      }
    }
  }

  // The region's connected parts, each in graph order, in the order of their first nodes.
  std::vector<std::vector<Node*>> parts() const {
    std::vector<Node*> order;
    std::unordered_map<const Node*, size_t> index;
    for (Node* n : graph_.nodes()) {
      if (!region_.count(n)) continue;
      index[n] = order.size();
      order.push_back(n);
    }
    std::vector<size_t> parent(order.size());
    std::iota(parent.begin(), parent.end(), 0);
    std::function<size_t(size_t)> root = [&](size_t i) { return parent[i] == i ? i : parent[i] = root(parent[i]); };
    for (size_t i = 0; i < order.size(); ++i) {
      for (const Value* v : order[i]->inputs()) {
        auto it = index.find(v->node());
        if (it != index.end()) parent[root(i)] = root(it->second);
      }
    }
    std::map<size_t, size_t> part_of_root;  // root -> part, in order of first node
    std::vector<std::vector<Node*>> out;
    for (size_t i = 0; i < order.size(); ++i) {
      auto [it, fresh] = part_of_root.emplace(root(i), out.size());
      if (fresh) out.emplace_back();
      out[it->second].push_back(order[i]);
    }
    return out;
  }

  // Some tensor of rank 1 or more: a part of int arithmetic alone saves nothing.
  bool computes_tensors(const std::vector<Node*>& part) const {
    for (const Node* n : part) {
      for (const Value* v : n->outputs()) {
        const ir::Type* t = ctx_.type_of(v);
        if (is_tensor(v) && t && t->is_tensor() && t->rank() > 0) return true;
      }
    }
    return false;
  }

  void cut(const std::vector<Node*>& part) {
    if (!computes_tensors(part)) return;
    std::unordered_set<const Node*> mine(part.begin(), part.end());
    std::vector<Value*> keys, tensors, ints;
    Node* last_key = nullptr;  // the key computed last, where the call goes after
    const Value* last_key_value = nullptr;
    for (Node* n : part) {
      for (Value* v : n->inputs()) {
        if (is_constant(v) || mine.count(v->node()) || std::count(keys.begin(), keys.end(), v)) continue;
        keys.push_back(v);
        Node* p = v->node();
        if (p->kind() == c10::prim::Param || (last_key && !last_key->isBefore(p))) continue;
        last_key = p;
        last_key_value = v;
      }
      for (Value* v : n->outputs()) {
        if (!used_outside(v)) continue;
        (is_tensor(v) ? tensors : ints).push_back(v);
      }
    }
    for (const std::vector<Value*>* values : {&tensors, &ints}) {
      for (const Value* v : *values) {
        if (!reads_before(v, last_key)) continue;
        ctx_.refused("shape tensors at " + node_name(part.front()) + ": %" + v->debugName() + " is read before the size %" +
                     last_key_value->debugName() + " it depends on is known");
        return;
      }
    }

    int64_t id = -1;
    auto cut = std::make_shared<ShapeTensors>();
    cut->graph = subgraph(part, keys, tensors, ints);
    cut->description = describe(part, keys, tensors);
    ctx_.report.owned.push_back(register_shape_tensors(cut, &id));
    replace(part, last_key, id, keys, tensors, ints);
    ctx_.applied(cut->description);
    for (Check& c : checks_) c.cut = c.cut || mine.count(c.check) > 0;
    for (auto it = part.rbegin(); it != part.rend(); ++it) (*it)->destroy();
  }

  // Whether a reader of `v` comes before `key` (the call, placed after it, would be too late).
  bool reads_before(const Value* v, const Node* key) const {
    if (!key) return false;
    for (const torch::jit::Use& u : v->uses())
      if (u.user != graph_.return_node() && u.user->isBefore(key)) return true;
    return false;
  }

  std::shared_ptr<Graph> subgraph(const std::vector<Node*>& part, const std::vector<Value*>& keys,
                                  const std::vector<Value*>& tensors, const std::vector<Value*>& ints) const {
    auto sub = std::make_shared<Graph>();
    std::unordered_map<const Value*, Value*> env;
    for (const Value* k : keys) env[k] = sub->addInput()->setType(c10::IntType::get());
    auto lookup = [&](Value* v) -> Value* {
      auto it = env.find(v);
      if (it != env.end()) return it->second;
      TORCHFUSE_INTERNAL_ASSERT(is_constant(v), "shape tensors: %", v->debugName(), " is neither a key nor made here");
      Node* c = sub->insertNode(sub->createClone(v->node(), [](Value*) -> Value* { return nullptr; }));
      env[v] = c->output();
      return c->output();
    };
    for (Node* n : part) {
      Node* c = sub->insertNode(sub->createClone(n, lookup));
      for (size_t i = 0; i < n->outputs().size(); ++i) env[n->output(i)] = c->output(i);
    }
    auto mapped = [&](const std::vector<Value*>& vs) {
      std::vector<Value*> out;
      for (const Value* v : vs) out.push_back(env.at(v));
      return out;
    };
    sub->registerOutput(sub->insertNode(sub->createList(c10::TensorType::get(), mapped(tensors)))->output());
    sub->registerOutput(sub->insertNode(sub->createList(c10::IntType::get(), mapped(ints)))->output());
    return sub;
  }

  // The call after the last key (or where the part began), its outputs in place of the part's.
  void replace(const std::vector<Node*>& part, Node* last_key, int64_t id, const std::vector<Value*>& keys,
               const std::vector<Value*>& tensors, const std::vector<Value*>& ints) {
    torch::jit::WithInsertPoint point(last_key ? last_key->next() : part.front());
    Value* key_list = graph_.insertNode(graph_.createList(c10::IntType::get(), keys))->output();
    Node* call = graph_.insertNode(graph_.create(sym("torchfuse::shape_tensors"), {graph_.insertConstant(id), key_list}, 2));
    call->output(0)->setType(c10::ListType::ofTensors());
    call->output(1)->setType(c10::ListType::ofInts());
    auto unpack = [&](Value* list, const std::vector<Value*>& values) {
      if (values.empty()) return;
      Node* u = graph_.insertNode(graph_.createListUnpack(list, values.size()));
      for (size_t i = 0; i < values.size(); ++i) {
        u->output(i)->copyMetadata(values[i]);
        ctx_.inherit_type(u->output(i), values[i]);
        values[i]->replaceAllUsesWith(u->output(i));
      }
    };
    unpack(call->output(0), tensors);
    unpack(call->output(1), ints);
  }

  std::string describe(const std::vector<Node*>& part, const std::vector<Value*>& keys,
                       const std::vector<Value*>& tensors) const {
    std::ostringstream os;
    os << "shape tensors at " << node_name(part.front()) << ": " << part.size() << " ops computed once per";
    if (keys.empty()) os << " specialization";
    for (size_t i = 0; i < keys.size(); ++i) os << (i ? ", %" : " value of %") << keys[i]->debugName();
    os << " -> ";
    for (size_t i = 0; i < tensors.size(); ++i) os << (i ? ", %" : "%") << tensors[i]->debugName();
    for (const Check& c : checks_)
      if (std::count(part.begin(), part.end(), c.check)) os << "; mask of " << node_name(c.attention) << " checked causal or open";
    return os.str();
  }

  // Mask checks whose mask stayed in the graph would read it on every call: they go.
  void undo_unused_causal_checks() {
    for (const Check& c : checks_) {
      if (c.cut) continue;
      c.attention->replaceInput(8, c.unchecked);
      c.check->destroy();
    }
  }

  struct Check {
    Node* attention;    // reads the check as its mask_kind (input 8)
    Node* check;        // torchfuse::mask_kind
    Value* unchecked;   // the call's mask_kind before (the constant 0)
    bool cut = false;   // its check went into a torchfuse::shape_tensors call
  };

  RewriteContext& ctx_;
  Graph& graph_;
  std::unique_ptr<torch::jit::AliasDb> db_;  // made after pin_devices
  std::unordered_set<const Value*> returned_;  // find_returned
  std::unordered_set<const Node*> region_;
  std::vector<Check> checks_;
};

}  // namespace

void cache_shape_tensors(RewriteContext& ctx) { ShapeTensorCut(ctx).run(); }

}  // namespace torchfuse
