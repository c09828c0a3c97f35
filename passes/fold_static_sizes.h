// Sizes that cannot change between calls, as constants: `x.size(d)` where dim d of x is fixed by
// the graph itself (a frozen weight's dim, a linear's output features, a constant entry of a
// view's size list, carried through transposes, permutes and the like), and the size arithmetic
// on it (NumToTensor, floor_divide, Int...). Llama's rotation reads `q.size(-1) // 2` per call:
// four interpreter ops a layer for each of q and k, and a scalar operand of the fused kernel, where
// the constant folds into the kernel.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void fold_static_sizes(RewriteContext& ctx);

}  // namespace torchfuse
