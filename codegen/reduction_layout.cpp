#include "codegen/reduction_layout.h"

#include <algorithm>
#include <limits>

#include "codegen/tuning.h"
#include "src/error.h"
#include "src/ir.h"

namespace torchfuse {
namespace codegen {

namespace {

// Tuning::row_early_loads = -1: registers per thread for inputs loaded early: four 16-byte
// vectors (a layer norm's weight and bias at up to two vectors a thread), and, in teams of a few
// threads, at most one 16-bit input among them (see plan_reduction_layout). Measured H200 (kernel
// time, early / not): rms norm's weight and f32 layer norm's weight and bias won (bf16 add + rms
// norm [8, 128, 2048] 3.36-3.39 / 3.49-3.58 us, f32 add + layer norm [1, 128, 768] 1.95 / 2.05,
// f32 rms norm [8192, 2048] 31.9-33.6 / 33.8-34.0);
// a bf16 layer norm's two lost (add + layer norm [8, 128, 768] 2.88-2.91 / 2.78, rows of 64
// 26.4 / 25.5; the cause not found: 39 registers against 32, occupancy unchanged).
constexpr int kAutoEarlyRegisters = 16;
constexpr int kAutoEarlyNarrowInputs = 1;

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (auto s : v) n *= s;
  return n;
}

int next_pow2(int64_t v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

std::vector<int64_t> expand(const std::vector<int64_t>& domain, const OperandShape& op) {
  std::vector<int64_t> out(domain.size(), 0);
  const size_t offset = domain.size() - op.sizes.size();
  for (size_t i = 0; i < op.sizes.size(); ++i) out[offset + i] = op.sizes[i] == 1 ? 0 : op.strides[i];
  return out;
}

bool all_zero(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t s) { return s == 0; });
}

// Rows whose schedule keeps nothing across passes: read once.
bool read_once(const RowCacheNeeds& needs) { return needs.values_bytes == 0 && needs.reread_inputs.empty(); }

// Every input read along the row is 16-bit.
bool row_inputs_16bit(const ReductionLayout& l) {
  return std::all_of(l.inputs.begin(), l.inputs.end(), [](const SegmentedOperand& op) {
    return (op.access != Access::InnerContig && op.access != Access::Strided) || c10::elementSize(op.dtype) == 2;
  });
}

// Registers each thread may spend on cached row elements, by block size (a 1024-thread block
// leaves 64 registers per thread in all).
// (Measured on H200: lower budgets, for more occupancy, made softmax and layer norm slower.)
int cache_budget(int block, const Tuning& tune) {
  if (tune.row_cache_registers > 0) return tune.row_cache_registers;
  return block >= 1024 ? 24 : block >= 512 ? 32 : block >= 256 ? 48 : 64;
}

// Register bytes per row element that cached mode keeps, for the policy `cache_inputs`; -1
// when keeping inputs is impossible (an input read again is not loaded as whole vectors).
int cache_bytes(const ReductionLayout& l, const RowCacheNeeds& needs, bool cache_inputs) {
  if (!cache_inputs) return needs.values_bytes;
  int bytes = 0;
  for (size_t k : needs.reread_inputs) {
    if (l.vec == 1 || l.inputs[k].access != Access::InnerContig) return -1;
    bytes += static_cast<int>(c10::elementSize(l.inputs[k].dtype));
  }
  return bytes;
}

// A team of `tpr` threads over a row of `chunks` vectors, or, where those leave the last round
// of vectors part-filled (some threads idle while the others load once more), the widest
// narrower team down to a warp that splits them evenly with at most `per_thread` vectors a
// thread. Measured H200 (kernel time, warm L2), rows of 768: bf16 add + layer norm over 128 /
// 1024 / 4096 rows with 64 threads a row (2 vectors, the second for half of them) 2.21 / 2.98 /
// 6.24 us, with 32 (3 each) 2.11 / 2.59 / 4.64; f32 add + layer norm over 1024 / 4096 rows and
// layer norm over 1576 rows with 128 threads (2 vectors, half idle in the second) 3.15 / 8.14 /
// 3.94 us, with 64 (3 each) 2.82 / 7.38 / 2.98.
int even_team(int64_t chunks, int tpr, int64_t per_thread) {
  if (chunks <= tpr || chunks % tpr == 0) return tpr;
  for (int t = tpr / 2; t >= 32 && chunks / t <= per_thread; t /= 2)
    if (chunks % t == 0) return t;
  return tpr;
}

// The team for a row whose cached part takes `bytes` register bytes per element (0: nothing
// kept): about `per_thread` vectors per thread but at least `min_threads` threads (as far as the
// row has vectors), a warp (or part of one) per row for short rows, a block per row for longer
// ones, more threads while the cached part would not fit; looped when it never fits.
void plan_team(ReductionLayout& l, int bytes, int64_t per_thread, int min_threads, int max_cluster, const Tuning& tune) {
  const int64_t chunks = (l.reduced() + l.vec - 1) / l.vec;
  const int per_element = std::max(4, bytes);
  auto fits = [&] { return int64_t{l.chunks_per_thread} * l.vec * per_element <= int64_t{4} * cache_budget(l.block, tune); };
  auto set_team = [&](int tpr) {
    l.threads_per_row = tpr;
    l.block = tpr <= 32 ? 256 : tpr;
    // (At least one: an empty row still writes its sum, 0, or its mean, NaN.)
    l.chunks_per_thread = std::max(1, static_cast<int>((chunks + tpr - 1) / tpr));
  };
  int tpr = std::max(1, next_pow2((chunks + per_thread - 1) / per_thread));
  // A team is a power of two (its shuffles' width): a knob's 3 or 100 rounds up.
  tpr = std::max(tpr, std::min(next_pow2(min_threads), next_pow2(chunks)));
  if (tpr > 32) tpr = std::max(64, tpr);
  tpr = std::min(tpr, 1024);
  set_team(even_team(chunks, tpr, per_thread));
  while (!fits() && l.threads_per_row < 1024) set_team(l.threads_per_row == 32 ? 64 : l.threads_per_row * 2);
  l.cached = bytes == 0 || (fits() && l.chunks_per_thread <= 16);
  l.cluster = 1;
  // Too long for one block: a cluster of up to max_cluster blocks of kClusterBlock threads
  // shares the row, each keeping its slice (see row_reduction.cpp).
  for (int c = 2; !l.cached && c <= max_cluster; c *= 2) {
    set_team(kClusterBlock);
    l.chunks_per_thread = static_cast<int>((chunks + int64_t{kClusterBlock} * c - 1) / (int64_t{kClusterBlock} * c));
    if (fits() && l.chunks_per_thread <= 16) {
      l.cached = true;
      l.cluster = c;
    }
  }
  if (!l.cached) {
    // Looped: every pass re-reads the row; no more threads than the row has vectors.
    set_team(std::min(1024, std::max(64, next_pow2(chunks))));
    l.chunks_per_thread = 1;
  }
}

// Keeping only the inputs (16-bit ones packed) instead of every re-read value (as floats) costs
// recomputation. Measured (H100, H200): it pays for 16-bit inputs when the recomputation is cheap
// (rms norm, logsumexp: +4-15%) or when the values would take over 32 registers per thread
// (bf16 softmax, layer norm: +20-30%); recomputing exp where the values fit (bf16 attention
// softmax, 1024 columns) lost 20%, and every f32 case lost 4-7%. For rows whose re-read inputs
// are all 16-bit (auto_policy).
bool prefer_inputs(const ReductionLayout& values_layout, const RowCacheNeeds& needs) {
  if (!values_layout.cached || !needs.costly_recompute) return true;
  const int64_t value_registers = int64_t{values_layout.chunks_per_thread} * values_layout.vec * needs.values_bytes / 4;
  return value_registers > 32;
}

// The policy Auto stands for, for this group and row. Rows whose re-read inputs are 16-bit keep
// every value or the packed inputs (prefer_inputs). Other rows keep the first pass's values:
// measured on H200 (f32, with tuning().row_team threads per row), attention softmax 300 -> 270 us
// and add + layer norm 268 -> 263 us, the other suite rows within 1%; in bf16 the same policy
// lost up to 23% (attention softmax), and kept values or inputs stay.
RowCachePolicy auto_policy(const ReductionLayout& values_layout, const ReductionLayout& l, const RowCacheNeeds& needs) {
  const bool all_16bit = std::all_of(needs.reread_inputs.begin(), needs.reread_inputs.end(),
                                     [&](size_t k) { return c10::elementSize(l.inputs[k].dtype) == 2; });
  if (!all_16bit) return RowCachePolicy::FirstPass;
  return prefer_inputs(values_layout, needs) ? RowCachePolicy::Inputs : RowCachePolicy::Values;
}

// First-pass rows aim for tuning().row_team threads and at most 8 vectors per thread (H200 f32:
// 128 threads beat 64 to 512 on rows of 1024 and 4096; softmax, layer norm, rms norm and
// add + layer norm 0-1% faster, attention 2.5%, logsumexp 5%). Only they take a cluster for rows
// too long for a block (H200 f32 rows of 65536: 252 -> 194 us; bf16 rows, which keep values or
// inputs, went from 128 to 215 us with a cluster and loop instead). A row of fewer vectors than
// that team aims for at most a warp: a wider team would leave threads idle and reduce through
// shared memory (H200 f32 softmax over rows of 77: 9.2 -> 6.2 us with 32 threads a row instead of
// 128).
void plan_first_pass_team(ReductionLayout& l, int bytes, int max_cluster, const Tuning& tune) {
  if (tune.row_team == 0) {
    plan_team(l, bytes, tune.row_vectors, tune.row_min_threads, max_cluster, tune);
    return;
  }
  const int64_t vectors = (l.reduced() + l.vec - 1) / l.vec;
  plan_team(l, bytes, 8, vectors < tune.row_team ? std::min(tune.row_team, 32) : tune.row_team, max_cluster, tune);
}

void choose_row_schedule(ReductionLayout& l, const RowCacheNeeds& needs, int max_cluster, const Tuning& tune) {
  if (read_once(needs)) {
    // Read once (logsumexp with its online sum, plain row sums): nothing to keep, so each thread
    // can have more loads in flight.
    plan_team(l, 0, tune.row_single_pass_vectors, tune.row_min_threads, 1, tune);
    return;
  }
  ReductionLayout values = l;
  plan_team(values, needs.values_bytes, tune.row_vectors, tune.row_min_threads, 1, tune);
  values.cache_inputs = false;
  values.cache_first_pass = false;
  RowCachePolicy policy = tune.row_cache;
  if (policy == RowCachePolicy::Auto) policy = auto_policy(values, l, needs);
  // Keeping the inputs only makes sense when it is less than every value; the first pass's values
  // are some of them (all of them when no later pass computes anything worth keeping).
  int bytes = -1;
  if (policy == RowCachePolicy::Inputs) bytes = cache_bytes(l, needs, true);
  if (policy == RowCachePolicy::FirstPass) bytes = needs.first_pass_bytes;
  if (bytes < 0 || bytes > needs.values_bytes || (bytes == needs.values_bytes && policy != RowCachePolicy::FirstPass)) {
    l = values;
    return;
  }
  if (policy == RowCachePolicy::FirstPass) plan_first_pass_team(l, bytes, max_cluster, tune);
  else plan_team(l, bytes, tune.row_vectors, tune.row_min_threads, 1, tune);
  l.cache_inputs = l.cached && policy == RowCachePolicy::Inputs;
  l.cache_first_pass = l.cached && policy == RowCachePolicy::FirstPass;
}

// Whether each team prefetches its next row into L2 (tuning().row_prefetch; -1: by measurement).
// Measured on H200 with 2 / 4 / 8 rows per block: bf16 attention softmax (rows of 1024, 2 KB,
// 64-thread teams) 159.3 -> 149.0 / 142.8 / 147.3 us; but rows of 4096 (8 KB bf16, 16 KB f32) and
// f32 rows of 1024 all slower (bf16 layer norm 80.4 -> 91.9 / 106.8, f32 softmax 133.7 -> 155.1 /
// 172.6, f32 attention 269.6 -> 286.0 / 299.5). So by default only block-wide teams over rows of
// at most 2 KB of 16-bit inputs, read more than once, prefetch (and take 4 rows per block).
bool choose_row_prefetch(const ReductionLayout& l, const RowCacheNeeds& needs, const Tuning& tune) {
  if (!l.cached || l.cluster != 1 || l.vec == 1) return false;
  if (tune.row_prefetch >= 0) return tune.row_prefetch == 1;
  return !read_once(needs) && l.threads_per_row == l.block && row_inputs_16bit(l) && l.reduced() * 2 <= 2048;
}

// Row teams each block of a cached row schedule takes in turn (tuning().row_rounds; 0: 4 where
// rows are prefetched, 2 for block-wide teams over 16-bit rows read more than once, else 1).
// Measured on H200 with 2 against 1 (bf16, 64-128 threads per row): layer norm 82.7 -> 79.7 us,
// attention softmax 161.9 -> 159.6, rms norm 72.4 -> 71.7, softmax 79.1 -> 78.9; but logsumexp
// (one pass) 45.7 -> 46.6, and f32 rows 1-2% slower (layer norm 134.2 -> 137.5).
int choose_row_rounds(const ReductionLayout& l, const RowCacheNeeds& needs, const Tuning& tune) {
  if (tune.row_rounds > 0) return tune.row_rounds;
  if (l.prefetch) return 4;
  if (read_once(needs) || l.threads_per_row != l.block || !row_inputs_16bit(l)) return 1;
  return 2;
}

// Does the row schedule read this operand element by element (not once per row)?
bool streams_elements(const SegmentedOperand& op) { return op.access == Access::InnerContig || op.access == Access::Strided; }

// Blocks per multiprocessor for looped rows (tuning().looped_blocks_per_sm; 0: as many as fill
// the multiprocessor's 2048 threads while the rows in flight fill at most 3/4 of L2, so that the
// passes' re-reads still hit it).
int choose_looped_blocks_per_sm(const ReductionLayout& l, const DeviceTarget& target, const Tuning& tune) {
  if (tune.looped_blocks_per_sm > 0) return tune.looped_blocks_per_sm;
  int64_t row_bytes = 0;
  for (const auto& op : l.inputs)
    if (streams_elements(op)) row_bytes += l.reduced() * c10::elementSize(op.dtype);
  const int64_t rows_per_block = l.block / l.threads_per_row;
  int blocks = std::max(1, 2048 / l.block);
  while (blocks > 1 && blocks * target.sm_count * rows_per_block * row_bytes * 4 > target.l2_bytes * 3) --blocks;
  return blocks;
}

// Vectors each thread of a looped row loads ahead per step (tuning().looped_unroll; 0: 2 where
// one block per multiprocessor streams one input of its own row (weights shared by the rows
// aside), else 1). Measured on H200, 1 / 2 / 4:
// with one block per multiprocessor (bf16 rows of 262144, 256 rows) softmax 126.8 / 112.3 / 106.4
// us, rms norm 120.4 / 106.6 / 107.1, layer norm 159.5 / 141.7 / 329.8 (4 spills registers: a
// 1024-thread block has 64 per thread), f32 softmax rows of 65536 looped 212.9 / 191.0 / 176.2;
// with two (bf16 rows of 65536) softmax 101.9 / 108.2 / 104.6: past 32 registers only one such
// block fits. Two row inputs (add + layer norm) spill at 2 already.
int choose_looped_unroll(const ReductionLayout& l, const Tuning& tune) {
  if (l.vec == 1) return 1;
  if (tune.looped_unroll > 0) return tune.looped_unroll;
  const auto streamed = std::count_if(l.inputs.begin(), l.inputs.end(),
                                      [](const SegmentedOperand& op) { return streams_elements(op) && !op.shared; });
  return l.looped_blocks_per_sm == 1 && streamed == 1 ? 2 : 1;
}

// Staged rows (ReductionLayout::stages): the inputs a later pass reads again are copied whole
// into shared memory, one bulk copy per row and input, so the registers hold no row and one
// instruction puts a whole row in flight; with a ring of buffers a block's next rows load while it
// works on the current ones. Every pass, the first included, reads those inputs from shared
// memory. Needs bulk copies (sm_90+), vectorized rows whose staged inputs have 16-byte vectors
// (rows of whole 16-byte units, 16-byte aligned), and rows that fit the shared memory.
// By default (tuning().row_stage -1) rows of 2048 to 32768 16-bit elements are staged, with one
// buffer, and rows of 1024 to 2047 where recomputing the values from the inputs is cheap (no
// transcendental, RowCacheNeeds::costly_recompute). Measured on H200 against the register-cached
// rows (torchfuse_bench --row-length, the same element count at each length;
// docs/performance.md), bf16 layer norm, softmax, rms norm and add + layer norm were faster at
// every length from 2048 to 32768 (softmax 83.5 -> 71.0 us at 2048, 79.4 -> 71.7 at 4096, 94.1 ->
// 78.7 at 16384; layer norm 145.5 -> 84.0 at 32768). At 1024 layer norm (79.3 -> 74.1), rms norm
// and add + layer norm gained, but softmax lost (72.9 -> 78.8) and attention softmax too (142.6 ->
// 208.7): with staged inputs they compute exp again in the output pass, where the register cache
// keeps the values. At 65536 softmax lost (102.4 -> 109.2). f32 rows lost or tied at most lengths
// (add + layer norm 264.0 -> 268.9 at 4096, 287.1 -> 308.7 at 16384). Two to four buffers, each
// block taking its rows in turn, were slower still.
// Can the inputs read again be copied into shared memory by bulk copies: vectorized rows, at
// least one such input, each (but those shared by several rows) contiguous along the row in
// 16-byte vectors?
bool rereads_stageable(const ReductionLayout& l, const RowCacheNeeds& needs, bool bulk_copies) {
  if (!bulk_copies || read_once(needs) || l.vec == 1) return false;
  bool any = false;
  for (size_t k : needs.reread_inputs) {
    const SegmentedOperand& in = l.inputs[k];
    if (in.shared) continue;  // read by several rows (an attention mask): it stays a global load, mostly an L2 hit
    if (in.access != Access::InnerContig || l.vec * c10::elementSize(in.dtype) % 16 != 0) return false;
    any = true;
  }
  return any;
}

// Rows too few for their teams to fill the device (tuning().row_fill threads a multiprocessor):
// the teams above aim at rows enough to fill it many times over, and a model's rows at batch 1 or
// 8 are not (BERT's 128 rows of 768 at batch 1 took a warp each: 16 blocks on 132
// multiprocessors).
bool few_rows(const ReductionLayout& l, const DeviceTarget& target, const Tuning& tune) {
  return tune.row_fill > 0 && l.outer() * l.threads_per_row < int64_t{tune.row_fill} * target.sm_count;
}

// Cached rows in registers whose length is what their team's vector slots cover
// (ReductionLayout::exact), where tuning().row_exact allows it.
bool fills_team_exactly(const ReductionLayout& l, const Tuning& tune) {
  // (team_span() is at least 1: an empty row is never exact.)
  return tune.row_exact != 0 && l.cached && l.cluster == 1 && l.stages == 0 && l.ring_chunk == 0 &&
         l.reduced() == l.team_span();
}

bool rereads_16bit(const ReductionLayout& l, const RowCacheNeeds& needs) {
  return std::all_of(needs.reread_inputs.begin(), needs.reread_inputs.end(), [&](size_t k) {
    return l.inputs[k].shared || c10::elementSize(l.inputs[k].dtype) == 2;
  });
}

bool staging_allowed(const ReductionLayout& l, const RowCacheNeeds& needs, const DeviceTarget& target,
                     const Tuning& tune) {
  const int knob = tune.row_stage;
  // (Scans keep their rows in registers: row_reduction.cpp.)
  if (knob == 0 || needs.scans || !rereads_stageable(l, needs, target.bulk_copies)) return false;
  if (knob > 0) return true;
  if (tune.row_cache != RowCachePolicy::Auto) return false;  // a register cache asked for
  // Few rows stay in registers, their teams widened (H200, bf16 add + rms norm over 1024 rows of
  // 2048: staged 4.48 us, in registers 3.71; 128 rows 1.98 and 1.86).
  if (few_rows(l, target, tune)) return false;
  if (!rereads_16bit(l, needs) || l.reduced() > 32768) return false;
  // Rows of up to 1024 that fill their register teams exactly load with no bounds checks
  // (ReductionLayout::exact) and stay there. Measured on H200, bf16 layer norm over rows of 1024,
  // staged against exact rows in registers: 8192 rows 10.70 / 7.94 us (kernel time, warm L2),
  // 17.2 / 16.0 (L2 flushed); 16384 rows 25.5 / 23.1 (flushed). Rows of 2048 did not gain in
  // registers (16384 rms norm and softmax rows: staged 36.8 and 36.2 us, registers 37.8 and 37.7;
  // 8192 rms norm rows 22.5 / 22.2 flushed): they stay staged.
  if (l.reduced() <= 1024 && fills_team_exactly(l, tune)) return false;
  return l.reduced() >= 2048 || (l.reduced() >= 1024 && !needs.costly_recompute);
}

void choose_row_staging(ReductionLayout& l, const RowCacheNeeds& needs, const DeviceTarget& target, const Tuning& tune) {
  if (!staging_allowed(l, needs, target, tune)) return;
  ReductionLayout s = l;
  for (size_t k : needs.reread_inputs) s.inputs[k].staged = !s.inputs[k].shared;
  // About tuning().row_vectors vectors per thread; nothing is kept in registers.
  const int64_t chunks = s.reduced() / s.vec;
  int tpr = std::max(1, next_pow2((chunks + tune.row_vectors - 1) / tune.row_vectors));
  if (tpr > 32) tpr = std::max(64, tpr);
  s.threads_per_row = std::min(tpr, 1024);
  s.block = s.threads_per_row <= 32 ? 256 : s.threads_per_row;
  s.chunks_per_thread = static_cast<int>((chunks + s.threads_per_row - 1) / s.threads_per_row);
  if (s.chunks_per_thread > 16) return;
  // Up to tuning().row_stage buffers (1 by default) while a multiprocessor still holds two
  // blocks; one where it holds one.
  s.stages = 1;
  if (s.staged_block_bytes() > kMaxStagedBlockBytes) return;
  const int want = tune.row_stage > 0 ? tune.row_stage : 1;
  while (s.stages < want) {
    ++s.stages;
    if (s.staged_block_bytes() > kMaxStagedBlockBytes / 2) {
      --s.stages;
      break;
    }
  }
  s.cached = true;
  s.cache_inputs = true;
  s.cache_first_pass = false;
  s.cluster = 1;
  l = s;
}

// Few cached rows: teams double, each thread keeping fewer vectors (down to one), while the rows'
// threads stay within the fill. Measured on H200 (kernel time, hot L2; docs/performance.md), bf16
// add + layer norm over 128 and 1024 rows of 768: 2.85 -> 1.92 us and 3.30 -> 2.91 with 128
// threads a row (3 vectors of 8 a thread before; 64 threads: 2.30 and 3.10); bf16 add + rms norm
// over 1024 rows of 2048: 4.80 -> 3.52 with 128 threads and no staging (256 threads: 3.79); past
// the fill, f32 add + layer norm over 1024 rows of 768 lost (128 -> 256 threads: 3.26 -> 3.73).
// A width that would split unevenly (even_team) a row the team splits evenly is passed over for
// the next one.
void widen_teams_for_few_rows(ReductionLayout& l, const DeviceTarget& target, const Tuning& tune) {
  if (!l.cached || l.cluster != 1 || l.ring_chunk > 0 || tune.row_fill == 0) return;
  const int64_t chunks = (l.reduced() + l.vec - 1) / l.vec;
  const int64_t want = int64_t{tune.row_fill} * target.sm_count;
  for (int tpr = l.threads_per_row; l.chunks_per_thread > 1 && tpr < 1024;) {
    // (Teams of a warp or less share 256-thread blocks; wider ones take a block each, of 64 and up.)
    tpr = tpr == 32 ? 64 : tpr * 2;
    if (l.outer() * tpr > want) return;
    const int block = tpr <= 32 ? 256 : tpr;
    const int cpt = static_cast<int>((chunks + tpr - 1) / tpr);
    // (Fewer vectors a thread keep fewer registers, but a wider block has fewer to give each:
    // the cached part's share of the budget must not grow.)
    if (l.stages == 0 && int64_t{cpt} * cache_budget(l.block, tune) > int64_t{l.chunks_per_thread} * cache_budget(block, tune))
      return;
    if (cpt > 1 && chunks % tpr != 0 && chunks % l.threads_per_row == 0) continue;
    l.threads_per_row = tpr;
    l.block = block;
    l.chunks_per_thread = cpt;
  }
}

// Few rows whose widened teams hold one vector a thread with threads to spare (bf16 rows of 768:
// 96 vectors, a team of 128) take a team of one thread a vector where those make whole warps, so
// no warp idles and the row fills its team exactly (tuning().row_whole_warps). Off by default:
// measured on H200, BERT bf16 batch 8 in the model, 2.60 us a layer norm against 2.61-2.62 with
// teams of 128 (docs/performance.md).
void fit_teams_to_whole_warps(ReductionLayout& l, const Tuning& tune) {
  if (tune.row_whole_warps == 0 || !l.cached || l.cluster != 1 || l.stages > 0 || l.ring_chunk > 0) return;
  const int64_t chunks = (l.reduced() + l.vec - 1) / l.vec;
  if (l.chunks_per_thread != 1 || l.threads_per_row <= chunks || chunks <= 32 || chunks % 32 != 0) return;
  l.threads_per_row = static_cast<int>(chunks);
  l.block = l.threads_per_row;
}

// Cached teams of a warp or less share blocks of tuning().row_team_block threads (planned at 256).
void share_team_blocks(ReductionLayout& l, const Tuning& tune) {
  if (!l.cached || l.cluster != 1 || l.stages > 0 || l.threads_per_row > 32) return;
  l.block = std::max(l.threads_per_row, tune.row_team_block);
}

// Ringed rows (ReductionLayout::ring_chunk): looped rows whose inputs read again fit shared
// memory (and not registers: staged and cached rows are planned first) stream those inputs
// through a ring of chunks, one block per multiprocessor. A chunk holds 4, 2 or 1 vectors per
// thread of every such input's slice of the row (tuning().row_ring_vectors; 0: the most for which
// a row and a chunk more fit, else a row), filled by one bulk copy per input; the first pass waits
// for each chunk, the last one frees it, and the chunk a ring's length ahead (the next row's)
// starts loading into it. So each row is read from memory once, later passes read it on chip,
// and the next row's loads overlap this row's stores. By default (tuning().row_ring -1) where
// every input read again is 16-bit. Measured on H200, bf16 rows of 65536 (softmax, layer norm,
// rms norm; torchfuse_bench --row-length 65536): looped 96.0 / 114.7 / 92.0 us, ringed with 4
// vectors per chunk 84.1 / 102.6 / 85.8; softmax with 1 / 2 / 8 vectors (8: a chunk per row, no
// overlap) 98.8 / 88.7 / 103.5. Freeing chunks warp by warp (an atomic count per chunk instead
// of __syncthreads) was no faster (87.1 with 4); nor were two blocks per multiprocessor, each
// holding half a row in a cluster of two (106.5 us).
// At most this many chunks in a ring (a barrier each in static shared memory).
constexpr int64_t kMaxRingSlots = 64;

bool plan_ring(ReductionLayout& r, int vectors, bool spare) {
  r.ring_chunk = r.block * r.vec * vectors;
  r.ring_slots = static_cast<int>(std::min<int64_t>(kMaxRingSlots, kMaxStagedBlockBytes / r.ring_slot_bytes()));
  return r.ring_slots >= r.ring_chunks_per_row() + (spare ? 1 : 0);
}

void choose_row_ring(ReductionLayout& l, const RowCacheNeeds& needs, bool bulk_copies, const Tuning& tune) {
  const int knob = tune.row_ring;
  if (l.cached || l.cluster != 1 || knob == 0 || needs.scans || !rereads_stageable(l, needs, bulk_copies)) return;
  if (knob < 0 && !rereads_16bit(l, needs)) return;
  ReductionLayout r = l;
  for (size_t k : needs.reread_inputs) r.inputs[k].staged = !r.inputs[k].shared;
  r.unroll = 1;
  r.looped_blocks_per_sm = 1;
  std::vector<int> vectors = {4, 2, 1};
  if (tune.row_ring_vectors > 0) vectors = {tune.row_ring_vectors};
  for (bool spare : {true, false}) {
    for (int v : vectors) {
      if (plan_ring(r, v, spare)) {
        l = r;
        return;
      }
    }
  }
}

}  // namespace

