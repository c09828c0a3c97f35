// Groups whose profiled call no kernel layout can run stay in ATen: the one such case is a scan
// (cumsum), whose rows must stay in one block's registers (codegen::PlanRefused).
#pragma once

#include <functional>

#include "passes/fusion_plan.h"

namespace torchfuse {
namespace runtime {

// Runs `probe` (which builds the group's kernel for its profiled shapes) on each group that
// scans, and drops those it refuses from `plan`, with the reason among its refusals (and in
// refusals_by_node, for explain()). The other groups keep their order; ids are renumbered.
void drop_unplannable_groups(FusionPlan& plan, const std::function<void(const FusionGroup&)>& probe);

}  // namespace runtime
}  // namespace torchfuse
