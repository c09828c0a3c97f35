// CompileOptions::debug_fail_kernels: real failures of chosen kernels, so that tests can drive the
// per-group fallback through the code paths real failures take.
//
// Grammar (also in torchfuse.h and docs/architecture.md, "Failure injection"):
//   spec    := entry ("," entry)*            ("" injects nothing)
//   entry   := [kind ["#" count] ":"] ["runtime:"] pattern
//   kind    := nvrtc | load | launch | oom | wrong   (default nvrtc)
//   pattern := "*" | a substring of the kernel name ("tf_add_relu_mul")
// "runtime:" spares the kernel built for the profiled types when the specialization is built and
// hits only variants generated later for other layouts (nvrtc, load and launch). "#count" (oom
// only) injects that many faults per specialization, then lets the kernel run.
//
// How each kind fails, each time through the real path:
//   nvrtc   the source gets an `#error` line: NVRTC rejects it with a log.
//   load    the source gets a marker line, and where the kernel cache calls cuModuleLoadData the
//           driver's answer is CUDA_ERROR_INVALID_IMAGE: the same check_cu error as a bad image.
//   launch  the source gets a marker line, and where the launcher calls cuLaunchKernel(Ex) the
//           answer is CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, a launch error that leaves the context
//           usable (a sticky fault cannot be recovered from, and is not injected).
//   oom     the group's first output is asked of the CUDA caching allocator with a size no device
//           holds, so the allocator itself throws its c10::OutOfMemoryError.
//   wrong   not a failure but a wrong answer: after the group's kernel ran, element 0 of its
//           first output gets 1 added (a bool is negated), so that compare_groups and
//           compare_with_eager have a wrong group to find. Matched against the group's name.
// A marked source differs from the real one, so its cache key does too: an injected kernel never
// shares a cache entry with the real kernel, and a failed compile or load caches nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/kernel.h"

namespace torchfuse {
namespace runtime {

enum class Fault { Nvrtc, Load, Launch, Oom, Wrong };

// "nvrtc", "load", "launch", "oom", "wrong".
const char* fault_name(Fault fault);

class FailureInjection {
 public:
  // Throws torchfuse::Error naming a malformed entry (unknown kind, bad count, "runtime:" or a
  // count where the kind does not take one, an empty pattern).
  static FailureInjection parse(const std::string& spec);
  // The option, else $TORCHFUSE_DEBUG_FAIL_KERNELS.
  static std::string spec_from(const std::string& option);

  bool empty() const { return entries_.empty(); }
  // Does an entry of this kind name the kernel? `runtime_variant`: generated after the
  // specialization was built, for a layout the profiled inputs did not have.
  bool matches(Fault kind, const std::string& kernel_name, bool runtime_variant) const;
  // The NVRTC form, kept for callers that predate the kinds.
  bool matches(const std::string& kernel_name, bool runtime_variant) const {
    return matches(Fault::Nvrtc, kernel_name, runtime_variant);
  }
  // `kernel` with the marks of every nvrtc, load and launch entry that names it.
  codegen::GeneratedKernel apply(codegen::GeneratedKernel kernel, bool runtime_variant) const;
  // Should this call of the group's kernel run out of memory? Uses up one of a counted entry's
  // faults. Copies of one parsed FailureInjection share the counts.
  bool take_oom(const std::string& kernel_name) const;

 private:
  struct Entry {
    Fault kind = Fault::Nvrtc;
    std::string pattern;  // "*" or a kernel-name substring
    bool runtime_only = false;
    std::shared_ptr<std::atomic<int64_t>> remaining;  // null: every time
  };
  static bool names(const Entry& e, const std::string& kernel_name);
  std::vector<Entry> entries_;
};

// `kernel` with an `#error` line NVRTC stops at (the nvrtc kind).
codegen::GeneratedKernel with_injected_failure(codegen::GeneratedKernel kernel);
// `kernel` marked with a fault of `kind` (nvrtc: with_injected_failure).
codegen::GeneratedKernel with_injected_fault(codegen::GeneratedKernel kernel, Fault kind);
// Does the kernel carry the mark of `kind` (load or launch)? Asked where the driver is called.
bool has_injected_fault(const codegen::GeneratedKernel& kernel, Fault kind);

}  // namespace runtime
}  // namespace torchfuse
