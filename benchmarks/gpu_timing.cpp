#include "gpu_timing.h"

#include <algorithm>
#include <chrono>

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

// c10::Event::elapsedTime (generic events that can time CUDA work without ATen/cuda headers)
// arrived in LibTorch 2.4. Older versions, e.g. the CPU-only 1.13 this also compiles against,
// time on the host clock.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define TORCHFUSE_BENCH_EVENT_TIMER 1
#else
#define TORCHFUSE_BENCH_EVENT_TIMER 0
#endif

namespace torchfuse_bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

bool have_event_timer() { return TORCHFUSE_BENCH_EVENT_TIMER != 0; }

std::string timer_name() { return have_event_timer() ? "cuda_events" : "host_clock"; }

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return 0.5 * (lower + upper);
}

GpuTimer::GpuTimer(TimingOptions options, int64_t flush_bytes)
    : options_(options),
      flush_buffer_(torch::empty({flush_bytes / 4}, torch::dtype(torch::kInt).device(torch::kCUDA))) {}

std::vector<double> GpuTimer::sample_ms(const std::function<void()>& fn, int reps) {
  std::vector<double> ms(reps);
#if TORCHFUSE_BENCH_EVENT_TIMER
  // Record every event first and synchronize once at the end, like do_bench: the flush
  // (~60 us for 256 MB) lets the host run ahead, so host launch overhead is hidden as long
  // as it is shorter than the flush.
  c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
  const c10::Stream stream = cuda.getStream(cuda.getDevice());
  std::vector<c10::Event> start, stop;
  start.reserve(reps);
  stop.reserve(reps);
  for (int i = 0; i < reps; ++i) {
    start.emplace_back(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);  // timing on
    stop.emplace_back(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  }
  for (int i = 0; i < reps; ++i) {
    flush_l2();
    start[i].record(stream);
    fn();
    stop[i].record(stream);
  }
  torch::cuda::synchronize();
  for (int i = 0; i < reps; ++i) ms[i] = start[i].elapsedTime(stop[i]);
#else
  for (int i = 0; i < reps; ++i) {
    flush_l2();
    torch::cuda::synchronize();
    const auto t0 = Clock::now();
    fn();
    torch::cuda::synchronize();
    ms[i] = 1e3 * seconds_since(t0);
  }
#endif
  return ms;
}

Timing GpuTimer::time(const std::function<void()>& fn) {
  // A first estimate sizes the warm-up and, unless fixed, the number of timed calls.
  const double estimate_ms = std::max(median(sample_ms(fn, 3)), 1e-3);
  const int warmup = std::clamp(static_cast<int>(options_.warmup_ms / estimate_ms), 1, 1000);
  sample_ms(fn, warmup);
  const int reps = options_.reps > 0
                       ? options_.reps
                       : std::clamp(static_cast<int>(options_.target_ms / estimate_ms),
                                    options_.min_reps, options_.max_reps);
  const std::vector<double> ms = sample_ms(fn, reps);
  Timing t;
  t.median_us = 1e3 * median(ms);
  t.min_us = 1e3 * *std::min_element(ms.begin(), ms.end());
  t.reps = reps;
  return t;
}

double copy_bandwidth_gbs(GpuTimer& timer, int64_t bytes) {
  const auto options = torch::dtype(torch::kFloat).device(torch::kCUDA);
  const at::Tensor src = torch::ones({bytes / 4}, options);
  at::Tensor dst = torch::empty_like(src);
  const Timing t = timer.time([&] { dst.copy_(src); });
  const double moved = 2.0 * static_cast<double>(src.numel() * src.element_size());
  return moved / (t.median_us * 1e-6) / 1e9;
}

double wall_us_per_call(const std::function<void()>& fn, int calls, int warmup) {
  for (int i = 0; i < warmup; ++i) fn();
  torch::cuda::synchronize();
  const auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) fn();
  torch::cuda::synchronize();
  return 1e6 * seconds_since(t0) / calls;
}

}  // namespace torchfuse_bench
