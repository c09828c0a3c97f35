#include "kernel_count.h"

#include <cstdint>
#include <exception>
#include <set>

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

namespace torchfuse_bench {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

// libkineto::ActivityType::CONCURRENT_KERNEL (libkineto's ActivityType.h; the value has been
// 5 since Kineto's first releases). KinetoEvent::activityType() reports it for GPU kernels;
// memcpy, memset, runtime calls and annotations have other values.
constexpr uint8_t kKinetoConcurrentKernel = 5;

}  // namespace

int count_kernels(const std::function<void()>& fn, std::string* error) {
  try {
    // Nothing launched earlier may still be running inside the profiled window.
    torch::cuda::synchronize();
    const ProfilerConfig config(ProfilerState::KINETO);
    const std::set<ActivityType> activities{ActivityType::CPU, ActivityType::CUDA};
    profiler::prepareProfiler(config, activities);
    profiler::enableProfiler(config, activities);
    try {
      fn();
      torch::cuda::synchronize();
    } catch (...) {
      profiler::disableProfiler();
      throw;
    }
    const auto result = profiler::disableProfiler();
    int kernels = 0;
    for (const auto& event : result->events()) {
      if (event.activityType() == kKinetoConcurrentKernel) ++kernels;
    }
    // Every benchmarked call launches work; seeing none means CUPTI delivered no GPU activity.
    if (kernels == 0) {
      if (error) *error = "the profiler recorded no GPU kernels (CUPTI unavailable?)";
      return -1;
    }
    return kernels;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return -1;
  }
}

}  // namespace torchfuse_bench
