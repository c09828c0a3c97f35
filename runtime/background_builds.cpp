#include "runtime/background_builds.h"

#include <optional>
#include <utility>

#include <ATen/ThreadLocalState.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "src/logging.h"

namespace torchfuse {
namespace runtime {

struct BackgroundBuilds::Queued {
  c10::Device device;
  Job job;
  OnFailure on_failure;
  at::ThreadLocalState thread_state;  // the submitting thread's, taken at submit
  // CUDA: recorded on the submitting thread's current stream at submit; the worker's stream
  // waits for it. Why an event and not a synchronize: the caller goes on at once (it runs the
  // call eager on its stream), and the worker's reads are still ordered after the kernels that
  // produced the inputs. The worker's stream is synchronized when the job ends, so the inputs'
  // memory cannot return to the caching allocator (when the job drops the last reference) while
  // the worker's kernels still read it.
  std::optional<c10::Event> inputs_ready;

  Queued(c10::Device d, Job j, OnFailure f) : device(d), job(std::move(j)), on_failure(std::move(f)) {}
};

namespace {

// Runs `fn`; an exception is logged as "torchfuse: <what> failed: ..." and goes no further.
template <typename Fn>
void logging_errors(const char* what, Fn&& fn) noexcept {
  try {
    fn();
  } catch (const std::exception& e) {
    log_warn(std::string("torchfuse: ") + what + " failed: " + e.what());
  } catch (...) {
    log_warn(std::string("torchfuse: ") + what + " failed (not a std::exception)");
  }
}

}  // namespace

// On the worker, with the submitting thread's thread-local state.
void BackgroundBuilds::run_one(Queued& q) {
  if (!q.device.is_cuda()) {
    q.job();
    return;
  }
  const c10::DeviceGuard on_device(q.device);
  const c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
  const c10::Stream stream = cuda.getStreamFromGlobalPool(q.device, /*isHighPriority=*/false);
  const c10::StreamGuard on_stream(stream);
  q.inputs_ready->block(stream);
  // Synchronized however the job ends, before the job and the input tensors it holds go.
  struct Sync {
    const c10::Stream& stream;
    ~Sync() { logging_errors("synchronizing a background build's stream", [&] { stream.synchronize(); }); }
  } sync{stream};
  q.job();
}

BackgroundBuilds::BackgroundBuilds() = default;

BackgroundBuilds::~BackgroundBuilds() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  // queue_ (jobs never started) is destroyed with this object, on the destroying thread.
}

void BackgroundBuilds::submit(c10::Device device, Job job, OnFailure on_failure) {
  auto queued = std::make_unique<Queued>(device, std::move(job), std::move(on_failure));
  if (device.is_cuda()) {
    const c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
    queued->inputs_ready.emplace(c10::DeviceType::CUDA);
    queued->inputs_ready->record(cuda.getStream(device));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
  queue_.push_back(std::move(queued));
  wake_.notify_one();
}

void BackgroundBuilds::run() {
  for (;;) {
    std::unique_ptr<Queued> next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      const at::ThreadLocalStateGuard state(next->thread_state);
      run_one(*next);
    } catch (...) {
      const std::exception_ptr error = std::current_exception();
      logging_errors("a background build's failure handler", [&] { next->on_failure(error); });
    }
    // The job, its inputs and its event go here, on the worker, after its stream finished.
    logging_errors("releasing a background build", [&] { next.reset(); });
  }
}

namespace {

c10::IValue own_containers(const c10::IValue& v) {
  if (v.isList()) {
    const c10::List<c10::IValue> list = v.toList();
    c10::impl::GenericList copy(list.elementType());
    copy.reserve(list.size());
    for (const c10::IValue& e : list) copy.push_back(own_containers(e));
    return copy;
  }
  if (v.isGenericDict()) {
    const c10::impl::GenericDict dict = v.toGenericDict();
    c10::impl::GenericDict copy(dict.keyType(), dict.valueType());
    for (const auto& entry : dict) copy.insert(entry.key(), own_containers(entry.value()));
    return copy;
  }
  return v;
}

}  // namespace

std::vector<c10::IValue> inputs_for_worker(const std::vector<c10::IValue>& inputs) {
  std::vector<c10::IValue> held;
  held.reserve(inputs.size());
  for (const c10::IValue& v : inputs) held.push_back(own_containers(v));
  return held;
}

}  // namespace runtime
}  // namespace torchfuse
