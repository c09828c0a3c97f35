// Reductions on the CPU side: conversion of every reduction op, grouping of the suite's
// patterns into one kernel each, refusals, and every reduction kernel through NVRTC for sm_90.
#include <torch/csrc/jit/runtime/operator.h>

#include "codegen/tuning.h"
#include "passes/reduction_schedule.h"
#include "runtime/process_tuning.h"
#include "tests/suite_modules.h"
#include "tests/test_util.h"

using tftest::contains_in_order;
using tftest::module_from;
using tftest::module_returning;

namespace {

torchfuse::Explanation explain(const torch::jit::Module& m, const std::vector<c10::IValue>& in, bool compile = false) {
  return torchfuse::compile(m, tftest::quiet_options()).explain(in, compile);
}

TEST(Reductions, EverySuitePatternIsOneGroupAndCompiles) {
  for (const auto& p : tftest::suite_patterns()) {
    SCOPED_TRACE(p.name);
    auto m = module_from(tftest::with_row_length(p.source, 96));
    const auto e = explain(m, tftest::suite_small_inputs(p.name), /*compile=*/true);
    ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << ::testing::PrintToString(e.refused);
    EXPECT_EQ(tftest::fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
    EXPECT_EQ(e.rewritten_graph.find("aten::"), std::string::npos) << e.rewritten_graph;
    EXPECT_GT(e.cubin_bytes.at(0), 0u);
  }
}

TEST(Reductions, SchedulesFollowTheReducedDims) {
  const auto x = torch::randn({16, 24, 40});
  EXPECT_NE(explain(module_returning("x", "torch.softmax(x, -1)"), {x}).ir_after.find("(row_reduction"), std::string::npos);
  EXPECT_NE(explain(module_returning("x", "x.sum(0) * 2.0"), {x}).ir_after.find("(column_reduction"), std::string::npos);
  EXPECT_NE(explain(module_returning("x", "x.amax(1) + 1.0"), {x}).ir_after.find("(column_reduction"), std::string::npos);
  EXPECT_NE(explain(module_returning("x", "(x * x).sum()"), {x}).ir_after.find("(full_reduction"), std::string::npos);
  EXPECT_NE(explain(module_returning("x", "x.sum([1, 2])"), {x}).ir_after.find("(row_reduction"), std::string::npos);
}

struct ReduceCase {
  std::string expr;
  std::vector<std::string> ir;
};

class ConvertReduction : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(ConvertReduction, BecomesPrimitives) {
  const auto& c = GetParam();
  const auto e = explain(module_returning("x", c.expr), {torch::randn({6, 10, 12})});
  std::vector<std::string> needles;
  for (const auto& op : c.ir) needles.push_back(" = " + op);
  EXPECT_TRUE(contains_in_order(e.ir_before, needles));
  EXPECT_EQ(e.ir_before.find("= aten::"), std::string::npos) << e.ir_before;
  EXPECT_GE(e.kernels.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    EveryReduction, ConvertReduction,
    ::testing::Values(
        ReduceCase{"x.sum(-1)", {"reduce_sum[dims=[2]]("}},
        ReduceCase{"x.sum([0, 1], keepdim=True)", {"reduce_sum[dims=[0, 1], keepdim]("}},
        ReduceCase{"torch.sum(x)", {"reduce_sum[dims=[0, 1, 2]]("}},
        ReduceCase{"x.mean(1)", {"reduce_sum[dims=[1]](", "div(%"}},
        ReduceCase{"x.mean(-1, keepdim=True)", {"reduce_sum[dims=[2], keepdim](", "div("}},
        ReduceCase{"x.amax(-1)", {"reduce_max[dims=[2]]("}}, ReduceCase{"x.amin(0)", {"reduce_min[dims=[0]]("}},
        ReduceCase{"torch.max(x)", {"reduce_max[dims=[0, 1, 2]]("}},
        ReduceCase{"x.max(dim=1, keepdim=True)[0]", {"reduce_max[dims=[1], keepdim]("}},
        ReduceCase{"x.min(dim=2)[0]", {"reduce_min[dims=[2]]("}},
        ReduceCase{"x.var(-1)", {"reduce_sum[dims=[2], keepdim](", "sub(", "mul(", "reduce_sum[dims=[2]](", "div("}},
        ReduceCase{"x.std(-1, unbiased=False)", {"reduce_sum", "reduce_sum", "div(", "sqrt("}},
        ReduceCase{"torch.var(x, 2, correction=0, keepdim=True)", {"reduce_sum", "reduce_sum[dims=[2], keepdim]"}},
        ReduceCase{"torch.logsumexp(x, 2)", {"reduce_max[dims=[2], keepdim](", "exp(", "reduce_sum[dims=[2]](", "log("}},
        ReduceCase{"torch.softmax(x, -1)", {"reduce_max[dims=[2], keepdim](", "exp(", "reduce_sum", "div("}},
        ReduceCase{"torch.log_softmax(x, 2)", {"reduce_max", "sub(", "exp(", "reduce_sum", "log(", "sub("}},
        ReduceCase{"torch.layer_norm(x, [12])", {"reduce_sum", "sub(", "reduce_sum", "rsqrt(", "mul("}},
        ReduceCase{"torch.layer_norm(x, [10, 12], None, None, 1e-6)", {"reduce_sum[dims=[1, 2], keepdim]", "rsqrt("}},
        ReduceCase{"torch.norm(x)", {"mul(", "reduce_sum[dims=[0, 1, 2]](", "sqrt("}},
        ReduceCase{"torch.linalg_vector_norm(x, 2, [-1])", {"mul(", "reduce_sum[dims=[2]](", "sqrt("}},
        ReduceCase{"torch.adaptive_avg_pool2d(x, [1, 1])", {"reduce_sum[dims=[1, 2], keepdim](", "div("}},
        ReduceCase{"torch.adaptive_avg_pool1d(x, [1])", {"reduce_sum[dims=[2], keepdim](", "div("}}));

// Adaptive pooling to other sizes than 1 stays in ATen, with the reason.
TEST(Reductions, AdaptivePoolingToMoreThanOneStaysInAten) {
  const auto e = explain(module_returning("x", "torch.adaptive_avg_pool2d(x, [2, 3]) * 2.0"), {torch::randn({2, 4, 6, 6})});
  bool found = false;
  for (const auto& r : e.refused) found = found || r.find("only an output_size of constant 1s (global pooling) is fused") != std::string::npos;
  EXPECT_TRUE(found) << ::testing::PrintToString(e.refused);
  EXPECT_NE(e.rewritten_graph.find("aten::adaptive_avg_pool2d"), std::string::npos) << e.rewritten_graph;
}

TEST(Reductions, RmsNormWhereLibTorchHasIt) {
  if (torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString("aten::rms_norm")).empty()) {
    GTEST_SKIP() << "this LibTorch has no aten::rms_norm";
  }
  const auto e = explain(module_returning("x, w", "torch.rms_norm(x, [12], w, 1e-6)"), {torch::randn({6, 12}), torch::randn({12})});
  EXPECT_TRUE(contains_in_order(e.ir_before, {"mul(", "reduce_sum", "rsqrt(", "mul(", "mul("}));
  EXPECT_EQ(e.kernels.size(), 1u);
}

TEST(Reductions, NonContiguousReducedDimsAreRefused) {
  const auto e = explain(module_returning("x", "x.sum([0, 2]) * 2.0"), {torch::randn({4, 5, 6})});
  bool found = false;
  for (const auto& r : e.refused) found = found || r.find("not one contiguous block") != std::string::npos;
  EXPECT_TRUE(found) << ::testing::PrintToString(e.refused);
  EXPECT_NE(e.rewritten_graph.find("aten::sum"), std::string::npos) << e.rewritten_graph;
}

// Column groups that read their own reductions (a full-size epilogue on a column mean, softmax,
// log_softmax and variance normalizations over leading or middle dims) are one kernel of several
// passes (generate_column_normalization); the kernels build for sm_90.
TEST(Reductions, MultiPassOpsOverLeadingAndMiddleDimsAreOneColumnKernel) {
  const std::vector<std::pair<const char*, std::vector<int64_t>>> cases = {
      {"x - x.mean(0, keepdim=True)", {64, 32}},
      {"torch.softmax(x, 0)", {64, 32}},
      {"torch.softmax(x, 1)", {4, 50, 33}},
      {"torch.log_softmax(x * 2.0, 0)", {7, 5, 3}},
      {"(x - x.mean(1, keepdim=True)) * torch.rsqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5)", {3, 40, 16}},
      {"torch.logsumexp(x, 1, keepdim=True) - x", {6, 9, 10}},
  };
  for (const auto& [expr, shape] : cases) {
    SCOPED_TRACE(std::string(expr) + " " + ::testing::PrintToString(shape));
    const auto e = explain(module_returning("x", expr), {torch::randn(shape)}, /*compile=*/true);
    ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << ::testing::PrintToString(e.refused);
    EXPECT_NE(e.ir_after.find("(column_reduction"), std::string::npos) << e.ir_after;
    EXPECT_NE(e.kernels[0].source.find("passes)"), std::string::npos) << e.kernels[0].source;
    EXPECT_EQ(e.rewritten_graph.find("aten::"), std::string::npos) << e.rewritten_graph;
    EXPECT_GT(e.cubin_bytes.at(0), 0u);
  }
}

// Few columns over long rows take their passes in one kernel too: each tile's rows split over
// blocks that meet between passes (choose_column_pass_split), nothing refused.
TEST(Reductions, FewLongColumnsSplitTheirPasses) {
  const auto e = explain(module_returning("x", "x - x.mean(0, keepdim=True)"), {torch::randn({4096, 64})}, /*compile=*/true);
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << ::testing::PrintToString(e.refused);
  EXPECT_NE(e.kernels[0].source.find("(column reduction, 2 passes)"), std::string::npos) << e.kernels[0].source;
  EXPECT_NE(e.kernels[0].source.find("_tile_barrier(tile_counter"), std::string::npos) << e.kernels[0].source;
  EXPECT_EQ(tftest::fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
  EXPECT_TRUE(e.refused.empty()) << ::testing::PrintToString(e.refused);
}

// Column passes that read their columns again in every pass take 16-byte vectors of adjacent
// columns a thread where the inner dim is contiguous (column_pass_vector): vector loads and
// stores, per-lane accumulators and row values (a column's weight, rin<k>_l<j>), an element
// input broadcast along the columns loaded once a row, the vector narrowed until a warp still
// covers the columns (under column_pass_vectors=1); transposed inputs, cached columns and the
// default (column_pass_vectors=0) keep one column a thread. Every kernel builds for sm_90.
TEST(Reductions, LongColumnsTakeVectorsOfColumns) {
  struct Case {
    std::string expr, args;
    std::vector<torch::Tensor> in;
    const char* spec;
    int vec;
  };
  const auto f = c10::kFloat, h = c10::kBFloat16;
  auto r = [](std::vector<int64_t> s, c10::ScalarType t) { return torch::randn(s).to(t); };
  const std::string norm = "(x - x.mean(0, keepdim=True)) * torch.rsqrt(x.var(0, keepdim=True, unbiased=False) + 1e-5) * w";
  const std::vector<Case> cases = {
      {"x - x.mean(0, keepdim=True)", "x", {r({8192, 1024}, f)}, "column_pass_vectors=1", 4},
      {"x - x.mean(0, keepdim=True)", "x", {r({8192, 1024}, h)}, "column_pass_vectors=1", 8},
      {"torch.softmax(x, 0)", "x", {r({8192, 1000}, h)}, "column_pass_vectors=1", 8},
      {"torch.softmax(x, 1)", "x", {r({2, 8192, 264}, f)}, "column_pass_vectors=1", 4},
      {norm, "x, w", {r({16384, 512}, h), r({512}, h)}, "column_pass_vectors=1", 8},
      {"torch.softmax(x + y, 0)", "x, y", {r({8192, 512}, f), r({8192, 1}, f)}, "column_pass_vectors=1", 4},
      {"torch.softmax(x, 0)", "x", {r({8192, 64}, h)}, "column_pass_vectors=1,column_cache=0", 2},
      {"torch.softmax(x, 0)", "x", {r({8192, 1024}, h)}, "column_pass_vectors=1,column_pass_blocks=0,column_cache=0", 8},
      {"torch.softmax(x, 0)", "x", {r({1024, 8192}, h).t()}, "column_pass_vectors=1", 1},
      {"torch.softmax(x, 0)", "x", {r({8192, 1024}, h)}, "", 1},  // the default: off
      {"torch.softmax(x, 0)", "x", {r({2048, 1024}, f)}, "column_pass_vectors=1", 1},  // cached: 32 rows a thread
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.expr + " " + ::testing::PrintToString(c.in[0].sizes()) + " " + c10::toString(c.in[0].scalar_type()) + " [" +
                 c.spec + "]");
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(c.spec));
    std::vector<c10::IValue> in(c.in.begin(), c.in.end());
    const auto e = explain(module_returning(c.args, c.expr), in, /*compile=*/true);
    ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << ::testing::PrintToString(e.refused);
    const std::string& src = e.kernels[0].source;
    EXPECT_NE(src.find("passes)"), std::string::npos) << src;
    EXPECT_GT(e.cubin_bytes.at(0), 0u);
    if (c.vec == 1) {
      EXPECT_NE(src.find("// 32 columns along"), std::string::npos) << src;
      EXPECT_EQ(src.find("/* column i + "), std::string::npos) << src;
      continue;
    }
    const std::string v = std::to_string(c.vec);
    EXPECT_NE(src.find("32 x " + v + " columns (" + v + " a thread)"), std::string::npos) << src;
    EXPECT_NE(src.find(" % tiles) * " + std::to_string(32 * c.vec) + " + tx * " + v + ";"), std::string::npos) << src;
    EXPECT_NE(src.find("/* column i + " + std::to_string(c.vec - 1) + " */"), std::string::npos) << src;
    EXPECT_EQ(src.find("/* column i + " + v + " */"), std::string::npos) << src;
    const std::string storage = c.in[0].scalar_type() == h ? "tf_bf16" : "float";
    EXPECT_NE(src.find("*reinterpret_cast<const tf_vec<" + storage + ", " + v + ">*>(in0 + "), std::string::npos) << src;
    EXPECT_NE(src.find("*reinterpret_cast<tf_vec<" + storage + ", " + v + ">*>(out0 + "), std::string::npos) << src;
    if (c.args == "x, w") EXPECT_NE(src.find("rin1_l" + std::to_string(c.vec - 1) + " = ok ? "), std::string::npos) << src;
    // y is [8192, 1]: one load a row, the same value in every lane.
    if (c.args == "x, y") EXPECT_NE(src.find("c1[u] = in1[ooff1 + ioff1 + roff1];"), std::string::npos) << src;
  }
}

// Split column passes that loop over their rows accumulate softmax sums with their max
// (Tuning::column_online): one pass fewer over the columns, each step's values folded in with one
// rescale; cached columns, and column_online=0, keep the sum's pass. Softmax, log_softmax and a
// logsumexp epilogue, one column and vectors of columns a thread, one launch and a launch per
// pass; every kernel builds for sm_90.
TEST(Reductions, LoopedColumnSplitsTakeOnlineSoftmaxSums) {
  struct Case {
    const char* expr;
    std::vector<int64_t> shape;
    c10::ScalarType dtype;
    const char* spec;
    int passes;  // with online sums
  };
  const auto f = c10::kFloat, h = c10::kBFloat16;
  const std::vector<Case> cases = {
      {"torch.softmax(x, 0)", {16384, 2048}, f, "", 2},
      {"torch.softmax(x, 0)", {16384, 2048}, h, "", 2},
      {"torch.log_softmax(x * 0.5, 0)", {16384, 1024}, h, "", 2},
      {"torch.logsumexp(x, 0, keepdim=True) - x", {20000, 97}, f, "column_cache=0", 2},
      {"torch.softmax(x, 0)", {16384, 2048}, h, "column_pass_vectors=1", 2},
      {"torch.softmax(x, 0)", {16384, 2048}, f, "column_pass_launches=8", 2},
      {"torch.softmax(x, 0)", {16384, 2048}, f, "column_online=0", 3},
      {"torch.softmax(x, 0)", {4096, 64}, f, "", 3},  // cached: registers, not memory, read again
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.expr) + " " + ::testing::PrintToString(c.shape) + " " + c10::toString(c.dtype) + " [" + c.spec + "]");
    torchfuse::runtime::ScopedTuning t(torchfuse::codegen::parse_tuning(c.spec));
    const auto e = explain(module_returning("x", c.expr), {torch::randn(c.shape).to(c.dtype)}, /*compile=*/true);
    ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << ::testing::PrintToString(e.refused);
    const std::string& src = e.kernels[0].source;
    EXPECT_GT(e.cubin_bytes.at(0), 0u);
    const bool cached = src.find("rows of the element inputs in registers") != std::string::npos;
    const bool online = src.find("softmax sums accumulate with their max (online)") != std::string::npos;
    EXPECT_EQ(online, std::string(c.spec) != "column_online=0" && !cached) << src;
    EXPECT_EQ(online, c.passes == 2) << src;
    EXPECT_NE(src.find("(column reduction, " + std::to_string(c.passes) + " passes)"), std::string::npos) << src;
    EXPECT_EQ(src.find("tf_online_add(acc") != std::string::npos, online) << src;
    if (!online) continue;
    EXPECT_NE(src.find("tf_max_sum* part_acc"), std::string::npos) << src;
    EXPECT_NE(src.find("= __int_as_float(0xff800000);"), std::string::npos) << src;  // rows past the range
    if (std::string(c.spec) == "column_pass_vectors=1") EXPECT_NE(src.find("[lane][u] = "), std::string::npos) << src;
  }
}

