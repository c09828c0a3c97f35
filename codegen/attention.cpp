#include "codegen/attention.h"

#include <string>

#include "codegen/kernel_name.h"
#include "codegen/source_builder.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

// Helpers and the kernel body, written once; the spec's numbers come before it as constants
// (kD, kWarps, kMask, kCausal, kVec, kHalf), so that every branch on them folds at compile time.
// Fragment layouts are PTX's for mma.m16n8k16 (lane = 4 * g + t): A holds rows g and g + 8,
// columns 2t, 2t + 1 and 2t + 8, 2t + 9; B columns g, rows 2t, 2t + 1 and 2t + 8, 2t + 9; C rows
// g and g + 8, columns 2t, 2t + 1. A block of scores in C layout is, two tiles at a time, the
// probabilities' A fragment for the product with the values: they never leave registers.
const char* kBody = R"CUDA(
typedef unsigned short tf_u16;
typedef unsigned int tf_u32;
constexpr int kKeyBlock = 64;
constexpr int kRowsPerWarp = 16;
constexpr int kPad = 8;  // shared rows 16 bytes longer: a warp's fragment loads hit 32 banks
constexpr float kLog2e = 1.4426950408889634f;
#define TF_NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float tf_to_float(tf_u16 x) {
  if constexpr (kHalf) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
    return f;
  } else {
    return __uint_as_float(static_cast<tf_u32>(x) << 16);
  }
}

