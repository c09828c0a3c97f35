// torchfuse replay corpus (tests/test_replay.cpp): softmax_long_rows, bf16
// inputs: [1024, 65536] strides [65536, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_max_sum_64ea14d0 (reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_max -> sub -> exp -> reduce_sum -> div
// looped mode: 1024 threads per row, block 1024, vector width 8; 2 pass(es) over each row; 32-bit indices
// the reductions of a pass share one block round
// %5 and %9 accumulate together: a running max and the sum of exp(v - max)
// in0 = %0 bf16, inner_contiguous
// out0 = %10 bf16, per element
typedef int tf_index;

struct tf_max_sum_64ea14d0_params {
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

extern "C" __global__ void __launch_bounds__(1024) tf_max_sum_64ea14d0(const tf_max_sum_64ea14d0_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 1024;
  const int tl = threadIdx.x % 1024;
  (void)team;
  __shared__ tf_max_sum smem_acc1[64];
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 32;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    tf_max_sum acc1 = tf_max_sum{-3.40282347e38f, 0.0f};
    for (tf_index j0 = (tf_index)tl * 8; j0 < (tf_index)p.cols; j0 += 8192) {
      if (row_ok) {
        const int k = 0;
        (void)k;
        const tf_vec<tf_bf16, 8> v0 = tf_load_keep(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ro0 + j0));
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
    const tf_max_sum ms1 = tf_block_collect<32>(tf_max_sum_op(), smem_acc1 + red_half);
    const float red0 = tf_online_max(ms1);  // %5
    const float red1 = tf_round_bf16(tf_online_sum(ms1, false));  // %9
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %9, once per row (0: divide instead)
    for (tf_index j0 = (tf_index)tl * 8; j0 < (tf_index)p.cols; j0 += 8192) {
      if (row_ok) {
        const int k = 0;
        (void)k;
        const tf_vec<tf_bf16, 8> v0 = tf_load_once(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ro0 + j0));
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
        tf_store_once(reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)p.cols + j0), s0);
      }
    }
  }
}
// ==== sm_90: tf_max_sum_89510267 (reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): reduce_max -> sub -> exp -> reduce_sum -> div
// looped mode: 1024 threads per row, block 1024, vector width 8; 2 pass(es) over each row; 32-bit indices
// ringed: the inputs read again stream through a ring of 3 chunks of 32768 columns in shared memory, one bulk copy per chunk and input; a chunk freed by the last pass takes the one a ring ahead
// the reductions of a pass share one block round
// %5 and %9 accumulate together: a running max and the sum of exp(v - max)
// in0 = %0 bf16, inner_contiguous
// out0 = %10 bf16, per element
typedef int tf_index;

