#include "codegen/schedule.h"

#include <algorithm>

#include "codegen/column_passes.h"
#include "codegen/pointwise.h"
#include "codegen/reduction_common.h"
#include "codegen/row_reduction.h"
#include "codegen/split_reduction.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {

const ReductionAnalysis& GroupAnalysis::for_layout(const ReductionLayout& l) const {
  TORCHFUSE_INTERNAL_ASSERT(reduction.has_value(), "a reduction layout for a group without a reduction analysis");
  if (!l.online) return *reduction;
  TORCHFUSE_INTERNAL_ASSERT(online.has_value(), "a layout with online sums for a group without them");
  return *online;
}

GroupAnalysis analyze_group(const FusionGroup& g, const Tuning& tune) {
  GroupAnalysis a;
  if (g.schedule == Schedule::Pointwise) return a;
  const bool row = g.schedule == Schedule::RowReduction;
  a.reduction = analyze_reduction_group(g, row ? row_rewrites(false) : RowRewrites{});
  if (row && tune.online_softmax != 0) {
    // The planner picks online sums by row length, from both analyses' cache needs.
    ReductionAnalysis online = analyze_reduction_group(g, row_rewrites(true));
    if (online.online.empty()) return a;
    a.reduction->online_cache_needs = online.cache_needs;
    a.online = std::move(online);
    return a;
  }
  // Column passes: online sums alone (the column analysis shares no duplicates), and only where
  // passes remain for the column passes' kernel (a logsumexp's would have one).
  if (row || tune.column_online == 0 || a.reduction->passes < 2) return a;
  ReductionAnalysis online = analyze_reduction_group(g, RowRewrites{true, false});
  if (online.online.empty() || online.passes < 2) return a;
  a.online = std::move(online);
  return a;
}

