// triu / tril, argmax / argmin (and max / min with their indices), repeat and repeat_interleave
// spelled as ops that fuse (passes/spell_index_ops.h), on the CPU: the rewrite's report, the plans
// (kernels per graph, none of the ops left to ATen), NVRTC builds of the kernels, and eager's exact
// results through the groups' ATen fallbacks, ties and NaN included. The GPU runs the kernels in
// tests/test_index_ops_gpu.cpp.
#include "tests/fallback_util.h"
#include "tests/view_test_util.h"

namespace {

using tftest::joined;

// A case: forward(self, <args>) returns `expr`; inputs of `shapes`.
struct IndexCase {
  const char* name;
  const char* args;
  const char* expr;
  std::vector<std::vector<int64_t>> shapes;
  const char* applied;  // in the rewrite's report
  size_t kernels;       // fused kernels of the graph
  const char* left;     // the ATen op no longer in the graph
};

const std::vector<IndexCase> kCases = {
    {"triu", "x, y", "torch.triu(torch.relu(x * 2.0), 1) + y", {{4, 8, 8}, {4, 8, 8}}, "aten::triu", 1, "aten::triu"},
    {"triu_wide_negative", "x, y", "torch.triu(x * y, -2) - 1.0", {{3, 5, 9}, {3, 5, 9}}, "aten::triu", 1, "aten::triu"},
    {"tril_4d", "x, y", "torch.sigmoid(torch.tril(x + y, 0))", {{2, 3, 7, 7}, {7}}, "aten::tril", 1, "aten::tril"},
    {"argmax_rows", "x, y", "torch.argmax(x * 2.0 + y, -1)", {{16, 40}, {16, 40}}, "aten::argmax", 1, "aten::argmax"},
    {"argmax_keepdim_middle", "x", "torch.argmax(torch.relu(x), 1, True)", {{4, 12, 6}}, "aten::argmax", 1, "aten::argmax"},
    {"argmin_dim0", "x, y", "torch.argmin(x - y, 0)", {{24, 10}, {24, 10}}, "aten::argmin", 1, "aten::argmin"},
    {"argmax_softmax", "x", "torch.argmax(torch.softmax(x, -1), -1)", {{8, 33}}, "aten::argmax", 1, "aten::argmax"},
    {"argmax_every_element", "x", "torch.argmax(x * 3.0)", {{67}}, "aten::argmax", 1, "aten::argmax"},
    {"max_with_indices", "x, y", "torch.max(x + y, 1)[0] + torch.max(x + y, 1)[1]", {{8, 20}, {8, 20}}, "aten::max", 1,
     "aten::max"},
    {"repeat", "x", "torch.relu(x * 2.0).repeat(2, 1, 3) + 1.0", {{4, 5, 6}}, "aten::repeat", 1, "aten::repeat"},
    {"repeat_leading", "x", "(x * 2.0).repeat(3, 2, 1)", {{5, 6}}, "aten::repeat", 1, "aten::repeat"},
    {"repeat_interleave", "x", "torch.repeat_interleave(torch.relu(x), 2, 1) * 2.0", {{2, 4, 3, 8}}, "aten::repeat_interleave",
     1, "aten::repeat_interleave"},
    {"repeat_interleave_flat", "x", "torch.repeat_interleave(x * 2.0, 3) + 1.0", {{4, 5}}, "aten::repeat_interleave", 1,
     "aten::repeat_interleave"},
};

// Standard normal values; `tied`: with many ties (multiples of 1/2 in [-2, 2]), where the first
// index of the extremum is what an argmax must pick.
std::vector<c10::IValue> inputs(const IndexCase& c, c10::ScalarType dtype, bool tied = false) {
  std::vector<c10::IValue> in;
  for (const auto& s : c.shapes) {
    at::Tensor t = torch::randn(s);
    if (tied) t = torch::round(t * 2.0).clamp(-4, 4) / 2.0;
    in.emplace_back(t.to(dtype));
  }
  return in;
}

void expect_exact(const torch::jit::Module& m, const std::vector<c10::IValue>& in) {
  const auto [got, want] = tftest::fallback_and_eager(m, in);
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(torch::equal(got, want)) << "got\n" << got << "\nwant\n" << want;
}

TEST(IndexOps, SpelledAsFusibleOps) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto m = tftest::module_returning(c.args, c.expr);
    const auto e = tftest::explain(m, inputs(c, c10::kFloat));
    EXPECT_TRUE(tftest::any_line_has(e.rewrites, std::string(c.applied) + " (")) << joined(e.rewrites) << joined(e.refused);
    EXPECT_EQ(e.kernels.size(), c.kernels) << tftest::refusals(e);
    EXPECT_EQ(e.rewritten_graph.find(c.left), std::string::npos) << e.rewritten_graph;
  }
}

