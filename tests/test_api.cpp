// The public API without a GPU: eager fallback on CPU, tracing, compare_with_eager, errors, logs.
#include <torch/torch.h>

#include "tests/test_util.h"

using tftest::module_returning;

namespace {

TEST(Api, CpuInputsRunEagerAndMatch) {
  auto m = module_returning("x, b", "torch.gelu(x + b) * 0.5 + x");
  auto c = torchfuse::compile(m);
  const auto x = torch::randn({16, 32});
  const auto b = torch::randn({32});
  const auto report = torchfuse::compare_with_eager(c, {x, b});
  EXPECT_TRUE(report.passed()) << report.to_string();
  const auto expected = torch::gelu(x + b) * 0.5 + x;
  EXPECT_TRUE(torch::allclose(c.forward({x, b}).toTensor(), expected));
  EXPECT_GE(c.stats().eager_calls, 2);
  EXPECT_EQ(c.stats().fused_calls, 0);
}

TEST(Api, WrongArityIsAClearError) {
  auto c = torchfuse::compile(module_returning("x, y", "x + y"));
  try {
    c.forward({torch::randn({2})});
    FAIL();
  } catch (const torchfuse::Error& e) {
    EXPECT_NE(std::string(e.what()).find("expects 2 inputs, got 1"), std::string::npos) << e.what();
  }
}

TEST(Api, TracesCallablesAndNnModules) {
  torch::Tensor w = torch::randn({8});
  torchfuse::TensorFn fn = [w](const std::vector<torch::Tensor>& in) -> std::vector<torch::Tensor> {
    return {torch::sigmoid(in[0] * w) + in[1]};
  };
  const auto x = torch::randn({4, 8});
  const auto y = torch::randn({4, 8});
  auto c = torchfuse::compile(fn, {x, y});
  const auto e = c.explain({x, y});
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_EQ(e.kernels[0].description, "mul -> sigmoid -> add");
  EXPECT_TRUE(torch::allclose(c.forward({x, y}).toTensor(), torch::sigmoid(x * w) + y));

  torch::nn::Sequential seq(torch::nn::Linear(8, 8), torch::nn::GELU(), torch::nn::Tanh());
  auto cn = torchfuse::compile_nn(seq, {x});
  EXPECT_TRUE(torch::allclose(cn.forward({x}).toTensor(), seq->forward(x), 1e-5, 1e-6));
  EXPECT_EQ(cn.explain({x}).kernels.size(), 1u) << cn.explain({x}).ir_after;
}

TEST(Api, CompareReportsErrorsAndVerdicts) {
  const auto a = torch::tensor({1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN()});
  const auto b = torch::tensor({1.0f, 2.1f, std::numeric_limits<float>::quiet_NaN()});
  const auto bad = torchfuse::compare_outputs(a, b);
  ASSERT_EQ(bad.outputs.size(), 1u);
  EXPECT_FALSE(bad.passed());
  EXPECT_NEAR(bad.outputs[0].max_abs_error, 0.1, 1e-6);
  EXPECT_NE(bad.to_string().find("FAIL"), std::string::npos);
  const auto good = torchfuse::compare_outputs(c10::ivalue::Tuple::create({a, a}), c10::ivalue::Tuple::create({a, a}));
  EXPECT_TRUE(good.passed()) << good.to_string();
  EXPECT_EQ(good.outputs.size(), 2u);
  const auto nan_moved = torchfuse::compare_outputs(a, torch::tensor({1.0f, std::nanf(""), 3.0f}));
  EXPECT_FALSE(nan_moved.passed());
}

TEST(Api, ToleranceDependsOnDtype) {
  EXPECT_LT(torchfuse::default_tolerance(c10::kFloat).rtol, torchfuse::default_tolerance(c10::kHalf).rtol);
  EXPECT_LT(torchfuse::default_tolerance(c10::kHalf).rtol, torchfuse::default_tolerance(c10::kBFloat16).rtol);
  EXPECT_EQ(torchfuse::default_tolerance(c10::kLong).rtol, 0.0);
}

TEST(Api, OutputCodeLogPrintsTheKernel) {
  torchfuse::CompileOptions o;
  o.logs = "output_code,graph,fusion";
  auto c = torchfuse::compile(module_returning("x", "torch.relu(x) * 2.0"), o);
  testing::internal::CaptureStderr();
  c.explain({torch::randn({4})});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("generated kernel tf_fused_0"), std::string::npos) << err;
  EXPECT_NE(err.find("IR before fusion"), std::string::npos) << err;
}

