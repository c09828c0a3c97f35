// Views inside pointwise groups on the GPU (tests/test_views.cpp and tests/test_view_slices.cpp
// check the plans on the CPU): each view chain runs as one kernel and matches eager in f32, f16
// and bf16, on fresh inputs of two batch sizes (no size is baked into the kernel), on strided
// inputs and inputs at storage offsets; slices, selects and splits move the input's pointer;
// calls whose sizes do not fit the profile's ranges fall back to eager (and raise where eager
// raises). Skipped without CUDA.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <functional>

#include "benchmarks/kernel_count.h"
#include "tests/gpu_view_util.h"
#include "tests/mask_modules.h"
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
      // Spelled as views with size lists (passes/spell_view_likes.h).
      {"unflatten", "x, y", "torch.relu(x * 2.0).unflatten(-1, [4, -1]) * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {b, 24, 4, 10}}; }},
      {"unflatten_middle", "x, y", "torch.relu(x * 2.0).unflatten(1, [6, 4]) * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {b, 6, 4, 40}}; }},
      {"view_as", "x, y", "torch.relu(x * 2.0).view_as(y) * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {b, 960}}; }},
      {"reshape_as", "x, y", "torch.tanh(x * 2.0).reshape_as(y) - y", [](int64_t b) { return Shapes{{b, 960}, {b, 24, 40}}; }},
      // Reshapes that copy (the heads merged back), moved after the ops (passes/sink_reshapes.h).
      {"head_merge_residual", "x, y", "x.transpose(1, 2).reshape(x.size(0), x.size(2), x.size(1) * x.size(3)) + y",
       [](int64_t b) { return Shapes{{b, 4, 24, 16}, {b, 24, 64}}; }},
      {"head_merge_chain", "x, y, z", "torch.relu(x.transpose(1, 2).reshape(x.size(0), x.size(2), -1) * 0.5 + y) * z",
       [](int64_t b) { return Shapes{{b, 3, 20, 8}, {b, 20, 24}, {b, 20, 24}}; }},
  };
}

std::vector<c10::IValue> random_inputs(const Shapes& shapes, c10::ScalarType dtype) {
  return tftest::random_cuda_inputs(shapes, dtype);
}

using tftest::expect_one_fused_kernel;

TEST(ViewsGpu, EachViewChainIsOneKernelMatchingEager) {
  REQUIRE_GPU();
  for (const auto& vc : gpu_view_cases()) {
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      const std::string label = std::string(vc.name) + " " + c10::toString(dtype);
      SCOPED_TRACE(label);
      auto c = torchfuse::compile(tftest::module_returning(vc.args, vc.expr), tftest::poisoned_options());
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
    auto c = torchfuse::compile(tftest::module_returning("x, y", "torch.relu(x * 2.0).permute(0, 2, 1) * y + 1.0"), tftest::poisoned_options());
    c.forward(make(8, dtype));
    expect_one_fused_kernel(c, make(8, dtype), label + " batch 8");
    expect_one_fused_kernel(c, make(5, dtype), label + " batch 5");
  }
}

// A module and the inputs it is called with at batch size b in a dtype.
struct MadeCase {
  const char* name;
  const char* args;
  const char* expr;
  std::function<std::vector<c10::IValue>(int64_t, c10::ScalarType)> make;
};

// Transposed inputs read through shared-memory tiles (PointwiseLayout::tile_dim): sizes that are
// no multiple of a tile, the tile dim between outer and inner dims, two transposed inputs, a
// boolean one, broadcast and offset inputs, each tile size; f32, f16, bf16 against eager.
TEST(ViewsGpu, TiledTransposesMatchEager) {
  REQUIRE_GPU();
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  const std::vector<MadeCase> cases = {
      {"t", "x, y", "torch.sigmoid(x.t()) * y",
       [&](int64_t b, c10::ScalarType d) {
         return std::vector<c10::IValue>{torch::randn({70 + b, 45}, opts).to(d), torch::randn({45, 70 + b}, opts).to(d)};
       }},
      {"t_even", "x, y", "torch.sigmoid(x.t()) * y",  // even sizes: the vector path
       [&](int64_t b, c10::ScalarType d) {
         return std::vector<c10::IValue>{torch::randn({96, 2 * (20 + b)}, opts).to(d), torch::randn({2 * (20 + b), 96}, opts).to(d)};
       }},
      {"middle", "x, z, y, w", "torch.relu(x.transpose(1, 2) + z.transpose(1, 2)) * y + w",
       [&](int64_t b, c10::ScalarType d) {
         return std::vector<c10::IValue>{torch::randn({b, 48, 81}, opts).to(d), torch::randn({b, 48, 81}, opts).to(d),
                                         torch::randn({b, 81, 48}, opts).to(d), torch::randn({48}, opts).to(d)};
       }},
      {"bool_where", "m, x, y", "torch.where(m.t(), x, y * 2.0)",
       [&](int64_t b, c10::ScalarType d) {
         return std::vector<c10::IValue>{torch::rand({33 * b, 40}, opts) > 0.5, torch::randn({40, 33 * b}, opts).to(d),
                                         torch::randn({40, 33 * b}, opts).to(d)};
       }},
      {"offset_input", "x, y", "torch.tanh(x.t()) - y",
       [&](int64_t b, c10::ScalarType d) {
         // x starts one element into its storage, with a row stride of 101.
         auto wide = torch::randn({64 + b, 101}, opts).to(d);
         return std::vector<c10::IValue>{wide.narrow(1, 1, 100), torch::randn({100, 64 + b}, opts).to(d)};
       }},
      {"permute_4d", "x, y", "x.permute(0, 3, 1, 2) * torch.sigmoid(y)",
       [&](int64_t b, c10::ScalarType d) {
         return std::vector<c10::IValue>{torch::randn({b, 20, 36, 50}, opts).to(d), torch::randn({b, 50, 20, 36}, opts).to(d)};
       }},
  };
  for (const char* tile : {"32", "16", "64"}) {
    for (const auto& tc : cases) {
      for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
        const std::string label = std::string(tc.name) + " tile " + tile + " " + c10::toString(dtype);
        SCOPED_TRACE(label);
        auto options = tftest::poisoned_options();
        options.tune = std::string("pointwise_tile=") + tile;
        auto c = torchfuse::compile(tftest::module_returning(tc.args, tc.expr), options);
        c.forward(tc.make(8, dtype));
        const auto e = c.explain(tc.make(8, dtype), false);
        ASSERT_EQ(e.kernels.size(), 1u);
        EXPECT_NE(e.kernels[0].source.find("tile0[j][tx] = "), std::string::npos) << e.kernels[0].source;
        expect_one_fused_kernel(c, tc.make(8, dtype), label + " batch 8");
        expect_one_fused_kernel(c, tc.make(3, dtype), label + " batch 3");
      }
    }
  }
}

