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

std::vector<ProfiledEvent> profile_events(const std::function<void()>& fn) {
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
  std::vector<ProfiledEvent> events;
  for (const auto& event : result->events()) {
    events.push_back({event.name(), event.activityType() == kKinetoConcurrentKernel});
  }
  return events;
}

int count_kernels(const std::function<void()>& fn, std::string* error) {
  try {
    int kernels = 0;
    for (const auto& event : profile_events(fn)) kernels += event.kernel ? 1 : 0;
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
