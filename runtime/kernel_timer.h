// Kernel time of one fusion group when CompileOptions::profile_kernels is on: a pair of CUDA
// events around each call's launches, on the stream the kernels run on. Pairs resolve lazily:
// completed ones whenever many are pending, all of them when totals() is asked (stats()), so
// timing adds no synchronization to the calls themselves.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>

#include <c10/core/Device.h>
#include <cuda.h>

namespace torchfuse {
namespace runtime {

class KernelTimer {
 public:
  struct Mark {
    CUevent start = nullptr;
    CUevent end = nullptr;
    int device = -1;
    CUstream stream = nullptr;
  };
  struct Totals {
    int64_t calls = 0;  // timed calls
    double ms = 0;      // their kernel milliseconds
  };

  KernelTimer() = default;
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;
  ~KernelTimer();

  // Records the start event on the current stream of `device` (throws torchfuse::Error when the
  // driver has no event API).
  Mark start(const c10::Device& device);
  // Records the end event and queues the pair.
  void stop(Mark m);
  // Drops a pair whose launches failed.
  void discard(Mark m);
  // Every queued pair resolved (waits for their end events).
  Totals totals();

 private:
  // Resolves the pair (waiting when `wait`); false when it has not completed yet.
  bool resolve(const Mark& m, bool wait);

  std::mutex mu_;
  std::deque<Mark> pending_;
  Totals done_;
};

}  // namespace runtime
}  // namespace torchfuse
