// Views that take part of a tensor or broadcast it, inside pointwise groups (issue 22 item 1):
// slice, select, narrow, expand, expand_as, the pieces of chunk / split / split_with_sizes /
// unbind, contiguous, alias and detach. Each fuses as an index map (the runtime moves the input's
// pointer to the range's start); the refusals and their reasons; the stride and offset transform
// against torch's own views; patterns of real models (RoPE's halves, a chunked gate/up
// projection, an expanded attention mask). CPU only: explain() plans, generates and
// NVRTC-compiles without a GPU, forward() runs eager on CPU tensors (tests/test_views_gpu.cpp
// runs the kernels).
#include "passes/view_steps.h"
#include "tests/test_util.h"
#include "tests/view_test_util.h"

using tftest::any_refusal_contains;
using tftest::contains_in_order;
using tftest::explain;
using tftest::fusion_nodes;
using tftest::inputs_of;
using tftest::module_from;
using tftest::module_returning;
using tftest::refusals;
using tftest::ViewCase;

namespace {

using torchfuse::ViewStep;
using torchfuse::ir::OpKind;

// Each view after a computed value, with the other operand in the view's output shape.
std::vector<ViewCase> slice_cases() {
  return {
      {"slice_last", "x, y", "torch.relu(x * 2.0)[..., 2:10] * y + 1.0", {{4, 8, 16}, {4, 8, 8}}, "slice[dims=[2, 2, 10, 1]]"},
      {"slice_step", "x, y", "torch.relu(x * 2.0)[:, 1::2] * y", {{4, 16}, {4, 8}},
       "slice[dims=[1, 1, 9223372036854775807, 2]]"},
      {"slice_negative", "x, y", "torch.relu(x * 2.0)[..., -4:] * y", {{4, 16}, {4, 4}},
       "slice[dims=[1, -4, 9223372036854775807, 1]]"},
      {"slice_end_past", "x, y", "torch.relu(x * 2.0)[1:100] * y", {{6, 8}, {5, 8}}, "slice[dims=[0, 1, 100, 1]]"},
      {"slice_of_input", "x, y", "torch.relu(x[:, 3:7] * y)", {{4, 16}, {4, 4}}, "slice[dims=[1, 3, 7, 1]]"},
      {"select", "x, y", "torch.relu(x * 2.0)[:, 1] * y", {{4, 8, 16}, {4, 16}}, "select[dims=[1, 1]]"},
      {"select_negative", "x, y", "torch.relu(x * 2.0).select(0, -1) * y", {{4, 8}, {8}}, "select[dims=[0, -1]]"},
      {"narrow", "x, y", "torch.relu(x * 2.0).narrow(1, 2, 4) * y", {{4, 8}, {4, 4}}, "narrow[dims=[1, 2, 4]]"},
      {"expand", "x, y", "torch.relu(x * 2.0).expand(3, 4, 8) * y", {{4, 1}, {3, 4, 8}}, "expand[dims=[3, 4, 8]]"},
      {"expand_keep", "x, y", "torch.relu(x * 2.0).expand(-1, 8) + y", {{4, 1}, {4, 8}}, "expand[dims=[-1, 8]]"},
      {"expand_of_input", "x, y", "torch.relu(x.expand(2, 4, 8) * y)", {{4, 1}, {2, 4, 8}}, "expand[dims=[2, 4, 8]]"},
      {"chunk_item", "x, y", "torch.relu(x * 2.0).chunk(2, -1)[1] * y", {{4, 16}, {4, 8}}, "chunk[dims=[1, 2, 1, -1]]"},
      {"split_item", "x, y", "torch.relu(x * 2.0).split(3, 1)[-1] * y", {{4, 8}, {4, 2}}, "split[dims=[1, 3, -1, -1]]"},
      {"split_sizes_item", "x, y", "torch.relu(x * 2.0).split([2, 6], 1)[1] * y", {{4, 8}, {4, 6}},
       "narrow[dims=[1, 2, 6, 8]]"},
      {"unbind_item", "x, y", "torch.relu(x * 2.0).unbind(0)[2] * y", {{4, 8}, {8}}, "select[dims=[0, 2]]"},
      {"contiguous", "x, y", "torch.relu(x * 2.0).t().contiguous() * y", {{8, 16}, {16, 8}}, "contiguous[dims=[]]"},
      {"slice_then_permute", "x, y", "torch.relu(x * 2.0)[:, 2:6].permute(1, 0) * y", {{8, 16}, {4, 8}},
       "slice[dims=[1, 2, 6, 1]]"},
  };
}

// Eager's ops that a fused view chain leaves nothing of.
const std::vector<std::string>& view_op_names() {
  static const std::vector<std::string> names = {
      "aten::slice", "aten::select", "aten::narrow", "aten::expand", "aten::chunk", "aten::split", "aten::unbind",
      "aten::contiguous", "prim::ListUnpack", "aten::__getitem__", "aten::relu", "aten::mul"};
  return names;
}

TEST(ViewSlices, EachViewChainIsOneGroup) {
  for (const auto& c : slice_cases()) tftest::expect_view_chain_is_one_group(c, view_op_names());
}

TEST(ViewSlices, KernelsCompileForEachDtype) {
  // Views move no values: 16-bit floats, integers and bools read through them alike.
  for (const auto& c : slice_cases()) {
    // (f16: the CPU profile lacks f16 kernels of some ops; the GPU tests run it.)
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      SCOPED_TRACE(std::string(c.name) + " " + c10::toString(dtype));
      const auto e = explain(module_returning(c.args, c.expr), inputs_of(c, dtype), /*compile=*/true);
      ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
      ASSERT_EQ(e.cubin_bytes.size(), 1u);
      EXPECT_GT(e.cubin_bytes[0], 0u);
    }
  }
  const std::string ints = "(x[:, 1:5] + y.select(0, 1)) * 3 - x.chunk(2, 1)[0]";
  for (auto dtype : {c10::kInt, c10::kLong, c10::kShort}) {
    SCOPED_TRACE(c10::toString(dtype));
    const auto e = explain(module_returning("x, y", ints),
                           {torch::randint(-9, 9, {4, 8}).to(dtype), torch::randint(-9, 9, {3, 4}).to(dtype)}, true);
    ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
    EXPECT_NE(e.kernels[0].description.find("slice"), std::string::npos) << e.kernels[0].description;
  }
  const auto b = explain(module_returning("m, c", "torch.logical_and(m[:, 1:], c.expand(4, 7)).logical_not()"),
                         {torch::rand({4, 8}) > 0.5, torch::rand({1, 7}) > 0.5}, true);
  ASSERT_EQ(b.kernels.size(), 1u) << refusals(b);
  EXPECT_TRUE(contains_in_order(b.kernels[0].description, {"slice", "expand", "logical_and"})) << b.kernels[0].description;
}

