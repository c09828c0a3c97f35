// The ops of issue 22 (item 2) without a GPU: each converts to IR (no node of its kind stays
// Opaque), fuses with its neighbours into one group (`relu(x) * op(x) + 1` is one kernel), and
// that kernel NVRTC-compiles for sm_80 and sm_90, in f32 and bf16 (LibTorch's CPU kernels lack
// fp16 for some ops; the GPU tests in test_ops_gpu.cpp cover fp16) and, for the ops that take
// them, in integer types. Ops with edge cases eager rejects or a kernel could not match stay in
// ATen with a reason.
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/torch.h>

#include "src/frontend.h"
#include "tests/test_util.h"

namespace {

using tftest::contains_in_order;
using tftest::count_occurrences;

struct OpCase {
  const char* name;
  const char* args;   // forward's arguments: x (and y, s)
  const char* expr;   // the op, reading the arguments
  const char* aten;   // the TorchScript kind that must not stay Opaque ("aten::sin")
  bool integer = false;  // run on int32 and int64 inputs instead of f32 and bf16
  bool f32_only = false;  // LibTorch 1.13's CPU kernel lacks bf16 (mish_cpu): profiled in f32 only
};
// GoogleTest prints the case by its expression (not the struct's bytes, pointers included).
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.expr; }

std::vector<OpCase> op_cases() {
  return {
      {"sin", "x", "torch.sin(x)", "aten::sin"},
      {"cos", "x", "torch.cos(x)", "aten::cos"},
      {"log1p", "x", "torch.log1p(x)", "aten::log1p"},
      {"expm1", "x", "torch.expm1(x)", "aten::expm1"},
      {"exp2", "x", "torch.exp2(x)", "aten::exp2"},
      {"log2", "x", "torch.log2(x)", "aten::log2"},
      {"log10", "x", "torch.log10(x)", "aten::log10"},
      {"floor", "x", "torch.floor(x)", "aten::floor"},
      {"ceil", "x", "torch.ceil(x)", "aten::ceil"},
      {"round", "x", "torch.round(x)", "aten::round"},
      {"round_decimals", "x", "torch.round(x, decimals=2)", "aten::round"},
      {"round_negative_decimals", "x", "torch.round(x, decimals=-1)", "aten::round"},
      {"trunc", "x", "torch.trunc(x)", "aten::trunc"},
      {"sign", "x", "torch.sign(x)", "aten::sign"},
      {"square", "x", "torch.square(x)", "aten::square"},
      {"leaky_relu", "x", "torch.leaky_relu(x, 0.2)", "aten::leaky_relu"},
      {"leaky_relu_default", "x", "torch.leaky_relu(x)", "aten::leaky_relu"},
      {"elu", "x", "torch.elu(x, 0.5, 1.5, 2.0)", "aten::elu"},
      {"elu_default", "x", "torch.elu(x)", "aten::elu"},
      {"selu", "x", "torch.selu(x)", "aten::selu"},
      {"celu", "x", "torch.celu(x, 0.7)", "aten::celu"},
      {"softplus", "x", "torch.softplus(x, 2.0, 1.0)", "aten::softplus"},
      {"softplus_default", "x", "torch.softplus(x)", "aten::softplus"},
      {"hardswish", "x", "torch.hardswish(x)", "aten::hardswish"},
      {"hardsigmoid", "x", "torch.hardsigmoid(x)", "aten::hardsigmoid"},
      {"hardtanh", "x", "torch.hardtanh(x, -0.5, 2.0)", "aten::hardtanh"},
      {"relu6", "x", "torch.relu6(x)", "aten::relu6"},
      {"mish", "x", "torch.mish(x)", "aten::mish", false, true},
      {"gelu_none", "x", "torch.gelu(x, approximate='none')", "aten::gelu"},
      {"gelu_tanh", "x", "torch.gelu(x, approximate='tanh')", "aten::gelu"},
      {"fmod", "x, y", "torch.fmod(x, y)", "aten::fmod"},
      {"fmod_scalar", "x", "torch.fmod(x, 0.7)", "aten::fmod"},
      {"remainder", "x, y", "torch.remainder(x, y)", "aten::remainder"},
      {"remainder_scalar", "x", "torch.remainder(x, -0.7)", "aten::remainder"},
      {"atan2", "x, y", "torch.atan2(x, y)", "aten::atan2"},
      {"max_binary", "x, y", "torch.max(x, y)", "aten::max"},
      {"min_binary", "x, y", "torch.min(x, y)", "aten::min"},
      {"logical_xor", "x, y", "torch.logical_xor(x > 0.5, y)", "aten::logical_xor"},
      {"bool_and", "x, y", "((x > 0.5) & (y < 0.0))", "aten::__and__"},
      {"bool_or", "x, y", "((x > 0.5) | (y < 0.0))", "aten::__or__"},
      {"bitwise_and_bool", "x, y", "torch.bitwise_and(x > 0.5, y < 0.0)", "aten::bitwise_and"},
      {"bitwise_or_bool", "x, y", "torch.bitwise_or(x > 0.5, y < 0.0)", "aten::bitwise_or"},
      {"masked_fill_scalar", "x, y", "x.masked_fill(y > 0, 0.5)", "aten::masked_fill"},
      {"masked_fill_tensor", "x, y, s", "x.masked_fill(y > 0, s)", "aten::masked_fill"},
      {"where_scalar_other", "x, y", "torch.where(y > 0, x, 0.0)", "aten::where"},
      {"where_scalar_self", "x, y", "torch.where(y > 0, 1.0, x)", "aten::where"},
      {"zeros_like", "x", "torch.zeros_like(x)", "aten::zeros_like"},
      {"ones_like", "x", "torch.ones_like(x)", "aten::ones_like"},
      {"full_like", "x", "torch.full_like(x, 2.5)", "aten::full_like"},
      // Integer inputs.
      {"int_pow", "x", "x ** 3", "aten::pow", true},
      {"int_remainder", "x", "torch.remainder(x, 3)", "aten::remainder", true},
      {"int_remainder_negative", "x", "torch.remainder(x, -3)", "aten::remainder", true},
      {"int_fmod", "x", "torch.fmod(x, -3)", "aten::fmod", true},
      {"int_sign", "x", "torch.sign(x)", "aten::sign", true},
      {"int_floor", "x", "torch.floor(x)", "aten::floor", true},
      {"int_round", "x", "torch.round(x)", "aten::round", true},
      {"int_hardtanh", "x", "torch.hardtanh(x, -2, 3)", "aten::hardtanh", true},
      {"int_max_binary", "x, y", "torch.max(x, y)", "aten::max", true},
      {"int_full_like", "x", "torch.full_like(x, 7)", "aten::full_like", true},
      {"int_masked_fill", "x, y", "x.masked_fill(y > 0, 5)", "aten::masked_fill", true},
  };
}

