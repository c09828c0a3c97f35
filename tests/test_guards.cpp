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

// The hot path's numeric keys split calls exactly as the signatures do: over a set of inputs
// that differ in each guarded property (and in extents alone), every pair has equal keys just
// when it has equal signatures.
TEST(Guards, NumericKeysAgreeWithSignatures) {
  std::vector<std::vector<c10::IValue>> calls = {
      {torch::randn({8, 64})},
      {torch::randn({33, 64})},                                               // extents alone
      {torch::randn({8, 64, 1})},                                             // rank
      {torch::randn({8, 64}).to(torch::kHalf)},                               // dtype
      {torch::randn({1, 64})},                                                // a size-1 dim
      {torch::randn({0, 64})},                                                // a size-0 dim
      {torch::randn({64, 8}).t()},                                            // strided
      {torch::randn({2, 3, 4, 5})},                                           //
      {torch::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast)},  // channels_last
      {torch::randn({4})},                                                    //
      {torch::randn({4}).requires_grad_()},                                   // requires_grad
      {torch::randn({8, 64}), torch::randn({64})},                            // two inputs
      {torch::randn({8, 64}), torch::randn({1})},                             //
  };
  std::vector<std::vector<torchfuse::TensorGuardKey>> keys(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) ASSERT_TRUE(torchfuse::tensor_guard_keys(calls[i], keys[i])) << i;
  int equal_pairs = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    for (size_t j = 0; j < calls.size(); ++j) {
      const bool same_signature = input_signature(calls[i]) == input_signature(calls[j]);
      EXPECT_EQ(keys[i] == keys[j], same_signature) << input_signature(calls[i]) << " vs " << input_signature(calls[j]);
      equal_pairs += i != j && same_signature;
    }
  }
  EXPECT_EQ(equal_pairs, 2);  // [8, 64] and [33, 64], both ways
  // Anything but defined tensors is looked up by signature alone.
  std::vector<torchfuse::TensorGuardKey> none;
  EXPECT_FALSE(torchfuse::tensor_guard_keys({torch::randn({4}), 0.5}, none));
  EXPECT_FALSE(torchfuse::tensor_guard_keys({at::Tensor()}, none));
}

TEST(Guards, RecompileReasonNamesTheGuard) {
  const auto why = torchfuse::why_recompile(input_guards({torch::randn({1, 64})}), input_guards({torch::randn({8, 64})}));
  EXPECT_NE(why.find("input 0"), std::string::npos) << why;
  EXPECT_NE(why.find("dims 1n"), std::string::npos) << why;
  EXPECT_NE(why.find("dims nn"), std::string::npos) << why;
}

TEST(Guards, ReductionCountIsNotBakedIntoKernels) {
  // mean's N comes from the launch: the same source serves every row length its team covers
  // in part. (A length every thread's vectors cover exactly, 96 here, is a constant of its own
  // kernel: ExactRows.* in test_schedules.cpp.)
  auto c = torchfuse::compile(tftest::module_returning("x", "x.mean(-1) * 2.0"));
  const auto a = c.explain({torch::randn({4, 84})});
  const auto b = c.explain({torch::randn({4, 92})});  // same schedule choices (8 threads x 3 vectors)
  ASSERT_EQ(a.kernels.size(), 1u);
  EXPECT_EQ(a.kernels[0].source, b.kernels[0].source);
  EXPECT_NE(a.kernels[0].source.find("(double)p.cols"), std::string::npos) << a.kernels[0].source;
  EXPECT_NE(a.ir_before.find("div(%"), std::string::npos);
  EXPECT_NE(a.ir_before.find(", N)"), std::string::npos) << a.ir_before;
}

}  // namespace