TEST(ViewSlices, SlicedInputIsReadAtItsOffset) {
  // relu(x[:, 3:7] * y): x [4, 16] is read as [4, 4] with strides [16, 1] (the offset of 3
  // elements is the launch's: the source has no sizes), y linearly.
  const auto e = explain(module_returning("x, y", "torch.relu(x[:, 3:7] * y)"), {torch::randn({4, 16}), torch::randn({4, 4})});
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_TRUE(contains_in_order(e.kernels[0].source, {"// in0 = %0 f32, inner_contiguous", "// in1 = %1 f32, linear"}))
      << e.kernels[0].source;
  EXPECT_TRUE(contains_in_order(e.ir_after, {"domain [4, 4]", "input %0 read through slice[1, 3, 7, 1]"}));
}

TEST(ViewSlices, ExpandAsFusesAsABroadcast) {
  const auto e = explain(module_returning("m, s", "torch.relu(s * 2.0 + m.expand_as(s))"),
                         {torch::randn({4, 1, 8}), torch::randn({2, 4, 3, 8})});
  EXPECT_NE(e.ir_before.find("= expand_as(%0, %1)"), std::string::npos) << e.ir_before;
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_EQ(e.rewritten_graph.find("aten::expand_as"), std::string::npos) << e.rewritten_graph;
  EXPECT_NE(e.kernels[0].description.find("expand_as"), std::string::npos) << e.kernels[0].description;
  // Alone it computes nothing, and written out it would be copied: it stays a view in ATen.
  const auto alone = explain(module_returning("m, s", "(m * 2.0).expand_as(s)"), {torch::randn({4, 1}), torch::randn({4, 8})},
                             false, "sm_90", 1);
  EXPECT_TRUE(any_refusal_contains(alone, "(expand_as) would be written in full")) << refusals(alone);
  EXPECT_NE(alone.rewritten_graph.find("aten::expand_as"), std::string::npos) << alone.rewritten_graph;
}

