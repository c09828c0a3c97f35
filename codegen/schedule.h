// A schedule is one unit: it plans the layout of a group's kernel for one call's shapes on a
// device, and generates the kernel for a layout. Each schedule (pointwise, row, column and full
// reductions; later ones the same way) implements ScheduleUnit, and schedule_unit() is the one
// dispatch on the schedule. What a launch passes the kernel (its arguments and grid) is the
// runtime's half of the schedule (runtime/launchers.cpp).
//
// The variant key names the kernel a layout needs: two calls whose layouts have equal keys run
// one kernel. It is derived from the layout alone (variant_key), and every knob that changes a
// kernel's source is a field of the layout the planner filled from the Tuning, so no knob can
// change a source without changing its key.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "codegen/device_target.h"
#include "codegen/kernel.h"
#include "codegen/layout.h"
#include "codegen/reduction_analysis.h"
#include "codegen/reduction_layout.h"
#include "codegen/tuning.h"
#include "passes/fusion_plan.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {

// A call whose shapes no layout of the group's schedule can run (a scan's row too long to keep in
// one block's registers): the runtime runs that call on the group's fallback.
class PlanRefused : public Error {
 public:
  using Error::Error;
};

// Grid-stride loops never run more threads than this (the layouts' index-width bound).
constexpr int64_t kMaxGridThreads = int64_t{1} << 26;
// Threads per block of the full-reduction schedule.
constexpr int kFullBlock = 512;

// What planning and generation need to know about a group, computed once per group.
struct GroupAnalysis {
  // Reduction groups: the analysis as the planners see it (row groups: without online sums, and
  // with online_cache_needs where online sums apply). Empty for pointwise groups.
  std::optional<ReductionAnalysis> reduction;
  // Row groups with softmax sums, when Tuning::online_softmax allows them, and column groups of
  // several passes with softmax sums, when Tuning::column_online does: the analysis with online
  // sums, which a layout planned with ReductionLayout::online is generated and launched from.
  std::optional<ReductionAnalysis> online;

  const ReductionAnalysis* get() const { return reduction ? &*reduction : nullptr; }
  // The analysis a row or column layout's kernel is generated and launched from.
  const ReductionAnalysis& for_layout(const ReductionLayout& l) const;
};
GroupAnalysis analyze_group(const FusionGroup& g, const Tuning& tune);

// One call as planning sees it.
struct PlanRequest {
  const FusionGroup& group;
  const GroupAnalysis& analysis;
  const std::vector<OperandShape>& operands;  // per group input
  const std::vector<int64_t>& domain;         // the broadcast shape of the tensor operands
  const DeviceTarget& target;
  const Tuning& tuning;
  bool allow_vector = true;  // false where the call's pointers or strides rule out vector accesses
  // Per cat of the group: where its pieces after the first start (CallInputs::cat_starts); null:
  // the profile's (profiled_cat_starts).
  const std::vector<std::vector<int64_t>>* cat_starts = nullptr;
};

using KernelLayout = std::variant<PointwiseLayout, ReductionLayout>;

class ScheduleUnit {
 public:
  virtual ~ScheduleUnit() = default;
  virtual Schedule schedule() const = 0;
  virtual KernelLayout plan(const PlanRequest& request) const = 0;
  virtual GeneratedKernel generate(const FusionGroup& g, const GroupAnalysis& a, const KernelLayout& layout) const = 0;
};

// The unit of schedule `s`.
const ScheduleUnit& schedule_unit(Schedule s);

// The compile-time part of a layout, as text, prefixed by the schedule: equal keys, one kernel.
std::string variant_key(Schedule s, const KernelLayout& layout);

struct PlannedKernel {
  KernelLayout layout;
  std::string key;
  GeneratedKernel kernel;
};
// Plans and generates (no caching): what explain(), the logs and a specialization's first
// compile use.
PlannedKernel plan_and_generate(const PlanRequest& request);

}  // namespace codegen
}  // namespace torchfuse
