// Timing GPU work the way shared/bench/anchors-h200.md was measured (triton's do_bench):
// CUDA events around each call, the L2 cache flushed before each call outside the timed
// region, warm-up first, median over many calls.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace torchfuse_bench {

// True when this LibTorch's generic c10::Event can time CUDA work (elapsedTime, LibTorch >= 2.4).
// Otherwise every call is bracketed by device synchronizations and timed on the host clock,
// which adds launch overhead to each sample.
bool have_event_timer();
std::string timer_name();  // "cuda_events" or "host_clock"

struct TimingOptions {
  int reps = 0;              // timed calls; 0: enough for about target_ms, within [min_reps, max_reps]
  double target_ms = 200.0;  // do_bench uses 100 ms; a little more for steadier medians
  int min_reps = 50;
  int max_reps = 2000;
  double warmup_ms = 25.0;   // as do_bench
};

struct Timing {
  double median_us = 0;
  double min_us = 0;
  int reps = 0;
};

class GpuTimer {
 public:
  // flush_bytes: the buffer zeroed before every timed call; >= 2x L2 (H100/H200 have 50-60 MB).
  explicit GpuTimer(TimingOptions options, int64_t flush_bytes = int64_t(256) << 20);

  // Warms fn up for about warmup_ms, then times it. fn must only enqueue GPU work on the
  // current stream (it may block the host, like any ATen call).
  Timing time(const std::function<void()>& fn);

  int64_t flush_bytes() const { return flush_buffer_.numel() * flush_buffer_.element_size(); }

 private:
  // Per-call milliseconds of `reps` calls, each after an L2 flush.
  std::vector<double> sample_ms(const std::function<void()>& fn, int reps);
  void flush_l2() { flush_buffer_.zero_(); }

  TimingOptions options_;
  at::Tensor flush_buffer_;
};

// Device-to-device copy bandwidth in GB/s (1e9 bytes/s; bytes read + bytes written), median.
double copy_bandwidth_gbs(GpuTimer& timer, int64_t bytes = int64_t(1) << 30);

// Host wall time per call over `calls` back-to-back calls with one synchronize at the end
// (after `warmup` untimed calls): the launch-bound cost of a small call.
double wall_us_per_call(const std::function<void()>& fn, int calls, int warmup = 50);

double median(std::vector<double> values);

}  // namespace torchfuse_bench
