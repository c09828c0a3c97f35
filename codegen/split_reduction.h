// Schedules that split one reduction across many blocks: the column schedule (reduced dims
// leading or in the middle: threads along the contiguous kept dims) and the full schedule
// (everything reduces to one value). Blocks write partial results; the last block of a
// reduction to finish (counted in runtime::stream_counters) adds them in a fixed order
// (deterministic, no float atomics) and runs the epilogue: one kernel either way. (Column groups
// of several passes: codegen/column_passes.h.)
#pragma once

#include "codegen/kernel.h"
#include "codegen/layout.h"
#include "codegen/reduction_layout.h"
#include "passes/fusion_plan.h"

namespace torchfuse {
namespace codegen {

GeneratedKernel generate_full_reduction(const FusionGroup& group, const ReductionAnalysis& analysis,
                                        const PointwiseLayout& layout, int block);
GeneratedKernel generate_column_reduction(const FusionGroup& group, const ReductionAnalysis& analysis,
                                          const ReductionLayout& layout);

}  // namespace codegen
}  // namespace torchfuse
