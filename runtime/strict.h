// CompileOptions::strict: a specialization must leave no op that torchfuse can fuse (elementwise
// ops and reductions) to ATen. Opaque ops (matmul, conv, ops the converters do not take) are fine.
#pragma once

#include "passes/fusion_plan.h"
#include "src/frontend.h"

namespace torchfuse {

// Throws torchfuse::Error naming, per TorchScript node, the IR ops left out of every fusion
// group and the refusals that name them.
void check_all_fused(const Conversion& conv, const FusionPlan& plan);

}  // namespace torchfuse
