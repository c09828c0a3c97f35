// Batch, group and instance norms spelled as the ops they compute, so that they fuse with their
// neighbours (a CNN's norm + ReLU + residual add, a diffusion UNet's GroupNorm + SiLU) where
// ATen runs each as a kernel of its own:
//   batch_norm (inference: running statistics) and instance_norm without input statistics:
//     ((x - mean) * rsqrt(var + eps)) * w + b per channel (dim 1), in float32, rounded once to
//     x's dtype: ATen's batch_norm_elementwise. Constant statistics and affine parameters become
//     float32 constants shaped [C, 1, ...] (rsqrt(var + eps) made here, once).
//   group_norm, and instance_norm with input statistics (no running ones): x reshaped to
//     [N, G, C / G, -1] and upcast to float32, layer_norm over its last two dims, the affine
//     parameters as [G, C / G, 1], cast back, viewed as x's sizes.
// Only float32, float16 and bfloat16 inputs; training-mode batch norms (batch statistics, running
// ones updated) stay as they are, with the reason in the report.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void decompose_norms(RewriteContext& ctx);

}  // namespace torchfuse