TEST(IndexOps, KernelsCompileInEveryDtype) {
  for (const auto& c : kCases) {
    for (const auto dtype : {c10::kFloat, c10::kBFloat16}) {  // (LibTorch 1.13's CPU ops lack some f16 kernels)
      SCOPED_TRACE(std::string(c.name) + " " + c10::toString(dtype));
      const auto e = tftest::explain(tftest::module_returning(c.args, c.expr), inputs(c, dtype), /*compile=*/true);
      ASSERT_EQ(e.kernels.size(), c.kernels) << tftest::refusals(e);
      ASSERT_EQ(e.cubin_bytes.size(), c.kernels);
      for (size_t b : e.cubin_bytes) EXPECT_GT(b, 0u);
    }
  }
}

// The spelled graph gives eager's results exactly (each op picks elements or compares them; the
// surrounding arithmetic is eager's own ops on the fallbacks), on fresh inputs and on tied ones.
TEST(IndexOps, ResultsAreEagersExactly) {
  for (const auto& c : kCases) {
    for (const auto dtype : {c10::kFloat, c10::kBFloat16}) {
      SCOPED_TRACE(std::string(c.name) + " " + c10::toString(dtype));
      const auto m = tftest::module_returning(c.args, c.expr);
      expect_exact(m, inputs(c, dtype));
      expect_exact(m, inputs(c, dtype, /*tied=*/true));
    }
  }
}

// NaN counts as the largest and the smallest value: the first NaN of a row is its argmax and its
// argmin, as eager's.
TEST(IndexOps, NaNIsTheExtremumAtItsFirstIndex) {
  auto x = torch::randn({6, 9});
  x.index_put_({1, 4}, NAN);
  x.index_put_({1, 7}, NAN);
  x.index_put_({3, 0}, NAN);
  x.index_put_({5, 8}, NAN);
  x.index_put_({5, 2}, std::numeric_limits<float>::infinity());
  x.index_put_({4, 3}, -std::numeric_limits<float>::infinity());
  for (const char* expr : {"torch.argmax(x * 1.0, -1)", "torch.argmin(x * 1.0, -1)", "torch.argmax(x * 1.0, 0)",
                           "torch.max(x * 1.0, 1)[1]", "torch.min(x * 1.0, 1)[1]"}) {
    SCOPED_TRACE(expr);
    const auto m = tftest::module_returning("x", expr);
    const auto e = tftest::explain(m, {x});
    EXPECT_EQ(e.kernels.size(), 1u) << tftest::refusals(e);
    for (const auto dtype : {c10::kFloat, c10::kBFloat16}) expect_exact(m, {x.to(dtype)});
  }
}

