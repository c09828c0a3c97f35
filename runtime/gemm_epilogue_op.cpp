#include "runtime/gemm_epilogue_op.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <type_traits>
#include <vector>

#include <ATen/Context.h>
#include <c10/core/GradMode.h>
#include <torch/library.h>
#include <torch/version.h>

#include "runtime/cublaslt_api.h"
#include "runtime/gemm_autotune.h"
#include "runtime/gemm_split_variants.h"
#include "runtime/graph_capture.h"
#include "runtime/launch_util.h"
#include "src/error.h"
#include "src/logging.h"

namespace torchfuse {
namespace runtime {
namespace {

std::atomic<int64_t> g_cublaslt_calls{0};
std::atomic<int64_t> g_aten_calls{0};
thread_local std::string t_last_fallback;

// cuBLASLt's workspace per call, from the caching allocator (cheap to take every call, and
// stream-ordered like everything else the allocator hands out). 4 MiB lets the heuristic pick
// split-K and stream-K kernels on Hopper without holding much memory.
constexpr size_t kWorkspaceBytes = size_t(4) << 20;

// "Float[2, 3] on cpu": how error messages name a tensor.
std::string describe(const at::Tensor& t) {
  std::ostringstream os;
  os << c10::toString(t.scalar_type()) << t.sizes() << " on " << t.device();
  return os.str();
}

// The user-facing checks: what at::linear + add would reject, said in the op's own terms, and
// what the op refuses on top (a broadcast residual or bias: the epilogue takes neither).
void check_tensor(const at::Tensor& t, const at::Tensor& input, const char* what) {
  TORCHFUSE_CHECK(t.defined(), "torchfuse::gemm_epilogue: ", what, " is an undefined tensor");
  TORCHFUSE_CHECK(t.scalar_type() == input.scalar_type(), "torchfuse::gemm_epilogue: ", what, " ", describe(t),
                  " must have the input's dtype (input ", describe(input), ")");
  TORCHFUSE_CHECK(t.device() == input.device(), "torchfuse::gemm_epilogue: ", what, " ", describe(t),
                  " must be on the input's device (input ", describe(input), ")");
}

void check_inputs(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                  const c10::optional<at::Tensor>& residual) {
  TORCHFUSE_CHECK(input.defined(), "torchfuse::gemm_epilogue: the input is an undefined tensor");
  TORCHFUSE_CHECK(input.dim() >= 1, "torchfuse::gemm_epilogue: the input must have at least 1 dim, got ",
                  describe(input));
  TORCHFUSE_CHECK(c10::isFloatingType(input.scalar_type()),
                  "torchfuse::gemm_epilogue: the input must be a floating-point tensor, got ", describe(input));
  check_tensor(weight, input, "weight");
  TORCHFUSE_CHECK(weight.dim() == 2, "torchfuse::gemm_epilogue: weight must be 2-D, got ", describe(weight));
  TORCHFUSE_CHECK(input.size(-1) == weight.size(1), "torchfuse::gemm_epilogue: input ", describe(input),
                  " and weight ", describe(weight), " do not multiply (input's last dim must be weight's dim 1)");
  if (bias && bias->defined()) {
    check_tensor(*bias, input, "bias");
    TORCHFUSE_CHECK(bias->dim() == 1 && bias->size(0) == weight.size(0), "torchfuse::gemm_epilogue: bias ",
                    describe(*bias), " must be 1-D with weight's dim 0 (", weight.size(0), " elements)");
  }
  if (residual && residual->defined()) {
    check_tensor(*residual, input, "residual");
    const std::vector<int64_t> out = gemm_output_sizes(input, weight);
    TORCHFUSE_CHECK(residual->sizes().vec() == out, "torchfuse::gemm_epilogue: residual ", describe(*residual),
                    " must have the output's shape ", c10::IntArrayRef(out), " (no broadcasting)");
  }
}

const at::Tensor* present(const c10::optional<at::Tensor>& t) { return t && t->defined() ? &*t : nullptr; }

// ---- the cuBLASLt path ----

// One operand as cuBLASLt reads it: a column-major rows x cols matrix with leading dimension ld,
// which the matmul uses as op(matrix).
struct LtMatrix {
  const void* ptr = nullptr;
  uint64_t rows = 0;
  uint64_t cols = 0;
  int64_t ld = 0;
  cublasOperation_t op = CUBLAS_OP_N;
};

// The 2-D tensor p, as an operand whose op(matrix) is p itself (p[i][j] at i * stride(0) +
// j * stride(1)): column-major as it is (stride(0) == 1), or transposed (stride(1) == 1). Nothing
// when neither dim is packed (then the caller copies p into a packed tensor).
std::optional<LtMatrix> as_operand(const at::Tensor& p) {
  const int64_t r = p.size(0), c = p.size(1), s0 = p.stride(0), s1 = p.stride(1);
  LtMatrix m;
  m.ptr = p.data_ptr();
  if (s0 == 1 && s1 >= std::max<int64_t>(1, r)) {
    m.rows = r, m.cols = c, m.ld = s1, m.op = CUBLAS_OP_N;
    return m;
  }
  if (s1 == 1 && s0 >= std::max<int64_t>(1, c)) {
    m.rows = c, m.cols = r, m.ld = s0, m.op = CUBLAS_OP_T;
    return m;
  }
  return std::nullopt;
}

// as_operand, copying p into a row-major tensor first where its strides do not fit; `keep`
// holds the copy alive until the matmul is queued.
LtMatrix operand(const at::Tensor& p, std::vector<at::Tensor>& keep) {
  if (auto m = as_operand(p)) return *m;
  keep.push_back(p.clone(at::MemoryFormat::Contiguous));
  auto m = as_operand(keep.back());
  TORCHFUSE_INTERNAL_ASSERT(m.has_value(), "a contiguous 2-D tensor is always a cuBLASLt operand");
  return *m;
}

cudaDataType_t data_type(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Half:
      return CUDA_R_16F;
    case c10::ScalarType::BFloat16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

cublasLtEpilogue_t epilogue_of(bool bias, GemmActivation a) {
  switch (a) {
    case GemmActivation::relu:
      return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case GemmActivation::gelu_tanh:
      return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    case GemmActivation::none:
      break;
  }
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

// As eager's cuBLAS calls: fp32 GEMMs in full fp32 unless torch allows TF32 for matmuls.
cublasComputeType_t compute_type(c10::ScalarType t) {
  if (t == c10::ScalarType::Float && at::globalContext().allowTF32CuBLAS()) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;
}

// The split-K reduction schemes eager's cuBLASLt GEMMs allow (ATen's CUDABlas.cpp), by torch's
// answer to "are reduced-precision reductions allowed": every scheme when they are; partials in
// the compute type (or no split) when they are not; no split when split-K is disallowed too.
// That answer is a bool before LibTorch 2.9, an at::CuBLASReductionOption since (0:
// AllowReducedPrecisionWithSplitK, 1: DisallowReducedPrecisionAllowSplitK, 2: ...DisallowSplitK).
constexpr uint32_t kComputeTypeOrNone = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_NONE;
uint32_t mask_for(bool reduced_allowed) { return reduced_allowed ? CUBLASLT_REDUCTION_SCHEME_MASK : kComputeTypeOrNone; }
template <typename Option, typename = std::enable_if_t<std::is_enum<Option>::value>>
uint32_t mask_for(Option option) {
  switch (static_cast<int>(option)) {
    case 0:
      return CUBLASLT_REDUCTION_SCHEME_MASK;
    case 1:
      return kComputeTypeOrNone;
    default:
      return CUBLASLT_REDUCTION_SCHEME_NONE;
  }
}

}  // namespace

uint32_t cublaslt_reduction_mask(c10::ScalarType t) {
  if (t == c10::ScalarType::Half) return mask_for(at::globalContext().allowFP16ReductionCuBLAS());
#if TORCH_VERSION_MAJOR >= 2
  if (t == c10::ScalarType::BFloat16) return mask_for(at::globalContext().allowBF16ReductionCuBLAS());
#endif
  return CUBLASLT_REDUCTION_SCHEME_MASK;  // float32: eager sets no mask
}

namespace {

// The largest power of two up to 16 that divides the address: the alignment the heuristic may
// count on (its default preference, 256, would exclude nothing but also promise too much).
uint32_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 16;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

// Everything the heuristic's answer depends on.
using AlgoKey = std::vector<int64_t>;

struct Descriptors {
  const CublasLtApi* api;
  cublasLtMatmulDesc_t matmul = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  explicit Descriptors(const CublasLtApi* l) : api(l) {}
  ~Descriptors() {
    if (preference) api->cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t l : {a, b, c, d})
      if (l) api->cublasLtMatrixLayoutDestroy(l);
    if (matmul) api->cublasLtMatmulDescDestroy(matmul);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

// A cuBLASLt status that is not success: the call that failed and the code.
std::string lt_failure(const char* what, cublasStatus_t s) {
  return std::string(what) + " failed with cuBLAS status " + std::to_string(static_cast<int>(s));
}

// Everything one matmul needs, gathered before any descriptor is made.
struct LtCall {
  LtMatrix a, b, c, d;  // op(a) = weight [N, K], op(b) = input^T [K, M], c = residual^T, d = output^T [N, M]
  const void* bias = nullptr;
  bool residual = false;
  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_MASK;
  int device = 0;
  int candidates = 1;  // the heuristic's algorithms timed before one is kept (1: its first, untimed)

  // The inner dim: op(a) is [N, K].
  int64_t k() const { return static_cast<int64_t>(a.op == CUBLAS_OP_N ? a.cols : a.rows); }
  // Whether ATen's own GEMM is timed too, as candidate 0: float32 calls that time candidates.
  // Untimed float32 GEMMs without an epilogue stay ATen's (passes/rewrite_plain_gemms.cpp), so
  // ATen's is the one a timed call must beat.
  bool aten_candidate() const { return type == CUDA_R_32F && candidates > 1; }

  AlgoKey key() const {
    AlgoKey k{device, type, compute, epilogue, residual, reduction, alignment_of(bias), candidates};
    for (const LtMatrix* m : {&a, &b, &c, &d}) {
      k.insert(k.end(), {static_cast<int64_t>(m->rows), static_cast<int64_t>(m->cols), m->ld, m->op,
                         alignment_of(m->ptr)});
    }
    return k;
  }
};

// Fills the descriptors of `call`; a status other than success is a message in *why.
bool make_descriptors(const LtCall& call, Descriptors& ds, std::string* why) {
  const CublasLtApi& lt = *ds.api;
  auto ok = [&](cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS) *why = lt_failure(what, s);
    return s == CUBLAS_STATUS_SUCCESS;
  };
  if (!ok(lt.cublasLtMatmulDescCreate(&ds.matmul, call.compute, CUDA_R_32F), "cublasLtMatmulDescCreate")) return false;
  auto set = [&](cublasLtMatmulDescAttributes_t attr, const void* value, size_t bytes) {
    return ok(lt.cublasLtMatmulDescSetAttribute(ds.matmul, attr, value, bytes), "cublasLtMatmulDescSetAttribute");
  };
  if (!set(CUBLASLT_MATMUL_DESC_TRANSA, &call.a.op, sizeof(call.a.op)) ||
      !set(CUBLASLT_MATMUL_DESC_TRANSB, &call.b.op, sizeof(call.b.op)) ||
      !set(CUBLASLT_MATMUL_DESC_EPILOGUE, &call.epilogue, sizeof(call.epilogue)))
    return false;
  // The bias has the output's type (cuBLASLt's default for non-fp8 outputs): set only when there is one.
  if (call.bias && !set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &call.bias, sizeof(call.bias))) return false;
  const std::array<std::pair<cublasLtMatrixLayout_t*, const LtMatrix*>, 4> layouts{
      {{&ds.a, &call.a}, {&ds.b, &call.b}, {&ds.c, &call.c}, {&ds.d, &call.d}}};
  for (const auto& [layout, m] : layouts) {
    if (!ok(lt.cublasLtMatrixLayoutCreate(layout, call.type, m->rows, m->cols, m->ld), "cublasLtMatrixLayoutCreate"))
      return false;
  }
  if (!ok(lt.cublasLtMatmulPreferenceCreate(&ds.preference), "cublasLtMatmulPreferenceCreate")) return false;
  auto pref = [&](cublasLtMatmulPreferenceAttributes_t attr, const void* value, size_t bytes) {
    return ok(lt.cublasLtMatmulPreferenceSetAttribute(ds.preference, attr, value, bytes),
              "cublasLtMatmulPreferenceSetAttribute");
  };
  const uint64_t workspace = kWorkspaceBytes;
  const uint32_t align_a = alignment_of(call.a.ptr), align_b = alignment_of(call.b.ptr);
  const uint32_t align_c = alignment_of(call.c.ptr), align_d = alignment_of(call.d.ptr);
  return pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)) &&
         pref(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &call.reduction, sizeof(call.reduction)) &&
         pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)) &&
         pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)) &&
         pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c)) &&
         pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d));
}

