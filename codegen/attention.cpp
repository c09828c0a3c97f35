#include "codegen/attention.h"

#include <string>

#include "codegen/cuda_types.h"
#include "codegen/embedded_cuda.h"  // generated from codegen/*.cuh at build time (CMakeLists.txt)
#include "codegen/kernel_name.h"
#include "codegen/source_builder.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {
namespace {

std::string flag(bool b) { return b ? "true" : "false"; }

// Static shared memory of a block: each split's stage of keys and values, and the split's row
// maxima and sums.
int shared_bytes(int head_dim, int key_block, int key_split) {
  return key_split * (2 * key_block * (head_dim + 8) * 2 + 2 * kAttentionRowsPerWarp * 4);
}

}  // namespace

int attention_max_key_split(int head_dim, int key_block) {
  constexpr int kStaticSharedBytes = 48 * 1024;
  for (int split : {4, 2})
    if (shared_bytes(head_dim, key_block, split) <= kStaticSharedBytes) return split;
  return 1;
}

GeneratedKernel generate_attention(const AttentionSpec& spec) {
  TORCHFUSE_INTERNAL_ASSERT(spec.dtype == c10::ScalarType::BFloat16 || spec.dtype == c10::ScalarType::Half,
                            "attention kernel for ", spec.dtype);
  TORCHFUSE_INTERNAL_ASSERT(spec.head_dim > 0 && spec.head_dim % 16 == 0 && spec.head_dim <= kAttentionMaxHeadDim,
                            "attention kernel for head dim ", spec.head_dim);
  TORCHFUSE_INTERNAL_ASSERT(spec.warps == 1 || spec.warps == 2 || spec.warps == 4, "attention kernel with ",
                            spec.warps, " warps");
  TORCHFUSE_INTERNAL_ASSERT(spec.key_block == 64 || spec.key_block == 32, "attention kernel with blocks of ",
                            spec.key_block, " keys");
  TORCHFUSE_INTERNAL_ASSERT(spec.key_split == 1 ||
                                (spec.key_split == spec.warps &&
                                 spec.key_split <= attention_max_key_split(spec.head_dim, spec.key_block)),
                            "attention kernel with keys split ", spec.key_split, " ways over ", spec.warps,
                            " warps at head dim ", spec.head_dim, ", blocks of ", spec.key_block);
  TORCHFUSE_INTERNAL_ASSERT(!spec.mask_pairs || spec.mask, "attention kernel with mask pairs and no mask");
  const bool half = spec.dtype == c10::ScalarType::Half;
  SourceBuilder b;
  b.line(std::string("// torchfuse attention: ") + (half ? "f16" : "bf16") + ", head dim " +
         std::to_string(spec.head_dim) + ", " + std::to_string(spec.warps) +
         (spec.key_split > 1 ? " warps splitting the keys of 16 query rows a block"
                             : " warps of 16 query rows a block") +
         ", keys in blocks of " + std::to_string(spec.key_block) +
         (spec.mask ? (spec.mask_pairs ? ", an additive mask read in pairs" : ", an additive mask") : "") +
         (spec.causal ? ", causal" : "") + (spec.vector_loads ? ", vector loads" : ", element loads"));
  b.line("constexpr int kD = " + std::to_string(spec.head_dim) + ";");
  b.line("constexpr int kWarps = " + std::to_string(spec.warps) + ";");
  b.line("constexpr int kSplit = " + std::to_string(spec.key_split) + ";");
  b.line("constexpr int kKeyBlock = " + std::to_string(spec.key_block) + ";");
  b.line("constexpr bool kHalf = " + flag(half) + ";");
  b.line("constexpr bool kMask = " + flag(spec.mask) + ";");
  b.line("constexpr bool kMaskPairs = " + flag(spec.mask_pairs) + ";");
  b.line("constexpr bool kCausal = " + flag(spec.causal) + ";");
  b.line("constexpr bool kVec = " + flag(spec.vector_loads) + ";");
  b.raw(grid_dependency_definition());
  b.raw(kEmbeddedAttentionDevice);
  b.raw(kEmbeddedAttentionBody);
  std::string source = b.str();
  // The body names the entry point and its parameters with the placeholder's spelling.
  return name_kernel(std::move(source), "attention", 32 * spec.warps);
}

}  // namespace codegen
}  // namespace torchfuse
