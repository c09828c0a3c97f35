// The runtime's half of each schedule: allocating a group's outputs and launching its kernel
// with the arguments and grid the schedule's layout asks for (the plan and the kernel come from
// the schedule's unit, codegen/schedule.h).
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "codegen/reduction_analysis.h"
#include "runtime/fused_kernel.h"

namespace torchfuse {
namespace runtime {

// The sizes of each output of `g` for a call over `domain`: element outputs cover the domain;
// per-row outputs keep or drop the reduced dims as their IR type does.
std::vector<std::vector<int64_t>> output_sizes(const FusionGroup& g, const codegen::ReductionAnalysis* a,
                                               const std::vector<int64_t>& domain);

// Plans the call's layout (the schedule's unit), allocates the group's outputs and launches
// the layout's kernel (generated once per variant key).
std::vector<at::Tensor> launch_group(FusedKernel& fk, const CallInputs& call);

}  // namespace runtime
}  // namespace torchfuse
