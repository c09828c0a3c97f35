// torchfuse::gemm_epilogue.parts(Tensor input, Tensor weight, Tensor? bias, Tensor? residual,
// str activation, int candidates, int[] parts) -> Tensor: the op of runtime/gemm_epilogue_op.h for
// a GEMM whose output is read as consecutive column ranges of the given widths (linears merged
// by passes/concat_linears.cpp, each original result a slice of the last dim). It computes what
// gemm_epilogue computes, in one of two forms:
//   merged: one GEMM over the whole weight;
//   apart:  one GEMM per part (the weight's rows, the bias's and the residual's columns of that
//           part), each writing its columns of the same output.
// With two parts or more, the first call of a shape outside a CUDA graph capture times both
// forms (runtime/gemm_autotune.h: L2 written over before each timed call; with candidates > 1
// each form on its own timed algorithms, else on the heuristic's first) and the process keeps
// the form keep_apart says. cuBLASLt's heuristic gives some shapes of either form a tile that
// loses to the other's by 2-8% of a model's call (docs/performance.md, "Merged or apart, timed").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace torchfuse {
namespace runtime {

// The host time of one more cuBLASLt call, as a launch-bound caller pays it: the driver's launch
// alone measured 3.3-5.1 us on the GPU machines (docs/performance.md).
constexpr double kApartCallHostUs = 5.0;

// Whether calls run apart, given each form's GPU us per call (negative: the form declined to
// run): apart when merged declined; else when apart ran, is at least kKeepFirstMargin faster,
// and saves more GPU time than its parts - 1 extra calls cost the host (so that a call bound by
// its launches does not lose in wall time what the GPU gains).
bool keep_apart(double merged_us, double apart_us, size_t parts);

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
