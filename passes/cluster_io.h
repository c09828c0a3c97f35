// Moving groups between the plan and the ClusterSet the merging passes work on.
#pragma once

#include "passes/legality.h"
#include "passes/pass_context.h"

namespace torchfuse {

// One cluster per existing group of ctx.plan, in plan order.
ClusterSet clusters_from_plan(const PassContext& ctx);
// Replaces ctx.plan.groups by the non-empty clusters, ordered by first node, with ids 0, 1, ...
// (only membership is set; finalize_groups fills in the rest).
void clusters_to_plan(const ClusterSet& set, PassContext& ctx);

}  // namespace torchfuse
