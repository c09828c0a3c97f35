// Linears of one input as one GEMM (src/sibling_weights.cpp stores their weights together,
// passes/concat_linears.cpp merges them) on the CPU: which linears merge and which stay apart and
// why (explain()), that no second copy of the weights is made, and results against the original
// module through the groups' ATen fallbacks (bfloat16; float32 linears stay apart).
// tests/test_gemm_epilogues_gpu.cpp runs merged GEMMs on the GPU.
#include "src/prepare_graph.h"
#include "tests/cpu_fallbacks.h"
#include "tests/test_util.h"

namespace {

using tftest::any_line_has;
using tftest::count_occurrences;
using tftest::joined;

torchfuse::CompileOptions options(bool concat = true) {
  torchfuse::CompileOptions o = tftest::quiet_options();
  o.concat_linears = concat;
  return o;
}

// Attention's projections written apart (3 query heads, 1 key/value head of 8) and a SwiGLU MLP
// after them: q, k, v merge into one GEMM, gate and up into another; down reads another input.
torch::jit::Module projections(at::ScalarType dtype, bool biases) {
  torch::jit::Module m("Projections");
  const auto o = torch::TensorOptions().dtype(dtype);
  for (const auto& [name, rows] : std::vector<std::pair<std::string, int64_t>>{{"wq", 24}, {"wk", 8}, {"wv", 8}}) {
    m.register_parameter(name, torch::randn({rows, 16}, o) / 4.0, false);
    m.register_parameter("b" + name.substr(1), torch::randn({rows}, o), false);
  }
  m.register_parameter("wg", torch::randn({40, 16}, o) / 4.0, false);
  m.register_parameter("wu", torch::randn({40, 16}, o) / 4.0, false);
  m.register_parameter("wd", torch::randn({16, 40}, o) / 6.0, false);
  const std::string bq = biases ? ", self.bq" : "", bk = biases ? ", self.bk" : "", bv = biases ? ", self.bv" : "";
  m.define(R"JIT(
def forward(self, x):
    B = x.size(0)
    T = x.size(1)
    q = torch.linear(x, self.wq)JIT" + bq + R"JIT().view(B, T, 3, 8).transpose(1, 2)
    k = torch.linear(x, self.wk)JIT" + bk + R"JIT().view(B, T, 1, 8).transpose(1, 2)
    v = torch.linear(x, self.wv)JIT" + bv + R"JIT().view(B, T, 1, 8).transpose(1, 2)
    a = torch.softmax(torch.matmul(q, k.transpose(-2, -1)), -1)
    h = torch.matmul(a, v).transpose(1, 2).reshape(B, T, 24)[:, :, :16] + x
    return torch.linear(torch.silu(torch.linear(h, self.wg)) * torch.linear(h, self.wu), self.wd)
)JIT");
  return m;
}

std::vector<c10::IValue> inputs(at::ScalarType dtype) { return {torch::randn({2, 5, 16}, torch::TensorOptions().dtype(dtype))}; }

// The compiled module's results against the original module's, on fresh inputs.
void expect_matches_module(torch::jit::Module& m, at::ScalarType dtype, const torchfuse::CompileOptions& o) {
  auto impl = tftest::on_cpu_fallbacks(m, o);
  const double tol = dtype == at::kFloat ? 1e-5 : 5e-2;
  for (int call = 0; call < 2; ++call) {
    const std::vector<c10::IValue> in = inputs(dtype);
    const at::Tensor got = impl->forward(in).toTensor().to(at::kDouble);
    const at::Tensor want = m.forward(in).toTensor().to(at::kDouble);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::allclose(got, want, tol, tol)) << c10::toString(dtype) << ": " << (got - want).abs().max();
  }
}

// The GEMMs the rewritten graph runs: ATen's linears and cuBLASLt calls (16-bit; on the CPU the
// call runs ATen's linear).
int gemms(const std::string& graph) {
  return count_occurrences(graph, "aten::linear(") + count_occurrences(graph, "torchfuse::gemm_epilogue(");
}

