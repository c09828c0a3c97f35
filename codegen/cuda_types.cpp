#include "codegen/cuda_types.h"

#include "codegen/kernel.h"
#include "codegen/source_builder.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "src/error.h"
#include "src/literal.h"

namespace torchfuse {
namespace codegen {

std::string storage_type(c10::ScalarType dtype) {
  if (dtype == c10::ScalarType::Half) return "tf_half";
  if (dtype == c10::ScalarType::BFloat16) return "tf_bf16";
  return register_type(dtype);
}

c10::ScalarType register_dtype(c10::ScalarType dtype) {
  if (dtype == c10::ScalarType::Half || dtype == c10::ScalarType::BFloat16) return c10::ScalarType::Float;
  return dtype;
}

std::string register_type(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: case c10::ScalarType::Half: case c10::ScalarType::BFloat16: return "float";
    case c10::ScalarType::Double: return "double";
    case c10::ScalarType::Long: return "long long";
    case c10::ScalarType::Int: return "int";
    case c10::ScalarType::Short: return "short";
    case c10::ScalarType::Char: return "signed char";
    case c10::ScalarType::Byte: return "unsigned char";
    case c10::ScalarType::Bool: return "bool";
    default: break;
  }
  TORCHFUSE_INTERNAL_ASSERT(false, "no CUDA type for dtype ", c10::toString(dtype));
}

size_t element_size(c10::ScalarType dtype) { return c10::elementSize(dtype); }

std::string convert(const std::string& expr, c10::ScalarType from, c10::ScalarType to) {
  from = register_dtype(from);
  to = register_dtype(to);
  if (from == to) return expr;
  if (to == c10::ScalarType::Bool) return "(" + expr + " != 0)";
  return "(" + register_type(to) + ")(" + expr + ")";
}

std::string load_convert(const std::string& expr, c10::ScalarType dtype) {
  if (dtype == c10::ScalarType::Half || dtype == c10::ScalarType::BFloat16) return "tf_to_float(" + expr + ")";
  return expr;
}

std::string store_convert(const std::string& expr, c10::ScalarType dtype) {
  if (dtype == c10::ScalarType::Half) return "tf_float_to_half(" + expr + ")";
  if (dtype == c10::ScalarType::BFloat16) return "tf_float_to_bf16(" + expr + ")";
  return expr;
}

std::string vector_load(const std::string& vt, const std::string& addr, LoadHint hint) {
  return hinted_load("reinterpret_cast<const " + vt + "*>(" + addr + ")", hint);
}

std::string hinted_load(const std::string& ptr, LoadHint hint) {
  switch (hint) {
    case LoadHint::EvictFirst: return "tf_load_once(" + ptr + ")";
    case LoadHint::EvictLast: return "tf_load_keep(" + ptr + ")";
    case LoadHint::KeepShared: return "tf_load_shared(" + ptr + ")";
    case LoadHint::None: break;
  }
  return "*" + ptr;
}

std::string vector_store(const std::string& vt, const std::string& addr, const std::string& value, bool evict_first) {
  const std::string ptr = "reinterpret_cast<" + vt + "*>(" + addr + ")";
  return evict_first ? "tf_store_once(" + ptr + ", " + value + ");" : "*" + ptr + " = " + value + ";";
}

std::vector<std::string> pack_vector(const std::string& var, const std::string& regs, c10::ScalarType dtype, int vec) {
  const std::string vt = "tf_vec<" + storage_type(dtype) + ", " + std::to_string(vec) + ">";
  if ((dtype == c10::ScalarType::Half || dtype == c10::ScalarType::BFloat16) && vec % 2 == 0) {
    return {"const " + vt + " " + var + " = tf_pack<" + storage_type(dtype) + ">(" + regs + ");"};
  }
  return {vt + " " + var + ";", "#pragma unroll",
          "for (int lane = 0; lane < " + std::to_string(vec) + "; ++lane) " + var + ".v[lane] = " +
              store_convert(regs + "[lane]", dtype) + ";"};
}

namespace {

std::string float_literal(float f) {
  if (std::isnan(f)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f);  // shortest form that reads back exactly
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s + "f";
}

std::string double_literal(double d) {
  if (std::isnan(d)) return "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(d)) return d > 0 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__longlong_as_double(0xfff0000000000000LL)";
  return format_double(d);
}

}  // namespace

std::string literal(const c10::Scalar& value, c10::ScalarType as) {
  as = register_dtype(as);
  switch (as) {
    case c10::ScalarType::Float: return float_literal(static_cast<float>(value.toDouble()));
    case c10::ScalarType::Double: return double_literal(value.toDouble());
    case c10::ScalarType::Bool: return value.toDouble() != 0 ? "true" : "false";
    case c10::ScalarType::Long: return std::to_string(value.toLong()) + "LL";
    default: return "(" + register_type(as) + ")" + std::to_string(value.toLong());
  }
}

std::string input_name(size_t k) { return "in" + std::to_string(k); }
std::string output_name(size_t k) { return "out" + std::to_string(k); }

void emit_operand_param(SourceBuilder& b, size_t k, bool is_number, c10::ScalarType dtype) {
  if (is_number) {
    b.line((dtype == c10::ScalarType::Double ? "double " : "long long ") + input_name(k) + ";");
    return;
  }
  b.line("const " + storage_type(dtype) + "* " + input_name(k) + ";");
}

const char* grid_dependency_definition() {
  return R"CUDA(// Programmatic dependent launch (sm_90 on; codegen/kernel.h kGridDependencyCall): wait for the
// grids this one depends on, then let the next grid launch. Both return at once on a grid
// launched without it.
__device__ __forceinline__ void tf_grid_dependency() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
)CUDA";
}