int64_t ReductionLayout::staged_bytes_before(size_t k) const {
  int64_t bytes = 0;
  for (size_t i = 0; i < k && i < inputs.size(); ++i)
    if (inputs[i].staged) bytes += static_cast<int64_t>(c10::elementSize(inputs[i].dtype));
  return bytes;
}

int64_t ReductionLayout::outer() const { return product(outer_sizes); }
int64_t ReductionLayout::reduced() const { return product(red_sizes); }
int64_t ReductionLayout::inner() const { return product(inner_sizes); }

std::string ReductionLayout::key() const {
  std::string k = std::string(schedule_name(schedule)) + ";A" + std::to_string(outer_sizes.size()) + ";R" +
                  std::to_string(red_sizes.size()) + ";B" + std::to_string(inner_sizes.size()) +
                  ";vec=" + std::to_string(vec) + ";tpr=" + std::to_string(threads_per_row) +
                  ";block=" + std::to_string(block) + ";cpt=" + std::to_string(chunks_per_thread) +
                  ";cached=" + std::to_string(cached) + ";cache_inputs=" + std::to_string(cache_inputs) +
                  ";first=" + std::to_string(cache_first_pass) + ";cluster=" + std::to_string(cluster) +
                  ";split=" + std::to_string(split > 1) + (tile_threads != 32 ? ";tx=" + std::to_string(tile_threads) : std::string()) + ";phased=" + std::to_string(phased_blocks) + ";unroll=" + std::to_string(unroll) +
                  ";online=" + std::to_string(online) + ";idx=" + (index64 ? "64" : "32") +
                  ";fast=" + std::to_string(fast_math) + ";chunks=" + std::to_string(chunk_sums) + ";fsums=" + std::to_string(float_sums) + ";minb=" + std::to_string(min_blocks) +
                  ";pf=" + std::to_string(prefetch) + ";rounds=" + std::to_string(rounds) + ";early=" + std::to_string(early_registers) + "/" + std::to_string(early_narrow_inputs) +
                  ";shr=" + std::to_string(shared_rounds) + ";exact=" + std::to_string(exact) + ";stages=" + std::to_string(stages) + ";ring=" + std::to_string(ring_chunk) + "x" + std::to_string(ring_slots) + ";hints=" + std::to_string(hints.evict_loads) +
                  std::to_string(hints.keep_loads) + std::to_string(hints.evict_stores) + std::to_string(hints.hold_loads) + std::to_string(hints.keep_shared) + ";in=";
  for (const auto& in : inputs) {
    k += std::string(access_name(in.access)) + ":" + c10::toString(in.dtype) + (in.shared ? ":shared" : "") + (in.staged ? ":staged," : ",");
  }
  return k;
}