TEST(ViewSlices, IdentityViewsAreDropped) {
  // x[:], x.expand(-1, -1), x.alias() are x whatever its sizes: no IR node for them.
  const auto e = explain(module_returning("x, y", "torch.relu(x[:, :].expand(-1, -1) * 2.0) + y.detach()"),
                         {torch::randn({4, 8}), torch::randn({4, 8})});
  EXPECT_EQ(e.ir_before.find("slice"), std::string::npos) << e.ir_before;
  EXPECT_EQ(e.ir_before.find("expand"), std::string::npos) << e.ir_before;
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
}

// ---- chunk / split / unbind unpacked ----

TEST(ViewSlices, UnpackedChunkIsOneKernel) {
  // HF's gate/up projection: one matmul, chunked; silu(gate) * up reads the matmul's output twice,
  // once per piece (two operands of one kernel).
  auto m = module_from(R"JIT(
def forward(self, x, w):
    gate, up = torch.matmul(x, w).chunk(2, -1)
    return torch.silu(gate) * up
)JIT");
  const auto e = explain(m, {torch::randn({6, 16}), torch::randn({16, 64})});
  EXPECT_TRUE(contains_in_order(e.ir_before, {"= chunk[dims=[1, 2, 0, 2]](%", "= chunk[dims=[1, 2, 1, 2]](%"})) << e.ir_before;
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
  for (const char* op : {"aten::chunk", "prim::ListUnpack", "aten::silu", "aten::mul"})
    EXPECT_EQ(e.rewritten_graph.find(op), std::string::npos) << op << "\n" << e.rewritten_graph;
  EXPECT_TRUE(contains_in_order(e.ir_after, {"read through chunk[1, 2, 0, 2]", "read through chunk[1, 2, 1, 2]"})) << e.ir_after;
  EXPECT_TRUE(contains_in_order(e.kernels[0].source, {"// in0 = %", "// in1 = %"})) << e.kernels[0].source;
}

TEST(ViewSlices, EachUnpackedSplitIsOneKernel) {
  struct Case {
    const char* unpack;  // `a, b, c = ...` of x
    std::vector<int64_t> shape;
    const char* ir_view;  // the first piece
  };
  const std::vector<Case> cases = {
      {"x.chunk(3, 1)", {4, 9}, "chunk[dims=[1, 3, 0, 3]]"},
      {"x.split(4, -1)", {4, 10}, "split[dims=[1, 4, 0, 3]]"},
      {"x.split([2, 3, 5], 1)", {4, 10}, "narrow[dims=[1, 0, 2, 10]]"},
      {"torch.split(x, [2, 3, 5], 1)", {4, 10}, "narrow[dims=[1, 0, 2, 10]]"},
      {"x.unbind(0)", {3, 10}, "select[dims=[0, 0, 3]]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.unpack);
    auto m = module_from(std::string("def forward(self, x):\n    a, b, c = ") + c.unpack +
                         "\n    return torch.relu(a * 2.0) + b[..., :1] * c[..., :1]\n");
    const auto e = explain(m, {torch::randn(c.shape)});
    EXPECT_NE(e.ir_before.find(c.ir_view), std::string::npos) << e.ir_before;
    ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
    for (const char* op : {"aten::chunk", "aten::split", "aten::unbind", "prim::ListUnpack", "aten::slice"})
      EXPECT_EQ(e.rewritten_graph.find(op), std::string::npos) << op << "\n" << e.rewritten_graph;
    EXPECT_NE(e.ir_after.find("read through " + std::string(c.ir_view).substr(0, std::string(c.ir_view).find('['))),
              std::string::npos)
        << refusals(e);
  }
}

TEST(ViewSlices, PieceReadOutsideKeepsTheUnpack) {
  // qkv chunked: q and k fuse, v goes to a matmul as eager's view (the unpack stays for it).
  auto m = module_from(R"JIT(
def forward(self, x, w):
    q, k, v = torch.matmul(x, w).chunk(3, -1)
    return torch.matmul(torch.relu(q * 0.5) + k, v.t())
)JIT");
  const auto e = explain(m, {torch::randn({6, 8}), torch::randn({8, 24})});
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_TRUE(contains_in_order(e.rewritten_graph, {"aten::chunk", "prim::ListUnpack", "torchfuse::FusionGroup"}))
      << e.rewritten_graph;
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const std::vector<c10::IValue> in = {torch::randn({6, 8}), torch::randn({8, 24})};
  EXPECT_TRUE(torch::allclose(c.forward(in).toTensor(), c.forward_eager(in).toTensor()));
}

TEST(ViewSlices, PiecesInTwoGroupsRewriteCleanly) {
  // a and b's consumers are two groups, split by a matmul: the unpack goes with the last one.
  auto m = module_from(R"JIT(
def forward(self, x, w):
    a, b = x.chunk(2, -1)
    h = torch.matmul(torch.relu(a * 2.0), w)
    return torch.sigmoid(h + 1.0) * b
)JIT");
  const auto e = explain(m, {torch::randn({4, 16}), torch::randn({8, 8})});
  ASSERT_EQ(e.kernels.size(), 2u) << refusals(e);
  EXPECT_EQ(fusion_nodes(e.rewritten_graph), 2) << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("prim::ListUnpack"), std::string::npos) << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("aten::chunk"), std::string::npos) << e.rewritten_graph;
}

