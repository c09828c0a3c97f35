#include "runtime/gemm_autotune.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <ATen/ATen.h>

#include "runtime/driver_api.h"
#include "runtime/launch_util.h"
#include "src/error.h"
#include "src/logging.h"

namespace torchfuse {
namespace runtime {
namespace {

// What holding a stream needs on one device: a 32-bit word the held stream waits on, and a
// stream of torchfuse's own that writes it. Made once per device, kept for the process.
struct HoldState {
  at::Tensor flag;  // device memory, never freed
  CUstream releaser = nullptr;
  uint32_t last = 0;  // the value the latest hold waited for; each hold waits for a new one
};

// Why the stream cannot be held ("" when it can). With CUDA_LAUNCH_BLOCKING every launch waits
// for the GPU, which would wait for the hold: the calls are timed unheld instead.
std::string hold_unavailable(const DriverApi& api) {
  if (!api.cuStreamWaitValue32 || !api.cuMemsetD32Async || !api.cuStreamCreate)
    return "the driver lacks stream memory operations";
  const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
  if (blocking && std::strcmp(blocking, "0") != 0 && blocking[0] != '\0') return "CUDA_LAUNCH_BLOCKING is set";
  return "";
}

// The device's hold state, made on first use (its flag zeroed and the zero waited for, so no
// release can be overwritten by it). Null where the stream cannot be held.
HoldState* hold_state(const DriverApi& api, int device, CUstream stream, const CUevent done) {
  static std::mutex mu;
  static auto* states = new std::map<int, HoldState>();  // never destroyed: used until exit
  std::lock_guard<std::mutex> lock(mu);
  auto it = states->find(device);
  if (it != states->end()) return &it->second;
  HoldState s;
  s.flag = at::empty({1}, at::TensorOptions().dtype(at::kInt).device(at::kCUDA, device));
  const CUdeviceptr flag = reinterpret_cast<CUdeviceptr>(s.flag.data_ptr());
  check_cu(api.cuMemsetD32Async(flag, 0, 1, stream), "cuMemsetD32Async");
  check_cu(api.cuEventRecord(done, stream), "cuEventRecord");
  check_cu(api.cuEventSynchronize(done), "cuEventSynchronize");
  // Non-blocking: the release must not wait for the legacy default stream it releases.
  check_cu(api.cuStreamCreate(&s.releaser, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return &states->emplace(device, std::move(s)).first->second;
}

// A buffer of twice the device's L2 (at least 64 MiB), written before each timed call so that the
// call reads its operands from memory, as a model's GEMM reads weights that its other layers
// pushed out of L2 (timed with a warm L2, candidates that are faster on cached weights won and
// ran slower in the models). Made once per device, kept for the process; null without memsets.
const at::Tensor* l2_scratch(const DriverApi& api, int device) {
  if (!api.cuMemsetD32Async) return nullptr;
  static std::mutex mu;
  static auto* buffers = new std::map<int, at::Tensor>();  // never destroyed: used until exit
  std::lock_guard<std::mutex> lock(mu);
  auto it = buffers->find(device);
  if (it != buffers->end()) return &it->second;
  const int64_t bytes = std::max<int64_t>(int64_t(2) * device_info(device).l2_bytes, int64_t(64) << 20);
  at::Tensor t = at::empty({bytes / 4}, at::TensorOptions().dtype(at::kInt).device(at::kCUDA, device));
  return &buffers->emplace(device, std::move(t)).first->second;
}

// How long a hold may last before a watchdog releases it. Queuing a few dozen GEMMs takes well
// under a millisecond; a hold still armed after this means some queued call waits for the GPU
// (which waits for the hold): the watchdog's release lets both go on, and the times are marked
// as not held.
constexpr auto kHoldDeadline = std::chrono::milliseconds(500);

// Holds `stream` (its later work waits) until release() or destruction, which never throw, or
// until the watchdog's deadline.
class StreamHold {
 public:
  StreamHold(const DriverApi& api, HoldState& s, CUstream stream, int device) : api_(api), s_(s), device_(device) {
    value_ = s_.last + 1;
    const CUresult r = api_.cuStreamWaitValue32(stream, flag(), value_, CU_STREAM_WAIT_VALUE_GEQ);
    check_cu(r, "cuStreamWaitValue32");
    s_.last = value_;
    armed_ = true;
    watchdog_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, kHoldDeadline, [this] { return !armed_; })) return;
      expired_ = true;
      try {
        make_context_current(device_);
      } catch (const std::exception& e) {
        log_warn(std::string("torchfuse: timing GEMM candidates: ") + e.what());
      }
      release_locked();
    });
  }
  ~StreamHold() {
    release();
    watchdog_.join();
  }
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    release_locked();
    cv_.notify_all();
  }
  // Whether the watchdog released the hold (then queued calls waited for the GPU).
  bool expired() {
    std::lock_guard<std::mutex> lock(mu_);
    return expired_;
  }