// Row ops over transposed inputs (passes/stage_transposed_rows.h): a tiled copy, then the row
// kernel: two kernels, eager's values in f32, f16 and bf16, at two sizes (rows and columns no
// multiple of a tile; every input at least kStageMinBytes in every dtype).
TEST(ViewsGpu, TransposedRowsStagedMatchEager) {
  REQUIRE_GPU();
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  const std::vector<MadeCase> cases = {
      {"softmax", "x", "torch.softmax(x.t(), -1)",
       [&](int64_t b, c10::ScalarType d) { return std::vector<c10::IValue>{torch::randn({2048, 2048 + 24 * b}, opts).to(d)}; }},
      {"log_softmax_chain", "x", "torch.log_softmax(torch.sigmoid(x.transpose(0, 1)) * 2.0, dim=1)",
       [&](int64_t b, c10::ScalarType d) { return std::vector<c10::IValue>{torch::randn({2048 + 24 * b, 2100}, opts).to(d)}; }},
      {"softmax_3d", "x", "torch.softmax(x.transpose(1, 2) * 0.5, -1)",
       [&](int64_t b, c10::ScalarType d) { return std::vector<c10::IValue>{torch::randn({b, 2050, 1030}, opts).to(d)}; }},
      {"layer_norm", "x, w, b", "torch.layer_norm(x.t(), [2048], w, b, 1e-5)",
       [&](int64_t b, c10::ScalarType d) {
         return std::vector<c10::IValue>{torch::randn({2048, 2048 + 24 * b}, opts).to(d), torch::randn({2048}, opts).to(d),
                                         torch::randn({2048}, opts).to(d)};
       }},
  };
  for (const auto& tc : cases) {
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      const std::string label = std::string(tc.name) + " " + c10::toString(dtype);
      SCOPED_TRACE(label);
      auto c = torchfuse::compile(tftest::module_returning(tc.args, tc.expr), tftest::poisoned_options());
      const auto e = c.explain(tc.make(8, dtype), false);
      ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after << tftest::joined(e.refused);
      EXPECT_NE(e.kernels[0].source.find("tile0"), std::string::npos);
      for (int64_t b : {8, 3}) {
        const auto in = tc.make(b, dtype);
        const auto before = c.stats();
        const auto report = torchfuse::compare_with_eager(c, in);
        torch::cuda::synchronize();
        const auto after = c.stats();
        EXPECT_TRUE(report.passed()) << "batch " << b << ": " << report.to_string();
        EXPECT_EQ(after.kernel_launches - before.kernel_launches, 2) << c.graph_for(in);
        EXPECT_EQ(after.fallback_calls - before.fallback_calls, 0);
      }
    }
  }
}

