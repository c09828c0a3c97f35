// NVRTC: generated CUDA C++ -> cubin for one exact architecture (e.g. sm_90). Needs no GPU.
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel.h"

namespace torchfuse {
namespace codegen {

struct Cubin {
  std::string image;   // the cubin bytes
  std::string log;     // NVRTC's log (warnings)
  double seconds = 0;  // time spent in NVRTC
};

// The options torchfuse compiles with for `arch` ("sm_90").
std::vector<std::string> nvrtc_options(const std::string& arch, bool fmad = true);
// "13.0".
std::string nvrtc_version();
// Compiles kernel.source; on failure throws torchfuse::Error carrying NVRTC's log and the
// numbered source.
Cubin compile_to_cubin(const GeneratedKernel& kernel, const std::string& arch);

}  // namespace codegen
}  // namespace torchfuse
