// Counting the CUDA kernels one call launches, with LibTorch's Kineto (CUPTI) profiler:
// the same source of truth as torch.profiler in scripts/bench_torch_compile.py.
#pragma once

#include <functional>
#include <string>

namespace torchfuse_bench {

// Kernels one call of fn launches (memcpy/memset excluded), or -1 when the profiler is
// unavailable in this LibTorch (no Kineto/CUPTI) or recorded no kernel at all (every call
// this benchmark profiles launches some); `error` then says why.
int count_kernels(const std::function<void()>& fn, std::string* error = nullptr);

}  // namespace torchfuse_bench