// A cast gathered from (passes/sink_casts.h), as in BERT's padding mask (the batch index rotated,
// so that the gather stays one): the index reads the uncast mask and the cast joins the kernel
// after it; eager's values for integer and float masks.
TEST(ViewsGpu, CastMovedPastAGatherMatchesEager) {
  REQUIRE_GPU();
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto m = tftest::module_from(R"JIT(
def forward(self, mask, y):
    m = mask.to(11)  # torch.bool
    b = torch.remainder(torch.arange(m.size(0), device=m.device) + 1, m.size(0))[:, None, None]
    k = torch.arange(m.size(1), device=m.device)[None, None, :]
    return torch.where(m[b, k], y, -1.0) * 2.0
)JIT");
  auto c = torchfuse::compile(m, tftest::poisoned_options());
  auto plain = torchfuse::compile(m, tftest::quiet_options());
  for (auto mask_dtype : {c10::kLong, c10::kFloat}) {
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      for (int64_t b : {8, 3}) {
        const std::vector<c10::IValue> in{torch::randint(0, 2, {b, 40}, opts.dtype(mask_dtype)), torch::randn({b, 1, 40}, opts).to(dtype)};
        const auto e = c.explain(in, false);
        ASSERT_TRUE(tftest::any_line_has(e.rewrites, "moved after the gather")) << tftest::joined(e.rewrites);
        ASSERT_TRUE(tftest::any_line_has(e.rewrites, "broadcast and made contiguous in the graph")) << tftest::joined(e.rewrites);
        ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
        EXPECT_EQ(e.kernels[0].description.rfind("cast -> ", 0), 0u) << e.kernels[0].description;
        expect_one_fused_kernel(c, in, std::string(c10::toString(mask_dtype)) + " mask, " + c10::toString(dtype) + " batch " +
                                           std::to_string(b));
        // Every kernel of a call (without the poisoned outputs' fill): ATen's index (its indices
        // made once per size with the aranges, not copied per call) and the fused one.
        plain.forward(in);
        std::string why;
        const int kernels = torchfuse_bench::count_kernels([&] { plain.forward(in); }, &why);
        if (kernels >= 0) EXPECT_EQ(kernels, 2) << plain.graph_for(in);
      }
    }
  }
}

