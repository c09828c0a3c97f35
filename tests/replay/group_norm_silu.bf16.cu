// torchfuse replay corpus (tests/test_replay.cpp): group_norm_silu, bf16
// inputs: [2, 64, 16, 16] strides [16384, 256, 16, 1], [64] strides [1], [64] strides [1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_layer_norm_4cbd87d2 (cast -> reduce_sum -> div -> sub -> reduce_sum -> mul -> reduce_sum -> div -> mul -> clamp_max -> sub -> clamp_min -> div -> add -> div -> add -> rsqrt -> sub -> mul -> cast -> cast -> mul -> add -> cast -> silu)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): cast -> reduce_sum -> div -> sub -> reduce_sum -> mul -> reduce_sum -> div -> mul -> clamp_max -> sub -> clamp_min -> div -> add -> div -> add -> rsqrt -> sub -> mul -> cast -> cast -> mul -> add -> cast -> silu
// cached mode: 1024 threads per row, block 1024, vector width 1, 2 vectors per thread; 3 pass(es) over each row; 32-bit indices
// each block takes 1 row team(s) in turn
// the reductions of a pass share one block round
// in0 = %15 bf16, strided
// in1 = %53 bf16, strided
// in2 = %60 bf16, strided
// out0 = %83 bf16, per element
typedef int tf_index;

struct tf_layer_norm_4cbd87d2_params {
  long long rows;
  long long cols;
  long long outer_size[2];
  unsigned long long outer_div[2];  // tf_fast_div of each outer size
  long long red_size[2];
  unsigned long long red_div[2];  // tf_fast_div of each reduced size
  const tf_bf16* in0;
  long long in0_outer_stride[2];
  long long in0_red_stride[2];
  const tf_bf16* in1;
  long long in1_outer_stride[2];
  long long in1_red_stride[2];
  const tf_bf16* in2;
  long long in2_outer_stride[2];
  long long in2_red_stride[2];
  tf_bf16* out0;
};

