// The convolution-bias rewrite (passes/rewrite_conv_bias.cpp) and in-place ops made functional
// (src/prepare_graph.cpp) on the CPU: a ResNet block's frozen conv + batch norm + ReLU and its
// `y += x` residual become the convolutions and one kernel each; which convolutions keep their
// bias (explain()); results against eager through the groups' ATen fallbacks.
#include "tests/conv_modules.h"
#include "tests/cpu_fallbacks.h"
#include "tests/test_util.h"

namespace {

using tftest::count_occurrences;
using tftest::any_line_has;
using tftest::joined;

torchfuse::CompileOptions options(bool split = true) {
  torchfuse::CompileOptions o = tftest::quiet_options();
  o.split_conv_bias = split;
  o.channels_last_convs = false;  // tests/test_channels_last.cpp covers that rewrite
  return o;
}

// conv + ReLU, then conv + in-place residual add + ReLU: each bias joins its readers, the add_
// runs as add, and the block is two convolutions and two kernels.
TEST(ConvBias, ResidualBlockBecomesTwoKernels) {
  const auto m = tftest::conv_block_module(tftest::kResidualBlock, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_EQ(e.rewrites.size(), 2u) << joined(e.rewrites) << joined(e.refused);
  EXPECT_TRUE(any_line_has(e.rewrites, "without bias + aten::add, fused with its readers")) << joined(e.rewrites);
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::add_"), 0) << e.rewritten_graph;
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::conv2d("), 2) << e.rewritten_graph;
  ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after << joined(e.refused);
  tftest::expect_fallbacks_match_eager(m, options(), {2, 8, 6, 6});
  tftest::expect_fallbacks_match_eager(m, options(), {1, 8, 5, 9});
}

// freeze() folds the batch norm into the convolution's bias; that bias then joins the ReLU.
TEST(ConvBias, FoldedBatchNormJoinsTheRelu) {
  const auto m = tftest::conv_block_module(tftest::kConvBatchNormRelu, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::batch_norm"), 0) << e.rewritten_graph;
  EXPECT_EQ(e.rewrites.size(), 1u) << joined(e.rewrites) << joined(e.refused);
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << joined(e.refused);
  tftest::expect_fallbacks_match_eager(m, options(), {2, 8, 6, 6});
}

// A depthwise convolution read through a permute by a layer norm (ConvNeXt): the bias is added
// after the permute, inside the norm's kernel.
TEST(ConvBias, JoinsTheNormAfterAPermute) {
  const auto m = tftest::conv_block_module(tftest::kConvNextBlock, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  ASSERT_EQ(e.rewrites.size(), 1u) << joined(e.rewrites) << joined(e.refused);
  EXPECT_TRUE(any_line_has(e.rewrites, "without bias + aten::add after its permute, fused with its readers")) << joined(e.rewrites);
  // (The residual add after the permute back is one op alone: ATen's.)
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << joined(e.refused);
  EXPECT_EQ(e.kernels[0].description.rfind("add -> reduce_sum", 0), 0u) << e.kernels[0].description;
  tftest::expect_fallbacks_match_eager(m, options(), {2, 8, 6, 6});
  tftest::expect_fallbacks_match_eager(m, options(), {1, 8, 9, 5});
}

// A result read by a pooling op keeps its bias in the convolution, with the reason; so does every
// bias when the option is off.
TEST(ConvBias, StaysWhereTheAddWouldBeAKernelOfItsOwn) {
  const auto pooled = tftest::conv_block_module(tftest::kConvPool, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(pooled, options()).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_TRUE(e.rewrites.empty()) << joined(e.rewrites);
  EXPECT_TRUE(any_line_has(e.refused, "stays in the convolution: its result is read by aten::max_pool2d")) << joined(e.refused);

  const auto block = tftest::conv_block_module(tftest::kResidualBlock, 8, torch::TensorOptions());
  const auto off = torchfuse::compile(block, options(false)).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_TRUE(off.rewrites.empty()) << joined(off.rewrites);
  EXPECT_NE(off.rewritten_graph.find("aten::conv2d(%x.1, %self.w1, %self.b1"), std::string::npos) << off.rewritten_graph;
}

// In-place ops on values only the graph sees run functional; a write to an input stays.
TEST(ConvBias, InPlaceOpsOnIntermediatesBecomeFunctional) {
  const auto m = tftest::module_from(R"JIT(
def forward(self, x, r):
    y = x * 2.0
    y += r
    y.relu_()
    x.mul_(0.5)
    return y
)JIT");
  const auto graph = torchfuse::prepare_module_graph(m);
  const std::string printed = graph->toString();
  EXPECT_EQ(count_occurrences(printed, "aten::add_"), 0) << printed;
  EXPECT_EQ(count_occurrences(printed, "aten::relu_"), 0) << printed;
  EXPECT_EQ(count_occurrences(printed, "aten::mul_"), 1) << printed;  // x is an input: the caller sees it
  EXPECT_TRUE(torchfuse::writes_to_inputs_or_constants(graph));
}

}  // namespace
