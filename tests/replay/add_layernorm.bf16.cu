// torchfuse replay corpus (tests/test_replay.cpp): add_layernorm, bf16
// inputs: [16384, 4096] strides [4096, 1], [16384, 4096] strides [4096, 1], [4096] strides [1], [4096] strides [1]
// regenerate with scripts/update_replay.sh
// ==== sm_80: tf_layer_norm_a14664b1 (add -> reduce_sum -> div -> sub -> reduce_sum -> mul -> reduce_sum -> div -> mul -> clamp_max -> sub -> clamp_min -> div -> add -> div -> add -> rsqrt -> sub -> mul -> mul -> add)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): add -> reduce_sum -> div -> sub -> reduce_sum -> mul -> reduce_sum -> div -> mul -> clamp_max -> sub -> clamp_min -> div -> add -> div -> add -> rsqrt -> sub -> mul -> mul -> add
// cached mode: 128 threads per row, block 128, vector width 8, 4 vectors per thread; 3 pass(es) over each row; 32-bit indices
// each block takes 2 row team(s) in turn
// the reductions of a pass share one block round
// in0 = %0 bf16, inner_contiguous
// in1 = %1 bf16, inner_contiguous
// in2 = %2 bf16, inner_contiguous
// in3 = %3 bf16, inner_contiguous
// out0 = %8 bf16, per element
// out1 = %33 bf16, per element
typedef int tf_index;

struct tf_layer_norm_a14664b1_params {
  long long rows;
  long long cols;
  long long outer_size[1];
  unsigned long long outer_div[1];  // tf_fast_div of each outer size
  long long red_size[1];
  const tf_bf16* in0;
  long long in0_outer_stride[1];
  long long in0_red_stride[1];
  const tf_bf16* in1;
  long long in1_outer_stride[1];
  long long in1_red_stride[1];
  const tf_bf16* in2;
  long long in2_outer_stride[1];
  long long in2_red_stride[1];
  const tf_bf16* in3;
  long long in3_outer_stride[1];
  long long in3_red_stride[1];
  tf_bf16* out0;
  tf_bf16* out1;
};

