#include "runtime/graph_rewrite.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "runtime/fusion_op.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {
namespace {

// TorchScript values replaced by fusion node outputs so far (their nodes are destroyed).
using Replacements = std::unordered_map<const torch::jit::Value*, torch::jit::Value*>;

// A node that reads pieces of a split list into IR views (ListUnpack, __getitem__): only such
// nodes of a group read a list.
bool reads_pieces(const torch::jit::Node* n) {
  const auto kind = n->kind();
  return (kind == c10::prim::ListUnpack || kind == c10::aten::__getitem__) && !n->inputs().empty() &&
         n->input(0)->type()->kind() == c10::TypeKind::ListType;
}

// A reader of pieces, or the op making their list: nodes a group may leave in place when
// another piece is read outside it.
bool reads_or_makes_pieces(const torch::jit::Node* n) {
  if (reads_pieces(n)) return true;
  return n->outputs().size() == 1 && n->output()->type()->kind() == c10::TypeKind::ListType;
}

torch::jit::Value* source_value(const Conversion& conv, const Replacements& replaced, const ir::Value* v) {
  TORCHFUSE_INTERNAL_ASSERT(v->source_index >= 0, "%", v->id, " crosses a group boundary but has no TorchScript value");
  torch::jit::Value* ts = conv.source_values.at(v->source_index);
  auto it = replaced.find(ts);
  return it == replaced.end() ? ts : it->second;
}

// Nodes between the group's first and last node that read its outputs, directly or through
// each other: they must run after the fusion node, which takes the place of the last one.
std::vector<torch::jit::Node*> dependents_inside(const std::vector<torch::jit::Node*>& group_nodes,
                                                 torch::jit::Node* fusion) {
  std::set<torch::jit::Node*> in_group(group_nodes.begin(), group_nodes.end());
  std::set<const torch::jit::Value*> tainted(fusion->outputs().begin(), fusion->outputs().end());
  std::vector<torch::jit::Node*> moved;
  if (group_nodes.size() < 2) return moved;
  for (torch::jit::Node* n = group_nodes.front()->next(); n != group_nodes.back(); n = n->next()) {
    if (in_group.count(n)) continue;
    const auto reads = values_read(n);  // an if node reads what its blocks read
    const bool depends =
        std::any_of(reads.begin(), reads.end(), [&](const torch::jit::Value* v) { return tainted.count(v) > 0; });
    if (!depends) continue;
    moved.push_back(n);
    for (const torch::jit::Value* out : n->outputs()) tainted.insert(out);
  }
  return moved;
}

void rewrite_group(torch::jit::Graph& graph, const Conversion& conv, const FusionGroup& g, int64_t kernel_id,
                   Replacements& replaced) {
  const auto group_nodes = group_source_nodes(conv, g);
  std::vector<torch::jit::Value*> inputs;
  for (const ir::Value* v : g.inputs) inputs.push_back(source_value(conv, replaced, v));
  torch::jit::Node* fusion = graph.create(fusion_group_symbol(), inputs, g.outputs.size());
  fusion->i_(kernel_id_attr(), kernel_id);
  fusion->insertAfter(group_nodes.back());
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    torch::jit::Value* old = source_value(conv, replaced, g.outputs[i]);
    fusion->output(i)->setType(old->type());
    old->replaceAllUsesWith(fusion->output(i));
    replaced[old] = fusion->output(i);
  }
  torch::jit::Node* after = fusion;
  for (torch::jit::Node* n : dependents_inside(group_nodes, fusion)) {
    n->moveAfter(after);
    after = n;
  }
  for (auto it = group_nodes.rbegin(); it != group_nodes.rend(); ++it) {
    const bool used = std::any_of((*it)->outputs().begin(), (*it)->outputs().end(),
                                  [](const torch::jit::Value* out) { return out->hasUses(); });
    // A split list whose other pieces are read outside the group (or by a later group) stays.
    TORCHFUSE_INTERNAL_ASSERT(!used || reads_or_makes_pieces(*it), "fused node ", (*it)->kind().toQualString(),
                              " still has uses outside its group");
    if (!used) (*it)->destroy();
  }
}

}  // namespace

std::vector<torch::jit::Node*> group_source_nodes(const Conversion& conv, const FusionGroup& g) {
  std::set<int> origins;
  for (const ir::Node* n : g.nodes) origins.insert(n->origin);
  std::vector<torch::jit::Node*> out;
  auto add = [&](torch::jit::Node* n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (int o : origins) {
    torch::jit::Node* n = conv.source_nodes.at(o);
    if (reads_pieces(n)) add(n->input(0)->node());
    // A fused cat's list (convert_cat.cpp): its prim::ListConstruct goes with it.
    const bool cat = n->kind() == c10::aten::cat || n->kind() == c10::aten::stack;
    if (cat && !n->inputs().empty() && n->input(0)->node()->kind() == c10::prim::ListConstruct) add(n->input(0)->node());
    add(n);  // (a ListUnpack's pieces have an origin each: one node)
  }
  std::stable_sort(out.begin(), out.end(), [](torch::jit::Node* a, torch::jit::Node* b) { return a->isBefore(b); });
  return out;
}

void rewrite_graph(torch::jit::Graph& graph, const Conversion& conv, const FusionPlan& plan,
                   const std::vector<int64_t>& kernel_ids) {
  TORCHFUSE_INTERNAL_ASSERT(kernel_ids.size() == plan.groups.size(), "one kernel id per group");
  Replacements replaced;
  for (size_t i = 0; i < plan.groups.size(); ++i) rewrite_group(graph, conv, plan.groups[i], kernel_ids[i], replaced);
  torch::jit::EliminateDeadCode(graph.block());
}

}  // namespace runtime
}  // namespace torchfuse
