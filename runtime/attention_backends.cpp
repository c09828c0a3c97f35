#include "runtime/attention_backends.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>

#include "runtime/attention_kernel.h"
#include "runtime/driver_api.h"
#include "runtime/gemm_autotune.h"
#include "runtime/graph_capture.h"
#include "runtime/launch_util.h"
#include "src/ir.h"
#include "src/error.h"
#include "src/logging.h"

namespace torchfuse {
namespace runtime {
namespace {

// The timings in the order made, and (below) the choice per key; g_mu guards both.
std::mutex g_mu;
std::vector<AttentionBackendChoice>* g_log = new std::vector<AttentionBackendChoice>();  // used until exit

#if TORCHFUSE_HAVE_SDPA
// The backends timed (what g_chosen keeps): ATen's pick, flash attention, torchfuse's kernel with
// its rows schedule and with its keys schedule.
constexpr int kAten = 0, kFlash = 1, kKernel = 2, kKernelKeys = 3;

// sdp::SDPBackend's values (ATen/native/transformers/sdp_utils_cpp.h), as _fused_sdp_choice returns them.
const char* sdp_backend_name(int64_t b) {
  switch (b) {
    case 0: return "math";
    case 1: return "flash";
    case 2: return "efficient";
    case 3: return "cudnn";
    default: return "other";
  }
}

std::string describe(const at::Tensor& q, const at::Tensor& k, const c10::optional<at::Tensor>& mask, bool is_causal,
                     bool enable_gqa) {
  std::ostringstream os;
  os << ir::dtype_short_name(q.scalar_type()) << " q " << q.sizes() << " k " << k.sizes();
  if (mask) os << ", mask " << mask->sizes();
  if (is_causal) os << ", causal";
  if (enable_gqa) os << ", grouped heads";
  return os.str();
}

// What the kernels' speed may depend on: device, dtype, causality, and each operand's (the
// mask's too) sizes and strides.
std::vector<int64_t> key_of(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const c10::optional<at::Tensor>& mask, bool is_causal, bool enable_gqa) {
  std::vector<int64_t> key{q.device().index(), static_cast<int64_t>(q.scalar_type()), is_causal ? 1 : 0,
                           enable_gqa ? 1 : 0};
  const at::Tensor none;
  for (const at::Tensor* t : {&q, &k, &v, mask ? &*mask : &none}) {
    if (!t->defined()) break;
    key.push_back(-1 - t->dim());  // a separator no size takes
    key.insert(key.end(), t->sizes().begin(), t->sizes().end());
    key.insert(key.end(), t->strides().begin(), t->strides().end());
  }
  return key;
}

at::Tensor aten_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const c10::optional<at::Tensor>& mask, double scale, bool is_causal, bool enable_gqa) {
#if TORCHFUSE_HAVE_SDPA_GQA
  if (enable_gqa) return at::scaled_dot_product_attention(q, k, v, mask, 0.0, is_causal, scale, /*enable_gqa=*/true);
#else
  TORCHFUSE_INTERNAL_ASSERT(!enable_gqa, "grouped heads without scaled_dot_product_attention's enable_gqa (LibTorch < 2.5)");
#endif
  return at::scaled_dot_product_attention(q, k, v, mask, 0.0, is_causal, scale);
}

// ATen's pick for the call (sdp::SDPBackend's value).
int64_t aten_pick(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const c10::optional<at::Tensor>& mask,
                  double scale, bool is_causal, bool enable_gqa) {
#if TORCHFUSE_HAVE_SDPA_GQA
  return at::_fused_sdp_choice(q, k, v, mask, 0.0, is_causal, scale, enable_gqa);
#else
  (void)enable_gqa;
  return at::_fused_sdp_choice(q, k, v, mask, 0.0, is_causal, scale);
#endif
}

at::Tensor flash_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
                           bool is_causal) {
  return std::get<0>(at::_scaled_dot_product_flash_attention(q, k, v, 0.0, is_causal, false, scale));
}

// Whether two backends' results of one call agree within the rounding of the call's dtype.
bool agree(const at::Tensor& a, const at::Tensor& b) {
  const double tol = a.scalar_type() == at::kBFloat16 ? 2e-2 : 1e-2;
  return a.sizes() == b.sizes() && at::allclose(a.to(at::kFloat), b.to(at::kFloat), tol, tol, /*equal_nan=*/true);
}

// Keys settled (timed, or found untimeable), and the backend kept; shared by threads: a shape is
// timed once per process.
std::map<std::vector<int64_t>, int>* g_chosen = new std::map<std::vector<int64_t>, int>();  // used until exit

void log_choice(const AttentionBackendChoice& r) {
  if (!LogSwitches::from_env_and("").fusion) return;
  std::ostringstream os;
  os << "attention " << r.call << ": " << r.backends[static_cast<size_t>(r.chosen)];
  if (r.why_not.empty()) {
    os << " (";
    for (size_t i = 0; i < r.us.size(); ++i) os << (i ? ", " : "") << r.backends[i] << " " << r.us[i] << " us";
    os << ")";
  } else {
    os << " (" << r.why_not << ")";
  }
  log_info(os.str());
}

// Calls of one backend captured back to back into one CUDA graph and timed as one replay: what a
// model's graph runs. Queued on a stream instead, cuDNN's call timed as fast as flash
// attention's at 128 tokens (8.4 against 8.6 us), while in a graph of 12 layers flash attention's
// was 1.2 us a layer faster (docs/performance.md): the late start of cuDNN's kernel after its
// memset is a graph's.
constexpr int kCallsPerGraph = 8;

// The backends that may run a call, ATen's pick first.
struct Candidates {
  std::vector<int> ids;
  std::vector<std::string> names;
  std::string why_not;  // why flash attention, able to run the call, is not a candidate ("" otherwise)
};

Candidates candidates_for(int64_t pick, bool flash_ok, bool kernel_ok, KeySplit key_split) {
  Candidates c;
  c.ids = {kAten};
  c.names = {std::string("aten (") + sdp_backend_name(pick) + ")"};
  if (flash_ok && pick != 1) {
    c.ids.push_back(kFlash);
    c.names.push_back("flash");
  } else if (flash_ok) {
    c.why_not = "ATen picks flash attention itself";
  }
  if (kernel_ok) {
    c.ids.push_back(kKernel);
    c.names.push_back("torchfuse");
  }
  if (kernel_ok && key_split.ways > 1) {
    c.ids.push_back(kKernelKeys);
    c.names.push_back("torchfuse (keys split " + std::to_string(key_split.ways) + ", blocks of " +
                      std::to_string(key_split.key_block) + ")");
  }
  return c;
}

// Times ATen's pick against flash attention and torchfuse's kernel (its keys schedule too where
// attention_key_split_worth_timing), where each can run the call, on this call's operands (the
// caller holds g_mu). r.chosen indexes r.backends; *chosen_id is the backend kept.
AttentionBackendChoice time_backends(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const c10::optional<at::Tensor>& mask, double scale, bool is_causal,
                                     bool enable_gqa, bool flash_ok, bool kernel_ok, int* chosen_id) {
  AttentionBackendChoice r;
  r.call = describe(q, k, mask, is_causal, enable_gqa);
  *chosen_id = kAten;
  const int64_t pick = aten_pick(q, k, v, mask, scale, is_causal, enable_gqa);
  const bool keys_ok =
      kernel_ok && attention_key_split_worth_timing(q, k, device_info(q.device().index()).sm_count);
  const Candidates c =
      candidates_for(pick, flash_ok, kernel_ok, keys_ok ? attention_key_split(q.size(3), k.size(2)) : KeySplit{});
  r.backends = c.names;
  if (c.ids.size() == 1) {
    r.why_not = c.why_not;
    return r;
  }
  r.why_not = graph_capture_unavailable();
  if (!r.why_not.empty()) return r;
  const size_t n = c.ids.size();
  std::vector<at::Tensor> outs(n);
  auto run = [&](size_t i) {
    switch (c.ids[i]) {
      case kFlash: outs[i] = flash_attention(q, k, v, scale, is_causal); break;
      case kKernel: outs[i] = attention_kernel(q, k, v, mask, scale, is_causal, enable_gqa); break;
      case kKernelKeys:
        outs[i] = attention_kernel(q, k, v, mask, scale, is_causal, enable_gqa, AttentionSchedule::kKeys);
        break;
      default: outs[i] = aten_attention(q, k, v, mask, scale, is_causal, enable_gqa); break;
    }
  };
  CandidateTimes t;
  try {
    // Each backend once outside a capture first (cuDNN builds its plan, kernels load), then its graph.
    const OwnedStream capture_stream = new_capture_stream(q.device());
    std::vector<std::unique_ptr<CapturedGraph>> graphs(n);
    for (size_t i = 0; i < n; ++i) {
      try {
        run(i);
        graphs[i] = capture_graph(capture_stream.stream, [&] {
          for (int call = 0; call < kCallsPerGraph; ++call) run(i);
        });
      } catch (const std::exception& e) {
        if (i == 0) throw;  // nothing to compare with
        outs[i] = at::Tensor();
        r.why_not += (r.why_not.empty() ? "" : "; ") + r.backends[i] + " declined: " + e.what();
      }
    }
    t = time_candidates(
        static_cast<int>(n),
        [&](int i) {
          if (!graphs[static_cast<size_t>(i)]) return false;
          graphs[static_cast<size_t>(i)]->replay();
          return true;
        },
        q.device().index(), current_stream(q.device()));
  } catch (const std::exception& e) {  // a driver failure, ATen's call not capturable, no current stream
    t.why_not = e.what();
  }
  for (double& us : t.us)
    if (us > 0) us /= kCallsPerGraph;
  r.us = t.us;
  r.held = t.held;
  if (!t.why_not.empty()) r.why_not = t.why_not;
  r.chosen = std::max(t.chosen, 0);
  const size_t kept = static_cast<size_t>(r.chosen);
  if (kept != 0 && !agree(outs[0], outs[kept])) {
    r.why_not = r.backends[kept] + "'s result differs from ATen's beyond the dtype's rounding";
    log_warn("torchfuse: attention " + r.call + ": " + r.why_not + "; ATen's pick kept");
    r.chosen = 0;
  }
  *chosen_id = c.ids[static_cast<size_t>(r.chosen)];
  return r;
}
#endif

}  // namespace

