// torchfuse replay corpus (tests/test_replay.cpp): group_norm_silu, f32
// inputs: [2, 64, 16, 16] strides [16384, 256, 16, 1], [64] strides [1], [64] strides [1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_layer_norm_d74d86b1 (reduce_sum -> div -> sub -> reduce_sum -> mul -> reduce_sum -> div -> mul -> clamp_max -> sub -> clamp_min -> div -> add -> div -> add -> rsqrt -> sub -> mul -> mul -> add -> silu)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_sum -> div -> sub -> reduce_sum -> mul -> reduce_sum -> div -> mul -> clamp_max -> sub -> clamp_min -> div -> add -> div -> add -> rsqrt -> sub -> mul -> mul -> add -> silu
// cached mode: 1024 threads per row, block 1024, vector width 1, 2 vectors per thread (first-pass values kept, later ones recomputed); 3 pass(es) over each row; 32-bit indices
// each block takes 1 row team(s) in turn
// the reductions of a pass share one block round
// in0 = %15 f32, strided
// in1 = %52 f32, strided
// in2 = %58 f32, strided
// out0 = %75 f32, per element
typedef int tf_index;

struct tf_layer_norm_d74d86b1_params {
  long long rows;
  long long cols;
  long long outer_size[2];
  unsigned long long outer_div[2];  // tf_fast_div of each outer size
  long long red_size[2];
  unsigned long long red_div[2];  // tf_fast_div of each reduced size
  const float* in0;
  long long in0_outer_stride[2];
  long long in0_red_stride[2];
  const float* in1;
  long long in1_outer_stride[2];
  long long in1_red_stride[2];
  const float* in2;
  long long in2_outer_stride[2];
  long long in2_red_stride[2];
  float* out0;
};