TEST(Api, SilentByDefault) {
  auto c = torchfuse::compile(module_returning("x", "torch.relu(x) * 2.0"));
  testing::internal::CaptureStderr();
  c.explain({torch::randn({4})});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace

namespace {

TEST(Api, GraphsThatWriteTheirInputsRunEager) {
  auto c = torchfuse::compile(tftest::module_from("def forward(self, x):\n    x.add_(1.0)\n    return x * 2.0\n"));
  const auto x = torch::randn({4});
  const auto expected = (x + 1.0) * 2.0;
  auto y = x.clone();
  EXPECT_TRUE(torch::allclose(c.forward({y}).toTensor(), expected));
  EXPECT_TRUE(torch::allclose(y, x + 1.0));  // written once, not twice
}

}  // namespace

namespace {

TEST(Api, ReferenceCheckJudgesAgainstFloat64) {
  // Eager lost the small value to rounding; the compiled result kept it: closer to float64, passes.
  const auto eager = torch::tensor({1.0f, 0.0f});
  const auto ref = torch::tensor({1.0, 0.01}, torch::kDouble);
  const auto good = torchfuse::compare_outputs_with_reference(eager, torch::tensor({1.0f, 0.01f}), ref);
  EXPECT_TRUE(good.passed()) << good.to_string();
  EXPECT_TRUE(good.outputs[0].has_reference);
  EXPECT_FALSE(torchfuse::compare_outputs(eager, torch::tensor({1.0f, 0.01f})).passed());
  // Farther from float64 than eager's own error allows: fails.
  const auto bad = torchfuse::compare_outputs_with_reference(eager, torch::tensor({1.0f, 0.05f}), ref);
  EXPECT_FALSE(bad.passed()) << bad.to_string();
}

TEST(Api, CompareWithEagerRunsTheFloat64Reference) {
  auto c = torchfuse::compile(tftest::module_returning("x", "torch.tanh(x) * 2.0 + 1.0"));
  const auto report = torchfuse::compare_with_eager(c, {torch::randn({16})});
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_TRUE(report.outputs[0].has_reference);
  EXPECT_TRUE(report.passed()) << report.to_string();
}

}  // namespace

namespace {

TEST(Api, ATensorWhereANumberIsExpectedIsAClearError) {
  auto c = torchfuse::compile(tftest::module_from("def forward(self, x, s: float):\n    return x * s\n"));
  try {
    c.forward({torch::randn({4}), torch::randn({4})});
    FAIL() << "no error";
  } catch (const torchfuse::Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 1 ('s') must be a float, got Tensor"), std::string::npos) << e.what();
  }
  try {
    c.forward({2.0, 2.0});
    FAIL() << "no error";
  } catch (const torchfuse::Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 ('x") , std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("must be a Tensor, got Double"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(torch::allclose(c.forward({torch::ones({4}), 2}).toTensor(), torch::full({4}, 2.0)));
}

}  // namespace

namespace {

// Graphs of scripted functions (torch.jit.script(fn).graph), unlike frozen modules, keep
// inlined torch.nn.functional helpers' Python branches (F.silu(a) becomes `prim::If(False)`
// around aten::silu) and build reduction dims with prim::ListConstruct. compile_graph folds both,
// so such graphs fuse as the same code in a module does.
TEST(Api, ScriptedFunctionGraphsFuseAsModulesDo) {
  auto swiglu = torchfuse::compile_graph(tftest::scripted_function_graph("swiglu"));
  const auto a = torch::randn({8, 32});
  const auto b = torch::randn({8, 32});
  const auto e = swiglu.explain({a, b});
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_EQ(e.kernels[0].description, "silu -> mul");
  EXPECT_TRUE(torch::allclose(swiglu.forward({a, b}).toTensor(), torch::silu(a) * b));

  auto softmax = torchfuse::compile_graph(tftest::scripted_function_graph("softmax"));
  const auto s = softmax.explain({a});
  ASSERT_EQ(s.kernels.size(), 1u) << s.ir_after;
  EXPECT_EQ(s.kernels[0].description, "reduce_max -> sub -> exp -> reduce_sum -> div");
  EXPECT_TRUE(torch::allclose(softmax.forward({a}).toTensor(), torch::softmax(a, 1), 1e-5, 1e-6));
}

}  // namespace
