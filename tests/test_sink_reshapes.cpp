// Reshapes that copy, moved after the pointwise ops that read them (passes/sink_reshapes.h), on
// the CPU: the rewrite's report, the rewritten graph (one fusion group reading the transposed
// input, the reshape after it) and, through the groups' ATen fallbacks, eager's results; and the
// reshapes it leaves, with the reason.
#include "tests/fallback_util.h"

namespace {

using tftest::joined;

bool has(const std::vector<std::string>& lines, const std::string& what) { return tftest::any_line_has(lines, what); }

// The module's graph with groups on their ATen fallbacks, against eager, twice (other sizes the
// second time).
void expect_eager_results(const torch::jit::Module& m, const std::function<std::vector<c10::IValue>(int64_t)>& inputs) {
  for (int64_t b : {4, 3}) {
    const auto [got, want] = tftest::fallback_and_eager(m, inputs(b));
    EXPECT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::allclose(got, want, 1e-6, 1e-6)) << "batch " << b << ": " << (got - want).abs().max();
  }
}

// Attention's head merge and a residual: the reshape of the transposed heads moves after the
// add, which computes in the heads' shape (the residual reshaped to it: a view), so one group
// reads the transposed tensor through its strides.
TEST(SinkReshapes, HeadMergeMovesAfterTheResidualAdd) {
  const auto m = tftest::module_from(R"JIT(
def forward(self, x, y):
    b, h, t, d = x.size(0), x.size(1), x.size(2), x.size(3)
    return torch.relu(x.transpose(1, 2).reshape(b, t, h * d) + y) * 2.0
)JIT");
  auto inputs = [](int64_t b) { return std::vector<c10::IValue>{torch::randn({b, 4, 6, 8}), torch::randn({b, 6, 32})}; };
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(inputs(4));
  ASSERT_TRUE(has(e.rewrites, "(its strides do not merge) moved after 3 pointwise op(s)")) << joined(e.rewrites) << joined(e.refused);
  EXPECT_EQ(tftest::fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"torchfuse::FusionGroup", "aten::reshape"}));
  EXPECT_EQ(e.kernels.size(), 1u) << e.ir_after;
  // (The reshape back stays outside the group, a view of its output: in the group its input
  // would be read through the merge again.)
  EXPECT_FALSE(has(e.refused, "copies and stays")) << joined(e.refused);
  expect_eager_results(m, inputs);
}

// A single add keeps its group: eager's add of the transposed heads comes out transposed and its
// reshape copies, which prune_groups counts as the second op; the group writes row-major, so the
// reshape after it is a view.
TEST(SinkReshapes, SingleAddKeepsItsKernel) {
  const auto m = tftest::module_from(R"JIT(
def forward(self, x, y):
    return x.transpose(1, 2).reshape(x.size(0), x.size(2), x.size(1) * x.size(3)) + y
)JIT");
  auto inputs = [](int64_t b) { return std::vector<c10::IValue>{torch::randn({b, 4, 6, 8}), torch::randn({b, 6, 32})}; };
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(inputs(2));
  ASSERT_TRUE(has(e.rewrites, "moved after 1 pointwise op(s)")) << joined(e.rewrites) << joined(e.refused);
  EXPECT_EQ(e.kernels.size(), 1u) << e.ir_after << joined(e.refused);
  EXPECT_FALSE(has(e.refused, "fewer than min_group_size")) << joined(e.refused);
  expect_eager_results(m, inputs);
}

// Reshapes left in place, each with the reason: a reader that is no pointwise op, an operand
// broadcast against the reshaped value, an in-place write between the reshape and its reader; and a
// reshape that is a view (nothing to move).
TEST(SinkReshapes, LeavesWhatCannotMove) {
  const auto matmul = tftest::module_from(R"JIT(
def forward(self, x, w):
    return torch.matmul(x.transpose(1, 2).reshape(x.size(0), x.size(2), -1), w)
)JIT");
  const auto e1 = torchfuse::compile(matmul, tftest::quiet_options()).explain({torch::randn({2, 4, 6, 8}), torch::randn({32, 5})});
  EXPECT_TRUE(e1.rewrites.empty()) << joined(e1.rewrites);
  EXPECT_TRUE(has(e1.refused, "copies and stays before its readers: aten::matmul")) << joined(e1.refused);

  const auto bias = tftest::module_from(R"JIT(
def forward(self, x, c):
    return x.transpose(1, 2).reshape(x.size(0), x.size(2), -1) + c
)JIT");
  const auto e2 = torchfuse::compile(bias, tftest::quiet_options()).explain({torch::randn({2, 4, 6, 8}), torch::randn({32})});
  EXPECT_TRUE(e2.rewrites.empty()) << joined(e2.rewrites);
  EXPECT_TRUE(has(e2.refused, "is broadcast")) << joined(e2.refused);

  // The copy is taken before x changes in place: moved, the add would read the changed x.
  const auto inplace = tftest::module_from(R"JIT(
def forward(self, x, y):
    z = x.transpose(1, 2).reshape(x.size(0), x.size(2), -1)
    x.mul_(2.0)
    return z + y
)JIT");
  const auto e4 = torchfuse::compile(inplace, tftest::quiet_options()).explain({torch::randn({2, 4, 6, 8}), torch::randn({2, 6, 32})});
  EXPECT_TRUE(e4.rewrites.empty()) << joined(e4.rewrites);
  EXPECT_TRUE(has(e4.refused, "writes a tensor between the reshape and its reader")) << joined(e4.refused);

  const auto view = tftest::module_from(R"JIT(
def forward(self, x, y):
    return (x.reshape(x.size(0), -1) + y) * 2.0
)JIT");
  const auto e3 = torchfuse::compile(view, tftest::quiet_options()).explain({torch::randn({2, 4, 6}), torch::randn({2, 24})});
  EXPECT_TRUE(e3.rewrites.empty()) << joined(e3.rewrites);
  EXPECT_FALSE(has(e3.refused, "reshape")) << joined(e3.refused);
  EXPECT_EQ(e3.kernels.size(), 1u) << e3.ir_after;
}

}  // namespace

// A view of a row op's result (no copy) moves after its pointwise readers too, which then join the
// row op's kernel: views do not join reduction groups. The operands are reshaped by the sizes of
// the softmax's input, so the moved chain does not depend on the softmax's result.
TEST(SinkReshapes, ViewsOfRowResultsMoveToo) {
  const auto m = tftest::module_returning("x, y", "torch.sigmoid(torch.softmax(x * 2.0, -1).view(x.size(0), -1) * y)");
  const std::vector<c10::IValue> in = {torch::randn({64, 8, 32}), torch::randn({64, 256})};
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
  ASSERT_TRUE(tftest::any_line_has(e.rewrites, "(a row op's result: views do not join its group) moved after 2 pointwise op(s)"))
      << tftest::joined(e.rewrites) << tftest::joined(e.refused);
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << tftest::joined(e.refused);
  EXPECT_NE(e.kernels[0].description.find("div -> mul -> sigmoid"), std::string::npos) << e.kernels[0].description;
  const auto [got, want] = tftest::fallback_and_eager(m, in);
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6)) << (got - want).abs().max();
}
