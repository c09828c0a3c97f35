// Shared by the GPU tests of torchfuse's cuBLASLt calls (test_gemm_epilogues_gpu.cpp,
// test_gemm_parts_gpu.cpp): operands of one GEMM call, and a fixture that turns TF32 off so that
// float32 results are compared at full precision.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <ATen/Context.h>
#include <torch/torch.h>

#include "tests/test_util.h"

namespace tftest {

// x [lead..., K], w [N, K] scaled so that outputs are of order 1, b [N], r [lead..., N], on the GPU.
struct GemmTestOperands {
  at::Tensor x, w, b, r;
};

inline GemmTestOperands gemm_operands(const std::vector<int64_t>& lead, int64_t k, int64_t n, c10::ScalarType dtype) {
  const auto o = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
  std::vector<int64_t> xs = lead, rs = lead;
  xs.push_back(k);
  rs.push_back(n);
  return {torch::randn(xs, o), (torch::randn({n, k}, o.dtype(torch::kFloat)) / std::sqrt(double(k))).to(dtype),
          torch::randn({n}, o), torch::randn(rs, o)};
}

// Eager's ops for act(x @ w^T + b + r) in the dtype (b, r undefined where absent; act "none",
// "relu" or "gelu_tanh"): what the GEMM rewrites replace.
inline at::Tensor gemm_eager(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& r,
                             const std::string& act) {
  at::Tensor y = b.defined() ? torch::linear(x, w, b) : torch::linear(x, w);
  if (r.defined()) y = y + r;
  if (act == "relu") return torch::relu(y);
  if (act == "gelu_tanh") return torch::gelu(y, "tanh");
  return y;
}

// Skips without a GPU; float32 GEMMs without TF32 while the test runs.
class FullPrecisionF32 : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    tf32_ = at::globalContext().allowTF32CuBLAS();
    at::globalContext().setAllowTF32CuBLAS(false);
  }
  void TearDown() override {
    if (tftest::have_gpu()) at::globalContext().setAllowTF32CuBLAS(tf32_);
  }
  bool tf32_ = false;
};

}  // namespace tftest