// One cuBLASLt handle per device, created on first use with the device current and kept for the
// process (cuBLASLt calls take their stream and workspace as arguments, so threads share it).
cublasLtHandle_t handle_for(const CublasLtApi& lt, int device, std::string* why) {
  static std::mutex mu;
  static auto* handles = new std::map<int, cublasLtHandle_t>();  // never destroyed: used until exit
  std::lock_guard<std::mutex> lock(mu);
  auto it = handles->find(device);
  if (it != handles->end()) return it->second;
  cublasLtHandle_t h = nullptr;
  const cublasStatus_t s = lt.cublasLtCreate(&h);
  if (s != CUBLAS_STATUS_SUCCESS) {
    *why = lt_failure("cublasLtCreate", s);
    return nullptr;
  }
  handles->emplace(device, h);
  return h;
}

// One algorithm a call may run, and how timing records name it.
struct LtCandidate {
  cublasLtMatmulAlgo_t algo{};
  std::string label;  // "heuristic 0", "heuristic 1, split-K 4"
};

// The heuristic's first call.candidates algorithms for calls with this key, in its order, then
// (when there are several) their split-K variants; asked once per key; empty when the heuristic
// has none (the answer is cached too: such shapes go to ATen without asking again).
std::vector<LtCandidate> candidates_for(const LtCall& call, const Descriptors& ds, cublasLtHandle_t h,
                                        std::string* why) {
  static std::mutex mu;
  static auto* cache = new std::map<AlgoKey, std::vector<LtCandidate>>();
  const AlgoKey key = call.key();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(key);
  if (it == cache->end()) {
    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(std::max(call.candidates, 1)));
    int found = 0;
    const cublasStatus_t s = ds.api->cublasLtMatmulAlgoGetHeuristic(h, ds.matmul, ds.a, ds.b, ds.c, ds.d, ds.preference,
                                                                     static_cast<int>(results.size()), results.data(),
                                                                     &found);
    std::vector<cublasLtMatmulAlgo_t> algos;
    std::vector<LtCandidate> list;
    for (int i = 0; s == CUBLAS_STATUS_SUCCESS && i < found; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
      algos.push_back(results[i].algo);
      list.push_back({results[i].algo, "heuristic " + std::to_string(i)});
    }
    if (call.candidates > 1 && !algos.empty()) {
      const LtProblem problem{h, ds.matmul, ds.a, ds.b, ds.c, ds.d, call.k(), call.reduction, kWorkspaceBytes};
      for (const SplitVariant& v : split_k_variants(*ds.api, problem, algos)) list.push_back({v.algo, v.label()});
    }
    it = cache->emplace(key, std::move(list)).first;
  }
  if (it->second.empty()) *why = "cublasLtMatmulAlgoGetHeuristic found no algorithm for these shapes, dtypes and alignments";
  return it->second;
}

}  // namespace

