// Pieces every reduction schedule shares: accumulator types and identities, and the emission of
// one pass's element values (loads, cache reads and writes, pointwise statements, accumulation).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/expr.h"
#include "codegen/reduction_analysis.h"
#include "codegen/source_builder.h"

namespace torchfuse {
namespace codegen {

// Register dtype a reduction accumulates in, its identity literal and its operator functor.
// `wide`: the schedule adds long sequential chains per thread (float sums then accumulate in double).
c10::ScalarType accumulator_dtype(const ir::Node& reduction, bool wide);
std::string reduction_identity(const ir::Node& reduction, bool wide);
std::string reduction_functor(const ir::Node& reduction);
// The accumulator's register type, identity and team functor, online sums included (their
// max has no accumulator: absorbed_max).
std::string accumulator_type(const ReductionAnalysis& a, const ir::Node* reduction, bool wide);
std::string accumulator_identity(const ReductionAnalysis& a, const ir::Node* reduction, bool wide);
std::string accumulator_functor(const ReductionAnalysis& a, const ir::Node* reduction);
// Names by the reduction's position k in the analysis, never by IR value ids, so that the code
// does not depend on how the graph numbers its values (codegen/kernel_name.h):
// "<k>" itself;
std::string reduction_index(const ReductionAnalysis& a, const ir::Node* reduction);
// "acc<k>", the accumulator;
std::string accumulator_name(const ReductionAnalysis& a, const ir::Node* reduction);
// "red<k>", the team's result;
std::string result_name(const ReductionAnalysis& a, const ir::Node* reduction);
// "ol<k>", the array an online sum's values are collected in.
std::string online_values(const ReductionAnalysis& a, const ir::Node* sum);

// Scans, named by their position s among the analysis' scans: "scan_tot<s>[chunk]" (a thread's
// chunk totals), "scan_base<s>[chunk]" (the sum of every element before the chunk), "scan_run<s>"
// (the running sum inside a chunk); looped rows: "scan_vt<s>" (a thread's vector total) and
// "scan_carry<s>" (the row's sum before the team's current vectors). A scan adds in its output's
// register dtype.
std::string scan_name(const ReductionAnalysis& a, const ir::Node* scan, const std::string& what);
c10::ScalarType scan_dtype(const ir::Node& scan);
// Device functions the row schedule's team scans call (tf_team_scan, tf_block_scan).
const char* scan_prelude();

struct PassEmitter {
  SourceBuilder& b;
  const FusionGroup& g;
  const ReductionAnalysis& a;
  ValueNames& names;
  bool fast_math;  // the layout's (emit_pointwise)
  // Expression (register type) of group input `k` for the current element.
  std::function<std::string(size_t k)> load;
  // Lvalue of the register cache slot of `v` for the current element ("" when not cached).
  std::function<std::string(const ir::Value*)> cache_slot;
  Reuse reuse = Reuse::None;  // which earlier-pass values are read back through cache_slot
  // Appended to accumulator names: "[lane]" when each thread accumulates several columns.
  std::string accumulator_suffix = "";
  bool wide_sums = false;  // see accumulator_dtype
  // Wide float sums add into float `chunk_acc<k>` registers that the schedule declares and flushes
  // into the double accumulator every few elements (declare_chunk_sums / flush_chunk_sums): one
  // float-to-double conversion per chunk instead of per element.
  bool chunk_sums = false;
  // Wide float sums add into float `sum_acc<k>` registers (1: compensated by `comp_acc<k>`, a
  // Kahan sum; 2: plain) that the schedule declares and folds into the double accumulator
  // (declare_float_sums / fold_float_sums). 0: none.
  int float_sums = 0;
  // Row phases compute 1 / v once per row for per-row float divisors of element divisions
  // (softmax's sum); element passes multiply by it. Shared across the passes of one kernel.
  ValueNames* reciprocals = nullptr;
  // Online sums whose values the schedule reads back from its register cache after the pass: the
  // pass only takes their running max (the exps come after it). The pass puts the values of the
  // other online sums in the schedule's per-vector arrays (online_values(sum)[lane]), which the
  // schedule folds in after each vector (tf_online_add).
  std::set<const ir::Node*> online_after_pass = {};
  // Appended to online_values(sum) where the pass puts an online sum's value ("[u]" for the
  // column passes' unrolled rows).
  std::string online_slot = "[lane]";
  // Cached rows: the pass computing a scan's input adds it into the chunk's total
  // (scan_tot<s>[k]). Looped rows scan a vector of the team at a time (row_reduction.cpp) and do
  // not.
  bool scan_chunk_totals = true;
  // Looped rows, before a pass evaluates these scans: emit() evaluates only the element values
  // that no scan's output feeds and adds each scan's input into its vector total (scan_vt<s>);
  // no accumulation, no cache writes, no stores.
  std::vector<const ir::Node*> totals_only = {};

  // Element values of pass `pass`, accumulation into the pass's reductions, and for each
  // element output of the pass a call of `store(k, expr)`.
  void emit(int pass, const std::function<void(size_t output_index, const std::string& expr)>& store);
  // Row phase `level`: pointwise nodes on per-row values of that level; row outputs of the level
  // are handed to `store`.
  void emit_row_phase(int level, const std::function<void(size_t output_index, const std::string& expr)>& store);
  // Stores the per-row outputs of `level` alone (their nodes were emitted by an earlier row phase).
  void store_row_outputs(int level, const std::function<void(size_t output_index, const std::string& expr)>& store);

 private:
  void emit_row_reciprocals(int level);
  // The scan's output for the current element: its running sum grows by the input's.
  void emit_scan_value(const ir::Node& scan);
  // Group input `v` (input k) for the current element, in a fresh register.
  void emit_input(const ir::Value* v, size_t k);
  // totals_only: the values of `pass` no scan output feeds, and the scans' vector totals.
  void emit_scan_totals(int pass);
};

// Is `r` a sum that a wide schedule accumulates in double from float values (chunkable)?
bool chunkable_sum(const ir::Node& r);
// Declares zeroed `float chunk_acc<k>` for the chunkable sums fed at `pass`, and adds them into
// `acc<k>`. (Looped rows chunk one vector of lanes. Chunks of f32 column rows were measured less
// accurate than eager on col_sum, and bf16 columns were not faster.)
void declare_chunk_sums(SourceBuilder& b, const ReductionAnalysis& a, int pass);
void flush_chunk_sums(SourceBuilder& b, const ReductionAnalysis& a, int pass);
// Declares zeroed `float sum_acc<k>[lanes]` (and `comp_acc<k>[lanes]` where `compensated`) for
// the chunkable sums, and folds them into the double `acc<k>[lane]`, for PassEmitter::float_sums.
void declare_float_sums(SourceBuilder& b, const ReductionAnalysis& a, int lanes, bool compensated);
void fold_float_sums(SourceBuilder& b, const ReductionAnalysis& a, int lanes, bool compensated);

// Online sum `sum`'s combined pair `pair` (a tf_max_sum variable) as its max's result `max_name`
// (tf_online_max: -inf where every value was -inf) and its own `sum_name` (tf_online_sum, rounded
// as eager rounds the sum), both declared and entered in `names`.
void emit_online_results(SourceBuilder& b, const ReductionAnalysis& a, const ir::Node* sum, const std::string& pair,
                         const std::string& max_name, const std::string& sum_name, ValueNames& names);

// Index of `v` among the group's inputs, or -1.
int input_index(const FusionGroup& g, const ir::Value* v);

}  // namespace codegen
}  // namespace torchfuse
