// 2-D convolutions and the elementwise ops between them run in channels-last order (NHWC), as
// TorchInductor's layout optimization does. cuDNN's convolutions work in NHWC: given NCHW
// tensors, ATen's cuDNN path transposes the input and the result around each convolution (a
// ResNet-50 call on an H200 ran 67 such transposes in bfloat16). Here:
//   - each frozen 4-D convolution weight is stored channels-last, so the convolution writes
//     channels-last results (ATen follows the weight's layout): float16 and bfloat16 ones, and
//     float32 ones off CUDA (on CUDA, cuDNN would run those NHWC in TF32, unlike eager's call);
//   - each connected region of fusible elementwise ops reading such results (a folded batch norm's
//     bias and ReLU, a residual add), or reading only tensors already laid out channels-last (a
//     layer norm's [N, H, W, C] result permuted back, as in ConvNeXt), computes over the permuted
//     [N, H, W, C] view of its inputs and writes [N, H, W, C] contiguous, and its readers outside
//     see permute(., [0, 3, 1, 2]) of that: the same values in a channels-last tensor, which the
//     next convolution reads as it is;
//   - a reader that might depend on a tensor's layout (a view, a graph output, an op torchfuse does
//     not know to be layout-agnostic) reads contiguous() of it: the layout eager had there. A
//     graph output whose eager value was channels-last too takes the region's result as it is.
// Values do not change (the same ops on the same elements); only where elements live.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void rewrite_channels_last(RewriteContext& ctx);

}  // namespace torchfuse
