// aten::scaled_dot_product_attention calls (Hugging Face's "sdpa" attention) taken over by the
// attention rewrite (passes/rewrite_attention.h) on the CPU: the call keeps its mask as given,
// reads grouped heads before their repeat, and (cache_shape_tensors) runs causal where its mask,
// computed from sizes, is causal; results against eager through the groups' ATen fallbacks.
// LibTorch before 2.1 has no scaled_dot_product_attention: the tests skip there.
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/version.h>

#include "runtime/compiled_module.h"
#include "src/prepare_graph.h"
#include "tests/sdpa_ir.h"
#include "tests/test_util.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define TF_HAVE_SDPA 1
#else
#define TF_HAVE_SDPA 0
#endif

namespace {

using tftest::joined;

#define REQUIRE_SDPA() \
  if (!TF_HAVE_SDPA) GTEST_SKIP() << "LibTorch " TORCH_VERSION " has no aten::scaled_dot_product_attention"

std::shared_ptr<torch::jit::Graph> parsed(const std::string& ir) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, g.get());
  return g;
}

bool has(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// Groups on their ATen fallbacks, against eager on fresh inputs: sizes t, then t again.
void expect_eager_results(const std::shared_ptr<torch::jit::Graph>& g, const std::function<std::vector<c10::IValue>()>& inputs) {
  auto prepared = g->copy();
  torchfuse::prepare_graph(prepared);
  auto impl = std::make_shared<torchfuse::CompiledModuleImpl>(prepared, tftest::quiet_options());
  torchfuse::CompiledModuleImpl::TestHooks hooks;
  hooks.cpu_fallbacks = true;
  impl->set_test_hooks(hooks);
  for (int call = 0; call < 2; ++call) {
    const std::vector<c10::IValue> in = inputs();
    const at::Tensor got = impl->forward(in).toTensor(), want = impl->forward_eager(in).toTensor();
    EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5, /*equal_nan=*/true)) << "call " << call << ": " << (got - want).abs().max();
  }
}

// An additive mask given to the call stays the call's mask, unprepared; a boolean one is made
// additive (ATen's own conversion: full_like(-inf) and masked_fill(0), one fused kernel), once.
TEST(SdpaRewrite, CallWithItsMaskAsGiven) {
  REQUIRE_SDPA();
  for (const char* mask_type : {"Float", "Bool"}) {
    const auto g = parsed(std::string(R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor, %mask : Tensor):
  %none : NoneType = prim::Constant()
  %zero : float = prim::Constant[value=0.]()
  %false : bool = prim::Constant[value=0]()
  %out : Tensor = aten::scaled_dot_product_attention(%q, %k, %v, %mask, %zero, %false, %none, %false)
  return (%out)
)IR"));
    auto inputs = [&] {
      const at::Tensor mask = std::string(mask_type) == "Bool" ? torch::rand({2, 1, 8, 8}) > 0.3 : torch::randn({2, 1, 8, 8});
      return std::vector<c10::IValue>{torch::randn({2, 3, 8, 16}), torch::randn({2, 3, 8, 16}), torch::randn({2, 3, 8, 16}), mask};
    };
    const bool boolean = std::string(mask_type) == "Bool";
    const auto e = torchfuse::compile_graph(g, tftest::quiet_options()).explain(inputs());
    ASSERT_TRUE(has(e.rewrites, boolean ? "= scaled_dot_product_attention(%q, %k, %v, scale 0.25, boolean mask %mask made "
                                          "additive once (as ATen would per call))"
                                        : "= scaled_dot_product_attention(%q, %k, %v, scale 0.25, mask %mask as given)"))
        << mask_type << ": " << joined(e.rewrites) << joined(e.refused);
    EXPECT_EQ(e.rewritten_graph.find("aten::scaled_dot_product_attention"), std::string::npos) << e.rewritten_graph;
    EXPECT_EQ(e.rewritten_graph.find("torchfuse::attention_mask"), std::string::npos) << e.rewritten_graph;
    ASSERT_EQ(e.kernels.size(), boolean ? 1u : 0u) << e.rewritten_graph;
    if (boolean) EXPECT_EQ(e.kernels[0].description, "fill -> where") << e.rewritten_graph;
    expect_eager_results(g, inputs);
  }
}

