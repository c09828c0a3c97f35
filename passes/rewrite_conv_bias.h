// Convolutions whose result only feeds fusible elementwise ops: the bias leaves the convolution
// and joins the fused kernel that reads the result (conv(x, W) + b.view(C, 1, ...)), as
// TorchInductor does. A ResNet's frozen conv + batch norm + ReLU (freeze() folds the norm into the
// convolution's bias) then runs as the convolution and one kernel, where ATen adds the bias in a
// kernel of its own and the ReLU in another.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void rewrite_conv_bias(RewriteContext& ctx);

}  // namespace torchfuse
