// torchfuse's own attention kernel: softmax(q @ k^T * scale + mask) @ v in one launch, flash
// attention's schedule (online softmax over blocks of keys, scores and probabilities kept in
// registers) on the tensor cores' mma.sync for 16-bit inputs (sm_80 and later).
//
// Why it exists beside ATen's kernels: inside a CUDA graph cuDNN's attention is a memset and a
// kernel that starts 2.5-4 us late, and flash attention takes no mask; a masked call at a few
// hundred tokens (BERT at batch 1: a 4-5 us kernel) loses as much to the late start as the
// kernel takes. This kernel launches as any generated one does. It is one candidate of the timed
// attention (runtime/attention_backends.h), kept only where it is faster and agrees.
//
// Each warp owns 16 query rows of one (batch, head); keys and values come in blocks of 64 or 32,
// staged in shared memory. The kernel's CUDA source is codegen/attention_body.cuh, written
// against the primitives of codegen/attention_device.cuh (both embedded in the library at build
// time); the CPU tests run the same body on an emulation of those primitives.
#pragma once

#include <c10/core/ScalarType.h>

#include "codegen/kernel.h"

namespace torchfuse {
namespace codegen {

struct AttentionSpec {
  c10::ScalarType dtype = c10::ScalarType::BFloat16;  // query, key, value, mask and output: Half or BFloat16
  int head_dim = 64;                                   // a multiple of 16, at most kAttentionMaxHeadDim
  int warps = 4;                                       // warps a block: 1, 2 or 4
  // 1: the warps take 16 query rows each and share every block of keys. Equal to `warps` (2 or
  // 4): they take the same 16 rows and split the blocks of keys between them, adding their
  // partial results up at the end (more warps at work on few rows); at most
  // attention_max_key_split(head_dim, key_block).
  int key_split = 1;
  int key_block = 64;  // keys staged at a time: 64, or 32 (halves each stage: deeper splits)
  bool mask = false;                                   // an additive mask of `dtype`, read through 4 strides
  bool causal = false;                                 // key position <= query position (top left)
  // 16-byte loads of key and value rows and 4-byte loads and stores of pairs along the head dim
  // (head dims contiguous, other strides multiples of 8 elements, pointers 16-byte aligned).
  bool vector_loads = true;
  // The mask's two neighbouring keys of a thread as one 4-byte load (keys contiguous, the key
  // length and the mask's other strides even, its data 4-byte aligned).
  bool mask_pairs = false;
};

constexpr int kAttentionMaxHeadDim = 128;
constexpr int kAttentionRowsPerWarp = 16;

// The most warps that can split one head dim's keys in blocks of `key_block`: 4, 2 or 1, as the
// stages of keys and values of each warp fit the 48 KB of static shared memory a block has.
int attention_max_key_split(int head_dim, int key_block);

// The kernel; its parameters (all 8-byte words, in order): q, k, v, mask, out pointers; batch,
// heads, kv_heads, query length, key length, query tiles (blocks along the query); q, k, v, mask
// and out strides (4 each, the mask's broadcast to [batch, heads, query, key]); scale (double).
// Grid: query tiles (of 16 x warps / key_split rows) x heads x batch blocks along x, of 32 x warps
// threads.
GeneratedKernel generate_attention(const AttentionSpec& spec);

}  // namespace codegen
}  // namespace torchfuse