// BERT's padding mask as Hugging Face builds it, the mask indexed by aranges of the batch and the key
// positions (passes/view_arange_indices.h): the index becomes a view of the mask and the whole
// mask, cast included, one kernel per call; eager's values for integer, float and bool masks.
TEST(ViewsGpu, ArangeIndexedMaskIsOneKernelMatchingEager) {
  REQUIRE_GPU();
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto m = tftest::module_from(tftest::kArangeIndexedMask);
  for (auto mask_dtype : {c10::kLong, c10::kFloat, c10::kBool}) {
    // A module per mask dtype: nine signatures would pass max_specializations (8).
    auto c = torchfuse::compile(m, tftest::poisoned_options());
    auto plain = torchfuse::compile(m, tftest::quiet_options());
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      for (int64_t b : {8, 3}) {
        const std::vector<c10::IValue> in{torch::randint(0, 2, {b, 40}, opts).to(mask_dtype),
                                          torch::randn({b, 2, 3, 40}, opts).to(dtype)};
        const auto e = c.explain(in, false);
        ASSERT_TRUE(tftest::any_line_has(e.rewrites, "indexed by aranges")) << tftest::joined(e.rewrites);
        ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
        expect_one_fused_kernel(c, in, std::string(c10::toString(mask_dtype)) + " mask, " + c10::toString(dtype) + " batch " +
                                           std::to_string(b));
        plain.forward(in);
        std::string why;
        const int kernels = torchfuse_bench::count_kernels([&] { plain.forward(in); }, &why);
        if (kernels >= 0) EXPECT_EQ(kernels, 1) << plain.graph_for(in);
      }
    }
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
  auto c = torchfuse::compile(tftest::module_returning("x, y", "torch.relu(x * 2.0).flatten(1, 2) * y + 1.0"), tftest::poisoned_options());
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
    auto c = torchfuse::compile(tftest::module_from(std::string("def forward(self, ") + rc.args + "):\n" + rc.source), tftest::poisoned_options());
    c.forward(random_inputs(rc.shapes, c10::kFloat));
    const auto in = random_inputs(rc.shapes, c10::kFloat);
    const auto report = torchfuse::compare_with_eager(c, in);
    torch::cuda::synchronize();
    EXPECT_TRUE(report.passed()) << report.to_string() << c.graph_for(in);
    EXPECT_GE(tftest::fusion_nodes(c.graph_for(in)), 1) << c.graph_for(in);
  }
}

// ---- slices, selects, narrows, expands, splits, contiguous ----

