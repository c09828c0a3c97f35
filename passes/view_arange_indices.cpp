// Indexing by aranges as views (see view_arange_indices.h).
#include "passes/view_arange_indices.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "src/graph_constants.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// One index: arange(length) + offset, laid along dim `pos` of its `rank` dims (all others size 1).
struct ArangeIndex {
  Value* length = nullptr;  // an int of the graph, or (nullptr) the constant below
  int64_t constant_length = 0;
  int64_t offset = 0;
  int64_t pos = 0;
  int64_t rank = 1;
};

std::optional<int64_t> constant_integral(const Value* v) {
  const std::optional<double> d = constant_number(v);
  if (!d || std::floor(*d) != *d || std::fabs(*d) > 1e15) return std::nullopt;
  return static_cast<int64_t>(*d);
}

// The int an arange's end holds, into a.length: an int value, or a Scalar made from one (the
// tracer's ScalarImplicit(NumToTensor(size))); a constant into a.constant_length (as_view makes
// it an int constant: the analysis leaves the graph as it is). False where it is none of those.
bool set_length(Value* end, ArangeIndex* a) {
  if (end->type()->kind() == c10::TypeKind::IntType) {
    a->length = end;
    return true;
  }
  if (const std::optional<int64_t> c = constant_integral(end)) {
    a->constant_length = *c;
    return true;
  }
  const Node* n = end->node();
  if (n->kind() != c10::aten::ScalarImplicit) return false;
  const Node* t = n->input(0)->node();
  if (t->kind() != c10::prim::NumToTensor || t->input(0)->type()->kind() != c10::TypeKind::IntType) return false;
  a->length = t->input(0);
  return true;
}

// A slice that keeps the whole dim: slice(x, dim, 0 or None, None or INT64_MAX, 1).
bool whole_slice(const Node* n) {
  if (n->inputs().size() != 5) return false;
  const std::optional<c10::IValue> start = constant_value(n->input(2)), end = constant_value(n->input(3));
  const std::optional<int64_t> step = constant_integral(n->input(4));
  const bool start_ok = start && (start->isNone() || (start->isInt() && start->toInt() == 0));
  const bool end_ok = end && (end->isNone() || (end->isInt() && end->toInt() == std::numeric_limits<int64_t>::max()));
  return start_ok && end_ok && step && *step == 1;
}

// What `v` is as an arange index, or nothing (why says what stopped the walk).
std::optional<ArangeIndex> arange_index(Value* v, std::string* why) {
  std::vector<const Node*> steps;  // from the index back towards the arange
  int64_t offset = 0;
  for (int depth = 0; depth < 32; ++depth) {
    Node* n = v->node();
    if (is_kind(n, "aten::unsqueeze") || (is_kind(n, "aten::slice") && whole_slice(n))) {
      steps.push_back(n);
      v = n->input(0);
      continue;
    }
    if (is_kind(n, "aten::add") && n->inputs().size() == 3) {
      const std::optional<int64_t> c = constant_integral(n->input(1)), alpha = constant_integral(n->input(2));
      if (!c || !alpha || *alpha != 1 || *c < 0) break;
      offset += *c;
      v = n->input(0);
      continue;
    }
    if (!is_kind(n, "aten::arange")) break;
    // arange(end, dtype, layout, device, pin_memory); arange(start, end, ...) and
    // arange(start, end, step, ...) only from 0 by 1.
    const size_t count = n->inputs().size();
    if (count == 6 || count == 7) {
      const std::optional<int64_t> start = constant_integral(n->input(0));
      const std::optional<int64_t> step = count == 7 ? constant_integral(n->input(2)) : std::optional<int64_t>(1);
      if (!start || *start != 0 || !step || *step != 1) break;
    } else if (count != 5) {
      break;
    }
    ArangeIndex a;
    if (!set_length(n->input(count == 5 ? 0 : 1), &a)) {
      *why = "an arange's end is not an int the graph computes";
      return std::nullopt;
    }
    a.offset = offset;
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      const Node* s = *it;
      const std::optional<int64_t> d = constant_integral(s->input(1));
      if (!d) {
        *why = "a dim of its index ops is not a constant";
        return std::nullopt;
      }
      if (s->kind() == c10::aten::slice) continue;  // the whole dim: nothing moves
      const int64_t at = *d < 0 ? *d + a.rank + 1 : *d;
      if (at < 0 || at > a.rank) {
        *why = "an unsqueeze's dim is out of range";
        return std::nullopt;
      }
      if (at <= a.pos) ++a.pos;
      ++a.rank;
    }
    return a;
  }
  *why = "an index is not an arange (from 0 by 1, plus a constant), unsqueezed";
  return std::nullopt;
}