extern "C" __global__ void __launch_bounds__(128) tf_layer_norm_a14664b1(const tf_layer_norm_a14664b1_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 128;
  const int tl = threadIdx.x % 128;
  (void)team;
  __shared__ float smem_acc0[8];
  __shared__ float smem_acc1[8];
  __shared__ float smem_acc2[8];
  const tf_bf16* __restrict__ in0 = p.in0;
  const tf_bf16* __restrict__ in1 = p.in1;
  const tf_bf16* __restrict__ in2 = p.in2;
  const tf_bf16* __restrict__ in3 = p.in3;
  tf_bf16* __restrict__ out0 = p.out0;
  tf_bf16* __restrict__ out1 = p.out1;
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 4;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    const tf_index ro1 = a0 * (tf_index)p.in1_outer_stride[0];
    const tf_index ro2 = a0 * (tf_index)p.in2_outer_stride[0];
    const tf_index ro3 = a0 * (tf_index)p.in3_outer_stride[0];
    float cache4[32];
    tf_vec<tf_bf16, 8> early2[4];
    float acc0 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      /* every chunk holds columns */ {
        const tf_vec<tf_bf16, 8> v0 = tf_load_keep(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in0 + ro0 + j0));
        const tf_vec<tf_bf16, 8> v1 = tf_load_keep(reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in1 + ro1 + j0));
        early2[k] = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in2 + ro2 + j0);  // read by a later pass
        float o0[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = tf_to_float(v0.v[lane]);  // %0
          float x1 = tf_to_float(v1.v[lane]);  // %1
          float t0 = (x0 + x1);  // %8 = add(%0, %1)
          cache4[k * 8 + lane] = t0;
          acc0 = tf_sum_op()(acc0, t0);  // reduce_sum -> %10
          o0[lane] = t0;
        }
        const tf_vec<tf_bf16, 8> s0 = tf_pack<tf_bf16>(o0);
        if (row_ok) *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)4096 + j0) = s0;
      }
    }
    tf_block_publish(acc0, tf_sum_op(), smem_acc0 + red_half);
    __syncthreads();  // one round for %10
    const float red0 = (float)tf_block_collect<4>(tf_sum_op(), smem_acc0 + red_half);  // %10
    float t1 = (red0 * (1.0f / (float)((double)4096)));  // %11 = div(%10, N)
    float acc1 = 0.0f;
    float acc2 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      /* every chunk holds columns */ {
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t2 = (cache4[k * 8 + lane] - t1);  // %12 = sub(%8, %11)
          float t3 = (t2 * t2);  // %14 = mul(%12, %12)
          acc1 = tf_sum_op()(acc1, t2);  // reduce_sum -> %13
          acc2 = tf_sum_op()(acc2, t3);  // reduce_sum -> %15
        }
      }
    }
    tf_block_publish(acc1, tf_sum_op(), smem_acc1 + red_half);
    tf_block_publish(acc2, tf_sum_op(), smem_acc2 + red_half);
    __syncthreads();  // one round for %13, %15
    const float red1 = (float)tf_block_collect<4>(tf_sum_op(), smem_acc1 + red_half);  // %13
    const float red2 = (float)tf_block_collect<4>(tf_sum_op(), smem_acc2 + red_half);  // %15
    float t4 = (red1 * (1.0f / (float)((double)4096)));  // %16 = div(%13, N)
    float t5 = (red1 * t4);  // %17 = mul(%13, %16)
    float t6 = (t5 > 3.4028235e+38f ? 3.4028235e+38f : t5);  // %19 = clamp_max(%17, 3.4028234663852886e+38)
    float t7 = (red2 - t6);  // %20 = sub(%15, %19)
    float t8 = (t7 < 0.0f ? 0.0f : t7);  // %22 = clamp_min(%20, 0.0)
    float t9 = (red1 * (1.0f / (float)((double)4096)));  // %23 = div(%13, N)
    float t10 = (t1 + t9);  // %24 = add(%11, %23)
    float t11 = (t8 * (1.0f / (float)((double)4096)));  // %26 = div(%22, N)
    float t12 = (t11 + 1e-05f);  // %28 = add(%26, 1e-05)
    float t13 = rsqrtf(t12);  // %29 = rsqrt(%28)
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      /* every chunk holds columns */ {
        const tf_vec<tf_bf16, 8> v2 = early2[k];
        const tf_vec<tf_bf16, 8> v3 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in3 + ro3 + j0);
        float o1[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float t14 = (cache4[k * 8 + lane] - t10);  // %30 = sub(%8, %24)
          float t15 = (t14 * t13);  // %31 = mul(%30, %29)
          float x2 = tf_to_float(v2.v[lane]);  // %2
          float t16 = (t15 * x2);  // %32 = mul(%31, %2)
          float x3 = tf_to_float(v3.v[lane]);  // %3
          float t17 = (t16 + x3);  // %33 = add(%32, %3)
          o1[lane] = t17;
        }
        const tf_vec<tf_bf16, 8> s1 = tf_pack<tf_bf16>(o1);
        if (row_ok) *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out1 + row * (tf_index)4096 + j0) = s1;
      }
    }
  }
}
// ==== sm_90: tf_layer_norm_f65d3af2 (add -> reduce_sum -> div -> sub -> reduce_sum -> mul -> reduce_sum -> div -> mul -> clamp_max -> sub -> clamp_min -> div -> add -> div -> add -> rsqrt -> sub -> mul -> mul -> add)
// <prelude.cu>

// torchfuse fusion group 0 (row reduction): add -> reduce_sum -> div -> sub -> reduce_sum -> mul -> reduce_sum -> div -> mul -> clamp_max -> sub -> clamp_min -> div -> add -> div -> add -> rsqrt -> sub -> mul -> mul -> add
// cached mode: 128 threads per row, block 128, vector width 8, 4 vectors per thread (inputs kept as loaded, values recomputed); 3 pass(es) over each row; 32-bit indices
// staged: the inputs read again are copied into shared memory, one bulk copy per row and input; 1 buffer(s), the block's next 0 row group(s) loading while it works on one
// the reductions of a pass share one block round
// in0 = %0 bf16, inner_contiguous
// in1 = %1 bf16, inner_contiguous
// in2 = %2 bf16, inner_contiguous
// in3 = %3 bf16, inner_contiguous
// out0 = %8 bf16, per element
// out1 = %33 bf16, per element
typedef int tf_index;

struct tf_layer_norm_f65d3af2_params {
  long long rows;
  long long cols;
  long long outer_size[1];
  unsigned long long outer_div[1];  // tf_fast_div of each outer size
  long long red_size[1];
  const tf_bf16* in0;
  long long in0_outer_stride[1];
  long long in0_red_stride[1];
  const tf_bf16* in1;
  long long in1_outer_stride[1];
  long long in1_red_stride[1];
  const tf_bf16* in2;
  long long in2_outer_stride[1];
  long long in2_red_stride[1];
  const tf_bf16* in3;
  long long in3_outer_stride[1];
  long long in3_red_stride[1];
  tf_bf16* out0;
  tf_bf16* out1;
};

