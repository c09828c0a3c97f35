// Views inside pointwise groups (issue 22 item 1): permute, transpose, t, unsqueeze, squeeze,
// flatten, view/reshape to [-1], unflatten, view_as and reshape_as between pointwise ops stay in
// one kernel, read as index maps (passes/view_steps.h); the refusal rules; the stride transform
// the runtime applies. CPU only:
// explain() plans, generates and NVRTC-compiles without a GPU (tests/test_views_gpu.cpp runs them).
#include "passes/view_steps.h"
#include "tests/cpu_fallbacks.h"
#include "tests/test_util.h"
#include "tests/view_test_util.h"

using tftest::any_refusal_contains;
using tftest::contains_in_order;
using tftest::explain;
using tftest::module_from;
using tftest::module_returning;
using tftest::refusals;

namespace {

using torchfuse::ViewStep;
using torchfuse::ir::OpKind;

// Each view in a chain, with the other operand in the view's output shape and broadcast.
std::vector<tftest::ViewCase> view_cases() {
  return {
      {"permute", "x, y", "torch.relu(x * 2.0).permute(0, 2, 1) * y + 1.0", {{4, 8, 16}, {4, 16, 8}}, "permute[dims=[0, 2, 1]]"},
      {"permute_row_bias", "x, y", "torch.relu(x * 2.0).permute(0, 2, 1) * y + 1.0", {{4, 8, 16}, {8}}, "permute[dims=[0, 2, 1]]"},
      {"permute_mid_bias", "x, y", "torch.relu(x * 2.0).permute(0, 2, 1) * y + 1.0", {{4, 8, 16}, {1, 16, 1}}, "permute[dims=[0, 2, 1]]"},
      {"permute_4d", "x, y", "torch.relu(x * 2.0).permute(0, 2, 1, 3) * y + 1.0", {{2, 4, 8, 16}, {2, 8, 4, 16}}, "permute[dims=[0, 2, 1, 3]]"},
      {"transpose", "x, y", "torch.relu(x * 2.0).transpose(1, 2) * y + 1.0", {{4, 8, 16}, {4, 16, 8}}, "permute[dims=[0, 2, 1]]"},
      {"transpose_negative", "x, y", "torch.relu(x * 2.0).transpose(-1, -3) * y + 1.0", {{4, 8, 16}, {16, 8, 4}}, "permute[dims=[2, 1, 0]]"},
      {"t", "x, y", "torch.relu(x * 2.0).t() * y + 1.0", {{8, 16}, {16, 8}}, "permute[dims=[1, 0]]"},
      {"t_bias", "x, y", "torch.relu(x * 2.0).t() * y + 1.0", {{8, 16}, {8}}, "permute[dims=[1, 0]]"},
      {"unsqueeze", "x, y", "torch.relu(x * 2.0).unsqueeze(1) * y + 1.0", {{4, 8}, {4, 3, 8}}, "unsqueeze[dims=[1]]"},
      {"unsqueeze_last", "x, y", "torch.relu(x * 2.0).unsqueeze(-1) * y + 1.0", {{4, 8}, {4, 8, 5}}, "unsqueeze[dims=[2]]"},
      {"squeeze_dim", "x, y", "torch.relu(x * 2.0).squeeze(1) * y + 1.0", {{4, 1, 8}, {4, 8}}, "squeeze[dims=[1]]"},
      {"squeeze_all", "x, y", "torch.relu(x * 2.0).squeeze() * y + 1.0", {{4, 1, 8, 1}, {4, 8}}, "squeeze[dims=[1, 3]]"},
      {"flatten", "x, y", "torch.relu(x * 2.0).flatten(1, 2) * y + 1.0", {{4, 8, 16}, {4, 128}}, "flatten[dims=[1, 2]]"},
      {"flatten_bias", "x, y", "torch.relu(x * 2.0).flatten(1) * y + 1.0", {{4, 8, 16}, {128}}, "flatten[dims=[1, 2]]"},
      {"flatten_leading", "x, y", "torch.relu(x * 2.0).flatten(0, 1) * y + 1.0", {{4, 8, 16}, {16}}, "flatten[dims=[0, 1]]"},
      {"flatten_row_broadcast_outside", "x, b, y", "(torch.relu(x * 2.0) + b).flatten(1, 2) * y",
       {{4, 8, 16}, {4, 1, 1}, {4, 128}}, "flatten[dims=[1, 2]]"},
      {"reshape_all", "x, y", "torch.relu(x * 2.0).reshape(-1) * y + 1.0", {{4, 8}, {32}}, "flatten[dims=[0, 1]]"},
      {"view_all", "x, y", "torch.relu(x * 2.0).view(-1) * y + 1.0", {{4, 8}, {32}}, "flatten[dims=[0, 1]]"},
      {"view_of_input", "x, y", "torch.relu(x.permute(0, 2, 1) * y)", {{4, 8, 16}, {4, 16, 8}}, "permute[dims=[0, 2, 1]]"},
      {"two_views", "x, y", "torch.relu(x * 2.0).flatten(1, 2).unsqueeze(1) * y + 1.0", {{4, 8, 16}, {4, 3, 128}},
       "unsqueeze[dims=[1]]"},
      {"permute_unsqueeze", "x, y", "torch.relu(x * 2.0).permute(1, 0).unsqueeze(0) * y + 1.0", {{8, 16}, {3, 16, 8}},
       "unsqueeze[dims=[0]]"},
      {"pre_view_broadcast", "x, b, y", "torch.relu(x * b).transpose(0, 1) - y", {{8, 1}, {1, 16}, {16, 8}},
       "permute[dims=[1, 0]]"},
      // Spelled as views with size lists first (passes/spell_view_likes.h): sizes read per call.
      {"unflatten", "x, y", "torch.relu(x * 2.0).unflatten(-1, [4, -1]) * y + 1.0", {{4, 8, 16}, {4, 8, 4, 4}},
       "view[dims=[%"},
      {"unflatten_middle", "x, y", "torch.relu(x * 2.0).unflatten(1, [2, 4]) * y + 1.0", {{4, 8, 16}, {4, 2, 4, 16}},
       "view[dims=[%"},
      {"view_as", "x, y", "torch.relu(x * 2.0).view_as(y) * y + 1.0", {{4, 8, 16}, {4, 128}}, "view[dims=[%"},
      {"reshape_as", "x, y", "torch.relu(x * 2.0).reshape_as(y) - y", {{4, 128}, {4, 8, 16}}, "view[dims=[%"},
  };
}

TEST(Views, EachViewChainIsOneGroup) {
  for (const auto& c : view_cases()) {
    tftest::expect_view_chain_is_one_group(c, {"aten::permute", "aten::transpose", "aten::t(", "aten::unsqueeze", "aten::squeeze",
                                               "aten::flatten", "aten::view", "aten::reshape", "aten::relu", "aten::mul",
                                               "aten::unflatten"});
  }
}

TEST(Views, KernelsCompileForSm80AndSm90InF32AndBf16) {
  for (const auto& c : view_cases()) {
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      for (const char* arch : {"sm_80", "sm_90"}) {
        SCOPED_TRACE(std::string(c.name) + " " + c10::toString(dtype) + " " + arch);
        const auto e = explain(module_returning(c.args, c.expr), tftest::inputs_of(c, dtype), /*compile=*/true, arch);
        ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
        ASSERT_EQ(e.cubin_bytes.size(), 1u);
        EXPECT_GT(e.cubin_bytes[0], 0u);
        EXPECT_EQ(e.arch, arch);
        // A view emits no code of its own.
        EXPECT_EQ(e.kernels[0].source.find("permute("), std::string::npos) << e.kernels[0].source;
      }
    }
  }
}

