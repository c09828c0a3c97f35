// cumsum fused by the row schedule's scans on the GPU: each graph in one kernel, against eager
// (compare_with_eager: integers exactly, floats allclose else judged against the float64 run) in
// f32, f16 and bf16, at the compiled sizes and at others (a warp's team and a block's), and a row
// too long for one block's registers running on the group's fallback for that call alone.
// Skipped without CUDA.
#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/gpu_compare.h"
#include "tests/test_util.h"

namespace {

struct GpuScanCase {
  const char* name;
  const char* args;
  const char* expr;
  std::vector<int64_t> shape;
  std::vector<int64_t> other;
  bool mask;  // the input is an int64 mask of 0s and 1s
};

// Shapes of the places cumsum takes in models: position ids from a padding mask, a sampler's
// cumulative probabilities over a vocabulary slice (compared with top_p after it: a comparison
// right at a threshold would compare roundings, so the probabilities themselves are checked),
// a running sum over a sequence, counts.
const std::vector<GpuScanCase> kCases = {
    {"position_ids", "m", "(m.cumsum(-1) - 1).masked_fill(m == 0, 1)", {8, 128}, {3, 2048}, true},
    {"plain_rows", "x", "torch.cumsum(x, -1)", {512, 1000}, {7, 24}, false},
    {"chain", "x", "torch.cumsum(torch.relu(x * 2.0), -1) * 0.5 + 1.0", {64, 4096}, {5, 333}, false},
    {"top_p", "x", "torch.softmax(x * 1.5, -1).cumsum(-1)", {32, 8192}, {4, 1000}, false},
    {"running_sum_3d", "x", "torch.sigmoid(x).cumsum(2)", {4, 16, 256}, {2, 3, 31}, false},
    {"count_positive", "x", "(x > 0).cumsum(-1)", {16, 777}, {2, 64}, false},
    {"scan_then_sum", "x", "torch.cumsum(x, -1).sum(-1) * 0.5", {256, 512}, {9, 40}, false},
    {"one_row", "x", "torch.cumsum(torch.tanh(x), 0)", {8192}, {100}, false},
    // Rows too long for registers, scanned in steps of a block; and a kernel compiled for short
    // rows called with long ones (a looped layout of its own).
    {"top_p_vocab", "x", "torch.softmax(x * 1.5, -1).cumsum(-1)", {16, 32000}, {3, 50257}, false},
    {"long_rows", "x", "torch.cumsum(torch.relu(x), -1) / x.abs().sum(-1, keepdim=True)", {4, 100000}, {9, 20001}, false},
    {"short_then_long", "x", "torch.cumsum(x * 0.5, -1) + x", {32, 512}, {2, 131072}, false},
    {"long_position_ids", "m", "(m.cumsum(-1) - 1).masked_fill(m == 0, 1)", {2, 65536}, {8, 128}, true},
};

std::vector<c10::IValue> cuda_inputs(const GpuScanCase& c, const std::vector<int64_t>& shape, c10::ScalarType dtype) {
  if (c.mask) {
    // Left padding as a batch of prompts has it: each row's first zeros, then ones.
    auto m = torch::ones(shape, torch::kLong);
    for (int64_t r = 0; r < shape[0]; ++r) m[r].slice(0, 0, (r * 7) % shape[1]).zero_();
    return {m.to(torch::kCUDA)};
  }
  return {(torch::randn(shape, torch::kDouble) + 0.25).to(dtype).to(torch::kCUDA)};
}

TEST(ScansGpu, OneKernelMatchingEagerInEveryDtype) {
  if (!tftest::have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    for (const auto& tc : kCases) {
      if (tc.mask && dtype != c10::kFloat) continue;  // an int64 mask: one dtype
      SCOPED_TRACE(std::string(tc.name) + " " + c10::toString(dtype));
      auto options = tftest::quiet_options();
      options.debug_poison_outputs = true;
      auto compiled = torchfuse::compile(tftest::module_returning(tc.args, tc.expr), options);
      const auto in = cuda_inputs(tc, tc.shape, dtype);
      tftest::expect_matches_eager(compiled, in);
      EXPECT_GT(compiled.stats().fused_calls, 0);
      EXPECT_EQ(compiled.kernels().size(), 1u) << compiled.graph_for(in);
      tftest::expect_matches_eager(compiled, cuda_inputs(tc, tc.shape, dtype));
      tftest::expect_matches_eager(compiled, cuda_inputs(tc, tc.other, dtype));
      EXPECT_EQ(compiled.stats().fallback_calls, 0);
    }
  }
}

// Integers add exactly: rows of int64 counts match eager bit for bit, in registers and looped.
// (Each shape is a specialization of its own: one kernel each.)
TEST(ScansGpu, IntegerScansAreExact) {
  if (!tftest::have_gpu()) GTEST_SKIP() << "no CUDA device";
  auto compiled = torchfuse::compile(tftest::module_returning("x", "(x * 3 - 1).cumsum(-1)"), tftest::quiet_options());
  size_t shapes = 0;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{64, 5000}, {3, 17}, {4, 70000}}) {
    const auto x = torch::randint(-1000, 1000, shape, torch::kLong).to(torch::kCUDA);
    const auto got = compiled.forward({x}).toTensor();
    const auto want = (x * 3 - 1).cumsum(-1);
    EXPECT_TRUE(torch::equal(got, want));
    EXPECT_EQ(compiled.kernels().size(), ++shapes);
  }
  EXPECT_EQ(compiled.stats().fallback_calls, 0);
}

// A call no layout can scan (a cumsum of a cumsum over rows too long for one block's registers:
// looped rows scan no scan's output; the compiled rows were short) runs the group's ATen ops for
// that call alone; the next short call runs fused again.
TEST(ScansGpu, RowsNoLayoutScansRunOnTheFallback) {
  if (!tftest::have_gpu()) GTEST_SKIP() << "no CUDA device";
  auto compiled = torchfuse::compile(tftest::module_returning("x", "torch.cumsum(torch.cumsum(x * 2.0, -1), -1) + 1.0"),
                                     tftest::quiet_options());
  const auto small = torch::randn({8, 1000}, torch::kCUDA);
  tftest::expect_matches_eager(compiled, {small});
  const auto fused_before = compiled.stats().fused_calls;
  const auto huge = torch::randn({2, 1 << 20}, torch::kCUDA);
  tftest::expect_matches_eager(compiled, {huge});
  EXPECT_GT(compiled.stats().fallback_calls, 0);
  tftest::expect_matches_eager(compiled, {small});
  EXPECT_GT(compiled.stats().fused_calls, fused_before);
}

}  // namespace
