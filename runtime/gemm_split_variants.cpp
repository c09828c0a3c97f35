#include "runtime/gemm_split_variants.h"

#include <cstring>

namespace torchfuse {
namespace runtime {
namespace {

int32_t splits_of(const CublasLtApi& lt, const cublasLtMatmulAlgo_t& algo) {
  int32_t splits = 1;
  size_t written = 0;
  if (lt.cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof(splits),
                                              &written) != CUBLAS_STATUS_SUCCESS)
    return 0;  // unknown: not a source
  return splits;
}

// Whether `algo` can split K with partials in the compute type (its capabilities and the call's mask).
bool splits_in_compute_type(const CublasLtApi& lt, const cublasLtMatmulAlgo_t& algo, uint32_t call_mask) {
  int32_t support = 0;
  uint32_t schemes = 0;
  size_t written = 0;
  if (lt.cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &support, sizeof(support),
                                           &written) != CUBLAS_STATUS_SUCCESS ||
      lt.cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes),
                                           &written) != CUBLAS_STATUS_SUCCESS)
    return false;
  const uint32_t wanted = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  return support != 0 && (schemes & wanted) != 0 && (call_mask & wanted) != 0;
}

// `source` split `splits` ways, if cuBLASLt accepts that for the problem within its workspace.
bool make_variant(const CublasLtApi& lt, const LtProblem& p, const cublasLtMatmulAlgo_t& source, int32_t splits,
                  cublasLtMatmulAlgo_t* out) {
  *out = source;
  const uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  if (lt.cublasLtMatmulAlgoConfigSetAttribute(out, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof(splits)) !=
          CUBLAS_STATUS_SUCCESS ||
      lt.cublasLtMatmulAlgoConfigSetAttribute(out, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof(scheme)) !=
          CUBLAS_STATUS_SUCCESS)
    return false;
  cublasLtMatmulHeuristicResult_t result{};
  if (lt.cublasLtMatmulAlgoCheck(p.handle, p.matmul, p.a, p.b, p.c, p.d, out, &result) != CUBLAS_STATUS_SUCCESS)
    return false;
  return result.workspaceSize <= p.workspace_bytes;
}

}  // namespace

std::vector<int> split_k_counts(int64_t k) {
  std::vector<int> counts;
  for (int s : {2, 3, 4, 6, 8, 12, 16})
    if (k / s >= kMinSplitDepth) counts.push_back(s);
  return counts;
}

bool same_algorithm(const cublasLtMatmulAlgo_t& a, const cublasLtMatmulAlgo_t& b) {
  return std::memcmp(a.data, b.data, sizeof(a.data)) == 0;
}

std::string SplitVariant::label() const {
  return "heuristic " + std::to_string(source) + ", split-K " + std::to_string(splits);
}

std::vector<SplitVariant> split_k_variants(const CublasLtApi& lt, const LtProblem& problem,
                                           const std::vector<cublasLtMatmulAlgo_t>& heuristic) {
  std::vector<SplitVariant> variants;
  const std::vector<int> counts = split_k_counts(problem.k);
  if (counts.empty()) return variants;
  int sources = 0;
  for (size_t i = 0; i < heuristic.size() && sources < kSplitSources; ++i) {
    if (splits_of(lt, heuristic[i]) != 1 || !splits_in_compute_type(lt, heuristic[i], problem.reduction_mask)) continue;
    ++sources;
    for (int s : counts) {
      if (static_cast<int>(variants.size()) >= kMaxSplitVariants) return variants;
      SplitVariant v;
      v.source = static_cast<int>(i);
      v.splits = s;
      if (!make_variant(lt, problem, heuristic[i], s, &v.algo)) continue;
      bool known = false;
      for (const cublasLtMatmulAlgo_t& h : heuristic) known = known || same_algorithm(h, v.algo);
      for (const SplitVariant& w : variants) known = known || same_algorithm(w.algo, v.algo);
      if (!known) variants.push_back(v);
    }
  }
  return variants;
}

}  // namespace runtime
}  // namespace torchfuse