TEST(Views, PermutedInputIsReadThroughItsStrides) {
  // relu(x).permute(0, 2, 1) * y: x [4, 8, 16] is read as [4, 16, 8] with strides [128, 1, 16],
  // so the kernel indexes it (no linear access), and y linearly.
  const auto e = explain(module_returning("x, y", "torch.relu(x * 2.0).permute(0, 2, 1) * y"),
                         {torch::randn({4, 8, 16}), torch::randn({4, 16, 8})});
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_TRUE(contains_in_order(e.kernels[0].source, {"// in0 = %0 f32, ", "// in1 = %1 f32, linear"}));
  EXPECT_EQ(e.kernels[0].source.find("// in0 = %0 f32, linear"), std::string::npos) << e.kernels[0].source;
  EXPECT_TRUE(contains_in_order(e.ir_after, {"domain [4, 16, 8]", "input %0 read through permute[0, 2, 1]"}));
}

TEST(Views, ViewsInsideReductionGroupsAreRefused) {
  const auto after = explain(module_returning("x, y", "torch.softmax(x * 2.0, dim=-1).permute(0, 2, 1) * y + 1.0"),
                             {torch::randn({4, 8, 16}), torch::randn({4, 16, 8})});
  EXPECT_TRUE(any_refusal_contains(after, "views inside reduction groups are not fused yet")) << refusals(after);
  const auto before = explain(module_returning("x", "(x * 2.0).permute(0, 2, 1).sum(-1)"), {torch::randn({4, 8, 16})});
  EXPECT_TRUE(any_refusal_contains(before, "views inside reduction groups are not fused yet")) << refusals(before);
}

