// Runs torchfuse's own attention kernel (codegen/attention.h) on a call of torchfuse::attention:
// one of the candidates the timed attention compares (runtime/attention_backends.h).
#pragma once

#include <string>

#include <ATen/ATen.h>

#include "codegen/attention.h"

namespace torchfuse {
namespace runtime {

class ParamPacker;

// How the kernel's warps share a call's work (codegen::AttentionSpec::key_split).
enum class AttentionSchedule {
  kRows,  // 16 query rows a warp; warps a block: 4, fewer where the grid would not fill the device once
  kKeys,  // the warps of a block split the keys of 16 rows (as attention_key_split says; kRows where it is 1 way)
};

// Why the kernel cannot run this call exactly as the math would ("" when it can): CUDA tensors of
// 16 bits on a device of compute capability 8.0 or later (checked last, so that the rest is
// testable on the CPU), rank 4, one head dim (a multiple of 16 up to 128) for query, key and
// value, key and value with the query's batch and heads (with enable_gqa: heads that divide the
// query's), key and value of one length, and a mask, if any, additive in the query's dtype and
// broadcastable to the scores' shape [batch, heads, query length, key length].
std::string attention_kernel_unusable(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const c10::optional<at::Tensor>& mask, bool enable_gqa);

// How the keys schedule splits a call's keys: the most warps that the head dim allows
// (codegen::attention_max_key_split) and the blocks of keys can keep busy, a power of 2, with the
// key block (64 or 32) giving the most; where both give as many, 32 above head dim 32 (fewer
// registers, no spills) and 64 otherwise; 1 way where splitting changes nothing.
struct KeySplit {
  int ways = 1;
  int key_block = 64;
};
KeySplit attention_key_split(int64_t head_dim, int64_t keys);

// Whether the keys schedule is worth timing beside the rows schedule for a call: it splits the
// keys (attention_key_split's ways > 1) and the rows schedule's warps of 16 rows come to fewer than 4 a
// multiprocessor, where a warp's memory latency is not hidden by other warps.
bool attention_key_split_worth_timing(const at::Tensor& q, const at::Tensor& k, int sm_count);

// The kernel's spec for a call the kernel can run, `out` being the output it writes (as
// attention_kernel allocates it) and `mask` the mask before broadcasting; `sm_count` is the
// device's multiprocessors.
codegen::AttentionSpec attention_kernel_spec(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                             const at::Tensor& out, const c10::optional<at::Tensor>& mask,
                                             bool is_causal, AttentionSchedule schedule, int sm_count);

// The kernel's arguments for a call into `p` (in codegen/attention.h's order: the mask broadcast
// to the scores, `out` as attention_kernel_output makes it) and the blocks of its grid: what
// attention_kernel launches; the CPU tests' emulation runs the same.
int64_t pack_attention_arguments(ParamPacker& p, const codegen::AttentionSpec& spec, const at::Tensor& q,
                                 const at::Tensor& k, const at::Tensor& v, const c10::optional<at::Tensor>& mask,
                                 const at::Tensor& out, double scale);

// softmax(q @ k^T * scale + mask) @ v with the causal mask (key position <= query position) where
// is_causal; a row whose every score is -inf or any NaN comes out NaN (eager's softmax). The
// output has the query's layout of batch, heads and rows (ATen's fused kernels do the same), its
// head dim contiguous. Throws KernelFailure when the kernel cannot be built, loaded or launched.
at::Tensor attention_kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const c10::optional<at::Tensor>& mask, double scale, bool is_causal, bool enable_gqa,
                            AttentionSchedule schedule = AttentionSchedule::kRows);

// The output attention_kernel writes for a query: the query's order of batch, heads and rows, the
// head dim contiguous (empty; for tests and attention_kernel_spec's callers).
at::Tensor attention_kernel_output(const at::Tensor& q);

// TORCHFUSE_ATTENTION_KERNEL in the environment (read on each call), for tests and the GPU
// fuzzer: "1" (the rows schedule) or "keys" (the keys schedule) runs the kernel on every
// torchfuse::attention call it can run, timed or not, so that its results meet eager's on
// whatever a program draws and not only where it was the faster. Empty when not forced.
c10::optional<AttentionSchedule> attention_kernel_forced();

}  // namespace runtime
}  // namespace torchfuse
