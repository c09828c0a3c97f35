#include "runtime/unplannable_groups.h"

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/schedule.h"

namespace torchfuse {
namespace runtime {

void drop_unplannable_groups(FusionPlan& plan, const std::function<void(const FusionGroup&)>& probe) {
  std::vector<FusionGroup> kept;
  for (auto& g : plan.groups) {
    const bool scans = std::any_of(g.nodes.begin(), g.nodes.end(), [](const ir::Node* n) { return ir::is_scan(n->kind); });
    try {
      if (scans) probe(g);
    } catch (const codegen::PlanRefused& e) {
      const std::string why = "cannot fuse the group " + g.describe() + ": " + e.what() + " (its ops stay in ATen)";
      plan.refusals.push_back(why);
      for (const ir::Node* n : g.nodes) plan.refusals_by_node[n->id].push_back(why);
      continue;
    }
    kept.push_back(std::move(g));
  }
  for (size_t i = 0; i < kept.size(); ++i) kept[i].id = static_cast<int>(i);
  plan.groups = std::move(kept);
}

}  // namespace runtime
}  // namespace torchfuse