const std::string& prelude() {
  static const std::string text = R"CUDA(// ---- torchfuse prelude: storage types, conversions, helpers ----
struct alignas(2) tf_half { unsigned short bits; };
struct alignas(2) tf_bf16 { unsigned short bits; };
template <typename T, int N> struct alignas(sizeof(T) * N) tf_vec { T v[N]; };

__device__ __forceinline__ float tf_to_float(tf_half h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}
__device__ __forceinline__ float tf_to_float(tf_bf16 h) {
  return __uint_as_float(static_cast<unsigned int>(h.bits) << 16);
}
__device__ __forceinline__ tf_half tf_float_to_half(float f) {
  tf_half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}
__device__ __forceinline__ tf_bf16 tf_float_to_bf16(float f) {
  tf_bf16 h;
#if __CUDA_ARCH__ >= 800
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) { h.bits = 0x7fc0; return h; }  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                     // round to nearest even
  h.bits = static_cast<unsigned short>(u >> 16);
#endif
  return h;
}

// An L2 cache policy (sm_80+): evict the lines an access touches last (Last) or first.
template <bool Last> __device__ __forceinline__ unsigned long long tf_l2_policy() {
  unsigned long long policy = 0;
#if __CUDA_ARCH__ >= 800
  if constexpr (Last) asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  else asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
  return policy;
}
// Starts bringing `bytes` (a multiple of 16, from a 16-byte-aligned address) of global memory
// into L2 without waiting for it (sm_90+; nothing before).
__device__ __forceinline__ void tf_prefetch_l2(const void* p, unsigned bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" : : "l"(p), "r"(bytes) : "memory");
#endif
}
#if __CUDA_ARCH__ >= 900
// Staged rows (sm_90+): bulk copies of whole rows from global into shared memory, each signalling
// completion on an mbarrier. The barrier counts one arrival (the thread that issues the copies,
// announcing their bytes); its phase completes when every announced byte has landed.
__device__ __forceinline__ unsigned tf_smem_address(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void tf_mbar_init(unsigned long long* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" : : "r"(tf_smem_address(bar)) : "memory");
}
// Makes initialized barriers visible to the bulk copies (the async proxy); a __syncthreads follows.
__device__ __forceinline__ void tf_mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" : : : "memory");
}
__device__ __forceinline__ void tf_mbar_expect_bytes(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" : : "r"(tf_smem_address(bar)), "r"(bytes) : "memory");
}
// Waits until the barrier's phase of the given parity (0, 1, 0, ... for its 1st, 2nd, 3rd use)
// completes; the copies' data is visible to the waiting threads after it.
__device__ __forceinline__ void tf_mbar_wait(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(tf_smem_address(bar)), "r"(parity) : "memory");
  } while (!done);
}
// Orders the block's earlier shared-memory accesses (made visible to this thread by a
// __syncthreads) before the bulk copies this thread issues next, which may overwrite them.
__device__ __forceinline__ void tf_bulk_fence() { asm volatile("fence.proxy.async.shared::cta;" : : : "memory"); }
// `bytes` (a multiple of 16) from a 16-byte-aligned global address into shared memory.
__device__ __forceinline__ void tf_bulk_load(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               : : "r"(tf_smem_address(dst)), "l"(src), "r"(bytes), "r"(tf_smem_address(bar)) : "memory");
}
// The same asking L2 to evict the lines it reads last (codegen/cache_hints.h, hold_loads).
__device__ __forceinline__ void tf_bulk_load_keep(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  const unsigned long long policy = tf_l2_policy<true>();
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
               : : "r"(tf_smem_address(dst)), "l"(src), "r"(bytes), "r"(tf_smem_address(bar)), "l"(policy) : "memory");
}
#endif
// Loads and stores with an L2 eviction priority (sm_80+ cache policies; plain accesses before),
// for what a kernel streams (codegen/cache_hints.h): tf_load_once and tf_store_once for elements
// touched for the last time (evicted before other lines), tf_load_keep for rows a later pass
// reads again (evicted after them), tf_load_shared for inputs several rows read (evicted after
// them, and kept in L1). V is a 1-, 2-, 4-, 8- or 16-byte value (1: a bool or 8-bit element
// alone, rows of odd length). Loads take the read-only path: only inputs, which no kernel
// writes, go through them.
template <typename V> union tf_words { V v; unsigned char b; unsigned short h; unsigned w[4]; };
// NAME<Last>(p): a load through the read-only path with L1 qualifier L1Q and the L2 policy.
#define TF_DEFINE_HINTED_LOAD(NAME, L1Q)                                                                  \
  template <bool Last, typename V> __device__ __forceinline__ V NAME(const V* p) {                        \
    static_assert(sizeof(V) == 1 || sizeof(V) == 2 || sizeof(V) == 4 || sizeof(V) == 8 || sizeof(V) == 16, \
                  #NAME ": size");                                                                        \
    const unsigned long long policy = tf_l2_policy<Last>();                                                \
    tf_words<V> u;                                                                                         \
    if constexpr (sizeof(V) == 16) {                                                                       \
      asm("ld.global.nc." L1Q ".L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"                         \
          : "=r"(u.w[0]), "=r"(u.w[1]), "=r"(u.w[2]), "=r"(u.w[3]) : "l"(p), "l"(policy));                 \
    } else if constexpr (sizeof(V) == 8) {                                                                 \
      asm("ld.global.nc." L1Q ".L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"                                 \
          : "=r"(u.w[0]), "=r"(u.w[1]) : "l"(p), "l"(policy));                                             \
    } else if constexpr (sizeof(V) == 4) {                                                                 \
      asm("ld.global.nc." L1Q ".L2::cache_hint.u32 %0, [%1], %2;" : "=r"(u.w[0]) : "l"(p), "l"(policy));   \
    } else if constexpr (sizeof(V) == 2) {                                                                 \
      asm("ld.global.nc." L1Q ".L2::cache_hint.u16 %0, [%1], %2;" : "=h"(u.h) : "l"(p), "l"(policy));      \
    } else {                                                                                               \
      unsigned short byte;                                                                                 \
      asm("ld.global.nc." L1Q ".L2::cache_hint.u8 %0, [%1], %2;" : "=h"(byte) : "l"(p), "l"(policy));      \
      u.b = static_cast<unsigned char>(byte);                                                              \
    }                                                                                                      \
    return u.v;                                                                                            \
  }
#if __CUDA_ARCH__ >= 800
// Streamed elements skip L1; inputs several rows read (tf_load_shared) stay in it for the block's
// other rows and the multiprocessor's other blocks.
TF_DEFINE_HINTED_LOAD(tf_load_hinted, "L1::no_allocate")
TF_DEFINE_HINTED_LOAD(tf_load_hinted_l1, "L1::evict_last")
#else
template <bool Last, typename V> __device__ __forceinline__ V tf_load_hinted(const V* p) { return *p; }
template <bool Last, typename V> __device__ __forceinline__ V tf_load_hinted_l1(const V* p) { return *p; }
#endif
#undef TF_DEFINE_HINTED_LOAD
template <typename V> __device__ __forceinline__ V tf_load_once(const V* p) { return tf_load_hinted<false>(p); }
template <typename V> __device__ __forceinline__ V tf_load_keep(const V* p) { return tf_load_hinted<true>(p); }
template <typename V> __device__ __forceinline__ V tf_load_shared(const V* p) { return tf_load_hinted_l1<true>(p); }
template <typename V> __device__ __forceinline__ void tf_store_once(V* p, const V& v) {
  static_assert(sizeof(V) == 1 || sizeof(V) == 2 || sizeof(V) == 4 || sizeof(V) == 8 || sizeof(V) == 16,
                "tf_store_once: size");
#if __CUDA_ARCH__ >= 800
  const unsigned long long policy = tf_l2_policy<false>();
  tf_words<V> u;
  u.v = v;
  if constexpr (sizeof(V) == 16) {
    asm volatile("st.global.L1::no_allocate.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                 : : "l"(p), "r"(u.w[0]), "r"(u.w[1]), "r"(u.w[2]), "r"(u.w[3]), "l"(policy) : "memory");
  } else if constexpr (sizeof(V) == 8) {
    asm volatile("st.global.L1::no_allocate.L2::cache_hint.v2.u32 [%0], {%1, %2}, %3;"
                 : : "l"(p), "r"(u.w[0]), "r"(u.w[1]), "l"(policy) : "memory");
  } else if constexpr (sizeof(V) == 4) {
    asm volatile("st.global.L1::no_allocate.L2::cache_hint.u32 [%0], %1, %2;" : : "l"(p), "r"(u.w[0]), "l"(policy) : "memory");
  } else if constexpr (sizeof(V) == 2) {
    asm volatile("st.global.L1::no_allocate.L2::cache_hint.u16 [%0], %1, %2;" : : "l"(p), "h"(u.h), "l"(policy) : "memory");
  } else {
    const unsigned short byte = u.b;
    asm volatile("st.global.L1::no_allocate.L2::cache_hint.u8 [%0], %1, %2;" : : "l"(p), "h"(byte), "l"(policy) : "memory");
  }
#else
  *p = v;
#endif
}
// Two floats as one word of 16-bit values (lo in the lower half): one conversion on sm_80+.
__device__ __forceinline__ unsigned tf_pack2(tf_half, float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned u;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(hi), "f"(lo));
  return u;
#else
  return tf_float_to_half(lo).bits | static_cast<unsigned>(tf_float_to_half(hi).bits) << 16;
#endif
}
__device__ __forceinline__ unsigned tf_pack2(tf_bf16, float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned u;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(hi), "f"(lo));
  return u;
#else
  return tf_float_to_bf16(lo).bits | static_cast<unsigned>(tf_float_to_bf16(hi).bits) << 16;
#endif
}
// Float lanes (an even number) to a vector of 16-bit values, a pair per conversion.
template <typename T, int N> __device__ __forceinline__ tf_vec<T, N> tf_pack(const float (&r)[N]) {
  union { tf_vec<T, N> v; unsigned w[N / 2]; } u;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) u.w[i] = tf_pack2(T{}, r[2 * i], r[2 * i + 1]);
  return u.v;
}

