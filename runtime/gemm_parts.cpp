#include "runtime/gemm_parts.h"

#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include <torch/library.h>

#include "runtime/gemm_autotune.h"
#include "runtime/gemm_epilogue_op.h"
#include "runtime/graph_capture.h"
#include "runtime/launch_util.h"
#include "src/error.h"
#include "src/logging.h"

namespace torchfuse {
namespace runtime {
namespace {

void check_parts(const at::Tensor& weight, const std::vector<int64_t>& parts) {
  TORCHFUSE_CHECK(!parts.empty(), "torchfuse::gemm_epilogue: parts must name at least one width");
  int64_t sum = 0;
  for (int64_t p : parts) {
    TORCHFUSE_CHECK(p > 0, "torchfuse::gemm_epilogue: parts must be positive widths, got ", c10::IntArrayRef(parts));
    sum += p;
  }
  TORCHFUSE_CHECK(sum == weight.size(0), "torchfuse::gemm_epilogue: parts ", c10::IntArrayRef(parts),
                  " must add up to weight's dim 0 (", weight.size(0), " output features), not ", sum);
}

// One call's operands as both forms read them: 2-D input and residual, the [M, N] output.
struct PartsCall {
  at::Tensor x, residual, out;
  const at::Tensor* weight = nullptr;
  const at::Tensor* bias = nullptr;
  GemmActivation activation = GemmActivation::none;
  int candidates = 1;
  const std::vector<int64_t>* parts = nullptr;
  // Whether the latest form run had ATen's GEMM write some of `out` (float32 calls whose timing
  // kept it: runtime/gemm_epilogue_op.h).
  mutable bool aten_ran = false;

