#pragma once

#include "passes/pass_context.h"

namespace torchfuse {

// Drops groups with fewer ops than ctx.min_group_size: one op gains nothing from a generated
// kernel, so ATen runs it. Each dropped group is logged.
void prune_groups(PassContext& ctx);

}  // namespace torchfuse