// A float rounded to the nearest fp16/bf16 value, kept as float.
__device__ __forceinline__ float tf_round_half(float f) { return tf_to_float(tf_float_to_half(f)); }
__device__ __forceinline__ float tf_round_bf16(float f) { return tf_to_float(tf_float_to_bf16(f)); }
// An fp16 result kept in float as eager's would be stored: infinite from 65520 (where cvt.rn.f16
// rounds to inf) on, unrounded below; NaN stays NaN.
__device__ __forceinline__ float tf_half_range(float f) { return fabsf(f) < 65520.0f ? f : f * __int_as_float(0x7f800000); }

// NaN-propagating maximum/minimum, as torch.maximum/minimum.
template <typename T> __device__ __forceinline__ T tf_maximum(T a, T b) {
  return (a != a) ? a : ((b != b) ? b : (a > b ? a : b));
}
template <typename T> __device__ __forceinline__ T tf_minimum(T a, T b) {
  return (a != a) ? a : ((b != b) ? b : (a < b ? a : b));
}
#if __CUDA_ARCH__ >= 800
// One instruction each for float (sm_80+), NaN-propagating like the templates above.
template <> __device__ __forceinline__ float tf_maximum(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
template <> __device__ __forceinline__ float tf_minimum(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#endif

// GELU, exact and tanh-approximated, and SiLU: the formulas ATen's CUDA kernels use.
__device__ __forceinline__ float tf_gelu(float x) { return x * 0.5f * (1.0f + erff(x * 0.70710678118654752440f)); }
__device__ __forceinline__ double tf_gelu(double x) { return x * 0.5 * (1.0 + erf(x * 0.70710678118654752440)); }
// The tanh form's argument, sqrt(2 / pi) * (x + 0.044715 x^3).
__device__ __forceinline__ float tf_gelu_tanh_arg(float x) { return 0.79788456080286535588f * (x + 0.044715f * x * x * x); }
__device__ __forceinline__ float tf_gelu_tanh(float x) { return 0.5f * x * (1.0f + tanhf(tf_gelu_tanh_arg(x))); }
__device__ __forceinline__ double tf_gelu_tanh(double x) {
  const double inner = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + tanh(inner));
}
__device__ __forceinline__ float tf_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ double tf_silu(double x) { return x / (1.0 + exp(-x)); }
__device__ __forceinline__ float tf_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
// exp(x) for x = v - max(v) <= 0 (softmax, logsumexp): ex2.approx of x * log2(e), as Triton's
// exp. Relative error about 2^-22 + |x| * 2^-24: below 3e-7 absolute, as the result is <= 1.
// The .ftz form is one MUFU.EX2 on sm_90, where the plain one adds a compare and two predicated
// multiplies to produce denormal results: results below 2^-126 (x < -87.3) are 0 instead,
// an absolute error below 1.2e-38 (measured on H200: bf16 softmax over rows of 65536 101.5 ->
// 95.7 us, logsumexp 43.3 -> 41.0; f32 rows of 65536 166.0 -> 157.9).
__device__ __forceinline__ float tf_ex2_ftz(float q) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(q));
  return y;
}
__device__ __forceinline__ float tf_exp_shifted(float x) { return tf_ex2_ftz(x * 1.4426950408889634f); }
// Fast math (docs/architecture.md): forms with one ex2.approx and one rcp.approx. Relative
// error below 2^-17 for |x| < 88 (the exp's argument rounding, |x| * log2(e) * 2^-24, is the
// largest part), far under the half ulp (2^-9 bf16, 2^-11 fp16) that eager rounds these
// results to when their dtype is 16-bit.
__device__ __forceinline__ float tf_rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float tf_exp_fast(float x) { return tf_exp_shifted(x); }
__device__ __forceinline__ float tf_sigmoid_fast(float x) { return tf_rcp_approx(1.0f + tf_exp_shifted(-x)); }
__device__ __forceinline__ float tf_silu_fast(float x) { return x * tf_sigmoid_fast(x); }
// 1 + tanh(u) = 2 / (1 + exp(-2u)): no cancellation where tanh(u) is near -1 (the tanh form of
// GELU at negative inputs), a few float ulps everywhere else; used for every float dtype.
__device__ __forceinline__ float tf_one_plus_tanh(float u) { return 2.0f * tf_rcp_approx(1.0f + tf_exp_shifted(-2.0f * u)); }
// 1 + erf(u) = erfc(-u): erfc(t) for t = |u| is 2^(t * R(t)), R a degree-7 polynomial fitted to
// log2(erfc(t)) / t on [0, 4] (weighted minimax: erfc's absolute error below 2e-8 before
// rounding); then u < 0 ? erfc(t) : 2 - erfc(t). Beyond 4, t * R(t) falls faster than
// log2(erfc(t)) (below -26 and on to -inf): erfc(t) < 1.6e-8 there, 0 from t = 6.6, and GELU's
// x * 0 is -0 (NaN at -inf), as eager's. Absolute error below 4e-7 everywhere (ex2.approx
// included), the size of eager's own rounding of 1 + erff(u); where erf(u) is near -1 it is
// more accurate than eager, which cancels. NaN stays NaN. About 12 instructions where erff and
// the add cost about 24 (the exact GELU writes 1 + erf).
// 1 + erf(u) from q = log2(erfc(|u|)) (both forms below).
__device__ __forceinline__ float tf_one_plus_erf_from(float u, float q) {
  const float c = tf_ex2_ftz(q);
  return u < 0.0f ? c : 2.0f - c;
}
__device__ __forceinline__ float tf_one_plus_erf(float u) {
  const float t = fabsf(u);
  float r = -4.53585089e-05f;
  r = fmaf(r, t, 0.000445506681f);
  r = fmaf(r, t, -0.00148943788f);
  r = fmaf(r, t, -0.000774636515f);
  r = fmaf(r, t, 0.0282536875f);
  r = fmaf(r, t, -0.148481622f);
  r = fmaf(r, t, -0.918416381f);
  r = fmaf(r, t, -1.62790859f);
  return tf_one_plus_erf_from(u, r * t);
}
// The same where eager rounds 1 + erf(u) to 16 bits: R of degree 4 (its leading coefficient
// negative, so that t * R(t) still falls to -inf past 4). Absolute error below 1e-6, relative
// error below 6e-5 wherever the result is at least 2^-7: an eighth of fp16's half ulp (bf16's
// is 2^-9); eager's bf16 erf, rounded before the add, is off by up to 2^-9 absolute. Three FMAs
// fewer.
__device__ __forceinline__ float tf_one_plus_erf_16(float u) {
  const float t = fabsf(u);
  float r = -0.00294411904f;
  r = fmaf(r, t, 0.0295899194f);
  r = fmaf(r, t, -0.148665503f);
  r = fmaf(r, t, -0.918509424f);
  r = fmaf(r, t, -1.62788904f);
  return tf_one_plus_erf_from(u, r * t);
}
__device__ __forceinline__ float tf_gelu_fast(float x) { return x * 0.5f * tf_one_plus_erf(x * 0.70710678118654752440f); }
__device__ __forceinline__ float tf_gelu_fast_16(float x) { return x * 0.5f * tf_one_plus_erf_16(x * 0.70710678118654752440f); }
__device__ __forceinline__ float tf_gelu_tanh_fast(float x) { return 0.5f * x * tf_one_plus_tanh(tf_gelu_tanh_arg(x)); }
__device__ __forceinline__ double tf_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
// x rounded to float where it is made: the compiler cannot see through the asm, so no later add
// or sub contracts the multiply that made x into an fma (codegen/expr.cpp: values a reduction and
// another op share must be one value for both).
__device__ __forceinline__ float tf_round_here(float x) {
  float r;
  asm("mul.rn.f32 %0, %1, 0f3F800000;" : "=f"(r) : "f"(x));
  return r;
}