// ---- real-model patterns ----

TEST(ViewSlices, RotaryHalvesAroundCat) {
  // Llama's rotate_half with constant halves: the slices, the neg and the cat fuse with
  // q * cos + rotate_half(q) * sin into one kernel (tests/test_cat.cpp has more), nothing is
  // left in ATen, with min_group_size 1 too.
  auto m = module_from(R"JIT(
def forward(self, q, cos, sin):
    r = torch.cat((-q[..., 32:], q[..., :32]), -1)
    return q * cos + r * sin
)JIT");
  const std::vector<c10::IValue> in = {torch::randn({2, 4, 8, 64}), torch::randn({8, 64}), torch::randn({8, 64})};
  for (int min_group_size : {2, 1}) {
    const auto e = explain(m, in, false, "sm_90", min_group_size);
    ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
    EXPECT_TRUE(contains_in_order(e.kernels[0].description, {"slice", "neg", "cat"})) << e.kernels[0].description;
    EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
    EXPECT_EQ(e.rewritten_graph.find("aten::"), std::string::npos) << e.rewritten_graph;
  }
}

TEST(ViewSlices, RotaryHalfWithoutCatIsOneKernel) {
  // One half of a rotation written out (no cat): q read through both of its halves, cos and sin
  // through theirs, one kernel.
  auto m = module_from(R"JIT(
def forward(self, q, cos, sin):
    q1 = q[..., :32]
    q2 = q[..., 32:]
    return q1 * cos[..., :32] - q2 * sin[..., :32]
)JIT");
  const auto e = explain(m, {torch::randn({2, 4, 8, 64}), torch::randn({8, 64}), torch::randn({8, 64})});
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_EQ(e.rewritten_graph.find("aten::slice"), std::string::npos) << e.rewritten_graph;
  EXPECT_TRUE(contains_in_order(e.ir_after, {"input %0 read through slice[3, 0, 32, 1]",
                                             "input %0 read through slice[3, 32, 9223372036854775807, 1]"}))
      << e.ir_after;
  // Both halves returned: two chains side by side are two kernels (no sibling fusion), and the
  // slices each reads stay views in ATen, read by both (one kernel under
  // CompileOptions::fuse_siblings: tests/test_fuse_siblings.cpp).
  auto both = module_from(tftest::kRotationHalves);
  const auto e2 = explain(both, {torch::randn({2, 4, 8, 64}), torch::randn({8, 64}), torch::randn({8, 64})});
  EXPECT_EQ(e2.kernels.size(), 2u) << refusals(e2);
  EXPECT_TRUE(any_refusal_contains(e2, "of a group input is also used outside the group (fusing would copy it)")) << refusals(e2);
}

