// Runs torchfuse's own attention kernel (codegen/attention.h) on a call of torchfuse::attention:
// one of the candidates the timed attention compares (runtime/attention_backends.h).
#pragma once

#include <string>

#include <ATen/ATen.h>

namespace torchfuse {
namespace runtime {

// Why the kernel cannot run this call exactly as the math would ("" when it can): CUDA tensors of
// 16 bits on a device of compute capability 8.0 or later (checked last, so that the rest is
// testable on the CPU), rank 4, one head dim (a multiple of 16 up to 128) for query, key and
// value, key and value with the query's batch and heads (with enable_gqa: heads that divide the
// query's), key and value of one length, and a mask, if any, additive in the query's dtype and
// broadcastable to the scores' shape [batch, heads, query length, key length].
std::string attention_kernel_unusable(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const c10::optional<at::Tensor>& mask, bool enable_gqa);

// softmax(q @ k^T * scale + mask) @ v with the causal mask (key position <= query position) where
// is_causal; a row whose every score is -inf or any NaN comes out NaN (eager's softmax). The
// output has the query's layout of batch, heads and rows (ATen's fused kernels do the same), its
// head dim contiguous. Throws KernelFailure when the kernel cannot be built, loaded or launched.
at::Tensor attention_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const c10::optional<at::Tensor>& mask, double scale, bool is_causal, bool enable_gqa);

// TORCHFUSE_ATTENTION_KERNEL=1 in the environment (read on each call), for tests and the GPU
// fuzzer: every torchfuse::attention call the kernel can run, timed or not, runs it, so that its
// results meet eager's on whatever a program draws and not only where it was the faster.
bool attention_kernel_forced();

}  // namespace runtime
}  // namespace torchfuse
