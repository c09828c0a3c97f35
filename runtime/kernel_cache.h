// Compiled kernels, shared by every compiled module of the process: cubins keyed by kernel
// name and canonical source, NVRTC options, architecture and versions (in memory, then on disk, then NVRTC), and
// functions loaded per device.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <cuda.h>

#include "codegen/kernel.h"

namespace torchfuse {
namespace runtime {

// What one compiled module's requests cost; each module keeps its own.
struct CompileCounters {
  std::atomic<int64_t> nvrtc_compiles{0};
  std::atomic<int64_t> nvrtc_micros{0};
  std::atomic<int64_t> memory_hits{0};
  std::atomic<int64_t> disk_hits{0};
  std::atomic<int64_t> disk_misses{0};
};

class DiskCache;

class KernelCache {
 public:
  static KernelCache& global();
  // A cache of its own over the disk cache in `disk_dir` ("" for memory only); global() uses
  // DiskCache::default_dir(). Tests build their own to choose the directory.
  explicit KernelCache(const std::string& disk_dir);
  ~KernelCache();

  // The cubin of `kernel` for `arch` ("sm_90"): from memory, else from disk, else NVRTC.
  std::shared_ptr<const std::string> cubin(const codegen::GeneratedKernel& kernel, const std::string& arch,
                                           CompileCounters* counters);
  // Entry point `entry` (default: the kernel's name) of `kernel`, loaded on CUDA device
  // `ordinal` (compiling for that device's architecture).
  CUfunction function(const codegen::GeneratedKernel& kernel, int ordinal, CompileCounters* counters,
                      const std::string& entry = "");

  // The cache key of a kernel for an architecture: versions, arch, NVRTC options, the kernel's
  // name and its canonical source (codegen::canonical_source), so that the same kernel from a
  // differently numbered graph hits (exposed for tests).
  static std::string key(const codegen::GeneratedKernel& kernel, const std::string& arch);

  // The disk cache underneath (for tests and diagnostics).
  DiskCache& disk();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace runtime
}  // namespace torchfuse