TEST(Views, ValueBeforeViewUsedOutsideIsRefused) {
  auto m = module_from(R"JIT(
def forward(self, x, y):
    a = torch.relu(x * 2.0)
    return (a.permute(0, 2, 1) * y, a)
)JIT");
  const auto e = explain(m, {torch::randn({4, 8, 16}), torch::randn({4, 16, 8})});
  EXPECT_TRUE(any_refusal_contains(e, "(relu), computed before the view")) << refusals(e);
  EXPECT_TRUE(any_refusal_contains(e, "is also needed outside the group (the group's outputs must all be in one index domain)"))
      << refusals(e);
  // (mul alone after the permute is too small a group.)
  EXPECT_EQ(e.kernels.size(), 1u) << refusals(e);
}

TEST(Views, ValueBeforeViewOnTwoViewPathsIsRefused) {
  auto m = module_from(R"JIT(
def forward(self, x):
    a = torch.relu(x * 2.0)
    return torch.sigmoid(a.permute(0, 2, 1) + a)
)JIT");
  const auto e = explain(m, {torch::randn({4, 8, 8})});
  // (Which rule names it depends on the order of the merges: here %5 is an input of the
  // permute's group when relu's group is tried.)
  EXPECT_TRUE(any_refusal_contains(e, "would be read through two different view paths") ||
              any_refusal_contains(e, "is also needed on another view path"))
      << refusals(e);
}

TEST(Views, InputReadThroughTwoViewPathsIsRefused) {
  const auto e = explain(module_returning("x", "torch.relu(x * 2.0).permute(0, 2, 1) + x"), {torch::randn({4, 8, 8})});
  EXPECT_TRUE(any_refusal_contains(e, "input %0 would be read through two different view paths")) << refusals(e);
}

TEST(Views, BroadcastInsideMergedDimsIsRefused) {
  // b [8, 1] broadcasts over the last of the dims flatten merges: no stride walks [8 * 16].
  const auto e = explain(module_returning("x, b, y", "(torch.relu(x * 2.0) + b).flatten(1, 2) * y"),
                         {torch::randn({4, 8, 16}), torch::randn({8, 1}), torch::randn({4, 128})});
  EXPECT_TRUE(any_refusal_contains(e, "is broadcast inside the dims that flatten merges")) << refusals(e);
}

TEST(Views, StridesThatDoNotMergeAreRefused) {
  // x transposed: its dims 1 and 2 do not merge into one stride.
  const auto x = torch::randn({4, 16, 8}).transpose(1, 2);
  const auto e = explain(module_returning("x, y", "torch.relu(x * 2.0).flatten(1, 2) * y"), {x, torch::randn({4, 128})});
  // Read as eager makes the product (transposed like x), should it stay in ATen: no merge either.
  EXPECT_TRUE(any_refusal_contains(e, "(its strides as eager makes them, [128, 1, 8], do not merge)")) << refusals(e);
  // The flatten joins no group: mul -> relu is one kernel, the flatten a view after it (the lone
  // `* y` below min_group_size runs in ATen).
  EXPECT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_NE(e.rewritten_graph.find("aten::flatten("), std::string::npos) << e.rewritten_graph;
}