TEST(ConcatLinears, ProjectionsOfOneInputBecomeOneGemmEach) {
  for (at::ScalarType dtype : {at::kBFloat16}) {
    for (bool biases : {false, true}) {
      torch::jit::Module m = projections(dtype, biases);
      const auto e = torchfuse::compile(m, options()).explain(inputs(dtype));
      EXPECT_TRUE(any_line_has(e.rewrites, "-> one aten::linear with 40 output features")) << joined(e.rewrites);
      EXPECT_EQ(count_occurrences(joined(e.rewrites), "output features, each result a slice"), 2) << joined(e.rewrites);
      // q, k, v in one, gate and up in one, down alone.
      EXPECT_EQ(gemms(e.rewritten_graph), 3) << e.rewritten_graph;
      expect_matches_module(m, dtype, options());
    }
  }
}

// Merged, Llama's float32 GEMMs ran slower than apart: float32 linears stay apart, saying so.
TEST(ConcatLinears, Float32LinearsStayApart) {
  torch::jit::Module m = projections(at::kFloat, false);
  const auto e = torchfuse::compile(m, options()).explain(inputs(at::kFloat));
  EXPECT_TRUE(any_line_has(e.refused, "a f32 linear (merged float32 GEMMs ran slower")) << joined(e.refused);
  EXPECT_FALSE(any_line_has(e.rewrites, "output features")) << joined(e.rewrites);
  EXPECT_EQ(gemms(e.rewritten_graph), 6) << e.rewritten_graph;
  expect_matches_module(m, at::kFloat, options());
}

// Under gemm_autotune float32 linears merge too, each merged GEMM carrying its column parts (its
// call times merged against apart, ATen's GEMM among each form's candidates); timed forms alone
// (concat_linears_autotune) leave them apart. Results against the original module (ATen's path
// on the CPU).
TEST(ConcatLinears, Float32LinearsMergeOnlyWhereGemmsAreTimed) {
  torch::jit::Module m = projections(at::kFloat, false);
  torchfuse::CompileOptions timed = options(), parts_only = options();
  timed.gemm_autotune = true;
  parts_only.concat_linears_autotune = true;
  const auto e = torchfuse::compile(m, timed).explain(inputs(at::kFloat));
  EXPECT_TRUE(any_line_has(e.rewrites, "parts [24, 8, 8] timed against the whole")) << joined(e.rewrites);
  EXPECT_TRUE(any_line_has(e.rewrites, "parts [40, 40] timed against the whole")) << joined(e.rewrites);
  EXPECT_FALSE(any_line_has(e.refused, "a f32 linear")) << joined(e.refused);
  EXPECT_EQ(gemms(e.rewritten_graph), 3) << e.rewritten_graph;
  expect_matches_module(m, at::kFloat, timed);
  const auto apart = torchfuse::compile(m, parts_only).explain(inputs(at::kFloat));
  EXPECT_TRUE(any_line_has(apart.refused, "a f32 linear (merged float32 GEMMs ran slower")) << joined(apart.refused);
  EXPECT_EQ(gemms(apart.rewritten_graph), 6) << apart.rewritten_graph;
}

// The weights live once: every linear of a group reads a row range of one buffer.
TEST(ConcatLinears, SiblingWeightsShareOneBuffer) {
  torch::jit::Module m = projections(at::kBFloat16, true);
  const auto graph = torchfuse::prepare_module_graph(m);
  std::vector<at::Tensor> weights;
  for (torch::jit::Node* n : graph->nodes()) {
    if (n->kind() != c10::aten::linear) continue;
    weights.push_back(torch::jit::toIValue(n->input(1))->toTensor());
  }
  ASSERT_EQ(weights.size(), 6u);
  // q, k, v: one storage, consecutive rows; gate, up: another; down: its own.
  EXPECT_TRUE(weights[1].storage().is_alias_of(weights[0].storage()));
  EXPECT_TRUE(weights[2].storage().is_alias_of(weights[0].storage()));
  EXPECT_EQ(weights[1].storage_offset(), weights[0].numel());
  EXPECT_EQ(weights[2].storage_offset(), weights[0].numel() + weights[1].numel());
  EXPECT_TRUE(weights[4].storage().is_alias_of(weights[3].storage()));
  EXPECT_FALSE(weights[3].storage().is_alias_of(weights[0].storage()));
  EXPECT_FALSE(weights[5].storage().is_alias_of(weights[3].storage()));
  // The values are the module's.
  EXPECT_TRUE(torch::equal(weights[1], m.attr("wk").toTensor()));
  EXPECT_TRUE(torch::equal(weights[4], m.attr("wu").toTensor()));
}

