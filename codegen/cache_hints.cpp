#include "codegen/cache_hints.h"

#include "codegen/tuning.h"

namespace torchfuse {
namespace codegen {

// Measured on H200 with the suite's timing (L2 flushed by writing 256 MB before each call, which
// leaves L2 full of dirty lines), each hint against none in one run:
// - Looped rows (bf16 softmax, rows of 65536): 106.7 us with none, 105.5 with evict-first last
//   loads, 100.9 adding evict-last earlier loads, 95.1 adding evict-first stores. Lines of rows
//   that are done and of outputs leave first, so the rows still to be re-read stay in L2.
// - Kernels that only read element by element (column and full sums, logsumexp) over bf16:
//   evict-first loads 47.1 -> 43.5 us (column sum), 44.8 -> 41.8 (mean of squares), 45.5 -> 42.3
//   (logsumexp). The dirty lines stay in L2 instead of being written back during the kernel. The
//   same over f32 was mixed and is off: column sum 74.6 -> 73.8, mean of squares 74.2 -> 75.6,
//   logsumexp 74.1 -> 82.8.
// - Kernels that write element outputs got slower with either hint (f32 layer norm 134.1 -> 139.9
//   with evict-first loads, 144.7 adding stores; f32 GELU 130.3 -> 133.3; bf16 layer norm 80.2 ->
//   84.8), and so did cluster rows (f32 rows of 65536, 165.7 -> 172.1): they keep none.
// The form of the hint did not matter: ld.global.cs and the cache-policy forms with or without
// the read-only path measured the same.
// - Rows a block keeps on chip for its later passes (Tuning::row_hold): evict-last loads, and
//   evict-last bulk copies where they are staged or ringed in shared memory, as Triton's row
//   kernels load the rows they keep (a standalone harness, f32 layer norm over rows of 4096:
//   Triton's own kernel 128.6-129.4 us; the same kernel in CUDA 129.2-129.7 with the hint,
//   134.3-134.7 without). torchfuse (`tune_sweep.sh`), against none:
//   - in registers, f32: layer norm 133.4 -> 129.7, rms norm 133.3 -> 129.2, softmax 133.0 ->
//     128.5, add + layer norm 263.1 -> 257.2, rows of 65536 (cluster) 158.3 -> 153.2; but rows of
//     1024 lost (attention softmax 268.7 -> 271.2, bf16 141.3 -> 143.2, bf16 softmax 72.0 ->
//     72.5). The L1-allocating form (ld.global.L1::evict_last, Triton's) measured the same
//     within 0.6 us except add + layer norm, 271.3.
//   - staged, bf16 rows of 4096: softmax 69.7 -> 67.4, layer norm 71.5 -> 69.4, rms norm 70.7
//     -> 68.5, add + layer norm 138.3 -> 133.1; rows of 1024: layer norm 74.0 -> 71.2, add +
//     layer norm 138.4 -> 134.4.
//   - ringed, bf16 rows of 65536: softmax 84.1 / 84.7 -> 82.1 / 81.9, layer norm 102.4 ->
//     100.5, rms norm 85.8 -> 85.7. Evict-first bulk copies instead: softmax 88.9-89.4.
//   So rows in shared memory take it, and rows in registers from kHeldRowMin elements.
// - Inputs several rows read (Tuning::shared_hold), evict-last and kept in L1, as Triton loads
//   an attention mask: f32 attention softmax (mask [1, 1, 1024, 1024] over 8 x 16 heads) 268.2
//   -> 258.7 us, bf16 140.9 -> 139.5 (an Nsight Compute profile at b4818da had the f32 kernel
//   read 566 MB from DRAM where Triton's read 541 and the minimum is 516: the mask's lines
//   were evicted between the heads that read them). Weights, the same row for every row, lost
//   (f32 layer norm 130.1 -> 132.4, add + layer norm 257.8 -> 263.5; bf16 and rms norm within
//   0.3 us), so only kernels where a shared input differs between rows take it.
constexpr int64_t kHeldRowMin = 4096;

CacheHints choose_cache_hints(const KernelTraffic& traffic, const Tuning& tune) {
  const int mode = tune.cache_hints;
  if (mode == 0) return {};
  CacheHints h;
  if (mode == 1 || traffic.rereads_rows) h = {true, true, true};
  else if (!traffic.element_outputs && traffic.inputs_16bit) h.evict_loads = true;
  const bool measured = traffic.held_in_shared || traffic.held_row >= kHeldRowMin;
  h.hold_loads = traffic.held_row > 0 && (tune.row_hold > 0 || (tune.row_hold < 0 && measured));
  h.keep_shared = traffic.shared_inputs &&
                  (tune.shared_hold > 0 || (tune.shared_hold < 0 && traffic.shared_rows_differ));
  return h;
}

}  // namespace codegen
}  // namespace torchfuse
