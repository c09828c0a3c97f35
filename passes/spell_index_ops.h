// Ops that depend on an element's index, spelled as ops the converters fuse, the indices as
// aranges of the sizes (cache_shape_tensors makes those once per set of sizes; the kernel reads
// them as small broadcast inputs):
//   triu(x, k) / tril(x, k)   -> x.masked_fill(arange(cols)[None, :] - arange(rows)[:, None] < k, 0)
//                                (> k for tril): the mask is [rows, cols], broadcast over the batch
//   argmax(x, d, keepdim)     -> amin(where(x == m | x != x, i, n), d, keepdim), m = amax(x, d, True),
//                                i = arange(n) (int32) along dim d, n = x.size(d): the first index of the
//                                largest value, NaN counting as the largest (eager's rule); argmin,
//                                and max / min with their indices used, the same way
//   repeat(x, r)              -> x's dims each unsqueezed, expanded r_i times and merged
//                                (reshape(...).contiguous(): a new tensor, as eager's)
//   repeat_interleave(x, r, d) -> x.unsqueeze(d + 1) expanded r times there and merged with dim d
// Values never change: each result is the element eager's kernel picks (exact selections, no
// arithmetic on values). Left to ATen, with the reason in the report: ranks, dims or repeats the
// graph does not hold as constants where they must be, tensor repeats, bool and complex inputs to
// argmax / argmin, argmax over every dim of a rank-2-or-more input (the flattened input would be a
// view inside the reduction group) or with keepdim (its result's rank differs between versions),
// reduced dims over 262144 elements (the index arange read beside them would cost more than the op).
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void spell_index_ops(RewriteContext& ctx);

}  // namespace torchfuse