// BERT's "sdpa" layers all read one boolean padding mask: it is made additive once for both
// calls, in one kernel with the mask's own making (the cast of the 0/1 input and its broadcast),
// and the results (rows with every key masked included) are eager's.
TEST(SdpaRewrite, SharedBooleanMaskConvertedOnce) {
  REQUIRE_SDPA();
  const auto g = tftest::sdpa_shared_bool_mask_graph();
  const auto e = torchfuse::compile_graph(g, tftest::quiet_options()).explain(tftest::sdpa_shared_bool_mask_inputs(c10::kCPU, c10::kFloat));
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "torchfuse::FusionGroup"), 1) << e.rewritten_graph;
  ASSERT_EQ(e.kernels.size(), 1u) << e.rewritten_graph;
  EXPECT_TRUE(tftest::contains_in_order(e.kernels[0].description, {"cast", "fill", "where"})) << e.kernels[0].description;
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "torchfuse::attention("), 2) << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("aten::scaled_dot_product_attention"), std::string::npos) << e.rewritten_graph;
  expect_eager_results(g, [] { return tftest::sdpa_shared_bool_mask_inputs(c10::kCPU, c10::kFloat); });
}

// Dropout draws random numbers: the call stays as it is, with the reason.
TEST(SdpaRewrite, DropoutStaysWithTheReason) {
  REQUIRE_SDPA();
  const auto g = parsed(R"IR(
graph(%q : Tensor, %k : Tensor, %v : Tensor):
  %none : NoneType = prim::Constant()
  %p : float = prim::Constant[value=0.1]()
  %false : bool = prim::Constant[value=0]()
  %out : Tensor = aten::scaled_dot_product_attention(%q, %k, %v, %none, %p, %false, %none, %false)
  return (%out)
)IR");
  const auto e = torchfuse::compile_graph(g, tftest::quiet_options())
                     .explain({torch::randn({2, 3, 8, 16}), torch::randn({2, 3, 8, 16}), torch::randn({2, 3, 8, 16})});
  EXPECT_TRUE(e.rewrites.empty()) << joined(e.rewrites);
  EXPECT_TRUE(has(e.refused, "dropout_p is not a constant 0")) << joined(e.refused);
}

// Hugging Face's sdpa path: a boolean causal mask from positions, key and value repeated from
// fewer heads. The call reads them before the repeat and runs causal (the mask checked once per
// size inside the shape tensors); in float32 the repeat stays in the graph as unsqueeze, expand and
// flatten (no fused attention kernel reads grouped heads there).
TEST(SdpaRewrite, HuggingFaceCausalMaskAndRepeatedHeads) {
  REQUIRE_SDPA();
  const auto g = tftest::hf_sdpa_causal_gqa_graph();
  auto inputs = [] {
    return std::vector<c10::IValue>{torch::randn({2, 4, 8, 16}), torch::randn({2, 2, 8, 16}), torch::randn({2, 2, 8, 16})};
  };
  const auto e = torchfuse::compile_graph(g, tftest::quiet_options()).explain(inputs());
  ASSERT_TRUE(has(e.rewrites, "(2 query heads per head: grouped heads; repeated in the graph")) << joined(e.rewrites)
                                                                                                 << joined(e.refused);
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"aten::flatten", "torchfuse::attention("}));
  EXPECT_TRUE(has(e.rewrites, "checked causal")) << joined(e.rewrites);
  EXPECT_EQ(e.rewritten_graph.find("aten::scaled_dot_product_attention"), std::string::npos) << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("aten::reshape"), std::string::npos) << e.rewritten_graph;
  expect_eager_results(g, inputs);
}

// Hugging Face's ViT ("sdpa"): a boolean mask from positions that every position takes part in
// (q_idx >= 0, expanded over the batch and keys). Checked once per size inside the shape tensors
// (mask_kind: open); the call then runs without it.
TEST(SdpaRewrite, HuggingFaceOpenMaskFromPositions) {
  REQUIRE_SDPA();
  const auto g = tftest::hf_sdpa_open_mask_graph();
  auto inputs = [] {
    return std::vector<c10::IValue>{torch::randn({2, 3, 9, 16}), torch::randn({2, 3, 9, 16}), torch::randn({2, 3, 9, 16})};
  };
  const auto e = torchfuse::compile_graph(g, tftest::quiet_options()).explain(inputs());
  EXPECT_TRUE(has(e.rewrites, "checked causal or open")) << joined(e.rewrites) << joined(e.refused);
  EXPECT_EQ(e.rewritten_graph.find("aten::scaled_dot_product_attention"), std::string::npos) << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("aten::arange"), std::string::npos) << e.rewritten_graph;
  expect_eager_results(g, inputs);
}

}  // namespace
