// torchfuse replay corpus (tests/test_replay.cpp): softmax_cumsum, bf16
// inputs: [64, 8192] strides [8192, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_softmax_cumsum_463b437c (reduce_max -> sub -> exp -> reduce_sum -> div -> cumsum)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_max -> sub -> exp -> reduce_sum -> div -> cumsum
// cached mode: 1024 threads per row, block 1024, vector width 8, 1 vectors per thread; 3 pass(es) over each row; 32-bit indices
// each block takes 1 row team(s) in turn
// the reductions of a pass share one block round
// %3 and %6 accumulate together: a running max and the sum of exp(v - max)
// in0 = %0 bf16, inner_contiguous
// out0 = %8 bf16, per element
typedef int tf_index;

struct tf_softmax_cumsum_463b437c_params {
  long long rows;
  long long cols;
  long long outer_size[1];
  unsigned long long outer_div[1];  // tf_fast_div of each outer size
  long long red_size[1];
  const tf_bf16* in0;
  long long in0_outer_stride[1];
  long long in0_red_stride[1];
  tf_bf16* out0;
};

// Team scans (cumsum along rows): each thread holds C chunk totals, the sums of its k-th
// vector of the row; base[k] gets the sum of every element before that vector: all the team's
// vectors of the chunks before k, and chunk k's vectors of the threads before it.
template <int W, typename T> __device__ __forceinline__ T tf_scan_inclusive(T v, int lane) {
#pragma unroll
  for (int o = 1; o < W; o <<= 1) {
    const T u = __shfl_up_sync(0xffffffffu, v, o, W);
    if (lane >= o) v += u;
  }
  return v;
}
// A team of W <= 32 consecutive lanes; tl is the thread's lane in its team.
template <int W, int C, typename T> __device__ __forceinline__ void tf_team_scan(const T (&tot)[C], T (&base)[C], int tl) {
  T carry = T(0);
#pragma unroll
  for (int k = 0; k < C; ++k) {
    const T incl = tf_scan_inclusive<W>(tot[k], tl);
    const T before = __shfl_up_sync(0xffffffffu, incl, 1, W);
    base[k] = carry + (tl == 0 ? T(0) : before);
    carry += __shfl_sync(0xffffffffu, incl, W - 1, W);
  }
}
// A team of the whole block (WARPS warps); smem holds WARPS * C values.
template <int WARPS, int C, typename T> __device__ __forceinline__ void tf_block_scan(const T (&tot)[C], T (&base)[C], T* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T incl[C];
#pragma unroll
  for (int k = 0; k < C; ++k) {
    incl[k] = tf_scan_inclusive<32>(tot[k], lane);
    if (lane == 31) smem[k * WARPS + warp] = incl[k];
  }
  __syncthreads();
  T carry = T(0);
#pragma unroll
  for (int k = 0; k < C; ++k) {
    const T before_lane = __shfl_up_sync(0xffffffffu, incl[k], 1);
    T before_warp = T(0), total = T(0);
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      const T s = smem[k * WARPS + w];
      if (w < warp) before_warp += s;
      total += s;
    }
    base[k] = carry + before_warp + (lane == 0 ? T(0) : before_lane);
    carry += total;
  }
  __syncthreads();  // the next row's totals overwrite smem only after every thread read this row's
}
// Looped rows: one step of a block-wide team over the row, a vector a thread. Returns the sum of
// the elements before this thread's vector (carry, then the threads before it) and adds the
// team's total to carry. smem holds 2 * WARPS values; consecutive steps of the block use
// alternate halves (step's parity), so one barrier a step suffices: a half is written again
// only after the next step's barrier, which every thread passes after reading it.
template <int WARPS, typename T> __device__ __forceinline__ T tf_block_scan_step(T tot, T& carry, T* smem, unsigned step) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T* const half = smem + (step & 1u) * WARPS;
  const T incl = tf_scan_inclusive<32>(tot, lane);
  if (lane == 31) half[warp] = incl;
  __syncthreads();
  const T before_lane = __shfl_up_sync(0xffffffffu, incl, 1);
  T before_warp = T(0), total = T(0);
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    const T s = half[w];
    if (w < warp) before_warp += s;
    total += s;
  }
  const T base = carry + before_warp + (lane == 0 ? T(0) : before_lane);
  carry += total;
  return base;
}
extern "C" __global__ void __launch_bounds__(1024) tf_softmax_cumsum_463b437c(const tf_softmax_cumsum_463b437c_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 1024;
  const int tl = threadIdx.x % 1024;
  (void)team;
  __shared__ tf_max_sum smem_acc1[64];
  __shared__ float smem_scan_tot0[32];
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 32;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    float cache0[8];
    float cache5[8];
    float scan_tot0[1] = {};  // per chunk of the thread
    float scan_base0[1];
    tf_max_sum acc1 = tf_max_sum{-3.40282347e38f, 0.0f};
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 1024 + tl) * 8;
      /* every chunk holds columns */ {
        const tf_vec<tf_bf16, 8> v0 = tf_load_keep(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ro0 + j0));
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = tf_to_float(v0.v[lane]);  // %0
          cache0[k * 8 + lane] = x0;
          acc1.m = tf_maximum(acc1.m, x0);  // reduce_max -> %3 (online sum -> %6 after the pass)
        }
      }
    }
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 1024 + tl) * 8;
      /* every chunk holds columns */ {
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          acc1.s += tf_exp_shifted(cache0[k * 8 + lane] - acc1.m);  // online sum -> %6
        }
      }
    }
    tf_block_publish(acc1, tf_max_sum_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %6
    const tf_max_sum ms1 = tf_block_collect<32>(tf_max_sum_op(), smem_acc1 + red_half);
    const float red0 = tf_online_max(ms1);  // %3
    const float red1 = tf_online_sum(ms1, false);  // %6
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %6, once per row (0: divide instead)
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 1024 + tl) * 8;
      /* every chunk holds columns */ {
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t0 = (cache0[k * 8 + lane] - red0);  // %4 = sub(%0, %3)
          float t1 = tf_exp_shifted(t0);  // %5 = exp(%4)
          float t2 = (rcp0 != 0.0f ? t1 * rcp0 : t1 / red1);  // %7 = div(%5, %6)
          cache5[k * 8 + lane] = t2;
          scan_tot0[k] += t2;  // cumsum -> %8 (the chunk's total)
        }
      }
    }
    tf_block_scan<32>(scan_tot0, scan_base0, smem_scan_tot0);  // cumsum -> %8
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 1024 + tl) * 8;
      /* every chunk holds columns */ {
        float scan_run0 = (float)0;  // the chunk's running sum
        float o0[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          scan_run0 += cache5[k * 8 + lane];
          const float t3 = tf_round_bf16((scan_base0[k] + scan_run0));  // %8 = cumsum(%7)
          o0[lane] = t3;
        }
        const tf_vec<tf_bf16, 8> s0 = tf_pack<tf_bf16>(o0);
        if (row_ok) *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)8192 + j0) = s0;
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