  bool merged(std::string* why) const {
    return lt_matmul_into(x, *weight, bias, residual.defined() ? &residual : nullptr, activation, candidates, out, why,
                          &aten_ran);
  }
  // Each part into its columns of `out`; false (why) at the first part cuBLASLt declines.
  bool apart(std::string* why) const {
    aten_ran = false;
    int64_t start = 0;
    for (int64_t width : *parts) {
      const at::Tensor w = weight->narrow(0, start, width);
      at::Tensor b, r;
      if (bias) b = bias->narrow(0, start, width);
      if (residual.defined()) r = residual.narrow(1, start, width);
      bool part_aten = false;
      if (!lt_matmul_into(x, w, bias ? &b : nullptr, residual.defined() ? &r : nullptr, activation, candidates,
                          out.narrow(1, start, width), why, &part_aten))
        return false;
      aten_ran = aten_ran || part_aten;
      start += width;
    }
    return true;
  }
};

// "BFloat16 M=8192 N=11264 K=2048 parts [5632, 5632], bias, relu".
std::string describe(const PartsCall& c) {
  std::ostringstream os;
  os << c10::toString(c.x.scalar_type()) << " M=" << c.x.size(0) << " N=" << c.weight->size(0)
     << " K=" << c.weight->size(1) << " parts " << c10::IntArrayRef(*c.parts);
  if (c.bias) os << ", bias";
  if (c.residual.defined()) os << ", residual";
  if (c.activation != GemmActivation::none) os << ", " << activation_name(c.activation);
  return os.str();
}

using PartsKey = std::tuple<int, int, int64_t, int64_t, std::vector<int64_t>, bool, bool, int, int>;

PartsKey key_of(const PartsCall& c) {
  return {c.x.device().index(), static_cast<int>(c.x.scalar_type()), c.x.size(0), c.weight->size(1), *c.parts,
          c.bias != nullptr, c.residual.defined(), static_cast<int>(c.activation), c.candidates};
}

std::mutex g_mu;
std::map<PartsKey, bool>* g_apart = new std::map<PartsKey, bool>();  // never destroyed: used until exit
std::vector<GemmPartsChoice>* g_log = new std::vector<GemmPartsChoice>();

// Whether calls of c's shape run apart: what an earlier timing kept, else timed now. Each form runs
// once first, which settles its own algorithms (their timing waits for the GPU; the timing here
// then queues launches only). Merged, undecided, while the stream captures a CUDA graph.
bool decide_apart(const PartsCall& c) {
  const PartsKey key = key_of(c);
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_apart->find(key);
  if (it != g_apart->end()) return it->second;
  const c10::Device device = c.x.device();
  if (current_stream_capturing(device)) return false;
  GemmPartsChoice record;
  record.call = describe(c);
  std::string why;
  const bool merged_runs = c.merged(&why);
  const bool apart_runs = c.apart(&why);
  CandidateTimes t;
  if (merged_runs && apart_runs) {
    try {
      t = time_candidates(
          2, [&](int i) { return i == 0 ? c.merged(&why) : c.apart(&why); }, device.index(), current_stream(device));
    } catch (const Error& e) {
      t.why_not = e.what();
    }
  } else {
    t.why_not = "cuBLASLt declined the " + std::string(merged_runs ? "apart" : "merged") + " form: " + why;
  }
  if (t.us.size() == 2) record.merged_us = t.us[0], record.apart_us = t.us[1];
  record.apart = t.why_not.empty() ? keep_apart(record.merged_us, record.apart_us, c.parts->size())
                                   : !merged_runs && apart_runs;
  record.why_not = t.why_not;
  if (LogSwitches::from_env_and("").fusion) {
    std::ostringstream os;
    os << "cuBLASLt " << record.call << ": " << (record.apart ? "apart" : "merged");
    if (t.why_not.empty()) os << " (merged " << record.merged_us << " us, apart " << record.apart_us << " us)";
    else os << " (not timed: " << t.why_not << ")";
    log_info(os.str());
  }
  const bool apart = record.apart;
  g_apart->emplace(key, apart);
  g_log->push_back(std::move(record));
  return apart;
}

enum class Form { Timed, Apart };

at::Tensor run(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
               const c10::optional<at::Tensor>& residual, const std::string& activation, int64_t candidates,
               const std::vector<int64_t>& parts, Form form) {
  const GemmActivation act = check_gemm_call(input, weight, bias, residual, activation, candidates);
  check_parts(weight, parts);
  // One part has no other form: the plain op.
  if (form == Form::Timed && parts.size() < 2) return gemm_epilogue(input, weight, bias, residual, activation, candidates);
  const at::Tensor* b = bias && bias->defined() ? &*bias : nullptr;
  const at::Tensor* r = residual && residual->defined() ? &*residual : nullptr;
  std::string why = lt_unusable(input, weight, b, r);
  if (!why.empty()) {
    count_gemm_call(false, why);
    return gemm_epilogue_aten(input, weight, bias, residual, act);
  }
  const int64_t n = weight.size(0), k = weight.size(1);
  PartsCall c;
  c.x = input.reshape({-1, k});  // a view where the layout allows, else a copy
  if (r) c.residual = r->reshape({-1, n});
  c.out = at::empty({c.x.size(0), n}, input.options());
  c.weight = &weight;
  c.bias = b;
  c.activation = act;
  c.candidates = static_cast<int>(candidates);
  c.parts = &parts;
  const bool apart = form == Form::Apart || decide_apart(c);
  // A form cuBLASLt declines wrote nothing of its own part, earlier parts aside: the other form,
  // then ATen, write the whole output again.
  bool ran = apart ? c.apart(&why) : c.merged(&why);
  if (!ran && apart) ran = c.merged(&why);
  count_gemm_call(ran && !c.aten_ran, why);
  if (!ran) return gemm_epilogue_aten(input, weight, bias, residual, act);
  return c.out.view(gemm_output_sizes(input, weight));
}

at::Tensor gemm_epilogue_parts_op(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                                  const c10::optional<at::Tensor>& residual, std::string activation, int64_t candidates,
                                  std::vector<int64_t> parts) {
  return gemm_epilogue_parts(input, weight, bias, residual, activation, candidates, parts);
}

}  // namespace

bool keep_apart(double merged_us, double apart_us, size_t parts) {
  if (merged_us < 0) return apart_us >= 0;
  if (apart_us < 0) return false;
  if (apart_us > merged_us * (1.0 - kKeepFirstMargin)) return false;
  const double extra_calls = parts > 1 ? static_cast<double>(parts - 1) : 0.0;
  return merged_us - apart_us > kApartCallHostUs * extra_calls;
}

at::Tensor gemm_epilogue_parts(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                               const c10::optional<at::Tensor>& residual, const std::string& activation,
                               int64_t candidates, const std::vector<int64_t>& parts) {
  return run(input, weight, bias, residual, activation, candidates, parts, Form::Timed);
}

at::Tensor gemm_epilogue_apart(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                               const c10::optional<at::Tensor>& residual, const std::string& activation,
                               int64_t candidates, const std::vector<int64_t>& parts) {
  return run(input, weight, bias, residual, activation, candidates, parts, Form::Apart);
}

std::vector<GemmPartsChoice> gemm_parts_choices() {
  std::lock_guard<std::mutex> lock(g_mu);
  return *g_log;
}

}  // namespace runtime
}  // namespace torchfuse

// An overload of the op of runtime/gemm_epilogue_op.cpp: graph nodes with the parts argument find it.
TORCH_LIBRARY_FRAGMENT(torchfuse, m) {
  m.def("gemm_epilogue.parts(Tensor input, Tensor weight, Tensor? bias, Tensor? residual, str activation, "
        "int candidates, int[] parts) -> Tensor",
        &torchfuse::runtime::gemm_epilogue_parts_op);
}