// n / d for 0 <= n < 2^31, with d's multiplier and shift precomputed on the host and packed as
// multiplier << 32 | shift (codegen::fast_divider): a multiply-high, an add and a shift instead
// of a 32-bit integer division's ~20 instructions.
__device__ __forceinline__ unsigned tf_fast_div(unsigned n, unsigned long long d) {
  return (__umulhi(n, (unsigned)(d >> 32)) + n) >> (unsigned)(d & 63u);
}
// Python-style floor division of floats, as ATen's div(rounding_mode='floor').
template <typename T> __device__ __forceinline__ T tf_div_floor(T a, T b) {
  if (b == T(0)) return a / b;
  T mod = fmod(a, b);
  T div = (a - mod) / b;
  if ((mod != T(0)) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  if (div != T(0)) {
    T floordiv = floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
    return floordiv;
  }
  return copysign(T(0), a / b);
}
// Python-style remainder (the result takes the divisor's sign), as ATen's: fmod, then the sign
// fixed by adding the divisor; for integers the same with %.
__device__ __forceinline__ float tf_remainder(float a, float b) {
  float mod = fmodf(a, b);
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) mod += b;
  return mod;
}
__device__ __forceinline__ double tf_remainder(double a, double b) {
  double mod = fmod(a, b);
  if (mod != 0.0 && ((b < 0.0) != (mod < 0.0))) mod += b;
  return mod;
}
template <typename T> __device__ __forceinline__ T tf_remainder(T a, T b) {
  T r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// torch.sign: -1, 0 or 1 (0 for NaN and -0.0); a bool is its own sign.
template <typename T> __device__ __forceinline__ T tf_sign(T a) { return (T)((T(0) < a) - (a < T(0))); }
__device__ __forceinline__ bool tf_sign(bool a) { return a; }
// An integer to a constant power e >= 0 by square-and-multiply, as eager's powi: wrapping
// (computed modulo 2^64, then narrowed) where the result overflows T.
template <typename T> __device__ __forceinline__ T tf_powi(T base, long long e) {
  unsigned long long result = 1, b = (unsigned long long)(long long)base;
  for (; e > 0; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return (T)result;
}
// Reduction operators and deterministic team reductions (fixed shuffle/shared-memory order:
// the same input gives the same bits on every run).
struct tf_sum_op { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; } };
struct tf_max_op { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return tf_maximum(a, b); } };
struct tf_min_op { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return tf_minimum(a, b); } };

