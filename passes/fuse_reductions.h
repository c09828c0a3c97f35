#pragma once

#include "passes/pass_context.h"

namespace torchfuse {

// Builds one group around each set of reductions over the same rows: the pointwise prologue
// feeding them, reductions of the same axis sharing the group, and the epilogue that uses the
// reduced values broadcast back over the reduced axis (softmax, layer norm).
void fuse_reductions(PassContext& ctx);

}  // namespace torchfuse
