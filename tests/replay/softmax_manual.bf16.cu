// torchfuse replay corpus (tests/test_replay.cpp): softmax_manual, bf16
// inputs: [16384, 4096] strides [4096, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_max_sum_0d0a8ac7 (reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_max -> sub -> exp -> reduce_sum -> div
// cached mode: 128 threads per row, block 128, vector width 8, 4 vectors per thread (inputs kept as loaded, values recomputed); 2 pass(es) over each row; 32-bit indices
// each block takes 2 row team(s) in turn
// the reductions of a pass share one block round
// %5 and %9 accumulate together: a running max and the sum of exp(v - max)
// in0 = %0 bf16, inner_contiguous
// out0 = %10 bf16, per element
typedef int tf_index;

struct tf_max_sum_0d0a8ac7_params {
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

extern "C" __global__ void __launch_bounds__(128) tf_max_sum_0d0a8ac7(const tf_max_sum_0d0a8ac7_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 128;
  const int tl = threadIdx.x % 128;
  (void)team;
  __shared__ tf_max_sum smem_acc1[8];
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
    tf_vec<tf_bf16, 8> kept0[4];
    tf_max_sum acc1 = tf_max_sum{-3.40282347e38f, 0.0f};
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      /* every chunk holds columns */ {
        kept0[k] = tf_load_keep(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ro0 + j0));
        const tf_vec<tf_bf16, 8> v0 = kept0[k];
        float ol1[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = tf_to_float(v0.v[lane]);  // %0
          ol1[lane] = x0;  // online sum -> %9
        }
        tf_online_add(acc1, ol1);
      }
    }
    tf_block_publish(acc1, tf_max_sum_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %9
    const tf_max_sum ms1 = tf_block_collect<4>(tf_max_sum_op(), smem_acc1 + red_half);
    const float red0 = tf_online_max(ms1);  // %5
    const float red1 = tf_round_bf16(tf_online_sum(ms1, false));  // %9
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %9, once per row (0: divide instead)
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      /* every chunk holds columns */ {
        const tf_vec<tf_bf16, 8> v0 = kept0[k];
        float o0[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x1 = tf_to_float(v0.v[lane]);  // %0
          float t0 = (x1 - red0);  // %7 = sub(%0, %5)
          float t1 = tf_exp_shifted(t0);  // %8 = exp(%7)
          float t2 = (rcp0 != 0.0f ? t1 * rcp0 : t1 / red1);  // %10 = div(%8, %9)
          o0[lane] = t2;
        }
        const tf_vec<tf_bf16, 8> s0 = tf_pack<tf_bf16>(o0);
        if (row_ok) *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)4096 + j0) = s0;
      }
    }
  }
}
// ==== sm_90: tf_max_sum_1af3183d (reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_max -> sub -> exp -> reduce_sum -> div
// cached mode: 128 threads per row, block 128, vector width 8, 4 vectors per thread (inputs kept as loaded, values recomputed); 2 pass(es) over each row; 32-bit indices
// staged: the inputs read again are copied into shared memory, one bulk copy per row and input; 1 buffer(s), the block's next 0 row group(s) loading while it works on one
// the reductions of a pass share one block round
// %5 and %9 accumulate together: a running max and the sum of exp(v - max)
// in0 = %0 bf16, inner_contiguous
// out0 = %10 bf16, per element
typedef int tf_index;

struct tf_max_sum_1af3183d_params {
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

__device__ __forceinline__ void tf_max_sum_1af3183d_stage(const tf_max_sum_1af3183d_params& p, tf_index row0, unsigned char* buf, unsigned long long* bar) {
  const unsigned team_bytes = (unsigned)p.cols * 2u;
  const tf_index left = (tf_index)p.rows - row0;
  const int teams = left < 1 ? (int)left : 1;
  tf_mbar_expect_bytes(bar, (unsigned)teams * team_bytes);
  tf_bulk_fence();
  for (int t = 0; t < teams; ++t) {
    tf_index srem = row0 + t;
    const tf_index sa0 = srem;
    const tf_index sro0 = sa0 * (tf_index)p.in0_outer_stride[0];
    tf_bulk_load_keep(buf + (unsigned)t * team_bytes + (unsigned)p.cols * 0u, p.in0 + sro0, (unsigned)p.cols * 2u, bar);
  }
}
extern "C" __global__ void __launch_bounds__(128) tf_max_sum_1af3183d(const tf_max_sum_1af3183d_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 128;
  const int tl = threadIdx.x % 128;
  (void)team;
  __shared__ tf_max_sum smem_acc1[8];
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
  __shared__ __align__(8) unsigned long long stage_bar[1];
  extern __shared__ __align__(128) unsigned char stage_smem[];
  const unsigned stage_block_bytes = (unsigned)p.cols * 2u * 1u;
  if (threadIdx.x == 0) {
    tf_mbar_init(&stage_bar[0]);
    tf_mbar_init_fence();
  }
  __syncthreads();
  unsigned stage_it = 0;  // row groups this block has taken
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 4;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    const unsigned stage_buf = stage_it % 1u;
    const unsigned stage_next = (stage_it + 0u) % 1u;
    const tf_index stage_row = row0 + (tf_index)0 * (tf_index)gridDim.x * 1;
    if (threadIdx.x == 0 && stage_row < (tf_index)p.rows) tf_max_sum_1af3183d_stage(p, stage_row, stage_smem + stage_next * stage_block_bytes, &stage_bar[stage_next]);
    tf_mbar_wait(&stage_bar[stage_buf], (stage_it / 1u) & 1u);
    unsigned char* const stage_team = stage_smem + stage_buf * stage_block_bytes + (unsigned)team * (unsigned)p.cols * 2u;
    const tf_bf16* const stage0 = reinterpret_cast<const tf_bf16*>(stage_team + (unsigned)p.cols * 0u);
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    tf_max_sum acc1 = tf_max_sum{-3.40282347e38f, 0.0f};
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      if (row_ok && j0 < (tf_index)p.cols) {
        const tf_vec<tf_bf16, 8> v0 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage0 + j0);
        float ol1[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = tf_to_float(v0.v[lane]);  // %0
          ol1[lane] = x0;  // online sum -> %9
        }
        tf_online_add(acc1, ol1);
      }
    }
    tf_block_publish(acc1, tf_max_sum_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %9
    const tf_max_sum ms1 = tf_block_collect<4>(tf_max_sum_op(), smem_acc1 + red_half);
    const float red0 = tf_online_max(ms1);  // %5
    const float red1 = tf_round_bf16(tf_online_sum(ms1, false));  // %9
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %9, once per row (0: divide instead)
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      if (row_ok && j0 < (tf_index)p.cols) {
        const tf_vec<tf_bf16, 8> v0 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage0 + j0);
        float o0[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x1 = tf_to_float(v0.v[lane]);  // %0
          float t0 = (x1 - red0);  // %7 = sub(%0, %5)
          float t1 = tf_exp_shifted(t0);  // %8 = exp(%7)
          float t2 = (rcp0 != 0.0f ? t1 * rcp0 : t1 / red1);  // %10 = div(%8, %9)
          o0[lane] = t2;
        }
        const tf_vec<tf_bf16, 8> s0 = tf_pack<tf_bf16>(o0);
        *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)p.cols + j0) = s0;
      }
    }
    __syncthreads();  // this row group's buffer is free again
    ++stage_it;
  }
}
