// torchfuse replay corpus (tests/test_replay.cpp): softmax_vocab, f32
// inputs: [64, 50257] strides [50257, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_softmax_d555bc69 (reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_max -> sub -> exp -> reduce_sum -> div
// looped mode: 1024 threads per row, block 1024, vector width 1; 2 pass(es) over each row; 32-bit indices
// the reductions of a pass share one block round
// %3 and %6 accumulate together: a running max and the sum of exp(v - max)
// in0 = %0 f32, inner_contiguous
// out0 = %7 f32, per element
typedef int tf_index;

struct tf_softmax_d555bc69_params {
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

extern "C" __global__ void __launch_bounds__(1024) tf_softmax_d555bc69(const tf_softmax_d555bc69_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 1024;
  const int tl = threadIdx.x % 1024;
  (void)team;
  __shared__ tf_max_sum smem_acc1[64];
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 32;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
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
          ol1[lane] = x0;  // online sum -> %6
        }
        tf_online_add(acc1, ol1);
      }
    }
    tf_block_publish(acc1, tf_max_sum_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %6
    const tf_max_sum ms1 = tf_block_collect<32>(tf_max_sum_op(), smem_acc1 + red_half);
    const float red0 = tf_online_max(ms1);  // %3
    const float red1 = tf_online_sum(ms1, false);  // %6
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %6, once per row (0: divide instead)
    for (tf_index j0 = (tf_index)tl * 1; j0 < (tf_index)p.cols; j0 += 1024) {
      if (row_ok) {
        const int k = 0;
        (void)k;
        float o0[1];
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x1 = in0[ro0 + j];  // %0
          float t0 = (x1 - red0);  // %4 = sub(%0, %3)
          float t1 = tf_exp_shifted(t0);  // %5 = exp(%4)
          float t2 = (rcp0 != 0.0f ? t1 * rcp0 : t1 / red1);  // %7 = div(%5, %6)
          o0[lane] = t2;
        }
        tf_vec<float, 1> s0;
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) s0.v[lane] = o0[lane];
        tf_store_once(reinterpret_cast<tf_vec<float, 1>*>(out0 + row * (tf_index)p.cols + j0), s0);
      }
    }
  }
}
// ==== sm_90: tf_softmax_1786fd0b (reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_max -> sub -> exp -> reduce_sum -> div
// cached mode: 4096 threads per row (a cluster of 8 blocks), block 512, vector width 1, 13 vectors per thread (first-pass values kept, later ones recomputed); 2 pass(es) over each row; 32-bit indices
// %3 and %6 accumulate together: a running max and the sum of exp(v - max)
// in0 = %0 f32, inner_contiguous
// out0 = %7 f32, per element
typedef int tf_index;

struct tf_softmax_1786fd0b_params {
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

extern "C" __global__ void __launch_bounds__(512) tf_softmax_1786fd0b(const tf_softmax_1786fd0b_params p) {
  tf_grid_dependency();
  const int team = 0;
  const int tl = (int)tf_cluster_rank() * 512 + (int)threadIdx.x;
  (void)team;
  __shared__ tf_max_sum smem_acc1[16];
  __shared__ tf_max_sum slot_acc1;
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  for (tf_index row0 = (tf_index)(blockIdx.x / 8); row0 < (tf_index)p.rows; row0 += (tf_index)(gridDim.x / 8)) {
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    float cache0[13];
    tf_max_sum acc1 = tf_max_sum{-3.40282347e38f, 0.0f};
    #pragma unroll
    for (int k = 0; k < 13; ++k) {
      const tf_index j0 = ((tf_index)k * 4096 + tl) * 1;
      if (row_ok && j0 < (tf_index)p.cols) {
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = in0[ro0 + j];  // %0
          cache0[k * 1 + lane] = x0;
          acc1.m = tf_maximum(acc1.m, x0);  // reduce_max -> %3 (online sum -> %6 after the pass)
        }
      }
    }
    #pragma unroll
    for (int k = 0; k < 13; ++k) {
      const tf_index j0 = ((tf_index)k * 4096 + tl) * 1;
      if (row_ok && j0 < (tf_index)p.cols) {
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          acc1.s += tf_exp_shifted(cache0[k * 1 + lane] - acc1.m);  // online sum -> %6
        }
      }
    }
    const tf_max_sum ms1 = tf_cluster_reduce<16, 8>(acc1, tf_max_sum_op(), smem_acc1, &slot_acc1);
    const float red0 = tf_online_max(ms1);  // %3
    const float red1 = tf_online_sum(ms1, false);  // %6
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %6, once per row (0: divide instead)
    #pragma unroll
    for (int k = 0; k < 13; ++k) {
      const tf_index j0 = ((tf_index)k * 4096 + tl) * 1;
      if (row_ok && j0 < (tf_index)p.cols) {
        float o0[1];
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t0 = (cache0[k * 1 + lane] - red0);  // %4 = sub(%0, %3)
          float t1 = tf_exp_shifted(t0);  // %5 = exp(%4)
          float t2 = (rcp0 != 0.0f ? t1 * rcp0 : t1 / red1);  // %7 = div(%5, %6)
          o0[lane] = t2;
        }
        tf_vec<float, 1> s0;
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) s0.v[lane] = o0[lane];
        *reinterpret_cast<tf_vec<float, 1>*>(out0 + row * (tf_index)p.cols + j0) = s0;
      }
    }
  }
}
