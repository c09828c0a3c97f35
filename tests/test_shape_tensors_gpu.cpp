// Shape tensors on the GPU (passes/cache_shape_tensors.h): a causal mask built from sizes on the
// device, as Hugging Face builds one, is computed once per size and makes the attention call run
// causal; every dtype, odd sizes, grouped heads, sizes alternating between calls, CUDA graphs;
// against eager and its float64 reference.
#include <array>

#include <torch/version.h>

#include "tests/sdpa_ir.h"
#include "tests/test_util.h"

namespace {

// The dtype's lowest finite value, as a literal.
std::string lowest(c10::ScalarType dt) {
  return dt == c10::kHalf ? "-65504.0" : dt == c10::kBFloat16 ? "-3.3895313892515355e+38" : "-3.4028234663852886e+38";
}

// Llama's spelling: positions, a kept/excluded bool mask, where() into the query's dtype with
// its lowest value, repeated key/value heads when `groups` > 1.
std::string causal_source(int groups, c10::ScalarType dt) {
  std::string s = R"(
def forward(self, q, k, v):
    t = q.size(2)
    pos = torch.arange(t, device=q.device)
    kept = pos.unsqueeze(0) <= pos.unsqueeze(1)
    mask = torch.where(kept, torch.zeros([1], dtype=q.dtype, device=q.device), LOWEST)
    mask = mask[None, None, :, :].expand(q.size(0), 1, t, t)
)";
  if (groups > 1) {
    s += "    b, kh, s, d = k.size(0), k.size(1), k.size(2), k.size(3)\n"
         "    k = k.unsqueeze(2).expand(b, kh, " + std::to_string(groups) + ", s, d).reshape(b, kh * " +
         std::to_string(groups) + ", s, d)\n"
         "    v = v.unsqueeze(2).expand(b, kh, " + std::to_string(groups) + ", s, d).reshape(b, kh * " +
         std::to_string(groups) + ", s, d)\n";
  }
  s += R"(    w = torch.matmul(q, k.transpose(2, 3)) * 0.125 + mask
    w = torch.softmax(w, dim=-1, dtype=6).to(q.dtype)
    return torch.matmul(w, v)
)";
  return tftest::replace_all(s, "LOWEST", lowest(dt));
}

std::vector<c10::IValue> qkv(c10::ScalarType dt, int64_t b, int64_t h, int64_t t, int64_t e, int groups) {
  const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dt);
  return {torch::randn({b, h * groups, t, e}, o), torch::randn({b, h, t, e}, o), torch::randn({b, h, t, e}, o)};
}

