// The graphs random testing found wrong (issues 28 and 29), without a GPU: each one's plan
// converts, fuses and NVRTC-compiles for sm_80 and sm_90 with no internal error, and every
// group writes its outputs in the shapes the graph computes (FusedKernel::check_output_shapes,
// an internal assert: before the fix, the wrong-shape and wrong-value cases tripped it).
#include <torch/torch.h>

#include "passes/reduction_schedule.h"
#include "tests/regression_cases.h"
#include "tests/test_util.h"

namespace {

TEST(Regressions, PlansBuildAndCompileWithoutInternalErrors) {
  for (auto rc : tftest::regression_cases()) {
    SCOPED_TRACE(rc.name);
    // LibTorch's CPU kernels lack fp16 for some ops (sigmoid): the profile runs in bf16, which
    // takes the same 16-bit paths through the planner and code generator.
    if (rc.dtype == c10::kHalf) rc.dtype = c10::kBFloat16;
    for (const char* arch : {"sm_80", "sm_90"}) {
      auto options = tftest::quiet_options();
      options.offline_arch = arch;
      auto c = torchfuse::compile(tftest::regression_module(rc), options);
      const auto in = tftest::regression_inputs(rc, c10::kCPU);
      torchfuse::Explanation e;
      try {
        e = c.explain(in, /*compile_kernels=*/true);
      } catch (const std::exception& ex) {
        ADD_FAILURE() << arch << ": " << ex.what();
        continue;
      }
      // Every case keeps at least one fused kernel (the fixes do not refuse the graphs away).
      EXPECT_GE(e.kernels.size(), 1u) << e.ir_after;
      EXPECT_EQ(e.cubin_bytes.size(), e.kernels.size());
      for (size_t k = 0; k < e.cubin_bytes.size(); ++k) EXPECT_GT(e.cubin_bytes[k], 0u) << e.kernels[k].source;
    }
  }
}

}  // namespace

namespace {

TEST(Regressions, PerRowShapesHaveNoExtentOverReducedDims) {
  const torchfuse::ReductionDomain rows{{8, 5, 6}, {2}};
  EXPECT_TRUE(rows.holds_rows({8, 5, 1}));
  EXPECT_TRUE(rows.holds_rows({1, 1, 1}));  // broadcast over rows too
  EXPECT_TRUE(rows.holds_rows({5, 1}));     // right-aligned
  EXPECT_TRUE(rows.holds_rows({}));
  EXPECT_FALSE(rows.holds_rows({8, 5}));    // squeezed: aligns with the trailing dims
  EXPECT_FALSE(rows.holds_rows({1, 1, 6}));
  EXPECT_FALSE(rows.holds_rows({8, 5, 6}));
  EXPECT_FALSE(rows.holds_rows({2, 8, 5, 1}));
  const torchfuse::ReductionDomain columns{{7, 100}, {0}};
  EXPECT_TRUE(columns.holds_rows({1, 100}));
  EXPECT_TRUE(columns.holds_rows({1, 1}));
  EXPECT_FALSE(columns.holds_rows({7, 1}));
  // Rows of one element: a shape cannot tell rows from elements.
  const torchfuse::ReductionDomain unit{{64, 7, 1}, {2}};
  EXPECT_FALSE(unit.holds_rows({64, 7, 1}));
}

}  // namespace

namespace {

// Found by the fuzzer (fuzz_s1_6164, fuzz_s1_3007): eager converts every operand to the common
// dtype, and rounds a number compared with a 16-bit tensor to that dtype.
TEST(Regressions, SixteenBitCommonDtypeRoundsOperandsAsEagerDoes) {
  auto compare = torchfuse::compile(tftest::module_returning("x", "torch.where(x > 0.1, x, x * 0.1)"));
  const auto ir = compare.explain({torch::randn({4, 8}).to(torch::kBFloat16)}).ir_before;
  EXPECT_TRUE(tftest::contains_in_order(ir, {"gt[compute=bf16](%0, 0.10009765625)", "mul(%0, 0.1)"})) << ir;
  // A float32 0-dim tensor in a bf16 product is rounded to bf16 first (a cast node).
  auto product = torchfuse::compile(tftest::module_returning("x, s", "x * s"));
  const auto ir2 = product.explain({torch::randn({4, 8}).to(torch::kBFloat16), torch::randn({})}).ir_before;
  EXPECT_TRUE(tftest::contains_in_order(ir2, {"= cast[to=bf16](%1)", "= mul(%0, %"})) << ir2;
}

}  // namespace

namespace {

std::string kernel_sources(const std::string& body, const std::vector<c10::IValue>& in) {
  auto c = torchfuse::compile(tftest::module_from("def forward(self, x0):\n" + body), tftest::quiet_options());
  std::string all;
  for (const auto& k : c.explain(in).kernels) all += k.source;
  return all;
}

// A value that a row's reduction and another op share is rounded where it is made when its
// expression may end in a multiply (gelu's x * 0.5 * (1 + erf)), so that no use contracts it into
// an fma of its own; an add's value needs nothing (fuzz seed 54, program 471; codegen/expr.cpp).
TEST(Regressions, ValuesAReductionSharesAreRoundedWhereMade) {
  const std::vector<c10::IValue> in{torch::randn({16, 64})};
  const std::string gelu = kernel_sources("    return torch.layer_norm(torch.gelu(x0), [64])\n", in);
  EXPECT_NE(gelu.find("tf_round_here(tf_gelu_fast("), std::string::npos) << gelu;
  const std::string scaled = kernel_sources("    return torch.softmax(x0 * 0.125, -1)\n", in);
  EXPECT_NE(scaled.find("__fmul_rn("), std::string::npos) << scaled;
  EXPECT_EQ(scaled.find("tf_round_here(__fmul_rn"), std::string::npos) << scaled;
  const std::string added = kernel_sources("    return torch.layer_norm(x0 + 1.0, [64])\n", in);
  EXPECT_EQ(added.substr(added.find("extern \"C\"")).find("tf_round_here("), std::string::npos) << added;
}

}  // namespace