TEST(ViewSlices, ExpandedMaskIntoAWhereChain) {
  // mask[:, None, None, :].expand(...) as attention masks are built: the unsqueezes, the expand
  // and the where with its add are one kernel, the mask read with stride 0.
  auto m = module_from(R"JIT(
def forward(self, scores, mask, bias):
    m = mask[:, None, None, :].expand(2, 4, 8, 8)
    return torch.where(m > 0, scores * 0.125, -10000.0) + bias
)JIT");
  const auto e = explain(m, {torch::randn({2, 4, 8, 8}), torch::rand({2, 8}), torch::randn({8, 8})});
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
  for (const char* op : {"aten::unsqueeze", "aten::expand", "aten::where", "aten::slice"})
    EXPECT_EQ(e.rewritten_graph.find(op), std::string::npos) << op << "\n" << e.rewritten_graph;
  EXPECT_TRUE(contains_in_order(e.ir_after, {"read through unsqueeze[1] -> unsqueeze[2] -> expand[2, 4, 8, 8]"}))
      << e.ir_after;
}

TEST(ViewSlices, ContiguousIsTheGroupsLayout) {
  // .contiguous() after a transpose of a computed value: the group writes that layout; the view
  // after it (a constant shape) stays in ATen and finds a contiguous tensor.
  auto m = module_from(R"JIT(
def forward(self, x):
    y = torch.relu(x * 2.0).transpose(1, 2).contiguous()
    return y.view(4, 64)
)JIT");
  const auto e = explain(m, {torch::randn({4, 8, 8})});
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_TRUE(contains_in_order(e.kernels[0].description, {"permute", "contiguous"})) << e.kernels[0].description;
  EXPECT_TRUE(contains_in_order(e.rewritten_graph, {"torchfuse::FusionGroup", "aten::view"})) << e.rewritten_graph;
}

TEST(ViewSlices, ExpandAsStaysOutOfReductionGroups) {
  // A prologue that broadcasts a mask over the row: the expand_as stays a view in ATen (reduction
  // groups take none yet), the product and the sum are one row reduction reading the view.
  const auto e = explain(module_returning("x, m", "(x * m.expand_as(x)).sum(-1)"), {torch::randn({8, 64}), torch::randn({8, 1})});
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_TRUE(contains_in_order(e.kernels[0].description, {"mul", "reduce_sum"})) << e.kernels[0].description;
  EXPECT_EQ(e.kernels[0].description.find("expand_as"), std::string::npos) << e.kernels[0].description;
  EXPECT_TRUE(any_refusal_contains(e, "expand_as inside reduction groups is not fused yet")) << refusals(e);
}

TEST(ViewSlices, ValueAndItsContiguousBothReturnedAreRefused) {
  // Eager's contiguous() of a contiguous value is the value itself: one tensor. Fused, they
  // would be two.
  auto m = module_from(R"JIT(
def forward(self, x):
    a = torch.relu(x * 2.0)
    return a, a.contiguous()
)JIT");
  const auto e = explain(m, {torch::randn({4, 8})});
  EXPECT_TRUE(any_refusal_contains(e, "computed before the view")) << refusals(e);
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_NE(e.rewritten_graph.find("aten::contiguous"), std::string::npos) << e.rewritten_graph;
}

// ---- refusals ----

// Bounds and sizes the graph computes fuse (tests/test_size_views.cpp); a list indexed by a
// run-time int stays in ATen.
TEST(ViewSlices, RunTimeArgumentsFuseAndRunTimeListIndicesStay) {
  const auto half = explain(module_returning("x, y", "torch.relu(x * 2.0)[..., : x.shape[-1] // 2] * y"),
                            {torch::randn({4, 16}), torch::randn({4, 8})});
  EXPECT_EQ(half.kernels.size(), 1u) << refusals(half);
  EXPECT_FALSE(any_refusal_contains(half, "aten::slice")) << refusals(half);
  const auto ex = explain(module_returning("x, y", "torch.relu(x * 2.0).expand(y.size(0), -1) * y"),
                          {torch::randn({1, 8}), torch::randn({4, 8})});
  EXPECT_EQ(ex.kernels.size(), 1u) << refusals(ex);
  auto index = module_from("def forward(self, x, i: int):\n    return torch.relu(x * 2.0).chunk(2, 1)[i] * 3.0\n");
  const auto idx = explain(index, {torch::randn({4, 8}), int64_t{1}});
  EXPECT_TRUE(any_refusal_contains(idx, "aten::chunk")) << refusals(idx);
  EXPECT_TRUE(any_refusal_contains(idx, "its list is indexed by an int computed at run time")) << refusals(idx);
}

