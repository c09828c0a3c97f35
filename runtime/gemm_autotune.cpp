#include "runtime/gemm_autotune.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include <ATen/ATen.h>

#include "runtime/driver_api.h"
#include "runtime/launch_util.h"
#include "src/error.h"

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

// Holds `stream` (its later work waits) until release() or destruction, which never throw.
class StreamHold {
 public:
  StreamHold(const DriverApi& api, HoldState& s, CUstream stream) : api_(api), s_(s) {
    value_ = s_.last + 1;
    const CUresult r = api_.cuStreamWaitValue32(stream, flag(), value_, CU_STREAM_WAIT_VALUE_GEQ);
    check_cu(r, "cuStreamWaitValue32");
    s_.last = value_;
    armed_ = true;
  }
  ~StreamHold() { release(); }
  StreamHold(const StreamHold&) = delete;
  StreamHold& operator=(const StreamHold&) = delete;
  void release() {
    if (!armed_) return;
    armed_ = false;
    // If this failed the held stream would never run again: nothing else can release it.
    const CUresult r = api_.cuMemsetD32Async(flag(), value_, 1, s_.releaser);
    TORCHFUSE_INTERNAL_ASSERT(r == CUDA_SUCCESS, "releasing a held CUDA stream failed: ",
                              cu_error_message(r, "cuMemsetD32Async"));
  }

 private:
  CUdeviceptr flag() const { return reinterpret_cast<CUdeviceptr>(s_.flag.data_ptr()); }
  const DriverApi& api_;
  HoldState& s_;
  uint32_t value_ = 0;
  bool armed_ = false;
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
  size_t size() const { return events_.size(); }

 private:
  const DriverApi& api_;
  std::vector<CUevent> events_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The fastest candidate, or 0 when it does not beat candidate 0 by the margin; -1 when none ran.
int choose(const std::vector<double>& us) {
  int best = -1;
  for (size_t i = 0; i < us.size(); ++i)
    if (us[i] >= 0 && (best < 0 || us[i] < us[best])) best = static_cast<int>(i);
  if (best > 0 && us[0] >= 0 && us[best] > us[0] * (1.0 - kKeepFirstMargin)) return 0;
  return best;
}

}  // namespace

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
  make_context_current(device);
  // Per call: a start and an end event, for each round and candidate; the last one is waited for.
  const size_t n = static_cast<size_t>(count) * static_cast<size_t>(repeats);
  Events events(*api, 2 * n + 1);
  const CUevent all_done = events[2 * n];
  const std::string unheld = hold_unavailable(*api);
  HoldState* state = unheld.empty() ? hold_state(*api, device, stream, all_done) : nullptr;
  std::vector<bool> ran(static_cast<size_t>(count), false);
  {
    std::unique_ptr<StreamHold> hold;
    if (state) hold = std::make_unique<StreamHold>(*api, *state, stream);
    out.held = hold != nullptr;
    for (int i = 0; i < count; ++i) ran[i] = queue(i);  // warm-up; also finds who declines
    for (int r = 0; r < repeats; ++r) {
      for (int i = 0; i < count; ++i) {
        if (!ran[i]) continue;
        const size_t k = 2 * (static_cast<size_t>(r) * count + i);
        check_cu(api->cuEventRecord(events[k], stream), "cuEventRecord");
        ran[i] = queue(i);
        check_cu(api->cuEventRecord(events[k + 1], stream), "cuEventRecord");
      }
    }
    check_cu(api->cuEventRecord(all_done, stream), "cuEventRecord");
  }  // the hold is released here, also when a queue() threw
  check_cu(api->cuEventSynchronize(all_done), "cuEventSynchronize");
  for (int i = 0; i < count; ++i) {
    if (!ran[i]) continue;
    std::vector<double> us;
    for (int r = 0; r < repeats; ++r) {
      const size_t k = 2 * (static_cast<size_t>(r) * count + i);
      float ms = 0;
      check_cu(api->cuEventElapsedTime(&ms, events[k], events[k + 1]), "cuEventElapsedTime");
      us.push_back(1000.0 * ms);
    }
    out.us[i] = median(us);
  }
  out.chosen = choose(out.us);
  if (out.chosen < 0) out.why_not = "every candidate declined to run";
  return out;
}

}  // namespace runtime
}  // namespace torchfuse
