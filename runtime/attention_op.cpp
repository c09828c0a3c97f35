// torchfuse::attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float scale,
// bool is_causal, bool mask_prepared=False, bool enable_gqa=False, int mask_kind=0,
// bool timed=False) -> Tensor: what passes/rewrite_attention.h puts in place of attention spelled
// out op by op.
// softmax(query @ key^T * scale + mask) @ value, with
//  - attn_mask additive (the scores' dtype) or boolean (true: the position takes part), and
//    broadcastable to the scores' shape;
//  - rows whose every position is masked out giving NaN, as eager's softmax over all -inf does.
//    torchfuse::attention_mask(mask, dtype, exclude) writes such rows NaN into an additive mask
//    (ATen's fused kernels then give NaN there too, where an all -inf row gives 0): the rewrite
//    calls it once for all the layers sharing a mask and passes mask_prepared=True; otherwise the
//    call prepares the mask itself. A prepared mask may also be boolean: a scaled_dot_product_
//    attention call's mask, which the call takes over as given (ATen's semantics);
//  - enable_gqa: key and value have fewer heads (dim -3) than query, each serving
//    query_heads / kv_heads consecutive query heads (key.repeat_interleave(groups, -3));
//  - is_causal with a mask: the graph's claim, from torchfuse::mask_is_causal, that the mask is
//    causal (0 where key position <= query position, the dtype's lowest value or -inf elsewhere):
//    where the mask spans the scores' last two dims the call runs causal without reading it;
//  - mask_kind: what torchfuse::mask_kind found the mask to be (0: any mask, 1: causal as above,
//    the same as is_causal; 2: open, every position takes part): an open mask that broadens no
//    dim of the scores is left out, so that ATen may pick a fused kernel that takes no mask;
//  - timed (CompileOptions::attention_autotune): ATen's pick, flash attention and torchfuse's
//    kernel are timed against each other once per shape and the fastest runs
//    (runtime/attention_backends.h); TORCHFUSE_ATTENTION_KERNEL=1 runs torchfuse's kernel
//    wherever it can (runtime/attention_kernel.h).
// torchfuse::mask_kind(Tensor mask) -> int: 1 where the prepared mask (additive, or boolean
// with true where the position takes part) is such a causal mask over a square of positions,
// every leading index alike; 2 where every position takes part (boolean: all true; additive:
// all zero); else 0. torchfuse::mask_is_causal(Tensor mask) -> int: 1 where mask_kind is 1, else
// 0. Both read the mask on the host, so the graph calls them only where the mask is a shape
// tensor (passes/cache_shape_tensors.h): once per set of sizes.
// LibTorch 2.1 and later run ATen's scaled_dot_product_attention (flash, memory-efficient or
// cuDNN kernels, chosen by ATen); older LibTorch (1.13) the same math through matmul and softmax.

#include <limits>

#include <ATen/ATen.h>
#include <torch/library.h>
#include <torch/version.h>

#include "runtime/attention_backends.h"
#include "runtime/attention_kernel.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {
namespace {

void check_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const c10::optional<at::Tensor>& mask,
                  bool enable_gqa) {
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
  if (enable_gqa) {
    const int64_t heads = q.size(-3), kv_heads = k.size(-3);
    TORCHFUSE_CHECK(kv_heads > 0 && v.size(-3) == kv_heads && heads % kv_heads == 0,
                    "torchfuse::attention: with enable_gqa the query's heads (dim -3) must be a multiple of the "
                    "key's and value's, got query ", q.sizes(), ", key ", k.sizes(), ", value ", v.sizes());
  }
  if (!mask) return;
  TORCHFUSE_CHECK(mask->scalar_type() == at::kBool || mask->scalar_type() == q.scalar_type(),
                  "torchfuse::attention: the mask must be boolean or of the query's dtype (", q.scalar_type(),
                  "), got ", mask->scalar_type());
  TORCHFUSE_CHECK(mask->device() == q.device(), "torchfuse::attention: the mask is on ", mask->device(),
                  ", the query on ", q.device());
}