namespace {

// The blocks that share each column tile's rows (one-pass column reductions).
void choose_column_split(ReductionLayout& l, const DeviceTarget& target, const Tuning& tune) {
  const int64_t width = int64_t{l.tile_threads} * l.vec;
  const int64_t tiles = ((l.inner() + width - 1) / width) * l.outer();
  // One wave of tuning().column_blocks (at most kColumnBlocksPerSm) blocks of 256 threads per
  // multiprocessor, counted in threads: rounding the split up would leave a second, mostly idle
  // wave (H200 f32 col_sum: 544 blocks at 3 per SM ran 1.4 waves).
  const int64_t want = std::max<int64_t>(
      1, std::min(tune.column_blocks, kColumnBlocksPerSm) * static_cast<int64_t>(target.sm_count) * 256 / l.block);
  // (At least 4 rows a thread of each block.)
  const int64_t max_split = std::max<int64_t>(1, l.reduced() / (4 * (l.block / l.tile_threads)));
  // (No tiles: an empty output, which the launcher never launches.)
  l.split = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(max_split, want / std::max<int64_t>(tiles, 1))));
}

}  // namespace

void choose_column_cache(ReductionLayout& l, const Tuning& tune) {
  l.block = 256;
  l.cached = false;
  l.chunks_per_thread = 1;
  int64_t element_inputs = 0;
  for (const auto& in : l.inputs) element_inputs += in.access == Access::InnerContig || in.access == Access::Strided;
  if (tune.column_cache == 0 || element_inputs == 0) return;
  const int64_t rows = l.split > 1 ? (l.reduced() + l.split - 1) / l.split : l.reduced();
  // Rows per thread, a power of two (one kernel serves a range of column lengths): 8 threads
  // along the column where half the budget holds them, else 16 (not split: the split's blocks
  // per multiprocessor were counted for 256 threads).
  const auto rows_per_thread = [&](int64_t threads) {
    int64_t n = 1;
    while (n * threads < rows) n *= 2;
    return n;
  };
  for (const int64_t threads : {int64_t{8}, int64_t{16}}) {
    if (threads == 16 && l.split > 1) break;
    const int64_t n = rows_per_thread(threads);
    const int64_t budget = threads == 8 ? tune.column_cache / 2 : tune.column_cache;
    if (n * element_inputs > budget) continue;
    l.block = static_cast<int>(threads * 32);
    l.cached = true;
    l.chunks_per_thread = static_cast<int>(n);
    return;
  }
}

