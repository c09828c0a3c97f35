#pragma once

#include "passes/pass_context.h"

namespace torchfuse {

// Drops groups with fewer ops than ctx.min_group_size: one op gains nothing from a generated
// kernel, so ATen runs it. Each dropped group is logged. A lone GELU (erf) counts as two ops:
// ATen's kernel for it runs well below memory speed, the group's does not (H200, BERT bf16 at
// batch 8, [1024, 3072]: ATen 4.97 us a call, the group 3.54).
void prune_groups(PassContext& ctx);

}  // namespace torchfuse