struct tf_max_sum_89510267_params {
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

__device__ __forceinline__ void tf_max_sum_89510267_ring(const tf_max_sum_89510267_params& p, unsigned q, unsigned chunks, unsigned char* slot, unsigned long long* bar) {
  const tf_index row = (tf_index)blockIdx.x + (tf_index)(q / chunks) * (tf_index)gridDim.x;
  const tf_index j = (tf_index)(q % chunks) * 32768;
  const unsigned n = (unsigned)((tf_index)p.cols - j < 32768 ? (tf_index)p.cols - j : 32768);  // columns
  tf_mbar_expect_bytes(bar, n * 2u);
  tf_bulk_fence();
  tf_index srem = row;
  const tf_index sa0 = srem;
  const tf_index sro0 = sa0 * (tf_index)p.in0_outer_stride[0];
  tf_bulk_load_keep(slot + 0u, p.in0 + sro0 + j, n * 2u, bar);
}
extern "C" __global__ void __launch_bounds__(1024) tf_max_sum_89510267(const tf_max_sum_89510267_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 1024;
  const int tl = threadIdx.x % 1024;
  (void)team;
  __shared__ tf_max_sum smem_acc1[64];
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
  __shared__ __align__(8) unsigned long long ring_bar[3];
  extern __shared__ __align__(128) unsigned char ring_smem[];
  if (threadIdx.x == 0) {
    for (int s = 0; s < 3; ++s) tf_mbar_init(&ring_bar[s]);
    tf_mbar_init_fence();
  }
  __syncthreads();
  const unsigned ring_chunks = (unsigned)(((tf_index)p.cols + 32767) / 32768);  // per row
  const unsigned ring_rows = (tf_index)blockIdx.x < (tf_index)p.rows ? (unsigned)(((tf_index)p.rows - 1 - (tf_index)blockIdx.x) / (tf_index)gridDim.x) + 1u : 0u;
  const unsigned ring_total = ring_rows * ring_chunks;  // the block's chunks
  if (threadIdx.x == 0)
    for (unsigned q = 0; q < 3u && q < ring_total; ++q) tf_max_sum_89510267_ring(p, q, ring_chunks, ring_smem + q * 65536u, &ring_bar[q]);
  unsigned ring_q = 0;  // the current row's first chunk
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 32;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    tf_max_sum acc1 = tf_max_sum{-3.40282347e38f, 0.0f};
    for (unsigned c = 0; c < ring_chunks; ++c) {
      const unsigned rq = ring_q + c;  // the block's chunk
      const tf_index ring_j = (tf_index)c * 32768;
      const tf_index ring_end = ring_j + 32768 < (tf_index)p.cols ? ring_j + 32768 : (tf_index)p.cols;
      unsigned char* const ring_slot = ring_smem + (rq % 3u) * 65536u;
      tf_mbar_wait(&ring_bar[rq % 3u], (rq / 3u) & 1u);
      const tf_bf16* const stage0 = reinterpret_cast<const tf_bf16*>(ring_slot + 0u);
      for (tf_index j0 = ring_j + (tf_index)tl * 8; j0 < ring_end; j0 += 8192) {
        if (row_ok) {
          const int k = 0;
          (void)k;
          const tf_vec<tf_bf16, 8> v0 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage0 + (j0 - ring_j));
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
    }
    tf_block_publish(acc1, tf_max_sum_op(), smem_acc1 + red_half);
    __syncthreads();  // one round for %9
    const tf_max_sum ms1 = tf_block_collect<32>(tf_max_sum_op(), smem_acc1 + red_half);
    const float red0 = tf_online_max(ms1);  // %5
    const float red1 = tf_round_bf16(tf_online_sum(ms1, false));  // %9
    const float rcp0 = fabsf(red1) >= 1.17549435e-38f && fabsf(red1) <= 3.40282347e38f ? 1.0f / red1 : 0.0f;  // 1 / %9, once per row (0: divide instead)
    for (unsigned c = 0; c < ring_chunks; ++c) {
      const unsigned rq = ring_q + c;  // the block's chunk
      const tf_index ring_j = (tf_index)c * 32768;
      const tf_index ring_end = ring_j + 32768 < (tf_index)p.cols ? ring_j + 32768 : (tf_index)p.cols;
      unsigned char* const ring_slot = ring_smem + (rq % 3u) * 65536u;
      tf_mbar_wait(&ring_bar[rq % 3u], (rq / 3u) & 1u);
      const tf_bf16* const stage0 = reinterpret_cast<const tf_bf16*>(ring_slot + 0u);
      for (tf_index j0 = ring_j + (tf_index)tl * 8; j0 < ring_end; j0 += 8192) {
        if (row_ok) {
          const int k = 0;
          (void)k;
          const tf_vec<tf_bf16, 8> v0 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage0 + (j0 - ring_j));
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
          tf_store_once(reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)p.cols + j0), s0);
        }
      }
      __syncthreads();  // every thread is done with this chunk: its slot takes the chunk a ring ahead
      if (threadIdx.x == 0 && rq + 3u < ring_total) tf_max_sum_89510267_ring(p, rq + 3u, ring_chunks, ring_slot, &ring_bar[rq % 3u]);
    }
    ring_q += ring_chunks;
  }
}