std::string lt_unusable(const at::Tensor& input, const at::Tensor& weight, const at::Tensor* bias,
                        const at::Tensor* residual) {
  if (!input.is_cuda()) return "not CUDA tensors (" + input.device().str() + ")";
  const c10::ScalarType t = input.scalar_type();
  if (t != c10::ScalarType::Float && t != c10::ScalarType::Half && t != c10::ScalarType::BFloat16)
    return std::string("dtype ") + c10::toString(t) + " (cuBLASLt runs f32, f16 and bf16)";
#if !(TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3))
  return "this LibTorch cannot hand out its current CUDA stream (LibTorch >= 2.3 is needed)";
#endif
  if (input.dim() < 2) return "a 1-D input";
  if (input.numel() == 0 || weight.numel() == 0) return "an empty matrix";
  if (c10::GradMode::is_enabled() && (input.requires_grad() || weight.requires_grad() ||
                                      (bias && bias->requires_grad()) || (residual && residual->requires_grad())))
    return "a tensor requires grad (autograd goes through ATen's ops)";
  std::string why;
  if (cublaslt_api(&why) == nullptr) return why;
  return "";
}

namespace {

// The descriptors and algorithm of one call's key, made once: creating six descriptors and
// setting their attributes cost more host time than the matmul's own launch, and a GEMM in a
// launch-bound model runs with the same key every call. Per thread, since the bias pointer is an
// attribute of the matmul descriptor, set on each call.
struct LtPlan {
  std::unique_ptr<Descriptors> ds;
  std::vector<LtCandidate> candidates;  // the heuristic's in its order, then split-K variants
  bool aten_first = false;              // ATen's GEMM is timed as candidate 0 (LtCall::aten_candidate)
  cublasLtMatmulAlgo_t algo{};          // the one calls run...
  bool use_aten = false;                // ...unless ATen's GEMM runs them (nothing here runs then)
  bool settled = false;                 // false until the candidates were timed (or one alone)
  // The candidates as timed: ATen's GEMM first where it takes part, then `candidates` from this index.
  int first_lt() const { return aten_first ? 1 : 0; }
  int timed_count() const { return static_cast<int>(candidates.size()) + first_lt(); }
};

// This thread's plan for `call`; null (reason in *why) where cuBLASLt declines the key. Declined
// keys are not remembered here (candidates_for remembers that it found no algorithm).
LtPlan* plan_for(const LtCall& call, const CublasLtApi& lt, cublasLtHandle_t h, std::string* why) {
  // Never destroyed: a thread's plans hold cuBLASLt descriptors, which must not be destroyed after
  // the library is unloaded at exit.
  thread_local auto* plans = new std::map<AlgoKey, LtPlan>();
  AlgoKey key = call.key();
  auto it = plans->find(key);
  if (it != plans->end()) return &it->second;
  auto ds = std::make_unique<Descriptors>(&lt);
  if (!make_descriptors(call, *ds, why)) return nullptr;
  std::vector<LtCandidate> candidates = candidates_for(call, *ds, h, why);
  if (candidates.empty()) return nullptr;
  LtPlan& plan = (*plans)[std::move(key)];
  plan.ds = std::move(ds);
  plan.aten_first = call.aten_candidate();
  plan.algo = candidates.front().algo;
  plan.use_aten = plan.aten_first;  // until timed, candidate 0 runs
  plan.candidates = std::move(candidates);
  plan.settled = plan.timed_count() == 1;  // one candidate: nothing to time
  return &plan;
}

// "bf16 M=128 N=2304 K=768, bias": a call as the timing records and logs name it.
std::string describe_call(const LtCall& call) {
  const uint64_t n = call.d.rows, m = call.d.cols;
  const uint64_t k = call.a.op == CUBLAS_OP_N ? call.a.cols : call.a.rows;
  const char* type = call.type == CUDA_R_16BF ? "bf16" : call.type == CUDA_R_16F ? "f16" : "f32";
  std::ostringstream os;
  os << type << " M=" << m << " N=" << n << " K=" << k;
  if (call.bias) os << ", bias";
  if (call.residual) os << ", residual";
  if (call.epilogue != CUBLASLT_EPILOGUE_DEFAULT && call.epilogue != CUBLASLT_EPILOGUE_BIAS) os << ", activation";
  return os.str();
}

std::mutex g_choices_mu;
// Keys whose candidates were timed, and the index kept (shared by threads: a shape is timed once
// per process).
std::map<AlgoKey, int>* g_chosen = new std::map<AlgoKey, int>();  // never destroyed: used until exit
std::vector<GemmAlgorithmChoice>* g_choice_log = new std::vector<GemmAlgorithmChoice>();

// Settles which of plan's candidates the call runs: the index another thread's timing kept, else
// the fastest of them timed now, on this call's own operands. While the stream captures a CUDA
// graph nothing can be timed (timing waits for the GPU): candidate 0 runs, unsettled.
// run(algo) queues one matmul with `algo`, returning its status; aten() queues ATen's ops for the
// same call, writing its output as run() does.
void settle(const LtCall& call, LtPlan& plan, const std::function<cublasStatus_t(const cublasLtMatmulAlgo_t&)>& run,
            const std::function<void()>& aten, const c10::Device& device, CUstream stream) {
  const AlgoKey key = call.key();
  std::lock_guard<std::mutex> lock(g_choices_mu);
  auto it = g_chosen->find(key);
  if (it == g_chosen->end()) {
    if (current_stream_capturing(device)) return;
    GemmAlgorithmChoice record;
    record.call = describe_call(call);
    record.candidates = plan.timed_count();
    if (plan.aten_first) record.labels.push_back("ATen");
    for (const LtCandidate& c : plan.candidates) record.labels.push_back(c.label);
    auto queue = [&](int i) {
      if (i < plan.first_lt()) {
        aten();
        return true;
      }
      return run(plan.candidates[static_cast<size_t>(i - plan.first_lt())].algo) == CUBLAS_STATUS_SUCCESS;
    };
    CandidateTimes t;
    try {
      t = time_candidates(record.candidates, queue, call.device, stream);
    } catch (const Error& e) {
      t.why_not = e.what();
    }
    record.us = t.us;
    record.held = t.held;
    record.l2_flushed = t.l2_flushed;
    record.why_not = t.why_not;
    record.chosen = std::max(t.chosen, 0);
    if (LogSwitches::from_env_and("").fusion) {
      std::ostringstream os;
      os << "cuBLASLt " << record.call << ": candidate " << record.chosen << " of " << record.candidates << " ("
         << record.labels[static_cast<size_t>(record.chosen)] << ")";
      if (t.chosen >= 0)
        os << ", " << t.us[t.chosen] << " us; candidate 0 (" << record.labels[0] << ") " << t.us[0] << " us";
      if (!t.why_not.empty()) os << " (not timed: " << t.why_not << ")";
      log_info(os.str());
    }
    it = g_chosen->emplace(key, record.chosen).first;
    g_choice_log->push_back(std::move(record));
  }
  plan.use_aten = it->second < plan.first_lt();
  if (!plan.use_aten) plan.algo = plan.candidates[static_cast<size_t>(it->second - plan.first_lt())].algo;
  plan.settled = true;
}

// ATen's ops for act(x @ weight^T + bias + residual), written into `out` (a [M, N] matrix with
// packed rows, maybe a column range of a wider one): eager's linear (addmm or mm), add and
// activation, each rounding to the dtype as eager does. Where a float32 call keeps ATen's GEMM,
// this is what runs, and what its timing measured.
void aten_into(const at::Tensor& x, const at::Tensor& weight, const at::Tensor* bias, const at::Tensor* residual,
               GemmActivation activation, const at::Tensor& out) {
  at::Tensor o = out;
  if (bias) at::addmm_out(o, *bias, x, weight.t());
  else at::mm_out(o, x, weight.t());
  if (residual) o.add_(*residual);
  switch (activation) {
    case GemmActivation::relu:
      o.relu_();
      break;
    case GemmActivation::gelu_tanh:
      at::gelu_(o, "tanh");
      break;
    case GemmActivation::none:
      break;
  }
}

}  // namespace

