// Views inside pointwise groups on the GPU (tests/test_views.cpp checks the plans on the CPU):
// each view chain runs as one kernel and matches eager in f32, f16 and bf16, on fresh inputs of
// two batch sizes (no size is baked into the kernel) and on a transposed (strided) input.
// Skipped without CUDA.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <functional>

#include "tests/test_util.h"

namespace {

using Shapes = std::vector<std::vector<int64_t>>;

struct GpuViewCase {
  const char* name;
  const char* args;
  const char* expr;
  std::function<Shapes(int64_t)> shapes;  // the inputs' shapes for batch size b
};

std::vector<GpuViewCase> gpu_view_cases() {
  return {
      {"permute", "x, y", "torch.relu(x * 2.0).permute(0, 2, 1) * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {b, 40, 24}}; }},
      {"permute_row_bias", "x, y", "torch.relu(x * 2.0).permute(0, 2, 1) * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {24}}; }},
      {"permute_mid_bias", "x, y", "torch.relu(x * 2.0).permute(0, 2, 1) * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {1, 40, 1}}; }},
      {"permute_4d", "x, y", "torch.sigmoid(x * 2.0).permute(0, 2, 1, 3) * y + 1.0", [](int64_t b) { return Shapes{{b, 6, 10, 16}, {b, 10, 6, 16}}; }},
      {"transpose", "x, y", "torch.tanh(x * 2.0).transpose(1, 2) * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {b, 40, 24}}; }},
      {"transpose_outer", "x, y", "torch.relu(x * 2.0).transpose(0, 2) - y", [](int64_t b) { return Shapes{{b, 24, 40}, {40, 24, b}}; }},
      {"t", "x, y", "torch.relu(x * 2.0).t() * y + 1.0", [](int64_t b) { return Shapes{{b * 8, 72}, {72, b * 8}}; }},
      {"t_bias", "x, y", "torch.relu(x * 2.0).t() * y + 1.0", [](int64_t b) { return Shapes{{b * 8, 72}, {b * 8}}; }},
      {"unsqueeze", "x, y", "torch.relu(x * 2.0).unsqueeze(1) * y + 1.0", [](int64_t b) { return Shapes{{b, 40}, {b, 3, 40}}; }},
      {"unsqueeze_last", "x, y", "torch.relu(x * 2.0).unsqueeze(-1) * y + 1.0", [](int64_t b) { return Shapes{{b, 40}, {b, 40, 5}}; }},
      {"squeeze_dim", "x, y", "torch.relu(x * 2.0).squeeze(1) * y + 1.0", [](int64_t b) { return Shapes{{b, 1, 40}, {b, 40}}; }},
      {"squeeze_all", "x, y", "torch.relu(x * 2.0).squeeze() * y + 1.0", [](int64_t b) { return Shapes{{b, 1, 40, 1}, {b, 40}}; }},
      {"flatten", "x, y", "torch.relu(x * 2.0).flatten(1, 2) * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {b, 960}}; }},
      {"flatten_bias", "x, y", "torch.relu(x * 2.0).flatten(1) * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {960}}; }},
      {"flatten_leading", "x, y", "torch.relu(x * 2.0).flatten(0, 1) * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {40}}; }},
      {"flatten_row_broadcast", "x, r, y", "(torch.relu(x * 2.0) + r).flatten(1, 2) * y",
       [](int64_t b) { return Shapes{{b, 24, 40}, {b, 1, 1}, {b, 960}}; }},
      {"reshape_all", "x, y", "torch.relu(x * 2.0).reshape(-1) * y + 1.0", [](int64_t b) { return Shapes{{b, 40}, {b * 40}}; }},
      {"view_all", "x, y", "torch.relu(x * 2.0).view(-1) * y + 1.0", [](int64_t b) { return Shapes{{b, 40}, {b * 40}}; }},
      {"view_of_input", "x, y", "torch.relu(x.permute(0, 2, 1) * y)", [](int64_t b) { return Shapes{{b, 24, 40}, {b, 40, 24}}; }},
      {"two_views", "x, y", "torch.relu(x * 2.0).flatten(1, 2).unsqueeze(1) * y + 1.0",
       [](int64_t b) { return Shapes{{b, 24, 40}, {b, 3, 960}}; }},
      {"permute_unsqueeze", "x, y", "torch.relu(x * 2.0).permute(1, 0).unsqueeze(0) * y + 1.0",
       [](int64_t b) { return Shapes{{b * 8, 40}, {3, 40, b * 8}}; }},
      {"pre_view_broadcast", "x, c, y", "torch.relu(x * c).transpose(0, 1) - y", [](int64_t b) { return Shapes{{b, 1}, {1, 40}, {40, b}}; }},
      {"view_output", "x, y", "torch.relu(x * y).permute(0, 2, 1)", [](int64_t b) { return Shapes{{b, 24, 40}, {b, 24, 40}}; }},
  };
}

std::vector<c10::IValue> random_inputs(const Shapes& shapes, c10::ScalarType dtype) {
  std::vector<c10::IValue> in;
  for (const auto& s : shapes) in.emplace_back(torch::randn(s, torch::TensorOptions().device(torch::kCUDA)).to(dtype));
  return in;
}

torchfuse::CompileOptions poisoned() {
  auto o = tftest::quiet_options();
  o.debug_poison_outputs = true;
  return o;
}

// One fused call on `in`: one kernel launched, one fusion node, eager's values.
void expect_one_fused_kernel(torchfuse::CompiledModule& c, const std::vector<c10::IValue>& in, const std::string& label) {
  SCOPED_TRACE(label);
  const auto before = c.stats();
  const auto report = torchfuse::compare_with_eager(c, in);
  torch::cuda::synchronize();
  const auto after = c.stats();
  EXPECT_TRUE(report.passed()) << report.to_string() << c.graph_for(in);
  EXPECT_EQ(after.fused_calls - before.fused_calls, 1);
  EXPECT_EQ(after.kernel_launches - before.kernel_launches, 1) << c.graph_for(in);
  EXPECT_EQ(after.fallback_calls - before.fallback_calls, 0);
  EXPECT_EQ(tftest::fusion_nodes(c.graph_for(in)), 1) << c.graph_for(in);
}

TEST(ViewsGpu, EachViewChainIsOneKernelMatchingEager) {
  REQUIRE_GPU();
  for (const auto& vc : gpu_view_cases()) {
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      const std::string label = std::string(vc.name) + " " + c10::toString(dtype);
      SCOPED_TRACE(label);
      auto c = torchfuse::compile(tftest::module_returning(vc.args, vc.expr), poisoned());
      c.forward(random_inputs(vc.shapes(8), dtype));  // profiles, fuses, compiles
      expect_one_fused_kernel(c, random_inputs(vc.shapes(8), dtype), label + " batch 8");
      // Another size of the same guard: the same specialization and kernel, other sizes.
      expect_one_fused_kernel(c, random_inputs(vc.shapes(5), dtype), label + " batch 5");
      EXPECT_EQ(c.stats().specializations, 1);
    }
  }
}

TEST(ViewsGpu, TransposedInputIsReadThroughItsStrides) {
  REQUIRE_GPU();
  // x arrives transposed ([b, 24, 40] with its last two dims swapped in memory); the permute
  // then reads it back along memory order.
  auto make = [](int64_t b, c10::ScalarType dtype) {
    auto opts = torch::TensorOptions().device(torch::kCUDA);
    return std::vector<c10::IValue>{torch::randn({b, 40, 24}, opts).to(dtype).transpose(1, 2),
                                    torch::randn({b, 40, 24}, opts).to(dtype)};
  };
  for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    const std::string label = std::string("transposed x ") + c10::toString(dtype);
    auto c = torchfuse::compile(tftest::module_returning("x, y", "torch.relu(x * 2.0).permute(0, 2, 1) * y + 1.0"), poisoned());
    c.forward(make(8, dtype));
    expect_one_fused_kernel(c, make(8, dtype), label + " batch 8");
    expect_one_fused_kernel(c, make(5, dtype), label + " batch 5");
  }
}

TEST(ViewsGpu, TransposedInputOfAFlattenMatchesEager) {
  REQUIRE_GPU();
  // The strides of a transposed x do not merge: flatten stays in ATen (a refusal), and the
  // results still match eager.
  auto make = [](int64_t b) {
    auto opts = torch::TensorOptions().device(torch::kCUDA);
    return std::vector<c10::IValue>{torch::randn({b, 40, 24}, opts).transpose(1, 2), torch::randn({b, 960}, opts)};
  };
  auto c = torchfuse::compile(tftest::module_returning("x, y", "torch.relu(x * 2.0).flatten(1, 2) * y + 1.0"), poisoned());
  c.forward(make(8));
  for (int64_t b : {8, 5}) {
    const auto in = make(b);
    const auto report = torchfuse::compare_with_eager(c, in);
    torch::cuda::synchronize();
    EXPECT_TRUE(report.passed()) << report.to_string() << c.graph_for(in);
  }
  EXPECT_EQ(c.stats().fallback_calls, 0);
}

TEST(ViewsGpu, RefusedViewsStillMatchEager) {
  REQUIRE_GPU();
  // Each refusal rule's graph runs in two groups (or with the view in ATen) and matches eager.
  struct Refused {
    const char* args;
    const char* source;
    Shapes shapes;
  };
  const std::vector<Refused> cases = {
      {"x, y", "    a = torch.relu(x * 2.0)\n    return (a.permute(0, 2, 1) * y, a)\n", {{8, 24, 40}, {8, 40, 24}}},
      {"x", "    a = torch.relu(x * 2.0)\n    return torch.sigmoid(a.permute(0, 2, 1) + a)\n", {{8, 24, 24}}},
      {"x", "    return torch.relu(x * 2.0).permute(0, 2, 1) + x\n", {{8, 24, 24}}},
      {"x, r, y", "    return (torch.relu(x * 2.0) + r).flatten(1, 2) * y\n", {{8, 24, 40}, {24, 1}, {8, 960}}},
      {"x, y", "    return torch.softmax(x * 2.0, dim=-1).permute(0, 2, 1) * y + 1.0\n", {{8, 24, 40}, {8, 40, 24}}},
  };
  for (const auto& rc : cases) {
    SCOPED_TRACE(rc.source);
    auto c = torchfuse::compile(tftest::module_from(std::string("def forward(self, ") + rc.args + "):\n" + rc.source), poisoned());
    c.forward(random_inputs(rc.shapes, c10::kFloat));
    const auto in = random_inputs(rc.shapes, c10::kFloat);
    const auto report = torchfuse::compare_with_eager(c, in);
    torch::cuda::synchronize();
    EXPECT_TRUE(report.passed()) << report.to_string() << c.graph_for(in);
    EXPECT_GE(tftest::fusion_nodes(c.graph_for(in)), 1) << c.graph_for(in);
  }
}

}  // namespace
