// What every reduction schedule needs to know about a group: which values are per element and
// which per row (one value per output of the reductions), and in which pass over the elements
// each becomes available. Pass L computes the element values of level L and accumulates the
// reductions whose inputs have level L; their results (level L + 1) are per-row values.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "passes/fusion_plan.h"
#include "passes/reduction_schedule.h"

namespace torchfuse {
namespace codegen {

// Which element values computed by an earlier pass a later pass reads back (from registers)
// instead of recomputing: none, every one, or only those of the first pass (the values no
// reduction result feeds; everything after the first reduction is recomputed from them).
enum class Reuse { None, Values, FirstPass };

// What a cached row schedule keeps per element, under each cache policy (see RowCachePolicy).
struct RowCacheNeeds {
  int values_bytes = 0;               // keeping every re-read value: register bytes per element
  int first_pass_bytes = 0;           // keeping only the first pass's re-read values
  std::vector<size_t> reread_inputs;  // keeping only inputs: the group inputs several passes read
  bool costly_recompute = false;      // keeping only inputs recomputes a transcendental (exp, tanh...)
  // The group scans (cumsum): its rows must stay in registers in one block (row_reduction.cpp
  // scans a thread's chunks in order, then across the team).
  bool scans = false;
};
// An online softmax sum (row schedules): sum(exp(f - m)) where m = max(f) over the same row, or
// that max with infinities masked to 0 (logsumexp). Both accumulate in the pass that computes f,
// as a running max and the sum of exp(f - that max) (row_reduction.cpp: after the pass from the
// register cache, or folded in per vector with a rescale), and one team reduction combines the
// pairs: the sum takes no pass of its own.
struct OnlineSum {
  const ir::Node* max = nullptr;  // the max reduction the pair also computes
  bool masked = false;            // the shift is where(|m| == inf, 0, m)
};

struct ReductionAnalysis {
  ReductionDomain rd;
  std::map<const ir::Value*, int> level;
  std::set<const ir::Value*> per_row;          // inputs and nodes holding one value per row
  std::vector<const ir::Node*> reductions;     // in group order
  // Scans (cumsum along the row), in group order. A scan adds up its input's chunks in the input's
  // pass (level L), the team scans the chunk totals after it, and its output is an element value
  // of level L + 1.
  std::vector<const ir::Node*> scans;
  bool scan_of_scan = false;  // some scan's input is computed from another scan's output
  std::vector<const ir::Node*> row_nodes;      // pointwise nodes on per-row values, in order
  std::vector<const ir::Node*> element_nodes;  // pointwise nodes per element, in order
  int passes = 0;                              // element passes (levels 0 .. passes-1)
  std::set<const ir::Value*> cached;           // element values a later pass reads back (Reuse::Values)
  std::set<const ir::Value*> cached_first;     // the same under Reuse::FirstPass
  std::set<const ir::Value*> reread_inputs;    // group inputs several passes read (nothing cached)
  RowCacheNeeds cache_needs;                   // for the row schedule's planner (computed once here)
  // Row groups with softmax sums: the cache needs of the same group with online sums (set by
  // the caller from that analysis); the planner picks online sums by row length.
  std::optional<RowCacheNeeds> online_cache_needs;
  std::map<const ir::Node*, OnlineSum> online;  // online sums, by their sum node (lookups only)
  // Reductions of the same kind, input and dims as an earlier one (logsumexp without keepdim
  // takes the max twice): no accumulator, the earlier one's result (lookups only).
  std::map<const ir::Node*, const ir::Node*> duplicates;

  bool is_row(const ir::Value* v) const { return per_row.count(v) > 0; }
  int level_of(const ir::Value* v) const;
  // The pass in which reduction `r` accumulates (an online sum: its max's pass).
  int accumulate_pass(const ir::Node* r) const;
  // The online sum, if any, for reduction `r`.
  const OnlineSum* online_sum(const ir::Node* r) const;
  // Is max reduction `r` computed by an online sum's pair (it has no accumulator of its own)?
  bool absorbed_max(const ir::Node* r) const;
  // The earlier reduction `r` repeats, or nullptr.
  const ir::Node* duplicate_of(const ir::Node* r) const;
  // Does `r` accumulate into an accumulator of its own (not absorbed, not a duplicate)?
  bool has_accumulator(const ir::Node* r) const { return !absorbed_max(r) && !duplicate_of(r); }
  // Element values needed in pass L: the inputs of reductions of level L, and element outputs
  // of level L.
  std::vector<const ir::Value*> pass_targets(const FusionGroup& g, int pass) const;
  // Can a later pass read `v` back under `reuse` (if an earlier pass computed it)?
  bool reusable(const ir::Value* v, Reuse reuse) const;
  // Element values read in a pass after the one that computes them (cached mode keeps them in
  // registers), given the element values each pass evaluates.
  std::set<const ir::Value*> cached_values(const FusionGroup& g, Reuse reuse) const;
  // Element values pass L evaluates: its targets and their ancestors, stopping at reusable
  // values an earlier pass computed.
  std::vector<const ir::Value*> pass_values(const FusionGroup& g, int pass, Reuse reuse) const;
  // The first pass that evaluates each element value.
  std::map<const ir::Value*, int> first_passes(const FusionGroup& g, Reuse reuse) const;
};

// What the row schedule can do that the split ones (one pass, no team pairs) do not.
struct RowRewrites {
  bool online_sums = false;       // pair softmax sums with their max (OnlineSum)
  bool share_duplicates = false;  // reduce once for reductions that repeat (duplicates)
};
RowRewrites row_rewrites(bool online_sums);  // both where the schedule is a row one

ReductionAnalysis analyze_reduction_group(const FusionGroup& g, RowRewrites rewrites = {});


}  // namespace codegen
}  // namespace torchfuse
