// torchfuse replay corpus (tests/test_replay.cpp): swiglu, f32
// inputs: [8192, 8192] strides [8192, 1], [8192, 8192] strides [8192, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_silu_mul_09c92541 (silu -> mul)
// <prelude.cu>

// torchfuse fusion group 0 (pointwise): silu -> mul
// coalesced domain rank 1; vector width 4; 32-bit indices
// in0 = %0 f32, linear
// in1 = %1 f32, linear
// out0 = %3 f32, contiguous
typedef int tf_index;

struct tf_silu_mul_09c92541_params {
  long long numel;
  long long vec_ok;  // 1 when every vector access is aligned and rows hold whole vectors
  long long size[1];
  unsigned long long size_div[1];  // tf_fast_div of each size
  const float* in0;
  const float* in1;
  float* out0;
};

__device__ __forceinline__ void tf_silu_mul_09c92541_compute(float in0, float in1, float& out0) {
  float t0 = tf_silu(in0);  // %2 = silu(%0)
  float t1 = (t0 * in1);  // %3 = mul(%2, %1)
  out0 = t1;
}

extern "C" __global__ void __launch_bounds__(256) tf_silu_mul_09c92541(const tf_silu_mul_09c92541_params p) {
  tf_grid_dependency();
  const float* __restrict__ in0 = p.in0;
  const float* __restrict__ in1 = p.in1;
  float* __restrict__ out0 = p.out0;
  const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;
  const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;
  if (p.vec_ok) {
    const tf_index nvec = (tf_index)(p.numel / 4);
    for (tf_index v = first; v < nvec; v += step) {
      const tf_index i = v * 4;
      const tf_vec<float, 4> v0 = *reinterpret_cast<const tf_vec<float, 4>*>(in0 + i);
      const tf_vec<float, 4> v1 = *reinterpret_cast<const tf_vec<float, 4>*>(in1 + i);
      float r0[4];
      #pragma unroll
      for (int lane = 0; lane < 4; ++lane) {
        tf_silu_mul_09c92541_compute(v0.v[lane], v1.v[lane], r0[lane]);
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
    tf_silu_mul_09c92541_compute(in0[i], in1[i], r0);
    out0[i] = r0;
  }
}
// ==== sm_90: the same kernels as sm_80
