// The convolution-bias and channels-last rewrites (passes/rewrite_conv_bias.h,
// passes/rewrite_channels_last.h) on the GPU: a residual block, a folded conv + batch norm + ReLU,
// a conv + ReLU read by a view, and ConvNeXt's block and stem, as cuDNN convolutions and fused
// kernels, NCHW and NHWC (16-bit; float32 stays NCHW on CUDA), against eager (compare_with_eager:
// allclose, else judged against the float64 run) in f32, f16 and bf16, at the compiled sizes and
// at others; outputs contiguous where eager's are. Skipped without CUDA.
#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/conv_modules.h"
#include "tests/gpu_compare.h"
#include "tests/test_util.h"

namespace {

struct GpuConvCase {
  const char* name;
  const char* source;
  int64_t channels;
  std::vector<int64_t> shape;
  std::vector<int64_t> other;
  size_t kernels;      // fused kernels (the convolutions are cuDNN's), NCHW
  size_t kernels_cl;   // the same, channels-last
  size_t kernels_f32;  // float32 (NCHW on CUDA), where it differs: a large transposed norm input is
                       // copied by a tiled kernel first (passes/stage_transposed_rows.h)
};

const std::vector<GpuConvCase> kCases = {
    {"residual_block", tftest::kResidualBlock, 64, {8, 64, 28, 28}, {3, 64, 13, 9}, 2, 2, 2},
    {"conv_batch_norm_relu", tftest::kConvBatchNormRelu, 32, {4, 32, 40, 40}, {1, 32, 7, 11}, 1, 1, 1},
    {"conv_relu_view", tftest::kConvReluView, 16, {2, 16, 20, 20}, {5, 16, 9, 3}, 1, 1, 1},
    {"convnext_block", tftest::kConvNextBlock, 96, {8, 96, 56, 56}, {2, 96, 13, 7}, 1, 2, 2},
    // NCHW: 6 compiled kernels for its 5 groups on an H200 (a group compiled for a second
    // layout; which one is not known yet: kernel_names says on failure).
    // Channels-last: each block's residual add is its norm's epilogue.
    {"convnext_stem", tftest::kConvNextStem, 32, {4, 32, 20, 20}, {2, 32, 9, 13}, 6, 3, 6},
    // Channels-last: the block's scale and residual add join the downsampling norm. NCHW: 4
    // compiled kernels for its 3 groups on an H200 (the second norm compiled twice: 2 layouts).
    {"convnext_downsample", tftest::kConvNextDownsample, 32, {4, 32, 20, 20}, {2, 32, 9, 13}, 4, 2, 4},
    // A dict of outputs: the block's result (channels-last in eager) and its mean.
    {"convnext_pooled", tftest::kConvNextPooled, 32, {4, 32, 20, 20}, {2, 32, 9, 13}, 3, 3, 3},
    // A tuple: the map (contiguous in eager) and its mean; channels-last, the mean reads the copy.
    {"conv_relu_pooled", tftest::kConvReluPooled, 32, {4, 32, 20, 20}, {2, 32, 9, 13}, 1, 2, 1},
    // The same with ResNet's global pooling (adaptive_avg_pool2d): a mean over H and W.
    {"conv_relu_global_pool", tftest::kConvReluGlobalPool, 32, {4, 32, 20, 20}, {2, 32, 9, 13}, 1, 2, 1},
};

// Matches eager; where eager's result is contiguous (NCHW), so is this one. Where eager's is
// channels-last (ConvNeXt's `permute(y) + x`: the add follows its first operand's strides), this
// one is eager's layout or contiguous (fused groups outside channels-last regions write
// contiguous results).
void expect_eager_values_and_layout(torchfuse::CompiledModule& compiled, torch::jit::Module& eager,
                                    const std::vector<c10::IValue>& in) {
  const std::vector<at::Tensor> outs = tftest::output_tensors(tftest::expect_matches_eager(compiled, in));
  const std::vector<at::Tensor> refs = tftest::output_tensors(eager.forward(in));
  ASSERT_EQ(outs.size(), refs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    const at::Tensor& out = outs[i];
    const at::Tensor& ref = refs[i];
    if (ref.is_contiguous()) {
      EXPECT_TRUE(out.is_contiguous()) << "output " << i << ": " << out.strides();
    } else {
      EXPECT_TRUE(out.strides() == ref.strides() || out.is_contiguous())
          << "output " << i << ": " << out.strides() << " eager " << ref.strides();
    }
  }
}

std::string kernel_names(const torchfuse::CompiledModule& compiled) {
  std::string s;
  for (const auto& k : compiled.kernels()) s += k.name + " (" + k.description + ")\n";
  return s;
}

TEST(ConvLayoutGpu, ConvolutionsAndTheirNeighboursMatchEager) {
  if (!tftest::have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (const auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    for (const bool channels_last : {false, true}) {
    for (const auto& tc : kCases) {
      SCOPED_TRACE(std::string(tc.name) + " " + c10::toString(dtype) + (channels_last ? " NHWC asked" : " NCHW"));
      auto options = tftest::quiet_options();
      options.debug_poison_outputs = true;
      options.channels_last_convs = channels_last;
      const auto opts = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
      auto eager = tftest::conv_block_module(tc.source, tc.channels, opts);
      auto compiled = torchfuse::compile(eager, options);
      const auto in = tftest::cuda_input(tc.shape, dtype);
      expect_eager_values_and_layout(compiled, eager, in);
      EXPECT_GT(compiled.stats().fused_calls, 0);
      const bool nhwc = channels_last && dtype != c10::kFloat;
      const size_t kernels = nhwc ? tc.kernels_cl : dtype == c10::kFloat ? tc.kernels_f32 : tc.kernels;
      EXPECT_EQ(compiled.kernels().size(), kernels) << compiled.graph_for(in) << kernel_names(compiled);
      // Float32 stays NCHW on CUDA (NHWC, cuDNN would run it in TF32), with the reason.
      if (channels_last && dtype == c10::kFloat) {
        const auto e = compiled.explain(in);
        EXPECT_NE(tftest::joined(e.refused).find("a float32 convolution on CUDA"), std::string::npos) << tftest::joined(e.refused);
        EXPECT_EQ(tftest::joined(e.rewrites).find("channels-last"), std::string::npos) << tftest::joined(e.rewrites);
      }
      expect_eager_values_and_layout(compiled, eager, tftest::cuda_input(tc.other, dtype));
    }
    }
  }
}

}  // namespace
