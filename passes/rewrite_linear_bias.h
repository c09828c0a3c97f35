// Float32 linear layers whose result only feeds pointwise ops: the bias leaves the GEMM and joins
// the fused kernel that reads the result (aten::linear(x, W) + b), as TorchInductor does.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void rewrite_linear_bias(RewriteContext& ctx);

}  // namespace torchfuse
