// A generated kernel: its name, CUDA C++ source and launch shape.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace torchfuse {
namespace codegen {

struct GeneratedKernel {
  std::string name;     // extern "C" entry point
  std::string source;   // complete translation unit for NVRTC
  int block_size = 256;
  // false: compiled with --fmad=false, no multiply-add contraction. Kernels that compute an element
  // value again in a later pass need each pass to get the same value: a product contracted into
  // the next subtraction in one pass but rounded in another differs by its rounding error, which
  // a variance over one element turns into inf (eager: NaN) and exp of a 1e30-scale difference
  // into inf (fuzz seed 5, programs 6161 and 1194).
  bool fmad = true;
  // Every entry point begins with tf_grid_dependency() (kGridDependencyCall): the kernel may be
  // launched with programmatic dependent launch (runtime/programmatic_launch.h). Set by
  // name_kernel, which counts the calls.
  bool grid_dependency = false;
  // Process-unique per generated source (copies share it), so that the runtime finds a loaded
  // kernel without comparing sources; 0: no identity (looked up by source). Whoever edits
  // `source` must reset it.
  uint64_t id = 0;
};

// The first statement of every generated entry point, before any memory access: waits until the
// grids this one depends on have completed and their writes are visible, then lets the grid after
// it launch (programmatic dependent launch, sm_90 and later; a grid launched without it waits for
// nothing). Defined by codegen/cuda_types.h's grid_dependency_definition(): at the prelude's end,
// and ahead of the attention kernel's primitives.
inline constexpr const char* kGridDependencyCall = "tf_grid_dependency();";

inline uint64_t next_kernel_id() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

}  // namespace codegen
}  // namespace torchfuse
