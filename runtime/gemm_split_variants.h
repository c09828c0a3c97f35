// Split-K variants of cuBLASLt's heuristic algorithms, timed beside them under gemm_autotune.
//
// At a batch-1 layer's shapes (M = 128 or 197 rows) a GEMM has few output tiles for the SMs
// there are: a float32 [128 x 2048] result in 128 x 128 tiles is 16 CTAs on a 132-SM H200.
// Splitting K over more CTAs fills the device at the price of a reduction. The heuristic's own
// list offers a few such algorithms; these variants add the split counts it did not try, each
// checked by cublasLtMatmulAlgoCheck, for runtime/gemm_epilogue_op.cpp to time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cublasLt.h>

#include "runtime/cublaslt_api.h"

namespace torchfuse {
namespace runtime {

// Each split keeps at least this much of K: shallower slices cost more in the reduction than
// they gain in CTAs.
constexpr int64_t kMinSplitDepth = 64;
// Variants are made from this many of the heuristic's unsplit algorithms (its first ones)...
constexpr int kSplitSources = 3;
// ...and at most this many variants in all.
constexpr int kMaxSplitVariants = 21;

// The split counts tried for a GEMM whose inner dim is k: 2, 3, 4, 6, 8, 12 and 16, those that
// leave each split kMinSplitDepth or more of K. Empty for k < 2 * kMinSplitDepth.
std::vector<int> split_k_counts(int64_t k);

// Whether two algorithms are the same configuration (their opaque words compare equal).
bool same_algorithm(const cublasLtMatmulAlgo_t& a, const cublasLtMatmulAlgo_t& b);

// The descriptors one matmul is checked against.
struct LtProblem {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t matmul = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  int64_t k = 0;                 // the inner dim
  uint32_t reduction_mask = 0;   // the schemes the call allows (CUBLASLT_REDUCTION_SCHEME_*)
  size_t workspace_bytes = 0;    // the workspace each call passes
};

struct SplitVariant {
  cublasLtMatmulAlgo_t algo{};
  int source = 0;  // its index in the heuristic's list
  int splits = 1;
  // "heuristic 1, split-K 4": how timing records name it.
  std::string label() const;
};

// Split-K variants of the first kSplitSources unsplit algorithms of `heuristic` (its results,
// in its order) that support splitting K with partial sums in the compute type: one per count
// of split_k_counts(problem.k) that cublasLtMatmulAlgoCheck accepts within the workspace and
// that is not already in `heuristic`. At most kMaxSplitVariants, sources in order. The partials
// are summed in the compute type (float32 for every dtype torchfuse runs), as eager's split-K
// GEMMs sum them unless reduced-precision reductions are allowed; a call whose mask excludes
// that scheme gets none.
std::vector<SplitVariant> split_k_variants(const CublasLtApi& lt, const LtProblem& problem,
                                           const std::vector<cublasLtMatmulAlgo_t>& heuristic);

}  // namespace runtime
}  // namespace torchfuse
