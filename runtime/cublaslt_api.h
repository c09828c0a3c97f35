// cuBLASLt, loaded lazily with dlopen on first use (as driver_api.h loads libcuda), so that
// torchfuse loads and runs its ATen paths on machines without a GPU driver or without cuBLASLt.
// Only the entry points torchfuse::gemm_epilogue needs (runtime/gemm_epilogue_op.cpp and the
// split-K variants it times, runtime/gemm_split_variants.cpp).
#pragma once

#include <string>

#include <cublasLt.h>

namespace torchfuse {
namespace runtime {

struct CublasLtApi {
  decltype(&::cublasLtCreate) cublasLtCreate;
  decltype(&::cublasLtMatmul) cublasLtMatmul;
  decltype(&::cublasLtMatmulDescCreate) cublasLtMatmulDescCreate;
  decltype(&::cublasLtMatmulDescDestroy) cublasLtMatmulDescDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) cublasLtMatmulDescSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) cublasLtMatrixLayoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) cublasLtMatrixLayoutDestroy;
  decltype(&::cublasLtMatmulPreferenceCreate) cublasLtMatmulPreferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) cublasLtMatmulPreferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) cublasLtMatmulPreferenceSetAttribute;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) cublasLtMatmulAlgoGetHeuristic;
  // For the split-K variants gemm_autotune times (runtime/gemm_split_variants.cpp).
  decltype(&::cublasLtMatmulAlgoCapGetAttribute) cublasLtMatmulAlgoCapGetAttribute;
  decltype(&::cublasLtMatmulAlgoConfigGetAttribute) cublasLtMatmulAlgoConfigGetAttribute;
  decltype(&::cublasLtMatmulAlgoConfigSetAttribute) cublasLtMatmulAlgoConfigSetAttribute;
  decltype(&::cublasLtMatmulAlgoCheck) cublasLtMatmulAlgoCheck;
  std::string library;  // the name dlopen succeeded with ("libcublasLt.so.13")
};

// The loaded API, or nullptr when no cuBLASLt library is found or one lacks an entry point
// (reason in *why). Loaded once per process.
const CublasLtApi* cublaslt_api(std::string* why = nullptr);

}  // namespace runtime
}  // namespace torchfuse
