// torchfuse replay corpus (tests/test_replay.cpp): rope_cat, bf16
// inputs: [2, 8, 16, 128] strides [16384, 2048, 128, 1], [16, 128] strides [128, 1], [16, 128] strides [128, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_listunpack_cat_9373a5af (chunk[3, 2, 0, 2] -> chunk[3, 2, 1, 2] -> mul -> neg -> cat_piece[3, 0] -> cat_piece[3, 1] -> cat -> mul -> add)
// <prelude.cu>

// torchfuse fusion group 0 (pointwise): chunk[3, 2, 0, 2] -> chunk[3, 2, 1, 2] -> mul -> neg -> cat_piece[3, 0] -> cat_piece[3, 1] -> cat -> mul -> add
// coalesced domain rank 3; vector width 8; 32-bit indices
// in0 = %0 bf16, linear
// in1 = %0 bf16, linear
// in2 = %0 bf16, linear
// in3 = %1 bf16, inner_contiguous
// in4 = %2 bf16, inner_contiguous
// out0 = %16 bf16, contiguous
typedef int tf_index;

struct tf_listunpack_cat_9373a5af_params {
  long long numel;
  long long vec_ok;  // 1 when every vector access is aligned and rows hold whole vectors
  long long size[3];
  unsigned long long size_div[3];  // tf_fast_div of each size
  const tf_bf16* in0;
  const tf_bf16* in1;
  const tf_bf16* in2;
  const tf_bf16* in3;
  long long in3_stride[3];
  const tf_bf16* in4;
  long long in4_stride[3];
  long long cat0_bound[1];  // where each piece after the first starts
  tf_bf16* out0;
};

__device__ __forceinline__ void tf_listunpack_cat_9373a5af_compute(float in0, float in1, float in2, float in3, float in4, int sel0, float& out0) {
  float t0 = (in2 * in3);  // %9 = mul(%0, %1)
  float t1 = (-in1);  // %10 = neg(%8)
  float t2 = (sel0 == 0 ? t1 : in0);  // %14 = cat(%12, %13)
  float t3 = (t2 * in4);  // %15 = mul(%14, %2)
  float t4 = (t0 + t3);  // %16 = add(%9, %15)
  out0 = t4;
}

extern "C" __global__ void __launch_bounds__(256) tf_listunpack_cat_9373a5af(const tf_listunpack_cat_9373a5af_params p) {
  tf_grid_dependency();
  const tf_bf16* __restrict__ in0 = p.in0;
  const tf_bf16* __restrict__ in1 = p.in1;
  const tf_bf16* __restrict__ in2 = p.in2;
  const tf_bf16* __restrict__ in3 = p.in3;
  const tf_bf16* __restrict__ in4 = p.in4;
  tf_bf16* __restrict__ out0 = p.out0;
  const tf_index step = (tf_index)gridDim.x * (tf_index)blockDim.x;
  const tf_index first = (tf_index)blockIdx.x * (tf_index)blockDim.x + (tf_index)threadIdx.x;
  if (p.vec_ok) {
    const tf_index nvec = (tf_index)(p.numel / 8);
    for (tf_index v = first; v < nvec; v += step) {
      const tf_index i = v * 8;
      tf_index rem = i;
      const tf_index q_c2 = (tf_index)tf_fast_div((unsigned)rem, p.size_div[2]);
      const tf_index c2 = rem - q_c2 * (tf_index)p.size[2];
      rem = q_c2;
      const tf_index q_c1 = (tf_index)tf_fast_div((unsigned)rem, p.size_div[1]);
      const tf_index c1 = rem - q_c1 * (tf_index)p.size[1];
      rem = q_c1;
      const tf_index c0 = rem;
      const tf_index off3 = c0 * (tf_index)p.in3_stride[0] + c1 * (tf_index)p.in3_stride[1] + c2 * (tf_index)p.in3_stride[2];
      const tf_index off4 = c0 * (tf_index)p.in4_stride[0] + c1 * (tf_index)p.in4_stride[1] + c2 * (tf_index)p.in4_stride[2];
      int sel0 = 0;
      if (c2 >= (tf_index)p.cat0_bound[0]) sel0 = 1;
      const tf_vec<tf_bf16, 8> v0 = (sel0 == 1 ? *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + i) : tf_vec<tf_bf16, 8>{});
      const tf_vec<tf_bf16, 8> v1 = (sel0 == 0 ? *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in1 + i) : tf_vec<tf_bf16, 8>{});
      const tf_vec<tf_bf16, 8> v2 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in2 + i);
      const tf_vec<tf_bf16, 8> v3 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in3 + off3);
      const tf_vec<tf_bf16, 8> v4 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in4 + off4);
      float r0[8];
      #pragma unroll
      for (int lane = 0; lane < 8; ++lane) {
        tf_listunpack_cat_9373a5af_compute(tf_to_float(v0.v[lane]), tf_to_float(v1.v[lane]), tf_to_float(v2.v[lane]), tf_to_float(v3.v[lane]), tf_to_float(v4.v[lane]), sel0, r0[lane]);
      }
      const tf_vec<tf_bf16, 8> o0 = tf_pack<tf_bf16>(r0);
      *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + i) = o0;
    }
    return;
  }
  for (tf_index i = first; i < (tf_index)p.numel; i += step) {
    tf_index rem = i;
    const tf_index q_c2 = (tf_index)tf_fast_div((unsigned)rem, p.size_div[2]);
    const tf_index c2 = rem - q_c2 * (tf_index)p.size[2];
    rem = q_c2;
    const tf_index q_c1 = (tf_index)tf_fast_div((unsigned)rem, p.size_div[1]);
    const tf_index c1 = rem - q_c1 * (tf_index)p.size[1];
    rem = q_c1;
    const tf_index c0 = rem;
    const tf_index off3 = c0 * (tf_index)p.in3_stride[0] + c1 * (tf_index)p.in3_stride[1] + c2 * (tf_index)p.in3_stride[2];
    const tf_index off4 = c0 * (tf_index)p.in4_stride[0] + c1 * (tf_index)p.in4_stride[1] + c2 * (tf_index)p.in4_stride[2];
    int sel0 = 0;
    if (c2 >= (tf_index)p.cat0_bound[0]) sel0 = 1;
    float r0;
    tf_listunpack_cat_9373a5af_compute((sel0 == 1 ? tf_to_float(in0[i]) : (float)0), (sel0 == 0 ? tf_to_float(in1[i]) : (float)0), tf_to_float(in2[i]), tf_to_float(in3[off3]), tf_to_float(in4[off4]), sel0, r0);
    out0[i] = tf_float_to_bf16(r0);
  }
}
// ==== sm_90: the same kernels as sm_80
