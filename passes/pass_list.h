// The fusion pipeline: one named list of passes, run in order.
#pragma once

#include "passes/pass_context.h"

namespace torchfuse {

// Runs every pass over ctx.graph, filling ctx.plan. With the "passes" log switch the plan is
// printed after each pass.
void run_fusion_passes(PassContext& ctx);

}  // namespace torchfuse
