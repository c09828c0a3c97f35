#include "passes/prune_groups.h"

#include <algorithm>

namespace torchfuse {

void prune_groups(PassContext& ctx) {
  std::vector<FusionGroup> kept;
  for (auto& g : ctx.plan.groups) {
    // Views (and expand_as) alone compute nothing: a kernel would only copy what ATen views for free.
    if (std::all_of(g.nodes.begin(), g.nodes.end(), [](const ir::Node* n) { return ir::computes_nothing(n->kind); })) continue;
    // A reduction alone still gains: its prologue/epilogue may be trivial, but the schedule is ours.
    const bool has_reduction = std::any_of(g.nodes.begin(), g.nodes.end(),
                                           [](const ir::Node* n) { return ir::is_reduction(n->kind); });
    // Views count for nothing: ATen's views cost no kernel.
    const auto ops = std::count_if(g.nodes.begin(), g.nodes.end(), [](const ir::Node* n) { return !ir::computes_nothing(n->kind); });
    if (has_reduction || ops >= ctx.min_group_size) {
      g.id = static_cast<int>(kept.size());
      kept.push_back(std::move(g));
      continue;
    }
    std::vector<int> ids;
    for (const ir::Node* n : g.nodes) ids.push_back(n->id);
    ctx.refuse("group of %" + std::to_string(g.nodes.back()->output()->id) + " (" + g.describe() +
                   ") left to ATen: " + std::to_string(ops) + " op(s), fewer than min_group_size " +
                   std::to_string(ctx.min_group_size),
               ids);
  }
  ctx.plan.groups = std::move(kept);
}

}  // namespace torchfuse