// unflatten, view_as and reshape_as become views whose sizes each call reads (from the earliest
// value of the same size: the graph's input, not the fused relu), said in the rewrites; through
// the groups' ATen fallbacks they give eager's values at the compiled sizes and at others.
TEST(Views, ViewLikesAreSpelledWithSizesReadPerCall) {
  struct Case {
    const char* args;
    const char* expr;
    const char* applied;
    const char* size_read;  // the input whose sizes the call reads
    int size_reads;
    std::vector<std::vector<int64_t>> shapes, other;
  };
  const std::vector<Case> cases = {
      {"x, y", "torch.relu(x * 2.0).unflatten(-1, [4, -1]) * y", "aten::unflatten (", "aten::size(%x", 3,
       {{4, 8, 16}, {4, 8, 4, 4}}, {{3, 5, 12}, {3, 5, 4, 3}}},
      {"x, y", "torch.relu(x * 2.0).view_as(y) * y", "aten::view_as (", "aten::size(%y", 2, {{4, 8, 16}, {4, 128}},
       {{2, 3, 7}, {2, 21}}},
      {"x, y", "torch.relu(x * 2.0).reshape_as(y) - y", "aten::reshape_as (", "aten::size(%y", 3, {{4, 128}, {4, 8, 16}},
       {{6, 10}, {6, 2, 5}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.expr);
    const auto m = module_returning(c.args, c.expr);
    std::vector<c10::IValue> in;
    for (const auto& shape : c.shapes) in.emplace_back(torch::randn(shape));
    const auto e = explain(m, in);
    EXPECT_TRUE(tftest::any_line_has(e.rewrites, c.applied)) << tftest::joined(e.rewrites);
    EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, c.size_read), c.size_reads) << e.rewritten_graph;
    EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "aten::size("), c.size_reads) << e.rewritten_graph;
    ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
    auto impl = tftest::on_cpu_fallbacks(m);
    for (const auto* shapes : {&c.shapes, &c.other}) {
      std::vector<c10::IValue> fresh;
      for (const auto& shape : *shapes) fresh.emplace_back(torch::randn(shape));
      const at::Tensor got = impl->forward(fresh).toTensor(), want = impl->forward_eager(fresh).toTensor();
      EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max();
      EXPECT_EQ(got.sizes(), want.sizes());
    }
  }
}

// unflatten's -1 is size(d) divided by the other sizes, not the element count's share: a tensor
// with a dim of 0 elsewhere unflattens as eager does (fuzz, seed 36, programs 352 and 2859).
TEST(Views, UnflattenInfersFromItsDimWhenAnotherDimIsZero) {
  const auto m = module_returning("x", "torch.relu(x * 1.5).unflatten(0, [2, -1]) * 1.5");
  auto impl = tftest::on_cpu_fallbacks(m);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{128, 5, 64, 0}, {4, 6, 3}, {6, 0, 2}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    const std::vector<c10::IValue> in{torch::randn(shape)};
    const at::Tensor got = impl->forward(in).toTensor(), want = impl->forward_eager(in).toTensor();
    EXPECT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5));
  }
  const auto e = explain(m, {torch::randn({4, 6, 3})});
  EXPECT_NE(e.rewritten_graph.find("aten::floordiv("), std::string::npos) << e.rewritten_graph;
}

TEST(Views, ViewOfAnInputUsedOutsideStaysInATen) {
  auto m = module_from(R"JIT(
def forward(self, x, w):
    xt = x.t()
    return torch.relu(xt * 2.0) + torch.mm(xt, w)
)JIT");
  const auto e = explain(m, {torch::randn({8, 16}), torch::randn({8, 8})});
  EXPECT_TRUE(any_refusal_contains(e, "of a group input is also used outside the group (fusing would copy it)")) << refusals(e);
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_NE(e.rewritten_graph.find("aten::t("), std::string::npos) << e.rewritten_graph;
}

TEST(Views, PermuteThenFlattenOfMovedDimsIsRefused) {
  // A merge of permuted dims is no stride of the input: eager copies there too.
  const auto e = explain(module_returning("x, y", "torch.relu(x * 2.0).permute(0, 2, 1).flatten(1, 2) * y + 1.0"),
                         {torch::randn({4, 8, 16}), torch::randn({4, 128})});
  EXPECT_TRUE(any_refusal_contains(e, "(its strides do not merge)")) << refusals(e);
}

TEST(Views, ViewsAloneMakeNoKernel) {
  const auto e = explain(module_returning("x", "x.permute(1, 0).unsqueeze(0)"), {torch::randn({4, 8})});
  EXPECT_TRUE(e.kernels.empty()) << refusals(e);
}

