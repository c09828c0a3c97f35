// torchfuse replay corpus (tests/test_replay.cpp): full_sum_transposed, f32
// inputs: [768, 1024] strides [1, 768]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_sum_cac8cac9 (mul -> add -> reduce_sum)
// <prelude.cu>

// torchfuse fusion group 0 (full reduction): mul -> add -> reduce_sum
// blocks reduce grid-strided slices to partials; the last block to finish adds them in block order (one block: finished in place)
typedef int tf_index;

struct tf_sum_cac8cac9_params {
  long long numel;
  long long vec_ok;
  long long size[2];
  const float* in0;
  long long in0_stride[2];
  float* out0;
  double* part_acc0;  // partial results
  unsigned int* counters;  // finished blocks per split reduction (zero between launches)
};

extern "C" __global__ void __launch_bounds__(512) tf_sum_cac8cac9(const tf_sum_cac8cac9_params p) {
  tf_grid_dependency();
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  double acc0 = 0.0;
  const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;
  const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;
  for (tf_index i = first; i < (tf_index)p.numel; i += step) {
    tf_index rem = i;
    const tf_index c1 = rem % (tf_index)p.size[1];
    rem /= (tf_index)p.size[1];
    const tf_index c0 = rem;
    const tf_index off0 = c0 * (tf_index)p.in0_stride[0] + c1 * (tf_index)p.in0_stride[1];
    float x0 = in0[off0];  // %0
    float t0 = (x0 * x0);  // %4 = mul(%0, %0)
    float t1 = (t0 + 1.0f);  // %5 = add(%4, 1.0)
    acc0 = tf_sum_op()(acc0, (double)(t1));  // reduce_sum -> %6
  }
  __shared__ double smem_acc0[16];
  const double red0 = tf_block_reduce<16>(acc0, tf_sum_op(), smem_acc0);
  const float red0_out = (float)red0;
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) out0[0] = red0_out;
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
  if (threadIdx.x == 0) out0[0] = red0_all_out;
}
// ==== sm_90: the same kernels as sm_80
