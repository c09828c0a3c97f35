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
  // Process-unique per generated source (copies share it), so that the runtime finds a loaded
  // kernel without comparing sources; 0: no identity (looked up by source). Whoever edits
  // `source` must reset it.
  uint64_t id = 0;
};

inline uint64_t next_kernel_id() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

}  // namespace codegen
}  // namespace torchfuse
