// torchfuse replay corpus (tests/test_replay.cpp): gelu_modes, f32
// inputs: [64, 768] strides [768, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_gelu_add_498704d5 (gelu -> gelu_tanh -> add)
// <prelude.cu>

// torchfuse fusion group 0 (pointwise): gelu -> gelu_tanh -> add
// coalesced domain rank 1; vector width 4; 32-bit indices
// in0 = %0 f32, linear
// out0 = %6 f32, contiguous
typedef int tf_index;

struct tf_gelu_add_498704d5_params {
  long long numel;
  long long vec_ok;  // 1 when every vector access is aligned and rows hold whole vectors
  long long size[1];
  unsigned long long size_div[1];  // tf_fast_div of each size
  const float* in0;
  float* out0;
};

__device__ __forceinline__ void tf_gelu_add_498704d5_compute(float in0, float& out0) {
  float t0 = tf_gelu_fast(in0);  // %4 = gelu(%0)
  float t1 = tf_gelu_tanh_fast(in0);  // %5 = gelu_tanh(%0)
  float t2 = (t0 + t1);  // %6 = add(%4, %5)
  out0 = t2;
}

extern "C" __global__ void __launch_bounds__(256) tf_gelu_add_498704d5(const tf_gelu_add_498704d5_params p) {
  tf_grid_dependency();
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;
  const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;
  if (p.vec_ok) {
    const tf_index nvec = (tf_index)(p.numel / 4);
    for (tf_index v = first; v < nvec; v += step) {
      const tf_index i = v * 4;
      const tf_vec<float, 4> v0 = *reinterpret_cast<const tf_vec<float, 4>*>(in0 + i);
      float r0[4];
      #pragma unroll
      for (int lane = 0; lane < 4; ++lane) {
        tf_gelu_add_498704d5_compute(v0.v[lane], r0[lane]);
      }
      tf_vec<float, 4> o0;
      #pragma unroll
      for (int lane = 0; lane < 4; ++lane) o0.v[lane] = r0[lane];
      *reinterpret_cast<tf_vec<float, 4>*>(out0 + i) = o0;
    }
    return;
  }
  for (tf_index i = first; i < (tf_index)p.numel; i += step) {
    float r0;
    tf_gelu_add_498704d5_compute(in0[i], r0);
    out0[i] = r0;
  }
}
// ==== sm_90: the same kernels as sm_80
