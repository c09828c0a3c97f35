// Counting the CUDA kernels one call launches, with LibTorch's Kineto (CUPTI) profiler:
// the same source of truth as torch.profiler in scripts/bench_torch_compile.py. Also what the
// profiler saw, by name (tests/test_gpu_names.cpp checks torchfuse's names with it).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace torchfuse_bench {

struct ProfiledEvent {
  std::string name;
  bool kernel = false;  // a GPU kernel (CUPTI's activity); else a CPU-side event (record functions,
                        // runtime calls) or a memcpy/memset
};

// The events LibTorch's Kineto profiler recorded while fn ran on the CPU and on CUDA devices,
// after synchronizing before and after. Throws what the profiler or fn throws (a LibTorch
// without Kineto). GPU kernels show only where CUPTI delivers activity.
std::vector<ProfiledEvent> profile_events(const std::function<void()>& fn);

// Kernels one call of fn launches (memcpy/memset excluded), or -1 when the profiler is
// unavailable in this LibTorch (no Kineto/CUPTI) or recorded no kernel at all (every call
// this benchmark profiles launches some); `error` then says why.
int count_kernels(const std::function<void()>& fn, std::string* error = nullptr);

}  // namespace torchfuse_bench
