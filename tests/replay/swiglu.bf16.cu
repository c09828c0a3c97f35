// torchfuse replay corpus (tests/test_replay.cpp): swiglu, bf16
// inputs: [8192, 8192] strides [8192, 1], [8192, 8192] strides [8192, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_silu_mul_03f653a0 (silu -> mul)
// <prelude.cu>

// torchfuse fusion group 0 (pointwise): silu -> mul
// coalesced domain rank 1; vector width 8; 32-bit indices
// in0 = %0 bf16, linear
// in1 = %1 bf16, linear
// out0 = %3 bf16, contiguous
typedef int tf_index;

struct tf_silu_mul_03f653a0_params {
  long long numel;
  long long vec_ok;  // 1 when every vector access is aligned and rows hold whole vectors
  long long size[1];
  unsigned long long size_div[1];  // tf_fast_div of each size
  const tf_bf16* in0;
  const tf_bf16* in1;
  tf_bf16* out0;
};

__device__ __forceinline__ void tf_silu_mul_03f653a0_compute(float in0, float in1, float& out0) {
  float t0 = tf_silu_fast(in0);  // %2 = silu(%0)
  float t1 = (t0 * in1);  // %3 = mul(%2, %1)
  out0 = t1;
}

extern "C" __global__ void __launch_bounds__(256) tf_silu_mul_03f653a0(const tf_silu_mul_03f653a0_params p) {
  tf_grid_dependency();
  const tf_bf16* __restrict__ in0 = p.in0;
  const tf_bf16* __restrict__ in1 = p.in1;
  tf_bf16* __restrict__ out0 = p.out0;
  const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;
  const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;
  if (p.vec_ok) {
    const tf_index nvec = (tf_index)(p.numel / 8);
    for (tf_index v = first; v < nvec; v += step) {
      const tf_index i = v * 8;
      const tf_vec<tf_bf16, 8> v0 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + i);
      const tf_vec<tf_bf16, 8> v1 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in1 + i);
      float r0[8];
      #pragma unroll
      for (int lane = 0; lane < 8; ++lane) {
        tf_silu_mul_03f653a0_compute(tf_to_float(v0.v[lane]), tf_to_float(v1.v[lane]), r0[lane]);
      }
      const tf_vec<tf_bf16, 8> o0 = tf_pack<tf_bf16>(r0);
      *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + i) = o0;
    }
    return;
  }
  for (tf_index i = first; i < (tf_index)p.numel; i += step) {
    float r0;
    tf_silu_mul_03f653a0_compute(tf_to_float(in0[i]), tf_to_float(in1[i]), r0);
    out0[i] = tf_float_to_bf16(r0);
  }
}
// ==== sm_90: the same kernels as sm_80
