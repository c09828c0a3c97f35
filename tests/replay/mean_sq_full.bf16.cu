// torchfuse replay corpus (tests/test_replay.cpp): mean_sq_full, bf16
// inputs: [8192, 8192] strides [8192, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_mean_bcd64d9a (mul -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (full reduction): mul -> reduce_sum -> div
// blocks reduce grid-strided slices to partials; the last block to finish adds them in block order (one block: finished in place)
typedef int tf_index;

struct tf_mean_bcd64d9a_params {
  long long numel;
  long long vec_ok;
  long long size[1];
  const tf_bf16* in0;
  tf_bf16* out0;
  float* part_acc0;  // partial results
  unsigned int* counters;  // finished blocks per split reduction (zero between launches)
};

extern "C" __global__ void __launch_bounds__(512) tf_mean_bcd64d9a(const tf_mean_bcd64d9a_params p) {
  tf_grid_dependency();
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
  float acc0 = 0.0f;
  const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;
  const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;
  if (p.vec_ok) {
    for (tf_index vb = (tf_index)blockIdx.x * (tf_index)blockDim.x * 2 + (tf_index)threadIdx.x; vb < (tf_index)(p.numel / 8); vb += step * 2) {
      tf_vec<tf_bf16, 8> v0[2];
      #pragma unroll
      for (int u = 0; u < 2; ++u) {
        const tf_index v = vb + (tf_index)u * (tf_index)blockDim.x;
        if (v >= (tf_index)(p.numel / 8)) break;
        const tf_index i0 = v * 8;
        v0[u] = tf_load_once(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + i0));
      }
      #pragma unroll
      for (int u = 0; u < 2; ++u) {
        const tf_index v = vb + (tf_index)u * (tf_index)blockDim.x;
        if (v >= (tf_index)(p.numel / 8)) break;
        const tf_index i0 = v * 8;
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index i = i0 + lane;
          (void)i;
          float x0 = tf_to_float(v0[u].v[lane]);  // %0
          float t0 = (x0 * x0);  // %2 = mul(%0, %0)
          acc0 = tf_sum_op()(acc0, t0);  // reduce_sum -> %3
        }
      }
    }
  }
  else {
    for (tf_index i = first; i < (tf_index)p.numel; i += step) {
      float x1 = tf_to_float(in0[i]);  // %0
      float t1 = (x1 * x1);  // %2 = mul(%0, %0)
      acc0 = tf_sum_op()(acc0, t1);  // reduce_sum -> %3
    }
  }
  __shared__ float smem_acc0[16];
  const float red0 = tf_block_reduce<16>(acc0, tf_sum_op(), smem_acc0);
  if (gridDim.x == 1) {
    float t2 = tf_round_bf16((red0 * (1.0f / (float)((double)p.numel))));  // %5 = div(%3, N)
    if (threadIdx.x == 0) out0[0] = tf_float_to_bf16(t2);
    return;
  }
  if (threadIdx.x == 0) p.part_acc0[blockIdx.x] = red0;
  __shared__ bool tf_last;
  __syncthreads();
  if (threadIdx.x == 0) tf_last = tf_count_arrival(p.counters) == gridDim.x - 1u;
  __syncthreads();
  if (!tf_last) return;
  if (threadIdx.x == 0) *(p.counters) = 0u;
  float acc0_all = 0.0f;
  #pragma unroll 4
  for (unsigned q = threadIdx.x; q < gridDim.x; q += blockDim.x) acc0_all = tf_sum_op()(acc0_all, __ldcg(p.part_acc0 + q));
  __shared__ float smem_acc0_all[16];
  const float red0_all = tf_block_reduce<16>(acc0_all, tf_sum_op(), smem_acc0_all);
  float t3 = tf_round_bf16((red0_all * (1.0f / (float)((double)p.numel))));  // %5 = div(%3, N)
  if (threadIdx.x == 0) out0[0] = tf_float_to_bf16(t3);
}
// ==== sm_90: the same kernels as sm_80
