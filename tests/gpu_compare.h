// What the GPU tests of whole modules share: fresh random CUDA inputs and a compiled module checked
// against eager with compare_with_eager (allclose, else judged against the float64 run).
#pragma once

#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/test_util.h"

namespace tftest {

// One input of `shape` in `dtype` on the GPU: normal values, scaled by 2 and shifted by 0.5, drawn in
// float64.
inline std::vector<c10::IValue> cuda_input(const std::vector<int64_t>& shape, c10::ScalarType dtype) {
  return {(torch::randn(shape, torch::kDouble) * 2.0 + 0.5).to(dtype).to(torch::kCUDA)};
}

// Runs the compiled module on `in`, compares it with eager there, and returns its output.
inline c10::IValue expect_matches_eager(torchfuse::CompiledModule& compiled, const std::vector<c10::IValue>& in) {
  c10::IValue out = compiled.forward(in);
  const auto report = torchfuse::compare_with_eager(compiled, in);
  torch::cuda::synchronize();
  EXPECT_TRUE(report.passed()) << report.to_string() << compiled.graph_for(in);
  return out;
}

}  // namespace tftest