__device__ __forceinline__ tf_index tf_red_offset_0(const tf_layer_norm_d74d86b1_params& p, tf_index j) {
  tf_index off = 0;
  const tf_index q1 = (tf_index)tf_fast_div((unsigned)j, p.red_div[1]);
  off += (j - q1 * (tf_index)p.red_size[1]) * (tf_index)p.in0_red_stride[1];
  j = q1;
  off += j * (tf_index)p.in0_red_stride[0];
  return off;
}
__device__ __forceinline__ tf_index tf_red_offset_1(const tf_layer_norm_d74d86b1_params& p, tf_index j) {
  tf_index off = 0;
  const tf_index q1 = (tf_index)tf_fast_div((unsigned)j, p.red_div[1]);
  off += (j - q1 * (tf_index)p.red_size[1]) * (tf_index)p.in1_red_stride[1];
  j = q1;
  off += j * (tf_index)p.in1_red_stride[0];
  return off;
}
__device__ __forceinline__ tf_index tf_red_offset_2(const tf_layer_norm_d74d86b1_params& p, tf_index j) {
  tf_index off = 0;
  const tf_index q1 = (tf_index)tf_fast_div((unsigned)j, p.red_div[1]);
  off += (j - q1 * (tf_index)p.red_size[1]) * (tf_index)p.in2_red_stride[1];
  j = q1;
  off += j * (tf_index)p.in2_red_stride[0];
  return off;
}
extern "C" __global__ void __launch_bounds__(1024) tf_layer_norm_d74d86b1(const tf_layer_norm_d74d86b1_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 1024;
  const int tl = threadIdx.x % 1024;
  (void)team;
  __shared__ float smem_acc0[64];
  __shared__ float smem_acc1[64];
  __shared__ float smem_acc2[64];
  const float* __restrict__ in0 = p.in0;
  const float* __restrict__ in1 = p.in1;
  const float* __restrict__ in2 = p.in2;
  float* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 32;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index q_a1 = (tf_index)tf_fast_div((unsigned)rem, p.outer_div[1]);
    const tf_index a1 = rem - q_a1 * (tf_index)p.outer_size[1];
    rem = q_a1;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0] + a1 * (tf_index)p.in0_outer_stride[1];
    const tf_index ro1 = a0 * (tf_index)p.in1_outer_stride[0] + a1 * (tf_index)p.in1_outer_stride[1];
    const tf_index ro2 = a0 * (tf_index)p.in2_outer_stride[0] + a1 * (tf_index)p.in2_outer_stride[1];
    float cache0[2];
    float acc0 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 2; ++k) {
      const tf_index j0 = ((tf_index)k * 1024 + tl) * 1;
      /* every chunk holds columns */ {
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = in0[ro0 + tf_red_offset_0(p, j)];  // %15
          cache0[k * 1 + lane] = x0;
          acc0 = tf_sum_op()(acc0, x0);  // reduce_sum -> %29
        }
      }
    }
    tf_block_publish(acc0, tf_sum_op(), smem_acc0 + red_half);
    __syncthreads();  // one round for %29
    const float red0 = (float)tf_block_collect<32>(tf_sum_op(), smem_acc0 + red_half);  // %29
    float t0 = (red0 * (1.0f / (float)((double)2048)));  // %30 = div(%29, N)
    float acc1 = 0.0f;
    float acc2 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 2; ++k) {
      const tf_index j0 = ((tf_index)k * 1024 + tl) * 1;
      /* every chunk holds columns */ {
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t1 = (cache0[k * 1 + lane] - t0);  // %31 = sub(%15, %30)
          float t2 = (t1 * t1);  // %33 = mul(%31, %31)
          acc1 = tf_sum_op()(acc1, t1);  // reduce_sum -> %32
          acc2 = tf_sum_op()(acc2, t2);  // reduce_sum -> %34
        }
      }
    }
    tf_block_publish(acc1, tf_sum_op(), smem_acc1 + red_half);
    tf_block_publish(acc2, tf_sum_op(), smem_acc2 + red_half);
    __syncthreads();  // one round for %32, %34
    const float red1 = (float)tf_block_collect<32>(tf_sum_op(), smem_acc1 + red_half);  // %32
    const float red2 = (float)tf_block_collect<32>(tf_sum_op(), smem_acc2 + red_half);  // %34
    float t3 = (red1 * (1.0f / (float)((double)2048)));  // %35 = div(%32, N)
    float t4 = (red1 * t3);  // %36 = mul(%32, %35)
    float t5 = (t4 > 3.4028235e+38f ? 3.4028235e+38f : t4);  // %38 = clamp_max(%36, 3.4028234663852886e+38)
    float t6 = (red2 - t5);  // %39 = sub(%34, %38)
    float t7 = (t6 < 0.0f ? 0.0f : t6);  // %41 = clamp_min(%39, 0.0)
    float t8 = (red1 * (1.0f / (float)((double)2048)));  // %42 = div(%32, N)
    float t9 = (t0 + t8);  // %43 = add(%30, %42)
    float t10 = (t7 * (1.0f / (float)((double)2048)));  // %45 = div(%41, N)
    float t11 = (t10 + 1e-05f);  // %47 = add(%45, 1e-05)
    float t12 = rsqrtf(t11);  // %48 = rsqrt(%47)
    #pragma unroll
    for (int k = 0; k < 2; ++k) {
      const tf_index j0 = ((tf_index)k * 1024 + tl) * 1;
      /* every chunk holds columns */ {
        float o0[1];
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t13 = (cache0[k * 1 + lane] - t9);  // %49 = sub(%15, %43)
          float t14 = (t13 * t12);  // %50 = mul(%49, %48)
          float x1 = in1[ro1 + tf_red_offset_1(p, j)];  // %52
          float t15 = (t14 * x1);  // %63 = mul(%50, %52)
          float x2 = in2[ro2 + tf_red_offset_2(p, j)];  // %58
          float t16 = (t15 + x2);  // %65 = add(%63, %58)
          float t17 = tf_silu(t16);  // %75 = silu(%65)
          o0[lane] = t17;
        }
        tf_vec<float, 1> s0;
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) s0.v[lane] = o0[lane];
        if (row_ok) *reinterpret_cast<tf_vec<float, 1>*>(out0 + row * (tf_index)2048 + j0) = s0;
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
