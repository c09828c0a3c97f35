// The ops of issue 22 (item 2) on the GPU: each one, fused with its neighbours into one kernel
// (`op * 2 + relu(x)`), against eager (compare_with_eager: allclose, else judged against the
// float64 result) in f32, f16 and bf16, on random inputs with values at the ops'
// discontinuities mixed in (exact integers and halves for floor/ceil/round/trunc, zeros and
// signed zeros for sign, multiples of the divisor for fmod/remainder, softplus's threshold), and
// the integer forms on int32 and int64, where results must match exactly. Skipped without CUDA.
#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/gpu_view_util.h"
#include "tests/test_util.h"

namespace {

// Values at the discontinuities of floor, ceil, round (halves round to even), trunc, sign,
// fmod and remainder (multiples of 0.75 and 1.5), softplus's thresholds (x * beta == threshold
// at 0.5 and 20), hardtanh's, relu6's and hardswish's bounds (-3, 3, 6): exact in f16 and bf16.
const std::vector<double> kFloatSpecials = {-6.0, -4.5, -3.0, -2.5, -2.0, -1.5, -1.0, -0.75, -0.5, -0.0, 0.0, 0.5,
                                            0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.5, 6.0, 7.5, 20.0, -20.0, 0.25};

// randn * 3 of shape [64, 33] with `specials` in its first elements, as `dtype` on the GPU.
torch::Tensor float_input(c10::ScalarType dtype, const std::vector<double>& specials = kFloatSpecials) {
  auto t = torch::randn({64, 33}, torch::kDouble) * 3.0;
  auto flat = t.view({-1});
  for (size_t i = 0; i < specials.size(); ++i) flat[static_cast<int64_t>(i)] = specials[i];
  return t.to(dtype).to(torch::kCUDA);
}

// Integers in [-50, 50) with the edge values of sign and of division by 3 and 4 first.
torch::Tensor int_input(c10::ScalarType dtype) {
  auto t = torch::randint(-50, 50, {64, 33}, torch::kLong);
  const std::vector<int64_t> specials = {0, 1, -1, 2, -2, 3, -3, 4, -4, 6, -6, 7, -7, 12, -12, 49, -50};
  auto flat = t.view({-1});
  for (size_t i = 0; i < specials.size(); ++i) flat[static_cast<int64_t>(i)] = specials[i];
  return t.to(dtype).to(torch::kCUDA);
}

struct GpuCase {
  const char* args;  // x, y (a second input of the same kind), s (a 0-dim f32 tensor)
  const char* op;    // an expression of the arguments
};

std::vector<c10::IValue> inputs_for(const std::string& args, bool integer, c10::ScalarType dtype) {
  std::vector<c10::IValue> in;
  in.emplace_back(integer ? int_input(dtype) : float_input(dtype));
  if (args.find('y') != std::string::npos) {
    // The divisors of fmod and remainder: the specials again, reversed, so that x and y pair
    // up differently (multiples and exact halves of each other among them).
    std::vector<double> reversed(kFloatSpecials.rbegin(), kFloatSpecials.rend());
    in.emplace_back(integer ? int_input(dtype) : float_input(dtype, reversed));
  }
  if (args.find('s') != std::string::npos) in.emplace_back(torch::tensor(0.25, torch::TensorOptions().device(torch::kCUDA)));
  return in;
}

// `op * 2 + relu(x)` compiled into one kernel, matching eager on these inputs.
void expect_one_kernel_matching_eager(const GpuCase& c, bool integer, c10::ScalarType dtype) {
  const std::string label = std::string(c.op) + " on " + c10::toString(dtype);
  SCOPED_TRACE(label);
  const std::string expr = "(" + std::string(c.op) + ") * " + (integer ? "2" : "2.0") + " + torch.relu(x)";
  auto options = tftest::quiet_options();
  options.debug_poison_outputs = true;
  auto compiled = torchfuse::compile(tftest::module_returning(c.args, expr), options);
  const auto in = inputs_for(c.args, integer, dtype);
  compiled.forward(in);  // profiles, fuses and compiles
  const auto report = torchfuse::compare_with_eager(compiled, in);
  torch::cuda::synchronize();
  EXPECT_TRUE(report.passed()) << report.to_string() << compiled.graph_for(in);
  EXPECT_GT(compiled.stats().fused_calls, 0);
  EXPECT_EQ(compiled.kernels().size(), 1u) << compiled.graph_for(in);
  EXPECT_EQ(tftest::fusion_nodes(compiled.graph_for(in)), 1) << compiled.graph_for(in);
}

const std::vector<GpuCase> kFloatCases = {
    {"x", "torch.sin(x)"},
    {"x", "torch.cos(x)"},
    {"x", "torch.log1p(x)"},
    {"x", "torch.expm1(x)"},
    {"x", "torch.exp2(x)"},
    {"x", "torch.log2(x)"},
    {"x", "torch.log10(x)"},
    {"x", "torch.floor(x)"},
    {"x", "torch.ceil(x)"},
    {"x", "torch.round(x)"},
    {"x", "torch.round(x, decimals=2)"},
    {"x", "torch.round(x, decimals=-1)"},
    {"x", "torch.trunc(x)"},
    {"x", "torch.sign(x)"},
    {"x", "torch.square(x)"},
    {"x", "torch.leaky_relu(x, 0.2)"},
    {"x", "torch.leaky_relu(x)"},
    {"x", "torch.elu(x, 0.5, 1.5, 2.0)"},
    {"x", "torch.elu(x)"},
    {"x", "torch.selu(x)"},
    {"x", "torch.celu(x, 0.7)"},
    {"x", "torch.softplus(x, 2.0, 1.0)"},
    {"x", "torch.softplus(x)"},
    {"x", "torch.hardswish(x)"},
    {"x", "torch.hardsigmoid(x)"},
    {"x", "torch.hardtanh(x, -0.5, 2.0)"},
    {"x", "torch.relu6(x)"},
    {"x", "torch.mish(x)"},
    {"x", "torch.gelu(x, approximate='none')"},
    {"x", "torch.gelu(x, approximate='tanh')"},
    {"x, y", "torch.fmod(x, y)"},
    {"x", "torch.fmod(x, 0.75)"},
    {"x", "torch.fmod(x, -1.5)"},
    {"x, y", "torch.remainder(x, y)"},
    {"x", "torch.remainder(x, -0.75)"},
    {"x", "torch.remainder(x, 1.5)"},
    {"x, y", "torch.atan2(x, y)"},
    {"x, y", "torch.max(x, y)"},
    {"x, y", "torch.min(x, y)"},
    {"x, y", "torch.logical_xor(x > 0.5, y)"},
    {"x, y", "(x > 0.5) & (y < 0.0)"},
    {"x, y", "(x > 0.5) | (y < 0.0)"},
    {"x, y", "torch.bitwise_and(x > 0.5, y < 0.0)"},
    {"x, y", "torch.bitwise_or(x > 0.5, y < 0.0)"},
    {"x, y", "x.masked_fill(y > 0, 0.5)"},
    {"x, y, s", "x.masked_fill(y > 0, s)"},
    {"x, y", "torch.where(y > 0, x, 0.0)"},
    {"x, y", "torch.where(y > 0, 1.0, x)"},
    {"x", "torch.zeros_like(x)"},
    {"x", "torch.ones_like(x)"},
    {"x", "torch.full_like(x, 2.5)"},
    {"x", "torch.full_like(x, 0.1)"},  // rounded to the dtype by the fill
    // Discontinuities fed by fused values: eager rounds x * 3 to the 16-bit dtype first. (No
    // product feeds a sum before the discontinuity: NVRTC's FMA contraction would skip the
    // product's rounding in f32, where eager rounds it in its own kernel.)
    {"x", "torch.floor(x * 3.0) + torch.remainder(x, 0.75) * torch.sign(x * 3.0)"},
    {"x", "torch.round(torch.hardswish(x) * 4.0)"},
};

const std::vector<GpuCase> kIntCases = {
    {"x", "x ** 3"},
    {"x", "x ** 7"},  // wraps on int32, as eager's
    {"x", "x ** 0"},
    {"x", "torch.remainder(x, 3)"},
    {"x", "torch.remainder(x, -3)"},
    {"x", "torch.fmod(x, -3)"},
    {"x", "torch.fmod(x, 4)"},
    {"x", "torch.sign(x)"},
    {"x", "torch.floor(x)"},
    {"x", "torch.ceil(x)"},
    {"x", "torch.round(x)"},
    {"x", "torch.trunc(x)"},
    {"x", "torch.square(x)"},
    {"x", "torch.hardtanh(x, -2, 3)"},
    {"x", "torch.relu6(x)"},
    {"x, y", "torch.max(x, y)"},
    {"x, y", "torch.min(x, y)"},
    {"x", "torch.zeros_like(x)"},
    {"x", "torch.full_like(x, 7)"},
    {"x, y", "x.masked_fill(y > 0, 5)"},
    {"x, y", "torch.where(y > 0, x, 0)"},
};

TEST(OpsGpu, FloatOpsFuseAndMatchEagerInF32F16Bf16) {
  REQUIRE_GPU();
  for (const auto& c : kFloatCases) {
    for (const auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) expect_one_kernel_matching_eager(c, false, dtype);
  }
}

// A lone GELU (erf) is a kernel of its own (passes/prune_groups.h), matching eager in every float
// dtype.
TEST(OpsGpu, LoneGeluIsOneKernelMatchingEager) {
  REQUIRE_GPU();
  for (const auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    SCOPED_TRACE(std::string("gelu on ") + c10::toString(dtype));
    auto compiled = torchfuse::compile(tftest::module_returning("x", "torch.gelu(x)"), tftest::poisoned_options());
    const std::vector<c10::IValue> in{float_input(dtype)};
    compiled.forward(in);
    tftest::expect_one_fused_kernel(compiled, in, "gelu");
  }
}

TEST(OpsGpu, IntegerOpsFuseAndMatchEagerExactly) {
  REQUIRE_GPU();
  for (const auto& c : kIntCases) {
    for (const auto dtype : {c10::kInt, c10::kLong}) expect_one_kernel_matching_eager(c, true, dtype);
  }
}

// A fill number known only at run time (a float argument), in every float dtype.
TEST(OpsGpu, RunTimeFillNumbersMatchEager) {
  REQUIRE_GPU();
  for (const auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    auto options = tftest::quiet_options();
    options.debug_poison_outputs = true;
    auto compiled = torchfuse::compile(
        tftest::module_returning("x, v: float", "torch.relu(x) * torch.full_like(x, v) + x.masked_fill(x > 0, v)"), options);
    const std::vector<c10::IValue> in = {float_input(dtype), 0.3};
    compiled.forward(in);
    const auto report = torchfuse::compare_with_eager(compiled, in);
    torch::cuda::synchronize();
    EXPECT_TRUE(report.passed()) << report.to_string() << compiled.graph_for(in);
    EXPECT_GT(compiled.stats().fused_calls, 0);
    EXPECT_EQ(compiled.kernels().size(), 1u) << compiled.graph_for(in);
  }
}

// Inside reductions' prologues and epilogues: one kernel, matching eager.
TEST(OpsGpu, OpsInReductionGroupsMatchEager) {
  REQUIRE_GPU();
  const std::vector<const char*> exprs = {
      "torch.softplus(x).sum(-1)",
      "torch.floor(x - x.amax(-1, keepdim=True))",
      "torch.sin(torch.hardswish(x).mean(-1, keepdim=True) * x)",
      "torch.remainder(x, 0.75).sum(-1, keepdim=True) + torch.mish(x)",
  };
  for (const char* expr : exprs) {
    for (const auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      SCOPED_TRACE(std::string(expr) + " on " + c10::toString(dtype));
      auto options = tftest::quiet_options();
      options.debug_poison_outputs = true;
      auto compiled = torchfuse::compile(tftest::module_returning("x", expr), options);
      const std::vector<c10::IValue> in = {float_input(dtype)};
      compiled.forward(in);
      const auto report = torchfuse::compare_with_eager(compiled, in);
      torch::cuda::synchronize();
      EXPECT_TRUE(report.passed()) << report.to_string() << compiled.graph_for(in);
      EXPECT_GT(compiled.stats().fused_calls, 0);
      EXPECT_EQ(compiled.kernels().size(), 1u) << compiled.graph_for(in);
    }
  }
}

}  // namespace