// The math, for LibTorch without scaled_dot_product_attention and for causal calls that ATen
// would run through its own math. Softmax runs in float for 16-bit inputs (as the fused kernels
// do), then rounds to the inputs' dtype before the second matmul. The causal mask and a boolean
// mask replace the scores they leave out (eager's masked_fill), so a NaN or inf score there
// leaves the row alone.
at::Tensor attention_math(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const c10::optional<at::Tensor>& mask, double scale, bool is_causal) {
  // The softmax in float32, or float64 for float64 inputs (as eager's), rounded once after it.
  const at::ScalarType acc = q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)).to(acc).mul(scale);
  if (is_causal) {
    const int64_t l = q.size(-2), s = k.size(-2);
    at::Tensor keep = at::ones({l, s}, q.options().dtype(at::kBool)).tril();
    scores = scores.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  }
  if (mask && mask->scalar_type() == at::kBool) {  // a boolean mask taken as given: true takes part
    scores = scores.masked_fill(mask->logical_not(), -std::numeric_limits<double>::infinity());
  } else if (mask) {
    scores = scores.add(mask->to(acc));  // additive: attention_mask() made it so
  }
  at::Tensor probs = at::softmax(scores, -1).to(v.scalar_type());
  return at::matmul(probs, v);
}

#if TORCHFUSE_HAVE_SDPA
// Would ATen run this call through its math (sdp::SDPBackend::math, 0)? Its math adds the causal
// mask (-inf) to the scores, so that a NaN or inf score at a masked position (a key holding one)
// makes the whole row NaN, where eager's masked_fill and ATen's fused kernels leave it out.
bool aten_runs_math(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const c10::optional<at::Tensor>& mask,
                    double scale, bool is_causal) {
  constexpr int64_t kMath = 0;
#if TORCHFUSE_HAVE_SDPA_GQA
  return at::_fused_sdp_choice(q, k, v, mask, 0.0, is_causal, scale, /*enable_gqa=*/false) == kMath;
#else
  return at::_fused_sdp_choice(q, k, v, mask, 0.0, is_causal, scale) == kMath;
#endif
}
#endif

// The mask as the call takes it: additive, in `dtype`, with NaN across every row that leaves out
// every position (eager's softmax over all -inf gives NaN there; ATen's fused kernels give 0 for
// an all -inf row, or, cuDNN with a boolean mask, other values, and NaN for a NaN row). Boolean
// masks mark the positions that take part, or with `exclude` those left out (masked_fill's).
at::Tensor attention_mask(const at::Tensor& mask, at::ScalarType dtype, bool exclude) {
  TORCHFUSE_CHECK(c10::isFloatingType(dtype), "torchfuse::attention_mask: dtype must be floating, got ", dtype);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  if (mask.scalar_type() == at::kBool) {
    const at::Tensor left_out = exclude ? mask : mask.logical_not();
    const at::Tensor rows = left_out.all(-1, /*keepdim=*/true);
    const auto o = mask.options().dtype(dtype);
    at::Tensor additive = at::where(left_out, at::scalar_tensor(-inf, o), at::scalar_tensor(0.0, o));
    return additive.masked_fill_(rows, nan);
  }
  TORCHFUSE_CHECK(!exclude, "torchfuse::attention_mask: exclude applies to boolean masks, got ", mask.scalar_type());
  TORCHFUSE_CHECK(mask.scalar_type() == dtype, "torchfuse::attention_mask: an additive mask must be ", dtype,
                  " (the query's dtype), got ", mask.scalar_type());
  return mask.masked_fill(at::isneginf(mask).all(-1, /*keepdim=*/true), nan);
}

// The dtype's lowest finite value (Hugging Face's masks fill with it).
double lowest_finite(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
    case at::kBFloat16: return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case at::kFloat: return static_cast<double>(std::numeric_limits<float>::lowest());
    default: return std::numeric_limits<double>::lowest();
  }
}

constexpr int64_t kAnyMask = 0, kCausalMask = 1, kOpenMask = 2;

bool mask_is_open(const at::Tensor& mask) {
  if (mask.numel() == 0) return false;
  if (mask.scalar_type() == at::kBool) return mask.all().item<bool>();  // true: the position takes part
  return mask.eq(0).all().item<bool>();
}