__device__ __forceinline__ void tf_layer_norm_f65d3af2_stage(const tf_layer_norm_f65d3af2_params& p, tf_index row0, unsigned char* buf, unsigned long long* bar) {
  const unsigned team_bytes = (unsigned)p.cols * 4u;
  const tf_index left = (tf_index)p.rows - row0;
  const int teams = left < 1 ? (int)left : 1;
  tf_mbar_expect_bytes(bar, (unsigned)teams * team_bytes);
  tf_bulk_fence();
  for (int t = 0; t < teams; ++t) {
    tf_index srem = row0 + t;
    const tf_index sa0 = srem;
    const tf_index sro0 = sa0 * (tf_index)p.in0_outer_stride[0];
    const tf_index sro1 = sa0 * (tf_index)p.in1_outer_stride[0];
    const tf_index sro2 = sa0 * (tf_index)p.in2_outer_stride[0];
    const tf_index sro3 = sa0 * (tf_index)p.in3_outer_stride[0];
    tf_bulk_load_keep(buf + (unsigned)t * team_bytes + (unsigned)p.cols * 0u, p.in0 + sro0, (unsigned)p.cols * 2u, bar);
    tf_bulk_load_keep(buf + (unsigned)t * team_bytes + (unsigned)p.cols * 2u, p.in1 + sro1, (unsigned)p.cols * 2u, bar);
  }
}
extern "C" __global__ void __launch_bounds__(128) tf_layer_norm_f65d3af2(const tf_layer_norm_f65d3af2_params p) {
  tf_grid_dependency();
  const int team = threadIdx.x / 128;
  const int tl = threadIdx.x % 128;
  (void)team;
  __shared__ float smem_acc0[8];
  __shared__ float smem_acc1[8];
  __shared__ float smem_acc2[8];
  const tf_bf16* __restrict__ in0 = p.in0;
  const tf_bf16* __restrict__ in1 = p.in1;
  const tf_bf16* __restrict__ in2 = p.in2;
  const tf_bf16* __restrict__ in3 = p.in3;
  tf_bf16* __restrict__ out0 = p.out0;
  tf_bf16* __restrict__ out1 = p.out1;
  __shared__ __align__(8) unsigned long long stage_bar[1];
  extern __shared__ __align__(128) unsigned char stage_smem[];
  const unsigned stage_block_bytes = (unsigned)p.cols * 4u * 1u;
  if (threadIdx.x == 0) {
    tf_mbar_init(&stage_bar[0]);
    tf_mbar_init_fence();
  }
  __syncthreads();
  unsigned stage_it = 0;  // row groups this block has taken
  unsigned row_it = 0;  // row groups this block has taken (shared rounds: the slots' half)
  for (tf_index row0 = (tf_index)blockIdx.x * 1; row0 < (tf_index)p.rows; row0 += (tf_index)gridDim.x * 1, ++row_it) {
    const int red_half = (int)(row_it & 1u) * 4;
    const tf_index row = row0 + team;
    const bool row_ok = row < (tf_index)p.rows;
    const unsigned stage_buf = stage_it % 1u;
    const unsigned stage_next = (stage_it + 0u) % 1u;
    const tf_index stage_row = row0 + (tf_index)0 * (tf_index)gridDim.x * 1;
    if (threadIdx.x == 0 && stage_row < (tf_index)p.rows) tf_layer_norm_f65d3af2_stage(p, stage_row, stage_smem + stage_next * stage_block_bytes, &stage_bar[stage_next]);
    tf_mbar_wait(&stage_bar[stage_buf], (stage_it / 1u) & 1u);
    unsigned char* const stage_team = stage_smem + stage_buf * stage_block_bytes + (unsigned)team * (unsigned)p.cols * 4u;
    const tf_bf16* const stage0 = reinterpret_cast<const tf_bf16*>(stage_team + (unsigned)p.cols * 0u);
    const tf_bf16* const stage1 = reinterpret_cast<const tf_bf16*>(stage_team + (unsigned)p.cols * 2u);
    tf_index rem = row_ok ? row : 0;
    const tf_index a0 = rem;
    const tf_index ro0 = a0 * (tf_index)p.in0_outer_stride[0];
    const tf_index ro1 = a0 * (tf_index)p.in1_outer_stride[0];
    const tf_index ro2 = a0 * (tf_index)p.in2_outer_stride[0];
    const tf_index ro3 = a0 * (tf_index)p.in3_outer_stride[0];
    tf_vec<tf_bf16, 8> early2[4];
    float acc0 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      if (row_ok && j0 < (tf_index)p.cols) {
        const tf_vec<tf_bf16, 8> v0 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage0 + j0);
        const tf_vec<tf_bf16, 8> v1 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage1 + j0);
        early2[k] = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in2 + ro2 + j0);  // read by a later pass
        float o0[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x0 = tf_to_float(v0.v[lane]);  // %0
          float x1 = tf_to_float(v1.v[lane]);  // %1
          float t0 = (x0 + x1);  // %8 = add(%0, %1)
          acc0 = tf_sum_op()(acc0, t0);  // reduce_sum -> %10
          o0[lane] = t0;
        }
        const tf_vec<tf_bf16, 8> s0 = tf_pack<tf_bf16>(o0);
        *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out0 + row * (tf_index)p.cols + j0) = s0;
      }
    }
    tf_block_publish(acc0, tf_sum_op(), smem_acc0 + red_half);
    __syncthreads();  // one round for %10
    const float red0 = (float)tf_block_collect<4>(tf_sum_op(), smem_acc0 + red_half);  // %10
    float t1 = (red0 * (1.0f / (float)((double)p.cols)));  // %11 = div(%10, N)
    float acc1 = 0.0f;
    float acc2 = 0.0f;
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      if (row_ok && j0 < (tf_index)p.cols) {
        const tf_vec<tf_bf16, 8> v0 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage0 + j0);
        const tf_vec<tf_bf16, 8> v1 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage1 + j0);
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x2 = tf_to_float(v0.v[lane]);  // %0
          float x3 = tf_to_float(v1.v[lane]);  // %1
          float t2 = (x2 + x3);  // %8 = add(%0, %1)
          float t3 = (t2 - t1);  // %12 = sub(%8, %11)
          float t4 = (t3 * t3);  // %14 = mul(%12, %12)
          acc1 = tf_sum_op()(acc1, t3);  // reduce_sum -> %13
          acc2 = tf_sum_op()(acc2, t4);  // reduce_sum -> %15
        }
      }
    }
    tf_block_publish(acc1, tf_sum_op(), smem_acc1 + red_half);
    tf_block_publish(acc2, tf_sum_op(), smem_acc2 + red_half);
    __syncthreads();  // one round for %13, %15
    const float red1 = (float)tf_block_collect<4>(tf_sum_op(), smem_acc1 + red_half);  // %13
    const float red2 = (float)tf_block_collect<4>(tf_sum_op(), smem_acc2 + red_half);  // %15
    float t5 = (red1 * (1.0f / (float)((double)p.cols)));  // %16 = div(%13, N)
    float t6 = (red1 * t5);  // %17 = mul(%13, %16)
    float t7 = (t6 > 3.4028235e+38f ? 3.4028235e+38f : t6);  // %19 = clamp_max(%17, 3.4028234663852886e+38)
    float t8 = (red2 - t7);  // %20 = sub(%15, %19)
    float t9 = (t8 < 0.0f ? 0.0f : t8);  // %22 = clamp_min(%20, 0.0)
    float t10 = (red1 * (1.0f / (float)((double)p.cols)));  // %23 = div(%13, N)
    float t11 = (t1 + t10);  // %24 = add(%11, %23)
    float t12 = (t9 * (1.0f / (float)((double)p.cols)));  // %26 = div(%22, N)
    float t13 = (t12 + 1e-05f);  // %28 = add(%26, 1e-05)
    float t14 = rsqrtf(t13);  // %29 = rsqrt(%28)
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
      const tf_index j0 = ((tf_index)k * 128 + tl) * 8;
      if (row_ok && j0 < (tf_index)p.cols) {
        const tf_vec<tf_bf16, 8> v0 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage0 + j0);
        const tf_vec<tf_bf16, 8> v1 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(stage1 + j0);
        const tf_vec<tf_bf16, 8> v2 = early2[k];
        const tf_vec<tf_bf16, 8> v3 = *reinterpret_cast<const tf_vec<tf_bf16, 8>*>(in3 + ro3 + j0);
        float o1[8];
        #pragma unroll
        for (int lane = 0; lane < 8; ++lane) {
          const tf_index j = j0 + lane;
          (void)j;
          float x4 = tf_to_float(v0.v[lane]);  // %0
          float x5 = tf_to_float(v1.v[lane]);  // %1
          float t15 = (x4 + x5);  // %8 = add(%0, %1)
          float t16 = (t15 - t11);  // %30 = sub(%8, %24)
          float t17 = (t16 * t14);  // %31 = mul(%30, %29)
          float x6 = tf_to_float(v2.v[lane]);  // %2
          float t18 = (t17 * x6);  // %32 = mul(%31, %2)
          float x7 = tf_to_float(v3.v[lane]);  // %3
          float t19 = (t18 + x7);  // %33 = add(%32, %3)
          o1[lane] = t19;
        }
        const tf_vec<tf_bf16, 8> s1 = tf_pack<tf_bf16>(o1);
        *reinterpret_cast<tf_vec<tf_bf16, 8>*>(out1 + row * (tf_index)p.cols + j0) = s1;
      }
    }
    __syncthreads();  // this row group's buffer is free again
    ++stage_it;
  }
}
