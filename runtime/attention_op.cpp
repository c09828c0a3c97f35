// torchfuse::attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float scale,
// bool is_causal, Tensor? masked_rows=None) -> Tensor: what passes/rewrite_attention.h puts in
// place of attention spelled out op by op. softmax(query @ key^T * scale + mask) @ value, with
//  - attn_mask additive (the scores' dtype) or boolean (true: the position takes part), and
//    broadcastable to the scores' shape;
//  - rows whose every position is masked out giving NaN, as eager's softmax over all -inf does:
//    masked_rows when given (torchfuse::fully_masked_rows(attn_mask), computed once for all the
//    calls sharing a mask), else computed from the mask.
// LibTorch 2.1 and later run ATen's scaled_dot_product_attention (flash, memory-efficient or
// cuDNN kernels, chosen by ATen); older LibTorch (1.13) the same math through matmul and softmax.

#include <limits>

#include <ATen/ATen.h>
#include <torch/library.h>
#include <torch/version.h>

#include "src/error.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define TORCHFUSE_HAVE_SDPA 1
#else
#define TORCHFUSE_HAVE_SDPA 0
#endif

namespace torchfuse {
namespace runtime {
namespace {

void check_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const c10::optional<at::Tensor>& mask) {
  TORCHFUSE_CHECK(q.dim() >= 3 && k.dim() == q.dim() && v.dim() == q.dim(),
                  "torchfuse::attention: query, key and value need the same rank (3 or more), got ", q.sizes(), ", ",
                  k.sizes(), ", ", v.sizes());
  TORCHFUSE_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(),
                  "torchfuse::attention: query, key and value need one dtype, got ", q.scalar_type(), ", ",
                  k.scalar_type(), ", ", v.scalar_type());
  TORCHFUSE_CHECK(q.device() == k.device() && q.device() == v.device(),
                  "torchfuse::attention: query, key and value need one device");
  TORCHFUSE_CHECK(q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2),
                  "torchfuse::attention: shapes do not chain: query ", q.sizes(), ", key ", k.sizes(), ", value ",
                  v.sizes());
  if (!mask) return;
  TORCHFUSE_CHECK(mask->scalar_type() == at::kBool || mask->scalar_type() == q.scalar_type(),
                  "torchfuse::attention: the mask must be boolean or of the query's dtype (", q.scalar_type(),
                  "), got ", mask->scalar_type());
  TORCHFUSE_CHECK(mask->device() == q.device(), "torchfuse::attention: the mask is on ", mask->device(),
                  ", the query on ", q.device());
}

#if !TORCHFUSE_HAVE_SDPA
// The math, for LibTorch without scaled_dot_product_attention. Softmax runs in float for 16-bit
// inputs (as the fused kernels do), then rounds to the inputs' dtype before the second matmul.
at::Tensor attention_math(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const c10::optional<at::Tensor>& mask, double scale, bool is_causal) {
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)).to(at::kFloat).mul(scale);
  if (is_causal) {
    const int64_t l = q.size(-2), s = k.size(-2);
    at::Tensor keep = at::ones({l, s}, q.options().dtype(at::kBool)).tril();
    scores = scores.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  }
  if (mask && mask->scalar_type() == at::kBool) {
    scores = scores.masked_fill(mask->logical_not(), -std::numeric_limits<double>::infinity());
  } else if (mask) {
    scores = scores.add(mask->to(at::kFloat));
  }
  at::Tensor probs = at::softmax(scores, -1).to(v.scalar_type());
  return at::matmul(probs, v);
}
#endif

// Rows every position of which the mask leaves out: eager's softmax makes them NaN (all -inf);
// ATen's fused kernels make them 0 (or, cuDNN with a boolean mask, other values).
at::Tensor fully_masked_rows(const at::Tensor& mask) {
  at::Tensor excluded = mask.scalar_type() == at::kBool ? mask.logical_not() : at::isneginf(mask);
  return excluded.all(-1, /*keepdim=*/true);
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const c10::optional<at::Tensor>& mask, double scale, bool is_causal,
                     const c10::optional<at::Tensor>& masked_rows) {
  check_inputs(q, k, v, mask);
  TORCHFUSE_CHECK(!masked_rows || masked_rows->scalar_type() == at::kBool,
                  "torchfuse::attention: masked_rows must be boolean, got ", masked_rows->scalar_type());
#if TORCHFUSE_HAVE_SDPA
  at::Tensor out = at::scaled_dot_product_attention(q, k, v, mask, 0.0, is_causal, scale);
#else
  at::Tensor out = attention_math(q, k, v, mask, scale, is_causal);
#endif
  // Marks fully masked rows NaN, as eager does. The rewrite computes them once per mask and
  // passes them to every call that shares the mask.
  if (masked_rows) {
    out.masked_fill_(*masked_rows, std::numeric_limits<double>::quiet_NaN());
  } else if (mask && mask->numel() > 0) {
    out.masked_fill_(fully_masked_rows(*mask), std::numeric_limits<double>::quiet_NaN());
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(torchfuse, m) {
  m.def("attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float scale, bool is_causal, "
        "Tensor? masked_rows=None) -> Tensor",
        &attention);
  m.def("fully_masked_rows(Tensor mask) -> Tensor", &fully_masked_rows);
}

}  // namespace runtime
}  // namespace torchfuse
