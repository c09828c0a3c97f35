// passes/cut_column_epilogues.h: column groups whose element inputs pass the threshold
// (Tuning::column_cut_kb; twice L2 by default) are cut at their reductions where the epilogue
// reads no element value the reductions read; elsewhere they stay one kernel. Plans and NVRTC
// builds on the CPU; tests/test_gpu_reductions.cpp runs them against eager.
#include <algorithm>

#include "tests/test_util.h"

using tftest::module_returning;

namespace {

torchfuse::Explanation explain(const torch::jit::Module& m, const std::vector<c10::IValue>& in, const std::string& tune) {
  auto o = tftest::quiet_options();
  o.tune = tune;
  return torchfuse::compile(m, o).explain(in, /*compile=*/true);
}

bool said(const torchfuse::Explanation& e, const std::string& what) {
  return std::any_of(e.refused.begin(), e.refused.end(), [&](const std::string& r) { return r.find(what) != std::string::npos; });
}

const char* const kCut = "the element values after its reductions run as a pointwise group of their own";

// x - x.mean(0) over 4 MiB under a 1 MiB threshold: a column reduction writing the mean, then a
// pointwise subtract reading it broadcast; both kernels build, nothing left to ATen.
TEST(CutColumnEpilogues, CentringPastTheThresholdIsAMeanThenAPointwiseKernel) {
  for (const char* expr : {"x - x.mean(0, keepdim=True)", "x - x.mean(0)"}) {
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      SCOPED_TRACE(std::string(expr) + " " + c10::toString(dtype));
      const auto x = torch::randn({2048, 512}).to(dtype);
      const auto e = explain(module_returning("x", expr), {x}, "column_cut_kb=1024");
      ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after << ::testing::PrintToString(e.refused);
      EXPECT_TRUE(tftest::contains_in_order(e.ir_after, {"group 0 (column_reduction, ", "ops: reduce_sum -> div",
                                                         "group 1 (pointwise, ", "domain [2048, 512]", "ops: sub"}))
          << e.ir_after;
      EXPECT_TRUE(said(e, kCut)) << ::testing::PrintToString(e.refused);
      EXPECT_TRUE(said(e, "(dims [0] of [2048, 512], ")) << ::testing::PrintToString(e.refused);
      EXPECT_EQ(e.rewritten_graph.find("aten::"), std::string::npos) << e.rewritten_graph;
      EXPECT_EQ(tftest::fusion_nodes(e.rewritten_graph), 2) << e.rewritten_graph;
      for (size_t k = 0; k < e.cubin_bytes.size(); ++k) EXPECT_GT(e.cubin_bytes[k], 0u);
    }
  }
}

// Under the threshold (the default's twice L2, 100 MiB offline; or 0: never) the group stays one
// kernel of two passes.
TEST(CutColumnEpilogues, UnderTheThresholdOrOffTheGroupStaysWhole) {
  const auto m = module_returning("x", "x - x.mean(0, keepdim=True)");
  const auto x = torch::randn({2048, 512});
  for (const char* tune : {"", "column_cut_kb=0", "column_cut_kb=5120"}) {
    SCOPED_TRACE(tune);
    const auto e = explain(m, {x}, tune);
    ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
    EXPECT_NE(e.kernels[0].source.find("(column reduction, 2 passes)"), std::string::npos) << e.kernels[0].source;
    EXPECT_FALSE(said(e, kCut)) << ::testing::PrintToString(e.refused);
  }
}

// 16-bit element inputs are cut from a quarter of the threshold: by default (offline: 50 MB of
// L2, so 100 MiB, 25 MiB for 16-bit inputs) [4096, 4096] is cut in bf16 (32 MiB) and not in f32
// (64 MiB); under 5120 KiB, 1280 KiB for bf16.
TEST(CutColumnEpilogues, SixteenBitInputsAreCutFromAQuarterOfTheThreshold) {
  const auto m = module_returning("x", "x - x.mean(0, keepdim=True)");
  struct Case {
    std::vector<int64_t> shape;
    c10::ScalarType dtype;
    const char* tune;
    size_t kernels;
  };
  const std::vector<Case> cases = {
      {{4096, 4096}, c10::kBFloat16, "", 2}, {{4096, 4096}, c10::kFloat, "", 1},
      {{2048, 256}, c10::kBFloat16, "column_cut_kb=5120", 1},  // 1 MiB
      {{2048, 768}, c10::kBFloat16, "column_cut_kb=5120", 2},  // 3 MiB
      {{2048, 512}, c10::kFloat, "column_cut_kb=5120", 1},     // 4 MiB
      {{2048, 1024}, c10::kFloat, "column_cut_kb=5120", 2},    // 8 MiB
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.shape) + " " + c10::toString(c.dtype) + " [" + c.tune + "]");
    const auto e = explain(m, {torch::randn(c.shape).to(c.dtype)}, c.tune);
    EXPECT_EQ(e.kernels.size(), c.kernels) << e.ir_after << ::testing::PrintToString(e.refused);
  }
}

