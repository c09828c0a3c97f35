// Fusion grouping: chains, diamonds, several outputs, unfusable ops in between, refusals.
#include "tests/test_util.h"

using tftest::contains_in_order;
using tftest::fusion_nodes;
using tftest::module_from;
using tftest::module_returning;

namespace {

torchfuse::Explanation explain(const torch::jit::Module& m, const std::vector<c10::IValue>& in, int min_size = 2) {
  return torchfuse::compile(m, tftest::quiet_options(min_size)).explain(in);
}

bool any_refusal_contains(const torchfuse::Explanation& e, const std::string& text) {
  for (const auto& r : e.refused)
    if (r.find(text) != std::string::npos) return true;
  return false;
}

TEST(Fusion, ChainBecomesOneGroup) {
  auto m = module_returning("x, b", "torch.gelu(x + b) * 0.5 + x");
  const auto e = explain(m, {torch::randn({8, 16}), torch::randn({16})});
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_EQ(e.kernels[0].description, "add -> gelu -> mul -> add");
  EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("aten::gelu"), std::string::npos) << e.rewritten_graph;
}

TEST(Fusion, DiamondIsOneGroupWithOneOutput) {
  auto m = module_from(R"JIT(
def forward(self, x):
    a = x * 2.0
    b = a + 1.0
    c = torch.sigmoid(a)
    return b * c
)JIT");
  const auto e = explain(m, {torch::randn({4, 4})});
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_EQ(e.kernels[0].num_ops, 4);
  EXPECT_TRUE(contains_in_order(e.ir_after, {"outputs(%", ") ops: mul -> add -> sigmoid -> mul"}));
  EXPECT_EQ(tftest::count_occurrences(e.ir_after, "outputs(%"), 1);
}

TEST(Fusion, ValuesUsedOutsideBecomeOutputs) {
  auto m = module_from(R"JIT(
def forward(self, x, r):
    h = x + r
    y = torch.relu(h) * 3.0
    return (h, y)
)JIT");
  const auto e = explain(m, {torch::randn({4, 4}), torch::randn({4, 4})});
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  // Both h and y leave the kernel; the kernel has two outputs.
  EXPECT_NE(e.kernels[0].source.find("out1 = "), std::string::npos) << e.kernels[0].source;
  EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1);
}

TEST(Fusion, UnfusableOpBetweenSplitsWithoutCycle) {
  // a feeds the matmul and, through it, the second chain; a must not join that chain's group.
  auto m = module_from(R"JIT(
def forward(self, x, w):
    a = torch.tanh(x * 2.0)
    m = torch.matmul(a, w)
    return torch.relu(m + 1.0) * a
)JIT");
  const auto e = explain(m, {torch::randn({8, 8}), torch::randn({8, 8})});
  EXPECT_EQ(e.kernels.size(), 2u) << e.ir_after;
  EXPECT_TRUE(any_refusal_contains(e, "cycle")) << ::testing::PrintToString(e.refused);
  EXPECT_TRUE(contains_in_order(e.rewritten_graph, {"torchfuse::FusionGroup", "aten::matmul", "torchfuse::FusionGroup"}))
      << e.rewritten_graph;
}

TEST(Fusion, SmallerOutputUsedElsewhereIsNotRecomputed) {
  auto m = module_from(R"JIT(
def forward(self, x, b):
    s = torch.sigmoid(b) * 2.0
    return (x + s, s)
)JIT");
  const auto e = explain(m, {torch::randn({8, 16}), torch::randn({16})});
  EXPECT_TRUE(any_refusal_contains(e, "is used elsewhere and would be computed over [8, 16]"))
      << ::testing::PrintToString(e.refused);
}

TEST(Fusion, BroadcastOperandsFuseIntoTheLargerDomain) {
  auto m = module_returning("x, b", "x * (torch.sigmoid(b) * 2.0)");
  const auto e = explain(m, {torch::randn({8, 16}), torch::randn({16})});
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_EQ(e.kernels[0].num_ops, 3);
}