// A constant target is applied to each call's sizes (a call it does not fit runs eager, which
// raises); a squeeze of a dim that is not size 1 stays in ATen.
TEST(Views, ConstantTargetViewsFuseAndSqueezesOfLongDimsStay) {
  const auto e = explain(module_returning("x, y", "torch.relu(x * 2.0).view(4, 128) * y"),
                         {torch::randn({4, 8, 16}), torch::randn({4, 128})});
  EXPECT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_NE(e.ir_after.find("view[dims=[4, 128]]"), std::string::npos) << e.ir_after;
  const auto sq = explain(module_returning("x, y", "torch.relu(x * 2.0).squeeze(1) * y"),
                          {torch::randn({4, 8}), torch::randn({4, 8})});
  EXPECT_TRUE(any_refusal_contains(sq, "is not a size-1 dim")) << refusals(sq);
}

TEST(Views, IrPrintsAndVerifiesViews) {
  const auto e = explain(module_returning("x, y", "torch.relu(x * 2.0).permute(0, 2, 1).flatten(1, 2) * y"),
                         {torch::randn({4, 8, 16}), torch::randn({4, 128})});
  EXPECT_TRUE(contains_in_order(e.ir_before, {"relu(", "f32[4, 16, 8]{128, 1, 16} = permute[dims=[0, 2, 1]](%",
                                              "f32[4, 128] = flatten[dims=[1, 2]](%", "mul("}))
      << e.ir_before;
}

// ---- the stride transform ----

ViewStep step(OpKind kind, std::vector<int64_t> dims, int64_t rank) {
  ViewStep s;
  s.kind = kind;
  s.dims = std::move(dims);
  s.rank = rank;
  return s;
}

struct Shape {
  std::vector<int64_t> sizes, strides;
};

std::optional<Shape> apply(const std::vector<ViewStep>& steps, Shape s) {
  int64_t offset = 0;
  if (!torchfuse::apply_view_steps(steps, s.sizes, s.strides, offset)) return std::nullopt;
  EXPECT_EQ(offset, 0);  // these views move no data pointer
  return s;
}

void expect_shape(const std::optional<Shape>& got, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->sizes, sizes);
  EXPECT_EQ(got->strides, strides);
}

TEST(ViewsStrides, PermuteUnsqueezeSqueezeMerge) {
  expect_shape(apply({step(OpKind::Permute, {0, 2, 1}, 3)}, {{2, 3, 4}, {12, 4, 1}}), {2, 4, 3}, {12, 1, 4});
  expect_shape(apply({step(OpKind::Unsqueeze, {1}, 2)}, {{2, 3}, {3, 1}}), {2, 1, 3}, {3, 0, 1});
  expect_shape(apply({step(OpKind::Unsqueeze, {0, 3}, 2)}, {{2, 3}, {3, 1}}), {1, 2, 3, 1}, {0, 3, 1, 0});
  expect_shape(apply({step(OpKind::Squeeze, {1}, 3)}, {{2, 1, 3}, {3, 3, 1}}), {2, 3}, {3, 1});
  expect_shape(apply({step(OpKind::Squeeze, {0, 2}, 3)}, {{1, 5, 1}, {5, 1, 1}}), {5}, {1});
  expect_shape(apply({step(OpKind::Flatten, {1, 2}, 3)}, {{2, 3, 4}, {12, 4, 1}}), {2, 12}, {12, 1});
  // Permuted then merged back: the strides of a transposed tensor.
  expect_shape(apply({step(OpKind::Permute, {1, 0}, 2), step(OpKind::Flatten, {0, 1}, 2)}, {{4, 3}, {1, 4}}), {12}, {1});
  // Size-1 dims inside the merge do not count.
  expect_shape(apply({step(OpKind::Flatten, {0, 2}, 3)}, {{2, 1, 4}, {4, 99, 1}}), {8}, {1});
  // Empty tensors merge.
  expect_shape(apply({step(OpKind::Flatten, {0, 1}, 2)}, {{0, 4}, {1, 0}}), {0}, {0});
}