std::vector<GpuViewCase> gpu_slice_cases() {
  return {
      {"slice_last", "x, y", "torch.relu(x * 2.0)[..., 2:34] * y + 1.0", [](int64_t b) { return Shapes{{b, 24, 40}, {b, 24, 32}}; }},
      {"slice_step", "x, y", "torch.relu(x * 2.0)[:, 1::2] * y", [](int64_t b) { return Shapes{{b, 48}, {b, 24}}; }},
      {"slice_negative", "x, y", "torch.relu(x * 2.0)[..., -8:] * y", [](int64_t b) { return Shapes{{b, 40}, {b, 8}}; }},
      {"slice_rows", "x, y", "torch.relu(x * 2.0)[1:100] * y", [](int64_t b) { return Shapes{{b, 40}, {b - 1, 40}}; }},
      {"slice_of_input_misaligned", "x, y", "torch.relu(x[:, 3:35] * y)", [](int64_t b) { return Shapes{{b, 40}, {b, 32}}; }},
      {"slice_of_input_aligned", "x, y", "torch.relu(x[:, 8:40] * y)", [](int64_t b) { return Shapes{{b, 48}, {b, 32}}; }},
      {"slice_two_halves", "x", "torch.relu(x[..., :16]) * x[..., 16:] - x[..., 8:24]", [](int64_t b) { return Shapes{{b, 6, 32}}; }},
      {"select", "x, y", "torch.relu(x * 2.0)[:, 1] * y", [](int64_t b) { return Shapes{{b, 8, 40}, {b, 40}}; }},
      {"select_last_row", "x, y", "torch.relu(x[-1] * y) + 1.0", [](int64_t b) { return Shapes{{b, 40}, {40}}; }},
      {"narrow", "x, y", "torch.relu(x * 2.0).narrow(1, 2, 16) * y", [](int64_t b) { return Shapes{{b, 40}, {b, 16}}; }},
      {"expand", "x, y", "torch.relu(x * 2.0).expand(3, -1, 40) * y", [](int64_t b) { return Shapes{{b, 1}, {3, b, 40}}; }},
      {"expand_of_input", "x, y", "torch.relu(x.expand(2, -1, 40) * y)", [](int64_t b) { return Shapes{{b, 1}, {2, b, 40}}; }},
      {"expand_as", "x, y", "torch.relu(y * 2.0 + x.expand_as(y))", [](int64_t b) { return Shapes{{b, 1, 40}, {b, 6, 40}}; }},
      {"chunk_item", "x, y", "torch.relu(x * 2.0).chunk(2, -1)[1] * y", [](int64_t b) { return Shapes{{b, 48}, {b, 24}}; }},
      {"split_item", "x, y", "torch.relu(x * 2.0).split(16, 1)[-1] * y", [](int64_t b) { return Shapes{{b, 40}, {b, 8}}; }},
      {"split_sizes_item", "x, y", "torch.relu(x * 2.0).split([8, 32], 1)[1] * y", [](int64_t b) { return Shapes{{b, 40}, {b, 32}}; }},
      {"unbind_item", "x, y", "torch.relu(x * 2.0).unbind(1)[2] * y", [](int64_t b) { return Shapes{{b, 4, 40}, {b, 40}}; }},
      {"contiguous", "x, y", "torch.relu(x * 2.0).t().contiguous() * y", [](int64_t b) { return Shapes{{b * 8, 72}, {72, b * 8}}; }},
      {"contiguous_output", "x, y", "torch.relu(x * y).transpose(1, 2).contiguous()", [](int64_t b) { return Shapes{{b, 24, 40}, {b, 24, 40}}; }},
      {"slice_output", "x, y", "torch.relu(x * y)[:, 2:30]", [](int64_t b) { return Shapes{{b, 40}, {b, 40}}; }},
  };
}

TEST(ViewsGpu, SliceViewChainsAreOneKernelMatchingEager) {
  REQUIRE_GPU();
  for (const auto& vc : gpu_slice_cases()) {
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      const std::string label = std::string(vc.name) + " " + c10::toString(dtype);
      SCOPED_TRACE(label);
      auto c = torchfuse::compile(tftest::module_returning(vc.args, vc.expr), tftest::poisoned_options());
      c.forward(random_inputs(vc.shapes(8), dtype));
      expect_one_fused_kernel(c, random_inputs(vc.shapes(8), dtype), label + " batch 8");
      expect_one_fused_kernel(c, random_inputs(vc.shapes(5), dtype), label + " batch 5");
      EXPECT_EQ(c.stats().specializations, 1);
      // Fused outputs are contiguous, as contiguous() promises.
      const auto out = c.forward(random_inputs(vc.shapes(5), dtype)).toTensor();
      EXPECT_TRUE(out.is_contiguous());
    }
  }
}