bool mask_is_causal_square(const at::Tensor& mask) {
  const bool boolean = mask.scalar_type() == at::kBool;
  const int64_t l = mask.size(-1);
  if (mask.size(-2) != l) return false;
  const at::Tensor causal = at::ones({l, l}, mask.options().dtype(at::kBool)).tril();
  if (boolean) return mask.eq(causal).all().item<bool>();
  const at::Tensor open = mask.eq(0);
  const at::Tensor closed = mask.le(lowest_finite(mask.scalar_type()));
  return open.eq(causal).all().logical_and(closed.eq(causal.logical_not()).all()).item<bool>();
}

int64_t mask_kind(const at::Tensor& mask) {
  const bool boolean = mask.scalar_type() == at::kBool;
  if (!(boolean || c10::isFloatingType(mask.scalar_type()))) return kAnyMask;
  if (mask_is_open(mask)) return kOpenMask;
  if (mask.dim() < 2) return kAnyMask;
  return mask_is_causal_square(mask) ? kCausalMask : kAnyMask;
}

int64_t mask_is_causal(const at::Tensor& mask) { return mask_kind(mask) == kCausalMask ? 1 : 0; }

// Does `mask` broadcast to the scores' shape (query's dims but the last, then the key's length)
// without broadening any of them? Then leaving it out changes nothing but which kernel runs.
bool within_scores(const at::Tensor& mask, const at::Tensor& q, const at::Tensor& k) {
  if (mask.dim() > q.dim()) return false;
  for (int64_t d = 1; d <= mask.dim(); ++d) {
    const int64_t scores = d == 1 ? k.size(-2) : q.size(-d);
    if (mask.size(-d) != 1 && mask.size(-d) != scores) return false;
  }
  return true;
}

// A query, key or value as ATen's fused kernels may read it: starting on 16 bytes, and
// contiguous or with each row 16 bytes apart; otherwise an aligned, contiguous copy. (A
// contiguous operand with rows of odd lengths stays: ATen pads those itself.) PyTorch 2.11 on an
// H200 ran cuDNN attention on an f16 query narrowed from rows of 133 to 128 at offset 2, returned
// errors of 0.85 against the float64 result and left a misaligned-address fault behind (fuzz
// seed 36, program 587). Dims of size 1 first take the stride a contiguous tensor would give them
// (a view: such a stride addresses nothing), since ATen's memory-efficient kernel checks them
// too: a query of one row whose row stride was 1 (a transposed [.., 1000, 1]) failed its
// "query is not correctly aligned (strideM)" (fuzz seed 41, program 290).
at::Tensor rows_aligned(const at::Tensor& given) {
  if (!given.is_cuda()) return given;
  at::Tensor t = given;
  std::vector<int64_t> strides(given.strides().begin(), given.strides().end());
  bool restride = false;
  for (int64_t i = given.dim() - 2; i >= 0; --i) {
    const int64_t want = strides[i + 1] * std::max<int64_t>(given.size(i + 1), 1);
    if (given.size(i) != 1 || strides[i] == want) continue;
    strides[i] = want;
    restride = true;
  }
  if (restride) t = given.as_strided(given.sizes(), strides, given.storage_offset());
  const int64_t elem = static_cast<int64_t>(t.element_size());
  bool aligned = t.dim() == 0 || t.size(-1) <= 1 || t.stride(-1) == 1;
  for (int64_t i = 0; aligned && i + 1 < t.dim(); ++i) aligned = (t.stride(i) * elem) % 16 == 0;
  const bool starts_aligned = reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
  if (starts_aligned && (aligned || t.is_contiguous())) return t;
  return t.clone(at::MemoryFormat::Contiguous);
}

// key or value with each of its heads repeated for the query heads it serves.
at::Tensor repeat_heads(const at::Tensor& x, int64_t groups) {
  return groups == 1 ? x : x.repeat_interleave(groups, /*dim=*/x.dim() - 3);
}

