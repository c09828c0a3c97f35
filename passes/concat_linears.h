// Linears of one input as one GEMM: 16-bit linears reading the same value with frozen weights that
// src/sibling_weights.h stored together (row ranges of one buffer, in graph order) become one
// linear over the whole buffer, each original result a slice of its last dim. The q, k and v
// projections of a layer written apart become one GEMM, an MLP's gate and up projections another:
// fewer launches (host time in launch-bound calls) and larger GEMMs. A linear is left apart, with
// the reason, where a reader of its result needs it laid out as a linear of its own (a view that
// merges its last dim, a graph output). Float32 linears stay apart (merged, Llama's float32 GEMMs
// ran slower), unless the GEMMs time their algorithms and merged GEMMs time themselves against
// apart (gemm_autotune): then the timing chooses, per shape.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void concat_linears(RewriteContext& ctx);

}  // namespace torchfuse
