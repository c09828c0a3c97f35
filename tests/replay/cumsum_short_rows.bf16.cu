// torchfuse replay corpus (tests/test_replay.cpp): cumsum_short_rows, bf16
// inputs: [1024, 100] strides [100, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_cumsum_570c530e (relu -> cumsum -> mul)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): relu -> cumsum -> mul
// cached mode: 128 threads per row, block 128, vector width 1, 1 vectors per thread; 2 pass(es) over each row; 32-bit indices
// each block takes 1 row team(s) in turn
// the reductions of a pass share one block round
// in0 = %0 bf16, inner_contiguous
// out0 = %6 bf16, per element
typedef int tf_index;

struct tf_cumsum_570c530e_params {
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
extern "C" __global__ void __launch_bounds__(128) tf_cumsum_570c530e(const tf_cumsum_570c530e_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 128;
  const int tl = threadIdx.x % 128;
  (void)team;
  __shared__ float smem_scan_tot0[4];
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 4;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    float cache1[1];
    float scan_tot0[1] = {};  // per chunk of the thread
    float scan_base0[1];
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 1;
      if (row_ok && j0 < (tf_index)p.cols) {
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = tf_to_float(in0[ro0 + j]);  // %0
          float t0 = (x0 < 0.0f ? 0.0f : x0);  // %4 = relu(%0)
          cache1[k * 1 + lane] = t0;
          scan_tot0[k] += t0;  // cumsum -> %5 (the chunk's total)
        }
      }
    }
    tf_block_scan<4>(scan_tot0, scan_base0, smem_scan_tot0);  // cumsum -> %5
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 1;
      if (row_ok && j0 < (tf_index)p.cols) {
        float scan_run0 = (float)0;  // the chunk's running sum
        float o0[1];
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          scan_run0 += cache1[k * 1 + lane];
          const float t1 = tf_round_bf16((scan_base0[k] + scan_run0));  // %5 = cumsum(%4)
          float t2 = (t1 * 0.5f);  // %6 = mul(%5, 0.5)
          o0[lane] = t2;
        }
        tf_vec<tf_bf16, 1> s0;
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) s0.v[lane] = tf_float_to_bf16(o0[lane]);
        *reinterpret_cast<tf_vec<tf_bf16, 1>*>(out0 + row * (tf_index)p.cols + j0) = s0;
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
