// GEMM epilogues: linear/addmm/matmul followed by a bias, an activation, a residual add or a cast
// become one cuBLASLt call (runtime/gemm_epilogue_op.h) with the matching epilogue.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void rewrite_gemm_epilogues(RewriteContext& ctx);

}  // namespace torchfuse