TEST(ViewSlices, ListsUsedOtherwiseStayInATen) {
  const auto e = explain(module_returning("x", "torch.cat(torch.relu(x * 2.0).chunk(2, 1), 0) * 3.0"), {torch::randn({4, 8})});
  EXPECT_TRUE(any_refusal_contains(e, "aten::chunk")) << refusals(e);
  EXPECT_TRUE(any_refusal_contains(e, "its list is read by aten::cat")) << refusals(e);
}

TEST(ViewSlices, ChannelsLastContiguousStaysInATen) {
  const auto e = explain(module_returning("x", "torch.relu(x * 2.0).contiguous(memory_format=2) * 3.0"),
                         {torch::randn({2, 3, 4, 5})});
  EXPECT_TRUE(any_refusal_contains(e, "only torch.contiguous_format is fused")) << refusals(e);
}

TEST(ViewSlices, ExpandedOutputStaysAView) {
  // The group would write every repeated element where eager returns a stride-0 view.
  const auto e = explain(module_returning("x", "torch.relu(x * 2.0).expand(3, 4, 8)"), {torch::randn({4, 1})});
  EXPECT_TRUE(any_refusal_contains(e, "(expand) repeats (eager's expand is a view: it stays one in ATen)")) << refusals(e);
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_TRUE(contains_in_order(e.rewritten_graph, {"torchfuse::FusionGroup", "aten::expand"})) << e.rewritten_graph;
}

TEST(ViewSlices, SliceOfAnInputUsedOutsideStaysInATen) {
  auto m = module_from(R"JIT(
def forward(self, x, w):
    a = x[:, 2:10]
    return torch.relu(a * 2.0) + torch.mm(a, w)
)JIT");
  const auto e = explain(m, {torch::randn({8, 16}), torch::randn({8, 8})});
  EXPECT_TRUE(any_refusal_contains(e, "of a group input is also used outside the group (fusing would copy it)")) << refusals(e);
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_NE(e.rewritten_graph.find("aten::slice("), std::string::npos) << e.rewritten_graph;
}

TEST(ViewSlices, FlattenOfASliceIsRefused) {
  // A range of the inner dim leaves holes between rows: no stride walks the merged dim.
  const auto e = explain(module_returning("x, y", "torch.relu(x * 2.0)[:, :, 1:5].flatten(1, 2) * y"),
                         {torch::randn({4, 8, 16}), torch::randn({4, 32})});
  EXPECT_TRUE(any_refusal_contains(e, "(its strides do not merge)") ||
              any_refusal_contains(e, "computed before the view"))
      << refusals(e);
}

TEST(ViewSlices, ForwardOnCpuEqualsEager) {
  // CPU calls run eager; the compiled module still gives eager's values for every case.
  for (const auto& c : slice_cases()) {
    SCOPED_TRACE(c.name);
    auto compiled = torchfuse::compile(module_returning(c.args, c.expr), tftest::quiet_options());
    const auto in = inputs_of(c, c10::kFloat);
    EXPECT_TRUE(torch::equal(compiled.forward(in).toTensor(), compiled.forward_eager(in).toTensor()));
  }
}

// ---- the stride and offset transform ----

ViewStep step(OpKind kind, std::vector<int64_t> dims, std::vector<int64_t> in_sizes, int view_id = 1) {
  ViewStep s;
  s.kind = kind;
  s.dims = std::move(dims);
  s.rank = static_cast<int64_t>(in_sizes.size());
  s.in_sizes = std::move(in_sizes);
  s.view_id = view_id;
  return s;
}

struct Read {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
};

std::optional<Read> apply(const std::vector<ViewStep>& steps, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                          torchfuse::RangeSizes* seen = nullptr) {
  Read r{std::move(sizes), std::move(strides), 0};
  if (!torchfuse::apply_view_steps(steps, r.sizes, r.strides, r.offset, seen)) return std::nullopt;
  return r;
}

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

