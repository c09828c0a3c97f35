// torchfuse replay corpus (tests/test_replay.cpp): transposed_input, bf16
// inputs: [64, 96] strides [1, 64], [64, 96] strides [96, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_add_relu_mul_bf1919a8 (add -> relu -> mul)
// <prelude.cu>

// torchfuse fusion group 0 (pointwise): add -> relu -> mul
// coalesced domain rank 2; vector width 4; 32-bit indices
// tiled: 64 x 64 tiles of dims 0 and 1; transposed inputs are read along dim 0 into shared memory, outputs written along the innermost dim
// in0 = %0 bf16, strided, tiled
// in1 = %1 bf16, linear
// out0 = %6 bf16, contiguous
typedef int tf_index;

struct tf_add_relu_mul_bf1919a8_params {
  long long numel;
  long long vec_ok;  // 1 when every vector access is aligned and rows hold whole vectors
  long long size[2];
  unsigned long long size_div[2];  // tf_fast_div of each size
  const tf_bf16* in0;
  long long in0_stride[2];
  const tf_bf16* in1;
  tf_bf16* out0;
};

__device__ __forceinline__ void tf_add_relu_mul_bf1919a8_compute(float in0, float in1, float& out0) {
  float t0 = (in0 + in1);  // %4 = add(%0, %1)
  float t1 = (t0 < 0.0f ? 0.0f : t0);  // %5 = relu(%4)
  float t2 = (t1 * 2.0f);  // %6 = mul(%5, 2.0)
  out0 = t2;
}

extern "C" __global__ void __launch_bounds__(256) tf_add_relu_mul_bf1919a8(const tf_add_relu_mul_bf1919a8_params p) {
  tf_grid_dependency();
  const tf_bf16* __restrict__ in0 = p.in0;
  const tf_bf16* __restrict__ in1 = p.in1;
  tf_bf16* __restrict__ out0 = p.out0;
  __shared__ float tile0[64][64 + 1];
  const tf_index st = (tf_index)p.size[0];
  const tf_index sl = (tf_index)p.size[1];
  const tf_index nt = (st + 64 - 1) / 64;
  const tf_index nl = (sl + 64 - 1) / 64;
  const tf_index ntiles = (tf_index)p.numel / (st * sl) * nt * nl;
  const tf_index os1 = 1;
  const tf_index os0 = os1 * (tf_index)p.size[1];
  for (tf_index tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
    tf_index rem = tile;
    const tf_index cl0 = rem % nl * 64;
    rem /= nl;
    const tf_index ct0 = rem % nt * 64;
    rem /= nt;
    const tf_index base = 0;
    const tf_index base0 = 0;
    __syncthreads();  // the previous tile's reads of shared memory are done
    if (p.vec_ok) {
      constexpr int V = 4;
      const int tx = threadIdx.x % 16;
      const int ty = threadIdx.x / 16;
      #pragma unroll
      for (int j0 = 0; j0 < 64; j0 += 16) {
        const int j = j0 + ty;
        const tf_index ct = min(ct0 + tx * V, st - V);
        const tf_index cl = min(cl0 + j, sl - 1);
        const tf_vec<tf_bf16, 4> w0 = *reinterpret_cast<const tf_vec<tf_bf16, 4>*>(in0 + base0 + ct * (tf_index)p.in0_stride[0] + cl * (tf_index)p.in0_stride[1]);
        #pragma unroll
        for (int v = 0; v < V; ++v) tile0[j][tx * V + v] = tf_to_float(w0.v[v]);
      }
      float d1[4][V];
      #pragma unroll
      for (int q = 0; q < 4; ++q) {
        const tf_index ct = min(ct0 + q * 16 + ty, st - 1);
        const tf_index cl = min(cl0 + tx * V, sl - V);
        const tf_vec<tf_bf16, 4> w1 = *reinterpret_cast<const tf_vec<tf_bf16, 4>*>(in1 + base + ct * os0 + cl);
        #pragma unroll
        for (int v = 0; v < V; ++v) d1[q][v] = tf_to_float(w1.v[v]);
      }
      __syncthreads();
      #pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int j = q * 16 + ty;
        const tf_index ct = ct0 + j;
        const tf_index cl = cl0 + tx * V;
        if (ct >= st || cl >= sl) continue;
        const tf_index i = base + ct * os0 + cl;
        float r0[V];
        #pragma unroll
        for (int v = 0; v < V; ++v) tf_add_relu_mul_bf1919a8_compute(tile0[tx * V + v][j], d1[q][v], r0[v]);
        const tf_vec<tf_bf16, 4> o0 = tf_pack<tf_bf16>(r0);
        *reinterpret_cast<tf_vec<tf_bf16, 4>*>(out0 + i) = o0;
      }
    }
    else {
      constexpr int V = 1;
      const int tx = threadIdx.x % 64;
      const int ty = threadIdx.x / 64;
      #pragma unroll
      for (int j0 = 0; j0 < 64; j0 += 4) {
        const int j = j0 + ty;
        const tf_index ct = min(ct0 + tx * V, st - V);
        const tf_index cl = min(cl0 + j, sl - 1);
        tile0[j][tx] = tf_to_float(in0[base0 + ct * (tf_index)p.in0_stride[0] + cl * (tf_index)p.in0_stride[1]]);
      }
      float d1[16][V];
      #pragma unroll
      for (int q = 0; q < 16; ++q) {
        const tf_index ct = min(ct0 + q * 4 + ty, st - 1);
        const tf_index cl = min(cl0 + tx * V, sl - V);
        #pragma unroll
        for (int v = 0; v < V; ++v) d1[q][v] = tf_to_float(in1[base + ct * os0 + cl]);
      }
      __syncthreads();
      #pragma unroll
      for (int q = 0; q < 16; ++q) {
        const int j = q * 4 + ty;
        const tf_index ct = ct0 + j;
        const tf_index cl = cl0 + tx * V;
        if (ct >= st || cl >= sl) continue;
        const tf_index i = base + ct * os0 + cl;
        float r0[V];
        #pragma unroll
        for (int v = 0; v < V; ++v) tf_add_relu_mul_bf1919a8_compute(tile0[tx * V + v][j], d1[q][v], r0[v]);
        out0[i] = tf_float_to_bf16(r0[0]);
      }
    }
  }
}
// ==== sm_90: the same kernels as sm_80
