// cat and stack inside pointwise groups on the GPU (tests/test_cat.cpp checks the plans on the
// CPU): each runs as one kernel and matches eager in f32, f16 and bf16; a second call whose
// pieces have other sizes along the cat's dim runs the same kernel with other bounds; transposed
// and sliced inputs; Llama's RoPE on [B, H, T, D] with vectorized and misaligned halves. Skipped
// without CUDA.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <functional>

#include "tests/gpu_view_util.h"
#include "tests/test_util.h"

namespace {

using Shapes = std::vector<std::vector<int64_t>>;

struct GpuCatCase {
  const char* name;
  const char* args;
  const char* expr;
  std::function<Shapes(int64_t)> shapes;  // the inputs' shapes for size b
};

std::vector<GpuCatCase> gpu_cat_cases() {
  return {
      {"last_2", "x, y", "torch.cat((torch.relu(x), y * 2.0), -1) + 1.0", [](int64_t b) { return Shapes{{4, 24, b}, {4, 24, 40}}; }},
      {"last_3", "x, y, z", "torch.cat((torch.relu(x), y * 2.0, z), 2) * 3.0",
       [](int64_t b) { return Shapes{{4, 24, b}, {4, 24, 2 * b}, {4, 24, 1}}; }},
      {"last_vector_aligned", "x, y", "torch.cat((x * 2.0, y), -1) + 1.0", [](int64_t b) { return Shapes{{6, 8 * b}, {6, 64}}; }},
      {"middle_2", "x, y", "torch.cat((torch.relu(x), y * 2.0), 1) - 1.0", [](int64_t b) { return Shapes{{4, b, 40}, {4, 7, 40}}; }},
      {"middle_3", "x, y, z", "torch.cat((x, torch.sigmoid(y), z * z), 1) + 0.5",
       [](int64_t b) { return Shapes{{4, 3, 40}, {4, b, 40}, {4, 2, 40}}; }},
      {"leading_2", "x, y", "torch.cat((torch.relu(x), y * 2.0), 0) * 2.0", [](int64_t b) { return Shapes{{b, 8, 40}, {5, 8, 40}}; }},
      {"leading_3", "x, y, z", "torch.cat((x, y, torch.tanh(z)), 0) * 2.0", [](int64_t b) { return Shapes{{b, 40}, {5, 40}, {1, 40}}; }},
      {"stack_1", "x, y", "torch.stack((torch.relu(x), y * 2.0), 1) * 3.0", [](int64_t b) { return Shapes{{b, 40}, {b, 40}}; }},
      {"stack_last", "x, y, z", "torch.stack((x * 2.0, y, z), -1) + 1.0", [](int64_t b) { return Shapes{{b, 40}, {b, 40}, {b, 40}}; }},
      {"broadcast_inside_piece", "x, w, y", "torch.cat((x * w, y), -1) + 1.0", [](int64_t b) { return Shapes{{b, 40}, {40}, {b, 24}}; }},
      {"cat_then_permute", "x, y, z", "torch.cat((x * 2.0, y), 1).permute(0, 2, 1) * z",
       [](int64_t b) { return Shapes{{4, b, 40}, {4, 5, 40}, {4, 40, b + 5}}; }},
      {"cat_output_and_use", "x, y", "torch.sigmoid(torch.cat((x * 2.0, y), -1))", [](int64_t b) { return Shapes{{b, 24}, {b, 40}}; }},
  };
}

std::vector<c10::IValue> random_inputs(const Shapes& shapes, c10::ScalarType dtype) {
  return tftest::random_cuda_inputs(shapes, dtype);
}

using tftest::expect_one_fused_kernel;

TEST(CatGpu, EachCatIsOneKernelMatchingEager) {
  REQUIRE_GPU();
  for (const auto& vc : gpu_cat_cases()) {
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      const std::string label = std::string(vc.name) + " " + c10::toString(dtype);
      SCOPED_TRACE(label);
      auto c = torchfuse::compile(tftest::module_returning(vc.args, vc.expr), tftest::poisoned_options());
      c.forward(random_inputs(vc.shapes(8), dtype));  // profiles, fuses, compiles
      expect_one_fused_kernel(c, random_inputs(vc.shapes(8), dtype), label + " size 8");
      // Other piece sizes along the cat's dim: the same specialization, other bounds.
      expect_one_fused_kernel(c, random_inputs(vc.shapes(5), dtype), label + " size 5");
      expect_one_fused_kernel(c, random_inputs(vc.shapes(13), dtype), label + " size 13");
      EXPECT_EQ(c.stats().specializations, 1);
    }
  }
}

