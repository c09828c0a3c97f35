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
// - Cached rows (tuning().row_hold): evict-last loads of the rows a block keeps in registers, as
//   Triton's row kernels have (a standalone harness, f32 layer norm over rows of 4096: Triton's
//   own kernel 128.6-129.4 us; the same kernel in CUDA 129.2-129.7 with them, 134.3-134.7
//   without). torchfuse's (`tune_sweep.sh`), against none, f32: layer
//   norm 133.4 -> 129.7, rms norm 133.3 -> 129.2, softmax 133.0 -> 128.5, add + layer norm 263.1
//   -> 257.2, rows of 65536 (cluster) 158.3 -> 153.2; but rows of 1024 (attention softmax) 268.7
//   -> 271.2. The L1-allocating form (ld.global.L1::evict_last, Triton's) measured the same
//   within 0.6 us except add + layer norm, 271.3. bf16 attention softmax (rows of 1024) lost with
//   it (141.3 -> 143.2); other 16-bit rows of the suite are staged in shared memory and load none.
//   So only rows of at least kHeldRowMin elements that are not all 16-bit take it.
constexpr int64_t kHeldRowMin = 4096;

CacheHints choose_cache_hints(const KernelTraffic& traffic) {
  const int mode = tuning().cache_hints;
  if (mode == 0) return {};
  CacheHints h;
  if (mode == 1 || traffic.rereads_rows) h = {true, true, true};
  else if (!traffic.element_outputs && traffic.inputs_16bit) h.evict_loads = true;
  const bool measured = traffic.held_row >= kHeldRowMin && !traffic.inputs_16bit;
  h.hold_loads = traffic.held_row > 0 && (tuning().row_hold > 0 || (tuning().row_hold < 0 && measured));
  return h;
}

}  // namespace codegen
}  // namespace torchfuse
