// torchfuse replay corpus (tests/test_replay.cpp): full_max_and_mean, f32
// inputs: [100, 1000] strides [1000, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_amax_ea927735 (abs -> reduce_max)
// <prelude.cu>

// torchfuse fusion group 0 (full reduction): abs -> reduce_max
// blocks reduce grid-strided slices to partials; the last block to finish adds them in block order (one block: finished in place)
typedef int tf_index;

struct tf_amax_ea927735_params {
  long long numel;
  long long vec_ok;
  long long size[1];
  const float* in0;
  float* out0;
  float* part_acc0;  // partial results
  unsigned int* counters;  // finished blocks per split reduction (zero between launches)
};

extern "C" __global__ void __launch_bounds__(512) tf_amax_ea927735(const tf_amax_ea927735_params p) {
  tf_grid_dependency();
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  float acc0 = __int_as_float(0xff800000);
  const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;
  const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;
  if (p.vec_ok) {
    for (tf_index vb = (tf_index)blockIdx.x * (tf_index)blockDim.x * 1 + (tf_index)threadIdx.x; vb < (tf_index)(p.numel / 4); vb += step * 1) {
      tf_vec<float, 4> v0[1];
      #pragma unroll
      for (int u = 0; u < 1; ++u) {
        const tf_index v = vb + (tf_index)u * (tf_index)blockDim.x;
        if (v >= (tf_index)(p.numel / 4)) break;
        const tf_index i0 = v * 4;
        v0[u] = *reinterpret_cast<const tf_vec<float, 4>*>(in0 + i0);
      }
      #pragma unroll
      for (int u = 0; u < 1; ++u) {
        const tf_index v = vb + (tf_index)u * (tf_index)blockDim.x;
        if (v >= (tf_index)(p.numel / 4)) break;
        const tf_index i0 = v * 4;
        #pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
          const tf_index i = i0 + lane;
          (void)i;
          float x0 = v0[u].v[lane];  // %0
          float t0 = fabsf(x0);  // %4 = abs(%0)
          acc0 = tf_max_op()(acc0, t0);  // reduce_max -> %5
        }
      }
    }
  }
  else {
    for (tf_index i = first; i < (tf_index)p.numel; i += step) {
      float x1 = in0[i];  // %0
      float t1 = fabsf(x1);  // %4 = abs(%0)
      acc0 = tf_max_op()(acc0, t1);  // reduce_max -> %5
    }
  }
  __shared__ float smem_acc0[16];
  const float red0 = tf_block_reduce<16>(acc0, tf_max_op(), smem_acc0);
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) out0[0] = red0;
    return;
  }
  if (threadIdx.x == 0) p.part_acc0[blockIdx.x] = red0;
  __shared__ bool tf_last;
  __syncthreads();
  if (threadIdx.x == 0) tf_last = tf_count_arrival(p.counters) == gridDim.x - 1u;
  __syncthreads();
  if (!tf_last) return;
  if (threadIdx.x == 0) *(p.counters) = 0u;
  float acc0_all = __int_as_float(0xff800000);
  #pragma unroll 4
  for (unsigned q = threadIdx.x; q < gridDim.x; q += blockDim.x) acc0_all = tf_max_op()(acc0_all, __ldcg(p.part_acc0 + q));
  __shared__ float smem_acc0_all[16];
  const float red0_all = tf_block_reduce<16>(acc0_all, tf_max_op(), smem_acc0_all);
  if (threadIdx.x == 0) out0[0] = red0_all;
}
// ==== sm_80: tf_mean_bfc491ff (reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 1 (full reduction): reduce_sum -> div
// blocks reduce grid-strided slices to partials; the last block to finish adds them in block order (one block: finished in place)
typedef int tf_index;

struct tf_mean_bfc491ff_params {
  long long numel;
  long long vec_ok;
  long long size[1];
  const float* in0;
  float* out0;
  double* part_acc0;  // partial results
  unsigned int* counters;  // finished blocks per split reduction (zero between launches)
};

extern "C" __global__ void __launch_bounds__(512) tf_mean_bfc491ff(const tf_mean_bfc491ff_params p) {
  tf_grid_dependency();
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  double acc0 = 0.0;
  const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;
  const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;
  if (p.vec_ok) {
    for (tf_index vb = (tf_index)blockIdx.x * (tf_index)blockDim.x * 1 + (tf_index)threadIdx.x; vb < (tf_index)(p.numel / 4); vb += step * 1) {
      tf_vec<float, 4> v0[1];
      #pragma unroll
      for (int u = 0; u < 1; ++u) {
        const tf_index v = vb + (tf_index)u * (tf_index)blockDim.x;
        if (v >= (tf_index)(p.numel / 4)) break;
        const tf_index i0 = v * 4;
        v0[u] = *reinterpret_cast<const tf_vec<float, 4>*>(in0 + i0);
      }
      #pragma unroll
      for (int u = 0; u < 1; ++u) {
        const tf_index v = vb + (tf_index)u * (tf_index)blockDim.x;
        if (v >= (tf_index)(p.numel / 4)) break;
        const tf_index i0 = v * 4;
        #pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
          const tf_index i = i0 + lane;
          (void)i;
          float x0 = v0[u].v[lane];  // %0
          acc0 = tf_sum_op()(acc0, (double)(x0));  // reduce_sum -> %6
        }
      }
    }
  }
  else {
    for (tf_index i = first; i < (tf_index)p.numel; i += step) {
      float x1 = in0[i];  // %0
      acc0 = tf_sum_op()(acc0, (double)(x1));  // reduce_sum -> %6
    }
  }
  __shared__ double smem_acc0[16];
  const double red0 = tf_block_reduce<16>(acc0, tf_sum_op(), smem_acc0);
  const float red0_out = (float)red0;
  if (gridDim.x == 1) {
    float t0 = (red0_out * (1.0f / (float)((double)p.numel)));  // %8 = div(%6, N)
    if (threadIdx.x == 0) out0[0] = t0;
    return;
  }
  if (threadIdx.x == 0) p.part_acc0[blockIdx.x] = red0;
  __shared__ bool tf_last;
  __syncthreads();
  if (threadIdx.x == 0) tf_last = tf_count_arrival(p.counters) == gridDim.x - 1u;
  __syncthreads();
  if (!tf_last) return;
  if (threadIdx.x == 0) *(p.counters) = 0u;
  double acc0_all = 0.0;
  #pragma unroll 4
  for (unsigned q = threadIdx.x; q < gridDim.x; q += blockDim.x) acc0_all = tf_sum_op()(acc0_all, __ldcg(p.part_acc0 + q));
  __shared__ double smem_acc0_all[16];
  const double red0_all = tf_block_reduce<16>(acc0_all, tf_sum_op(), smem_acc0_all);
  const float red0_all_out = (float)red0_all;
  float t1 = (red0_all_out * (1.0f / (float)((double)p.numel)));  // %8 = div(%6, N)
  if (threadIdx.x == 0) out0[0] = t1;
}
// ==== sm_90: the same kernels as sm_80