// Two floats rounded to nearest even, `lo` in the low half (the lower address).
__device__ __forceinline__ tf_u32 tf_pack(float lo, float hi) {
  tf_u32 r;
  if constexpr (kHalf) asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ tf_u32 tf_pair(tf_u16 lo, tf_u16 hi) {
  return static_cast<tf_u32>(lo) | (static_cast<tf_u32>(hi) << 16);
}

// c += a * b for one 16 x 8 tile, float accumulators.
__device__ __forceinline__ void tf_mma(float c[4], const tf_u32 a[4], tf_u32 b0, tf_u32 b1) {
  if constexpr (kHalf) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

struct TF_KERNEL_NAME_params {
  const tf_u16* q;
  const tf_u16* k;
  const tf_u16* v;
  const tf_u16* mask;
  tf_u16* out;
  long long batch, heads, kv_heads, q_len, k_len, q_tiles;
  long long qs[4], ks[4], vs[4], ms[4], os[4];
  double scale;
};

// Elements (row, col) and (row, col + 1) of a [rows, kD] operand as one pair; zeros past `rows`.
__device__ __forceinline__ tf_u32 tf_load_pair(const tf_u16* base, long long row_stride, long long col_stride,
                                               long long row, long long rows, int col) {
  if (row >= rows) return 0u;
  const tf_u16* p = base + row * row_stride + col * col_stride;
  if constexpr (kVec) return *reinterpret_cast<const tf_u32*>(p);
  else return tf_pair(p[0], p[col_stride]);
}

// 16 bytes copied to shared memory without passing through registers (sm_80's cp.async), or
// zeros where !valid (then nothing is read; `src` must still be an address of the operand).
__device__ __forceinline__ void tf_copy16(void* dst, const void* src, bool valid) {
  unsigned shared;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(shared) : "l"(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void tf_copies_commit() { asm volatile("cp.async.commit_group;"); }
template <int kPending>
__device__ __forceinline__ void tf_copies_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending)); }

// Keys or values [first, first + kKeyBlock) of one head into shared rows; zeros past `rows`
// (a zero value times a zero probability stays zero: garbage could be NaN). With vector loads
// the copies are asynchronous, every one of a thread in flight at once (tf_copies_wait lands them).
__device__ __forceinline__ void tf_stage(tf_u16 (*dst)[kD + kPad], const tf_u16* base, long long row_stride,
                                         long long col_stride, long long first, long long rows) {
  if constexpr (kVec) {
    constexpr int kChunks = kD / 8;
    static_assert(kKeyBlock * kChunks % (32 * kWarps) == 0, "16-byte chunks split evenly over the block");
#pragma unroll
    for (int j = 0; j < kKeyBlock * kChunks / (32 * kWarps); ++j) {
      const int i = threadIdx.x + j * 32 * kWarps;
      const int r = i / kChunks, c = (i % kChunks) * 8;
      const bool valid = first + r < rows;
      tf_copy16(&dst[r][c], valid ? base + (first + r) * row_stride + c : base, valid);
    }
    tf_copies_commit();
  } else {
    for (int i = threadIdx.x; i < kKeyBlock * kD; i += 32 * kWarps) {
      const int r = i / kD, c = i % kD;
      dst[r][c] = first + r < rows ? base[(first + r) * row_stride + c * col_stride] : tf_u16(0);
    }
  }
}

extern "C" __global__ void __launch_bounds__(32 * kWarps) TF_KERNEL_NAME(const TF_KERNEL_NAME_params p) {
  __shared__ __align__(16) tf_u16 keys[kKeyBlock][kD + kPad];
  __shared__ __align__(16) tf_u16 values[kKeyBlock][kD + kPad];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  long long block = blockIdx.x;
  const long long tile = block % p.q_tiles;
  block /= p.q_tiles;
  const long long h = block % p.heads, b = block / p.heads;
  const long long kh = h / (p.heads / p.kv_heads);
  const long long block_row0 = tile * kRowsPerWarp * kWarps;
  const long long row0 = block_row0 + warp * kRowsPerWarp;
  const long long rows[2] = {row0 + g, row0 + g + 8};

  const tf_u16* q = p.q + b * p.qs[0] + h * p.qs[1];
  const tf_u16* k = p.k + b * p.ks[0] + kh * p.ks[1];
  const tf_u16* v = p.v + b * p.vs[0] + kh * p.vs[1];
  const tf_u16* mask = kMask ? p.mask + b * p.ms[0] + h * p.ms[1] : nullptr;

  tf_u32 qf[kD / 16][4];
#pragma unroll
  for (int c = 0; c < kD / 16; ++c) {
    const int col = c * 16 + 2 * t;
    qf[c][0] = tf_load_pair(q, p.qs[2], p.qs[3], rows[0], p.q_len, col);
    qf[c][1] = tf_load_pair(q, p.qs[2], p.qs[3], rows[1], p.q_len, col);
    qf[c][2] = tf_load_pair(q, p.qs[2], p.qs[3], rows[0], p.q_len, col + 8);
    qf[c][3] = tf_load_pair(q, p.qs[2], p.qs[3], rows[1], p.q_len, col + 8);
  }

  // Scores run in log2 units: exp2(x * log2e) = exp(x).
  const float scale = static_cast<float>(p.scale);
  float running_max[2] = {TF_NEG_INF, TF_NEG_INF};
  float running_sum[2] = {0.f, 0.f};  // this thread's columns only; the 4 lanes of a row add up at the end
  float acc[kD / 8][4];
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;

  long long key_end = p.k_len;
  if (kCausal) key_end = min(key_end, block_row0 + kRowsPerWarp * kWarps);  // later keys: no row of the block sees them
  for (long long first = 0; first < key_end; first += kKeyBlock) {
    __syncthreads();  // the last block's products are done with the shared rows
    tf_stage(keys, k, p.ks[2], p.ks[3], first, p.k_len);
    tf_stage(values, v, p.vs[2], p.vs[3], first, p.k_len);
    // This thread's mask entries, loaded while the keys land: every load at once, from an
    // address clamped into the mask (rows and keys past the ends are not used).
    float added[kKeyBlock / 8][4];
    if constexpr (kMask) {
#pragma unroll
      for (int n = 0; n < kKeyBlock / 8; ++n) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const long long row = min(rows[i >> 1], p.q_len - 1);
          const long long col = min(first + n * 8 + 2 * t + (i & 1), p.k_len - 1);
          added[n][i] = tf_to_float(mask[row * p.ms[2] + col * p.ms[3]]);
        }
      }
    }
    if constexpr (kVec) tf_copies_wait<1>();  // the keys (the values may still be in flight)
    __syncthreads();

    float s[kKeyBlock / 8][4];
#pragma unroll
    for (int n = 0; n < kKeyBlock / 8; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
      for (int c = 0; c < kD / 16; ++c) {
        const tf_u32 b0 = *reinterpret_cast<const tf_u32*>(&keys[n * 8 + g][c * 16 + 2 * t]);
        const tf_u32 b1 = *reinterpret_cast<const tf_u32*>(&keys[n * 8 + g][c * 16 + 8 + 2 * t]);
        tf_mma(s[n], qf[c], b0, b1);
      }
    }

    // Scale, mask, and this block's row maxima (fmaxf passes over NaN: a NaN score reaches the
    // sum through exp2 below, and its row comes out NaN, as eager's softmax gives).
    float block_max[2] = {TF_NEG_INF, TF_NEG_INF};
#pragma unroll
    for (int n = 0; n < kKeyBlock / 8; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const long long row = rows[i >> 1], col = first + n * 8 + 2 * t + (i & 1);
        float x = s[n][i] * scale;
        if (col >= p.k_len || (kCausal && col > row)) {
          x = TF_NEG_INF;
        } else if constexpr (kMask) {
          x += added[n][i];
        }
        x *= kLog2e;
        s[n][i] = x;
        block_max[i >> 1] = fmaxf(block_max[i >> 1], x);
      }
    }
    float rescale[2], offset[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(0xffffffffu, block_max[r], 1));
      block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(0xffffffffu, block_max[r], 2));
      const float new_max = fmaxf(running_max[r], block_max[r]);
      // A row with nothing seen yet (all -inf so far) subtracts 0: exp2(-inf) is 0, not NaN.
      offset[r] = new_max == TF_NEG_INF ? 0.f : new_max;
      rescale[r] = exp2f(running_max[r] - offset[r]);
      running_max[r] = new_max;
      running_sum[r] *= rescale[r];
    }
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      acc[n][0] *= rescale[0];
      acc[n][1] *= rescale[0];
      acc[n][2] *= rescale[1];
      acc[n][3] *= rescale[1];
    }
    if constexpr (kVec) {
      tf_copies_wait<0>();  // this thread's values; the barrier makes every thread's visible
      __syncthreads();
    }
