// torchfuse replay corpus (tests/test_replay.cpp): softmax_cumsum_vocab, f32
// inputs: [8, 50257] strides [50257, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_softmax_cumsum_44b943c6 (mul -> reduce_max -> sub -> exp -> reduce_sum -> div -> cumsum)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): mul -> reduce_max -> sub -> exp -> reduce_sum -> div -> cumsum
// looped mode: 1024 threads per row, block 1024, vector width 1; 3 pass(es) over each row; 32-bit indices
// the reductions of a pass share one block round
// %5 and %8 accumulate together: a running max and the sum of exp(v - max)
// in0 = %0 f32, inner_contiguous
// out0 = %10 f32, per element
typedef int tf_index;

struct tf_softmax_cumsum_44b943c6_params {
  long long rows;
  long long cols;
  long long outer_size[1];
  unsigned long long outer_div[1];  // tf_fast_div of each outer size
  long long red_size[1];
  const float* in0;
  long long in0_outer_stride[1];
  long long in0_red_stride[1];
  float* out0;
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
extern "C" __global__ void __launch_bounds__(1024) tf_softmax_cumsum_44b943c6(const tf_softmax_cumsum_44b943c6_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 1024;
  const int tl = threadIdx.x % 1024;
  (void)team;
  __shared__ tf_max_sum smem_acc1[64];
  __shared__ float smem_scan_tot0[64];
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  unsigned scan_step = 0;  // the block's team scan steps (their parity picks a half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 32;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    float scan_base0[1];  // before this thread's vector
    tf_max_sum acc1 = tf_max_sum{-3.40282347e38f, 0.0f};
    for (tf_index j0 = (tf_index)tl * 1; j0 < (tf_index)p.cols; j0 += 1024) {
      if (row_ok) {
        const int k = 0;
        (void)k;
        float ol1[1];
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = in0[ro0 + j];  // %0
          float t0 = __fmul_rn(x0, 1.5f);  // %4 = mul(%0, 1.5)
          ol1[lane] = t0;  // online sum -> %8
        }
        tf_online_add(acc1, ol1);
      }
    }
    tf_block_publish(acc1, tf_max_sum_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %8
    const tf_max_sum ms1 = tf_block_collect<32>(tf_max_sum_op(), smem_acc1 + red_half);
    const float red0 = tf_online_max(ms1);  // %5
    const float red1 = tf_online_sum(ms1, false);  // %8
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %8, once per row (0: divide instead)
    float scan_carry0 = (float)0;  // the row's sum before the team's vectors
    for (tf_index jb = 0; jb < (tf_index)p.cols; jb += 1024) {
      const tf_index j0 = jb + (tf_index)tl * 1;
      const tf_index jn = j0 + 1024 < (tf_index)p.cols ? j0 + 1024 : 0;  // where the next step's vectors load from
      const int k = 0;
      (void)k;
      float scan_vt0 = (float)0;
      if (row_ok && j0 < (tf_index)p.cols) {
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x1 = in0[ro0 + j];  // %0
          float t1 = __fmul_rn(x1, 1.5f);  // %4 = mul(%0, 1.5)
          float t2 = (t1 - red0);  // %6 = sub(%4, %5)
          float t3 = tf_exp_shifted(t2);  // %7 = exp(%6)
          float t4 = (rcp0 != 0.0f ? t3 * rcp0 : t3 / red1);  // %9 = div(%7, %8)
          scan_vt0 += t4;  // cumsum -> %10 (the vector's total)
        }
      }
      scan_base0[0] = tf_block_scan_step<32>(scan_vt0, scan_carry0, smem_scan_tot0, scan_step++);  // cumsum -> %10
      if (row_ok && j0 < (tf_index)p.cols) {
        float scan_run0 = (float)0;  // the chunk's running sum
        float o0[1];
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x2 = in0[ro0 + j];  // %0
          float t5 = __fmul_rn(x2, 1.5f);  // %4 = mul(%0, 1.5)
          float t6 = (t5 - red0);  // %6 = sub(%4, %5)
          float t7 = tf_exp_shifted(t6);  // %7 = exp(%6)
          float t8 = (rcp0 != 0.0f ? t7 * rcp0 : t7 / red1);  // %9 = div(%7, %8)
          scan_run0 += t8;
          const float t9 = (scan_base0[k] + scan_run0);  // %10 = cumsum(%9)
          o0[lane] = t9;
        }
        tf_vec<float, 1> s0;
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) s0.v[lane] = o0[lane];
        tf_store_once(reinterpret_cast<tf_vec<float, 1>*>(out0 + row * (tf_index)p.cols + j0), s0);
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
