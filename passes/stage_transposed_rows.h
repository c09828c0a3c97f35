// A row op that writes its rows full size (softmax, log_softmax, layer norm, RMS norm over trailing
// dims) whose input is transposed against its rows (the rows' elements lie a stride apart in
// memory, and another dim's are adjacent) gets an aten::contiguous before it.
// The copy becomes a tiled pointwise kernel, coalesced on both sides, and the reduction reads its
// rows contiguous: two kernels where one would read every row element by element across lines.
// Only inputs of at least kStageMinBytes: below that, the strided reads cost less than a second
// launch. Values are unchanged (a copy).
#pragma once

#include <cstdint>

#include "passes/graph_rewrites.h"

namespace torchfuse {

constexpr int64_t kStageMinBytes = int64_t{8} << 20;

void stage_transposed_rows(RewriteContext& ctx);

}  // namespace torchfuse