bool lt_matmul_into(const at::Tensor& x, const at::Tensor& weight, const at::Tensor* bias, const at::Tensor* residual,
                    GemmActivation activation, int candidates, const at::Tensor& out, std::string* why,
                    bool* aten_ran) {
  if (aten_ran) *aten_ran = false;
  TORCHFUSE_INTERNAL_ASSERT(x.dim() == 2 && out.dim() == 2 && out.stride(1) == 1 && out.size(0) == x.size(0) &&
                                out.size(1) == weight.size(0),
                            "lt_matmul_into takes a 2-D input and a [M, N] output with packed rows");
  const CublasLtApi& lt = *cublaslt_api();
  const OnDevice on_device(x.device());
  const int64_t n = weight.size(0);
  std::vector<at::Tensor> keep;  // copies of operands whose strides cuBLASLt cannot read
  LtCall call;
  call.device = x.device().index();
  call.type = data_type(x.scalar_type());
  call.compute = compute_type(x.scalar_type());
  call.reduction = cublaslt_reduction_mask(x.scalar_type());
  call.epilogue = epilogue_of(bias != nullptr, activation);
  call.candidates = candidates;
  call.a = operand(weight, keep);
  call.b = operand(x.t(), keep);
  call.d = operand(out.t(), keep);
  TORCHFUSE_INTERNAL_ASSERT(call.d.op == CUBLAS_OP_N && call.d.ptr == out.data_ptr(), "the output has packed rows");
  call.c = call.d;
  if (residual) {
    call.residual = true;
    // C has no transpose of its own: it must be laid out as D is (row-major rows, any ld).
    at::Tensor r = *residual;
    std::optional<LtMatrix> c = as_operand(r.t());
    if (!c || c->op != CUBLAS_OP_N) {
      r = r.clone(at::MemoryFormat::Contiguous);
      c = as_operand(r.t());
    }
    TORCHFUSE_INTERNAL_ASSERT(c && c->op == CUBLAS_OP_N && r.size(1) == n, "a row-major residual is cuBLASLt's C as it is");
    keep.push_back(r);
    call.c = *c;
  }
  if (bias) {
    keep.push_back(bias->contiguous());
    call.bias = keep.back().data_ptr();
  }
  cublasLtHandle_t h = handle_for(lt, call.device, why);
  if (!h) return false;
  LtPlan* plan = plan_for(call, lt, h, why);
  if (!plan) return false;
  const Descriptors& ds = *plan->ds;
  if (call.bias) {
    const cublasStatus_t s =
        lt.cublasLtMatmulDescSetAttribute(ds.matmul, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &call.bias, sizeof(call.bias));
    if (s != CUBLAS_STATUS_SUCCESS) {
      *why = lt_failure("cublasLtMatmulDescSetAttribute", s);
      return false;
    }
  }
  const at::Tensor workspace = at::empty({static_cast<int64_t>(kWorkspaceBytes)}, x.options().dtype(at::kByte));
  const float alpha = 1.0f, beta = call.residual ? 1.0f : 0.0f;
  const CUstream stream = current_stream(x.device());
  auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    return lt.cublasLtMatmul(h, ds.matmul, &alpha, call.a.ptr, ds.a, call.b.ptr, ds.b, &beta, call.c.ptr, ds.c,
                             out.data_ptr(), ds.d, &algo, workspace.data_ptr(), kWorkspaceBytes, stream);
  };
  auto aten = [&] { aten_into(x, weight, bias, residual, activation, out); };
  if (!plan->settled) settle(call, *plan, run, aten, x.device(), stream);
  if (plan->use_aten) {
    aten();
    *why = plan->settled ? "ATen's float32 GEMM, timed faster than cuBLASLt's candidates"
                         : "ATen's float32 GEMM, until cuBLASLt's candidates are timed outside a CUDA graph capture";
    if (aten_ran) *aten_ran = true;
    return true;
  }
  const cublasStatus_t s = run(plan->algo);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE) {
    *why = lt_failure("cublasLtMatmul", s);  // nothing ran: ATen computes it instead
    return false;
  }
  TORCHFUSE_CHECK(s == CUBLAS_STATUS_SUCCESS, "torchfuse::gemm_epilogue: ", lt_failure("cublasLtMatmul", s));
  return true;
}