namespace {

std::vector<c10::ScalarType> element_output_dtypes(const FusionGroup& g, const ReductionAnalysis* a) {
  std::vector<c10::ScalarType> out;
  for (const ir::Value* v : g.outputs)
    if (!a || !a->is_row(v)) out.push_back(v->type.dtype);
  return out;
}

// Every input a kernel streams (element by element, no element shared between threads) is 16-bit.
template <typename Operand>
bool streams_16bit(const std::vector<Operand>& inputs) {
  bool any = false;
  for (const auto& in : inputs) {
    if (in.access == Access::Scalar || in.access == Access::Uniform || in.access == Access::InnerBroadcast || in.shared)
      continue;
    if (c10::elementSize(in.dtype) != 2) return false;
    any = true;
  }
  return any;
}

PointwiseLayout plan_pointwise(const PlanRequest& r, const ReductionAnalysis* a) {
  const auto outputs = element_output_dtypes(r.group, a);
  std::vector<CatSplit> cats;
  const auto profiled = r.cat_starts ? std::vector<std::vector<int64_t>>{} : profiled_cat_starts(r.group);
  const auto& starts = r.cat_starts ? *r.cat_starts : profiled;
  for (size_t c = 0; c < r.group.cats.size(); ++c) cats.push_back({r.group.cats[c].domain_dim, starts.at(c)});
  auto l = plan_pointwise_layout(r.domain, r.operands, outputs, kMaxGridThreads, r.tuning, cats);
  l.hints = choose_cache_hints({false, !outputs.empty(), streams_16bit(l.inputs)}, r.tuning);
  return l;
}

// Row and column reductions: the segmented layout, and its cache hints.
ReductionLayout plan_reduction(const PlanRequest& r) {
  const ReductionAnalysis& a = *r.analysis.reduction;
  const Schedule schedule = r.group.schedule;
  auto l = plan_reduction_layout(schedule, r.domain, a.rd.dims, r.operands, a.cache_needs,
                                 a.online_cache_needs ? &*a.online_cache_needs : nullptr, r.target, r.tuning,
                                 r.allow_vector);
  const bool rows = schedule == Schedule::RowReduction;
  const bool looped = rows && !l.cached;
  // Rows a block keeps on chip for its later passes: in registers (cached), shared memory
  // (staged) or a ring of shared-memory chunks.
  const bool keeps = l.cached || l.ring_chunk > 0;
  const int64_t held = rows && keeps && a.passes > 1 ? l.reduced() : 0;
  // Inputs several rows read, and whether one of them differs between rows (a nonzero stride
  // over a row dim: an attention mask's query dim, unlike a layer norm's weights; the planner's
  // coalesced row dims all have sizes > 1).
  const auto differs = [](const SegmentedOperand& in) {
    return std::any_of(in.outer_strides.begin(), in.outer_strides.end(), [](int64_t s) { return s != 0; });
  };
  const bool shared = rows && std::any_of(l.inputs.begin(), l.inputs.end(), [](const auto& in) { return in.shared; });
  const bool shared_differ =
      rows && std::any_of(l.inputs.begin(), l.inputs.end(), [&](const auto& in) { return in.shared && differs(in); });
  l.hints = choose_cache_hints({looped, !element_output_dtypes(r.group, &a).empty(), streams_16bit(l.inputs), held,
                                l.stages > 0 || l.ring_chunk > 0, shared, shared_differ},
                               r.tuning);
  return l;
}

class PointwiseUnit : public ScheduleUnit {
 public:
  Schedule schedule() const override { return Schedule::Pointwise; }
  KernelLayout plan(const PlanRequest& r) const override {
    PointwiseLayout l = plan_pointwise(r, nullptr);
    // (Hints go on vector loads and stores, which a tiled kernel has none of.)
    if (tile_transposed_inputs(l, r.tuning)) l.hints = CacheHints{};
    return l;
  }
  GeneratedKernel generate(const FusionGroup& g, const GroupAnalysis&, const KernelLayout& l) const override {
    return generate_pointwise(g, std::get<PointwiseLayout>(l));
  }
};

class RowUnit : public ScheduleUnit {
 public:
  Schedule schedule() const override { return Schedule::RowReduction; }
  KernelLayout plan(const PlanRequest& r) const override {
    ReductionLayout l = plan_reduction(r);
    const ReductionAnalysis& a = *r.analysis.reduction;
    if (a.cache_needs.scans && !scans_fit(l, a)) {
      throw PlanRefused("a cumsum's rows of " + std::to_string(l.reduced()) + " elements " +
                        (l.cached ? std::string("do not fit one block's registers with the values the group keeps")
                                  : std::string("are too long for registers, and a looped row scans no cumsum of a cumsum")));
    }
    return l;
  }
  GeneratedKernel generate(const FusionGroup& g, const GroupAnalysis& a, const KernelLayout& layout) const override {
    const auto& l = std::get<ReductionLayout>(layout);
    return generate_row_reduction(g, a.for_layout(l), l);
  }
};

class ColumnUnit : public ScheduleUnit {
 public:
  Schedule schedule() const override { return Schedule::ColumnReduction; }
  KernelLayout plan(const PlanRequest& r) const override {
    ReductionLayout l = plan_reduction(r);
    // Groups reading their own reductions run their passes in the blocks of a tile
    // (generate_column_normalization): one block per tile, or the tile's rows split over several
    // blocks where the tiles alone leave the device idle.
    if (r.analysis.reduction && r.analysis.reduction->passes > 1) {
      const int vec = column_pass_vector(l, r.tuning);
      l.vec = 1;
      l.unroll = 1;
      l.split = 1;
      choose_column_cache(l, r.tuning);
      choose_column_pass_split(l, r.target, r.tuning);
      // (Not across a launch per pass: registers do not outlive a launch.)
      if (l.split > 1 && !l.phased()) choose_column_cache(l, r.tuning);
      // Columns read again in every pass take a vector of columns a thread; fewer, wider tiles
      // split their rows again.
      if (!l.cached && vec > 1) {
        l.vec = vec;
        choose_column_pass_split(l, r.target, r.tuning);
      }
      // A looped split loads Tuning::column_pass_unroll rows a thread (vectors:
      // column_pass_vector_unroll) before computing them.
      if (l.split > 1 && !l.cached) l.unroll = l.vec > 1 ? r.tuning.column_pass_vector_unroll : r.tuning.column_pass_unroll;
      // Looped split passes fold each step's softmax values into a running max and sum, one
      // rescale a step (tf_online_add), and save the sum's pass over the columns. (Cached columns
      // re-read registers, not memory; an unsplit loop would rescale every row.)
      l.online = r.analysis.online.has_value() && l.split > 1 && !l.cached;
      // Waves of a looped split keep their first pass's rows in L2 for the later passes and let
      // the last pass's rows and outputs go first.
      if (l.split > 1 && !l.cached && l.wave_tiles > 0 && r.tuning.column_pass_wave_hints != 0 && r.tuning.cache_hints != 0) {
        l.hints.keep_loads = true;
        l.hints.evict_loads = true;
        l.hints.evict_stores = true;
      }
      return l;
    }
    if (r.analysis.reduction) {
      int accumulator_bytes = 0;
      for (const ir::Node* n : r.analysis.reduction->reductions) {
        accumulator_bytes += static_cast<int>(c10::elementSize(accumulator_dtype(*n, true)));
      }
      choose_column_rows(l, accumulator_bytes, r.target, r.tuning);
    }
    return l;
  }
  GeneratedKernel generate(const FusionGroup& g, const GroupAnalysis& a, const KernelLayout& layout) const override {
    const auto& l = std::get<ReductionLayout>(layout);
    if (a.reduction->passes > 1) return generate_column_normalization(g, a.for_layout(l), l);
    return generate_column_reduction(g, *a.reduction, l);
  }
};

// A full reduction iterates like a pointwise kernel, with its own unroll.
class FullUnit : public ScheduleUnit {
 public:
  Schedule schedule() const override { return Schedule::FullReduction; }
  KernelLayout plan(const PlanRequest& r) const override {
    auto l = plan_pointwise(r, r.analysis.get());
    // The vector path reads whole vectors of linear inputs alone (the launcher checks
    // pointwise_vectors_fit with linear_only): with a strided or broadcast input it could never
    // run, and is not generated.
    for (const auto& in : l.inputs) {
      if (in.access != Access::Linear && in.access != Access::Uniform && in.access != Access::Scalar) l.vec = 1;
    }
    // (The grid stays far below kMaxGridThreads, so the index width planned for it still holds.)
    const int unroll = r.tuning.full_unroll;
    l.unroll = l.vec == 1 ? 1 : unroll > 0 ? unroll : streams_16bit(l.inputs) ? 2 : 1;
    return l;
  }
  GeneratedKernel generate(const FusionGroup& g, const GroupAnalysis& a, const KernelLayout& l) const override {
    return generate_full_reduction(g, *a.reduction, std::get<PointwiseLayout>(l), kFullBlock);
  }
};

std::string key_prefix(Schedule s) {
  static const std::string pointwise = "pw;", row = "row;", column = "col;", full = "full;";
  return by_schedule(s, pointwise, row, column, full);
}

}  // namespace

const ScheduleUnit& schedule_unit(Schedule s) {
  static const PointwiseUnit pointwise;
  static const RowUnit row;
  static const ColumnUnit column;
  static const FullUnit full;
  return by_schedule<ScheduleUnit>(s, pointwise, row, column, full);
}

std::string variant_key(Schedule s, const KernelLayout& layout) {
  return key_prefix(s) + std::visit([](const auto& l) { return l.key(); }, layout);
}

PlannedKernel plan_and_generate(const PlanRequest& request) {
  const ScheduleUnit& unit = schedule_unit(request.group.schedule);
  PlannedKernel p{unit.plan(request), "", {}};
  p.key = variant_key(unit.schedule(), p.layout);
  p.kernel = unit.generate(request.group, request.analysis, p.layout);
  return p;
}

}  // namespace codegen
}  // namespace torchfuse
