// Outputs in place (runtime/in_place_outputs.h): which output of a group may take which input's
// memory (the rules that hold for every call), and which call inputs can be taken over (the
// call's reference alone). The GPU side (tests/test_in_place_gpu.cpp) checks the results.
#include <torch/torch.h>

#include "codegen/tuning.h"
#include "passes/pass_list.h"
#include "runtime/in_place_outputs.h"
#include "src/frontend.h"
#include "src/prepare_graph.h"
#include "tests/test_util.h"

namespace {

struct Fused {
  std::shared_ptr<torch::jit::Graph> graph;
  torchfuse::Conversion conversion;
  torchfuse::FusionPlan plan;
};

std::unique_ptr<Fused> fuse(const std::string& source, const std::vector<c10::IValue>& inputs) {
  auto f = std::make_unique<Fused>();
  f->graph = torchfuse::prepare_module_graph(tftest::module_from(source));
  const auto profile = torchfuse::profile_graph(f->graph, inputs);
  f->conversion = torchfuse::convert_to_ir(*f->graph, profile);
  torchfuse::PassContext ctx(*f->conversion.graph, 2, {});
  torchfuse::run_fusion_passes(ctx);
  f->plan = std::move(ctx.plan);
  return f;
}

// The candidates of the graph's only group.
std::vector<int> candidates(const std::string& source, const std::vector<c10::IValue>& inputs) {
  const auto f = fuse(source, inputs);
  EXPECT_EQ(f->plan.groups.size(), 1u) << source;
  if (f->plan.groups.size() != 1) return {};
  const auto& g = f->plan.groups.front();
  return torchfuse::runtime::in_place_candidates(g, torchfuse::codegen::analyze_group(g, torchfuse::codegen::parse_tuning("")));
}

std::string fn(const std::string& args, const std::string& body) { return "def forward(self, " + args + "):\n" + body; }

using V = std::vector<int>;

TEST(InPlaceOutputs, PointwiseOutputsTakeAnInputOfTheirSizesAndDtype) {
  const auto r = [](std::vector<int64_t> s) { return torch::randn(s); };
  EXPECT_EQ(candidates(fn("x, y", "    return torch.sigmoid(x) * y\n"), {r({8, 16}), r({8, 16})}), V({0}));
  // A broadcast input is never taken: the other one, of the output's sizes, is.
  EXPECT_EQ(candidates(fn("x, y", "    return torch.sigmoid(x) * y\n"), {r({16}), r({8, 16})}), V({1}));
  // The output's dtype: float32, not the bf16 input.
  EXPECT_EQ(candidates(fn("x, y", "    return torch.sigmoid(x) * y.float()\n"), {r({8, 16}).to(torch::kBFloat16), r({8, 16})}),
            V({1}));
  // Two outputs of one group (h shared), each taking the input only its own computation reads.
  EXPECT_EQ(candidates(fn("x, y", "    h = x * y\n    a = torch.sigmoid(h) * x\n    b = torch.relu(h) + y\n    return a, b\n"),
                       {r({8, 16}), r({8, 16})}),
            V({0, 1}));
  // x is read for a alone and for b alone: each would store where the other one still loads; y
  // feeds both through h, which a's computation holds.
  EXPECT_EQ(candidates(fn("x, y", "    h = x * y\n    a = torch.sigmoid(h) + x\n    b = torch.tanh(x) * h\n    return a, b\n"),
                       {r({8, 16}), r({8, 16})}),
            V({1, -1}));
  // Read through a view (a transposed input): no output of the group is.
  EXPECT_EQ(candidates(fn("x, y", "    return torch.sigmoid(x.t()) * y\n"), {r({16, 8}), r({8, 16})}), V({-1}));
}

TEST(InPlaceOutputs, RowOutputsOfTheLastPassOnly) {
  const auto r = [](std::vector<int64_t> s) { return torch::randn(s); };
  const std::vector<c10::IValue> ln_in = {r({4, 32, 64}), r({4, 32, 64}), r({64}), r({64})};
  EXPECT_EQ(candidates(fn("x, r, w, b", "    return torch.layer_norm(x + r, [64], w, b, 1e-5)\n"), ln_in), V({0}));
  // h is written in the first pass, where a looped row reads x again after it: only the norm
  // (last pass) takes x.
  EXPECT_EQ(candidates(fn("x, r, w, b", "    h = x + r\n    return torch.layer_norm(h, [64], w, b, 1e-5), h\n"), ln_in),
            V({-1, 0}));
  EXPECT_EQ(candidates(fn("x", "    return torch.softmax(x * 0.5, -1)\n"), {r({16, 128})}), V({0}));
  // Per-row outputs, column groups.
  EXPECT_EQ(candidates(fn("x", "    return torch.tanh(x).sum(-1)\n"), {r({16, 128})}), V({-1}));
  EXPECT_EQ(candidates(fn("x", "    return torch.softmax(x * 0.5, 0)\n"), {r({512, 64})}), V({-1}));
  // Scans: none.
  EXPECT_EQ(candidates(fn("x", "    return torch.cumsum(x * 2.0, -1)\n"), {r({16, 128})}), V({-1}));
}

TEST(InPlaceOutputs, OnlyTheCallsOwnReferenceIsTakenOver) {
  namespace rt = torchfuse::runtime;
  const std::vector<int64_t> s = {4, 8};
  EXPECT_TRUE(rt::can_take_over(c10::IValue(torch::randn(s)), s, torch::kFloat));
  // Held elsewhere too (a graph input, a value read later).
  const at::Tensor held = torch::randn(s);
  EXPECT_FALSE(rt::can_take_over(c10::IValue(held), s, torch::kFloat));
  // A view of memory another tensor still holds.
  EXPECT_FALSE(rt::can_take_over(c10::IValue(held.view({8, 4})), {8, 4}, torch::kFloat));
  // Other sizes, dtype, layout; needing grad; not a tensor.
  EXPECT_FALSE(rt::can_take_over(c10::IValue(torch::randn(s)), {8, 4}, torch::kFloat));
  EXPECT_FALSE(rt::can_take_over(c10::IValue(torch::randn(s)), s, torch::kBFloat16));
  EXPECT_FALSE(rt::can_take_over(c10::IValue(torch::randn({8, 4}).t()), s, torch::kFloat));
  EXPECT_FALSE(rt::can_take_over(c10::IValue(torch::randn(s).requires_grad_()), s, torch::kFloat));
  EXPECT_FALSE(rt::can_take_over(c10::IValue(2.0), s, torch::kFloat));
  // A caller's buffer wrapped as a tensor: the caller may read it again.
  std::vector<float> buffer(32, 1.0f);
  EXPECT_FALSE(rt::can_take_over(c10::IValue(torch::from_blob(buffer.data(), s)), s, torch::kFloat));
  // take_over: the candidates whose inputs can be taken, -1 elsewhere; empty where none.
  std::vector<c10::IValue> in = {c10::IValue(torch::randn(s)), c10::IValue(held)};
  const auto sizes = [&](size_t) { return c10::IntArrayRef(s); };
  const auto dtype = [](size_t) { return torch::kFloat; };
  const auto taken = rt::take_over({0, 1}, in.data(), sizes, dtype);
  EXPECT_EQ(std::vector<int>(taken.begin(), taken.end()), V({0, -1}));
  EXPECT_TRUE(rt::take_over({1, -1}, in.data(), sizes, dtype).empty());
}

}  // namespace