TEST(ViewsGpu, SlicesOfOffsetAndStridedInputsMatchEager) {
  REQUIRE_GPU();
  // The inputs are views themselves: a storage offset of 1 (misaligned), a transposed layout;
  // the group's slices move the pointer further.
  auto make = [](int64_t b, c10::ScalarType dtype) {
    auto opts = torch::TensorOptions().device(torch::kCUDA);
    const auto wide = torch::randn({b, 45}, opts).to(dtype);
    return std::vector<c10::IValue>{wide.narrow(1, 1, 40), torch::randn({48, b}, opts).to(dtype).t(),
                                    torch::randn({b, 16}, opts).to(dtype)};
  };
  for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    const std::string label = std::string("offset and strided ") + c10::toString(dtype);
    auto c = torchfuse::compile(
        tftest::module_returning("x, t, y", "torch.sigmoid(x[:, 4:20] * 2.0) + t[:, 1::3] * y - x.narrow(1, 24, 16)"),
        tftest::poisoned_options());
    c.forward(make(8, dtype));
    expect_one_fused_kernel(c, make(8, dtype), label + " batch 8");
    expect_one_fused_kernel(c, make(5, dtype), label + " batch 5");
  }
}

TEST(ViewsGpu, SlicesOfIntegerAndBoolTensorsMatchEager) {
  REQUIRE_GPU();
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  for (auto dtype : {c10::kInt, c10::kLong}) {
    auto c = torchfuse::compile(tftest::module_returning("x, y", "(x[:, 1:5] + y.select(0, 1)) * 3 - x.chunk(2, 1)[0]"), tftest::poisoned_options());
    auto make = [&] {
      return std::vector<c10::IValue>{torch::randint(-9, 9, {16, 8}, opts).to(dtype), torch::randint(-9, 9, {3, 4}, opts).to(dtype)};
    };
    c.forward(make());
    expect_one_fused_kernel(c, make(), std::string("ints ") + c10::toString(dtype));
  }
  auto c = torchfuse::compile(tftest::module_returning("m, k", "torch.logical_and(m[:, 1:], k.expand(16, 7)).logical_not()"),
                              tftest::poisoned_options());
  auto make = [&] { return std::vector<c10::IValue>{torch::rand({16, 8}, opts) > 0.5, torch::rand({1, 7}, opts) > 0.5}; };
  c.forward(make());
  expect_one_fused_kernel(c, make(), "bools");
}

// Multi-statement modules: each matches eager with `kernels` fused launches per call.
struct GpuModuleCase {
  const char* name;
  const char* source;  // the body of forward(self, <args>)
  const char* args;
  std::function<Shapes(int64_t)> shapes;
  int kernels;
};

void expect_module_matches(const GpuModuleCase& mc, c10::ScalarType dtype, bool fuse_siblings = false) {
  const std::string label = std::string(mc.name) + " " + c10::toString(dtype) + (fuse_siblings ? " siblings" : "");
  SCOPED_TRACE(label);
  auto options = tftest::poisoned_options();
  options.fuse_siblings = fuse_siblings;
  auto c = torchfuse::compile(tftest::module_from(std::string("def forward(self, ") + mc.args + "):\n" + mc.source), options);
  c.forward(random_inputs(mc.shapes(8), dtype));
  for (int64_t b : {8, 5}) {
    const auto in = random_inputs(mc.shapes(b), dtype);
    const auto before = c.stats();
    const auto report = torchfuse::compare_with_eager(c, in);
    torch::cuda::synchronize();
    const auto after = c.stats();
    EXPECT_TRUE(report.passed()) << report.to_string() << c.graph_for(in);
    EXPECT_EQ(after.fused_calls - before.fused_calls, 1);
    EXPECT_EQ(after.kernel_launches - before.kernel_launches, mc.kernels) << c.graph_for(in);
    EXPECT_EQ(after.fallback_calls - before.fallback_calls, 0);
  }
}

