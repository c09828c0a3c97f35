// The layouts planned for a group's calls, remembered per call shape: a call whose operands have
// the sizes, strides, offsets and dtypes of an earlier one (and the same domain, cat starts and
// device) reuses its plan instead of planning again. Planning is a pure function of those; the
// data pointers' alignment, which it does not see, is checked per call (vectors_fit).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/schedule.h"

namespace torchfuse {
namespace runtime {

struct CallInputs;

struct MemoPlan {
  codegen::KernelLayout layout;         // planned with vector access allowed
  std::string key;                      // its variant key (FusedKernel::kernel_for)
  codegen::KernelLayout scalar_layout;  // planned without, for pointers vectors do not fit
  std::string scalar_key;
};

class PlanMemo {
 public:
  // The call's shape as the planner sees it, flattened.
  static std::vector<int64_t> key_of(const CallInputs& call);
  std::shared_ptr<const MemoPlan> find(const std::vector<int64_t>& key) const;
  // Kept up to a bound (a stream of ever new shapes plans each call, as without the memo).
  void store(std::vector<int64_t> key, std::shared_ptr<const MemoPlan> plan);

 private:
  struct Hash {
    size_t operator()(const std::vector<int64_t>& v) const;
  };
  mutable std::mutex mu_;
  std::unordered_map<std::vector<int64_t>, std::shared_ptr<const MemoPlan>, Hash> plans_;
};

}  // namespace runtime
}  // namespace torchfuse
