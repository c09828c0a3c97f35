// Guards: what a specialization assumes of its inputs, and what makes a new one.
#include <torch/torch.h>

#include "runtime/compiled_module.h"
#include "tests/test_util.h"

namespace {

using torchfuse::input_guards;
using torchfuse::input_signature;

TEST(Guards, ExtentsAloneShareASpecialization) {
  EXPECT_EQ(input_signature({torch::randn({8, 64}), 0.5}), input_signature({torch::randn({33, 64}), 2.0}));
  EXPECT_EQ(input_signature({torch::randn({8, 64})}), input_signature({torch::randn({8, 128})}));
}

TEST(Guards, RankDtypeBroadcastDimsAndLayoutEachMakeANewOne) {
  const auto base = input_signature({torch::randn({8, 64})});
  EXPECT_NE(base, input_signature({torch::randn({8, 64, 1})}));                  // rank
  EXPECT_NE(base, input_signature({torch::randn({8, 64}).to(torch::kHalf)}));   // dtype
  EXPECT_NE(base, input_signature({torch::randn({1, 64})}));                     // a size-1 (broadcast) dim
  EXPECT_NE(base, input_signature({torch::randn({64, 8}).t()}));                 // layout class
  EXPECT_NE(input_signature({torch::randn({2, 3, 4, 5})}),
            input_signature({torch::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast)}));
  EXPECT_NE(input_signature({torch::randn({4})}), input_signature({torch::randn({4}).requires_grad_()}));
  {
    at::NoGradGuard no_grad;  // requires_grad only matters under grad mode
    EXPECT_EQ(input_signature({torch::randn({4})}), input_signature({torch::randn({4}).requires_grad_()}));
  }
}

TEST(Guards, RecompileReasonNamesTheGuard) {
  const auto why = torchfuse::why_recompile(input_guards({torch::randn({1, 64})}), input_guards({torch::randn({8, 64})}));
  EXPECT_NE(why.find("input 0"), std::string::npos) << why;
  EXPECT_NE(why.find("dims 1n"), std::string::npos) << why;
  EXPECT_NE(why.find("dims nn"), std::string::npos) << why;
}

TEST(Guards, ReductionCountIsNotBakedIntoKernels) {
  // mean's N comes from the launch: the same source serves every row length.
  auto c = torchfuse::compile(tftest::module_returning("x", "x.mean(-1) * 2.0"));
  const auto a = c.explain({torch::randn({4, 96})});
  const auto b = c.explain({torch::randn({4, 92})});  // same schedule choices (8 threads x 3 vectors)
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_EQ(a.kernels[0].source, b.kernels[0].source);
  EXPECT_NE(a.kernels[0].source.find("(double)p.cols"), std::string::npos) << a.kernels[0].source;
  EXPECT_NE(a.ir_before.find("div(%"), std::string::npos);
  EXPECT_NE(a.ir_before.find(", N)"), std::string::npos) << a.ir_before;
}

}  // namespace
