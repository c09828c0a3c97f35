// torchfuse replay corpus (tests/test_replay.cpp): column_max_odd, f32
// inputs: [1000, 77] strides [77, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_amax_f665295c (mul -> reduce_max)
// <prelude.cu>

// torchfuse fusion group 0 (column reduction): mul -> reduce_max
// 16 threads x 1 columns along the kept inner dims, 16 threads along the reduced dim; blocks split the reduced dim, the last block of each tile adds the partials in order
typedef int tf_index;

struct tf_amax_f665295c_params {
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
  unsigned int* counters;  // finished blocks per split reduction (zero between launches)
};

extern "C" __global__ void __launch_bounds__(256, 4) tf_amax_f665295c(const tf_amax_f665295c_params p) {
  tf_grid_dependency();
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  const int tx = threadIdx.x & 15;
  const int ty = threadIdx.x >> 4;
  const tf_index tiles = ((tf_index)p.inner + 15) / 16;
  const tf_index o = (tf_index)blockIdx.x / tiles;
  const tf_index i = ((tf_index)blockIdx.x % tiles) * 16 + tx * 1;
  const bool ok = i < (tf_index)p.inner;
  tf_index orem = o;
  const tf_index ooff0 = 0;
  tf_index irem = ok ? i : 0;
  const tf_index ic0 = irem;
  const tf_index ioff0 = 0 + ic0 * (tf_index)p.in0_inner_stride[0];
  float acc0[1];
  #pragma unroll
  for (int lane = 0; lane < 1; ++lane) acc0[lane] = __int_as_float(0xff800000);
  #pragma unroll 4
  for (tf_index r = (tf_index)blockIdx.y * 16 + ty; ok && r < (tf_index)p.red; r += (tf_index)p.split * 16) {
    tf_index rrem = r;
    const tf_index rc0 = rrem;
    const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
    #pragma unroll
    for (int lane = 0; lane < 1; ++lane) {
      float x0 = in0[ooff0 + ioff0 + roff0];  // %0
      float t0 = (x0 * 3.0f);  // %4 = mul(%0, 3.0)
      acc0[lane] = tf_max_op()(acc0[lane], t0);  // reduce_max -> %5
    }
  }
  __shared__ float smem_acc0[16][16];
  #pragma unroll
  for (int lane = 0; lane < 1; ++lane) smem_acc0[ty][tx * 1 + lane] = acc0[lane];
  __syncthreads();
  if (p.split == 1) {
    if (ty == 0 && ok) {
      #pragma unroll
      for (int lane = 0; lane < 1; ++lane) {
        float total_acc0 = acc0[lane];
        for (int y = 1; y < 16; ++y) total_acc0 = tf_max_op()(total_acc0, smem_acc0[y][tx * 1 + lane]);
        if (true) out0[o * (tf_index)p.inner + i + lane] = total_acc0;
      }
    }
    return;
  }
  if (ty == 0 && ok) {
    #pragma unroll
    for (int lane = 0; lane < 1; ++lane) {
      float total_acc0 = acc0[lane];
      for (int y = 1; y < 16; ++y) total_acc0 = tf_max_op()(total_acc0, smem_acc0[y][tx * 1 + lane]);
      p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + lane] = total_acc0;
    }
  }
  __shared__ bool tf_last;
  __syncthreads();
  if (threadIdx.x == 0) tf_last = tf_count_arrival((p.counters + blockIdx.x)) == (unsigned)p.split - 1u;
  __syncthreads();
  if (!tf_last) return;
  if (threadIdx.x == 0) *((p.counters + blockIdx.x)) = 0u;
  #pragma unroll
  for (int lane = 0; lane < 1; ++lane) acc0[lane] = __int_as_float(0xff800000);
  for (tf_index s0 = ty; ok && s0 < (tf_index)p.split; s0 += 128) {
    float pv_acc0[8][1];
    #pragma unroll
    for (int k = 0; k < 8; ++k) {
      const tf_index s = s0 + (tf_index)k * 16;
      if (s >= (tf_index)p.split) break;
      tf_load_partials(pv_acc0[k], p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i);
    }
    #pragma unroll
    for (int k = 0; k < 8; ++k) {
      const tf_index s = s0 + (tf_index)k * 16;
      if (s >= (tf_index)p.split) break;
      #pragma unroll
      for (int lane = 0; lane < 1; ++lane) acc0[lane] = tf_max_op()(acc0[lane], pv_acc0[k][lane]);
    }
  }
  __syncthreads();
  #pragma unroll
  for (int lane = 0; lane < 1; ++lane) smem_acc0[ty][tx * 1 + lane] = acc0[lane];
  __syncthreads();
  if (ty == 0 && ok) {
    #pragma unroll
    for (int lane = 0; lane < 1; ++lane) {
      float total_acc0 = acc0[lane];
      for (int y = 1; y < 16; ++y) total_acc0 = tf_max_op()(total_acc0, smem_acc0[y][tx * 1 + lane]);
      if (true) out0[o * (tf_index)p.inner + i + lane] = total_acc0;
    }
  }
}
// ==== sm_90: the same kernels as sm_80
