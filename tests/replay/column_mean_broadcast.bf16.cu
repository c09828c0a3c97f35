// torchfuse replay corpus (tests/test_replay.cpp): column_mean_broadcast, bf16
// inputs: [4096, 96] strides [96, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_mean_eb44c91d (reduce_sum -> div -> sub)
// <prelude.cu>

// torchfuse fusion group 0 (column reduction, 2 passes): reduce_sum -> div -> sub
// 32 columns along the kept inner dims, 8 threads along the reduced dim; the tile's rows split over p.split blocks (blockIdx.y) that exchange each pass's partials at a barrier; each thread keeps its 8 rows of the element inputs in registers;
// compiled with --fmad=false: every pass computes the element values the same way
typedef int tf_index;

struct tf_mean_eb44c91d_params {
  long long outer, red, inner;  // O, R, I: the domain is [O, R, I]
  long long split;
  long long outer_size[1];
  long long red_size[1];
  long long inner_size[1];
  const tf_bf16* in0;
  long long in0_outer_stride[1];
  long long in0_red_stride[1];
  long long in0_inner_stride[1];
  tf_bf16* out0;
  float* part_acc0;  // partial results
  unsigned int* counters;  // finished blocks per split reduction (zero between launches)
};

// Waits until the tile's counter holds `target` arrivals, this block's included.
__device__ __forceinline__ void tf_mean_eb44c91d_tile_barrier(unsigned* counter, unsigned target) {
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

extern "C" __global__ void __launch_bounds__(256, 4) tf_mean_eb44c91d(const tf_mean_eb44c91d_params p) {
  tf_grid_dependency();
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
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
    float c0[8];
    float acc0 = 0.0f;
    if (r1 > r0) {
      #pragma unroll
      for (int u = 0; u < 8; ++u) {
        const tf_index r = min(r0 + ty + (tf_index)u * 8, r1 - 1);
        tf_index rrem = r;
        const tf_index rc0 = rrem;
        const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
        c0[u] = tf_to_float(in0[ooff0 + ioff0 + roff0]);
      }
    }
    #pragma unroll
    for (int u = 0; u < 8; ++u) {
      const tf_index r = r0 + ty + (tf_index)u * 8;
      if (ok && r < r1) {
        float x0 = c0[u];  // %0
        acc0 = tf_sum_op()(acc0, x0);  // reduce_sum -> %5
      }
    }
    __shared__ float smem_acc0[8][32];
    smem_acc0[ty][tx] = acc0;
    __syncthreads();
    float total_acc0 = smem_acc0[0][tx];
    for (int y = 1; y < 8; ++y) total_acc0 = tf_sum_op()(total_acc0, smem_acc0[y][tx]);
    if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i] = total_acc0;
    tf_mean_eb44c91d_tile_barrier(tile_counter, (unsigned)p.split * 1u);
    total_acc0 = 0.0f;
    for (tf_index s = ty; ok && s < (tf_index)p.split; s += 8) {
      total_acc0 = tf_sum_op()(total_acc0, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i));
    }
    smem_acc0[ty][tx] = total_acc0;
    __syncthreads();
    total_acc0 = smem_acc0[0][tx];
    for (int y = 1; y < 8; ++y) total_acc0 = tf_sum_op()(total_acc0, smem_acc0[y][tx]);
    if (threadIdx.x == 0 && tf_count_arrival(tile_counter) == (unsigned)p.split * 2u - 1u) *tile_counter = 0u;
    float t0 = tf_round_bf16((total_acc0 * (1.0f / (float)((double)p.red))));  // %7 = div(%5, N)
    #pragma unroll
    for (int u = 0; u < 8; ++u) {
      const tf_index r = r0 + ty + (tf_index)u * 8;
      if (ok && r < r1) {
        float x1 = c0[u];  // %0
        float t1 = (x1 - t0);  // %8 = sub(%0, %7)
        out0[(o * (tf_index)p.red + r) * (tf_index)p.inner + i] = tf_float_to_bf16(t1);
      }
    }
    __syncthreads();
  }
}
// ==== sm_90: the same kernels as sm_80