at::Tensor attention(const at::Tensor& given_q, const at::Tensor& given_k, const at::Tensor& given_v,
                     const c10::optional<at::Tensor>& given_mask, double scale, bool is_causal, bool mask_prepared,
                     bool enable_gqa, int64_t given_kind, bool timed) {
  check_inputs(given_q, given_k, given_v, given_mask, enable_gqa);
  const at::Tensor q = rows_aligned(given_q), k = rows_aligned(given_k), v = rows_aligned(given_v);
  TORCHFUSE_CHECK(given_kind >= kAnyMask && given_kind <= kOpenMask, "torchfuse::attention: mask_kind must be 0, 1 or 2, got ",
                  given_kind);
  c10::optional<at::Tensor> mask = given_mask;
  if (mask && given_kind == kOpenMask && within_scores(*mask, q, k)) mask = c10::nullopt;
  if (mask && given_kind == kCausalMask) is_causal = true;
  if (is_causal && mask) {
    // mask_kind (or mask_is_causal) vouched for the mask's values; the scores' shape decides
    // whether it applies.
    const bool spans = mask->dim() >= 2 && mask->size(-2) == q.size(-2) && mask->size(-1) == k.size(-2);
    if (spans) mask = c10::nullopt;
    else is_causal = false;
  }
  if (mask && mask_prepared) {
    TORCHFUSE_CHECK(mask->scalar_type() == q.scalar_type() || mask->scalar_type() == at::kBool,
                    "torchfuse::attention: a prepared mask must be boolean or ", q.scalar_type(),
                    " (the query's dtype), got ", mask->scalar_type());
  } else if (mask) {
    mask = attention_mask(*mask, q.scalar_type(), /*exclude=*/false);
  }
  const int64_t groups = enable_gqa ? q.size(-3) / k.size(-3) : 1;
  // Empty operands (no batch, heads, rows, keys or head dim) run the math, eager's result at no
  // cost: ATen's fused kernels reject or mishandle them (a masked bf16 call over a query of
  // [0, 2, 17, 256] returned an undefined tensor on the H200: GPU fuzz seed 48).
  if (q.numel() == 0 || k.numel() == 0 || v.numel() == 0) {
    return attention_math(q, repeat_heads(k, groups), repeat_heads(v, groups), mask, scale, is_causal);
  }
  if (const auto forced = attention_kernel_forced()) {
    if (attention_kernel_unusable(q, k, v, mask, groups > 1).empty())
      return attention_kernel(q, k, v, mask, scale, is_causal, groups > 1, *forced);
  }
#if TORCHFUSE_HAVE_SDPA_GQA
  // ATen's kernels that take grouped heads read each key/value head once; where ATen would run
  // its math for them, the heads are repeated and a fused kernel runs instead.
  if (groups > 1) {
    const int64_t math = 0;  // sdp::SDPBackend::math
    if (at::_fused_sdp_choice(q, k, v, mask, 0.0, is_causal, scale, /*enable_gqa=*/true) != math) {
      if (timed) return timed_attention(q, k, v, mask, scale, is_causal, /*enable_gqa=*/true);
      return at::scaled_dot_product_attention(q, k, v, mask, 0.0, is_causal, scale, /*enable_gqa=*/true);
    }
  }
#endif
  const at::Tensor key = repeat_heads(k, groups), value = repeat_heads(v, groups);
#if TORCHFUSE_HAVE_SDPA
  // (A graph's own scaled_dot_product_attention call with is_causal, taken over as given, runs
  // this math too: it differs from ATen's where a masked score is NaN or inf, and by rounding
  // elsewhere: ATen's scales the query and the key by the scale's root before their product.)
  if (is_causal && aten_runs_math(q, key, value, mask, scale, is_causal)) {
    return attention_math(q, key, value, mask, scale, is_causal);
  }
  if (timed) return timed_attention(q, key, value, mask, scale, is_causal, /*enable_gqa=*/false);
  return at::scaled_dot_product_attention(q, key, value, mask, 0.0, is_causal, scale);
#else
  (void)timed;  // one backend: the math
  return attention_math(q, key, value, mask, scale, is_causal);
#endif
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(torchfuse, m) {
  m.def("attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float scale, bool is_causal, "
        "bool mask_prepared=False, bool enable_gqa=False, int mask_kind=0, bool timed=False) -> Tensor",
        &attention);
  m.def("attention_mask(Tensor mask, ScalarType dtype, bool exclude=False) -> Tensor", &attention_mask);
  m.def("mask_is_causal(Tensor mask) -> int", &mask_is_causal);
  m.def("mask_kind(Tensor mask) -> int", &mask_kind);
}

}  // namespace runtime
}  // namespace torchfuse