// The epilogue takes the element ops after the subtract with it (a scale, a second input, an
// output of the difference itself), and a middle dim's, a max's and a logsumexp's column values;
// the column group keeps what the reductions read (x * w before the mean; logsumexp's passes).
TEST(CutColumnEpilogues, TheEpilogueTakesEveryElementOpAfterTheReductions) {
  struct Case {
    std::string args, expr;
    std::vector<std::vector<int64_t>> shapes;
    const char* stats;
    const char* epilogue;
  };
  const std::vector<Case> cases = {
      {"x, y", "(x - x.mean(0, keepdim=True)) * 2.0 + y", {{2048, 512}, {2048, 512}}, "ops: reduce_sum -> div", "ops: sub -> mul -> add"},
      {"x", "x / x.sum(1, keepdim=True)", {{8, 512, 128}}, "ops: reduce_sum", "ops: div"},
      {"x", "x * x.amax(0, keepdim=True)", {{2048, 512}}, "ops: reduce_max", "ops: mul"},
      {"x, w", "x - (x * w).mean(0, keepdim=True)", {{2048, 512}, {512}}, "ops: mul -> reduce_sum -> div", "ops: sub"},
      // The column groups keep their passes (max, then the sum of exponentials; the mean, then
      // the variance, which reads x - mean of its own).
      {"x", "torch.logsumexp(x, 0, keepdim=True) - x", {{2048, 512}}, "ops: reduce_max", "ops: sub"},
      {"x", "(x - x.mean(0, keepdim=True)) * torch.rsqrt(x.var(0, keepdim=True, unbiased=False) + 1e-5)", {{2048, 512}},
       "ops: reduce_sum -> div -> reduce_sum", "ops: sub -> mul"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.expr);
    std::vector<c10::IValue> in;
    for (const auto& s : c.shapes) in.emplace_back(torch::randn(s));
    const auto e = explain(module_returning(c.args, c.expr), in, "column_cut_kb=1024");
    ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after << ::testing::PrintToString(e.refused);
    EXPECT_TRUE(tftest::contains_in_order(e.ir_after, {"(column_reduction, ", c.stats, "(pointwise, ", c.epilogue})) << e.ir_after;
    EXPECT_EQ(e.rewritten_graph.find("aten::"), std::string::npos) << e.rewritten_graph;
  }
}

// A value of neither the element nor the per-column shape (a comparison of another group's
// column values, [1, 255, 31] beside columns of [408, 1, 31]) goes with the epilogue, which
// broadcasts it (fuzz seed 42, program 479: the column group wrote it over its domain). Returned
// as well, the comparison joins the other group as one of its column values.
TEST(CutColumnEpilogues, ValuesOfOtherShapesGoWithTheEpilogue) {
  const std::string body = "    a = y.amax(1, keepdim=True)\n    t = torch.logsumexp(x, 0, keepdim=True)\n    c = t > 0.1\n";
  const std::vector<c10::IValue> in{torch::randn({408, 255, 31}).to(c10::kBFloat16), torch::randn({408, 255, 31}).to(c10::kBFloat16)};
  const auto cut = explain(tftest::module_from("def forward(self, x, y):\n" + body + "    return torch.where(c, t, a)\n"), in, "column_cut_kb=1");
  ASSERT_EQ(cut.kernels.size(), 3u) << cut.ir_after;
  EXPECT_TRUE(tftest::contains_in_order(cut.ir_after, {"(column_reduction, amax, ", "ops: reduce_max\n", "(pointwise, ", "ops: gt -> where"}))
      << cut.ir_after;
  EXPECT_TRUE(said(cut, kCut)) << ::testing::PrintToString(cut.refused);
  const auto returned = explain(tftest::module_from("def forward(self, x, y):\n" + body + "    return torch.where(c, t, a), c\n"), in, "column_cut_kb=1");
  ASSERT_EQ(returned.kernels.size(), 3u) << returned.ir_after;
  EXPECT_TRUE(tftest::contains_in_order(returned.ir_after, {"(column_reduction, amax, ", "ops: reduce_max\n", "(column_reduction, logsumexp, ",
                                                            "-> add -> gt\n", "(pointwise, ", "ops: where"}))
      << returned.ir_after;
}

// An epilogue reading a value the reductions read of neither shape (w * 2.0, [1, 255, 31], beside
// columns of [64, 1, 31]) keeps the group whole: the column group could not write it (it tried,
// an internal error, before the check).
TEST(CutColumnEpilogues, EpiloguesReadingPrologueValuesOfOtherShapesStayWhole) {
  const auto m = tftest::module_from(
      "def forward(self, x, w):\n    p = w * 2.0\n    s = (x * p).sum(1, keepdim=True)\n    return x / s * p\n");
  const auto e = explain(m, {torch::randn({64, 255, 31}), torch::randn({1, 255, 31})}, "column_cut_kb=1");
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_TRUE(tftest::contains_in_order(e.ir_after, {"(column_reduction, ", "ops: mul -> mul -> reduce_sum -> div -> mul"})) << e.ir_after;
  EXPECT_FALSE(said(e, kCut)) << ::testing::PrintToString(e.refused);
}

// Epilogues that read an element value the reductions read too (softmax's exp, log_softmax's
// x - max, a normalization's x - mean when the variance reads the same value, x * w when the
// mean reads it) stay one kernel: cut, that value would be written out whole.
TEST(CutColumnEpilogues, EpiloguesSharingElementValuesStayWhole) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"x", "    return torch.softmax(x, 0)\n"},
      {"x", "    return torch.log_softmax(x, 0)\n"},
      {"x", "    d = x - x.mean(0, keepdim=True)\n    return d * torch.rsqrt((d * d).mean(0, keepdim=True) + 1e-5)\n"},
      {"x, w", "    return (x * w) - (x * w).mean(0, keepdim=True)\n"},
  };
  for (const auto& [args, body] : cases) {
    SCOPED_TRACE(body);
    std::vector<c10::IValue> in{torch::randn({2048, 512})};
    if (args != "x") in.emplace_back(torch::randn({512}));
    const auto e = explain(tftest::module_from("def forward(self, " + args + "):\n" + body), in, "column_cut_kb=1024");
    EXPECT_EQ(e.kernels.size(), 1u) << e.ir_after;
    EXPECT_FALSE(said(e, kCut)) << ::testing::PrintToString(e.refused);
  }
}

}  // namespace
