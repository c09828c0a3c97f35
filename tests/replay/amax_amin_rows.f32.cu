// torchfuse replay corpus (tests/test_replay.cpp): amax_amin_rows, f32
// inputs: [1000, 333] strides [333, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_amax_amin_46e0a774 (reduce_max -> reduce_min -> sub)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_max -> reduce_min -> sub
// cached mode: 128 threads per row, block 128, vector width 1, 3 vectors per thread; 1 pass(es) over each row; 32-bit indices
// each block takes 1 row team(s) in turn
// the reductions of a pass share one block round
// in0 = %0 f32, inner_contiguous
// out0 = %7 f32, one per row
typedef int tf_index;

struct tf_amax_amin_46e0a774_params {
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

extern "C" __global__ void __launch_bounds__(128) tf_amax_amin_46e0a774(const tf_amax_amin_46e0a774_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 128;
  const int tl = threadIdx.x % 128;
  (void)team;
  __shared__ float smem_acc0[8];
  __shared__ float smem_acc1[8];
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 4;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    float acc0 = __int_as_float(0xff800000);
    float acc1 = __int_as_float(0x7f800000);
    #pragma unroll
    for (int k = 0; k < 3; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 1;
      if (row_ok && j0 < (tf_index)p.cols) {
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = in0[ro0 + j];  // %0
          acc0 = tf_max_op()(acc0, x0);  // reduce_max -> %5
          acc1 = tf_min_op()(acc1, x0);  // reduce_min -> %6
        }
      }
    }
    tf_block_publish(acc0, tf_max_op(), smem_acc0 + red_half);
    tf_block_publish(acc1, tf_min_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %5, %6
    const float red0 = (float)tf_block_collect<4>(tf_max_op(), smem_acc0 + red_half);  // %5
    const float red1 = (float)tf_block_collect<4>(tf_min_op(), smem_acc1 + red_half);  // %6
    float t0 = (red0 - red1);  // %7 = sub(%5, %6)
    if (row_ok && tl == 0) out0[row] = t0;
  }
}
// ==== sm_80: tf_sum_6b5e76b2 (reduce_sum)
// <prelude.cu>

// torchfuse fusion group 1 (row reduction): reduce_sum
// cached mode: 128 threads per row, block 128, vector width 1, 3 vectors per thread; 1 pass(es) over each row; 32-bit indices
// each block takes 1 row team(s) in turn
// the reductions of a pass share one block round
// in0 = %0 f32, inner_contiguous
// out0 = %8 f32, one per row
typedef int tf_index;

struct tf_sum_6b5e76b2_params {
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

extern "C" __global__ void __launch_bounds__(128) tf_sum_6b5e76b2(const tf_sum_6b5e76b2_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 128;
  const int tl = threadIdx.x % 128;
  (void)team;
  __shared__ float smem_acc0[8];
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 4;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    float acc0 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 3; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 1;
      if (row_ok && j0 < (tf_index)p.cols) {
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = in0[ro0 + j];  // %0
          acc0 = tf_sum_op()(acc0, x0);  // reduce_sum -> %8
        }
      }
    }
    tf_block_publish(acc0, tf_sum_op(), smem_acc0 + red_half);
    __syncthreads();  // one round for %8
    const float red0 = (float)tf_block_collect<4>(tf_sum_op(), smem_acc0 + red_half);  // %8
    if (row_ok && tl == 0) out0[row] = red0;
  }
}
// ==== sm_90: the same kernels as sm_80