// Inputs for the case's arguments: x and y of shape [8, 64] (values around the op's
// discontinuities do not matter here: nothing runs), s a 0-dim f32 tensor.
std::vector<c10::IValue> inputs_for(const OpCase& c, c10::ScalarType dtype) {
  std::vector<c10::IValue> in;
  const std::string args = c.args;
  auto make = [&]() {
    return c.integer ? torch::randint(-20, 20, {8, 64}, torch::TensorOptions().dtype(dtype)) : torch::randn({8, 64}).to(dtype);
  };
  in.emplace_back(make());
  if (args.find('y') != std::string::npos) in.emplace_back(make());
  if (args.find('s') != std::string::npos) in.emplace_back(torch::tensor(0.25));
  return in;
}

class Ops : public ::testing::TestWithParam<OpCase> {};

TEST_P(Ops, ConvertsFusesIntoOneGroupAndCompiles) {
  const OpCase& c = GetParam();
  const auto dtypes = c.integer    ? std::vector<c10::ScalarType>{c10::kInt, c10::kLong}
                      : c.f32_only ? std::vector<c10::ScalarType>{c10::kFloat}
                                   : std::vector<c10::ScalarType>{c10::kFloat, c10::kBFloat16};
  auto m = tftest::module_returning(c.args, std::string("torch.relu(x) * ") + c.expr + " + 1");
  for (const auto dtype : dtypes) {
    const auto in = inputs_for(c, dtype);
    for (const char* arch : {"sm_80", "sm_90"}) {
      SCOPED_TRACE(std::string(c10::toString(dtype)) + " " + arch);
      auto options = tftest::quiet_options();
      options.offline_arch = arch;
      const auto e = torchfuse::compile(m, options).explain(in, /*compile_kernels=*/true);
      // Converted: no node of the op's kind stays Opaque (Opaque nodes print their ATen name).
      EXPECT_EQ(count_occurrences(e.ir_before, c.aten), 0) << e.ir_before;
      ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
      EXPECT_EQ(tftest::fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
      ASSERT_EQ(e.cubin_bytes.size(), 1u);
      EXPECT_GT(e.cubin_bytes[0], 0u) << e.kernels[0].source;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOp, Ops, ::testing::ValuesIn(op_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return std::string(info.param.name); });

// The new ops fuse into reductions' prologues and epilogues as other pointwise ops do: one kernel.
TEST(OpsInReductions, PrologueAndEpilogueFuseIntoOneKernel) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"softplus_sum", "torch.softplus(x).sum(-1)"},
      {"floor_of_shifted_max", "torch.floor(x - x.amax(-1, keepdim=True))"},
      {"hardswish_mean_sin", "torch.sin(torch.hardswish(x).mean(-1, keepdim=True) * x)"},
      {"remainder_sum", "torch.remainder(x, 0.5).sum(-1, keepdim=True) + torch.mish(x)"},
  };
  for (const auto& [name, expr] : cases) {
    for (const auto dtype : {c10::kFloat, c10::kBFloat16}) {
      SCOPED_TRACE(std::string(name) + " " + c10::toString(dtype));
      auto options = tftest::quiet_options();
      options.offline_arch = "sm_80";
      const auto e = torchfuse::compile(tftest::module_returning("x", expr), options)
                         .explain({torch::randn({16, 256}).to(dtype)}, /*compile_kernels=*/true);
      ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
      EXPECT_EQ(count_occurrences(e.ir_before, "aten::"), 0) << e.ir_before;
      ASSERT_EQ(e.cubin_bytes.size(), 1u);
      EXPECT_GT(e.cubin_bytes[0], 0u);
    }
  }
}

