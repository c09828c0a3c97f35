// torchfuse replay corpus (tests/test_replay.cpp): middle_dim_sum, bf16
// inputs: [8, 512, 64] strides [32768, 64, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_sum_97455678 (relu -> reduce_sum)
// <prelude.cu>

// torchfuse fusion group 0 (column reduction): relu -> reduce_sum
// 16 threads x 8 columns along the kept inner dims, 16 threads along the reduced dim; blocks split the reduced dim, the last block of each tile adds the partials in order
typedef int tf_index;

struct tf_sum_97455678_params {
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

extern "C" __global__ void __launch_bounds__(256, 4) tf_sum_97455678(const tf_sum_97455678_params p) {
  tf_grid_dependency();
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
  const int tx = threadIdx.x & 15;
  const int ty = threadIdx.x >> 4;
  const tf_index tiles = ((tf_index)p.inner + 127) / 128;
  const tf_index o = (tf_index)blockIdx.x / tiles;
  const tf_index i = ((tf_index)blockIdx.x % tiles) * 128 + tx * 8;
  const bool ok = i < (tf_index)p.inner;
  tf_index orem = o;
  const tf_index oc0 = orem;
  const tf_index ooff0 = 0 + oc0 * (tf_index)p.in0_outer_stride[0];
  tf_index irem = ok ? i : 0;
  const tf_index ic0 = irem;
  const tf_index ioff0 = 0 + ic0 * (tf_index)p.in0_inner_stride[0];
  float acc0[8];
  #pragma unroll
  for (int lane = 0; lane < 8; ++lane) acc0[lane] = 0.0f;
  tf_index rb = (tf_index)blockIdx.y * 16 + ty;
  for (; ok && rb + (tf_index)7 * (tf_index)p.split * 16 < (tf_index)p.red; rb += (tf_index)p.split * 128) {
    tf_vec<tf_bf16, 8> v0[8];
    #pragma unroll
    for (int u = 0; u < 8; ++u) {
      const tf_index r = rb + (tf_index)u * (tf_index)p.split * 16;
      tf_index rrem = r;
      const tf_index rc0 = rrem;
      const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
      v0[u] = tf_load_once(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ooff0 + ioff0 + roff0));
    }
    #pragma unroll
    for (int u = 0; u < 8; ++u) {
      const tf_index r = rb + (tf_index)u * (tf_index)p.split * 16;
      tf_index rrem = r;
      const tf_index rc0 = rrem;
      const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
      #pragma unroll
      for (int lane = 0; lane < 8; ++lane) {
        float x0 = tf_to_float(v0[u].v[lane]);  // %0
        float t0 = (x0 < 0.0f ? 0.0f : x0);  // %4 = relu(%0)
        acc0[lane] = tf_sum_op()(acc0[lane], t0);  // reduce_sum -> %5
      }
    }
  }
  for (; ok && rb < (tf_index)p.red; rb += (tf_index)p.split * 128) {
    tf_vec<tf_bf16, 8> v0[8];
    #pragma unroll
    for (int u = 0; u < 8; ++u) {
      const tf_index r = rb + (tf_index)u * (tf_index)p.split * 16;
      if (r >= (tf_index)p.red) break;
      tf_index rrem = r;
      const tf_index rc0 = rrem;
      const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
      v0[u] = tf_load_once(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ooff0 + ioff0 + roff0));
    }
    #pragma unroll
    for (int u = 0; u < 8; ++u) {
      const tf_index r = rb + (tf_index)u * (tf_index)p.split * 16;
      if (r >= (tf_index)p.red) break;
      tf_index rrem = r;
      const tf_index rc0 = rrem;
      const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
      #pragma unroll
      for (int lane = 0; lane < 8; ++lane) {
        float x1 = tf_to_float(v0[u].v[lane]);  // %0
        float t1 = (x1 < 0.0f ? 0.0f : x1);  // %4 = relu(%0)
        acc0[lane] = tf_sum_op()(acc0[lane], t1);  // reduce_sum -> %5
      }
    }
  }
  __shared__ float smem_acc0[16][128];
  #pragma unroll
  for (int lane = 0; lane < 8; ++lane) smem_acc0[ty][tx * 8 + lane] = acc0[lane];
  __syncthreads();
  if (p.split == 1) {
    if (ty == 0 && ok) {
      #pragma unroll
      for (int lane = 0; lane < 8; ++lane) {
        float total_acc0 = acc0[lane];
        for (int y = 1; y < 16; ++y) total_acc0 = tf_sum_op()(total_acc0, smem_acc0[y][tx * 8 + lane]);
        const float total_acc0_out = tf_round_bf16(total_acc0);
        if (true) out0[o * (tf_index)p.inner + i + lane] = tf_float_to_bf16(total_acc0_out);
      }
    }
    return;
  }
  if (ty == 0 && ok) {
    #pragma unroll
    for (int lane = 0; lane < 8; ++lane) {
      float total_acc0 = acc0[lane];
      for (int y = 1; y < 16; ++y) total_acc0 = tf_sum_op()(total_acc0, smem_acc0[y][tx * 8 + lane]);
      const float total_acc0_out = tf_round_bf16(total_acc0);
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
  for (int lane = 0; lane < 8; ++lane) acc0[lane] = 0.0f;
  for (tf_index s0 = ty; ok && s0 < (tf_index)p.split; s0 += 64) {
    float pv_acc0[4][8];
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index s = s0 + (tf_index)k * 16;
      if (s >= (tf_index)p.split) break;
      tf_load_partials(pv_acc0[k], p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i);
    }
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index s = s0 + (tf_index)k * 16;
      if (s >= (tf_index)p.split) break;
      #pragma unroll
      for (int lane = 0; lane < 8; ++lane) acc0[lane] = tf_sum_op()(acc0[lane], pv_acc0[k][lane]);
    }
  }
  __syncthreads();
  #pragma unroll
  for (int lane = 0; lane < 8; ++lane) smem_acc0[ty][tx * 8 + lane] = acc0[lane];
  __syncthreads();
  if (ty == 0 && ok) {
    #pragma unroll
    for (int lane = 0; lane < 8; ++lane) {
      float total_acc0 = acc0[lane];
      for (int y = 1; y < 16; ++y) total_acc0 = tf_sum_op()(total_acc0, smem_acc0[y][tx * 8 + lane]);
      const float total_acc0_out = tf_round_bf16(total_acc0);
      if (true) out0[o * (tf_index)p.inner + i + lane] = tf_float_to_bf16(total_acc0_out);
    }
  }
}
// ==== sm_90: the same kernels as sm_80