// Full reductions still take one pass: over every dim of more than one block's row, the mean
// fuses and its full-size epilogue stays in ATen, with the reason.
TEST(Reductions, FullReductionEpiloguesStayInAtenWithReason) {
  const auto e = explain(module_returning("x", "x - x.mean()"), {torch::randn({300, 200})});
  EXPECT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_NE(e.ir_after.find("(full_reduction"), std::string::npos) << e.ir_after;
  bool found = false;
  for (const auto& r : e.refused) found = found || r.find("a full-size epilogue needs a second pass (full_reduction schedules take one pass") != std::string::npos;
  EXPECT_TRUE(found) << ::testing::PrintToString(e.refused);
}

// A single row ([1, N], [N], [1, 1, N]) whose elements read its own reduction (softmax, x -
// x.mean()) is one row of the row schedule; one that does not (a sum) keeps the full-reduction
// schedule, which spreads over the device; rows over kMaxSingleRow stay in ATen, with the reason.
TEST(Reductions, SingleRowsTakeTheRowSchedule) {
  const char* manual = "torch.exp(x - x.amax(-1, keepdim=True)) / torch.exp(x - x.amax(-1, keepdim=True)).sum(-1, keepdim=True)";
  for (const char* expr : {"torch.softmax(x, -1)", manual, "torch.logsumexp(x, -1)", "x - x.mean()"}) {
    for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{1, 2056}, {2056}, {1, 1, 4096}, {1, 32768}}) {
      SCOPED_TRACE(std::string(expr) + " " + ::testing::PrintToString(shape));
      const auto e = explain(module_returning("x", expr), {torch::randn(shape)}, /*compile=*/true);
      ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << ::testing::PrintToString(e.refused);
      EXPECT_NE(e.ir_after.find("(row_reduction"), std::string::npos) << e.ir_after;
      EXPECT_EQ(e.rewritten_graph.find("aten::"), std::string::npos) << e.rewritten_graph;
      EXPECT_GT(e.cubin_bytes.at(0), 0u);
    }
  }
  const auto sum = explain(module_returning("x", "x.sum(-1) * 2.0"), {torch::randn({1, 2056})});
  EXPECT_NE(sum.ir_after.find("(full_reduction"), std::string::npos) << sum.ir_after;
  const int64_t too_long = torchfuse::kMaxSingleRow + 8;
  const auto e = explain(module_returning("x", "torch.softmax(x, -1)"), {torch::randn({1, too_long})});
  EXPECT_TRUE(e.kernels.empty()) << e.ir_after;
  bool found = false;
  const std::string why = "one row of more than " + std::to_string(torchfuse::kMaxSingleRow) + " elements";
  for (const auto& r : e.refused) found = found || r.find(why) != std::string::npos;
  EXPECT_TRUE(found) << ::testing::PrintToString(e.refused);
  EXPECT_NE(e.rewritten_graph.find("aten::softmax"), std::string::npos) << e.rewritten_graph;
}

