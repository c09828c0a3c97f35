// Schedules that split one reduction across many blocks: the column schedule (reduced dims
// leading or in the middle: threads along the contiguous kept dims) and the full schedule
// (everything reduces to one value). Blocks write partial results; a second kernel,
// "<name>_combine", adds them in a fixed order (deterministic, no float atomics) and runs the
// epilogue. A column reduction that needs no split finishes in the first kernel.
#pragma once

#include "codegen/kernel.h"
#include "codegen/layout.h"
#include "codegen/reduction_layout.h"
#include "passes/fusion_plan.h"

namespace torchfuse {
namespace codegen {

constexpr int kCombineBlock = 1024;

GeneratedKernel generate_full_reduction(const FusionGroup& group, const PointwiseLayout& layout, int block);
GeneratedKernel generate_column_reduction(const FusionGroup& group, const ReductionLayout& layout);

}  // namespace codegen
}  // namespace torchfuse
