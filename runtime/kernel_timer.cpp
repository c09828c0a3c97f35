#include "runtime/kernel_timer.h"

#include "runtime/driver_api.h"
#include "runtime/launch_util.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {
namespace {

using Mark = KernelTimer::Mark;

// Pairs kept before completed ones are swept (a module called often but never asked for stats).
constexpr size_t kSweepAbove = 256;

const DriverApi& event_api() {
  std::string why;
  const DriverApi* api = driver_api(&why);
  TORCHFUSE_CHECK(api != nullptr, "torchfuse: profile_kernels needs the CUDA driver: ", why);
  TORCHFUSE_CHECK(api->has_events(), "torchfuse: profile_kernels: this CUDA driver lacks the event API");
  return *api;
}

// Never throws: also used on error paths and in the destructor.
void destroy(const Mark& m) {
  const DriverApi* api = driver_api();
  if (!api || !api->cuEventDestroy) return;
  if (m.start) api->cuEventDestroy(m.start);
  if (m.end) api->cuEventDestroy(m.end);
}

}  // namespace

KernelTimer::~KernelTimer() {
  // The events belong to PyTorch's primary contexts, which outlive every compiled module.
  for (const Mark& m : pending_) destroy(m);
}

KernelTimer::Mark KernelTimer::start(const c10::Device& device) {
  const DriverApi& api = event_api();
  Mark m;
  m.device = device.index();
  m.stream = current_stream(device);
  make_context_current(m.device);
  check_cu(api.cuEventCreate(&m.start, CU_EVENT_DEFAULT), "cuEventCreate");
  const CUresult r = api.cuEventCreate(&m.end, CU_EVENT_DEFAULT);
  if (r != CUDA_SUCCESS) {
    destroy(m);
    check_cu(r, "cuEventCreate");
  }
  check_cu(api.cuEventRecord(m.start, m.stream), "cuEventRecord");
  return m;
}

void KernelTimer::stop(Mark m) {
  const DriverApi& api = event_api();
  make_context_current(m.device);
  check_cu(api.cuEventRecord(m.end, m.stream), "cuEventRecord");
  std::lock_guard<std::mutex> lock(mu_);
  pending_.push_back(m);
  if (pending_.size() <= kSweepAbove) return;
  // Oldest first: stop at the first pair still running.
  while (!pending_.empty() && resolve(pending_.front(), /*wait=*/false)) pending_.pop_front();
}

void KernelTimer::discard(Mark m) {
  make_context_current(m.device);
  destroy(m);
}

bool KernelTimer::resolve(const Mark& m, bool wait) {
  const DriverApi& api = event_api();
  make_context_current(m.device);
  const CUresult r = wait ? api.cuEventSynchronize(m.end) : api.cuEventQuery(m.end);
  if (r == CUDA_ERROR_NOT_READY) return false;
  // Timing is diagnostic: a pair the driver cannot time (its context failed) is dropped.
  float ms = 0;
  if (r == CUDA_SUCCESS && api.cuEventElapsedTime(&ms, m.start, m.end) == CUDA_SUCCESS) {
    ++done_.calls;
    done_.ms += ms;
  }
  destroy(m);
  return true;
}

KernelTimer::Totals KernelTimer::totals() {
  std::lock_guard<std::mutex> lock(mu_);
  while (!pending_.empty()) {
    resolve(pending_.front(), /*wait=*/true);
    pending_.pop_front();
  }
  return done_;
}

}  // namespace runtime
}  // namespace torchfuse
