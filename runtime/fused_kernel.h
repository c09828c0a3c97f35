// One fusion group at run time: takes the group's inputs from the TorchScript stack, allocates
// its outputs from the caching allocator, and launches the generated kernel on the current
// CUDA stream. Kernels are generated per compile-time layout (rank, access kinds, dtypes,
// vector and index width) and reused for every call whose layout has the same key.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

#include "codegen/kernel.h"
#include "codegen/layout.h"
#include "passes/fusion_plan.h"
#include "runtime/kernel_cache.h"

namespace torchfuse {
namespace runtime {

struct LaunchOptions {
  bool poison_outputs = false;
};

class FusedKernel {
 public:
  // `owner` keeps the IR that `group` points into alive.
  FusedKernel(std::shared_ptr<const void> owner, FusionGroup group, LaunchOptions options,
              std::shared_ptr<CompileCounters> counters);

  // Pops the group's inputs from `stack`, pushes its outputs.
  void run(std::vector<c10::IValue>& stack);

  const FusionGroup& group() const { return group_; }
  // The kernel for the layout these profiled types give (used at compile time and by explain()).
  codegen::GeneratedKernel kernel_for_profiled_types() const;
  // Every kernel generated so far (one per layout key).
  std::vector<codegen::GeneratedKernel> kernels() const;
  int64_t launches() const { return launches_; }

 private:
  codegen::GeneratedKernel kernel_for(const codegen::PointwiseLayout& layout);

  std::shared_ptr<const void> owner_;
  FusionGroup group_;
  LaunchOptions options_;
  std::shared_ptr<CompileCounters> counters_;
  mutable std::mutex mu_;
  std::map<std::string, codegen::GeneratedKernel> kernels_;  // by layout key
  std::atomic<int64_t> launches_{0};
};

// The operands of a group as the layout planner sees them, from profiled IR types.
std::vector<codegen::OperandShape> profiled_operands(const FusionGroup& g);
std::vector<c10::ScalarType> output_dtypes(const FusionGroup& g);
// The grid-stride loop never runs more threads than this (the layout's index-width bound).
constexpr int64_t kMaxGridThreads = int64_t{1} << 22;

}  // namespace runtime
}  // namespace torchfuse