namespace {

// Runs the call as one cublasLtMatmul into a fresh `out`; false (reason in *why) where cuBLASLt declines.
bool run_cublaslt(const at::Tensor& input, const at::Tensor& weight, const at::Tensor* bias, const at::Tensor* residual,
                  GemmActivation activation, int candidates, at::Tensor& out, std::string* why, bool* aten_ran) {
  *why = lt_unusable(input, weight, bias, residual);
  if (!why->empty()) return false;
  const int64_t n = weight.size(0), k = weight.size(1);
  const at::Tensor x = input.reshape({-1, k});  // a view where the layout allows, else a copy
  out = at::empty({x.size(0), n}, input.options());
  at::Tensor r;
  if (residual) r = residual->reshape({-1, n});
  if (!lt_matmul_into(x, weight, bias, residual ? &r : nullptr, activation, candidates, out, why, aten_ran)) return false;
  out = out.view(gemm_output_sizes(input, weight));
  return true;
}

at::Tensor gemm_epilogue_op(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                            const c10::optional<at::Tensor>& residual, std::string activation, int64_t candidates) {
  return gemm_epilogue(input, weight, bias, residual, activation, candidates);
}

}  // namespace

const char* activation_name(GemmActivation a) {
  switch (a) {
    case GemmActivation::relu:
      return "relu";
    case GemmActivation::gelu_tanh:
      return "gelu_tanh";
    case GemmActivation::none:
      break;
  }
  return "none";
}

