#include "passes/reduction_schedule.h"

namespace torchfuse {

Schedule choose_schedule(const FusionGroup& g) {
  for (const ir::Node* n : g.nodes) {
    if (ir::is_reduction(n->kind)) return Schedule::RowReduction;
  }
  return Schedule::Pointwise;
}

}  // namespace torchfuse