// The IR each composite becomes: ATen's formula, with its constants in the math type.
TEST(OpsIr, CompositesDecomposeAsAtenComputes) {
  auto ir = [](const std::string& expr, c10::ScalarType dtype = c10::kFloat) {
    return torchfuse::compile(tftest::module_returning("x", expr), tftest::quiet_options())
        .explain({torch::randn({4, 8}).to(dtype)})
        .ir_before;
  };
  EXPECT_TRUE(contains_in_order(ir("torch.leaky_relu(x, 0.2)"), {"mul(%0, 0.2000000029802322", "gt[compute=f32](%0, 0.0)", "where("}));
  // elu: x > 0 ? x * scale : expm1(x * input_scale) * (alpha * scale).
  EXPECT_TRUE(contains_in_order(ir("torch.elu(x, 0.5, 1.5, 2.0)"),
                                {"mul(%0, 1.5)", "mul(%0, 2.0)", "expm1(", "mul(%", ", 0.75)", "gt", "where("}));
  // softplus: x * beta > threshold ? x : log1p(exp(x * beta)) / beta.
  EXPECT_TRUE(contains_in_order(ir("torch.softplus(x, 2.0, 1.0)"),
                                {"mul(%0, 2.0)", "gt", ", 1.0)", "exp(", "log1p(", "div(", ", 2.0)", "where("}));
  // hardswish: x * min(max(x + 3, 0), 6) * (1.0f / 6.0f).
  EXPECT_TRUE(contains_in_order(ir("torch.hardswish(x)"),
                                {"add(%0, 3.0)", "clamp_min(", ", 0.0)", "clamp_max(", ", 6.0)", "mul(%0, %", "mul(%", ", 0.16666667163372"}));
  EXPECT_TRUE(contains_in_order(ir("torch.mish(x)"), {"exp(%0)", "log1p(", "tanh(", "mul(%0, %"}));
  EXPECT_TRUE(contains_in_order(ir("torch.relu6(x)"), {"clamp_min(%0, 0.0)", "clamp_max(%", ", 6.0)"}));
  EXPECT_TRUE(contains_in_order(ir("torch.round(x, decimals=2)"), {"mul(%0, 100.0)", "round(", "div(%", ", 100.0)"}));
  EXPECT_TRUE(contains_in_order(ir("torch.zeros_like(x) + x"), {"fill(%0, 0)", "add("}));
  EXPECT_TRUE(contains_in_order(ir("torch.max(x, x * 2.0)"), {"mul(", "maximum(%0, %"}));
}

