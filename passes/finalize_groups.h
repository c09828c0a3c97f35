#pragma once

#include "passes/pass_context.h"

namespace torchfuse {

// Fills in each group's inputs, outputs, domain, schedule and kernel name ("tf_fused_<id>").
void finalize_groups(PassContext& ctx);

}  // namespace torchfuse
