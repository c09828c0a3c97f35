// Timing ATen's attention against flash attention and torchfuse's own kernel, once per shape.
// Where cuDNN's attention applies ATen picks it, and its call is a memset and then a kernel that
// starts late (2.5-4 us after the memset on an H200 inside a CUDA graph, where flash attention's
// one kernel starts at once): at a batch-1 model's few tokens the late start costs more than
// cuDNN's faster kernel saves, with more work it does not. Flash attention takes no mask;
// torchfuse's kernel (codegen/attention.h) takes additive masks and launches as any generated
// kernel does. torchfuse::attention with timed=True (CompileOptions::attention_autotune) times the
// backends that can run the call on its own operands, on a shape's first call outside a CUDA
// graph capture, each as a CUDA graph of 8 calls back to back (the late start is a graph's), and
// the process keeps the fastest for the shape (runtime/gemm_autotune.h does the timing).
#pragma once

#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/version.h>

// LibTorch's scaled_dot_product_attention with its fused kernels (flash attention's op among them):
// 2.1 and later; its enable_gqa, and _fused_sdp_choice with it: 2.5 and later.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define TORCHFUSE_HAVE_SDPA 1
#else
#define TORCHFUSE_HAVE_SDPA 0
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
#define TORCHFUSE_HAVE_SDPA_GQA 1
#else
#define TORCHFUSE_HAVE_SDPA_GQA 0
#endif

namespace torchfuse {
namespace runtime {

// Why flash attention cannot run this call exactly as ATen's scaled_dot_product_attention would
// ("" when it can): CUDA tensors of 16 bits (checked last, so that the rest is testable on the CPU), rank 4, no mask, one head dim (a multiple of 8 up to
// 256, so that ATen pads nothing), the last dims contiguous, the other strides multiples of 8 and
// the data 16-byte aligned (the kernel's loads), key and value with the query's batch
// and heads (with enable_gqa: heads that divide the query's, flash attention reads them as ATen's
// enable_gqa does), sequences not empty, and a causal call square (ATen's causal mask is aligned to the
// top left, flash attention's to the bottom right).
std::string flash_unusable(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const c10::optional<at::Tensor>& mask, bool is_causal, bool enable_gqa = false);

// ATen's scaled_dot_product_attention (dropout 0; enable_gqa only with LibTorch >= 2.5), the kernel chosen per shape as above: ATen's
// own pick, or flash attention or torchfuse's kernel where it can run the call, was faster by
// kKeepFirstMargin (runtime/gemm_autotune.h) and agreed with ATen's result within the dtype's
// rounding. A shape seen first while its stream captures a CUDA graph runs ATen's pick until a
// call outside a capture times it. Calls that neither can run, ATen builds without flash
// attention (LibTorch < 2.1) and builds that cannot capture graphs run ATen's pick untimed.
at::Tensor timed_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const c10::optional<at::Tensor>& mask, double scale, bool is_causal, bool enable_gqa);

// One shape whose attention kernels were timed (in the order timed, for tests and reports).
struct AttentionBackendChoice {
  std::string call;                   // "bf16 q [1, 32, 128, 64] k [1, 32, 128, 64], causal"; ", mask [..]"
  // "aten (cudnn)", then "flash", "torchfuse", "torchfuse (keys split 4, blocks of 32)" where each can run it
  std::vector<std::string> backends;
  std::vector<double> us;             // per backend, GPU us per call (negative: it declined)
  int chosen = 0;                     // the index kept (0, ATen's pick, when nothing was timed)
  bool held = false;                  // timed behind a stream hold (GPU time alone)
  std::string why_not;                // why nothing was timed, or a backend declined ("" when all were timed)
};
std::vector<AttentionBackendChoice> attention_backend_choices();

}  // namespace runtime
}  // namespace torchfuse
