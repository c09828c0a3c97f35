// L2 cache hints for what a kernel streams: which of its vector loads and stores ask L2 (sm_80+)
// to evict their lines before others, or, for rows a later pass reads again, after them.
#pragma once

#include <cstdint>

#include "codegen/tuning.h"

namespace torchfuse {
namespace codegen {

struct CacheHints {
  bool evict_loads = false;   // the last load of each element no other thread reads: evict first
  bool keep_loads = false;    // loads of rows a later pass reads again (looped rows): evict last
  bool evict_stores = false;  // vector stores of element outputs: evict first
  bool hold_loads = false;    // loads (and bulk copies) of rows kept on chip for later passes: evict last
  bool keep_shared = false;   // row schedules' loads of inputs several rows read: evict last
};

// What decides the hints: how a kernel moves its data.
struct KernelTraffic {
  bool rereads_rows = false;     // a looped row schedule: later passes re-read each row through L2
  bool element_outputs = false;  // writes outputs element by element (not only per-row or scalar results)
  bool inputs_16bit = false;     // every input it streams (reads element by element, unshared) is 16-bit
  int64_t held_row = 0;          // rows loaded once and kept on chip for later passes: their length (else 0)
  bool held_in_shared = false;   // ...kept in shared memory (staged or ringed rows), not in registers
  bool shared_inputs = false;    // a row schedule loads inputs several rows read (stride 0 over a kept dim)
  bool shared_rows_differ = false;  // ...one of which differs between rows (an attention mask), not
                                    // the same row for all of them (a layer norm's weights)
};

// The hints for a kernel, from Tuning::cache_hints: -1 the measured rules (cache_hints.cpp),
// 0 none, 1 all of them; hold_loads also from Tuning::row_hold, keep_shared from
// Tuning::shared_hold.
CacheHints choose_cache_hints(const KernelTraffic& traffic, const Tuning& tune);

}  // namespace codegen
}  // namespace torchfuse