std::string flash_unusable(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const c10::optional<at::Tensor>& mask, bool is_causal, bool enable_gqa) {
  if (q.scalar_type() != at::kHalf && q.scalar_type() != at::kBFloat16) return "not 16-bit";
  if (mask) return "a mask";
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return "not rank 4";
  const int64_t d = q.size(3);
  if (k.size(3) != d || v.size(3) != d) return "head dims differ";
  if (d % 8 != 0 || d > 256) return "head dim " + std::to_string(d) + " (flash takes multiples of 8 up to 256)";
  const bool heads_fit = enable_gqa ? k.size(1) > 0 && q.size(1) % k.size(1) == 0 : k.size(1) == q.size(1);
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) || v.size(1) != k.size(1) || !heads_fit)
    return "key or value with another batch or head count";
  if (q.size(2) == 0 || k.size(2) == 0 || k.size(2) != v.size(2)) return "empty or unequal sequences";
  if (is_causal && q.size(2) != k.size(2)) return "causal with unequal sequence lengths";
  for (const at::Tensor* t : {&q, &k, &v}) {
    if (t->stride(3) != 1) return "a head dim not contiguous";
    // Flash attention's kernel loads 16 bytes at a time from each row.
    for (int64_t i = 0; i < 3; ++i)
      if (t->size(i) > 1 && t->stride(i) % 8 != 0) return "a stride not a multiple of 8 elements";
    if (reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 != 0) return "data not 16-byte aligned";
  }
  if (!q.is_cuda() || !k.is_cuda() || !v.is_cuda()) return "not CUDA tensors";
  return "";
}

