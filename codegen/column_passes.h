// Column groups of several passes (softmax, log_softmax, mean/var normalizations and full-size
// epilogues over a leading or middle dim): every pass in one kernel, the blocks of a tile of 32
// columns going over the column's rows in each; where the tiles are few, each tile's rows split
// over blocks that exchange each pass's partial results at a barrier of their own.
#pragma once

#include "codegen/kernel.h"
#include "codegen/reduction_layout.h"
#include "passes/fusion_plan.h"

namespace torchfuse {
namespace codegen {

// Layout vec 1; split as planned (choose_column_pass_split, launched cooperatively where > 1);
// unroll only for a split that loops over its rows.
GeneratedKernel generate_column_normalization(const FusionGroup& group, const ReductionAnalysis& analysis,
                                              const ReductionLayout& layout);

// A split layout launched once per pass (ReductionLayout::phased_blocks): the launches a call
// takes, p.phase 0 to this - 1 (the passes with reductions to exchange, and the last).
int column_pass_launches(const ReductionAnalysis& analysis);

}  // namespace codegen
}  // namespace torchfuse