TEST(Fusion, SingleOpsStayInAtenUnlessAsked) {
  auto m = module_returning("x", "torch.relu(x)");
  const auto x = torch::randn({4});
  const auto e = explain(m, {x});
  EXPECT_TRUE(e.kernels.empty());
  EXPECT_TRUE(any_refusal_contains(e, "fewer than min_group_size 2"));
  EXPECT_EQ(explain(m, {x}, 1).kernels.size(), 1u);
}

// A lone GELU (erf) counts as two ops (passes/prune_groups.h): its group stays under the default
// min_group_size, and not above it. Other lone activations still run in ATen.
TEST(Fusion, LoneGeluIsAKernelOfItsOwn) {
  const auto x = torch::randn({4, 8});
  const auto m = module_returning("x", "torch.gelu(x)");
  const auto e = explain(m, {x});
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << tftest::joined(e.refused);
  EXPECT_EQ(e.kernels[0].description, "gelu");
  const auto three = explain(m, {x}, 3);
  EXPECT_TRUE(three.kernels.empty());
  EXPECT_TRUE(any_refusal_contains(three, "2 op(s), fewer than min_group_size 3"));
  for (const char* expr : {"torch.gelu(x, approximate='tanh')", "torch.tanh(x)"}) {
    const auto other = explain(module_returning("x", expr), {x});
    EXPECT_TRUE(other.kernels.empty()) << expr;
    EXPECT_TRUE(any_refusal_contains(other, "1 op(s), fewer than min_group_size 2")) << expr;
  }
}

TEST(Fusion, SideEffectsPinTheOrder) {
  auto m = module_from(R"JIT(
def forward(self, x, y):
    a = x * 2.0
    y.add_(1.0)
    return a + y
)JIT");
  const auto e = explain(m, {torch::randn({4}), torch::randn({4})});
  EXPECT_TRUE(e.kernels.empty()) << e.ir_after;
  EXPECT_TRUE(any_refusal_contains(e, "has side effects")) << ::testing::PrintToString(e.refused);
}

TEST(Fusion, RefusalsAreLoggedWithReasons) {
  auto m = module_from(R"JIT(
def forward(self, x, w):
    a = torch.tanh(x * 2.0)
    m = torch.matmul(a, w)
    return torch.relu(m + 1.0) * a
)JIT");
  const auto e = explain(m, {torch::randn({8, 8}), torch::randn({8, 8})});
  ASSERT_FALSE(e.refused.empty());
  EXPECT_TRUE(contains_in_order(e.refused[0], {"cannot fuse %", "into the group of %", ": "}));
}

TEST(Fusion, DecomposedOpsStayTogether) {
  auto m = module_returning("x, y", "torch.clamp(torch.add(x, y, alpha=3), -1.0, 1.0)");
  const auto e = explain(m, {torch::randn({4}), torch::randn({4})});
  ASSERT_EQ(e.kernels.size(), 1u);
  EXPECT_EQ(e.kernels[0].description, "mul -> add -> clamp_min -> clamp_max");
}

TEST(Fusion, GroupsMatchAcrossRuns) {
  auto m = module_returning("x, b", "torch.gelu(x + b) * 0.5 + x");
  const auto x = torch::randn({8, 16});
  const auto b = torch::randn({16});
  const auto a1 = explain(m, {x, b});
  const auto a2 = explain(m, {x, b});
  EXPECT_EQ(a1.ir_after, a2.ir_after);
  EXPECT_EQ(a1.kernels[0].source, a2.kernels[0].source);
}

}  // namespace

namespace {

TEST(Fusion, IdentityCastsInsideAChainAreRemoved) {
  // On float32 inputs .float() and .type_as(x) change nothing; the chain is still one kernel and
  // no TorchScript node is left reading a value the kernel replaced.
  auto m = module_from(R"JIT(
def forward(self, x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf * xf + 1e-6)).type_as(x) * w
)JIT");
  const auto e = explain(m, {torch::randn({4, 8}), torch::randn({8})});
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_EQ(e.rewritten_graph.find("aten::"), std::string::npos) << e.rewritten_graph;
}

}  // namespace
