#include "tools/timing.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/cuda.h>
#include <torch/version.h>

// As benchmarks/gpu_timing.cpp: c10::Event::elapsedTime (timing CUDA work without ATen/cuda
// headers, so that this compiles against a CPU-only LibTorch) arrived in LibTorch 2.4.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define TORCHFUSE_CLI_EVENT_TIMER 1
#else
#define TORCHFUSE_CLI_EVENT_TIMER 0
#endif

namespace torchfuse_cli {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double host_loop_ms(const std::function<void()>& fn, bool cuda, int iters) {
  if (cuda) torch::cuda::synchronize();
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) fn();
  if (cuda) torch::cuda::synchronize();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double event_loop_ms(const std::function<void()>& fn, int iters) {
#if TORCHFUSE_CLI_EVENT_TIMER
  c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
  const c10::Stream stream = guard.getStream(guard.getDevice());
  // BACKEND_DEFAULT: a CUDA event with timing on.
  c10::Event start(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  c10::Event stop(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  torch::cuda::synchronize();
  start.record(stream);
  for (int i = 0; i < iters; ++i) fn();
  stop.record(stream);
  torch::cuda::synchronize();
  return start.elapsedTime(stop);
#else
  return host_loop_ms(fn, true, iters);
#endif
}

}  // namespace

std::string timer_name(bool cuda) {
  if (!cuda) return "host_clock_cpu";
  return TORCHFUSE_CLI_EVENT_TIMER ? "cuda_events" : "host_clock";
}

LoopTiming time_loops(const std::function<void()>& fn, bool cuda, int warmup, int iters, int repeats) {
  for (int i = 0; i < warmup; ++i) fn();
  if (cuda) torch::cuda::synchronize();
  std::vector<double> per_call_us;
  for (int r = 0; r < repeats; ++r) {
    const double ms = cuda ? event_loop_ms(fn, iters) : host_loop_ms(fn, false, iters);
    per_call_us.push_back(1e3 * ms / iters);
  }
  LoopTiming t;
  t.median_us = median(per_call_us);
  t.min_us = *std::min_element(per_call_us.begin(), per_call_us.end());
  return t;
}

}  // namespace torchfuse_cli
