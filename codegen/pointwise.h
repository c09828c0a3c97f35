// The pointwise schedule: a grid-stride loop over the coalesced domain; each thread handles
// `vec` consecutive elements with 16-byte loads and stores when the launch allows it
// (params.vec_ok), one element at a time otherwise.
#pragma once

#include "codegen/kernel.h"
#include "codegen/layout.h"
#include "passes/fusion_plan.h"

namespace torchfuse {
namespace codegen {

GeneratedKernel generate_pointwise(const FusionGroup& group, const PointwiseLayout& layout);

}  // namespace codegen
}  // namespace torchfuse
