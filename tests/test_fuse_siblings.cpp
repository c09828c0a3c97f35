// Sibling fusion (passes/fuse_siblings.h, CompileOptions::fuse_siblings): pointwise groups of one
// shape that read a common value and not each other become one kernel; the refusals name why
// the others stay apart. CPU only: explain() plans and NVRTC-compiles for sm_90 without a GPU
// (tests/test_views_gpu.cpp runs the kernels against eager).
#include "tests/test_util.h"
#include "tests/view_test_util.h"

using tftest::any_refusal_contains;
using tftest::fusion_nodes;
using tftest::module_from;
using tftest::refusals;

namespace {

torchfuse::Explanation explain_with(const torch::jit::Module& m, const std::vector<c10::IValue>& in, bool siblings) {
  auto options = tftest::quiet_options();
  options.offline_arch = "sm_90";
  options.fuse_siblings = siblings;
  return torchfuse::compile(m, options).explain(in, /*compile_kernels=*/true);
}

bool any_refusal_names_siblings(const torchfuse::Explanation& e) { return any_refusal_contains(e, "siblings"); }

std::vector<c10::IValue> rope_inputs() { return {torch::randn({2, 4, 8, 64}), torch::randn({8, 64}), torch::randn({8, 64})}; }

}  // namespace

TEST(FuseSiblings, OffByDefault) {
  EXPECT_FALSE(torchfuse::CompileOptions{}.fuse_siblings);
  const auto e = explain_with(module_from(tftest::kRotationHalves), rope_inputs(), false);
  EXPECT_EQ(e.kernels.size(), 2u) << refusals(e);
  EXPECT_FALSE(any_refusal_names_siblings(e)) << refusals(e);
}

// Both halves of a rotation: one kernel, which takes in the slices both read (q, cos and sin read
// through them, no aten::slice left) and writes both results.
TEST(FuseSiblings, RotationHalvesBecomeOneKernel) {
  const auto e = explain_with(module_from(tftest::kRotationHalves), rope_inputs(), true);
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("aten::slice"), std::string::npos) << e.rewritten_graph;
  ASSERT_EQ(e.cubin_bytes.size(), 1u);
  EXPECT_GT(e.cubin_bytes[0], 0u);
  EXPECT_FALSE(any_refusal_contains(e, "also used outside the group")) << refusals(e);
}

// Two chains of one shape reading one input, each result returned: one kernel for both, in each dtype.
TEST(FuseSiblings, ChainsReadingOneInputBecomeOneKernel) {
  auto m = module_from(R"JIT(
def forward(self, x, y):
    return torch.sigmoid(x) * 2.0, torch.tanh(x) + y
)JIT");
  for (auto dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    const std::vector<c10::IValue> in = {torch::randn({16, 24}).to(dtype), torch::randn({16, 24}).to(dtype)};
    EXPECT_EQ(explain_with(m, in, false).kernels.size(), 2u);
    const auto e = explain_with(m, in, true);
    EXPECT_EQ(e.kernels.size(), 1u) << refusals(e);
    EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
  }
}

// Three chains reading one transposed view of an input: one kernel, which takes in the view.
TEST(FuseSiblings, ChainsReadingOneViewBecomeOneKernel) {
  auto m = module_from(R"JIT(
def forward(self, x, y):
    t = x.transpose(0, 1)
    return torch.relu(t) * y, t * 2.0 - y, torch.exp(t) + 1.0
)JIT");
  const auto e = explain_with(m, {torch::randn({24, 8}), torch::randn({8, 24})}, true);
  EXPECT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_EQ(e.rewritten_graph.find("aten::transpose"), std::string::npos) << e.rewritten_graph;
}

// Chains that share no tensor (a scalar literal, 2.0, is read by both) are not siblings.
TEST(FuseSiblings, ChainsSharingOnlyALiteralStayApart) {
  auto m = module_from(R"JIT(
def forward(self, x, y):
    return torch.sigmoid(x) * 2.0, torch.tanh(y) * 2.0
)JIT");
  const auto e = explain_with(m, {torch::randn({16, 24}), torch::randn({16, 24})}, true);
  EXPECT_EQ(e.kernels.size(), 2u) << refusals(e);
  EXPECT_FALSE(any_refusal_names_siblings(e)) << refusals(e);
}

// Siblings of different shapes stay two kernels, with the reason.
TEST(FuseSiblings, DifferentShapesStayApart) {
  auto m = module_from(R"JIT(
def forward(self, x, y):
    return torch.sigmoid(x) * 2.0, torch.tanh(x + y)
)JIT");
  const auto e = explain_with(m, {torch::randn({16, 24}), torch::randn({4, 16, 24})}, true);
  EXPECT_EQ(e.kernels.size(), 2u) << refusals(e);
  EXPECT_TRUE(any_refusal_contains(e, "cannot fuse siblings")) << refusals(e);
  EXPECT_TRUE(any_refusal_contains(e, "their shapes [16, 24] and [4, 16, 24] differ")) << refusals(e);
}

// A path between them through an op left to ATen (the second reads the matmul of the first):
// merged, the group would feed itself; refused with the reason.
TEST(FuseSiblings, APathThroughAnUnfusedOpKeepsThemApart) {
  auto m = module_from(R"JIT(
def forward(self, x, w):
    a = torch.sigmoid(x) * 2.0
    h = torch.matmul(a, w)
    return a, torch.tanh(x) + h
)JIT");
  const auto e = explain_with(m, {torch::randn({16, 16}), torch::randn({16, 16})}, true);
  EXPECT_EQ(e.kernels.size(), 2u) << refusals(e);
  EXPECT_TRUE(any_refusal_contains(e, "cannot fuse siblings")) << refusals(e);
  EXPECT_TRUE(any_refusal_contains(e, "a path through an unfused node connects them")) << refusals(e);
}

// A reduction's group takes no sibling: the softmax and the pointwise chain reading x stay two
// kernels, and no sibling refusal is logged for them.
TEST(FuseSiblings, ReductionGroupsTakeNoSiblings) {
  auto m = module_from(R"JIT(
def forward(self, x):
    return torch.softmax(x, -1), torch.relu(x) * 2.0
)JIT");
  const auto e = explain_with(m, {torch::randn({16, 24})}, true);
  EXPECT_EQ(e.kernels.size(), 2u) << refusals(e);
  EXPECT_FALSE(any_refusal_names_siblings(e)) << refusals(e);
}
