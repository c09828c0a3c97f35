// torchfuse::gemm_epilogue.parts(Tensor input, Tensor weight, Tensor? bias, Tensor? residual,
// str activation, int candidates, int[] parts) -> Tensor: the op of runtime/gemm_epilogue_op.h for
// a GEMM whose output is read as consecutive column ranges of the given widths (linears merged
// by passes/concat_linears.cpp, each original result a slice of the last dim). It computes what
// gemm_epilogue computes, in one of two forms:
//   merged: one GEMM over the whole weight;
//   apart:  one GEMM per part (the weight's rows, the bias's and the residual's columns of that
//           part), each writing its columns of the same output.
// With candidates > 1 (CompileOptions::gemm_autotune) the first call of a shape outside a CUDA
// graph capture times both forms, each on its own settled algorithms (runtime/gemm_autotune.h:
// L2 written over before each timed call), and the process keeps apart when it is at least
// kKeepFirstMargin faster than merged. cuBLASLt's heuristic gives some shapes of either form a
// tile that loses to the other's by 5-8% of a model's call (docs/performance.md, "Merged linears
// by shape"). With candidates == 1 it is gemm_epilogue over the whole weight.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace torchfuse {
namespace runtime {

// The op. Throws torchfuse::Error for what gemm_epilogue rejects and for parts that are not
// positive widths adding up to weight's dim 0.
at::Tensor gemm_epilogue_parts(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                               const c10::optional<at::Tensor>& residual, const std::string& activation,
                               int64_t candidates, const std::vector<int64_t>& parts);

// The apart form alone, whatever the timing would keep (for tests); the ATen path where
// cuBLASLt cannot run a part.
at::Tensor gemm_epilogue_apart(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                               const c10::optional<at::Tensor>& residual, const std::string& activation,
                               int64_t candidates, const std::vector<int64_t>& parts);

// One shape whose forms were timed, in the order timed (tests and reports).
struct GemmPartsChoice {
  std::string call;             // "BFloat16 M=8192 N=11264 K=2048 parts [5632, 5632], bias"
  double merged_us = -1.0;      // GPU us per call of each form (negative: it declined to run)
  double apart_us = -1.0;
  bool apart = false;           // the form kept
  std::string why_not;          // why nothing was timed ("" when timed)
};
std::vector<GemmPartsChoice> gemm_parts_choices();

}  // namespace runtime
}  // namespace torchfuse
