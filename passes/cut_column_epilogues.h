#pragma once

#include "passes/pass_context.h"

namespace torchfuse {

// Cuts a column group whose element inputs outgrow ctx.cut_column_bytes at its reductions: the
// reductions and the per-column values computed from them stay one group (a column reduction,
// read once), and the element values computed after them (x - x.mean(0)'s subtract) become a
// pointwise group of their own, reading the inputs again and the columns' totals broadcast.
// Past L2 a fused group's second pass reads memory again anyway, and a pointwise kernel streams
// it faster than column passes do (measured H200, docs/performance.md: [16384, 4096] bf16 106.4
// us as two kernels against 131.2 fused, f32 201.7 against 212.5; x / x.sum(1) over
// [16, 4096, 1024] f32 203.4 against 474.0). 16-bit element inputs are cut from a quarter of the
// threshold (see threshold_for). A cut is legal only where the epilogue reads no element
// value the reductions read as well (a softmax's exp, a normalization's x - mean): those would
// have to be written out whole. Every cut, and every group over the size left whole for a
// reason, is logged under "fusion"; a cut is listed in explain().refused.
void cut_column_epilogues(PassContext& ctx);

}  // namespace torchfuse
