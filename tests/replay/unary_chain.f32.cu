// torchfuse replay corpus (tests/test_replay.cpp): unary_chain, f32
// inputs: [256, 1000] strides [1000, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_sigmoid_tanh_abs_92437d51 (sigmoid -> tanh -> abs -> neg -> exp -> mul -> add -> add -> sqrt -> mul -> add -> rsqrt -> sub -> log1p -> add -> relu -> add -> reciprocal -> mul -> silu -> add -> neg -> pow -> sub)
// <prelude.cu>

// torchfuse fusion group 0 (pointwise): sigmoid -> tanh -> abs -> neg -> exp -> mul -> add -> add -> sqrt -> mul -> add -> rsqrt -> sub -> log1p -> add -> relu -> add -> reciprocal -> mul -> silu -> add -> neg -> pow -> sub
// coalesced domain rank 1; vector width 4; 32-bit indices
// in0 = %0 f32, linear
// out0 = %29 f32, contiguous
typedef int tf_index;

struct tf_sigmoid_tanh_abs_92437d51_params {
  long long numel;
  long long vec_ok;  // 1 when every vector access is aligned and rows hold whole vectors
  long long size[1];
  unsigned long long size_div[1];  // tf_fast_div of each size
  const float* in0;
  float* out0;
};

__device__ __forceinline__ void tf_sigmoid_tanh_abs_92437d51_compute(float in0, float& out0) {
  float t0 = tf_sigmoid(in0);  // %6 = sigmoid(%0)
  float t1 = tanhf(in0);  // %7 = tanh(%0)
  float t2 = fabsf(in0);  // %8 = abs(%0)
  float t3 = (-t2);  // %9 = neg(%8)
  float t4 = expf(t3);  // %10 = exp(%9)
  float t5 = (t1 * t4);  // %11 = mul(%7, %10)
  float t6 = (t0 + t5);  // %12 = add(%6, %11)
  float t7 = (t2 + 1.0f);  // %13 = add(%8, 1.0)
  float t8 = sqrtf(t7);  // %14 = sqrt(%13)
  float t9 = (in0 * in0);  // %15 = mul(%0, %0)
  float t10 = (t9 + 2.0f);  // %16 = add(%15, 2.0)
  float t11 = rsqrtf(t10);  // %17 = rsqrt(%16)
  float t12 = (t8 - t11);  // %18 = sub(%14, %17)
  float t13 = log1pf(t2);  // %19 = log1p(%8)
  float t14 = (t12 + t13);  // %20 = add(%18, %19)
  float t15 = (t6 < 0.0f ? 0.0f : t6);  // %21 = relu(%12)
  float t16 = (t14 + 3.0f);  // %22 = add(%20, 3.0)
  float t17 = (1.0f / t16);  // %23 = reciprocal(%22)
  float t18 = (t15 * t17);  // %24 = mul(%21, %23)
  float t19 = tf_silu(in0);  // %25 = silu(%0)
  float t20 = (t18 + t19);  // %26 = add(%24, %25)
  float t21 = (-in0);  // %27 = neg(%0)
  float t22 = (t21 * t21);  // %28 = pow(%27, 2)
  float t23 = (t20 - t22);  // %29 = sub(%26, %28)
  out0 = t23;
}

extern "C" __global__ void __launch_bounds__(256) tf_sigmoid_tanh_abs_92437d51(const tf_sigmoid_tanh_abs_92437d51_params p) {
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
        tf_sigmoid_tanh_abs_92437d51_compute(v0.v[lane], r0[lane]);
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
    tf_sigmoid_tanh_abs_92437d51_compute(in0[i], r0);
    out0[i] = r0;
  }
}
// ==== sm_90: the same kernels as sm_80
