#include "runtime/strict.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <torch/csrc/jit/ir/ir.h>

#include "src/error.h"

namespace torchfuse {
namespace {

// (Views and expand_as compute nothing: left to ATen, they stay views, which strict allows.)
bool fusible(const ir::Node* n) {
  return (ir::is_pointwise(n->kind) && !ir::computes_nothing(n->kind)) || ir::along_dims(n->kind);
}

// The refusals naming any of `nodes`, each once, in the order they were made.
std::vector<std::string> reasons_for(const FusionPlan& plan, const std::vector<const ir::Node*>& nodes) {
  std::vector<std::string> out;
  for (const ir::Node* n : nodes) {
    auto it = plan.refusals_by_node.find(n->id);
    if (it == plan.refusals_by_node.end()) continue;
    for (const auto& why : it->second)
      if (std::find(out.begin(), out.end(), why) == out.end()) out.push_back(why);
  }
  return out;
}

}  // namespace

void check_all_fused(const Conversion& conv, const FusionPlan& plan) {
  std::set<const ir::Node*> grouped;
  for (const auto& g : plan.groups) grouped.insert(g.nodes.begin(), g.nodes.end());
  std::map<int, std::vector<const ir::Node*>> unfused;  // by origin (TorchScript node)
  for (const ir::Node* n : conv.graph->nodes())
    if (fusible(n) && !grouped.count(n)) unfused[n->origin].push_back(n);
  if (unfused.empty()) return;

  std::ostringstream os;
  os << "torchfuse (strict): " << unfused.size() << " op(s) that torchfuse can fuse are left to ATen:";
  for (const auto& [origin, nodes] : unfused) {
    os << "\n  " << conv.source_nodes.at(origin)->kind().toQualString() << " -> %" << nodes.back()->output()->id
       << " (IR ops:";
    for (const ir::Node* n : nodes) os << " %" << n->output()->id << " " << ir::op_name(n->kind);
    os << ")";
    const auto reasons = reasons_for(plan, nodes);
    if (reasons.empty()) os << "\n      no refusal recorded";
    for (const auto& why : reasons) os << "\n      refused: " << why;
  }
  throw Error(os.str());
}

}  // namespace torchfuse
