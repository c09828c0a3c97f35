// Names a fusion group's calls for profilers, as "torchfuse::<kernel name>": an NVTX range in
// the "torchfuse" domain (Nsight Systems) and, in FusedKernel::run, a PyTorch profiler record
// (RECORD_FUNCTION: Kineto and the legacy profiler). The strings are made once per group, when
// its kernel is named. With no NVTX tool attached the range calls are no-ops of a few
// nanoseconds (NVTX3 is header-only; it looks for a tool on its first call), and nothing needs a
// GPU or its driver.
#pragma once

#include <string>

namespace torchfuse {
namespace runtime {

class GroupTrace {
 public:
  GroupTrace() = default;
  // For the group whose kernel (for the profiled types) is `kernel_name`.
  explicit GroupTrace(const std::string& kernel_name);
  // "torchfuse::<kernel name>"; lives as long as this object.
  const std::string& name() const { return name_; }

  // An NVTX range over a C++ scope.
  class Range {
   public:
    explicit Range(const GroupTrace& trace);
    ~Range();
    Range(const Range&) = delete;
    Range& operator=(const Range&) = delete;
  };

 private:
  std::string name_;
  const void* nvtx_name_ = nullptr;  // the name registered with the NVTX tool (null without one)
};

}  // namespace runtime
}  // namespace torchfuse