TEST(ConcatLinears, ResultsReadAsTheirOwnTensorStayApart) {
  torch::jit::Module m("M");
  const auto bf16 = torch::TensorOptions().dtype(at::kBFloat16);
  m.register_parameter("wa", torch::randn({24, 16}, bf16), false);
  m.register_parameter("wb", torch::randn({8, 16}, bf16), false);
  m.register_parameter("wc", torch::randn({8, 16}, bf16), false);
  // b is returned; c's view merges its last dim with the one before it.
  m.define(R"JIT(
def forward(self, x):
    a = torch.relu(torch.linear(x, self.wa))
    b = torch.linear(x, self.wb)
    c = torch.linear(x, self.wc).view(2, 40)
    return a, b, c
)JIT");
  const auto e = torchfuse::compile(m, options()).explain(inputs(at::kBFloat16));
  EXPECT_TRUE(any_line_has(e.refused, "is returned or collected (prim::TupleConstruct")) << joined(e.refused);
  EXPECT_TRUE(any_line_has(e.refused, "aten::view (%c.1), which needs the linear's own contiguous result")) << joined(e.refused);
  EXPECT_FALSE(any_line_has(e.rewrites, "output features")) << joined(e.rewrites);
  EXPECT_EQ(gemms(e.rewritten_graph), 3) << e.rewritten_graph;
}

// Views of views are followed with the slice's strides: a rotation's slices and cat of the heads
// merge; a view that merges the sliced last dim with another, after an unsqueeze, does not.
TEST(ConcatLinears, ViewsOfViewsAreFollowed) {
  const auto bf16 = torch::TensorOptions().dtype(at::kBFloat16);
  torch::jit::Module rope("Rope");
  rope.register_parameter("wq", torch::randn({24, 16}, bf16) / 4.0, false);
  rope.register_parameter("wk", torch::randn({8, 16}, bf16) / 4.0, false);
  rope.define(R"JIT(
def forward(self, x):
    B = x.size(0)
    T = x.size(1)
    q = torch.linear(x, self.wq).view(B, T, 3, 8).transpose(1, 2)
    k = torch.linear(x, self.wk).view(B, T, 1, 8).transpose(1, 2)
    q = q * 2.0 + torch.cat([-q[..., 4:], q[..., :4]], -1)
    k = k * 2.0 + torch.cat([-k[..., 4:], k[..., :4]], -1)
    return (q + k).sum(-1)
)JIT");
  const auto e = torchfuse::compile(rope, options()).explain(inputs(at::kBFloat16));
  EXPECT_TRUE(any_line_has(e.rewrites, "-> one aten::linear with 32 output features")) << joined(e.rewrites) << joined(e.refused);
  expect_matches_module(rope, at::kBFloat16, options());

  torch::jit::Module merged_dims("M");
  merged_dims.register_parameter("wa", torch::randn({24, 16}, bf16), false);
  merged_dims.register_parameter("wb", torch::randn({8, 16}, bf16), false);
  merged_dims.define(R"JIT(
def forward(self, x):
    a = torch.linear(x, self.wa).unsqueeze(0).view(1, 2, 120)
    b = torch.sigmoid(torch.linear(x, self.wb))
    return a.sum(-1) + b.sum()
)JIT");
  const auto m = torchfuse::compile(merged_dims, options()).explain(inputs(at::kBFloat16));
  EXPECT_TRUE(any_line_has(m.refused, "aten::view")) << joined(m.refused);
  EXPECT_TRUE(any_line_has(m.refused, "which needs the linear's own contiguous result")) << joined(m.refused);
  EXPECT_FALSE(any_line_has(m.rewrites, "output features")) << joined(m.rewrites);
}