// A causal mask as models build it: triu of a bool tensor of ones (the fill is False).
TEST(IndexOps, BoolTriangles) {
  const auto m = tftest::module_returning(
      "x", "x.masked_fill(torch.ones(x.size(-2), x.size(-1), dtype=11, device=x.device).triu(1), -1.0) * 2.0");
  const auto x = torch::randn({2, 6, 9});
  const auto e = tftest::explain(m, {x}, /*compile=*/true);
  EXPECT_TRUE(tftest::any_line_has(e.rewrites, "aten::triu (")) << joined(e.rewrites) << joined(e.refused);
  EXPECT_EQ(e.kernels.size(), 1u) << tftest::refusals(e);
  expect_exact(m, {x});
  const auto b = tftest::module_returning("x", "torch.tril(x > 0.0, -1)");
  expect_exact(b, {x});
}

// Integer inputs: argmax over int64 and int32 values, triu of an int64 tensor.
TEST(IndexOps, IntegerInputs) {
  for (const auto dtype : {c10::kLong, c10::kInt}) {
    SCOPED_TRACE(c10::toString(dtype));
    const auto x = torch::randint(-5, 5, {7, 11}).to(dtype);
    for (const char* expr : {"torch.argmax(x + 1, -1)", "torch.argmin(x * 2, 0)", "torch.triu(x + 1, 1)"}) {
      SCOPED_TRACE(expr);
      const auto m = tftest::module_returning("x", expr);
      const auto e = tftest::explain(m, {x}, /*compile=*/true);
      EXPECT_EQ(e.kernels.size(), 1u) << tftest::refusals(e);
      expect_exact(m, {x});
    }
  }
}

// Left to ATen, each with its reason.
TEST(IndexOps, LeavesWhatItCannotSpell) {
  struct Left {
    const char* args;
    const char* expr;
    std::vector<int64_t> shape;
    const char* reason;
  };
  const std::vector<Left> cases = {
      {"x", "torch.argmax(x * 2.0, x.dim() - 1)", {4, 6}, "stays one ATen op: dim is not a constant int"},
      {"x", "torch.argmax(x * 2.0, None, True)", {4, 6}, "stays one ATen op: dim=None with keepdim=True"},
      {"x", "torch.argmax(x * 2.0)", {4, 6}, "stays one ATen op: dim=None over a rank-2 input"},
      {"x", "torch.max(x * 2.0, 1)[1]", {2, 262145}, "stays one ATen op: the reduced dim has 262145 elements, above 262144"},
      {"x", "torch.triu(x * 2.0, x.size(0) - 5)", {4, 6}, "stays one ATen op: its diagonal is not a constant int"},
      {"x", "(x * 2.0).repeat(x.size(0), 1)", {4, 6}, "stays one ATen op: its repeats are not constant ints"},
      {"x", "(x * 2.0).repeat(1, 1)", {4, 6}, "stays one ATen op: every repeat is 1 (a copy)"},
      {"x", "torch.repeat_interleave(x * 2.0, 1, 0)", {4, 6}, "stays one ATen op: a repeat of 1"},
      {"x", "torch.repeat_interleave(x * 2.0, 2, 0, output_size=8)", {4, 6}, "stays one ATen op: output_size is given"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.expr);
    const auto m = tftest::module_returning(c.args, c.expr);
    const auto x = torch::randn(c.shape);
    const auto e = tftest::explain(m, {x});
    EXPECT_TRUE(tftest::any_line_has(e.refused, c.reason)) << joined(e.refused) << joined(e.rewrites);
    expect_exact(m, {x});
  }
}

// A prefix product has no scan (the row schedule's scans add): it stays in ATen and explain() says why.
TEST(IndexOps, PrefixProductsStayInAtenWithTheReason) {
  const auto m = tftest::module_returning("x", "torch.cumprod(torch.relu(x * 2.0), -1) + 1.0");
  const auto e = tftest::explain(m, {torch::randn({8, 100})});
  EXPECT_TRUE(tftest::any_line_has(e.refused, "stays in ATen: a prefix product along a dim")) << joined(e.refused);
  EXPECT_NE(e.rewritten_graph.find("aten::cumprod"), std::string::npos) << e.rewritten_graph;
  expect_exact(m, {torch::randn({8, 100})});
}

}  // namespace
