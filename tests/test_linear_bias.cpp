// The float32 linear-bias rewrite (passes/rewrite_linear_bias.cpp) on the CPU: which linears give
// their bias to the fused kernel after them and which keep it (explain()), the kernels the
// result becomes, and results against eager through the groups' ATen fallbacks.
#include "tests/cpu_fallbacks.h"
#include "tests/test_util.h"

namespace {

using tftest::count_occurrences;
using tftest::joined;

torchfuse::CompileOptions options(bool split = true) {
  torchfuse::CompileOptions o = tftest::quiet_options();
  o.split_linear_bias = split;
  o.cublaslt_gemms = false;  // the 16-bit linears below stay aten::linear
  return o;
}

// x [2, 5, 16], w [24, 16], b [24], r [2, 5, 24]: fresh random values.
std::vector<c10::IValue> inputs(at::ScalarType dtype = at::kFloat) {
  const auto o = torch::TensorOptions().dtype(dtype);
  return {torch::randn({2, 5, 16}, o), torch::randn({24, 16}, o), torch::randn({24}, o), torch::randn({2, 5, 24}, o)};
}

torchfuse::Explanation explain(const std::string& expr, at::ScalarType dtype = at::kFloat, bool split = true) {
  return torchfuse::compile(tftest::module_returning("x, w, b, r", expr), options(split)).explain(inputs(dtype));
}

bool has(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// A residual add and layer norm after the GEMM: the bias joins them, one kernel for the three.
TEST(LinearBias, JoinsTheResidualAddAndNormAfterIt) {
  const std::string expr = "torch.layer_norm(torch.linear(x, w, b) + r, [24])";
  const auto e = explain(expr);
  ASSERT_EQ(e.rewrites.size(), 1u) << joined(e.refused);
  EXPECT_NE(e.rewrites[0].find("-> aten::linear without bias + aten::add (%b.1)"), std::string::npos) << e.rewrites[0] << "\n" << e.rewritten_graph;
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::linear("), 1) << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("aten::linear(%x.1, %w.1, %b.1)"), std::string::npos) << e.rewritten_graph;
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_NE(e.kernels[0].num_ops, 0);

  // Against eager, on fresh inputs, the group on its ATen fallback.
  auto impl = tftest::on_cpu_fallbacks(tftest::module_returning("x, w, b, r", expr), options());
  for (int call = 0; call < 2; ++call) {
    const std::vector<c10::IValue> in = inputs();
    const at::Tensor got = impl->forward(in).toTensor(), want = impl->forward_eager(in).toTensor();
    EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max();
  }
}

// An activation alone after the GEMM (erf GELU, which no cuBLASLt epilogue computes): bias add
// and GELU become one kernel, where without the rewrite the GELU is a kernel of one op.
TEST(LinearBias, JoinsAnActivation) {
  const auto e = explain("torch.gelu(torch.linear(x, w, b))");
  ASSERT_EQ(e.rewrites.size(), 1u) << joined(e.refused);
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  const auto off = explain("torch.gelu(torch.linear(x, w, b))", at::kFloat, /*split=*/false);
  EXPECT_TRUE(off.rewrites.empty()) << joined(off.rewrites);
  // The GELU alone: a kernel of its own all the same (a lone GELU counts as two ops), the bias
  // in the GEMM.
  ASSERT_EQ(off.kernels.size(), 1u) << off.ir_after;
  EXPECT_EQ(off.kernels[0].description, "gelu");
}

// Where the bias stays: a result read by a non-elementwise op (its add would be a kernel of its
// own), 16-bit GEMMs (their bias epilogue measured as fast as the plain GEMM), and a linear
// without bias (nothing to move).
TEST(LinearBias, StaysWhereItWouldCostAKernelOrIsNotFloat32) {
  const auto viewed = explain("torch.linear(x, w, b).view(2, 5, 4, 6).transpose(1, 2) * r.view(2, 5, 4, 6).transpose(1, 2)");
  EXPECT_TRUE(viewed.rewrites.empty()) << joined(viewed.rewrites);
  EXPECT_TRUE(has(viewed.refused, "stays in the GEMM: its result is read by aten::view")) << joined(viewed.refused);

  const auto half = explain("torch.layer_norm(torch.linear(x, w, b) + r, [24])", at::kBFloat16);
  EXPECT_TRUE(half.rewrites.empty()) << joined(half.rewrites);
  EXPECT_NE(half.rewritten_graph.find("aten::linear(%x.1, %w.1, %b.1)"), std::string::npos) << half.rewritten_graph << joined(half.refused);

  const auto no_bias = explain("torch.linear(x, w) + r");
  EXPECT_TRUE(no_bias.rewrites.empty()) << joined(no_bias.rewrites);
  EXPECT_FALSE(has(no_bias.refused, "linear bias")) << joined(no_bias.refused);
}

}  // namespace
