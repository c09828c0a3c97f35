// torchfuse replay corpus (tests/test_replay.cpp): column_softmax_vectors, bf16
// inputs: [16384, 768] strides [768, 1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_softmax_75b9afe1 (mul -> reduce_max -> sub -> exp -> reduce_sum -> div)
// <prelude.cu>

// torchfuse fusion group 0 (column reduction, 3 passes): mul -> reduce_max -> sub -> exp -> reduce_sum -> div
// 32 x 8 columns (8 a thread) along the kept inner dims, 8 threads along the reduced dim; the tile's rows split over p.split blocks (blockIdx.y) that exchange each pass's partials at a barrier;
// compiled with --fmad=false: every pass computes the element values the same way
typedef int tf_index;

struct tf_softmax_75b9afe1_params {
  long long outer, red, inner;  // O, R, I: the domain is [O, R, I]
  long long split;
  long long outer_size[1];
  long long red_size[1];
  long long inner_size[1];
  const tf_bf16* in0;
  long long in0_outer_stride[1];
  long long in0_red_stride[1];
  long long in0_inner_stride[1];
  tf_bf16* out0;
  float* part_acc0;  // partial results
  float* part_acc1;  // partial results
  unsigned int* counters;  // finished blocks per split reduction (zero between launches)
};

