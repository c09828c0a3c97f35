// Dtype casts moved past the gathers reading them (passes/sink_casts.h), on the CPU: the rewrite's
// report, the cast joining the fused kernel after the gather, eager's results through the groups'
// ATen fallbacks, and the casts it leaves, with the reason.
#include "tests/fallback_util.h"

namespace {

using tftest::joined;

// A padding mask built as Hugging Face builds BERT's: the mask cast to bool, gathered at batch and
// key positions, then combined (the batch index rotated: aranges alone would make the gather a
// view, passes/view_arange_indices.h). The cast moves after the index and joins the kernel.
TEST(SinkCasts, CastOfAGatheredMaskJoinsTheKernelAfterTheGather) {
  const auto m = tftest::module_from(R"JIT(
def forward(self, mask, y):
    m = mask.to(11)  # torch.bool
    b = torch.remainder(torch.arange(m.size(0), device=m.device) + 1, m.size(0))[:, None, None]
    k = torch.arange(m.size(1), device=m.device)[None, None, :]
    return torch.where(m[b, k], y, 0.0) * 2.0
)JIT");
  const std::vector<c10::IValue> in{torch::randint(0, 2, {4, 16}, torch::kLong), torch::randn({4, 1, 16})};
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
  ASSERT_TRUE(tftest::any_line_has(e.rewrites, "moved after the gather aten::index")) << joined(e.rewrites) << joined(e.refused);
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << joined(e.refused);
  EXPECT_EQ(e.kernels[0].description.rfind("cast -> ", 0), 0u) << e.kernels[0].description;
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"aten::index(%mask", "torchfuse::FusionGroup"})) << e.rewritten_graph;
  const auto [got, want] = tftest::fallback_and_eager(m, in);
  EXPECT_TRUE(torch::equal(got, want)) << (got - want).abs().max();
  // (The indices' broadcast is CUDA's: ATen copies them per call only there. tests/test_views_gpu.cpp.)
  EXPECT_FALSE(tftest::any_line_has(e.rewrites, "broadcast and made contiguous")) << joined(e.rewrites);
}

// Left before the gather: a cast read by something else too, and a gather reading it as its
// index (not as the gathered tensor).
TEST(SinkCasts, LeavesCastsReadOtherwise) {
  const auto other = tftest::module_from(R"JIT(
def forward(self, x, i):
    c = x.double()
    return c[i] + c.sum()
)JIT");
  const auto e1 = torchfuse::compile(other, tftest::quiet_options()).explain({torch::randn({8, 4}), torch::tensor({1, 3})});
  EXPECT_TRUE(e1.rewrites.empty()) << joined(e1.rewrites);
  EXPECT_TRUE(tftest::any_line_has(e1.refused, "stays before its gather: its result is read by aten::sum")) << joined(e1.refused);

  const auto index = tftest::module_from(R"JIT(
def forward(self, x, i):
    return torch.index_select(x, 0, i.int())
)JIT");
  const auto e2 = torchfuse::compile(index, tftest::quiet_options()).explain({torch::randn({8, 4}), torch::tensor({1, 3})});
  EXPECT_TRUE(e2.rewrites.empty()) << joined(e2.rewrites);
  EXPECT_TRUE(tftest::any_line_has(e2.refused, "stays before its gather: its result is read by aten::index_select"))
      << joined(e2.refused);
}

}  // namespace
