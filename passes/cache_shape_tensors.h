// Tensors a graph computes from sizes and constants alone (Hugging Face's position ids and causal
// mask construction, rotary cos/sin tables, arange-based index masks) are the same on every call
// with the same sizes. Each connected part of them becomes one torchfuse::shape_tensors call
// (src/shape_tensors.h), keyed by the ints it reads (sizes and the like), which computes them on
// the first call with a key and returns the kept tensors after that: their kernels and ATen calls
// leave the per-call path.
//
// Where such a part makes an attention call's prepared mask, torchfuse::mask_kind checks the mask
// once per key, and the call runs causal without it where it is causal, and without it where
// every position takes part (Hugging Face's ViT passes such a mask; with it ATen ran its math
// kernel).
//
// Left in the graph: ops with side effects, random ops, ops that write (or whose results are
// written later, or alias the graph's outputs), control flow, and parts with no tensor of rank
// 1 or more to compute.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void cache_shape_tensors(RewriteContext& ctx);

}  // namespace torchfuse
