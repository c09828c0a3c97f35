// torchfuse replay corpus (tests/test_replay.cpp): attn_softmax_mask, bf16
// inputs: [8, 16, 1024, 1024] strides [16777216, 1048576, 1024, 1], [1, 1, 1024, 1024] strides [1048576, 1048576, 1024, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_softmax_fc26beb5 (mul -> add -> reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): mul -> add -> reduce_max -> sub -> exp -> reduce_sum -> div
// cached mode: 64 threads per row, block 64, vector width 8, 2 vectors per thread; 3 pass(es) over each row; 32-bit indices
// each block takes 4 row team(s) in turn, prefetching the next one's row into L2
// the reductions of a pass share one block round
// in0 = %0 bf16, inner_contiguous
// in1 = %1 bf16, inner_contiguous
// out0 = %12 bf16, per element
typedef int tf_index;

struct tf_softmax_fc26beb5_params {
  long long rows;
  long long cols;
  long long outer_size[2];
  unsigned long long outer_div[2];  // tf_fast_div of each outer size
  long long red_size[1];
  const tf_bf16* in0;
  long long in0_outer_stride[2];
  long long in0_red_stride[1];
  const tf_bf16* in1;
  long long in1_outer_stride[2];
  long long in1_red_stride[1];
  tf_bf16* out0;
};

extern "C" __global__ void __launch_bounds__(64) tf_softmax_fc26beb5(const tf_softmax_fc26beb5_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 64;
  const int tl = threadIdx.x % 64;
  (void)team;
  __shared__ float smem_acc0[4];
  __shared__ float smem_acc1[4];
  const tf_bf16* __restrict__ in0 = p.in0;
  const tf_bf16* __restrict__ in1 = p.in1;
  tf_bf16* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 2;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index q_a1 = (tf_index)tf_fast_div((unsigned)rem, p.outer_div[1]);
    const tf_index a1 = rem - q_a1 * (tf_index)p.outer_size[1];
    rem = q_a1;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0] + a1 * (tf_index)p.in0_outer_stride[1];
    const tf_index ro1 = a0 * (tf_index)p.in1_outer_stride[0] + a1 * (tf_index)p.in1_outer_stride[1];
    // L2 prefetch of the row this team takes next
    if (tl == 0 && row + (tf_index)gridDim.x * 1 < (tf_index)p.rows) {
      tf_index nrem = row + (tf_index)gridDim.x * 1;
      const tf_index q_na1 = (tf_index)tf_fast_div((unsigned)nrem, p.outer_div[1]);
      const tf_index na1 = nrem - q_na1 * (tf_index)p.outer_size[1];
      nrem = q_na1;
      const tf_index na0 = nrem;
      const tf_index nro0 = na0 * (tf_index)p.in0_outer_stride[0] + na1 * (tf_index)p.in0_outer_stride[1];
      const tf_index nro1 = na0 * (tf_index)p.in1_outer_stride[0] + na1 * (tf_index)p.in1_outer_stride[1];
      tf_prefetch_l2(in0 + nro0, (unsigned)p.cols * 2u);
      tf_prefetch_l2(in1 + nro1, (unsigned)p.cols * 2u);
    }
    float cache3[16];
    float cache6[16];
    float acc0 = __int_as_float(0xff800000);
    #pragma unroll
    for (int k = 0; k < 2; ++k) {
      const tf_index j0 = ((tf_index)k * 64 + tl) * 8;
      /* every chunk holds columns */ {
        const tf_vec<tf_bf16, 8> v0 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ro0 + j0);
        const tf_vec<tf_bf16, 8> v1 = tf_load_shared(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in1 + ro1 + j0));
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = tf_to_float(v0.v[lane]);  // %0
          float t0 = (x0 * 0.125f);  // %6 = mul(%0, 0.125)
          float x1 = tf_to_float(v1.v[lane]);  // %1
          float t1 = tf_round_bf16((t0 + x1));  // %7 = add(%6, %1)
          cache3[k * 8 + lane] = t1;
          acc0 = tf_max_op()(acc0, t1);  // reduce_max -> %8
        }
      }
    }
    tf_block_publish(acc0, tf_max_op(), smem_acc0 + red_half);
    __syncthreads();  // one round for %8
    const float red0 = (float)tf_block_collect<2>(tf_max_op(), smem_acc0 + red_half);  // %8
    float acc1 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 2; ++k) {
      const tf_index j0 = ((tf_index)k * 64 + tl) * 8;
      /* every chunk holds columns */ {
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t2 = (cache3[k * 8 + lane] - red0);  // %9 = sub(%7, %8)
          float t3 = tf_exp_shifted(t2);  // %10 = exp(%9)
          cache6[k * 8 + lane] = t3;
          acc1 = tf_sum_op()(acc1, t3);  // reduce_sum -> %11
        }
      }
    }
    tf_block_publish(acc1, tf_sum_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %11
    const float red1 = (float)tf_block_collect<2>(tf_sum_op(), smem_acc1 + red_half);  // %11
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %11, once per row (0: divide instead)
    #pragma unroll
    for (int k = 0; k < 2; ++k) {
      const tf_index j0 = ((tf_index)k * 64 + tl) * 8;
      /* every chunk holds columns */ {
        float o0[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t4 = (rcp0 != 0.0f ? cache6[k * 8 + lane] * rcp0 : cache6[k * 8 + lane] / red1);  // %12 = div(%10, %11)
          o0[lane] = t4;
        }
        const tf_vec<tf_bf16, 8> s0 = tf_pack<tf_bf16>(o0);
        if (row_ok) *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)1024 + j0) = s0;
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
