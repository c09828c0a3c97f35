// torchfuse replay corpus (tests/test_replay.cpp): log_softmax, f32
// inputs: [512, 768] strides [768, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_log_softmax_dd926d84 (reduce_max -> sub -> exp -> reduce_sum -> log -> sub)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_max -> sub -> exp -> reduce_sum -> log -> sub
// cached mode: 256 threads per row, block 256, vector width 4, 1 vectors per thread (first-pass values kept, later ones recomputed); 3 pass(es) over each row; 32-bit indices
// each block takes 1 row team(s) in turn
// the reductions of a pass share one block round
// in0 = %0 f32, inner_contiguous
// out0 = %8 f32, per element
typedef int tf_index;

struct tf_log_softmax_dd926d84_params {
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

extern "C" __global__ void __launch_bounds__(256) tf_log_softmax_dd926d84(const tf_log_softmax_dd926d84_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 256;
  const int tl = threadIdx.x % 256;
  (void)team;
  __shared__ float smem_acc0[16];
  __shared__ float smem_acc1[16];
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 8;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    float cache0[4];
    float acc0 = __int_as_float(0xff800000);
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 256 + tl) * 4;
      if (row_ok && j0 < (tf_index)p.cols) {
        const tf_vec<float, 4> v0 = *reinterpret_cast<const tf_vec<float, 4>*>(in0 + ro0 + j0);
        #pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = v0.v[lane];  // %0
          cache0[k * 4 + lane] = x0;
          acc0 = tf_max_op()(acc0, x0);  // reduce_max -> %3
        }
      }
    }
    tf_block_publish(acc0, tf_max_op(), smem_acc0 + red_half);
    __syncthreads();  // one round for %3
    const float red0 = (float)tf_block_collect<8>(tf_max_op(), smem_acc0 + red_half);  // %3
    float acc1 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 256 + tl) * 4;
      if (row_ok && j0 < (tf_index)p.cols) {
        #pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t0 = (cache0[k * 4 + lane] - red0);  // %4 = sub(%0, %3)
          float t1 = tf_exp_shifted(t0);  // %5 = exp(%4)
          acc1 = tf_sum_op()(acc1, t1);  // reduce_sum -> %6
        }
      }
    }
    tf_block_publish(acc1, tf_sum_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %6
    const float red1 = (float)tf_block_collect<8>(tf_sum_op(), smem_acc1 + red_half);  // %6
    float t2 = logf(red1);  // %7 = log(%6)
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 256 + tl) * 4;
      if (row_ok && j0 < (tf_index)p.cols) {
        float o0[4];
        #pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t3 = (cache0[k * 4 + lane] - red0);  // %4 = sub(%0, %3)
          float t4 = (t3 - t2);  // %8 = sub(%4, %7)
          o0[lane] = t4;
        }
        tf_vec<float, 4> s0;
        #pragma unroll
        for (int lane = 0; lane < 4; ++lane) s0.v[lane] = o0[lane];
        *reinterpret_cast<tf_vec<float, 4>*>(out0 + row * (tf_index)p.cols + j0) = s0;
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