__device__ __forceinline__ tf_index tf_red_offset_0(const tf_layer_norm_4cbd87d2_params& p, tf_index j) {
  tf_index off = 0;
  const tf_index q1 = (tf_index)tf_fast_div((unsigned)j, p.red_div[1]);
  off += (j - q1 * (tf_index)p.red_size[1]) * (tf_index)p.in0_red_stride[1];
  j = q1;
  off += j * (tf_index)p.in0_red_stride[0];
  return off;
}
__device__ __forceinline__ tf_index tf_red_offset_1(const tf_layer_norm_4cbd87d2_params& p, tf_index j) {
  tf_index off = 0;
  const tf_index q1 = (tf_index)tf_fast_div((unsigned)j, p.red_div[1]);
  off += (j - q1 * (tf_index)p.red_size[1]) * (tf_index)p.in1_red_stride[1];
  j = q1;
  off += j * (tf_index)p.in1_red_stride[0];
  return off;
}
__device__ __forceinline__ tf_index tf_red_offset_2(const tf_layer_norm_4cbd87d2_params& p, tf_index j) {
  tf_index off = 0;
  const tf_index q1 = (tf_index)tf_fast_div((unsigned)j, p.red_div[1]);
  off += (j - q1 * (tf_index)p.red_size[1]) * (tf_index)p.in2_red_stride[1];
  j = q1;
  off += j * (tf_index)p.in2_red_stride[0];
  return off;
}
extern "C" __global__ void __launch_bounds__(1024) tf_layer_norm_4cbd87d2(const tf_layer_norm_4cbd87d2_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 1024;
  const int tl = threadIdx.x % 1024;
  (void)team;
  __shared__ float smem_acc0[64];
  __shared__ float smem_acc1[64];
  __shared__ float smem_acc2[64];
  const tf_bf16* __restrict__ in0 = p.in0;
  const tf_bf16* __restrict__ in1 = p.in1;
  const tf_bf16* __restrict__ in2 = p.in2;
  tf_bf16* __restrict__ out0 = p.out0;
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
    float cache3[2];
    float acc0 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 2; ++k) {
      const tf_index j0 = ((tf_index)k * 1024 + tl) * 1;
      /* every chunk holds columns */ {
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = tf_to_float(in0[ro0 + tf_red_offset_0(p, j)]);  // %15
          float t0 = x0;  // %20 = cast[to=f32](%15)
          cache3[k * 1 + lane] = t0;
          acc0 = tf_sum_op()(acc0, t0);  // reduce_sum -> %30
        }
      }
    }
    tf_block_publish(acc0, tf_sum_op(), smem_acc0 + red_half);
    __syncthreads();  // one round for %30
    const float red0 = (float)tf_block_collect<32>(tf_sum_op(), smem_acc0 + red_half);  // %30
    float t1 = (red0 * (1.0f / (float)((double)2048)));  // %31 = div(%30, N)
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
          float t2 = (cache3[k * 1 + lane] - t1);  // %32 = sub(%20, %31)
          float t3 = (t2 * t2);  // %34 = mul(%32, %32)
          acc1 = tf_sum_op()(acc1, t2);  // reduce_sum -> %33
          acc2 = tf_sum_op()(acc2, t3);  // reduce_sum -> %35
        }
      }
    }
    tf_block_publish(acc1, tf_sum_op(), smem_acc1 + red_half);
    tf_block_publish(acc2, tf_sum_op(), smem_acc2 + red_half);
    __syncthreads();  // one round for %33, %35
    const float red1 = (float)tf_block_collect<32>(tf_sum_op(), smem_acc1 + red_half);  // %33
    const float red2 = (float)tf_block_collect<32>(tf_sum_op(), smem_acc2 + red_half);  // %35
    float t4 = (red1 * (1.0f / (float)((double)2048)));  // %36 = div(%33, N)
    float t5 = (red1 * t4);  // %37 = mul(%33, %36)
    float t6 = (t5 > 3.4028235e+38f ? 3.4028235e+38f : t5);  // %39 = clamp_max(%37, 3.4028234663852886e+38)
    float t7 = (red2 - t6);  // %40 = sub(%35, %39)
    float t8 = (t7 < 0.0f ? 0.0f : t7);  // %42 = clamp_min(%40, 0.0)
    float t9 = (red1 * (1.0f / (float)((double)2048)));  // %43 = div(%33, N)
    float t10 = (t1 + t9);  // %44 = add(%31, %43)
    float t11 = (t8 * (1.0f / (float)((double)2048)));  // %46 = div(%42, N)
    float t12 = (t11 + 1e-05f);  // %48 = add(%46, 1e-05)
    float t13 = rsqrtf(t12);  // %49 = rsqrt(%48)
    #pragma unroll
    for (int k = 0; k < 2; ++k) {
      const tf_index j0 = ((tf_index)k * 1024 + tl) * 1;
      /* every chunk holds columns */ {
        float o0[1];
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t14 = (cache3[k * 1 + lane] - t10);  // %50 = sub(%20, %44)
          float t15 = (t14 * t13);  // %51 = mul(%50, %49)
          float x1 = tf_to_float(in1[ro1 + tf_red_offset_1(p, j)]);  // %53
          float t16 = x1;  // %58 = cast[to=f32](%53)
          float t17 = (t15 * t16);  // %66 = mul(%51, %58)
          float x2 = tf_to_float(in2[ro2 + tf_red_offset_2(p, j)]);  // %60
          float t18 = x2;  // %65 = cast[to=f32](%60)
          float t19 = (t17 + t18);  // %68 = add(%66, %65)
          float t20 = tf_round_bf16(t19);  // %73 = cast[to=bf16](%68)
          float t21 = tf_silu_fast(t20);  // %83 = silu(%73)
          o0[lane] = t21;
        }
        tf_vec<tf_bf16, 1> s0;
        #pragma unroll
        for (int lane = 0; lane < 1; ++lane) s0.v[lane] = tf_float_to_bf16(o0[lane]);
        if (row_ok) *reinterpret_cast<tf_vec<tf_bf16, 1>*>(out0 + row * (tf_index)2048 + j0) = s0;
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
