// torchfuse replay corpus (tests/test_replay.cpp): column_softmax_vectors, f32
// inputs: [16384, 768] strides [768, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_softmax_832b2be0 (mul -> reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (column reduction, 3 passes): mul -> reduce_max -> sub -> exp -> reduce_sum -> div
// 32 x 4 columns (4 a thread) along the kept inner dims, 8 threads along the reduced dim; the tile's rows split over p.split blocks (blockIdx.y) that exchange each pass's partials at a barrier;
// compiled with --fmad=false: every pass computes the element values the same way
typedef int tf_index;

struct tf_softmax_832b2be0_params {
  long long outer, red, inner;  // O, R, I: the domain is [O, R, I]
  long long split;
  long long outer_size[1];
  long long red_size[1];
  long long inner_size[1];
  const float* in0;
  long long in0_outer_stride[1];
  long long in0_red_stride[1];
  long long in0_inner_stride[1];
  float* out0;
  float* part_acc0;  // partial results
  double* part_acc1;  // partial results
  unsigned int* counters;  // finished blocks per split reduction (zero between launches)
};

// Waits until the tile's counter holds `target` arrivals, this block's included.
__device__ __forceinline__ void tf_softmax_832b2be0_tile_barrier(unsigned* counter, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    tf_count_arrival(counter);
    unsigned seen;
    unsigned wait = 32;
    for (;;) {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
      if (seen >= target) break;
      __nanosleep(wait);
      if (wait < 512) wait *= 2;
    }
  }
  __syncthreads();
}

