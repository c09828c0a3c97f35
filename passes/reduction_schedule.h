#pragma once

#include "passes/fusion_plan.h"

namespace torchfuse {

// Which kernel schedule a group needs: pointwise when it holds no reduction; otherwise by the
// position of the reduced axes in the domain.
Schedule choose_schedule(const FusionGroup& g);

}  // namespace torchfuse