// Online softmax (codegen::OnlineSum): a running max m and the sum s of exp(v - m) over the
// values seen. m starts at the lowest finite float, so that a -inf value adds exp(-inf) = 0;
// tf_online_max gives -inf back for rows of -inf (the only ones left with s == 0: the max
// itself adds exp(0) = 1).
struct tf_max_sum { float m; float s; };
// Folds N values in at once: their max first, one rescale, then N independent exps (no branch
// and no dependence between the values, so the loads before it stay batched).
template <int N> __device__ __forceinline__ void tf_online_add(tf_max_sum& a, const float (&v)[N]) {
  float m = a.m;
#pragma unroll
  for (int i = 0; i < N; ++i) m = tf_maximum(m, v[i]);
  float s = a.s * tf_exp_shifted(a.m - m);
#pragma unroll
  for (int i = 0; i < N; ++i) s += tf_exp_shifted(v[i] - m);
  a = tf_max_sum{m, s};
}
// Combines two pairs with one exp: the pair with the larger max keeps its sum as is.
struct tf_max_sum_op {
  __device__ __forceinline__ tf_max_sum operator()(tf_max_sum a, tf_max_sum b) const {
    const bool b_larger = a.m < b.m;
    const float m = tf_maximum(a.m, b.m);  // NaN stays
    const float lo = b_larger ? a.m : b.m;
    return tf_max_sum{m, (b_larger ? b.s : a.s) + (b_larger ? a.s : b.s) * tf_exp_shifted(lo - m)};
  }
};
// A pair another block wrote, read through L2 as __ldcg reads a float (split column passes).
__device__ __forceinline__ tf_max_sum tf_ldcg_max_sum(const tf_max_sum* p) { return tf_max_sum{__ldcg(&p->m), __ldcg(&p->s)}; }
__device__ __forceinline__ float tf_online_max(tf_max_sum a) { return a.s == 0.0f ? -__int_as_float(0x7f800000) : a.m; }
// sum(exp(v - shift)) with shift = the max, or (masked, as logsumexp) 0 where the max is
// infinite: where it is not finite, the terms are known without the rescaled sum.
__device__ __forceinline__ float tf_online_sum(tf_max_sum a, bool masked) {
  const float m = tf_online_max(a);
  if (fabsf(m) <= 3.40282347e38f) return a.s;
  if (!masked || m != m) return __int_as_float(0x7fc00000);  // inf - inf, or NaN values
  return m > 0.0f ? __int_as_float(0x7f800000) : 0.0f;      // exp(+inf), or only exp(-inf) terms
}