// Waits until the tile's counter holds `target` arrivals, this block's included.
__device__ __forceinline__ void tf_softmax_75b9afe1_tile_barrier(unsigned* counter, unsigned target) {
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

extern "C" __global__ void __launch_bounds__(256, 4) tf_softmax_75b9afe1(const tf_softmax_75b9afe1_params p) {
  const tf_bf16* __restrict__ in0 = p.in0;
  tf_bf16* __restrict__ out0 = p.out0;
  const int tx = threadIdx.x & 31;
  const int ty = threadIdx.x >> 5;
  const tf_index tiles = ((tf_index)p.inner + 255) / 256;
  const tf_index o = (tf_index)blockIdx.x / tiles;
  const tf_index i = ((tf_index)blockIdx.x % tiles) * 256 + tx * 8;
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
  float acc0[8];
  #pragma unroll
  for (int lane = 0; lane < 8; ++lane) acc0[lane] = __int_as_float(0xff800000);
  for (tf_index rb = r0 + ty; ok && rb < r1; rb += 32) {
    tf_vec<tf_bf16, 8> c0[4];
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = min(rb + (tf_index)u * 8, r1 - 1);
      tf_index rrem = r;
      const tf_index rc0 = rrem;
      const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
      c0[u] = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ooff0 + ioff0 + roff0);
    }
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = rb + (tf_index)u * 8;
      if (r < r1) {
        /* column i + 0 */ {
          const int lane = 0;
          float x0 = tf_to_float(c0[u].v[lane]);  // %0
          float t0 = tf_round_bf16(__fmul_rn(x0, 0.5f));  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t0);  // reduce_max -> %5
        }
        /* column i + 1 */ {
          const int lane = 1;
          float x1 = tf_to_float(c0[u].v[lane]);  // %0
          float t1 = tf_round_bf16(__fmul_rn(x1, 0.5f));  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t1);  // reduce_max -> %5
        }
        /* column i + 2 */ {
          const int lane = 2;
          float x2 = tf_to_float(c0[u].v[lane]);  // %0
          float t2 = tf_round_bf16(__fmul_rn(x2, 0.5f));  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t2);  // reduce_max -> %5
        }
        /* column i + 3 */ {
          const int lane = 3;
          float x3 = tf_to_float(c0[u].v[lane]);  // %0
          float t3 = tf_round_bf16(__fmul_rn(x3, 0.5f));  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t3);  // reduce_max -> %5
        }
        /* column i + 4 */ {
          const int lane = 4;
          float x4 = tf_to_float(c0[u].v[lane]);  // %0
          float t4 = tf_round_bf16(__fmul_rn(x4, 0.5f));  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t4);  // reduce_max -> %5
        }
        /* column i + 5 */ {
          const int lane = 5;
          float x5 = tf_to_float(c0[u].v[lane]);  // %0
          float t5 = tf_round_bf16(__fmul_rn(x5, 0.5f));  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t5);  // reduce_max -> %5
        }
        /* column i + 6 */ {
          const int lane = 6;
          float x6 = tf_to_float(c0[u].v[lane]);  // %0
          float t6 = tf_round_bf16(__fmul_rn(x6, 0.5f));  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t6);  // reduce_max -> %5
        }
        /* column i + 7 */ {
          const int lane = 7;
          float x7 = tf_to_float(c0[u].v[lane]);  // %0
          float t7 = tf_round_bf16(__fmul_rn(x7, 0.5f));  // %4 = mul(%0, 0.5)
          acc0[lane] = tf_max_op()(acc0[lane], t7);  // reduce_max -> %5
        }
      }
    }
  }
  __shared__ float smem_acc0[8][256];
  smem_acc0[ty][tx * 8 + 0] = acc0[0];
  smem_acc0[ty][tx * 8 + 1] = acc0[1];
  smem_acc0[ty][tx * 8 + 2] = acc0[2];
  smem_acc0[ty][tx * 8 + 3] = acc0[3];
  smem_acc0[ty][tx * 8 + 4] = acc0[4];
  smem_acc0[ty][tx * 8 + 5] = acc0[5];
  smem_acc0[ty][tx * 8 + 6] = acc0[6];
  smem_acc0[ty][tx * 8 + 7] = acc0[7];
  __syncthreads();
  float total_acc0_l0 = smem_acc0[0][tx * 8 + 0];
  for (int y = 1; y < 8; ++y) total_acc0_l0 = tf_max_op()(total_acc0_l0, smem_acc0[y][tx * 8 + 0]);
  float total_acc0_l1 = smem_acc0[0][tx * 8 + 1];
  for (int y = 1; y < 8; ++y) total_acc0_l1 = tf_max_op()(total_acc0_l1, smem_acc0[y][tx * 8 + 1]);
  float total_acc0_l2 = smem_acc0[0][tx * 8 + 2];
  for (int y = 1; y < 8; ++y) total_acc0_l2 = tf_max_op()(total_acc0_l2, smem_acc0[y][tx * 8 + 2]);
  float total_acc0_l3 = smem_acc0[0][tx * 8 + 3];
  for (int y = 1; y < 8; ++y) total_acc0_l3 = tf_max_op()(total_acc0_l3, smem_acc0[y][tx * 8 + 3]);
  float total_acc0_l4 = smem_acc0[0][tx * 8 + 4];
  for (int y = 1; y < 8; ++y) total_acc0_l4 = tf_max_op()(total_acc0_l4, smem_acc0[y][tx * 8 + 4]);
  float total_acc0_l5 = smem_acc0[0][tx * 8 + 5];
  for (int y = 1; y < 8; ++y) total_acc0_l5 = tf_max_op()(total_acc0_l5, smem_acc0[y][tx * 8 + 5]);
  float total_acc0_l6 = smem_acc0[0][tx * 8 + 6];
  for (int y = 1; y < 8; ++y) total_acc0_l6 = tf_max_op()(total_acc0_l6, smem_acc0[y][tx * 8 + 6]);
  float total_acc0_l7 = smem_acc0[0][tx * 8 + 7];
  for (int y = 1; y < 8; ++y) total_acc0_l7 = tf_max_op()(total_acc0_l7, smem_acc0[y][tx * 8 + 7]);
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 0] = total_acc0_l0;
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 1] = total_acc0_l1;
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 2] = total_acc0_l2;
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 3] = total_acc0_l3;
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 4] = total_acc0_l4;
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 5] = total_acc0_l5;
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 6] = total_acc0_l6;
  if (ty == 0 && ok) p.part_acc0[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 7] = total_acc0_l7;
  tf_softmax_75b9afe1_tile_barrier(tile_counter, (unsigned)p.split * 1u);
  total_acc0_l0 = __int_as_float(0xff800000);
  total_acc0_l1 = __int_as_float(0xff800000);
  total_acc0_l2 = __int_as_float(0xff800000);
  total_acc0_l3 = __int_as_float(0xff800000);
  total_acc0_l4 = __int_as_float(0xff800000);
  total_acc0_l5 = __int_as_float(0xff800000);
  total_acc0_l6 = __int_as_float(0xff800000);
  total_acc0_l7 = __int_as_float(0xff800000);
  for (tf_index s = ty; ok && s < (tf_index)p.split; s += 8) {
    total_acc0_l0 = tf_max_op()(total_acc0_l0, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 0));
    total_acc0_l1 = tf_max_op()(total_acc0_l1, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 1));
    total_acc0_l2 = tf_max_op()(total_acc0_l2, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 2));
    total_acc0_l3 = tf_max_op()(total_acc0_l3, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 3));
    total_acc0_l4 = tf_max_op()(total_acc0_l4, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 4));
    total_acc0_l5 = tf_max_op()(total_acc0_l5, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 5));
    total_acc0_l6 = tf_max_op()(total_acc0_l6, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 6));
    total_acc0_l7 = tf_max_op()(total_acc0_l7, __ldcg(p.part_acc0 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 7));
  }
  smem_acc0[ty][tx * 8 + 0] = total_acc0_l0;
  smem_acc0[ty][tx * 8 + 1] = total_acc0_l1;
  smem_acc0[ty][tx * 8 + 2] = total_acc0_l2;
  smem_acc0[ty][tx * 8 + 3] = total_acc0_l3;
  smem_acc0[ty][tx * 8 + 4] = total_acc0_l4;
  smem_acc0[ty][tx * 8 + 5] = total_acc0_l5;
  smem_acc0[ty][tx * 8 + 6] = total_acc0_l6;
  smem_acc0[ty][tx * 8 + 7] = total_acc0_l7;
  __syncthreads();
  total_acc0_l0 = smem_acc0[0][tx * 8 + 0];
  for (int y = 1; y < 8; ++y) total_acc0_l0 = tf_max_op()(total_acc0_l0, smem_acc0[y][tx * 8 + 0]);
  total_acc0_l1 = smem_acc0[0][tx * 8 + 1];
  for (int y = 1; y < 8; ++y) total_acc0_l1 = tf_max_op()(total_acc0_l1, smem_acc0[y][tx * 8 + 1]);
  total_acc0_l2 = smem_acc0[0][tx * 8 + 2];
  for (int y = 1; y < 8; ++y) total_acc0_l2 = tf_max_op()(total_acc0_l2, smem_acc0[y][tx * 8 + 2]);
  total_acc0_l3 = smem_acc0[0][tx * 8 + 3];
  for (int y = 1; y < 8; ++y) total_acc0_l3 = tf_max_op()(total_acc0_l3, smem_acc0[y][tx * 8 + 3]);
  total_acc0_l4 = smem_acc0[0][tx * 8 + 4];
  for (int y = 1; y < 8; ++y) total_acc0_l4 = tf_max_op()(total_acc0_l4, smem_acc0[y][tx * 8 + 4]);
  total_acc0_l5 = smem_acc0[0][tx * 8 + 5];
  for (int y = 1; y < 8; ++y) total_acc0_l5 = tf_max_op()(total_acc0_l5, smem_acc0[y][tx * 8 + 5]);
  total_acc0_l6 = smem_acc0[0][tx * 8 + 6];
  for (int y = 1; y < 8; ++y) total_acc0_l6 = tf_max_op()(total_acc0_l6, smem_acc0[y][tx * 8 + 6]);
  total_acc0_l7 = smem_acc0[0][tx * 8 + 7];
  for (int y = 1; y < 8; ++y) total_acc0_l7 = tf_max_op()(total_acc0_l7, smem_acc0[y][tx * 8 + 7]);
  float acc1[8];
  #pragma unroll
  for (int lane = 0; lane < 8; ++lane) acc1[lane] = 0.0f;
  for (tf_index rb = r1 - 1 - ty; ok && rb >= r0; rb -= 32) {
    tf_vec<tf_bf16, 8> c0[4];
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = max(rb - (tf_index)u * 8, r0);
      tf_index rrem = r;
      const tf_index rc0 = rrem;
      const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
      c0[u] = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ooff0 + ioff0 + roff0);
    }
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = rb - (tf_index)u * 8;
      if (r >= r0) {
        /* column i + 0 */ {
          const int lane = 0;
          float x8 = tf_to_float(c0[u].v[lane]);  // %0
          float t8 = tf_round_bf16(__fmul_rn(x8, 0.5f));  // %4 = mul(%0, 0.5)
          float t9 = (t8 - total_acc0_l0);  // %6 = sub(%4, %5)
          float t10 = tf_exp_shifted(t9);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], t10);  // reduce_sum -> %8
        }
        /* column i + 1 */ {
          const int lane = 1;
          float x9 = tf_to_float(c0[u].v[lane]);  // %0
          float t11 = tf_round_bf16(__fmul_rn(x9, 0.5f));  // %4 = mul(%0, 0.5)
          float t12 = (t11 - total_acc0_l1);  // %6 = sub(%4, %5)
          float t13 = tf_exp_shifted(t12);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], t13);  // reduce_sum -> %8
        }
        /* column i + 2 */ {
          const int lane = 2;
          float x10 = tf_to_float(c0[u].v[lane]);  // %0
          float t14 = tf_round_bf16(__fmul_rn(x10, 0.5f));  // %4 = mul(%0, 0.5)
          float t15 = (t14 - total_acc0_l2);  // %6 = sub(%4, %5)
          float t16 = tf_exp_shifted(t15);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], t16);  // reduce_sum -> %8
        }
        /* column i + 3 */ {
          const int lane = 3;
          float x11 = tf_to_float(c0[u].v[lane]);  // %0
          float t17 = tf_round_bf16(__fmul_rn(x11, 0.5f));  // %4 = mul(%0, 0.5)
          float t18 = (t17 - total_acc0_l3);  // %6 = sub(%4, %5)
          float t19 = tf_exp_shifted(t18);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], t19);  // reduce_sum -> %8
        }
        /* column i + 4 */ {
          const int lane = 4;
          float x12 = tf_to_float(c0[u].v[lane]);  // %0
          float t20 = tf_round_bf16(__fmul_rn(x12, 0.5f));  // %4 = mul(%0, 0.5)
          float t21 = (t20 - total_acc0_l4);  // %6 = sub(%4, %5)
          float t22 = tf_exp_shifted(t21);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], t22);  // reduce_sum -> %8
        }
        /* column i + 5 */ {
          const int lane = 5;
          float x13 = tf_to_float(c0[u].v[lane]);  // %0
          float t23 = tf_round_bf16(__fmul_rn(x13, 0.5f));  // %4 = mul(%0, 0.5)
          float t24 = (t23 - total_acc0_l5);  // %6 = sub(%4, %5)
          float t25 = tf_exp_shifted(t24);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], t25);  // reduce_sum -> %8
        }
        /* column i + 6 */ {
          const int lane = 6;
          float x14 = tf_to_float(c0[u].v[lane]);  // %0
          float t26 = tf_round_bf16(__fmul_rn(x14, 0.5f));  // %4 = mul(%0, 0.5)
          float t27 = (t26 - total_acc0_l6);  // %6 = sub(%4, %5)
          float t28 = tf_exp_shifted(t27);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], t28);  // reduce_sum -> %8
        }
        /* column i + 7 */ {
          const int lane = 7;
          float x15 = tf_to_float(c0[u].v[lane]);  // %0
          float t29 = tf_round_bf16(__fmul_rn(x15, 0.5f));  // %4 = mul(%0, 0.5)
          float t30 = (t29 - total_acc0_l7);  // %6 = sub(%4, %5)
          float t31 = tf_exp_shifted(t30);  // %7 = exp(%6)
          acc1[lane] = tf_sum_op()(acc1[lane], t31);  // reduce_sum -> %8
        }
      }
    }
  }
  __shared__ float smem_acc1[8][256];
  smem_acc1[ty][tx * 8 + 0] = acc1[0];
  smem_acc1[ty][tx * 8 + 1] = acc1[1];
  smem_acc1[ty][tx * 8 + 2] = acc1[2];
  smem_acc1[ty][tx * 8 + 3] = acc1[3];
  smem_acc1[ty][tx * 8 + 4] = acc1[4];
  smem_acc1[ty][tx * 8 + 5] = acc1[5];
  smem_acc1[ty][tx * 8 + 6] = acc1[6];
  smem_acc1[ty][tx * 8 + 7] = acc1[7];
  __syncthreads();
  float total_acc1_l0 = smem_acc1[0][tx * 8 + 0];
  for (int y = 1; y < 8; ++y) total_acc1_l0 = tf_sum_op()(total_acc1_l0, smem_acc1[y][tx * 8 + 0]);
  float total_acc1_l1 = smem_acc1[0][tx * 8 + 1];
  for (int y = 1; y < 8; ++y) total_acc1_l1 = tf_sum_op()(total_acc1_l1, smem_acc1[y][tx * 8 + 1]);
  float total_acc1_l2 = smem_acc1[0][tx * 8 + 2];
  for (int y = 1; y < 8; ++y) total_acc1_l2 = tf_sum_op()(total_acc1_l2, smem_acc1[y][tx * 8 + 2]);
  float total_acc1_l3 = smem_acc1[0][tx * 8 + 3];
  for (int y = 1; y < 8; ++y) total_acc1_l3 = tf_sum_op()(total_acc1_l3, smem_acc1[y][tx * 8 + 3]);
  float total_acc1_l4 = smem_acc1[0][tx * 8 + 4];
  for (int y = 1; y < 8; ++y) total_acc1_l4 = tf_sum_op()(total_acc1_l4, smem_acc1[y][tx * 8 + 4]);
  float total_acc1_l5 = smem_acc1[0][tx * 8 + 5];
  for (int y = 1; y < 8; ++y) total_acc1_l5 = tf_sum_op()(total_acc1_l5, smem_acc1[y][tx * 8 + 5]);
  float total_acc1_l6 = smem_acc1[0][tx * 8 + 6];
  for (int y = 1; y < 8; ++y) total_acc1_l6 = tf_sum_op()(total_acc1_l6, smem_acc1[y][tx * 8 + 6]);
  float total_acc1_l7 = smem_acc1[0][tx * 8 + 7];
  for (int y = 1; y < 8; ++y) total_acc1_l7 = tf_sum_op()(total_acc1_l7, smem_acc1[y][tx * 8 + 7]);
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 0] = total_acc1_l0;
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 1] = total_acc1_l1;
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 2] = total_acc1_l2;
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 3] = total_acc1_l3;
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 4] = total_acc1_l4;
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 5] = total_acc1_l5;
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 6] = total_acc1_l6;
  if (ty == 0 && ok) p.part_acc1[((tf_index)blockIdx.y * (tf_index)p.outer + o) * (tf_index)p.inner + i + 7] = total_acc1_l7;
  tf_softmax_75b9afe1_tile_barrier(tile_counter, (unsigned)p.split * 2u);
  total_acc1_l0 = 0.0f;
  total_acc1_l1 = 0.0f;
  total_acc1_l2 = 0.0f;
  total_acc1_l3 = 0.0f;
  total_acc1_l4 = 0.0f;
  total_acc1_l5 = 0.0f;
  total_acc1_l6 = 0.0f;
  total_acc1_l7 = 0.0f;
  for (tf_index s = ty; ok && s < (tf_index)p.split; s += 8) {
    total_acc1_l0 = tf_sum_op()(total_acc1_l0, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 0));
    total_acc1_l1 = tf_sum_op()(total_acc1_l1, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 1));
    total_acc1_l2 = tf_sum_op()(total_acc1_l2, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 2));
    total_acc1_l3 = tf_sum_op()(total_acc1_l3, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 3));
    total_acc1_l4 = tf_sum_op()(total_acc1_l4, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 4));
    total_acc1_l5 = tf_sum_op()(total_acc1_l5, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 5));
    total_acc1_l6 = tf_sum_op()(total_acc1_l6, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 6));
    total_acc1_l7 = tf_sum_op()(total_acc1_l7, __ldcg(p.part_acc1 + (s * (tf_index)p.outer + o) * (tf_index)p.inner + i + 7));
  }
  smem_acc1[ty][tx * 8 + 0] = total_acc1_l0;
  smem_acc1[ty][tx * 8 + 1] = total_acc1_l1;
  smem_acc1[ty][tx * 8 + 2] = total_acc1_l2;
  smem_acc1[ty][tx * 8 + 3] = total_acc1_l3;
  smem_acc1[ty][tx * 8 + 4] = total_acc1_l4;
  smem_acc1[ty][tx * 8 + 5] = total_acc1_l5;
  smem_acc1[ty][tx * 8 + 6] = total_acc1_l6;
  smem_acc1[ty][tx * 8 + 7] = total_acc1_l7;
  __syncthreads();
  total_acc1_l0 = smem_acc1[0][tx * 8 + 0];
  for (int y = 1; y < 8; ++y) total_acc1_l0 = tf_sum_op()(total_acc1_l0, smem_acc1[y][tx * 8 + 0]);
  total_acc1_l1 = smem_acc1[0][tx * 8 + 1];
  for (int y = 1; y < 8; ++y) total_acc1_l1 = tf_sum_op()(total_acc1_l1, smem_acc1[y][tx * 8 + 1]);
  total_acc1_l2 = smem_acc1[0][tx * 8 + 2];
  for (int y = 1; y < 8; ++y) total_acc1_l2 = tf_sum_op()(total_acc1_l2, smem_acc1[y][tx * 8 + 2]);
  total_acc1_l3 = smem_acc1[0][tx * 8 + 3];
  for (int y = 1; y < 8; ++y) total_acc1_l3 = tf_sum_op()(total_acc1_l3, smem_acc1[y][tx * 8 + 3]);
  total_acc1_l4 = smem_acc1[0][tx * 8 + 4];
  for (int y = 1; y < 8; ++y) total_acc1_l4 = tf_sum_op()(total_acc1_l4, smem_acc1[y][tx * 8 + 4]);
  total_acc1_l5 = smem_acc1[0][tx * 8 + 5];
  for (int y = 1; y < 8; ++y) total_acc1_l5 = tf_sum_op()(total_acc1_l5, smem_acc1[y][tx * 8 + 5]);
  total_acc1_l6 = smem_acc1[0][tx * 8 + 6];
  for (int y = 1; y < 8; ++y) total_acc1_l6 = tf_sum_op()(total_acc1_l6, smem_acc1[y][tx * 8 + 6]);
  total_acc1_l7 = smem_acc1[0][tx * 8 + 7];
  for (int y = 1; y < 8; ++y) total_acc1_l7 = tf_sum_op()(total_acc1_l7, smem_acc1[y][tx * 8 + 7]);
  if (threadIdx.x == 0 && tf_count_arrival(tile_counter) == (unsigned)p.split * 3u - 1u) *tile_counter = 0u;
  for (tf_index rb = r0 + ty; ok && rb < r1; rb += 32) {
    tf_vec<tf_bf16, 8> c0[4];
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = min(rb + (tf_index)u * 8, r1 - 1);
      tf_index rrem = r;
      const tf_index rc0 = rrem;
      const tf_index roff0 = 0 + rc0 * (tf_index)p.in0_red_stride[0];
      c0[u] = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ooff0 + ioff0 + roff0);
    }
    #pragma unroll
    for (int u = 0; u < 4; ++u) {
      const tf_index r = rb + (tf_index)u * 8;
      if (r < r1) {
        tf_vec<tf_bf16, 8> s0;
        /* column i + 0 */ {
          const int lane = 0;
          float x16 = tf_to_float(c0[u].v[lane]);  // %0
          float t32 = tf_round_bf16(__fmul_rn(x16, 0.5f));  // %4 = mul(%0, 0.5)
          float t33 = (t32 - total_acc0_l0);  // %6 = sub(%4, %5)
          float t34 = tf_exp_shifted(t33);  // %7 = exp(%6)
          float t35 = (t34 / total_acc1_l0);  // %9 = div(%7, %8)
          s0.v[lane] = tf_float_to_bf16(t35);
        }
        /* column i + 1 */ {
          const int lane = 1;
          float x17 = tf_to_float(c0[u].v[lane]);  // %0
          float t36 = tf_round_bf16(__fmul_rn(x17, 0.5f));  // %4 = mul(%0, 0.5)
          float t37 = (t36 - total_acc0_l1);  // %6 = sub(%4, %5)
          float t38 = tf_exp_shifted(t37);  // %7 = exp(%6)
          float t39 = (t38 / total_acc1_l1);  // %9 = div(%7, %8)
          s0.v[lane] = tf_float_to_bf16(t39);
        }
        /* column i + 2 */ {
          const int lane = 2;
          float x18 = tf_to_float(c0[u].v[lane]);  // %0
          float t40 = tf_round_bf16(__fmul_rn(x18, 0.5f));  // %4 = mul(%0, 0.5)
          float t41 = (t40 - total_acc0_l2);  // %6 = sub(%4, %5)
          float t42 = tf_exp_shifted(t41);  // %7 = exp(%6)
          float t43 = (t42 / total_acc1_l2);  // %9 = div(%7, %8)
          s0.v[lane] = tf_float_to_bf16(t43);
        }
        /* column i + 3 */ {
          const int lane = 3;
          float x19 = tf_to_float(c0[u].v[lane]);  // %0
          float t44 = tf_round_bf16(__fmul_rn(x19, 0.5f));  // %4 = mul(%0, 0.5)
          float t45 = (t44 - total_acc0_l3);  // %6 = sub(%4, %5)
          float t46 = tf_exp_shifted(t45);  // %7 = exp(%6)
          float t47 = (t46 / total_acc1_l3);  // %9 = div(%7, %8)
          s0.v[lane] = tf_float_to_bf16(t47);
        }
        /* column i + 4 */ {
          const int lane = 4;
          float x20 = tf_to_float(c0[u].v[lane]);  // %0
          float t48 = tf_round_bf16(__fmul_rn(x20, 0.5f));  // %4 = mul(%0, 0.5)
          float t49 = (t48 - total_acc0_l4);  // %6 = sub(%4, %5)
          float t50 = tf_exp_shifted(t49);  // %7 = exp(%6)
          float t51 = (t50 / total_acc1_l4);  // %9 = div(%7, %8)
          s0.v[lane] = tf_float_to_bf16(t51);
        }
        /* column i + 5 */ {
          const int lane = 5;
          float x21 = tf_to_float(c0[u].v[lane]);  // %0
          float t52 = tf_round_bf16(__fmul_rn(x21, 0.5f));  // %4 = mul(%0, 0.5)
          float t53 = (t52 - total_acc0_l5);  // %6 = sub(%4, %5)
          float t54 = tf_exp_shifted(t53);  // %7 = exp(%6)
          float t55 = (t54 / total_acc1_l5);  // %9 = div(%7, %8)
          s0.v[lane] = tf_float_to_bf16(t55);
        }
        /* column i + 6 */ {
          const int lane = 6;
          float x22 = tf_to_float(c0[u].v[lane]);  // %0
          float t56 = tf_round_bf16(__fmul_rn(x22, 0.5f));  // %4 = mul(%0, 0.5)
          float t57 = (t56 - total_acc0_l6);  // %6 = sub(%4, %5)
          float t58 = tf_exp_shifted(t57);  // %7 = exp(%6)
          float t59 = (t58 / total_acc1_l6);  // %9 = div(%7, %8)
          s0.v[lane] = tf_float_to_bf16(t59);
        }
        /* column i + 7 */ {
          const int lane = 7;
          float x23 = tf_to_float(c0[u].v[lane]);  // %0
          float t60 = tf_round_bf16(__fmul_rn(x23, 0.5f));  // %4 = mul(%0, 0.5)
          float t61 = (t60 - total_acc0_l7);  // %6 = sub(%4, %5)
          float t62 = tf_exp_shifted(t61);  // %7 = exp(%6)
          float t63 = (t62 / total_acc1_l7);  // %9 = div(%7, %8)
          s0.v[lane] = tf_float_to_bf16(t63);
        }
        *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + (o * (tf_index)p.red + r) * (tf_index)p.inner + i) = s0;
      }
    }
  }
  __syncthreads();
}
// ==== sm_90: the same kernels as sm_80
