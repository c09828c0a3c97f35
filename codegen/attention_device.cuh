// torchfuse's attention kernel: the device primitives its body (attention_body.cuh) is written
// against, in CUDA's inline PTX for sm_80 and later. The library embeds this file and the body in
// every variant's source (codegen/attention.cpp); the CPU tests compile the same body against an
// emulation of these primitives instead (tests/emulated_warps.h). Fragment layouts are PTX's for
// mma.m16n8k16 (lane = 4 * g + t): A holds rows g and g + 8, columns 2t, 2t + 1 and 2t + 8, 2t + 9;
// B columns g, rows 2t, 2t + 1 and 2t + 8, 2t + 9; C rows g and g + 8, columns 2t, 2t + 1.
// tf_grid_dependency() comes before this file (codegen/cuda_types.h grid_dependency_definition).
typedef unsigned short tf_u16;
typedef unsigned int tf_u32;
#define TF_NEG_INF __int_as_float(0xff800000)
#define TF_ENTRY extern "C" __global__

__device__ __forceinline__ float tf_to_float(tf_u16 x) {
  if constexpr (kHalf) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
    return f;
  } else {
    return __uint_as_float(static_cast<tf_u32>(x) << 16);
  }
}

// Two floats rounded to nearest even, `lo` in the low half (the lower address).
__device__ __forceinline__ tf_u32 tf_pack(float lo, float hi) {
  tf_u32 r;
  if constexpr (kHalf) asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// c += a * b for one 16 x 8 tile, float accumulators (a warp's collective).
__device__ __forceinline__ void tf_mma(float c[4], const tf_u32 a[4], tf_u32 b0, tf_u32 b1) {
  if constexpr (kHalf) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// 16 bytes copied to shared memory without passing through registers (sm_80's cp.async), or
// zeros where !valid (then nothing is read; `src` must still be an address of the operand).
__device__ __forceinline__ void tf_copy16(void* dst, const void* src, bool valid) {
  unsigned shared;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(shared) : "l"(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void tf_copies_commit() { asm volatile("cp.async.commit_group;"); }
template <int kPending>
__device__ __forceinline__ void tf_copies_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending)); }