TEST(CatGpu, RopeIsOneKernelMatchingEager) {
  REQUIRE_GPU();
  // rotate_half by slices and by chunk, on [B, H, T, D] with cos/sin of [B, 1, T, D] and [T, D];
  // D = 128 (halves of whole vectors) and D = 36 (halves of 18: no vector lies in one piece).
  const std::string slices = "    h = 64\n    return q * c + torch.cat((-q[..., 64:], q[..., :64]), dim=-1) * s\n";
  const std::string chunks = "    q1, q2 = q.chunk(2, -1)\n    return q * c + torch.cat((-q2, q1), dim=-1) * s\n";
  struct Rope {
    std::string body;
    int64_t d;
    bool per_batch;
  };
  const std::vector<Rope> ropes = {{slices, 128, true}, {chunks, 128, true}, {chunks, 128, false}, {chunks, 36, true}};
  for (const auto& r : ropes) {
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      const std::string label = r.body + " D=" + std::to_string(r.d) + " " + c10::toString(dtype);
      SCOPED_TRACE(label);
      auto make = [&](int64_t b, int64_t t) {
        auto opts = torch::TensorOptions().device(torch::kCUDA);
        const std::vector<int64_t> cs = r.per_batch ? std::vector<int64_t>{b, 1, t, r.d} : std::vector<int64_t>{t, r.d};
        return std::vector<c10::IValue>{torch::randn({b, 8, t, r.d}, opts).to(dtype), torch::randn(cs, opts).to(dtype),
                                        torch::randn(cs, opts).to(dtype)};
      };
      auto c = torchfuse::compile(tftest::module_from("def forward(self, q, c, s):\n" + r.body), tftest::poisoned_options());
      c.forward(make(2, 16));
      expect_one_fused_kernel(c, make(2, 16), label + " B=2 T=16");
      expect_one_fused_kernel(c, make(3, 7), label + " B=3 T=7");
    }
  }
}

TEST(CatGpu, RopeHeadDimChangesBetweenCalls) {
  REQUIRE_GPU();
  // chunk's halves follow the call's D: the pieces' starts are the call's.
  auto c = torchfuse::compile(
      tftest::module_from("def forward(self, q, c, s):\n    q1, q2 = q.chunk(2, -1)\n    return q * c + torch.cat((-q2, q1), dim=-1) * s\n"),
      tftest::poisoned_options());
  auto make = [](int64_t d) {
    auto opts = torch::TensorOptions().device(torch::kCUDA);
    return std::vector<c10::IValue>{torch::randn({2, 4, 16, d}, opts), torch::randn({16, d}, opts), torch::randn({16, d}, opts)};
  };
  c.forward(make(64));
  for (int64_t d : {64, 128, 32, 20, 6}) expect_one_fused_kernel(c, make(d), "D=" + std::to_string(d));
}

TEST(CatGpu, TransposedAndSlicedInputs) {
  REQUIRE_GPU();
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    // x arrives transposed, y as a slice at a storage offset (a view ATen made).
    auto make = [&](int64_t b) {
      return std::vector<c10::IValue>{torch::randn({b, 40, 24}, opts).to(dtype).transpose(1, 2),
                                      torch::randn({b, 24, 50}, opts).to(dtype).narrow(2, 3, 40)};
    };
    auto c = torchfuse::compile(tftest::module_returning("x, y", "torch.cat((x * 2.0, torch.relu(y)), -1) + 1.0"), tftest::poisoned_options());
    c.forward(make(8));
    expect_one_fused_kernel(c, make(8), "batch 8");
    expect_one_fused_kernel(c, make(5), "batch 5");
    // Along a middle dim, with x transposed.
    auto make_mid = [&](int64_t b) {
      return std::vector<c10::IValue>{torch::randn({4, 40, b}, opts).to(dtype).transpose(1, 2), torch::randn({4, 6, 40}, opts).to(dtype)};
    };
    auto m = torchfuse::compile(tftest::module_returning("x, y", "torch.cat((x * 2.0, y), 1) + 1.0"), tftest::poisoned_options());
    m.forward(make_mid(8));
    expect_one_fused_kernel(m, make_mid(8), "mid 8");
    expect_one_fused_kernel(m, make_mid(3), "mid 3");
  }
}

TEST(CatGpu, CallsThatDoNotFitFallBack) {
  REQUIRE_GPU();
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  auto c = torchfuse::compile(tftest::module_returning("x, y", "torch.cat((x * 2.0, y * 3.0), 1) + 1.0"), tftest::quiet_options());
  c.forward({torch::randn({4, 8}, opts), torch::randn({4, 6}, opts)});
  // Pieces that disagree in another dim: eager raises, and so does the fused module.
  EXPECT_ANY_THROW(c.forward({torch::randn({4, 8}, opts), torch::randn({5, 6}, opts)}));
  // Still right afterwards.
  const std::vector<c10::IValue> in = {torch::randn({4, 3}, opts), torch::randn({4, 9}, opts)};
  const auto report = torchfuse::compare_with_eager(c, in);
  EXPECT_TRUE(report.passed()) << report.to_string();
}

}  // namespace
