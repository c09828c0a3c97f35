// torchfuse replay corpus (tests/test_replay.cpp): softmax_manual, f32
// inputs: [16384, 4096] strides [4096, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_max_sum_b364cc8f (reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_max -> sub -> exp -> reduce_sum -> div
// cached mode: 128 threads per row, block 128, vector width 4, 8 vectors per thread (first-pass values kept, later ones recomputed); 2 pass(es) over each row; 32-bit indices
// each block takes 1 row team(s) in turn
// the reductions of a pass share one block round
// %5 and %9 accumulate together: a running max and the sum of exp(v - max)
// in0 = %0 f32, inner_contiguous
// out0 = %10 f32, per element
typedef int tf_index;

struct tf_max_sum_b364cc8f_params {
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

extern "C" __global__ void __launch_bounds__(128) tf_max_sum_b364cc8f(const tf_max_sum_b364cc8f_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 128;
  const int tl = threadIdx.x % 128;
  (void)team;
  __shared__ tf_max_sum smem_acc1[8];
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
    float cache0[32];
    tf_max_sum acc1 = tf_max_sum{-3.40282347e38f, 0.0f};
    #pragma unroll
    for (int k = 0; k < 8; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 4;
      /* every chunk holds columns */ {
        const tf_vec<float, 4> v0 = tf_load_keep(reinterpret_cast<const tf_vec<float, 4>*>(in0 + ro0 + j0));
        #pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = v0.v[lane];  // %0
          cache0[k * 4 + lane] = x0;
          acc1.m = tf_maximum(acc1.m, x0);  // reduce_max -> %5 (online sum -> %9 after the pass)
        }
      }
    }
    #pragma unroll
    for (int k = 0; k < 8; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 4;
      /* every chunk holds columns */ {
        #pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
          acc1.s += tf_exp_shifted(cache0[k * 4 + lane] - acc1.m);  // online sum -> %9
        }
      }
    }
    tf_block_publish(acc1, tf_max_sum_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %9
    const tf_max_sum ms1 = tf_block_collect<4>(tf_max_sum_op(), smem_acc1 + red_half);
    const float red0 = tf_online_max(ms1);  // %5
    const float red1 = tf_online_sum(ms1, false);  // %9
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %9, once per row (0: divide instead)
    #pragma unroll
    for (int k = 0; k < 8; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 4;
      /* every chunk holds columns */ {
        float o0[4];
        #pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t0 = (cache0[k * 4 + lane] - red0);  // %7 = sub(%0, %5)
          float t1 = tf_exp_shifted(t0);  // %8 = exp(%7)
          float t2 = (rcp0 != 0.0f ? t1 * rcp0 : t1 / red1);  // %10 = div(%8, %9)
          o0[lane] = t2;
        }
        tf_vec<float, 4> s0;
        #pragma unroll
        for (int lane = 0; lane < 4; ++lane) s0.v[lane] = o0[lane];
        if (row_ok) *reinterpret_cast<tf_vec<float, 4>*>(out0 + row * (tf_index)4096 + j0) = s0;
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