#pragma unroll
    for (int c = 0; c < kKeyBlock / 16; ++c) {
      float e[2][4];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          e[j][i] = exp2f(s[2 * c + j][i] - offset[i >> 1]);
          running_sum[i >> 1] += e[j][i];
        }
      }
      const tf_u32 a[4] = {tf_pack(e[0][0], e[0][1]), tf_pack(e[0][2], e[0][3]), tf_pack(e[1][0], e[1][1]),
                           tf_pack(e[1][2], e[1][3])};
      const int key = c * 16 + 2 * t;
#pragma unroll
      for (int n = 0; n < kD / 8; ++n) {
        const int col = n * 8 + g;
        const tf_u32 b0 = tf_pair(values[key][col], values[key + 1][col]);
        const tf_u32 b1 = tf_pair(values[key + 8][col], values[key + 9][col]);
        tf_mma(acc[n], a, b0, b1);
      }
    }
  }

  // A row that saw only -inf has sum 0 and comes out 0 / 0 = NaN, as eager's softmax gives.
  float inverse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    running_sum[r] += __shfl_xor_sync(0xffffffffu, running_sum[r], 1);
    running_sum[r] += __shfl_xor_sync(0xffffffffu, running_sum[r], 2);
    inverse[r] = 1.f / running_sum[r];
  }
  tf_u16* out = p.out + b * p.os[0] + h * p.os[1];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (rows[r] >= p.q_len) continue;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      const int col = n * 8 + 2 * t;
      const tf_u32 pair = tf_pack(acc[n][2 * r] * inverse[r], acc[n][2 * r + 1] * inverse[r]);
      tf_u16* dst = out + rows[r] * p.os[2] + col * p.os[3];
      if constexpr (kVec) {
        *reinterpret_cast<tf_u32*>(dst) = pair;
      } else {
        dst[0] = static_cast<tf_u16>(pair & 0xffffu);
        dst[p.os[3]] = static_cast<tf_u16>(pair >> 16);
      }
    }
  }
}
)CUDA";

std::string flag(bool b) { return b ? "true" : "false"; }

}  // namespace

GeneratedKernel generate_attention(const AttentionSpec& spec) {
  TORCHFUSE_INTERNAL_ASSERT(spec.dtype == c10::ScalarType::BFloat16 || spec.dtype == c10::ScalarType::Half,
                            "attention kernel for ", spec.dtype);
  TORCHFUSE_INTERNAL_ASSERT(spec.head_dim > 0 && spec.head_dim % 16 == 0 && spec.head_dim <= kAttentionMaxHeadDim,
                            "attention kernel for head dim ", spec.head_dim);
  TORCHFUSE_INTERNAL_ASSERT(spec.warps == 1 || spec.warps == 2 || spec.warps == 4, "attention kernel with ",
                            spec.warps, " warps");
  const bool half = spec.dtype == c10::ScalarType::Half;
  SourceBuilder b;
  b.line(std::string("// torchfuse attention: ") + (half ? "f16" : "bf16") + ", head dim " +
         std::to_string(spec.head_dim) + ", " + std::to_string(spec.warps) + " warps of 16 query rows a block" +
         (spec.mask ? ", an additive mask" : "") + (spec.causal ? ", causal" : "") +
         (spec.vector_loads ? ", vector loads" : ", element loads"));
  b.line("constexpr int kD = " + std::to_string(spec.head_dim) + ";");
  b.line("constexpr int kWarps = " + std::to_string(spec.warps) + ";");
  b.line("constexpr bool kHalf = " + flag(half) + ";");
  b.line("constexpr bool kMask = " + flag(spec.mask) + ";");
  b.line("constexpr bool kCausal = " + flag(spec.causal) + ";");
  b.line("constexpr bool kVec = " + flag(spec.vector_loads) + ";");
  b.raw(kBody);
  std::string source = b.str();
  // The body names the entry point and its parameters with the placeholder's spelling.
  return name_kernel(std::move(source), "attention", 32 * spec.warps);
}

}  // namespace codegen
}  // namespace torchfuse
