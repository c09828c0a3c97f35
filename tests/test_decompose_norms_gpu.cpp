// Batch, group and instance norms decomposed (passes/decompose_norms.h) on the GPU: each norm and
// its neighbours as one kernel, against eager (compare_with_eager: allclose, else judged against
// the float64 run) in f32, f16 and bf16, at the compiled sizes and at others, with parameters in
// the input's dtype and, for 16-bit inputs, in float32 (a model kept in float32 norms). Skipped
// without CUDA.
#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/gpu_compare.h"
#include "tests/test_util.h"

namespace {

torch::jit::Module norm_module(const std::string& source, int64_t channels, c10::ScalarType param_dtype) {
  return tftest::norm_layer_module(source, channels, torch::TensorOptions().dtype(param_dtype).device(torch::kCUDA));
}

struct GpuNormCase {
  const char* name;
  const char* source;
  int64_t channels;
  std::vector<int64_t> shape;
  std::vector<int64_t> other;
  size_t kernels;  // how many kernels the graph becomes (ATen's convolution not counted)
};

const std::vector<GpuNormCase> kCases = {
    {"batch_norm_relu_residual",
     "def forward(self, x):\n    y = torch.batch_norm(x, self.w, self.b, self.rm, self.rv, False, 0.1, 1e-5, True)\n"
     "    return torch.relu(y + x)\n",
     64, {8, 64, 28, 28}, {3, 64, 14, 9}, 1},
    {"batch_norm_1d",
     "def forward(self, x):\n    return torch.sigmoid(torch.batch_norm(x, self.w, self.b, self.rm, self.rv, False, 0.1, 1e-3, False))\n",
     256, {64, 256}, {7, 256}, 1},
    {"group_norm_silu_unet",
     "def forward(self, x):\n    return torch.silu(torch.group_norm(x, 32, self.w, self.b, 1e-5, True))\n",
     320, {2, 320, 32, 32}, {1, 320, 16, 24}, 1},
    {"group_norm_no_affine_residual",
     "def forward(self, x):\n    return torch.group_norm(x, 8, None, None, 1e-6, True) + x\n",
     64, {4, 64, 300}, {2, 64, 77}, 1},
    {"instance_norm_relu",
     "def forward(self, x):\n    return torch.relu(torch.instance_norm(x, self.w, self.b, None, None, True, 0.1, 1e-5, True))\n",
     32, {4, 32, 40, 40}, {2, 32, 17, 33}, 1},
    {"instance_norm_running_stats",
     "def forward(self, x):\n    return torch.instance_norm(x, None, None, self.rm, self.rv, False, 0.1, 1e-5, True) - x\n",
     32, {4, 32, 20, 20}, {2, 32, 9, 5}, 1},
};

TEST(DecomposeNormsGpu, NormsAndNeighboursInOneKernelMatchEager) {
  if (!tftest::have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    const std::vector<c10::ScalarType> param_dtypes =
        dtype == c10::kFloat ? std::vector<c10::ScalarType>{dtype} : std::vector<c10::ScalarType>{dtype, c10::kFloat};
    for (const auto param_dtype : param_dtypes) {
      for (const auto& tc : kCases) {
        // Float32 parameters of a 16-bit input: the batch norm's mixed form (ATen's kernels take it).
        const bool mixed = param_dtype != dtype;
        if (mixed && std::string(tc.source).find("batch_norm") == std::string::npos) continue;
        SCOPED_TRACE(std::string(tc.name) + " " + c10::toString(dtype) + ", parameters " + c10::toString(param_dtype));
        auto options = tftest::quiet_options();
        options.debug_poison_outputs = true;
        auto compiled = torchfuse::compile(norm_module(tc.source, tc.channels, param_dtype), options);
        const auto in = tftest::cuda_input(tc.shape, dtype);
        tftest::expect_matches_eager(compiled, in);
        EXPECT_GT(compiled.stats().fused_calls, 0);
        EXPECT_EQ(compiled.kernels().size(), tc.kernels) << compiled.graph_for(in);
        tftest::expect_matches_eager(compiled, tftest::cuda_input(tc.other, dtype));
      }
    }
  }
}

// A UNet block's norm between convolutions: the convolutions stay ATen's, the norm and its SiLU
// one kernel in between.
TEST(DecomposeNormsGpu, UnetBlockBetweenConvolutions) {
  if (!tftest::have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const auto dtype : {c10::kFloat, c10::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    torch::jit::Module m("UnetBlock");
    const auto opts = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
    m.register_buffer("w", (1.0 + 0.5 * torch::randn({128})).to(opts));
    m.register_buffer("b", torch::randn({128}).to(opts));
    m.register_buffer("cw", (torch::randn({128, 128, 3, 3}) * 0.03).to(opts));
    m.register_buffer("cb", torch::randn({128}).to(opts));
    m.define(
        "def forward(self, x):\n"
        "    h = torch.silu(torch.group_norm(x, 32, self.w, self.b, 1e-5, True))\n"
        "    h = torch.conv2d(h, self.cw, self.cb, 1, 1)\n"
        "    return x + h\n");
    auto compiled = torchfuse::compile(m, tftest::quiet_options());
    const auto in = tftest::cuda_input({2, 128, 24, 24}, dtype);
    tftest::expect_matches_eager(compiled, in);
    EXPECT_GE(compiled.kernels().size(), 1u) << compiled.graph_for(in);
    EXPECT_TRUE(tftest::contains_in_order(compiled.graph_for(in), {"torchfuse::FusionGroup", "aten::conv2d"}))
        << compiled.graph_for(in);
  }
}

}  // namespace