int column_pass_vector(const ReductionLayout& l, const Tuning& tune) {
  if (tune.column_pass_vectors == 0) return 1;
  int vec = l.vec;
  while (vec > 1 && l.inner() < 32 * vec) vec /= 2;
  return vec;
}

namespace {

// Bytes one row of a tile of 32 x vec columns reads of the element inputs: contiguous columns
// their elements, columns broadcast one element, others a 32-byte sector an element.
int64_t tile_row_bytes(const ReductionLayout& l) {
  int64_t bytes = 0;
  for (const auto& in : l.inputs) {
    if (in.access != Access::InnerContig && in.access != Access::Strided) continue;
    const int64_t elem = static_cast<int64_t>(c10::elementSize(in.dtype));
    const int64_t stride = in.inner_strides.size() == 1 ? in.inner_strides[0] : -1;
    bytes += stride == 1 ? elem * 32 * l.vec : stride == 0 ? elem : int64_t{32} * 32 * l.vec;
  }
  return bytes;
}

// The tiles a wave of split column passes takes at once: all of them where their element inputs
// fit L2 (or Tuning::column_pass_wave_kb where set), else as many as fit the wave's budget
// (three quarters of L2, or column_pass_wave_kb), evened out over the waves (so that the last
// wave is not a few tiles alone).
int64_t column_pass_wave_tiles(const ReductionLayout& l, const DeviceTarget& target, const Tuning& tune, int64_t tiles) {
  if (tune.column_pass_wave_kb == 0) return tiles;
  const bool automatic = tune.column_pass_wave_kb < 0;
  const int64_t budget = automatic ? target.l2_bytes / 4 * 3 : int64_t{tune.column_pass_wave_kb} * 1024;
  const int64_t tile_bytes = tile_row_bytes(l) * l.reduced();
  if (tile_bytes == 0 || tile_bytes * tiles <= (automatic ? target.l2_bytes : budget)) return tiles;
  const int64_t fit = std::max<int64_t>(1, budget / tile_bytes);
  const int64_t waves = (tiles + fit - 1) / fit;
  return (tiles + waves - 1) / waves;
}

}  // namespace