GemmActivation parse_activation(const std::string& name) {
  for (GemmActivation a : {GemmActivation::none, GemmActivation::relu, GemmActivation::gelu_tanh})
    if (name == activation_name(a)) return a;
  TORCHFUSE_CHECK(false, "torchfuse::gemm_epilogue: unknown activation '", name,
                  "' (expected 'none', 'relu' or 'gelu_tanh')");
  return GemmActivation::none;
}

at::Tensor gemm_epilogue_aten(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                              const c10::optional<at::Tensor>& residual, GemmActivation activation) {
  at::Tensor y = at::linear(input, weight, bias);
  if (const at::Tensor* r = present(residual)) y = y + *r;
  switch (activation) {
    case GemmActivation::relu:
      return at::relu(y);
    case GemmActivation::gelu_tanh:
      return at::gelu(y, "tanh");
    case GemmActivation::none:
      break;
  }
  return y;
}

void count_gemm_call(bool cublaslt, const std::string& why) {
  ++(cublaslt ? g_cublaslt_calls : g_aten_calls);
  t_last_fallback = cublaslt ? std::string() : why;
}

std::vector<int64_t> gemm_output_sizes(const at::Tensor& input, const at::Tensor& weight) {
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - 1);
  sizes.push_back(weight.size(0));
  return sizes;
}