extern "C" __global__ void __launch_bounds__(256, 4) tf_softmax_832b2be0(const tf_softmax_832b2be0_params p) {
  const float* __restrict__ in0 = p.in0;
  float* __restrict__ out0 = p.out0;
  const int tx = threadIdx.x & 31;
  const int ty = threadIdx.x >> 5;
  const tf_index tiles = ((tf_index)p.inner + 127) / 128;
  const tf_index o = (tf_index)blockIdx.x / tiles;
  const tf_index i = ((tf_index)blockIdx.x % tiles) * 128 + tx * 4;
  const bool ok = i < (tf_index)p.inner;
  tf_index orem = o;
  const tf_index ooff0 = 0;
  tf_index irem = ok ? i : 0;
  const tf_index ic0 = irem;
  const tf_index ioff0 = 0 + ic0 * (tf_index)p.in0_inner_stride[0];
  const tf_index rows_per_block = ((tf_index)p.red + (tf_index)p.split - 1) / (tf_index)p.split;
  const tf_index r0 = (tf_index)blockIdx.y * rows_per_block;
  const tf_index r1 = min(r0 + rows_per_block, (tf_index)p.red);
  unsigned* const tile_counter = p.counters + blockIdx.x * 32;
  float acc0[4];
  #pragma unroll
  for (int lane = 0; lane < 4; ++lane) acc0[lane] = __int_as_float(0xff800000);
  for (tf_index rb = r0 + ty; ok && rb < r1; rb += 32) {
    tf_vec<float, 4> c0[4];
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = min(rb + (tf_index)u * 8, r1 - 1);
      tf_index rrem = r;
      const tf_index rc0 = rrem;
      const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
      c0[u] = *reinterpret_cast<const tf_vec<float, 4>*>(in0 + ooff0 + ioff0 + roff0);
    }
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = rb + (tf_index)u * 8;
      if (r < r1) {
        /* column i + 0 */ {
          const int lane = 0;
          float x0 = c0[u].v[lane];  // %0
          float t0 = __fmul_rn(x0, 0.5f);  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t0);  // reduce_max -> %5
        }
        /* column i + 1 */ {
          const int lane = 1;
          float x1 = c0[u].v[lane];  // %0
          float t1 = __fmul_rn(x1, 0.5f);  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t1);  // reduce_max -> %5
        }
        /* column i + 2 */ {
          const int lane = 2;
          float x2 = c0[u].v[lane];  // %0
          float t2 = __fmul_rn(x2, 0.5f);  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t2);  // reduce_max -> %5
        }
        /* column i + 3 */ {
          const int lane = 3;
          float x3 = c0[u].v[lane];  // %0
          float t3 = __fmul_rn(x3, 0.5f);  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t3);  // reduce_max -> %5
        }
      }
    }
  }
  __shared__ float smem_acc0[8][128];
  smem_acc0[ty][tx * 4 + 0] = acc0[0];
  smem_acc0[ty][tx * 4 + 1] = acc0[1];
  smem_acc0[ty][tx * 4 + 2] = acc0[2];
  smem_acc0[ty][tx * 4 + 3] = acc0[3];
  __syncthreads();
  float total_acc0_l0 = smem_acc0[0][tx * 4 + 0];
  for (int y = 1; y < 8; ++y) total_acc0_l0 = tf_max_op()(total_acc0_l0, smem_acc0[y][tx * 4 + 0]);
  float total_acc0_l1 = smem_acc0[0][tx * 4 + 1];
  for (int y = 1; y < 8; ++y) total_acc0_l1 = tf_max_op()(total_acc0_l1, smem_acc0[y][tx * 4 + 1]);
  float total_acc0_l2 = smem_acc0[0][tx * 4 + 2];
  for (int y = 1; y < 8; ++y) total_acc0_l2 = tf_max_op()(total_acc0_l2, smem_acc0[y][tx * 4 + 2]);
  float total_acc0_l3 = smem_acc0[0][tx * 4 + 3];
  for (int y = 1; y < 8; ++y) total_acc0_l3 = tf_max_op()(total_acc0_l3, smem_acc0[y][tx * 4 + 3]);
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 0] = total_acc0_l0;
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 1] = total_acc0_l1;
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 2] = total_acc0_l2;
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 3] = total_acc0_l3;
  tf_softmax_832b2be0_tile_barrier(tile_counter, (unsigned)p.split * 1u);
  total_acc0_l0 = __int_as_float(0xff800000);
  total_acc0_l1 = __int_as_float(0xff800000);
  total_acc0_l2 = __int_as_float(0xff800000);
  total_acc0_l3 = __int_as_float(0xff800000);
  for (tf_index s = ty; ok && s < (tf_index)p.split; s += 8) {
    total_acc0_l0 = tf_max_op()(total_acc0_l0, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 0));
    total_acc0_l1 = tf_max_op()(total_acc0_l1, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 1));
    total_acc0_l2 = tf_max_op()(total_acc0_l2, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 2));
    total_acc0_l3 = tf_max_op()(total_acc0_l3, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 3));
  }
  smem_acc0[ty][tx * 4 + 0] = total_acc0_l0;
  smem_acc0[ty][tx * 4 + 1] = total_acc0_l1;
  smem_acc0[ty][tx * 4 + 2] = total_acc0_l2;
  smem_acc0[ty][tx * 4 + 3] = total_acc0_l3;
  __syncthreads();
  total_acc0_l0 = smem_acc0[0][tx * 4 + 0];
  for (int y = 1; y < 8; ++y) total_acc0_l0 = tf_max_op()(total_acc0_l0, smem_acc0[y][tx * 4 + 0]);
  total_acc0_l1 = smem_acc0[0][tx * 4 + 1];
  for (int y = 1; y < 8; ++y) total_acc0_l1 = tf_max_op()(total_acc0_l1, smem_acc0[y][tx * 4 + 1]);
  total_acc0_l2 = smem_acc0[0][tx * 4 + 2];
  for (int y = 1; y < 8; ++y) total_acc0_l2 = tf_max_op()(total_acc0_l2, smem_acc0[y][tx * 4 + 2]);
  total_acc0_l3 = smem_acc0[0][tx * 4 + 3];
  for (int y = 1; y < 8; ++y) total_acc0_l3 = tf_max_op()(total_acc0_l3, smem_acc0[y][tx * 4 + 3]);
  double acc1[4];
  #pragma unroll
  for (int lane = 0; lane < 4; ++lane) acc1[lane] = 0.0;
  for (tf_index rb = r1 - 1 - ty; ok && rb >= r0; rb -= 32) {
    tf_vec<float, 4> c0[4];
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = max(rb - (tf_index)u * 8, r0);
      tf_index rrem = r;
      const tf_index rc0 = rrem;
      const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
      c0[u] = *reinterpret_cast<const tf_vec<float, 4>*>(in0 + ooff0 + ioff0 + roff0);
    }
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = rb - (tf_index)u * 8;
      if (r >= r0) {
        /* column i + 0 */ {
          const int lane = 0;
          float x4 = c0[u].v[lane];  // %0
          float t4 = __fmul_rn(x4, 0.5f);  // %4 = mul(%0, 0.5)
          float t5 = (t4 - total_acc0_l0);  // %6 = sub(%4, %5)
          float t6 = tf_exp_shifted(t5);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], (double)(t6));  // reduce_sum -> %8
        }
        /* column i + 1 */ {
          const int lane = 1;
          float x5 = c0[u].v[lane];  // %0
          float t7 = __fmul_rn(x5, 0.5f);  // %4 = mul(%0, 0.5)
          float t8 = (t7 - total_acc0_l1);  // %6 = sub(%4, %5)
          float t9 = tf_exp_shifted(t8);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], (double)(t9));  // reduce_sum -> %8
        }
        /* column i + 2 */ {
          const int lane = 2;
          float x6 = c0[u].v[lane];  // %0
          float t10 = __fmul_rn(x6, 0.5f);  // %4 = mul(%0, 0.5)
          float t11 = (t10 - total_acc0_l2);  // %6 = sub(%4, %5)
          float t12 = tf_exp_shifted(t11);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], (double)(t12));  // reduce_sum -> %8
        }
        /* column i + 3 */ {
          const int lane = 3;
          float x7 = c0[u].v[lane];  // %0
          float t13 = __fmul_rn(x7, 0.5f);  // %4 = mul(%0, 0.5)
          float t14 = (t13 - total_acc0_l3);  // %6 = sub(%4, %5)
          float t15 = tf_exp_shifted(t14);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], (double)(t15));  // reduce_sum -> %8
        }
      }
    }
  }
  __shared__ double smem_acc1[8][128];
  smem_acc1[ty][tx * 4 + 0] = acc1[0];
  smem_acc1[ty][tx * 4 + 1] = acc1[1];
  smem_acc1[ty][tx * 4 + 2] = acc1[2];
  smem_acc1[ty][tx * 4 + 3] = acc1[3];
  __syncthreads();
  double total_acc1_l0 = smem_acc1[0][tx * 4 + 0];
  for (int y = 1; y < 8; ++y) total_acc1_l0 = tf_sum_op()(total_acc1_l0, smem_acc1[y][tx * 4 + 0]);
  double total_acc1_l1 = smem_acc1[0][tx * 4 + 1];
  for (int y = 1; y < 8; ++y) total_acc1_l1 = tf_sum_op()(total_acc1_l1, smem_acc1[y][tx * 4 + 1]);
  double total_acc1_l2 = smem_acc1[0][tx * 4 + 2];
  for (int y = 1; y < 8; ++y) total_acc1_l2 = tf_sum_op()(total_acc1_l2, smem_acc1[y][tx * 4 + 2]);
  double total_acc1_l3 = smem_acc1[0][tx * 4 + 3];
  for (int y = 1; y < 8; ++y) total_acc1_l3 = tf_sum_op()(total_acc1_l3, smem_acc1[y][tx * 4 + 3]);
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 0] = total_acc1_l0;
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 1] = total_acc1_l1;
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 2] = total_acc1_l2;
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 3] = total_acc1_l3;
  tf_softmax_832b2be0_tile_barrier(tile_counter, (unsigned)p.split * 2u);
  total_acc1_l0 = 0.0;
  total_acc1_l1 = 0.0;
  total_acc1_l2 = 0.0;
  total_acc1_l3 = 0.0;
  for (tf_index s = ty; ok && s < (tf_index)p.split; s += 8) {
    total_acc1_l0 = tf_sum_op()(total_acc1_l0, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 0));
    total_acc1_l1 = tf_sum_op()(total_acc1_l1, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 1));
    total_acc1_l2 = tf_sum_op()(total_acc1_l2, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 2));
    total_acc1_l3 = tf_sum_op()(total_acc1_l3, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 3));
  }
  smem_acc1[ty][tx * 4 + 0] = total_acc1_l0;
  smem_acc1[ty][tx * 4 + 1] = total_acc1_l1;
  smem_acc1[ty][tx * 4 + 2] = total_acc1_l2;
  smem_acc1[ty][tx * 4 + 3] = total_acc1_l3;
  __syncthreads();
  total_acc1_l0 = smem_acc1[0][tx * 4 + 0];
  for (int y = 1; y < 8; ++y) total_acc1_l0 = tf_sum_op()(total_acc1_l0, smem_acc1[y][tx * 4 + 0]);
  total_acc1_l1 = smem_acc1[0][tx * 4 + 1];
  for (int y = 1; y < 8; ++y) total_acc1_l1 = tf_sum_op()(total_acc1_l1, smem_acc1[y][tx * 4 + 1]);
  total_acc1_l2 = smem_acc1[0][tx * 4 + 2];
  for (int y = 1; y < 8; ++y) total_acc1_l2 = tf_sum_op()(total_acc1_l2, smem_acc1[y][tx * 4 + 2]);
  total_acc1_l3 = smem_acc1[0][tx * 4 + 3];
  for (int y = 1; y < 8; ++y) total_acc1_l3 = tf_sum_op()(total_acc1_l3, smem_acc1[y][tx * 4 + 3]);
  if (threadIdx.x == 0 && tf_count_arrival(tile_counter) == (unsigned)p.split * 3u - 1u) *tile_counter = 0u;
  const float total_acc1_l0_out = (float)total_acc1_l0;
  const float total_acc1_l1_out = (float)total_acc1_l1;
  const float total_acc1_l2_out = (float)total_acc1_l2;
  const float total_acc1_l3_out = (float)total_acc1_l3;
  for (tf_index rb = r0 + ty; ok && rb < r1; rb += 32) {
    tf_vec<float, 4> c0[4];
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = min(rb + (tf_index)u * 8, r1 - 1);
      tf_index rrem = r;
      const tf_index rc0 = rrem;
      const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
      c0[u] = *reinterpret_cast<const tf_vec<float, 4>*>(in0 + ooff0 + ioff0 + roff0);
    }
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = rb + (tf_index)u * 8;
      if (r < r1) {
        tf_vec<float, 4> s0;
        /* column i + 0 */ {
          const int lane = 0;
          float x8 = c0[u].v[lane];  // %0
          float t16 = __fmul_rn(x8, 0.5f);  // %4 = mul(%0, 0.5)
          float t17 = (t16 - total_acc0_l0);  // %6 = sub(%4, %5)
          float t18 = tf_exp_shifted(t17);  // %7 = exp(%6)
          float t19 = (t18 / total_acc1_l0_out);  // %9 = div(%7, %8)
          s0.v[lane] = t19;
        }
        /* column i + 1 */ {
          const int lane = 1;
          float x9 = c0[u].v[lane];  // %0
          float t20 = __fmul_rn(x9, 0.5f);  // %4 = mul(%0, 0.5)
          float t21 = (t20 - total_acc0_l1);  // %6 = sub(%4, %5)
          float t22 = tf_exp_shifted(t21);  // %7 = exp(%6)
          float t23 = (t22 / total_acc1_l1_out);  // %9 = div(%7, %8)
          s0.v[lane] = t23;
        }
        /* column i + 2 */ {
          const int lane = 2;
          float x10 = c0[u].v[lane];  // %0
          float t24 = __fmul_rn(x10, 0.5f);  // %4 = mul(%0, 0.5)
          float t25 = (t24 - total_acc0_l2);  // %6 = sub(%4, %5)
          float t26 = tf_exp_shifted(t25);  // %7 = exp(%6)
          float t27 = (t26 / total_acc1_l2_out);  // %9 = div(%7, %8)
          s0.v[lane] = t27;
        }
        /* column i + 3 */ {
          const int lane = 3;
          float x11 = c0[u].v[lane];  // %0
          float t28 = __fmul_rn(x11, 0.5f);  // %4 = mul(%0, 0.5)
          float t29 = (t28 - total_acc0_l3);  // %6 = sub(%4, %5)
          float t30 = tf_exp_shifted(t29);  // %7 = exp(%6)
          float t31 = (t30 / total_acc1_l3_out);  // %9 = div(%7, %8)
          s0.v[lane] = t31;
        }
        *reinterpret_cast<tf_vec<float, 4>*>(out0 + (o * (tf_index)p.red + r) * (tf_index)p.inner + i) = s0;
      }
    }
  }
  __syncthreads();
}
// ==== sm_90: the same kernels as sm_80
