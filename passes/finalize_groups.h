#pragma once

#include "passes/pass_context.h"

namespace torchfuse {

// Fills in each group's inputs, outputs, domain, schedule and pattern (group_pattern: what its
// kernels' names, tf_<pattern>_<hash>, say it computes).
void finalize_groups(PassContext& ctx);

}  // namespace torchfuse