 private:
  void release_locked() {
    if (!armed_) return;
    armed_ = false;
    // Never throws (destructor, watchdog thread). If it failed the held stream would not run
    // again: say so loudly, it is a torchfuse bug.
    const CUresult r = api_.cuMemsetD32Async(flag(), value_, 1, s_.releaser);
    if (r != CUDA_SUCCESS)
      log_warn("torchfuse bug: releasing a held CUDA stream failed: " + cu_error_message(r, "cuMemsetD32Async"));
  }
  CUdeviceptr flag() const { return reinterpret_cast<CUdeviceptr>(s_.flag.data_ptr()); }
  const DriverApi& api_;
  HoldState& s_;
  const int device_;
  uint32_t value_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
  bool expired_ = false;
  std::thread watchdog_;
};

// Events made for one timing and destroyed with it.
class Events {
 public:
  Events(const DriverApi& api, size_t n) : api_(api), events_(n, nullptr) {
    for (CUevent& e : events_) check_cu(api_.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  }
  ~Events() {
    for (CUevent e : events_)
      if (e) api_.cuEventDestroy(e);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  CUevent operator[](size_t i) const { return events_[i]; }

 private:
  const DriverApi& api_;
  std::vector<CUevent> events_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int choose_candidate(const std::vector<double>& us) {
  int best = -1;
  for (size_t i = 0; i < us.size(); ++i)
    if (us[i] >= 0 && (best < 0 || us[i] < us[best])) best = static_cast<int>(i);
  if (best > 0 && us[0] >= 0 && us[best] > us[0] * (1.0 - kKeepFirstMargin)) return 0;
  return best;
}

CandidateTimes time_candidates(int count, const std::function<bool(int)>& queue, int device, CUstream stream,
                               int repeats) {
  CandidateTimes out;
  out.us.assign(static_cast<size_t>(std::max(count, 0)), -1.0);
  std::string why;
  const DriverApi* api = driver_api(&why);
  if (!api || !api->has_events()) {
    out.why_not = api ? "the driver lacks the event API" : why;
    return out;
  }
  if (count <= 0 || repeats <= 0) {
    out.why_not = "no candidates";
    return out;
  }
  // One timing at a time: a device's hold state (its flag's next value) and L2 buffer are shared.
  static std::mutex timing_mu;
  std::lock_guard<std::mutex> timing_lock(timing_mu);
  make_context_current(device);
  // Per call: a start and an end event, for each round and candidate; the last one is waited for.
  const size_t n = static_cast<size_t>(count) * static_cast<size_t>(repeats);
  Events events(*api, 2 * n + 1);
  auto start_event = [count](int r, int i) { return 2 * (static_cast<size_t>(r) * count + i); };
  const CUevent all_done = events[2 * n];
  const std::string unheld = hold_unavailable(*api);
  HoldState* state = unheld.empty() ? hold_state(*api, device, stream, all_done) : nullptr;
  const at::Tensor* scratch = l2_scratch(*api, device);
  std::vector<bool> ran(static_cast<size_t>(count), false);
  // Warm-up, unheld, waited for: a kernel's first launch loads its module (CUDA's lazy loading),
  // which waits for the GPU, and so would wait for the hold forever. Also finds who declines.
  for (int i = 0; i < count; ++i) ran[i] = queue(i);
  check_cu(api->cuEventRecord(all_done, stream), "cuEventRecord");
  check_cu(api->cuEventSynchronize(all_done), "cuEventSynchronize");
  {
    std::unique_ptr<StreamHold> hold;
    if (state) hold = std::make_unique<StreamHold>(*api, *state, stream, device);
    for (int r = 0; r < repeats; ++r) {
      for (int i = 0; i < count; ++i) {
        if (!ran[i]) continue;
        const size_t k = start_event(r, i);
        if (scratch) {
          check_cu(api->cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(scratch->data_ptr()), static_cast<unsigned>(k),
                                         static_cast<size_t>(scratch->numel()), stream),
                   "cuMemsetD32Async");
          out.l2_flushed = true;
        }
        check_cu(api->cuEventRecord(events[k], stream), "cuEventRecord");
        ran[i] = queue(i);
        check_cu(api->cuEventRecord(events[k + 1], stream), "cuEventRecord");
      }
    }
    check_cu(api->cuEventRecord(all_done, stream), "cuEventRecord");
    if (hold) {
      hold->release();
      out.held = !hold->expired();
    }
  }  // the hold is released here too when a queue() threw
  check_cu(api->cuEventSynchronize(all_done), "cuEventSynchronize");
  for (int i = 0; i < count; ++i) {
    if (!ran[i]) continue;
    std::vector<double> us;
    for (int r = 0; r < repeats; ++r) {
      const size_t k = start_event(r, i);
      float ms = 0;
      check_cu(api->cuEventElapsedTime(&ms, events[k], events[k + 1]), "cuEventElapsedTime");
      us.push_back(1000.0 * ms);
    }
    out.us[i] = median(us);
  }
  out.chosen = choose_candidate(out.us);
  if (out.chosen < 0) out.why_not = "every candidate declined to run";
  return out;
}

}  // namespace runtime
}  // namespace torchfuse
