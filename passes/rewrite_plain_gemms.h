// GEMMs without an epilogue: a 16-bit linear, addmm or matmul with a 2-D weight that the earlier
// rewrites left becomes torchfuse::gemm_epilogue(x, W, b?, None, "none"), one cuBLASLt call whose
// descriptors and algorithm are made once per shape (runtime/gemm_epilogue_op.cpp). ATen's GEMM
// path derives them on every call, host time that a launch-bound model pays per layer. Float32
// GEMMs stay ATen's (cuBLASLt's heuristic picked slower float32 kernels), except where calls time
// their candidates (gemm_autotune): then ATen's GEMM is one of them.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void rewrite_plain_gemms(RewriteContext& ctx);

}  // namespace torchfuse