TEST(ViewsGpu, UnpackedSplitsAndRealModelPatternsMatchEager) {
  REQUIRE_GPU();
  const std::vector<GpuModuleCase> cases = {
      {"gate_up_chunk", "    gate, up = torch.matmul(x, w).chunk(2, -1)\n    return torch.silu(gate) * up\n", "x, w",
       [](int64_t b) { return Shapes{{b, 32}, {32, 96}}; }, 1},
      {"chunk3", "    a, b, c = x.chunk(3, 1)\n    return torch.relu(a * 2.0) + b[..., :1] * c[..., :1]\n", "x",
       [](int64_t b) { return Shapes{{b, 48}}; }, 1},
      {"split_int", "    a, b, c = x.split(16, -1)\n    return torch.relu(a * 2.0) + b[..., :1] * c[..., :1]\n", "x",
       [](int64_t b) { return Shapes{{b, 40}}; }, 1},
      {"split_sizes", "    a, b, c = x.split([8, 24, 8], 1)\n    return torch.relu(a * 2.0) * c + b[..., :8]\n", "x",
       [](int64_t b) { return Shapes{{b, 40}}; }, 1},
      {"unbind", "    a, b, c = x.unbind(1)\n    return torch.sigmoid(a * 2.0) * b - c\n", "x",
       [](int64_t b) { return Shapes{{b, 3, 40}}; }, 1},
      {"qkv_piece_outside", "    q, k, v = torch.matmul(x, w).chunk(3, -1)\n    return torch.matmul(torch.relu(q * 0.5) + k, v.t())\n",
       "x, w", [](int64_t b) { return Shapes{{b, 16}, {16, 48}}; }, 1},
      {"pieces_in_two_groups",
       "    a, b = x.chunk(2, -1)\n    h = torch.matmul(torch.relu(a * 2.0), w)\n    return torch.sigmoid(h + 1.0) * b\n",
       "x, w", [](int64_t b) { return Shapes{{b, 32}, {16, 16}}; }, 2},
      {"rope_with_cat",
       "    r = torch.cat((-q[..., 32:], q[..., :32]), -1)\n    return q * cos + r * sin\n", "q, cos, sin",
       [](int64_t b) { return Shapes{{b, 4, 8, 64}, {8, 64}, {8, 64}}; }, 1},
      {"rope_halves",
       "    q1 = q[..., :32]\n    q2 = q[..., 32:]\n    c = cos[..., :32]\n    s = sin[..., :32]\n"
       "    return q1 * c - q2 * s, q2 * c + q1 * s\n",
       // Two chains sharing inputs but no producer: two kernels (no sibling fusion yet).
       "q, cos, sin", [](int64_t b) { return Shapes{{b, 4, 8, 64}, {8, 64}, {8, 64}}; }, 2},
      {"mask_expand",
       "    m = mask[:, None, None, :].expand(-1, 4, 8, 8)\n    return torch.where(m > 0, s * 0.125, -10000.0) + bias\n",
       "s, mask, bias", [](int64_t b) { return Shapes{{b, 4, 8, 8}, {b, 8}, {8, 8}}; }, 1},
      {"expand_as_in_row_sum", "    return (x * m.expand_as(x)).sum(-1)\n", "x, m",
       [](int64_t b) { return Shapes{{b, 64}, {b, 1}}; }, 1},
      {"expand_as_in_softmax", "    return torch.softmax(x + m.expand_as(x), -1)\n", "x, m",
       [](int64_t b) { return Shapes{{b, 64}, {1, 64}}; }, 1},
      {"contiguous_then_view",
       "    y = torch.relu(x * 2.0).transpose(1, 2).contiguous()\n    return y.view(-1, 96)\n", "x",
       [](int64_t b) { return Shapes{{b, 8, 12}}; }, 1},
  };
  for (const auto& mc : cases)
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) expect_module_matches(mc, dtype);
}

