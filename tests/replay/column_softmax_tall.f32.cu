// torchfuse replay corpus (tests/test_replay.cpp): column_softmax_tall, f32
// inputs: [16384, 768] strides [768, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_softmax_67487589 (mul -> reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (column reduction, 2 passes): mul -> reduce_max -> sub -> exp -> reduce_sum -> div
// 32 columns along the kept inner dims, 8 threads along the reduced dim; the tile's rows split over p.split blocks (blockIdx.y) that exchange each pass's partials at a barrier; softmax sums accumulate with their max (online), a step of rows at a time;
// compiled with --fmad=false: every pass computes the element values the same way
typedef int tf_index;

struct tf_softmax_67487589_params {
  long long outer, red, inner;  // O, R, I: the domain is [O, R, I]
  long long split;
  long long outer_size[1];
  long long red_size[1];
  long long inner_size[1];
  const float* in0;
  long long in0_outer_stride[1];
  long long in0_red_stride[1];
  long long in0_inner_stride[1];
  float* out0;
  float* part_acc0;  // partial results
  tf_max_sum* part_acc1;  // partial results
  unsigned int* counters;  // finished blocks per split reduction (zero between launches)
};

// Waits until the tile's counter holds `target` arrivals, this block's included.
__device__ __forceinline__ void tf_softmax_67487589_tile_barrier(unsigned* counter, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    tf_count_arrival(counter);
    unsigned seen;
    unsigned wait = 32;
    for (;;) {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
      if (seen >= target) break;
      __nanosleep(wait);
      if (wait < 512) wait *= 2;
    }
  }
  __syncthreads();
}

extern "C" __global__ void __launch_bounds__(256, 4) tf_softmax_67487589(const tf_softmax_67487589_params p) {
  tf_grid_dependency();
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  const int tx = threadIdx.x & 31;
  const int ty = threadIdx.x >> 5;
  const tf_index tiles = ((tf_index)p.inner + 31) / 32;
  for (tf_index tile = blockIdx.x; tile < tiles * (tf_index)p.outer; tile += gridDim.x) {
    const tf_index o = tile / tiles;
    const tf_index i = (tile % tiles) * 32 + tx;
    const bool ok = i < (tf_index)p.inner;
    tf_index orem = o;
    const tf_index ooff0 = 0;
    tf_index irem = ok ? i : 0;
    const tf_index ic0 = irem;
    const tf_index ioff0 = 0 + ic0 * (tf_index)p.in0_inner_stride[0];
    const tf_index rows_per_block = ((tf_index)p.red + (tf_index)p.split - 1) / (tf_index)p.split;
    const tf_index r0 = (tf_index)blockIdx.y * rows_per_block;
    const tf_index r1 = min(r0 + rows_per_block, (tf_index)p.red);
    unsigned* const tile_counter = p.counters + tile * 32;
    tf_max_sum acc1 = tf_max_sum{-3.40282347e38f, 0.0f};
    for (tf_index rb = r0 + ty; ok && rb < r1; rb += 96) {
      float c0[12];
      #pragma unroll
      for (int u = 0; u < 12; ++u) {
        const tf_index r = min(rb + (tf_index)u * 8, r1 - 1);
        tf_index rrem = r;
        const tf_index rc0 = rrem;
        const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
        c0[u] = in0[ooff0 + ioff0 + roff0];
      }
      float ol1[12];
      #pragma unroll
      for (int u = 0; u < 12; ++u) ol1[u] = __int_as_float(0xff800000);
      #pragma unroll
      for (int u = 0; u < 12; ++u) {
        const tf_index r = rb + (tf_index)u * 8;
        if (r < r1) {
          float x0 = c0[u];  // %0
          float t0 = __fmul_rn(x0, 0.5f);  // %4 = mul(%0, 0.5)
          ol1[u] = t0;  // online sum -> %8
        }
      }
      tf_online_add(acc1, ol1);
    }
    __shared__ tf_max_sum smem_acc1[8][32];
    smem_acc1[ty][tx] = acc1;
    __syncthreads();
    tf_max_sum total_acc1 = smem_acc1[0][tx];
    for (int y = 1; y < 8; ++y) total_acc1 = tf_max_sum_op()(total_acc1, smem_acc1[y][tx]);
    if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i] = total_acc1;
    tf_softmax_67487589_tile_barrier(tile_counter, (unsigned)p.split * 1u);
    total_acc1 = tf_max_sum{-3.40282347e38f, 0.0f};
    for (tf_index s = ty; ok && s < (tf_index)p.split; s += 8) {
      total_acc1 = tf_max_sum_op()(total_acc1, tf_ldcg_max_sum(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i));
    }
    smem_acc1[ty][tx] = total_acc1;
    __syncthreads();
    total_acc1 = smem_acc1[0][tx];
    for (int y = 1; y < 8; ++y) total_acc1 = tf_max_sum_op()(total_acc1, smem_acc1[y][tx]);
    if (threadIdx.x == 0 && tf_count_arrival(tile_counter) == (unsigned)p.split * 2u - 1u) *tile_counter = 0u;
    const float total_acc1_max = tf_online_max(total_acc1);  // %5
    const float total_acc1_sum = tf_online_sum(total_acc1, false);  // %8
    for (tf_index rb = r1 - 1 - ty; ok && rb >= r0; rb -= 96) {
      float c0[12];
      #pragma unroll
      for (int u = 0; u < 12; ++u) {
        const tf_index r = max(rb - (tf_index)u * 8, r0);
        tf_index rrem = r;
        const tf_index rc0 = rrem;
        const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
        c0[u] = in0[ooff0 + ioff0 + roff0];
      }
      #pragma unroll
      for (int u = 0; u < 12; ++u) {
        const tf_index r = rb - (tf_index)u * 8;
        if (r >= r0) {
          float x1 = c0[u];  // %0
          float t1 = __fmul_rn(x1, 0.5f);  // %4 = mul(%0, 0.5)
          float t2 = (t1 - total_acc1_max);  // %6 = sub(%4, %5)
          float t3 = tf_exp_shifted(t2);  // %7 = exp(%6)
          float t4 = (t3 / total_acc1_sum);  // %9 = div(%7, %8)
          out0[(o * (tf_index)p.red + r) * (tf_index)p.inner + i] = t4;
        }
      }
    }
    __syncthreads();
  }
}
// ==== sm_90: the same kernels as sm_80
