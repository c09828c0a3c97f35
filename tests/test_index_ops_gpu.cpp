// triu / tril, argmax / argmin, max / min with indices, repeat and repeat_interleave
// (passes/spell_index_ops.h) on the GPU: each graph in the planned number of kernels, against
// eager (compare_with_eager: indices exactly, values allclose else judged against the float64
// run) in f32, f16 and bf16, on fresh inputs, tied ones and rows holding NaN, at the compiled
// sizes and at others. Skipped without CUDA.
#include <limits>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/gpu_compare.h"
#include "tests/test_util.h"

namespace {

struct GpuIndexCase {
  const char* name;
  const char* args;
  const char* expr;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<int64_t>> other;
  size_t kernels;
};

// Shapes of the places these ops take in models: greedy decoding's argmax over a vocabulary, a
// causal triangle over attention scores, grouped heads repeated, a classifier's max and index.
const std::vector<GpuIndexCase> kCases = {
    {"argmax_vocab", "x", "torch.argmax(x * 1.25, -1)", {{8, 32000}}, {{3, 50257}}, 1},
    {"argmax_middle_keepdim", "x, y", "torch.argmax(x + y, 1, True)", {{4, 300, 64}, {64}}, {{2, 77, 64}, {64}}, 1},
    {"argmin_dim0", "x", "torch.argmin(torch.relu(x) - 0.5, 0)", {{1024, 96}}, {{33, 96}}, 1},
    {"argmax_every_element", "x", "torch.argmax(x * 2.0)", {{8193}}, {{5}}, 1},
    {"max_with_indices", "x, y", "torch.max(x * y, -1)[0] + torch.max(x * y, -1)[1]", {{512, 1000}, {1000}},
     {{7, 1000}, {1000}}, 1},
    {"triu_scores", "x, y", "torch.softmax(torch.triu(x * 0.125, 1) + y, -1)", {{2, 8, 128, 128}, {128}},
     {{1, 8, 77, 77}, {77}}, 1},
    {"tril_rect", "x", "torch.tril(torch.sigmoid(x), -3)", {{4, 100, 300}}, {{2, 9, 20}}, 1},
    {"repeat_interleave_heads", "k", "torch.repeat_interleave(k * 2.0, 4, 1)", {{2, 8, 128, 64}}, {{1, 8, 9, 64}}, 1},
    {"repeat", "x", "torch.relu(x).repeat(2, 1, 3) + 1.0", {{16, 50, 64}}, {{3, 5, 8}}, 1},
};

std::vector<c10::IValue> cuda_inputs(const std::vector<std::vector<int64_t>>& shapes, c10::ScalarType dtype, bool tied) {
  std::vector<c10::IValue> in;
  for (const auto& s : shapes) {
    at::Tensor t = torch::randn(s, torch::kDouble) * 2.0 + 0.5;
    if (tied) t = torch::round(t * 2.0).clamp(-4, 4) / 2.0;  // few distinct values: many ties
    in.emplace_back(t.to(dtype).to(torch::kCUDA));
  }
  return in;
}

TEST(IndexOpsGpu, OneKernelMatchingEagerInEveryDtype) {
  if (!tftest::have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    for (const auto& tc : kCases) {
      SCOPED_TRACE(std::string(tc.name) + " " + c10::toString(dtype));
      auto options = tftest::quiet_options();
      options.debug_poison_outputs = true;
      auto compiled = torchfuse::compile(tftest::module_returning(tc.args, tc.expr), options);
      const auto in = cuda_inputs(tc.shapes, dtype, false);
      tftest::expect_matches_eager(compiled, in);
      EXPECT_GT(compiled.stats().fused_calls, 0);
      EXPECT_EQ(compiled.kernels().size(), tc.kernels) << compiled.graph_for(in);
      tftest::expect_matches_eager(compiled, cuda_inputs(tc.shapes, dtype, true));
      tftest::expect_matches_eager(compiled, cuda_inputs(tc.other, dtype, false));
      tftest::expect_matches_eager(compiled, cuda_inputs(tc.other, dtype, true));
    }
  }
}

// NaN and infinities in some rows: the first NaN is the row's argmax and argmin, an infinity the
// extremum where no NaN is, along rows (row schedule) and along columns (column schedule).
TEST(IndexOpsGpu, NaNAndInfinitiesPickEagersIndex) {
  if (!tftest::have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const auto dtype : {c10::kFloat, c10::kBFloat16}) {
    auto x = torch::randn({64, 700}, torch::kDouble);
    x.index_put_({1, 400}, NAN);
    x.index_put_({1, 7}, NAN);
    x.index_put_({9, 699}, NAN);
    x.index_put_({20, 3}, std::numeric_limits<double>::infinity());
    x.index_put_({21, 650}, -std::numeric_limits<double>::infinity());
    x.index_put_({33, 0}, std::numeric_limits<double>::infinity());
    x.index_put_({33, 500}, std::numeric_limits<double>::infinity());
    const std::vector<c10::IValue> in = {x.to(dtype).to(torch::kCUDA)};
    for (const char* expr : {"torch.argmax(x * 1.0, -1)", "torch.argmin(x * 1.0, -1)", "torch.argmax(x * 1.0, 0)",
                             "torch.argmin(x * 1.0, 0)", "torch.max(x * 1.0, 1)[1]"}) {
      SCOPED_TRACE(std::string(expr) + " " + c10::toString(dtype));
      auto compiled = torchfuse::compile(tftest::module_returning("x", expr), tftest::quiet_options());
      tftest::expect_matches_eager(compiled, in);
      EXPECT_EQ(compiled.kernels().size(), 1u) << compiled.graph_for(in);
    }
  }
}

// Integer inputs: argmax of int64 and int32 values, triu of int64.
TEST(IndexOpsGpu, IntegerInputsMatchEager) {
  if (!tftest::have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const auto dtype : {c10::kLong, c10::kInt}) {
    const auto x = torch::randint(-50, 50, {96, 513}).to(dtype).to(torch::kCUDA);
    for (const char* expr : {"torch.argmax(x + 1, -1)", "torch.argmin(x * 2, 0)", "torch.triu(x + 1, 1)"}) {
      SCOPED_TRACE(std::string(expr) + " " + c10::toString(dtype));
      auto compiled = torchfuse::compile(tftest::module_returning("x", expr), tftest::quiet_options());
      tftest::expect_matches_eager(compiled, {x});
      EXPECT_EQ(compiled.kernels().size(), 1u) << compiled.graph_for({x});
    }
  }
}

}  // namespace
