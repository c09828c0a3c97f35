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
  // Does a value of `shape` hold one value per row: it broadcasts to the domain (right-aligned)
  // without extent over any reduced dim? ([1, 1] and [R, 1] are, for rows of an [R, C] domain;
  // squeezed shapes are not: they align with the trailing dims.) False when every reduced dim
  // has size 1 (a row is one element: the shape cannot tell rows from elements).
  bool holds_rows(const std::vector<int64_t>& shape) const;
  // Which schedule, or nullopt when the reduced dims are not one contiguous block.
  std::optional<Schedule> schedule() const;
  // One row: the full-reduction schedule's domain (a single output) whose reduced dims are the
  // trailing ones, as in a [1, N] softmax. A group that reads its own reduction takes it as one
  // row of the row schedule (see kMaxSingleRow).
  bool single_row() const;
  std::string str() const;
};

// A single row (ReductionDomain::single_row) that reads its own reduction runs on one block or
// cluster: longer rows are left to ATen, whose separate kernels each use the whole device.
// Measured on H200 (torchfuse_bench --rows 1, softmax, logsumexp and layer norm, f32 and bf16):
// 2-10x faster than eager and 1.8-3.4x than TorchScript at 4096 and 32768 elements; at 131072
// bf16 layer norm, one looped block, was slower than TorchScript (25.0 against 20.5 us), and at
// 262144 softmax and layer norm were slower than eager in both dtypes (f32 softmax 46.6 against
// 30.1 us).
constexpr int64_t kMaxSingleRow = int64_t{1} << 15;

// The longest rows a scan (cumsum) is fused along. Rows that fit stay in one block's registers
// while the scan adds them up chunk by chunk; longer ones are scanned by a block in steps of a
// vector a thread, carrying the row's sum (codegen/row_reduction.cpp), one barrier a step, so a
// block's time grows with the row: a vocabulary of up to 256K entries, not a million-element
// sequence (where one block a row would idle the device; ATen's scan splits a row over blocks).
// The planner refuses a call no layout can scan, which runs on the group's fallback.
constexpr int64_t kMaxScanRow = int64_t{1} << 18;

// Which kernel schedule a group needs: pointwise when it holds no reduction; otherwise by the
// position of the reduced dims: trailing (row), leading or middle (column), all (full); a single
// row whose elements read its own reduction (a softmax over [1, N]), the row schedule.
Schedule choose_schedule(const FusionGroup& g);
// Does some element value or reduction among `nodes` (a group, or one growing) read a
// reduction result computed among them, or do they scan? Such a group needs a second pass over
// its elements, which only the row schedule has. (codegen/reduction_analysis.h refines this
// into passes.)
bool reads_own_reduction(const std::vector<const ir::Node*>& nodes);

}  // namespace torchfuse