void choose_column_pass_split(ReductionLayout& l, const DeviceTarget& target, const Tuning& tune) {
  l.split = 1;
  l.wave_tiles = 0;
  l.phased_blocks = 0;
  l.split_blocks = 0;
  const int64_t tiles = (l.inner() + 32 * l.vec - 1) / (32 * l.vec) * l.outer();
  if (tiles == 0 || tune.column_pass_blocks == 0) return;
  // A launch per pass: no blocks wait for others, so neither residency nor waves bound the split.
  if (tune.column_pass_launches > 0) {
    if (l.cached) return;
    const int64_t want = int64_t{tune.column_pass_launches} * target.sm_count;
    if (tiles * 2 > want) return;
    const int64_t split = std::min<int64_t>({want / tiles, l.reduced() / kMinSplitPassRows, 65535});
    if (split < 2) return;
    l.split = static_cast<int>(split);
    l.phased_blocks = tune.column_pass_launches;
    return;
  }
  if (!target.cooperative_launch) return;
  // A layout that keeps a tile's column in registers reads it once in one block, no barrier; a
  // looped one splits while half the device would idle, counting the tiles of one wave. (The
  // split's rows may then fit the registers: ScheduleUnit::plan asks choose_column_cache again.)
  const int blocks = std::min(tune.column_pass_blocks, kColumnPassMaxBlocksPerSm);
  const int64_t want = static_cast<int64_t>(blocks) * target.sm_count;
  const int64_t wave = column_pass_wave_tiles(l, target, tune, tiles);
  if (l.cached || wave * 2 > want) return;
  const int64_t split = std::min<int64_t>({want / wave, l.reduced() / kMinSplitPassRows, 65535});
  if (split < 2) return;
  l.split = static_cast<int>(split);
  l.wave_tiles = wave < tiles ? wave : 0;
  l.split_blocks = blocks;
}