// Reduces across a team of W consecutive lanes (W a power of two <= 32); every lane gets the result.
template <int W, typename T, typename Op> __device__ __forceinline__ T tf_warp_reduce(T v, Op op) {
#pragma unroll
  for (int offset = W / 2; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset, W));
  return v;
}
// Online pairs across a warp team: the max first, then each lane rescales its sum once and the
// sums are added (one exp per lane instead of one per shuffle step).
template <int W> __device__ __forceinline__ tf_max_sum tf_warp_reduce(tf_max_sum v, tf_max_sum_op) {
  float m = v.m;
#pragma unroll
  for (int offset = W / 2; offset > 0; offset >>= 1) m = tf_maximum(m, __shfl_xor_sync(0xffffffffu, m, offset, W));
  float s = v.s * tf_exp_shifted(v.m - m);
#pragma unroll
  for (int offset = W / 2; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffffu, s, offset, W);
  return tf_max_sum{m, s};
}
// Reduces across the whole block (WARPS warps); every thread gets the result.
template <int WARPS, typename T, typename Op> __device__ __forceinline__ T tf_block_reduce(T v, Op op, T* smem) {
  v = tf_warp_reduce<32>(v, op);
  if ((threadIdx.x & 31) == 0) smem[threadIdx.x >> 5] = v;
  __syncthreads();
  T r = smem[0];
#pragma unroll
  for (int w = 1; w < WARPS; ++w) r = op(r, smem[w]);
  __syncthreads();
  return r;
}
// A block round shared by the reductions one pass accumulates (ReductionLayout::shared_rounds):
// each reduction's warps publish their partials into its slots, one __syncthreads serves them
// all, then every thread combines each reduction's slots. No barrier follows the reads: a
// reduction's slots alternate between two halves by row group, and a half is written again only
// after the next row group's barrier, which every reader of it has passed.
template <typename T, typename Op> __device__ __forceinline__ void tf_block_publish(T v, Op op, T* slots) {
  v = tf_warp_reduce<32>(v, op);
  if ((threadIdx.x & 31) == 0) slots[threadIdx.x >> 5] = v;
}
template <int WARPS, typename T, typename Op> __device__ __forceinline__ T tf_block_collect(Op op, const T* slots) {
  T r = slots[0];
#pragma unroll
  for (int w = 1; w < WARPS; ++w) r = op(r, slots[w]);
  return r;
}
#if __CUDA_ARCH__ >= 900
// Thread-block clusters (rows too long for one block): this block's rank in its cluster, a
// barrier over the whole cluster that orders shared-memory writes before it against reads after
// it, and a load from another block's shared memory (the same variable, in block `rank`).
__device__ __forceinline__ unsigned tf_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void tf_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned tf_cluster_address(const void* smem, unsigned rank) {
  unsigned long long local;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(local) : "l"(smem));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"((unsigned)local), "r"(rank));
  return remote;
}
__device__ __forceinline__ unsigned tf_cluster_load32(const void* smem, unsigned rank) {
  unsigned bits;
  asm volatile("ld.shared::cluster.b32 %0, [%1];" : "=r"(bits) : "r"(tf_cluster_address(smem, rank)) : "memory");
  return bits;
}
__device__ __forceinline__ unsigned long long tf_cluster_load64(const void* smem, unsigned rank) {
  unsigned long long bits;
  asm volatile("ld.shared::cluster.b64 %0, [%1];" : "=l"(bits) : "r"(tf_cluster_address(smem, rank)) : "memory");
  return bits;
}
__device__ __forceinline__ float tf_cluster_load(const float* smem, unsigned rank) { return __uint_as_float(tf_cluster_load32(smem, rank)); }
__device__ __forceinline__ double tf_cluster_load(const double* smem, unsigned rank) {
  return __longlong_as_double((long long)tf_cluster_load64(smem, rank));
}
__device__ __forceinline__ long long tf_cluster_load(const long long* smem, unsigned rank) { return (long long)tf_cluster_load64(smem, rank); }
__device__ __forceinline__ int tf_cluster_load(const int* smem, unsigned rank) { return (int)tf_cluster_load32(smem, rank); }
__device__ __forceinline__ tf_max_sum tf_cluster_load(const tf_max_sum* smem, unsigned rank) {
  return tf_max_sum{tf_cluster_load(&smem->m, rank), tf_cluster_load(&smem->s, rank)};
}
// Reduces across the C blocks (WARPS warps each) of a cluster; every thread of each gets the
// same result, combined in rank order. `slot` is a shared variable of this reduction's own; the
// last barrier keeps it (and the block) alive until every block has read it.
template <int WARPS, int C, typename T, typename Op> __device__ __forceinline__ T tf_cluster_reduce(T v, Op op, T* smem, T* slot) {
  v = tf_block_reduce<WARPS>(v, op, smem);
  if (threadIdx.x == 0) *slot = v;
  tf_cluster_sync();
  T r = tf_cluster_load(slot, 0);
#pragma unroll
  for (int c = 1; c < C; ++c) r = op(r, tf_cluster_load(slot, c));
  tf_cluster_sync();
  return r;
}
#endif
// Split reductions (codegen/split_reduction.cpp): one thread of a block counts the block's
// arrival after a __syncthreads that follows the block's partial-result writes, and learns how
// many blocks came before. Release (those writes) and acquire (every earlier block's) at GPU
// scope in the atomic itself: one thread's ordering instead of a fence in every thread.
__device__ __forceinline__ unsigned tf_count_arrival(unsigned* counter) {
  unsigned before;
#if __CUDA_ARCH__ >= 700
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(before) : "l"(counter) : "memory");
#else
  __threadfence();
  before = atomicAdd(counter, 1u);
  __threadfence();