bool has(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

TEST(ShapeTensorsGpu, CausalMaskFromSizesMatchesEager) {
  REQUIRE_GPU();
  torch::manual_seed(0);
  for (int groups : {1, 4}) {
    for (c10::ScalarType dt : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      auto m = tftest::module_from(causal_source(groups, dt));
      torchfuse::CompiledModule compiled = torchfuse::compile(m, tftest::quiet_options(2));
      // (batch, kv heads, tokens, head dim), then the first again: each size its own kept mask.
      for (auto [b, h, t, e] : {std::array<int64_t, 4>{2, 4, 128, 64}, {3, 5, 37, 64}, {1, 2, 1, 80}, {2, 4, 128, 64}}) {
        const auto in = qkv(dt, b, h, t, e, groups);
        const std::string where = "groups " + std::to_string(groups) + " " + c10::toString(dt) + " t " + std::to_string(t);
        const auto explanation = compiled.explain(in);
        EXPECT_TRUE(has(explanation.rewrites, "checked causal")) << where << "\n" << tftest::joined(explanation.rewrites)
                                                                 << tftest::joined(explanation.refused);
        EXPECT_EQ(explanation.rewritten_graph.find("aten::arange"), std::string::npos) << where;
        const auto report = torchfuse::compare_with_eager(compiled, in);
        EXPECT_TRUE(report.passed()) << where << "\n" << report.to_string();
        // The call itself, twice (the second reads the kept mask).
        const at::Tensor want = m.forward(in).toTensor();
        for (int call = 0; call < 2; ++call) {
          const at::Tensor got = compiled.forward(in).toTensor();
          const double tol = dt == c10::kFloat ? 2e-4 : 2e-2;
          EXPECT_TRUE(torch::allclose(got.to(torch::kFloat), want.to(torch::kFloat), tol, tol))
              << where << " call " << call << ": " << (got.to(torch::kFloat) - want.to(torch::kFloat)).abs().max().item<float>();
        }
      }
    }
  }
}

// Kept tensors under CUDA graphs: the replay's result is the plain call's, bit for bit.
TEST(ShapeTensorsGpu, RunsUnderCudaGraphs) {
  REQUIRE_GPU();
  torch::manual_seed(1);
  auto m = tftest::module_from(causal_source(1, c10::kBFloat16));
  torchfuse::CompileOptions o = tftest::quiet_options(2);
  // Timed attention (on by default with graphs) in both: the process's choice per shape is one.
  o.attention_autotune = true;
  torchfuse::CompiledModule plain = torchfuse::compile(m, o);
  o.cuda_graphs = true;
  torchfuse::CompiledModule graphed = torchfuse::compile(m, o);
  for (int64_t t : {128, 96}) {
    const auto in = qkv(c10::kBFloat16, 4, 8, t, 64, 1);
    const at::Tensor want = plain.forward(in).toTensor();
    at::Tensor got;
    for (int i = 0; i < 5; ++i) got = graphed.forward(in).toTensor();
    EXPECT_TRUE(torch::equal(got, want)) << "t " << t;
  }
  EXPECT_GE(graphed.stats().cuda_graph_replays, 1);
}

TEST(ShapeTensorsGpu, SdpaCallWithCausalMaskAndRepeatedHeads) {
  REQUIRE_GPU();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  torch::manual_seed(2);
  const auto g = tftest::hf_sdpa_causal_gqa_graph();
  for (c10::ScalarType dt : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    torchfuse::CompiledModule compiled = torchfuse::compile_graph(g->copy(), tftest::quiet_options(2));
    for (auto [b, h, t, e] : {std::array<int64_t, 4>{2, 4, 128, 64}, {3, 3, 37, 64}, {2, 4, 128, 64}}) {
      const auto in = qkv(dt, b, h, t, e, 2);
      const std::string where = std::string(c10::toString(dt)) + " t " + std::to_string(t);
      const auto explanation = compiled.explain(in);
      EXPECT_TRUE(has(explanation.rewrites, "checked causal")) << where << "\n" << tftest::joined(explanation.rewrites)
                                                               << tftest::joined(explanation.refused);
      EXPECT_TRUE(has(explanation.rewrites, "grouped heads")) << where;
      const auto report = torchfuse::compare_with_eager(compiled, in);
      EXPECT_TRUE(report.passed()) << where << "\n" << report.to_string();
    }
  }
#else
  GTEST_SKIP() << "LibTorch " TORCH_VERSION " has no aten::scaled_dot_product_attention";
#endif
}

// ViT's "sdpa" graph: the boolean mask from positions takes every position; checked open once per
// size, the call runs without it (ATen may pick a fused kernel), against eager and float64 in
// every dtype, at ViT's 197 tokens and an odd size.
TEST(ShapeTensorsGpu, SdpaCallWithOpenMask) {
  REQUIRE_GPU();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  const auto g = tftest::hf_sdpa_open_mask_graph();
  for (c10::ScalarType dt : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    torchfuse::CompiledModule compiled = torchfuse::compile_graph(g->copy(), tftest::quiet_options(2));
    for (auto [b, h, t, e] : {std::array<int64_t, 4>{2, 12, 197, 64}, {3, 3, 37, 64}}) {
      const auto in = qkv(dt, b, h, t, e, 1);
      const std::string where = std::string(c10::toString(dt)) + " t " + std::to_string(t);
      const auto explanation = compiled.explain(in);
      EXPECT_TRUE(has(explanation.rewrites, "checked causal or open")) << where << "\n" << tftest::joined(explanation.rewrites)
                                                                       << tftest::joined(explanation.refused);
      const auto report = torchfuse::compare_with_eager(compiled, in);
      EXPECT_TRUE(report.passed()) << where << "\n" << report.to_string();
    }
  }
#else
  GTEST_SKIP() << "LibTorch " TORCH_VERSION " has no aten::scaled_dot_product_attention";
#endif
}

// BERT's "sdpa" graph: one boolean padding mask from the input for two calls, made additive once
// (one fused kernel with the mask's cast and broadcast), with every score row of one batch fully
// masked; against eager and float64 in every dtype, and again under CUDA graphs.
TEST(ShapeTensorsGpu, SdpaCallsShareOneConvertedBooleanMask) {
  REQUIRE_GPU();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  torch::manual_seed(3);
  const auto g = tftest::sdpa_shared_bool_mask_graph();
  for (bool graphs : {false, true}) {
    for (c10::ScalarType dt : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      auto options = tftest::quiet_options(2);
      options.cuda_graphs = graphs;
      torchfuse::CompiledModule compiled = torchfuse::compile_graph(g->copy(), options);
      const std::string where = std::string(c10::toString(dt)) + (graphs ? " graphs" : "");
      const auto explanation = compiled.explain(tftest::sdpa_shared_bool_mask_inputs(torch::kCUDA, dt));
      EXPECT_EQ(tftest::count_occurrences(explanation.rewritten_graph, "torchfuse::FusionGroup"), 1)
          << where << "\n" << explanation.rewritten_graph;
      EXPECT_EQ(explanation.kernels.size(), 1u) << where << "\n" << explanation.rewritten_graph;
      for (int call = 0; call < 4; ++call) {
        const auto in = tftest::sdpa_shared_bool_mask_inputs(torch::kCUDA, dt);
        const auto report = torchfuse::compare_with_eager(compiled, in);
        EXPECT_TRUE(report.passed()) << where << " call " << call << "\n" << report.to_string();
      }
    }
  }
#else
  GTEST_SKIP() << "LibTorch " TORCH_VERSION " has no aten::scaled_dot_product_attention";
#endif
}

}  // namespace