// A traced callable's weights are the caller's tensors: nothing is copied, so nothing merges.
TEST(ConcatLinears, CallersWeightsAreNotStoredTogether) {
  const auto bf16 = torch::TensorOptions().dtype(at::kBFloat16);
  const at::Tensor wa = torch::randn({24, 16}, bf16), wb = torch::randn({8, 16}, bf16);
  const torchfuse::TensorFn fn = [wa, wb](const std::vector<at::Tensor>& in) {
    return std::vector<at::Tensor>{torch::sigmoid(torch::linear(in[0], wa)).sum(-1) +
                                   torch::sigmoid(torch::linear(in[0], wb)).sum(-1)};
  };
  const at::Tensor x = torch::randn({2, 5, 16}, bf16);
  const auto e = torchfuse::compile(fn, {x}, options()).explain({x});
  EXPECT_TRUE(any_line_has(e.refused, "weights are not stored together")) << joined(e.refused);
  EXPECT_FALSE(any_line_has(e.rewrites, "output features")) << joined(e.rewrites);
}

TEST(ConcatLinears, OptionOffLeavesTheLinearsApart) {
  torch::jit::Module m = projections(at::kBFloat16, false);
  const auto e = torchfuse::compile(m, options(false)).explain(inputs(at::kBFloat16));
  EXPECT_FALSE(any_line_has(e.rewrites, "output features")) << joined(e.rewrites);
  EXPECT_EQ(gemms(e.rewritten_graph), 6) << e.rewritten_graph;
  expect_matches_module(m, at::kBFloat16, options(false));
}

}  // namespace

namespace {

// With CompileOptions::concat_linears_autotune, and under gemm_autotune whatever that says, each
// merged GEMM's call carries the widths of its results' column ranges (runtime/gemm_parts.h
// times one GEMM per range against the whole); with neither (the default), none. On the CPU the
// call runs ATen's linear: results against the original module.
TEST(ConcatLinears, TimedGemmsCarryTheirColumnParts) {
  torch::jit::Module m = projections(at::kBFloat16, /*biases=*/true);
  const torchfuse::CompileOptions untimed_options = options();
  ASSERT_FALSE(untimed_options.concat_linears_autotune) << "the default";
  torchfuse::CompileOptions by_parts_option = untimed_options, by_gemm_autotune = untimed_options;
  by_parts_option.concat_linears_autotune = true;
  by_gemm_autotune.gemm_autotune = true;
  for (const torchfuse::CompileOptions& timed : {by_parts_option, by_gemm_autotune}) {
    const auto e = torchfuse::compile(m, timed).explain(inputs(at::kBFloat16));
    const std::string label = timed.gemm_autotune ? "gemm_autotune" : "concat_linears_autotune";
    EXPECT_TRUE(any_line_has(e.rewrites, "parts [24, 8, 8] timed against the whole")) << label << "\n" << joined(e.rewrites);
    EXPECT_TRUE(any_line_has(e.rewrites, "parts [40, 40] timed against the whole")) << label << "\n" << joined(e.rewrites);
    EXPECT_EQ(count_occurrences(e.rewritten_graph, "value=[24, 8, 8]"), 1) << label << "\n" << e.rewritten_graph;
    EXPECT_EQ(count_occurrences(e.rewritten_graph, "value=[40, 40]"), 1) << label << "\n" << e.rewritten_graph;
    EXPECT_EQ(gemms(e.rewritten_graph), 3) << label << "\n" << e.rewritten_graph;
    expect_matches_module(m, at::kBFloat16, timed);
  }
  const auto untimed = torchfuse::compile(m, untimed_options).explain(inputs(at::kBFloat16));
  EXPECT_FALSE(any_line_has(untimed.rewrites, "parts")) << joined(untimed.rewrites);
  EXPECT_EQ(count_occurrences(untimed.rewritten_graph, "value=[24, 8, 8]"), 0) << untimed.rewritten_graph;
  EXPECT_EQ(gemms(untimed.rewritten_graph), 3) << untimed.rewritten_graph;
  expect_matches_module(m, at::kBFloat16, untimed_options);
}

}  // namespace
