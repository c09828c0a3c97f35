// The channels-last rewrite (passes/rewrite_channels_last.cpp) on the CPU: convolution weights
// stored NHWC, the elementwise regions between convolutions computed over [N, H, W, C], and
// layout-dependent readers (a view, the graph's output) reading contiguous() values; results and
// the output's layout against eager through the groups' ATen fallbacks.
#include "passes/graph_rewrites.h"
#include "tests/conv_modules.h"
#include "tests/cpu_fallbacks.h"
#include "tests/test_util.h"

namespace {

using tftest::count_occurrences;
using tftest::any_line_has;
using tftest::joined;

torchfuse::CompileOptions options(bool channels_last = true) {
  torchfuse::CompileOptions o = tftest::quiet_options();
  o.channels_last_convs = channels_last;
  return o;
}

// The residual block: both weights NHWC, the two regions (bias + ReLU; bias + residual + ReLU)
// over [N, H, W, C], the output contiguous as eager's.
TEST(ChannelsLast, ResidualBlockRunsNhwc) {
  const auto m = tftest::conv_block_module(tftest::kResidualBlock, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_TRUE(any_line_has(e.rewrites, "channels-last weights for 2 convolution(s)")) << joined(e.rewrites);
  EXPECT_TRUE(any_line_has(e.rewrites, "channels-last region 2: 3 elementwise op(s) over [N, H, W, C]")) << joined(e.rewrites);
  EXPECT_TRUE(any_line_has(e.rewrites, "channels-last: 1 layout-dependent read(s) through contiguous()")) << joined(e.rewrites);
  // The first region writes [N, H, W, C]; the second convolution reads its permuted view (the
  // one view left outside the groups); the second region writes the NCHW output eager returns.
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::permute("), 1) << e.rewritten_graph;
  ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after << joined(e.refused);
  EXPECT_EQ(e.kernels[0].description, "permute[0, 2, 3, 1] -> add -> relu -> contiguous[]");
  EXPECT_EQ(e.kernels[1].description.rfind("permute[0, 2, 3, 1] -> add -> permute[0, 2, 3, 1] -> add -> relu", 0), 0u)
      << e.kernels[1].description;
  tftest::expect_fallbacks_match_eager(m, options(), {2, 8, 6, 6});
  tftest::expect_fallbacks_match_eager(m, options(), {1, 8, 5, 9});
}

// ConvNeXt's stem: the residual adds read a permuted layer norm result, channels-last already,
// so they run over [N, H, W, C] too (else they would write NCHW and the next depthwise
// convolution would copy it back); the last one is returned as it is, channels-last as eager's.
TEST(ChannelsLast, AddsOfChannelsLastNormResultsRunNhwc) {
  const auto m = tftest::conv_block_module(tftest::kConvNextStem, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_TRUE(any_line_has(e.rewrites, "channels-last weights for 3 convolution(s)")) << joined(e.rewrites);
  // The first block's scale and both residual adds (the second reads the first), then the second
  // block's scale.
  EXPECT_TRUE(any_line_has(e.rewrites, "channels-last region 1: 3 elementwise op(s) over [N, H, W, C]")) << joined(e.rewrites);
  EXPECT_TRUE(any_line_has(e.rewrites, "channels-last region 2: 1 elementwise op(s) over [N, H, W, C]")) << joined(e.rewrites);
  EXPECT_FALSE(any_line_has(e.rewrites, "layout-dependent read")) << joined(e.rewrites);
  // The stem's norm, then per block the norm with its ReLU, scale and residual add: the add reads
  // the norm's result and the earlier one's without views between, so it is the norm's epilogue.
  ASSERT_EQ(e.kernels.size(), 3u) << e.ir_after << joined(e.refused);
  for (size_t k : {1, 2}) {
    const std::string& d = e.kernels[k].description;
    EXPECT_EQ(d.substr(d.size() - std::string("relu -> mul -> add").size()), "relu -> mul -> add") << d;
  }
  tftest::expect_fallbacks_match_eager(m, options(), {2, 8, 6, 6});
  tftest::expect_fallbacks_match_eager(m, options(), {1, 8, 5, 9});
  // NCHW (the option off): as many kernels, the adds computed over [N, C, H, W].
  const auto off = torchfuse::compile(m, options(false)).explain({torch::randn({2, 8, 6, 6})});
  ASSERT_EQ(off.kernels.size(), 5u) << off.ir_after << joined(off.refused);
  EXPECT_EQ(off.kernels[2].description, "permute[0, 3, 1, 2] -> mul -> add") << off.kernels[2].description;
}

// ConvNeXt's downsampling: the last block's scale and residual add read the depthwise norm's
// result and a convolution's as they are ([N, H, W, C], no permutes between), and join the
// channels-first norm that reads their sum permuted to [N, H, W, C]: one kernel, where the views
// between had kept them in a kernel of their own.
TEST(ChannelsLast, ResidualAddJoinsTheChannelsFirstNormAfterIt) {
  const auto m = tftest::conv_block_module(tftest::kConvNextDownsample, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_TRUE(any_line_has(e.rewrites, "read(s) of a region's result permuted to [N, H, W, C] read it as computed")) << joined(e.rewrites);
  ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after << joined(e.refused);
  EXPECT_EQ(e.kernels[1].description.rfind("mul -> add -> reduce_sum", 0), 0u) << e.kernels[1].description;
  tftest::expect_fallbacks_match_eager(m, options(), {2, 8, 6, 6});
  tftest::expect_fallbacks_match_eager(m, options(), {1, 8, 5, 9});
}

// A dict of outputs (transformers' form): the block's result, channels-last in eager too, is
// returned as it is (no NCHW copy), and the pooler's mean reads it.
TEST(ChannelsLast, DictOutputsKeepEagersChannelsLastLayout) {
  const auto m = tftest::conv_block_module(tftest::kConvNextPooled, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  // The stem's norm; the block's norm with its scale and residual add; the mean. No copy.
  ASSERT_EQ(e.kernels.size(), 3u) << e.ir_after << joined(e.refused);
  EXPECT_NE(e.kernels[1].description.find("-> mul -> add"), std::string::npos) << e.kernels[1].description;
  EXPECT_EQ(e.kernels[2].description, "reduce_sum -> div");
  torch::jit::Module eager = m;
  ASSERT_EQ(tftest::output_tensors(eager.forward({torch::randn({2, 8, 6, 6})})).size(), 2u);
  tftest::expect_fallbacks_match_eager(m, options(), {2, 8, 6, 6});
  tftest::expect_fallbacks_match_eager(m, options(), {1, 8, 5, 9});
}

// A feature map returned (contiguous in eager) and its mean: the region writes the NCHW copy the
// output needs, and the mean reads that copy, so the region's [N, H, W, C] result is not written.
TEST(ChannelsLast, MeansReadTheContiguousCopyOfAReturnedMap) {
  const auto m = tftest::conv_block_module(tftest::kConvReluPooled, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  // (The map returned, and the mean's result: a no-op for its [N, C].)
  EXPECT_TRUE(any_line_has(e.rewrites, "channels-last: 2 layout-dependent read(s) through contiguous()")) << joined(e.rewrites);
  ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after << joined(e.refused);
  EXPECT_EQ(e.kernels[0].description, "permute[0, 2, 3, 1] -> add -> relu -> contiguous[] -> permute[0, 3, 1, 2] -> contiguous[]")
      << e.kernels[0].description;
  torch::jit::Module eager = m;
  ASSERT_EQ(tftest::output_tensors(eager.forward({torch::randn({2, 8, 6, 6})})).size(), 2u);
  tftest::expect_fallbacks_match_eager(m, options(), {2, 8, 6, 6});
  tftest::expect_fallbacks_match_eager(m, options(), {1, 8, 5, 9});
}

// ResNet's global pooling (adaptive_avg_pool2d to 1 x 1) is a mean over H and W: like the mean
// above, it reads the NCHW copy of the returned map.
TEST(ChannelsLast, GlobalPoolingReadsTheContiguousCopyOfAReturnedMap) {
  const auto m = tftest::conv_block_module(tftest::kConvReluGlobalPool, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_TRUE(any_line_has(e.rewrites, "layout-dependent read(s) through contiguous()")) << joined(e.rewrites);
  ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after << joined(e.refused);
  EXPECT_EQ(e.kernels[0].description, "permute[0, 2, 3, 1] -> add -> relu -> contiguous[] -> permute[0, 3, 1, 2] -> contiguous[]")
      << e.kernels[0].description;
  EXPECT_EQ(e.kernels[1].description, "reduce_sum -> div") << e.kernels[1].description;
  EXPECT_EQ(e.rewritten_graph.find("aten::adaptive_avg_pool2d"), std::string::npos) << e.rewritten_graph;
  tftest::expect_fallbacks_match_eager(m, options(), {2, 8, 6, 6});
  tftest::expect_fallbacks_match_eager(m, options(), {1, 8, 5, 9});
}

// A view of a region's result reads it contiguous(), as eager's view did.
TEST(ChannelsLast, ViewsReadTheLayoutEagerHad) {
  const auto m = tftest::conv_block_module(tftest::kConvReluView, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_TRUE(any_line_has(e.rewrites, "channels-last: 1 layout-dependent read(s) through contiguous()")) << joined(e.rewrites);
  // One kernel writes the NCHW copy the view reads (its size read comes from that copy too).
  EXPECT_EQ(e.kernels.size(), 1u) << e.ir_after << joined(e.refused);
  tftest::expect_fallbacks_match_eager(m, options(), {2, 8, 6, 6});
  tftest::expect_fallbacks_match_eager(m, options(), {3, 8, 4, 7});
}

// Off: nothing moves.
TEST(ChannelsLast, OffLeavesTheGraph) {
  const auto m = tftest::conv_block_module(tftest::kResidualBlock, 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options(false)).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_FALSE(any_line_has(e.rewrites, "channels-last")) << joined(e.rewrites);
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::permute"), 0) << e.rewritten_graph;
}

// A graph that reads raw storage keeps eager's layouts, with the reason.
TEST(ChannelsLast, RawStorageReadsKeepEagerLayouts) {
  const auto m = tftest::conv_block_module(R"JIT(
def forward(self, x):
    y = torch.relu(torch.conv2d(x, self.w1, self.b1, [1, 1], [1, 1]))
    return torch.as_strided(y, [2, 4], [1, 2])
)JIT", 8, torch::TensorOptions());
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6})});
  EXPECT_FALSE(any_line_has(e.rewrites, "channels-last")) << joined(e.rewrites);
  EXPECT_TRUE(any_line_has(e.refused, "channels-last convolutions: the graph reads raw storage (aten::as_strided")) << joined(e.refused);
}

// Float64 convolutions stay NCHW (and so do float32 ones on CUDA: tests/test_conv_layout_gpu.cpp),
// with the reason.
TEST(ChannelsLast, Float64StaysNchw) {
  const auto m = tftest::conv_block_module(tftest::kResidualBlock, 8, torch::TensorOptions().dtype(torch::kDouble));
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({2, 8, 6, 6}, torch::kDouble)});
  EXPECT_FALSE(any_line_has(e.rewrites, "channels-last")) << joined(e.rewrites);
  EXPECT_TRUE(any_line_has(e.refused, "channels-last convolutions: 2 convolution(s) stay NCHW, from aten::conv2d")) << joined(e.refused);
  EXPECT_TRUE(any_line_has(e.refused, "its dtype is Double")) << joined(e.refused);
}

// Specializations share what was derived from one constant: made once per source and tag.
TEST(ChannelsLast, DerivedConstantsAreMadeOncePerSource) {
  torchfuse::DerivedConstants derived;
  int made = 0;
  const auto make = [&made](const at::Tensor& t) {
    ++made;
    return t.contiguous(at::MemoryFormat::ChannelsLast) * 1.0;
  };
  const at::Tensor w = torch::randn({4, 3, 2, 2}), other = torch::randn({4, 3, 2, 2});
  const at::Tensor a = derived.get("nhwc", w, make);
  EXPECT_TRUE(a.is_same(derived.get("nhwc", w, make)));
  EXPECT_EQ(made, 1);
  EXPECT_FALSE(a.is_same(derived.get("nhwc", other, make)));
  EXPECT_FALSE(a.is_same(derived.get("other tag", w, make)));
  EXPECT_EQ(made, 3);
  EXPECT_TRUE(torch::equal(a, w));
}

}  // namespace