GemmActivation check_gemm_call(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                               const c10::optional<at::Tensor>& residual, const std::string& activation,
                               int64_t candidates) {
  const GemmActivation act = parse_activation(activation);
  TORCHFUSE_CHECK(candidates >= 1 && candidates <= kMaxGemmCandidates, "torchfuse::gemm_epilogue: candidates must be in 1..",
                  kMaxGemmCandidates, ", got ", candidates);
  check_inputs(input, weight, bias, residual);
  return act;
}

at::Tensor gemm_epilogue(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                         const c10::optional<at::Tensor>& residual, const std::string& activation, int64_t candidates) {
  const GemmActivation act = check_gemm_call(input, weight, bias, residual, activation, candidates);
  at::Tensor out;
  std::string why;
  bool aten_ran = false;  // ATen's float32 GEMM, kept by the timing, wrote `out`
  const bool ran =
      run_cublaslt(input, weight, present(bias), present(residual), act, static_cast<int>(candidates), out, &why, &aten_ran);
  count_gemm_call(ran && !aten_ran, why);
  if (ran) return out;
  return gemm_epilogue_aten(input, weight, bias, residual, act);
}

GemmEpilogueCounts gemm_epilogue_counts() { return {g_cublaslt_calls.load(), g_aten_calls.load()}; }

std::string gemm_epilogue_last_fallback() { return t_last_fallback; }

std::vector<GemmAlgorithmChoice> gemm_algorithm_choices() {
  std::lock_guard<std::mutex> lock(g_choices_mu);
  return *g_choice_log;
}

}  // namespace runtime
}  // namespace torchfuse

// A fragment: runtime/attention_op.cpp registers other torchfuse:: ops.
TORCH_LIBRARY_FRAGMENT(torchfuse, m) {
  m.def("gemm_epilogue(Tensor input, Tensor weight, Tensor? bias, Tensor? residual, str activation, int candidates=1) "
        "-> Tensor",
        &torchfuse::runtime::gemm_epilogue_op);
}