at::Tensor timed_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const c10::optional<at::Tensor>& mask, double scale, bool is_causal, bool enable_gqa) {
#if TORCHFUSE_HAVE_SDPA
  const bool flash_ok = flash_unusable(q, k, v, mask, is_causal, enable_gqa).empty();
  const bool kernel_ok = attention_kernel_unusable(q, k, v, mask, enable_gqa).empty();
  if (!flash_ok && !kernel_ok) return aten_attention(q, k, v, mask, scale, is_causal, enable_gqa);
  const std::vector<int64_t> key = key_of(q, k, v, mask, is_causal, enable_gqa);
  int chosen = kAten;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_chosen->find(key);
    if (it == g_chosen->end() && !current_stream_capturing(q.device())) {
      int id = kAten;
      AttentionBackendChoice r = time_backends(q, k, v, mask, scale, is_causal, enable_gqa, flash_ok, kernel_ok, &id);
      log_choice(r);
      it = g_chosen->emplace(key, id).first;
      g_log->push_back(std::move(r));
    }
    if (it != g_chosen->end()) chosen = it->second;
  }
  if (chosen == kFlash) return flash_attention(q, k, v, scale, is_causal);
  if (chosen == kKernel) return attention_kernel(q, k, v, mask, scale, is_causal, enable_gqa);
  if (chosen == kKernelKeys)
    return attention_kernel(q, k, v, mask, scale, is_causal, enable_gqa, AttentionSchedule::kKeys);
  return aten_attention(q, k, v, mask, scale, is_causal, enable_gqa);
#else
  (void)q, (void)k, (void)v, (void)mask, (void)scale, (void)is_causal, (void)enable_gqa;
  TORCHFUSE_INTERNAL_ASSERT(false, "timed attention without scaled_dot_product_attention (LibTorch < 2.1)");
  return {};
#endif
}

std::vector<AttentionBackendChoice> attention_backend_choices() {
  std::lock_guard<std::mutex> lock(g_mu);
  return *g_log;
}

}  // namespace runtime
}  // namespace torchfuse
