#pragma once

#include "passes/pass_context.h"

namespace torchfuse {

// Merges producer-consumer chains of pointwise IR nodes into groups (legality: why_not_fuse).
// Groups holding a reduction are left to fuse_reductions.
void fuse_pointwise(PassContext& ctx);

}  // namespace torchfuse
