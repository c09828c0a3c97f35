#include "runtime/cublaslt_api.h"

#include <dlfcn.h>

#include "runtime/dl_util.h"

namespace torchfuse {
namespace runtime {
namespace {

struct Loaded {
  CublasLtApi api{};
  bool ok = false;
  std::string why;
};

template <typename F>
bool bind(void* lib, const char* name, F& fn, std::string& why) {
  return bind_symbol(lib, "libcublasLt", name, fn, why);
}

// The toolkit's own major version first (the header this file is compiled with), then CUDA 12's
// (a LibTorch built for CUDA 12 has it loaded already: dlopen finds it by its soname), then
// whatever the unversioned name points to. The entry points used here kept their signatures and
// the attribute enums their values from CUDA 11 on.
void* open_library(std::string& name) {
  for (const char* candidate : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}) {
    if (void* lib = dlopen(candidate, RTLD_NOW | RTLD_LOCAL)) {
      name = candidate;
      return lib;
    }
  }
  return nullptr;
}

Loaded load() {
  Loaded l;
  void* lib = open_library(l.api.library);
  if (!lib) {
    l.why = "no cuBLASLt library (libcublasLt.so.13, libcublasLt.so.12, libcublasLt.so not found)";
    return l;
  }
  CublasLtApi& a = l.api;
  l.ok = bind(lib, "cublasLtCreate", a.cublasLtCreate, l.why) && bind(lib, "cublasLtMatmul", a.cublasLtMatmul, l.why) &&
         bind(lib, "cublasLtMatmulDescCreate", a.cublasLtMatmulDescCreate, l.why) &&
         bind(lib, "cublasLtMatmulDescDestroy", a.cublasLtMatmulDescDestroy, l.why) &&
         bind(lib, "cublasLtMatmulDescSetAttribute", a.cublasLtMatmulDescSetAttribute, l.why) &&
         bind(lib, "cublasLtMatrixLayoutCreate", a.cublasLtMatrixLayoutCreate, l.why) &&
         bind(lib, "cublasLtMatrixLayoutDestroy", a.cublasLtMatrixLayoutDestroy, l.why) &&
         bind(lib, "cublasLtMatmulPreferenceCreate", a.cublasLtMatmulPreferenceCreate, l.why) &&
         bind(lib, "cublasLtMatmulPreferenceDestroy", a.cublasLtMatmulPreferenceDestroy, l.why) &&
         bind(lib, "cublasLtMatmulPreferenceSetAttribute", a.cublasLtMatmulPreferenceSetAttribute, l.why) &&
         bind(lib, "cublasLtMatmulAlgoGetHeuristic", a.cublasLtMatmulAlgoGetHeuristic, l.why) &&
         bind(lib, "cublasLtMatmulAlgoCapGetAttribute", a.cublasLtMatmulAlgoCapGetAttribute, l.why) &&
         bind(lib, "cublasLtMatmulAlgoConfigGetAttribute", a.cublasLtMatmulAlgoConfigGetAttribute, l.why) &&
         bind(lib, "cublasLtMatmulAlgoConfigSetAttribute", a.cublasLtMatmulAlgoConfigSetAttribute, l.why) &&
         bind(lib, "cublasLtMatmulAlgoCheck", a.cublasLtMatmulAlgoCheck, l.why);
  return l;
}

}  // namespace

const CublasLtApi* cublaslt_api(std::string* why) {
  static const Loaded loaded = load();
  if (why) *why = loaded.why;
  return loaded.ok ? &loaded.api : nullptr;
}

}  // namespace runtime
}  // namespace torchfuse