TEST(ViewSlicesStrides, RangesMoveTheOffset) {
  auto r = apply({step(OpKind::Slice, {1, 2, 10, 1}, {4, 16})}, {4, 16}, {16, 1});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(r->strides, (std::vector<int64_t>{16, 1}));
  EXPECT_EQ(r->offset, 2);
  // Every other row from row 1: stride doubles.
  r = apply({step(OpKind::Slice, {0, 1, kEnd, 2}, {7, 3})}, {7, 3}, {3, 1});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sizes, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(r->strides, (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(r->offset, 3);
  // Negative start, end past the dim: clamped as eager clamps, on the call's own sizes.
  r = apply({step(OpKind::Slice, {1, -4, 100, 1}, {2, 16})}, {2, 12}, {12, 1});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sizes, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(r->offset, 8);
  // Select: the dim goes away at its (negative) index.
  r = apply({step(OpKind::Select, {0, -1}, {5, 3})}, {5, 3}, {3, 1});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sizes, (std::vector<int64_t>{3}));
  EXPECT_EQ(r->offset, 12);
  // Piece 1 of chunk(3) of 10: [4, 8); the last piece of split(4) of 10: [8, 10).
  r = apply({step(OpKind::Chunk, {0, 3, 1, 3}, {10})}, {10}, {1});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sizes, (std::vector<int64_t>{4}));
  EXPECT_EQ(r->offset, 4);
  r = apply({step(OpKind::Split, {0, 4, -1, -1}, {10})}, {10}, {1});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sizes, (std::vector<int64_t>{2}));
  EXPECT_EQ(r->offset, 8);
}

TEST(ViewSlicesStrides, BroadcastDimsStayOneElement) {
  // An input of size 1 where the sliced value is longer: each index of the range reads it.
  auto r = apply({step(OpKind::Slice, {1, 2, 6, 1}, {4, 8})}, {4, 1}, {1, 1});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sizes, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(r->offset, 0);
  // Left-padded: a [8] input of a [4, 8] value, selected in dim 0.
  r = apply({step(OpKind::Select, {0, 3}, {4, 8})}, {8}, {1});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sizes, (std::vector<int64_t>{8}));
  EXPECT_EQ(r->offset, 0);
  // Expand: new leading dims and size-1 dims grow with stride 0.
  r = apply({step(OpKind::Expand, {3, 4, 8}, {4, 1})}, {4, 1}, {1, 1});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sizes, (std::vector<int64_t>{3, 4, 8}));
  EXPECT_EQ(r->strides, (std::vector<int64_t>{0, 1, 0}));
}

TEST(ViewSlicesStrides, CallsEagerWouldRejectOrThatChangeSizeClassesFail) {
  // narrow past the dim (slice would clamp, narrow raises).
  EXPECT_FALSE(apply({step(OpKind::Narrow, {1, 2, 4}, {4, 8})}, {4, 5}, {5, 1}));
  // select out of range.
  EXPECT_FALSE(apply({step(OpKind::Select, {1, 6}, {4, 8})}, {4, 5}, {5, 1}));
  // Unpacked into 3, but chunk(3) of 4 makes two pieces; unpacked into 2, split(4) of 12 makes 3.
  EXPECT_FALSE(apply({step(OpKind::Chunk, {0, 3, 0, 3}, {9})}, {4}, {1}));
  EXPECT_FALSE(apply({step(OpKind::Split, {0, 4, 0, 2}, {8})}, {12}, {1}));
  // split_with_sizes of sizes adding up to 10 on a dim of 11; unbind into 3 of a dim of 4.
  EXPECT_FALSE(apply({step(OpKind::Narrow, {0, 2, 3, 10}, {10})}, {11}, {1}));
  EXPECT_FALSE(apply({step(OpKind::Select, {0, 1, 3}, {3})}, {4}, {1}));
  // A slice of 6 in the profile is 1 long on this call ([2:] of 3): the plan's broadcasting
  // assumed more than one element.
  EXPECT_FALSE(apply({step(OpKind::Slice, {1, 2, kEnd, 1}, {4, 8})}, {4, 3}, {3, 1}));
  // expand of a dim that is neither 1 nor the target.
  EXPECT_FALSE(apply({step(OpKind::Expand, {4, 8}, {4, 1})}, {4, 3}, {3, 1}));
}