#endif
  return before;
}
// N consecutive partial results other blocks wrote (at an address aligned to N * sizeof(T), or to
// 16 bytes), read through L2 (ld.global.cg) in 16- or 8-byte words W where they fill whole ones.
template <typename W, typename T, int N> __device__ __forceinline__ void tf_load_partial_words(T (&dst)[N], const T* src) {
  constexpr int per = (int)(sizeof(W) / sizeof(T));
#pragma unroll
  for (int c = 0; c < N / per; ++c) {
    union { W w; T t[per]; } u;
    u.w = __ldcg(reinterpret_cast<const W*>(src) + c);
#pragma unroll
    for (int j = 0; j < per; ++j) dst[c * per + j] = u.t[j];
  }
}
template <typename T, int N> __device__ __forceinline__ void tf_load_partials(T (&dst)[N], const T* src) {
  constexpr int bytes = N * (int)sizeof(T);
  if constexpr (bytes % 16 == 0 && 16 % sizeof(T) == 0) {
    tf_load_partial_words<uint4>(dst, src);
  } else if constexpr (bytes % 8 == 0 && 8 % sizeof(T) == 0) {
    tf_load_partial_words<uint2>(dst, src);
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) dst[j] = __ldcg(src + j);
  }
}
)CUDA" + std::string(grid_dependency_definition()) + "// ---- end of prelude ----\n";
  return text;
}

