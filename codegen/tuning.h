// Schedule knobs whose defaults come from measurements (docs/performance.md). For tuning runs,
// TORCHFUSE_TUNE="name=value,..." overrides them, read once per process; every knob that changes
// a kernel's source is part of that kernel's layout key, so cached kernels stay correct.
#pragma once

#include <string>

namespace torchfuse {
namespace codegen {

// How a cached row schedule keeps element values that a later pass reads again.
enum class RowCachePolicy {
  Values,  // every such value, in registers as float
  Inputs,  // only the group inputs they derive from, as loaded (16-bit types stay packed); the rest is recomputed
  Auto,    // Inputs when every re-read input is 16-bit (packed, they take a quarter of the
           // registers), else Values: measured on H100, recomputing exp or even a subtraction
           // cost f32 softmax and layer norm 4-7%, while bf16 softmax and layer norm gained 20-30%.
};

struct Tuning {
  int pointwise_unroll = 2;  // vectors each thread loads before computing (pointwise fast path)
  RowCachePolicy row_cache = RowCachePolicy::Auto;
  int row_vectors = 4;       // vectors per thread a cached row schedule aims for
  int column_unroll = 4;     // rows each thread loads before accumulating (column schedule)
  int full_unroll = 4;       // vectors each thread loads before accumulating (full reductions)
};

// The process's knobs: defaults, then TORCHFUSE_TUNE. A malformed override is an error.
const Tuning& tuning();
// Parses "name=value,..." over the defaults (exposed for tests).
Tuning parse_tuning(const std::string& spec);

// Tests: replaces the process's knobs while alive (not thread-safe; no concurrent compiles).
class ScopedTuning {
 public:
  explicit ScopedTuning(const Tuning& t);
  ~ScopedTuning();
  ScopedTuning(const ScopedTuning&) = delete;
  ScopedTuning& operator=(const ScopedTuning&) = delete;

 private:
  Tuning saved_;
};

}  // namespace codegen
}  // namespace torchfuse
