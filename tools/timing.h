// Per-call timing for `torchfuse bench`: `repeats` loops of `iters` back-to-back calls, each loop
// bracketed by CUDA events on the current stream (LibTorch >= 2.4: c10::Event::elapsedTime; older
// LibTorch, e.g. the CPU-only 1.13, and CPU inputs: the host clock around synchronized loops).
#pragma once

#include <functional>
#include <string>

namespace torchfuse_cli {

struct LoopTiming {
  double median_us = 0;  // per call, median over the loops
  double min_us = 0;     // per call, the fastest loop
};

// Runs fn `warmup` times, then times the loops. `cuda`: fn runs GPU work (synchronized around
// each loop and timed with events where available).
LoopTiming time_loops(const std::function<void()>& fn, bool cuda, int warmup, int iters, int repeats);

// "cuda_events", "host_clock" (CUDA without event timing in this LibTorch) or "host_clock_cpu".
std::string timer_name(bool cuda);

}  // namespace torchfuse_cli
