// Row ops over transposed inputs (passes/stage_transposed_rows.h), on the CPU: the rewrite's
// report, the plan (a tiled copy kernel, then the row kernel), eager's results through the groups'
// ATen fallbacks, and what the rewrite leaves alone, with the reason where there is one.
#include "tests/fallback_util.h"

namespace {

using tftest::joined;

bool has(const std::vector<std::string>& lines, const std::string& what) { return tftest::any_line_has(lines, what); }

void expect_eager_results(const torch::jit::Module& m, const std::vector<c10::IValue>& in) {
  const auto [got, want] = tftest::fallback_and_eager(m, in);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6)) << (got - want).abs().max();
}

const char* kStaged = "transposed against its rows -> aten::contiguous first (a tiled copy)";

struct StagedCase {
  const char* name;
  const char* args;
  const char* expr;
  std::vector<std::vector<int64_t>> shapes;
  const char* copy_pattern;  // the copy kernel's description
};

// Each row op reading a transposed value gets a copy first: two kernels, the copy tiled
// (PointwiseLayout::tile_dim: its source reads the transposed input into a shared-memory tile),
// the row kernel reading the copy; pointwise ops before the transpose's reader join the copy.
TEST(StageTransposedRows, RowOpsReadATiledCopy) {
  const std::vector<StagedCase> cases = {
      {"softmax", "x", "torch.softmax(x.t(), -1)", {{2048, 1100}}, "permute[1, 0] -> contiguous[]"},
      {"log_softmax_chain", "x", "torch.log_softmax(torch.sigmoid(x.transpose(0, 1)) * 2.0, dim=1)", {{1100, 2048}},
       "permute[1, 0] -> sigmoid -> mul -> contiguous[]"},
      {"softmax_3d", "x", "torch.softmax(x.transpose(1, 2), -1)", {{4, 640, 1024}}, "permute[0, 2, 1] -> contiguous[]"},
      {"layer_norm", "x, w, b", "torch.layer_norm(x.t(), [1024], w, b, 1e-5)", {{1024, 2100}, {1024}, {1024}},
       "permute[1, 0] -> contiguous[]"},
      {"layer_norm_sizes", "x", "torch.layer_norm(x.t(), [x.t().size(-1)])", {{1024, 2100}}, "contiguous[]"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.name);
    const auto m = tftest::module_returning(tc.args, tc.expr);
    std::vector<c10::IValue> in;
    for (const auto& s : tc.shapes) in.emplace_back(torch::randn(s));
    const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
    ASSERT_TRUE(has(e.rewrites, kStaged)) << joined(e.rewrites) << joined(e.refused);
    ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after << joined(e.refused);
    EXPECT_EQ(e.kernels[0].description, tc.copy_pattern);
    EXPECT_NE(e.kernels[0].source.find("__shared__ float tile0"), std::string::npos) << e.kernels[0].source;
    EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"torchfuse::FusionGroup", "torchfuse::FusionGroup"}));
    expect_eager_results(m, in);
  }
}

// Left as they are: an input under kStageMinBytes (with the reason), a sum (one value per row: a
// copy would triple its traffic), a contiguous input, a softmax over a leading dim (no row
// schedule), a transposed input whose rows' elements are adjacent anyway.
TEST(StageTransposedRows, LeavesWhatGainsNothing) {
  struct Left {
    const char* expr;
    std::vector<int64_t> shape;
    const char* refusal;  // "" where none is logged
  };
  const std::vector<Left> cases = {
      {"torch.softmax(x.t(), -1)", {64, 80}, "read as it is: 20480 bytes, under the 8388608"},
      {"x.t().sum(-1)", {2048, 1100}, ""},
      {"torch.softmax(x, -1)", {2048, 1100}, ""},
      {"torch.softmax(x.t(), 0)", {2048, 1100}, ""},
      {"torch.softmax(x.permute(1, 0, 2), -1)", {64, 32, 1100}, ""},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.expr);
    const auto e = torchfuse::compile(tftest::module_returning("x", tc.expr), tftest::quiet_options()).explain({torch::randn(tc.shape)});
    EXPECT_FALSE(has(e.rewrites, "aten::contiguous first")) << joined(e.rewrites);
    if (*tc.refusal) EXPECT_TRUE(has(e.refused, tc.refusal)) << joined(e.refused);
    EXPECT_FALSE(tftest::contains_in_order(e.rewritten_graph, {"aten::contiguous"})) << e.rewritten_graph;
  }
}

// A contiguous() of a transposed input alone is a group of its own (the tiled copy), where before
// the view-only group was left to ATen's copy.
TEST(StageTransposedRows, TransposingCopyAloneIsAKernel) {
  const auto m = tftest::module_returning("x", "x.transpose(0, 1).contiguous()");
  const std::vector<c10::IValue> in{torch::randn({300, 200})};
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << joined(e.refused);
  EXPECT_NE(e.kernels[0].source.find("__shared__ float tile0"), std::string::npos);
  expect_eager_results(m, in);
  // A contiguous() of a contiguous view copies nothing: no group.
  const auto e2 = torchfuse::compile(tftest::module_returning("x", "x.view(-1).contiguous()"), tftest::quiet_options())
                      .explain({torch::randn({300, 200})});
  EXPECT_TRUE(e2.kernels.empty()) << e2.ir_after;
}

}  // namespace
