// Reduction groups: their iteration domain, the shapes a per-row value may have, and the
// kernel schedule the reduced dims call for.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "passes/fusion_plan.h"

namespace torchfuse {

// The domain a group's reductions read, and the dims they reduce (sorted).
struct ReductionDomain {
  std::vector<int64_t> domain;
  std::vector<int64_t> dims;

  static ReductionDomain of(const ir::Node& reduction);
  // Shape of a per-row value with keepdim (reduced dims 1) and without (reduced dims removed).
  std::vector<int64_t> keep_shape() const;
  std::vector<int64_t> squeezed_shape() const;
  bool is_row_shape(const std::vector<int64_t>& shape) const;
  // Which schedule, or nullopt when the reduced dims are not one contiguous block.
  std::optional<Schedule> schedule() const;
  std::string str() const;
};

// Which kernel schedule a group needs: pointwise when it holds no reduction; otherwise by the
// position of the reduced dims: trailing (row), leading or middle (column), all (full).
Schedule choose_schedule(const FusionGroup& g);

}  // namespace torchfuse
