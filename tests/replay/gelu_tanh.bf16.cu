// torchfuse replay corpus (tests/test_replay.cpp): gelu_tanh, bf16
// inputs: [8192, 8192] strides [8192, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_mul_add_tanh_c3e47aba (mul -> mul -> mul -> mul -> add -> mul -> tanh -> add -> mul)
// <prelude.cu>

// torchfuse fusion group 0 (pointwise): mul -> mul -> mul -> mul -> add -> mul -> tanh -> add -> mul
// coalesced domain rank 1; vector width 8; 32-bit indices
// in0 = %0 bf16, linear
// out0 = %13 bf16, contiguous
typedef int tf_index;

struct tf_mul_add_tanh_c3e47aba_params {
  long long numel;
  long long vec_ok;  // 1 when every vector access is aligned and rows hold whole vectors
  long long size[1];
  unsigned long long size_div[1];  // tf_fast_div of each size
  const tf_bf16* in0;
  tf_bf16* out0;
};

__device__ __forceinline__ void tf_mul_add_tanh_c3e47aba_compute(float in0, float& out0) {
  float t0 = (in0 * 0.5f);  // %5 = mul(%0, 0.5)
  float t1 = (in0 * 0.044715f);  // %6 = mul(%0, 0.044715)
  float t2 = (t1 * in0);  // %7 = mul(%6, %0)
  float t3 = (t2 * in0);  // %8 = mul(%7, %0)
  float t4 = (in0 + t3);  // %9 = add(%0, %8)
  float t5 = (t4 * 0.7978846f);  // %10 = mul(%9, 0.79788456)
  float t6 = tanhf(t5);  // %11 = tanh(%10)
  float t7 = tf_one_plus_tanh(t5);  // %12 = add(%11, 1)
  float t8 = (t0 * t7);  // %13 = mul(%5, %12)
  out0 = t8;
}

extern "C" __global__ void __launch_bounds__(256) tf_mul_add_tanh_c3e47aba(const tf_mul_add_tanh_c3e47aba_params p) {
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
        tf_mul_add_tanh_c3e47aba_compute(tf_to_float(v0.v[lane]), r0[lane]);
      }
      const tf_vec<tf_bf16, 8> o0 = tf_pack<tf_bf16>(r0);
      *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + i) = o0;
    }
    return;
  }
  for (tf_index i = first; i < (tf_index)p.numel; i += step) {
    float r0;
    tf_mul_add_tanh_c3e47aba_compute(tf_to_float(in0[i]), r0);
    out0[i] = tf_float_to_bf16(r0);
  }
}
// ==== sm_90: the same kernels as sm_80
