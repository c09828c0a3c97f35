// Layout planning and launching, per schedule: pointwise, row, column and full reductions.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "codegen/kernel.h"
#include "codegen/reduction_analysis.h"
#include "runtime/fused_kernel.h"

namespace torchfuse {
namespace runtime {

struct PlannedKernel {
  std::string key;  // the compile-time layout: equal keys share one kernel
  codegen::GeneratedKernel kernel;
};

// Plans the layout of a call and generates its kernel (no caching; explain() and compile use it)
// for the device `target` describes (target_of()).
PlannedKernel plan_and_generate(const FusionGroup& g, const codegen::ReductionAnalysis* a, const CallInputs& call,
                                const codegen::DeviceTarget& target, bool allow_vector);

// The sizes of each output of `g` for a call over `domain`: element outputs cover the domain;
// per-row outputs keep or drop the reduced dims as their IR type does.
std::vector<std::vector<int64_t>> output_sizes(const FusionGroup& g, const codegen::ReductionAnalysis* a,
                                               const std::vector<int64_t>& domain);

// Allocates the group's outputs and launches its kernel(s) for this call.
std::vector<at::Tensor> launch_group(FusedKernel& fk, const CallInputs& call);

}  // namespace runtime
}  // namespace torchfuse
