#include "passes/prune_groups.h"

namespace torchfuse {

void prune_groups(PassContext& ctx) {
  std::vector<FusionGroup> kept;
  for (auto& g : ctx.plan.groups) {
    if (static_cast<int>(g.nodes.size()) >= ctx.min_group_size) {
      g.id = static_cast<int>(kept.size());
      kept.push_back(std::move(g));
      continue;
    }
    ctx.refuse("group of %" + std::to_string(g.nodes.back()->output()->id) + " (" + g.describe() +
               ") left to ATen: " + std::to_string(g.nodes.size()) + " op(s), fewer than min_group_size " +
               std::to_string(ctx.min_group_size));
  }
  ctx.plan.groups = std::move(kept);
}

}  // namespace torchfuse