TEST(ViewsStrides, BroadcastInputsArePaddedToTheStepsRank) {
  // A [4] input of a [2, 3, 4] value, permuted: padded to [1, 1, 4] with stride 0 first.
  expect_shape(apply({step(OpKind::Permute, {0, 2, 1}, 3)}, {{4}, {1}}), {1, 4, 1}, {0, 1, 0});
  // An expanded (stride-0) dim moves with its dim.
  expect_shape(apply({step(OpKind::Permute, {1, 0}, 2)}, {{3, 4}, {0, 1}}), {4, 3}, {1, 0});
  // Squeezing a dim the input only has by padding.
  expect_shape(apply({step(OpKind::Squeeze, {0}, 3)}, {{3, 4}, {4, 1}}), {3, 4}, {4, 1});
  // Every merged dim broadcast: one size-1 dim.
  expect_shape(apply({step(OpKind::Flatten, {1, 2}, 3)}, {{5, 1, 1}, {1, 1, 1}}), {5, 1}, {1, 0});
  // Steps of growing rank: each pads again.
  expect_shape(apply({step(OpKind::Permute, {1, 0}, 2), step(OpKind::Unsqueeze, {0}, 3)}, {{3, 4}, {4, 1}}),
               {1, 1, 4, 3}, {0, 0, 1, 4});
}

TEST(ViewsStrides, ImpossibleTransformsFail) {
  // Transposed dims do not merge.
  EXPECT_FALSE(apply({step(OpKind::Flatten, {0, 1}, 2)}, {{3, 4}, {1, 3}}).has_value());
  // An expanded dim inside a merge with another.
  EXPECT_FALSE(apply({step(OpKind::Flatten, {0, 1}, 2)}, {{3, 4}, {0, 1}}).has_value());
  // A sliced inner dim: the outer stride skips elements.
  EXPECT_FALSE(apply({step(OpKind::Flatten, {0, 1}, 2)}, {{3, 4}, {8, 1}}).has_value());
  // Squeezing a dim that is not size 1.
  EXPECT_FALSE(apply({step(OpKind::Squeeze, {1}, 2)}, {{3, 4}, {4, 1}}).has_value());
  // More dims than the step expects.
  EXPECT_FALSE(apply({step(OpKind::Permute, {1, 0}, 2)}, {{2, 3, 4}, {12, 4, 1}}).has_value());
}

}  // namespace

namespace {

// The transform agrees with torch's own views (tftest::expect_strides_agree_with_torch_views).
TEST(ViewsStrides, AgreeWithTorchViews) {
  const auto base = torch::arange(2 * 3 * 4).to(torch::kFloat);
  const std::vector<tftest::StridesCase> cases = {
      {"permute", base.reshape({2, 3, 4}), {2, 3, 4}, {step(OpKind::Permute, {2, 0, 1}, 3)},
       [](const at::Tensor& t) { return t.permute({2, 0, 1}); }},
      {"permute_of_transposed", base.reshape({2, 4, 3}).transpose(1, 2), {2, 3, 4}, {step(OpKind::Permute, {0, 2, 1}, 3)},
       [](const at::Tensor& t) { return t.permute({0, 2, 1}); }},
      // Every other column: dims 0 and 1 still chain (12 == 4 * 3).
      {"flatten_of_sliced_columns", base.reshape({2, 3, 4}).slice(2, 0, 4, 2), {2, 3, 2}, {step(OpKind::Flatten, {0, 1}, 3)},
       [](const at::Tensor& t) { return t.flatten(0, 1); }},
      {"unsqueeze_then_permute", base.reshape({6, 4}), {6, 4},
       {step(OpKind::Unsqueeze, {1}, 2), step(OpKind::Permute, {2, 1, 0}, 3)},
       [](const at::Tensor& t) { return t.unsqueeze(1).permute({2, 1, 0}); }},
      {"squeeze_then_flatten", base.reshape({2, 1, 12}), {2, 1, 12},
       {step(OpKind::Squeeze, {1}, 3), step(OpKind::Flatten, {0, 1}, 2)},
       [](const at::Tensor& t) { return t.squeeze(1).flatten(0, 1); }},
      {"broadcast_row_permuted", base.slice(0, 0, 4), {2, 3, 4}, {step(OpKind::Permute, {0, 2, 1}, 3)},
       [](const at::Tensor& t) { return t.permute({0, 2, 1}); }},
      {"broadcast_column_unsqueezed", base.slice(0, 0, 3).reshape({3, 1}), {3, 5}, {step(OpKind::Unsqueeze, {0}, 2)},
       [](const at::Tensor& t) { return t.unsqueeze(0); }},
      {"broadcast_merged_whole", base.slice(0, 0, 2).reshape({2, 1, 1}), {2, 3, 4}, {step(OpKind::Flatten, {1, 2}, 3)},
       [](const at::Tensor& t) { return t.flatten(1, 2); }},
  };
  for (const auto& c : cases) tftest::expect_strides_agree_with_torch_views(c);
}

}  // namespace
