// The row schedule: reductions over the trailing dims. A team of threads per row (part of a
// warp for short rows, a whole block for longer ones); in cached mode each thread keeps its
// part of the row in registers across passes, in looped mode (rows too long to keep) every pass
// re-reads the row. Team reductions are deterministic.
#pragma once

#include "codegen/kernel.h"
#include "codegen/reduction_layout.h"
#include "passes/fusion_plan.h"

namespace torchfuse {
namespace codegen {

// Can the kernel of `layout` scan (cumsum)? Rows in registers: each in one team of one block or
// warp, a few chunks a thread (the scan keeps a total per chunk and scans the team). Looped rows:
// a team of one block (each step scans the team's vectors onto the row's carry), and no scan of
// another scan's output (each scan's step evaluates its input alone).
bool scans_fit(const ReductionLayout& layout, const ReductionAnalysis& analysis);

// `analysis`: the group's, with online sums where layout.online (GroupAnalysis::for_layout).
GeneratedKernel generate_row_reduction(const FusionGroup& group, const ReductionAnalysis& analysis,
                                       const ReductionLayout& layout);

}  // namespace codegen
}  // namespace torchfuse
