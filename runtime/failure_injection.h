// CompileOptions::debug_fail_kernels: real NVRTC failures on chosen kernels, so that tests can
// drive the per-group fallback. A failing kernel gets an `#error` line, so its source (and with
// it the kernel cache key) differs from the real kernel's, and NVRTC rejects it with a log:
// nothing is ever cached for it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "codegen/kernel.h"

namespace torchfuse {
namespace runtime {

class FailureInjection {
 public:
  // "*", "tf_fused_1", "runtime:tf_fused_0", comma-separated; "" injects nothing.
  static FailureInjection parse(const std::string& spec);
  // The option, else $TORCHFUSE_DEBUG_FAIL_KERNELS.
  static std::string spec_from(const std::string& option);

  bool empty() const { return entries_.empty(); }
  // Should this kernel fail? `runtime_variant`: generated after the specialization was built,
  // for a layout the profiled inputs did not have.
  bool matches(const std::string& kernel_name, bool runtime_variant) const;

 private:
  struct Entry {
    std::string pattern;  // "*" or a kernel-name substring
    bool runtime_only = false;
  };
  std::vector<Entry> entries_;
};

// `kernel` with an `#error` line NVRTC stops at.
codegen::GeneratedKernel with_injected_failure(codegen::GeneratedKernel kernel);

}  // namespace runtime
}  // namespace torchfuse