// Whether `v` reaches the graph's outputs: through the ops whose result shares its memory (views,
// by their schemas' alias annotations) and the containers built around it.
bool reaches_outputs(const Value* v, int depth = 0) {
  if (depth > 64) return true;
  for (const torch::jit::Use& u : v->uses()) {
    const Node* n = u.user;
    if (n->kind() == c10::prim::Return) return true;
    if (n->kind() == c10::prim::TupleConstruct || n->kind() == c10::prim::ListConstruct ||
        n->kind() == c10::prim::DictConstruct) {
      if (reaches_outputs(n->output(), depth + 1)) return true;
      continue;
    }
    if (!n->blocks().empty()) return true;
    const c10::FunctionSchema* schema = n->kind().is_prim() ? nullptr : n->maybeSchema();
    if (!schema) return true;  // no schema: it may share memory
    for (size_t i = 0; i < n->outputs().size() && i < schema->returns().size(); ++i)
      if (schema->returns()[i].alias_info() && reaches_outputs(n->output(i), depth + 1)) return true;
  }
  return false;
}

// Whether any node writes a tensor in place (a mutable schema): the view would see writes to x,
// which a copy does not.
bool writes_in_place(const torch::jit::Block* block) {
  for (const Node* n : block->nodes()) {
    for (const torch::jit::Block* b : n->blocks())
      if (writes_in_place(b)) return true;
    if (n->kind().is_prim()) continue;
    const c10::FunctionSchema* schema = n->maybeSchema();
    if (schema && schema->is_mutable()) return true;
  }
  return false;
}

// Why `index` stays ("" where it becomes a view; `found` then holds its indices).
std::string why_index_stays(RewriteContext& ctx, Node* index, std::vector<ArangeIndex>* found,
                            std::vector<int64_t>* positions, int64_t* rank) {
  const ir::Type* self = ctx.type_of(index->input(0));
  if (!self || !self->is_tensor()) return "its input's type was not profiled";
  Node* list = index->input(1)->node();
  if (list->kind() != c10::prim::ListConstruct) return "its indices are not a list built in the graph";
  if (list->inputs().size() > self->sizes.size()) return "more indices than its input has dims";
  for (Value* v : list->inputs()) {
    if (v->type()->kind() != c10::TypeKind::TensorType) return "an index is not a tensor (a dim taken whole)";
    const ir::Type* t = ctx.type_of(v);
    if (!t || !t->is_tensor()) return "an index's type was not profiled";
    if (t->dtype != c10::ScalarType::Long && t->dtype != c10::ScalarType::Int) return "an index is not an integer tensor";
    std::string why;
    const std::optional<ArangeIndex> a = arange_index(v, &why);
    if (!a) return why;
    // The walk and the profile agree: the index's sizes are 1 but along its arange.
    if (static_cast<int64_t>(t->sizes.size()) != a->rank) return "an index's rank is not the profile's";
    for (int64_t d = 0; d < a->rank; ++d)
      if (d != a->pos && t->sizes[d] != 1) return "an index has more than one dim above size 1";
    found->push_back(*a);
  }
  if (found->empty()) return "no index tensors";
  *rank = 0;
  for (const ArangeIndex& a : *found) *rank = std::max(*rank, a.rank);
  for (const ArangeIndex& a : *found) {
    const int64_t p = a.pos + (*rank - a.rank);  // right-aligned, as indices broadcast
    if (!positions->empty() && p <= positions->back())
      return "its aranges do not lie along increasing dims (the result is no view of its input as laid out)";
    positions->push_back(p);
  }
  if (reaches_outputs(index->output())) return "its result is returned (a view would alias its input)";
  return "";
}

Value* as_view(RewriteContext& ctx, Node* index, const std::vector<ArangeIndex>& found,
               const std::vector<int64_t>& positions, int64_t rank) {
  torch::jit::Graph& g = ctx.graph;
  torch::jit::WithInsertPoint point(index);
  Value* cur = index->input(0);
  for (size_t j = 0; j < found.size(); ++j) {
    const ArangeIndex& a = found[j];
    Value* length = a.length ? a.length : g.insertConstant(a.constant_length);
    cur = g.insert(c10::aten::narrow, {cur, static_cast<int64_t>(j), a.offset, length});
  }
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (next < positions.size() && positions[next] == d) {
      ++next;
      continue;
    }
    cur = g.insert(c10::aten::unsqueeze, {cur, d});
  }
  return cur;
}

}  // namespace

void view_arange_indices(RewriteContext& ctx) {
  std::vector<Node*> candidates;
  for (Node* n : ctx.graph.nodes())
    if (is_kind(n, "aten::index") && n->inputs().size() == 2) candidates.push_back(n);
  if (candidates.empty()) return;
  if (writes_in_place(ctx.graph.block())) {
    for (Node* n : candidates)
      ctx.refused(node_name(n) + " stays an index: the graph writes tensors in place (a view would see the writes)");
    return;
  }
  for (Node* n : candidates) {
    std::vector<ArangeIndex> found;
    std::vector<int64_t> positions;
    int64_t rank = 0;
    const std::string why = why_index_stays(ctx, n, &found, &positions, &rank);
    if (!why.empty()) {
      ctx.refused(node_name(n) + " stays an index: " + why);
      continue;
    }
    Value* view = as_view(ctx, n, found, positions, rank);
    ctx.inherit_type(view, n->output());
    ctx.applied(node_name(n) + " indexed by aranges -> narrow and unsqueeze views of its input (ATen would "
                "gather it on every call)");
    n->output()->replaceAllUsesWith(view);
    n->destroy();
  }
}

}  // namespace torchfuse