void emit_grid_dependency(SourceBuilder& b) { b.line(kGridDependencyCall); }

uint64_t fast_divider(int64_t d) {
  TORCHFUSE_INTERNAL_ASSERT(d >= 1 && d < (int64_t{1} << 31), "fast_divider(", d, ")");
  uint64_t shift = 0;
  while ((uint64_t{1} << shift) < static_cast<uint64_t>(d)) ++shift;
  const uint64_t m = ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - static_cast<uint64_t>(d))) / static_cast<uint64_t>(d) + 1;
  TORCHFUSE_INTERNAL_ASSERT(m <= 0xffffffffull, "fast_divider(", d, "): multiplier out of range");
  return m << 32 | shift;
}

void emit_divmod(SourceBuilder& b, bool index64, const std::string& c, const std::string& size_expr,
                 const std::string& div_expr, const std::string& rem) {
  if (index64) {
    b.line("const tf_index " + c + " = " + rem + " % " + size_expr + ";");
    b.line(rem + " /= " + size_expr + ";");
    return;
  }
  b.line("const tf_index q_" + c + " = (tf_index)tf_fast_div((unsigned)" + rem + ", " + div_expr + ");");
  b.line("const tf_index " + c + " = " + rem + " - q_" + c + " * " + size_expr + ";");
  b.line(rem + " = q_" + c + ";");
}

}  // namespace codegen
}  // namespace torchfuse
