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

// Plans the layout of a call and generates its kernel (no caching; explain() and compile use it).
// `max_cluster`: the largest thread-block cluster row schedules may use (1: none; see max_cluster()).
// `bulk_copies`: row schedules may stage rows in shared memory (see has_bulk_copies()).
PlannedKernel plan_and_generate(const FusionGroup& g, const codegen::ReductionAnalysis* a, const CallInputs& call,
                                int sm_count, int max_cluster, bool allow_vector, bool bulk_copies);

// Allocates the group's outputs and launches its kernel(s) for this call.
std::vector<at::Tensor> launch_group(FusedKernel& fk, const CallInputs& call);

}  // namespace runtime
}  // namespace torchfuse
