// torchfuse::gemm_epilogue(Tensor input, Tensor weight, Tensor? bias, Tensor? residual,
// str activation, int candidates=1) -> Tensor: act(input @ weight^T + bias + residual), a GEMM
// and its epilogue in one call. passes/rewrite_gemm_epilogues.cpp puts it in TorchScript graphs in place of
// linear / addmm / matmul followed by a residual add and/or a ReLU or tanh-GELU.
//
// The order is cuBLASLt's (cublasLt.h): D = epilogue(alpha * A * B + beta * C), the epilogue
// adding the bias and then applying the activation, so the residual (C, beta = 1) and the bias
// are both added before the activation. On CUDA tensors (f32, f16, bf16; a LibTorch >= 2.3 that
// hands out its current stream; libcublasLt loadable) it is one cublasLtMatmul; everywhere else
// (CPU tensors, other dtypes, LibTorch 1.13, no cuBLASLt, no algorithm for the shapes) the same
// ops through ATen: linear, add, activation.
//
// `candidates` > 1 (CompileOptions::gemm_autotune): the first call of a shape times up to that many
// of cuBLASLt's heuristic's algorithms on its own operands (runtime/gemm_autotune.h), with split-K
// variants of its first ones (runtime/gemm_split_variants.h) and, for float32 calls, ATen's own
// GEMM as candidate 0; the process keeps the fastest for the shape (ATen's path where that won);
// 1 runs the heuristic's first. A shape first seen while
// its stream captures a CUDA graph runs the heuristic's first until a call outside a capture.
// An overload with a seventh argument, `int[] parts`, times the GEMM whole against one per part
// (runtime/gemm_parts.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace torchfuse {
namespace runtime {

// The activations the op applies, by the names its `activation` argument takes.
enum class GemmActivation { none, relu, gelu_tanh };
// "none", "relu", "gelu_tanh".
const char* activation_name(GemmActivation a);
// The activation named `name`; a torchfuse::Error for any other name.
GemmActivation parse_activation(const std::string& name);

// The op itself (also what the dispatcher runs). Throws torchfuse::Error for inputs that do not
// describe such a GEMM (dtypes that differ, shapes that do not match, a weight that is not 2-D).
// `candidates` outside 1..kMaxGemmCandidates is an Error too.
constexpr int64_t kMaxGemmCandidates = 32;
at::Tensor gemm_epilogue(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                         const c10::optional<at::Tensor>& residual, const std::string& activation,
                         int64_t candidates = 1);

// The ATen path alone: what every call computes where cuBLASLt does not run it.
at::Tensor gemm_epilogue_aten(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                              const c10::optional<at::Tensor>& residual, GemmActivation activation);

// Calls of the op since the process started (for tests): those one cublasLtMatmul ran and those
// that went through ATen.
struct GemmEpilogueCounts {
  int64_t cublaslt_calls = 0;
  int64_t aten_calls = 0;
};
GemmEpilogueCounts gemm_epilogue_counts();
// Why this thread's latest call went through ATen ("" when cuBLASLt ran it): "CPU tensors",
// "no cuBLASLt library (...)", "cublasLtMatmulAlgoGetHeuristic found no algorithm", ...
std::string gemm_epilogue_last_fallback();

// ---- the cuBLASLt call itself, for runtime/gemm_parts.cpp ----

// Why cuBLASLt cannot run act(input @ weight^T + bias + residual) at all ("" when it can try):
// not CUDA tensors, a dtype it does not take, a LibTorch that cannot hand out its stream, no
// cuBLASLt library, autograd.
std::string lt_unusable(const at::Tensor& input, const at::Tensor& weight, const at::Tensor* bias,
                        const at::Tensor* residual);

// act(x @ weight^T + bias + residual) as one cublasLtMatmul written into `out`, for a call
// lt_unusable accepted: x [M, K] and residual [M, N] 2-D, out [M, N] with packed rows and any row
// stride (a column range of a wider output). The algorithm is settled as for the op (timed
// among `candidates` on a shape's first call outside a capture). False (reason in *why) where
// cuBLASLt declines; nothing ran then. Where a float32 call keeps ATen's GEMM (its timed
// candidate 0), ATen's linear, add and activation write `out` instead: true, *aten_ran set, the
// reason in *why.
bool lt_matmul_into(const at::Tensor& x, const at::Tensor& weight, const at::Tensor* bias, const at::Tensor* residual,
                    GemmActivation activation, int candidates, const at::Tensor& out, std::string* why,
                    bool* aten_ran = nullptr);

// The split-K reduction schemes (a cublasLtReductionScheme_t mask) a call in dtype t may use,
// as eager's cuBLASLt GEMMs derive them from torch's reduced-precision reduction settings:
// all (0x7) where reduced precision is allowed (the default), partials in the compute type or
// no split (0x2) where it is not, no split (0x0) where split-K is disallowed as well.
uint32_t cublaslt_reduction_mask(c10::ScalarType t);

// Counts a call in gemm_epilogue_counts() (cuBLASLt's or ATen's, with the reason ATen ran it).
void count_gemm_call(bool cublaslt, const std::string& why);

// The op's user-facing checks (the activation's name, the candidate count, the operands' dtypes,
// devices and shapes), as torchfuse::Error; the activation, parsed.
GemmActivation check_gemm_call(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                               const c10::optional<at::Tensor>& residual, const std::string& activation,
                               int64_t candidates);

// The op's output sizes: input's leading dims, then weight's dim 0.
std::vector<int64_t> gemm_output_sizes(const at::Tensor& input, const at::Tensor& weight);

// One shape whose candidate algorithms were timed (in the order timed, for tests and reports).
struct GemmAlgorithmChoice {
  std::string call;        // "bf16 M=128 N=2304 K=768, bias"
  int candidates = 0;      // the candidates timed
  std::vector<std::string> labels;  // per candidate: "ATen" (float32 calls' candidate 0),
                                    // "heuristic 2", "heuristic 0, split-K 4"
  std::vector<double> us;  // per candidate, GPU us per call (negative: it declined to run)
  int chosen = 0;          // the index kept (0 when timing was unavailable)
  bool held = false;       // timed behind a stream hold (GPU time alone)
  bool l2_flushed = false; // L2 overwritten before each timed call
  std::string why_not;     // why nothing was timed ("" when timed)
};
std::vector<GemmAlgorithmChoice> gemm_algorithm_choices();

}  // namespace runtime
}  // namespace torchfuse