TEST(Reductions, SeveralReductionsShareOneKernel) {
  // max and sum (logsumexp), mean and variance (layer norm): one group each.
  for (const char* expr : {"torch.logsumexp(x, -1)", "torch.layer_norm(x, [32])", "x.var(-1) + x.mean(-1)"}) {
    const auto e = explain(module_returning("x", expr), {torch::randn({8, 32})});
    EXPECT_EQ(e.kernels.size(), 1u) << expr << "\n" << e.ir_after;
  }
}

TEST(Reductions, RowKernelsCompileForEveryRowLength) {
  for (int64_t cols : {1, 31, 768, 1000, 4096, 50257, 65536, 262144}) {
    SCOPED_TRACE(cols);
    const auto e = explain(module_returning("x", "torch.softmax(x, -1)"), {torch::randn({2, cols})}, true);
    ASSERT_EQ(e.kernels.size(), 1u);
    EXPECT_GT(e.cubin_bytes[0], 0u);
  }
}

}  // namespace

namespace {

TEST(Reductions, SquareShapesDoNotConfuseRowsWithColumns) {
  // With R == C a [C] weight and a [R] row value have the same shape; use decides.
  const auto e = explain(module_from("def forward(self, x, w, q):\n    y = torch.layer_norm(x, [96]) * w\n"
                                     "    return (y, x.sum(-1) + q)\n"),
                         {torch::randn({96, 96}), torch::randn({96}), torch::randn({96})}, true);
  ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after;
  // The weight is read per element (a column of the row), q once per row.
  EXPECT_NE(e.kernels[0].source.find("in1 = %1 f32, inner_contiguous"), std::string::npos) << e.kernels[0].source;
  EXPECT_NE(e.kernels[1].source.find("rin1"), std::string::npos) << e.kernels[1].source;
}

}  // namespace
