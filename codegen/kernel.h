// A generated kernel: its name, CUDA C++ source and launch shape.
#pragma once

#include <string>

namespace torchfuse {
namespace codegen {

struct GeneratedKernel {
  std::string name;     // extern "C" entry point
  std::string source;   // complete translation unit for NVRTC
  int block_size = 256;
};

}  // namespace codegen
}  // namespace torchfuse
