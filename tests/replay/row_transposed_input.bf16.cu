// torchfuse replay corpus (tests/test_replay.cpp): row_transposed_input, bf16
// inputs: [256, 512] strides [1, 256]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_softmax_54484fab (mul -> reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): mul -> reduce_max -> sub -> exp -> reduce_sum -> div
// cached mode: 64 threads per row, block 64, vector width 8, 1 vectors per thread; 3 pass(es) over each row; 32-bit indices
// each block takes 1 row team(s) in turn
// the reductions of a pass share one block round
// in0 = %0 bf16, strided
// out0 = %9 bf16, per element
typedef int tf_index;

struct tf_softmax_54484fab_params {
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

extern "C" __global__ void __launch_bounds__(64) tf_softmax_54484fab(const tf_softmax_54484fab_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 64;
  const int tl = threadIdx.x % 64;
  (void)team;
  __shared__ float smem_acc0[4];
  __shared__ float smem_acc1[4];
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 2;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    float cache1[8];
    float cache4[8];
    float acc0 = __int_as_float(0xff800000);
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 64 + tl) * 8;
      /* every chunk holds columns */ {
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = tf_to_float(in0[ro0 + j * (tf_index)p.in0_red_stride[0]]);  // %0
          float t0 = tf_round_bf16(__fmul_rn(x0, 2.0f));  // %4 = mul(%0, 2.0)
          cache1[k * 8 + lane] = t0;
          acc0 = tf_max_op()(acc0, t0);  // reduce_max -> %5
        }
      }
    }
    tf_block_publish(acc0, tf_max_op(), smem_acc0 + red_half);
    __syncthreads();  // one round for %5
    const float red0 = (float)tf_block_collect<2>(tf_max_op(), smem_acc0 + red_half);  // %5
    float acc1 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 64 + tl) * 8;
      /* every chunk holds columns */ {
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t1 = (cache1[k * 8 + lane] - red0);  // %6 = sub(%4, %5)
          float t2 = tf_exp_shifted(t1);  // %7 = exp(%6)
          cache4[k * 8 + lane] = t2;
          acc1 = tf_sum_op()(acc1, t2);  // reduce_sum -> %8
        }
      }
    }
    tf_block_publish(acc1, tf_sum_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %8
    const float red1 = (float)tf_block_collect<2>(tf_sum_op(), smem_acc1 + red_half);  // %8
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %8, once per row (0: divide instead)
    #pragma unroll
    for (int k = 0; k < 1; ++k) {
      const tf_index j0 = ((tf_index)k * 64 + tl) * 8;
      /* every chunk holds columns */ {
        float o0[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t3 = (rcp0 != 0.0f ? cache4[k * 8 + lane] * rcp0 : cache4[k * 8 + lane] / red1);  // %9 = div(%7, %8)
          o0[lane] = t3;
        }
        const tf_vec<tf_bf16, 8> s0 = tf_pack<tf_bf16>(o0);
        if (row_ok) *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)512 + j0) = s0;
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