ReductionLayout plan_reduction_layout(Schedule schedule, const std::vector<int64_t>& domain,
                                      const std::vector<int64_t>& dims, const std::vector<OperandShape>& inputs,
                                      const RowCacheNeeds& cache, const RowCacheNeeds* online_cache,
                                      const DeviceTarget& target, const Tuning& tune, bool allow_vector) {
  TORCHFUSE_INTERNAL_ASSERT(schedule == Schedule::RowReduction || schedule == Schedule::ColumnReduction,
                            "plan_reduction_layout for ", schedule_name(schedule));
  TORCHFUSE_INTERNAL_ASSERT(!dims.empty(), "no reduced dims");
  std::vector<std::vector<int64_t>> strides;
  for (const auto& in : inputs)
    if (in.is_tensor) strides.push_back(expand(domain, in));
  strides.push_back(ir::contiguous_strides(domain));

  ReductionLayout l;
  l.schedule = schedule;
  l.fast_math = tune.fast_math != 0;
  std::vector<std::vector<int64_t>> sa, sr, sb;
  const int64_t lo = dims.front();
  const int64_t hi = dims.back() + 1;
  coalesce_dims(domain, 0, lo, strides, l.outer_sizes, sa);
  coalesce_dims(domain, lo, hi, strides, l.red_sizes, sr);
  coalesce_dims(domain, hi, static_cast<int64_t>(domain.size()), strides, l.inner_sizes, sb);
  if (l.red_sizes.empty()) {
    l.red_sizes.push_back(1);
    for (auto& s : sr) s.push_back(0);
  }

  size_t t = 0;
  int64_t largest = product(domain);
  size_t widest = 1;
  for (const auto& in : inputs) {
    SegmentedOperand op;
    op.dtype = in.dtype;
    if (!in.is_tensor) {
      op.access = Access::Scalar;
      l.inputs.push_back(op);
      continue;
    }
    op.outer_strides = sa[t];
    op.red_strides = sr[t];
    op.inner_strides = sb[t];
    ++t;
    if (all_zero(op.outer_strides) && all_zero(op.red_strides) && all_zero(op.inner_strides)) op.access = Access::Uniform;
    else if (all_zero(op.red_strides)) op.access = Access::InnerBroadcast;
    else if (op.red_strides.size() == 1 && op.red_strides[0] == 1) op.access = Access::InnerContig;
    else op.access = Access::Strided;
    if (op.access == Access::InnerContig) widest = std::max(widest, c10::elementSize(in.dtype));
    op.shared = has_broadcast_dim(l.outer_sizes, op.outer_strides) || has_broadcast_dim(l.inner_sizes, op.inner_strides);
    int64_t off = 1;
    auto add = [&](const std::vector<int64_t>& sizes, const std::vector<int64_t>& st) {
      for (size_t d = 0; d < sizes.size(); ++d) off += (sizes[d] - 1) * std::abs(st[d]);
    };
    add(l.outer_sizes, op.outer_strides);
    add(l.red_sizes, op.red_strides);
    add(l.inner_sizes, op.inner_strides);
    largest = std::max(largest, off);
    l.inputs.push_back(op);
  }
  l.index64 = largest + (int64_t{1} << 24) >= std::numeric_limits<int32_t>::max();

  if (schedule == Schedule::RowReduction) {
    l.vec = allow_vector && l.red_sizes.size() == 1 ? static_cast<int>(std::min<size_t>(8, 16 / widest)) : 1;
    if (l.reduced() % l.vec != 0) l.vec = 1;
    // Online sums save a team reduction and, where nothing else is read again, a pass; on short
    // cached rows their extra per-row work lost (H200 rows of 1024, attention softmax: f32 270 ->
    // 299 us, bf16 170 -> 177-210), on rows of 4096 and more they won or tied (logsumexp f32
    // 85 -> 75, bf16 59 -> 50; softmax bf16 88 -> 84, f32 134 -> 135; rows of 65536 f32 194 ->
    // 176, bf16 129 -> 116).
    l.online = online_cache && l.reduced() >= tune.online_min_row;
    const RowCacheNeeds& needs = l.online ? *online_cache : cache;
    choose_row_schedule(l, needs, needs.scans ? 1 : target.max_cluster, tune);
    choose_row_staging(l, needs, target, tune);  // may keep in shared memory a row too long for registers
    if (!l.cached) {
      l.looped_blocks_per_sm = choose_looped_blocks_per_sm(l, target, tune);
      l.unroll = choose_looped_unroll(l, tune);
      choose_row_ring(l, needs, target.bulk_copies, tune);
    }
    // (Few rows widen their teams: each block then takes one row group, with no rounds and no
    // prefetch of a next row, which trade blocks for work a block.)
    const bool few = few_rows(l, target, tune);
    widen_teams_for_few_rows(l, target, tune);
    if (few) fit_teams_to_whole_warps(l, tune);
    l.min_blocks = tune.row_min_blocks;
    l.chunk_sums = !l.cached && tune.chunk_sums != 0;
    // Staged rows read their rows from shared memory: no L2 prefetch, and the launch picks the
    // grid (launch_row).
    l.prefetch = l.stages == 0 && !few && choose_row_prefetch(l, needs, tune);
    l.rounds = l.stages == 0 && !few ? choose_row_rounds(l, needs, tune) : 1;
    // (After the rounds and the prefetch, which count a team of a warp in a block of its own as a
    // block-wide one.)
    share_team_blocks(l, tune);
    l.early_registers = l.cached ? (tune.row_early_loads < 0 ? kAutoEarlyRegisters : tune.row_early_loads) : 0;
    // (Teams of at least a warp load every 16-bit input early. A warp a row, bf16 add + layer
    // norm over rows of 768, H200: 1024 rows 2.72 -> 2.59 us, 128 rows 2.21 -> 2.02, 4096 rows
    // 4.67 -> 4.58; rows of 1024: 3.14 -> 3.04. A block of 128 a row (BERT's rows of 768 since
    // the even teams), `row_early_loads=64`: 128 rows 1.82 -> 1.66, 1024 rows 2.66 -> 2.62.
    // Teams of a few threads stay as they were: rows of 64 lost, above.)
    l.early_narrow_inputs = tune.row_early_loads >= 0 || l.threads_per_row >= 32 ? -1 : kAutoEarlyNarrowInputs;
    l.shared_rounds = tune.row_shared_rounds != 0 && l.threads_per_row > 32 && l.cluster == 1;
    // Guarded loads sit in a branch each, and NVRTC issues each one after the previous chunk's
    // arithmetic: a cached pass waited for memory once per chunk. Measured on H200 (bf16, warm
    // L2, the kernel alone): layer norm over rows of 64 (2 threads, 4 vectors each) 27.5 -> 22.8
    // us, rows of 1024 (a warp, 4 vectors each) 10.9 -> 9.5.
    l.exact = fills_team_exactly(l, tune);
    return l;
  }
  // Column: 32 threads along the kept inner dims (vec columns each, 16-byte loads when the
  // inner dim is contiguous), 8 along the reduced one, then split the reduced dim across blocks
  // until the grid fills the device. (One-pass column reductions reshape the block after:
  // choose_column_rows.)
  size_t widest_inner = 1;
  bool inner_vectorizable = allow_vector && l.inner_sizes.size() == 1;
  for (const auto& op : l.inputs) {
    if (op.access == Access::Scalar || op.access == Access::Uniform) continue;
    const int64_t st = op.inner_strides.empty() ? 0 : op.inner_strides.back();
    if (st == 1) widest_inner = std::max(widest_inner, c10::elementSize(op.dtype));
    else if (st != 0) inner_vectorizable = false;
  }
  l.vec = inner_vectorizable ? static_cast<int>(std::min<size_t>(8, 16 / widest_inner)) : 1;
  if (l.inner() % l.vec != 0) l.vec = 1;
  l.unroll = l.vec > 1 ? tune.column_unroll : 1;
  l.float_sums = tune.column_float_sums;
  l.block = 256;
  choose_column_split(l, target, tune);
  return l;
}

void choose_column_rows(ReductionLayout& l, int accumulator_bytes, const DeviceTarget& target, const Tuning& tune) {
  // The block's partial rows of every accumulator sit in static shared memory, 48 KiB at most
  // with the kernel's other shared variables: an f32 sum and max at 32 rows took 48 KiB exactly,
  // which failed to build on the H200 (the group ran through ATen).
  const int tx = tune.column_tile_threads;
  const auto too_large = [&](int rows) { return int64_t{rows} * tx * l.vec * accumulator_bytes > 46 * 1024; };
  int rows = tune.column_rows;
  while (rows > 8 && too_large(rows)) rows /= 2;
  // Several double sums of 16-bit vectors overflow it at 8 rows too (three f32 sums of an f16
  // input: 48 KiB, which failed to build): such groups read one column a thread.
  const bool narrow = l.vec > 1 && too_large(rows);
  if (narrow) {
    l.vec = 1;
    l.unroll = 1;
  }
  if (tx * rows == l.block && tx == l.tile_threads && !narrow) return;
  l.tile_threads = tx;
  l.block = tx * rows;
  choose_column_split(l, target, tune);
}

}  // namespace codegen
}  // namespace torchfuse
