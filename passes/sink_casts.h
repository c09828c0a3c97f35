// A dtype cast whose result is only gathered from (aten::index, aten::index_select), sized and
// asked its device moves after the gather: the gather reads the uncast tensor and the cast applies to what it
// gathered, the same elements converted. Cast after, it joins the fused kernel reading the gather
// (BERT's padding mask: to(bool), then index by shape tensors, then the fused mask kernel), where
// before it ran as a kernel of its own.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void sink_casts(RewriteContext& ctx);

}  // namespace torchfuse
