// BackgroundBuilds: the worker thread that builds specializations for CompileOptions::async_compile
// while their first calls run eager. One per compiled module, started by its first job.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

namespace torchfuse {
namespace runtime {

class BackgroundBuilds {
 public:
  using Job = std::function<void()>;
  using OnFailure = std::function<void(std::exception_ptr)>;

  BackgroundBuilds();
  BackgroundBuilds(const BackgroundBuilds&) = delete;
  BackgroundBuilds& operator=(const BackgroundBuilds&) = delete;
  // Waits for the job running on the worker, if any (it may be in NVRTC for a while); jobs not
  // started yet are dropped, never run.
  ~BackgroundBuilds();

  // Queues `job` for the worker, which runs jobs one at a time in the order they came. The job
  // runs with the calling thread's thread-local state (grad mode, inference mode, dispatch keys:
  // at::ThreadLocalState). For a CUDA `device` it runs with that device current, on a stream of
  // its own that first waits for the work the calling thread has queued on its current stream of
  // the device (which produced the inputs the job reads); the worker synchronizes that stream after
  // the job, before the job and the tensors it holds are destroyed. When the job throws, or the
  // worker cannot set up the device and stream for it, `on_failure` gets the exception (on the
  // worker); nothing escapes the worker (what on_failure throws is logged). Throws when the worker
  // thread cannot start or the CUDA event cannot be recorded (nothing is queued then).
  void submit(c10::Device device, Job job, OnFailure on_failure);

 private:
  struct Queued;
  void run();
  static void run_one(Queued& queued);

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Queued>> queue_;
  bool stopping_ = false;
  std::thread worker_;  // started by the first submit
};

// The inputs a job may keep: the same tensors (their refcounts keep them alive; the fused path
// never runs a graph that writes its inputs), in lists and dicts of its own, since a caller may
// change its own list after the call returns. (Tuples are immutable and kept as they are.)
std::vector<c10::IValue> inputs_for_worker(const std::vector<c10::IValue>& inputs);

}  // namespace runtime
}  // namespace torchfuse