TEST(ViewSlicesStrides, InputsMeetingBeforeARangeMustAgree) {
  // x [4, 10] + y [4, 12], then [:, :4]: eager raises at the add; each sliced alone would fit.
  const std::vector<ViewStep> path = {step(OpKind::Slice, {1, 0, 4, 1}, {4, 8}, /*view_id=*/7)};
  torchfuse::RangeSizes seen;
  ASSERT_TRUE(apply(path, {4, 10}, {10, 1}, &seen));
  ASSERT_TRUE(apply(path, {4, 12}, {12, 1}, &seen));
  EXPECT_FALSE(torchfuse::range_sizes_agree(seen));
  // A broadcast input records nothing; equal sizes agree.
  torchfuse::RangeSizes ok;
  ASSERT_TRUE(apply(path, {4, 10}, {10, 1}, &ok));
  ASSERT_TRUE(apply(path, {4, 1}, {1, 1}, &ok));
  ASSERT_TRUE(apply(path, {4, 10}, {10, 1}, &ok));
  EXPECT_TRUE(torchfuse::range_sizes_agree(ok));
  EXPECT_EQ(ok.size(), 2u);
}

// The transform agrees with torch's views, ranges and their offsets included
// (tftest::expect_strides_agree_with_torch_views).
TEST(ViewSlicesStrides, AgreeWithTorchViews) {
  const auto base = torch::arange(6 * 10).to(torch::kFloat);
  const auto grid = base.reshape({6, 10});
  const std::vector<tftest::StridesCase> cases = {
      {"slice", grid, {6, 10}, {step(OpKind::Slice, {1, 3, 8, 1}, {6, 10})}, [](const at::Tensor& t) { return t.slice(1, 3, 8); }},
      {"slice_step_of_transposed", grid.t(), {10, 6}, {step(OpKind::Slice, {0, 1, kEnd, 3}, {10, 6})},
       [](const at::Tensor& t) { return t.slice(0, 1, kEnd, 3); }},
      {"slice_of_offset_input", base.slice(0, 5, 55).reshape({5, 10}), {5, 10}, {step(OpKind::Slice, {0, -2, kEnd, 1}, {5, 10})},
       [](const at::Tensor& t) { return t.slice(0, -2); }},
      {"select", grid, {6, 10}, {step(OpKind::Select, {1, -3}, {6, 10})}, [](const at::Tensor& t) { return t.select(1, -3); }},
      {"narrow_then_permute", grid, {6, 10},
       {step(OpKind::Narrow, {1, 2, 5}, {6, 10}), step(OpKind::Permute, {1, 0}, {6, 5})},
       [](const at::Tensor& t) { return t.narrow(1, 2, 5).permute({1, 0}); }},
      {"chunk_pieces", grid, {6, 10}, {step(OpKind::Chunk, {1, 3, 2, 3}, {6, 10})}, [](const at::Tensor& t) { return t.chunk(3, 1)[2]; }},
      {"split_piece", grid, {6, 10}, {step(OpKind::Split, {0, 4, 1, 2}, {6, 10})}, [](const at::Tensor& t) { return t.split(4, 0)[1]; }},
      {"split_sizes_piece", grid, {6, 10}, {step(OpKind::Narrow, {1, 3, 7, 10}, {6, 10})},
       [](const at::Tensor& t) { return t.split_with_sizes({3, 7}, 1)[1]; }},
      {"unbind_piece", grid, {6, 10}, {step(OpKind::Select, {0, 4, 6}, {6, 10})}, [](const at::Tensor& t) { return t.unbind(0)[4]; }},
      {"broadcast_row_sliced", base.slice(0, 0, 10), {6, 10}, {step(OpKind::Slice, {0, 2, 5, 1}, {6, 10})},
       [](const at::Tensor& t) { return t.slice(0, 2, 5); }},
      {"broadcast_column_selected", base.slice(0, 0, 6).reshape({6, 1}), {6, 10}, {step(OpKind::Select, {1, 4}, {6, 10})},
       [](const at::Tensor& t) { return t.select(1, 4); }},
      {"expand_then_slice", base.slice(0, 0, 10).reshape({1, 10}), {1, 10},
       {step(OpKind::Expand, {3, 4, -1}, {1, 10}), step(OpKind::Slice, {2, 1, 9, 2}, {3, 4, 10})},
       [](const at::Tensor& t) { return t.expand({3, 4, -1}).slice(2, 1, 9, 2); }},
      {"contiguous", grid.t(), {10, 6}, {step(OpKind::Contiguous, {}, {10, 6})}, [](const at::Tensor& t) { return t.contiguous(); }},
  };
  for (const auto& c : cases) tftest::expect_strides_agree_with_torch_views(c);
}

}  // namespace
