// torchfuse replay corpus (tests/test_replay.cpp): gelu_modes, bf16
// inputs: [64, 768] strides [768, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_gelu_add_93f9c7d5 (gelu -> gelu_tanh -> add)
// <prelude.cu>

// torchfuse fusion group 0 (pointwise): gelu -> gelu_tanh -> add
// coalesced domain rank 1; vector width 8; 32-bit indices
// in0 = %0 bf16, linear
// out0 = %6 bf16, contiguous
typedef int tf_index;

struct tf_gelu_add_93f9c7d5_params {
  long long numel;
  long long vec_ok;  // 1 when every vector access is aligned and rows hold whole vectors
  long long size[1];
  unsigned long long size_div[1];  // tf_fast_div of each size
  const tf_bf16* in0;
  tf_bf16* out0;
};

__device__ __forceinline__ void tf_gelu_add_93f9c7d5_compute(float in0, float& out0) {
  float t0 = tf_gelu_fast_16(in0);  // %4 = gelu(%0)
  float t1 = tf_gelu_tanh_fast(in0);  // %5 = gelu_tanh(%0)
  float t2 = (t0 + t1);  // %6 = add(%4, %5)
  out0 = t2;
}

extern "C" __global__ void __launch_bounds__(256) tf_gelu_add_93f9c7d5(const tf_gelu_add_93f9c7d5_params p) {
  tf_grid_dependency();
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
  const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;
  const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;
  if (p.vec_ok) {
    const tf_index nvec = (tf_index)(p.numel / 8);
    for (tf_index v = first; v < nvec; v += step) {
      const tf_index i = v * 8;
      const tf_vec<tf_bf16, 8> v0 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + i);
      float r0[8];
      #pragma unroll
      for (int lane = 0; lane < 8; ++lane) {
        tf_gelu_add_93f9c7d5_compute(tf_to_float(v0.v[lane]), r0[lane]);
      }
      const tf_vec<tf_bf16, 8> o0 = tf_pack<tf_bf16>(r0);
      *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + i) = o0;
    }
    return;
  }
  for (tf_index i = first; i < (tf_index)p.numel; i += step) {
    float r0;
    tf_gelu_add_93f9c7d5_compute(tf_to_float(in0[i]), r0);
    out0[i] = tf_float_to_bf16(r0);
  }
}
// ==== sm_90: the same kernels as sm_80
