// torchfuse replay corpus (tests/test_replay.cpp): layer_norm_no_affine, bf16
// inputs: [96, 1000] strides [1000, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_layer_norm_00b4966f (reduce_sum -> div -> sub -> reduce_sum -> mul -> reduce_sum -> div -> mul -> clamp_max -> sub -> clamp_min -> div -> add -> div -> add -> rsqrt -> sub -> mul)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_sum -> div -> sub -> reduce_sum -> mul -> reduce_sum -> div -> mul -> clamp_max -> sub -> clamp_min -> div -> add -> div -> add -> rsqrt -> sub -> mul
// cached mode: 128 threads per row, block 128, vector width 8, 1 vectors per thread (inputs kept as loaded, values recomputed); 3 pass(es) over each row; 32-bit indices
// each block takes 1 row team(s) in turn
// the reductions of a pass share one block round
// in0 = %0 bf16, inner_contiguous
// out0 = %27 bf16, per element
typedef int tf_index;

struct tf_layer_norm_00b4966f_params {
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

extern "C" __global__ void __launch_bounds__(128) tf_layer_norm_00b4966f(const tf_layer_norm_00b4966f_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 128;
  const int tl = threadIdx.x % 128;
  (void)team;
  __shared__ float smem_acc0[8];
  __shared__ float smem_acc1[8];
  __shared__ float smem_acc2[8];
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
    tf_vec<tf_bf16, 8> kept0[1];
    float acc0 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      if (row_ok && j0 < (tf_index)p.cols) {
        kept0[k] = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ro0 + j0);
        const tf_vec<tf_bf16, 8> v0 = kept0[k];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = tf_to_float(v0.v[lane]);  // %0
          acc0 = tf_sum_op()(acc0, x0);  // reduce_sum -> %6
        }
      }
    }
    tf_block_publish(acc0, tf_sum_op(), smem_acc0 + red_half);
    __syncthreads();  // one round for %6
    const float red0 = (float)tf_block_collect<4>(tf_sum_op(), smem_acc0 + red_half);  // %6
    float t0 = (red0 * (1.0f / (float)((double)p.cols)));  // %7 = div(%6, N)
    float acc1 = 0.0f;
    float acc2 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      if (row_ok && j0 < (tf_index)p.cols) {
        const tf_vec<tf_bf16, 8> v0 = kept0[k];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x1 = tf_to_float(v0.v[lane]);  // %0
          float t1 = (x1 - t0);  // %8 = sub(%0, %7)
          float t2 = (t1 * t1);  // %10 = mul(%8, %8)
          acc1 = tf_sum_op()(acc1, t1);  // reduce_sum -> %9
          acc2 = tf_sum_op()(acc2, t2);  // reduce_sum -> %11
        }
      }
    }
    tf_block_publish(acc1, tf_sum_op(), smem_acc1 + red_half);
    tf_block_publish(acc2, tf_sum_op(), smem_acc2 + red_half);
    __syncthreads();  // one round for %9, %11
    const float red1 = (float)tf_block_collect<4>(tf_sum_op(), smem_acc1 + red_half);  // %9
    const float red2 = (float)tf_block_collect<4>(tf_sum_op(), smem_acc2 + red_half);  // %11
    float t3 = (red1 * (1.0f / (float)((double)p.cols)));  // %12 = div(%9, N)
    float t4 = (red1 * t3);  // %13 = mul(%9, %12)
    float t5 = (t4 > 3.4028235e+38f ? 3.4028235e+38f : t4);  // %15 = clamp_max(%13, 3.4028234663852886e+38)
    float t6 = (red2 - t5);  // %16 = sub(%11, %15)
    float t7 = (t6 < 0.0f ? 0.0f : t6);  // %18 = clamp_min(%16, 0.0)
    float t8 = (red1 * (1.0f / (float)((double)p.cols)));  // %19 = div(%9, N)
    float t9 = (t0 + t8);  // %20 = add(%7, %19)
    float t10 = (t7 * (1.0f / (float)((double)p.cols)));  // %22 = div(%18, N)
    float t11 = (t10 + 1e-06f);  // %24 = add(%22, 1e-06)
    float t12 = rsqrtf(t11);  // %25 = rsqrt(%24)
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      if (row_ok && j0 < (tf_index)p.cols) {
        const tf_vec<tf_bf16, 8> v0 = kept0[k];
        float o0[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x2 = tf_to_float(v0.v[lane]);  // %0
          float t13 = (x2 - t9);  // %26 = sub(%0, %20)
          float t14 = (t13 * t12);  // %27 = mul(%26, %25)
          o0[lane] = t14;
        }
        const tf_vec<tf_bf16, 8> s0 = tf_pack<tf_bf16>(o0);
        *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)p.cols + j0) = s0;
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
