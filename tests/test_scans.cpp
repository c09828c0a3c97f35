// cumsum fused by the row schedule's scans (passes/fuse_reductions.cpp, codegen/row_reduction.cpp),
// on the CPU: the plans (one kernel with its neighbours, the op gone from the graph), the printed
// IR, NVRTC builds of the kernels, eager's results through the groups' ATen fallbacks, and the
// scans left to ATen with their reasons. The GPU runs the kernels in tests/test_scans_gpu.cpp.
#include "tests/fallback_util.h"
#include "tests/view_test_util.h"

namespace {

using tftest::joined;

struct ScanCase {
  const char* name;
  const char* args;
  const char* expr;
  std::vector<std::vector<int64_t>> shapes;
  bool integer_input;  // the first input holds 0s and 1s as int64 (an attention mask)
};

// Where cumsum sits in models: position ids from a padding mask, cumulative probabilities of a
// sampler (after a sort, which stays in ATen), a running mean, a bool mask counted.
const std::vector<ScanCase> kCases = {
    {"plain", "x", "torch.cumsum(x, -1)", {{8, 100}}, false},
    {"chain", "x", "torch.cumsum(torch.relu(x * 2.0), -1) + 1.0", {{8, 100}}, false},
    {"position_ids", "m", "(m.cumsum(-1) - 1).masked_fill(m == 0, 1)", {{4, 128}}, true},
    {"top_p", "x", "torch.softmax(x, -1).cumsum(-1) > 0.9", {{16, 1000}}, false},
    {"running_mean", "x", "x.cumsum(2) / (torch.arange(50) + 1.0)", {{4, 6, 50}}, false},
    {"count_positive", "x", "(x > 0).cumsum(-1) * 2", {{8, 64}}, false},
    {"float_dtype", "x", "torch.cumsum(x * 2.0, -1, dtype=6)"  /* 6: float32 */, {{8, 64}}, false},
    {"scan_then_sum", "x", "torch.cumsum(x, -1).sum(-1) * 2.0", {{8, 33}}, false},
    {"one_row", "x", "torch.cumsum(torch.exp(x), 0)", {{300}}, false},
};

std::vector<c10::IValue> inputs(const ScanCase& c, c10::ScalarType dtype) {
  std::vector<c10::IValue> in;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    if (i == 0 && c.integer_input) {
      in.emplace_back(torch::randint(0, 2, c.shapes[i], torch::kLong));
      continue;
    }
    in.emplace_back(torch::randn(c.shapes[i]).to(dtype));
  }
  return in;
}

TEST(Scans, CumsumFusesWithItsNeighbours) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto m = tftest::module_returning(c.args, c.expr);
    const auto e = tftest::explain(m, inputs(c, c10::kFloat));
    EXPECT_EQ(e.kernels.size(), 1u) << tftest::refusals(e) << e.ir_after;
    EXPECT_EQ(e.rewritten_graph.find("aten::cumsum"), std::string::npos) << e.rewritten_graph;
    EXPECT_NE(e.ir_before.find(" = cumsum[dims=["), std::string::npos) << e.ir_before;
  }
}

TEST(Scans, KernelsCompileInEveryDtype) {
  for (const auto& c : kCases) {
    for (const auto dtype : {c10::kFloat, c10::kBFloat16, c10::kDouble}) {
      SCOPED_TRACE(std::string(c.name) + " " + c10::toString(dtype));
      const auto e = tftest::explain(tftest::module_returning(c.args, c.expr), inputs(c, dtype), /*compile=*/true);
      ASSERT_EQ(e.kernels.size(), 1u) << tftest::refusals(e);
      ASSERT_EQ(e.cubin_bytes.size(), 1u);
      for (size_t b : e.cubin_bytes) EXPECT_GT(b, 0u);
      bool scans = false;
      for (const auto& k : e.kernels) scans = scans || k.source.find("tf_team_scan<") != std::string::npos ||
                                                 k.source.find("tf_block_scan<") != std::string::npos;
      EXPECT_TRUE(scans) << "no team scan in the kernels";
    }
  }
}

// Long rows take a block-wide team (tf_block_scan), short ones part of a warp (tf_team_scan).
TEST(Scans, TeamsByRowLength) {
  const auto m = tftest::module_returning("x", "torch.cumsum(x * 2.0, -1)");
  for (const auto& [cols, block] : std::vector<std::pair<int64_t, bool>>{{24, false}, {4096, true}}) {
    SCOPED_TRACE(cols);
    const auto e = tftest::explain(m, {torch::randn({16, cols})}, /*compile=*/true);
    ASSERT_EQ(e.kernels.size(), 1u) << tftest::refusals(e);
    EXPECT_NE(e.kernels[0].source.find(block ? "tf_block_scan<" : "tf_team_scan<"), std::string::npos) << e.kernels[0].source;
  }
}

