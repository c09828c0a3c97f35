// x[i_0, ..., i_{k-1}] where each index is an arange over one dim of the indices' broadcast shape,
// in the order of x's dims (Hugging Face's padding mask:
// mask[arange(B)[:, None, None, None], (arange(S) + offset)[None, None, None, :]]), is a view of
// x: x.narrow(j, offset_j, n_j) for each j, with a size-1 dim wherever no index lies. ATen
// gathers it element by element on every call (an H200: 3.8 us for BERT's [8, 128] mask, its
// indices already broadcast); as a view it costs nothing, and the kernel that reads the mask
// reads x. Aranges longer than x's dim raise as the index would (narrow's bounds check, with
// narrow's message). Left alone: results the graph returns (the view would alias x), graphs that
// write tensors in place, and indices that are anything else.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void view_arange_indices(RewriteContext& ctx);

}  // namespace torchfuse