// CompileOptions::fuse_siblings: sibling chains of one shape as one kernel (outputs poisoned first,
// so every element of both must be written), against eager in each dtype at two batch sizes;
// siblings it refuses stay as many kernels as without it.
TEST(ViewsGpu, SiblingsFuseIntoOneKernelAndMatchEager) {
  REQUIRE_GPU();
  const std::vector<GpuModuleCase> cases = {
      {"rope_halves",
       "    q1 = q[..., :32]\n    q2 = q[..., 32:]\n    c = cos[..., :32]\n    s = sin[..., :32]\n"
       "    return q1 * c - q2 * s, q2 * c + q1 * s\n",
       "q, cos, sin", [](int64_t b) { return Shapes{{b, 4, 8, 64}, {8, 64}, {8, 64}}; }, 1},
      {"two_chains_one_input", "    return torch.sigmoid(x) * 2.0, torch.tanh(x) + y\n", "x, y",
       [](int64_t b) { return Shapes{{b, 40}, {b, 40}}; }, 1},
      {"three_chains_transposed", "    t = x.transpose(0, 1)\n    return torch.relu(t) * y, t * 2.0 - y, torch.exp(t) + 1.0\n",
       "x, y", [](int64_t b) { return Shapes{{24, b}, {b, 24}}; }, 1},
      {"shapes_differ", "    return torch.sigmoid(x) * 2.0, torch.tanh(x + y)\n", "x, y",
       [](int64_t b) { return Shapes{{b, 24}, {3, b, 24}}; }, 2},
  };
  for (const auto& mc : cases)
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) expect_module_matches(mc, dtype, /*fuse_siblings=*/true);
}

TEST(ViewsGpu, CallsOutsideTheProfilesRangesFallBackOrRaiseAsEager) {
  REQUIRE_GPU();
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  // [:, 38:] is 2 long in the profile and 1 long on [8, 39] (eager broadcasts it against y's 2):
  // that call runs eager (the plan's broadcasting counted on more than one element), and matches.
  {
    auto c = torchfuse::compile(tftest::module_returning("x, y", "torch.relu(x * 2.0)[:, 38:] * y"), tftest::poisoned_options());
    c.forward({torch::randn({8, 40}, opts), torch::randn({8, 2}, opts)});
    const std::vector<c10::IValue> in = {torch::randn({8, 39}, opts), torch::randn({8, 2}, opts)};
    const auto before = c.stats();
    const auto report = torchfuse::compare_with_eager(c, in);
    EXPECT_TRUE(report.passed()) << report.to_string();
    EXPECT_GE(c.stats().fallback_calls - before.fallback_calls, 1);
  }
  // Eager raises: a select out of range, a narrow past the dim, an unpack of the wrong count,
  // inputs that do not broadcast before the slice hides it. So does the compiled module.
  struct Raising {
    const char* args;
    const char* source;
    std::vector<c10::IValue> profile, call;
  };
  const std::vector<Raising> cases = {
      {"x, y", "    return torch.relu(x * 2.0)[:, 30] * y\n", {torch::randn({8, 40}, opts), torch::randn({8}, opts)},
       {torch::randn({8, 20}, opts), torch::randn({8}, opts)}},
      {"x, y", "    return torch.relu(x * 2.0).narrow(1, 8, 16) * y\n", {torch::randn({8, 40}, opts), torch::randn({8, 16}, opts)},
       {torch::randn({8, 20}, opts), torch::randn({8, 16}, opts)}},
      {"x", "    a, b = x.split(16, 1)\n    return torch.relu(a * 2.0) + b\n", {torch::randn({8, 32}, opts)},
       {torch::randn({8, 48}, opts)}},
      {"x, y", "    return torch.relu((x + y) * 2.0)[:, :4]\n", {torch::randn({8, 8}, opts), torch::randn({8, 8}, opts)},
       {torch::randn({8, 10}, opts), torch::randn({8, 12}, opts)}},
  };
  for (const auto& rc : cases) {
    SCOPED_TRACE(rc.source);
    auto c = torchfuse::compile(tftest::module_from(std::string("def forward(self, ") + rc.args + "):\n" + rc.source), tftest::poisoned_options());
    c.forward(rc.profile);
    EXPECT_ANY_THROW(c.forward_eager(rc.call));
    EXPECT_ANY_THROW(c.forward(rc.call));
  }
}

}  // namespace