// The generated CUDA for the primitives: libm calls on float, eager's integer forms on integers.
TEST(OpsCodegen, PrimitivesEmitLibmAndIntegerForms) {
  auto source = [](const std::string& args, const std::string& expr, std::vector<c10::IValue> in) {
    auto options = tftest::quiet_options(1);
    const auto e = torchfuse::compile(tftest::module_returning(args, expr), options).explain(in);
    return e.kernels.empty() ? std::string() : e.kernels[0].source;
  };
  const auto x = torch::randn({8, 64});
  EXPECT_TRUE(contains_in_order(source("x", "torch.round(torch.sin(x)) + torch.log1p(x)", {x}),
                                {"sinf(", "rintf(", "log1pf("}));
  EXPECT_TRUE(contains_in_order(source("x, y", "torch.remainder(x, y) + torch.fmod(x, y)", {x, x}),
                                {"tf_remainder(", "fmodf("}));
  const auto i = torch::randint(-9, 9, {8, 64}, torch::kInt);
  EXPECT_TRUE(contains_in_order(source("x", "x ** 3 + torch.remainder(x, 3) + torch.fmod(x, 4)", {i}),
                                {"tf_powi(", ", 3LL)", "tf_remainder(", "% (int)4"}));
  // A bf16 fill rounds its number to bf16.
  EXPECT_TRUE(contains_in_order(source("x", "torch.full_like(x, 0.1) * x", {x.to(c10::kBFloat16)}),
                                {"tf_round_bf16(0.1f)"}));
}

// A fill with a number known only at run time (a float argument): the kernel takes it as a
// parameter and, for a 16-bit output, rounds it to that dtype as eager's fill does.
TEST(OpsCodegen, RunTimeFillNumbersAreKernelParametersRoundedToTheDtype) {
  auto m = tftest::module_returning("x, v: float", "torch.relu(x) * torch.full_like(x, v) + x.masked_fill(x > 0, v)");
  auto options = tftest::quiet_options();
  options.offline_arch = "sm_80";
  const auto e = torchfuse::compile(m, options).explain({torch::randn({8, 64}).to(c10::kBFloat16), 0.3},
                                                        /*compile_kernels=*/true);
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_EQ(count_occurrences(e.ir_before, "aten::"), 0) << e.ir_before;
  EXPECT_EQ(count_occurrences(e.kernels[0].source, "tf_round_bf16((float)(in1))"), 2) << e.kernels[0].source;
  ASSERT_EQ(e.cubin_bytes.size(), 1u);
  EXPECT_GT(e.cubin_bytes[0], 0u);
}

// What stays in ATen, with the reason (Conversion::declined).
std::vector<std::string> declined(const std::string& source, const std::vector<c10::IValue>& inputs) {
  auto unit = torch::jit::compile(source);
  auto graph = torch::jit::toGraphFunction(unit->get_function("f")).graph()->copy();
  torch::jit::ConstantPropagation(graph);
  const torchfuse::Profile profile = torchfuse::profile_graph(graph, inputs);
  return torchfuse::convert_to_ir(*graph, profile).declined;
}

TEST(OpsDeclined, EdgeCasesStayInAtenWithAReason) {
  const auto i = torch::randint(1, 9, {8}, torch::kInt);
  auto one = [](const std::vector<std::string>& d) { return d.size() == 1 ? d[0] : "(" + std::to_string(d.size()) + " entries)"; };
  // An integer divisor that may be zero.
  EXPECT_TRUE(contains_in_order(one(declined("def f(x, y):\n    return torch.remainder(x, y)\n", {i, i})),
                                {"aten::remainder", "stays in ATen", "only integer division by a nonzero constant is fused"}));
  EXPECT_TRUE(contains_in_order(one(declined("def f(x, y):\n    return torch.fmod(x, y)\n", {i, i})),
                                {"aten::fmod", "only integer division by a nonzero constant is fused"}));
  // Integer tensor powers.
  EXPECT_TRUE(contains_in_order(one(declined("def f(x, y):\n    return x ** y\n", {i, i})),
                                {"aten::pow", "only integer tensors to a constant power >= 0 are fused"}));
  // A run-time activation parameter.
  EXPECT_TRUE(contains_in_order(one(declined("def f(x, a: float):\n    return torch.leaky_relu(x, a)\n", {torch::randn({8}), 0.3})),
                                {"aten::leaky_relu", "negative_slope is not a constant number"}));
  // Activations on integers (eager rejects most; those it takes stay in ATen).
  EXPECT_TRUE(declined("def f(x):\n    return torch.relu6(x) + torch.floor(x) + x ** 2\n", {i}).empty());
}

}  // namespace
