// aten::index with two or more index tensors whose strides differ once broadcast (aranges shaped
// [B, 1, 1, 1] and [1, 1, 1, S], as Hugging Face's masks index them): on CUDA, ATen copies each
// index contiguous on every call, so that its kernel reads them with one set of strides (BERT's
// padding mask: two copy kernels per call). Broadcast and made contiguous in the graph instead
// (aten::broadcast_tensors, aten::contiguous), they are computed from what the indices are computed
// from: where that is sizes alone, cache_shape_tensors keeps them with the indices, made once per
// size, and the index reads them as they are. Values are unchanged.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void broadcast_indices(RewriteContext& ctx);

}  // namespace torchfuse