// Rows too long for registers are scanned in steps of a block (tf_block_scan_step), carrying the
// row's sum; the pass that computed the scan's input for its chunk totals is gone. NVRTC builds
// the kernels in f32, bf16 and f64.
TEST(Scans, LongRowsScanInStepsOfABlock) {
  struct Long {
    const char* expr;
    std::vector<int64_t> shape;
    int loops;      // loops over the row: one per pass (the scan's input's pass is skipped)
    int loops_f64;  // the same in float64 (no online softmax sums: the max and the sum take a pass each)
  };
  const std::vector<Long> cases = {
      {"torch.cumsum(x * 2.0, -1)", {4, 40000}, 1, 1},
      {"torch.softmax(x / 0.7, -1).cumsum(-1) < 0.9", {8, 32000}, 2, 3},  // the softmax's sums, then the scan
      {"torch.cumsum(torch.relu(x), -1) / x.sum(-1, keepdim=True)", {2, 100000}, 2, 2},
      {"torch.cumsum(x, -1) + torch.cumsum(x * x, -1)", {2, 50000}, 1, 1},  // two scans in one step
  };
  for (const auto& c : cases) {
    for (const auto dtype : {c10::kFloat, c10::kBFloat16, c10::kDouble}) {
      SCOPED_TRACE(std::string(c.expr) + " " + c10::toString(dtype));
      const auto e =
          tftest::explain(tftest::module_returning("x", c.expr), {torch::randn(c.shape).to(dtype)}, /*compile=*/true);
      ASSERT_EQ(e.kernels.size(), 1u) << tftest::refusals(e);
      ASSERT_EQ(e.cubin_bytes.size(), 1u);
      EXPECT_GT(e.cubin_bytes[0], 0u);
      const std::string& src = e.kernels[0].source;
      EXPECT_NE(src.find("tf_block_scan_step<"), std::string::npos) << src;
      EXPECT_EQ(src.find("scan_tot0[k]"), std::string::npos) << "looped rows keep no chunk totals\n" << src;
      const auto count = [&](const std::string& what) {
        size_t n = 0;
        for (size_t at = src.find(what); at != std::string::npos; at = src.find(what, at + 1)) ++n;
        return n;
      };
      // Loops over the row: plain ones (j0), unrolled ones and the scans' steps (jb).
      const size_t loops = count("(tf_index)p.cols; j0 += ") + count("(tf_index)p.cols; jb += ");
      EXPECT_EQ(loops, static_cast<size_t>(dtype == c10::kDouble ? c.loops_f64 : c.loops)) << src;
      EXPECT_EQ(count("for (tf_index jb = 0;"), 1u) << src;
    }
  }
}

// The fused graphs' results through the groups' fallbacks are eager's own ops: the same values.
TEST(Scans, FallbacksGiveEagersResults) {
  for (const auto& c : kCases) {
    for (const auto dtype : {c10::kFloat, c10::kBFloat16}) {
      SCOPED_TRACE(std::string(c.name) + " " + c10::toString(dtype));
      const auto [got, want] = tftest::fallback_and_eager(tftest::module_returning(c.args, c.expr), inputs(c, dtype));
      ASSERT_EQ(got.scalar_type(), want.scalar_type());
      EXPECT_TRUE(torch::equal(got, want));
    }
  }
}

// Scans the row schedule does not take stay in ATen, and explain() says why.
TEST(Scans, RefusedWithTheReason) {
  struct Refused {
    const char* expr;
    std::vector<int64_t> shape;
    const char* reason;
  };
  const std::vector<Refused> cases = {
      {"torch.cumsum(x * 2.0, 0)", {64, 100}, "the row schedule scans along the last dim only"},
      {"torch.cumsum(x * 2.0, 1)", {4, 100, 8}, "the row schedule scans along the last dim only"},
      {"torch.cumsum(x * 2.0, -1)", {2, 300000}, "rows of 300000 elements, over the 262144 one block scans"},
      {"torch.cumprod(x * 2.0, -1)", {4, 100}, "a prefix product along a dim: the scan schedule adds (cumsum) only"},
      {"torch.cumsum(x, -1) + x.sum(0)", {16, 100}, "it reduces dims [0] of [16, 100], the group reduces dims [1] of [16, 100]"},
      // A reduced row of one element scanned along the dim it was reduced over (fuzz seed 37, program 2005).
      {"torch.cumsum(x.mean(-1, keepdim=True), 0)", {1}, "a reduced value: the row schedule scans element values"},
      {"torch.cumsum(x.sum(-1, keepdim=True) * 2.0, -1)", {4, 1}, "a reduced value: the row schedule scans element values"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.expr);
    const auto m = tftest::module_returning("x", c.expr);
    const auto e = tftest::explain(m, {torch::randn(c.shape)});
    EXPECT_TRUE(tftest::any_line_has(e.refused, c.reason)) << joined(e.refused);
    const auto [got, want] = tftest::fallback_and_eager(m, {torch::randn(c.shape)});
    EXPECT_TRUE(torch::allclose(got, want));
  }
}

// A group no layout runs on its profiled shapes stays in ATen from the start, with the reason:
// here a register budget of one register a thread (a tuning knob) leaves the rows of 4096 of a
// cumsum of a cumsum only a looped layout, which scans no scan's output.
TEST(Scans, UnplannableGroupsStayInAtenWithTheReason) {
  auto options = tftest::quiet_options();
  options.offline_arch = "sm_90";
  options.tune = "row_cache_registers=1";
  const auto m = tftest::module_returning("x", "torch.cumsum(torch.cumsum(x * 2.0, -1), -1) + 1.0");
  const auto e = torchfuse::compile(m, options).explain({torch::randn({16, 4096})});
  EXPECT_EQ(e.kernels.size(), 0u);
  EXPECT_TRUE(tftest::any_line_has(e.refused, "a looped row scans no cumsum of a cumsum")) << joined(e.refused);
  EXPECT_NE(e.rewritten_graph.find("aten::cumsum"), std::string::npos) << e.rewritten_graph;
  // The default budget keeps the same rows in one block's registers.
  EXPECT_EQ(tftest::explain(m, {torch::randn({16, 4096})}).kernels.size(), 1u);
  // A single cumsum under the same budget is scanned in looped steps.
  const auto single = tftest::module_returning("x", "torch.cumsum(x * 2.0, -1) + 1.0");
  const auto looped = torchfuse::compile(single, options).explain({torch::randn({16, 4096})});
  ASSERT_EQ(looped.kernels.size(), 1u) << joined(looped.refused);
  EXPECT_NE(looped.kernels[0].source.find("tf_block_scan_step<"), std::string::npos);
}

}  // namespace
