// compare_groups (torchfuse.h): each fusion group's kernel against its own ATen ops, judged as
// its kernel returns (group_check.cpp).
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include "runtime/fused_kernel.h"
#include "torchfuse/torchfuse.h"

namespace torchfuse {
namespace runtime {

// One group's row: `outputs`, what its kernel wrote for `inputs` (the group's inputs, in order),
// against its fallback graph run on the same inputs, judged by compare_with_eager's rules with
// the float64 run of that graph and the group's lowest working precision (the dtypes'
// tolerances alone, and a note, where the float64 run fails). compare_groups calls it as each
// group returns; tests call it with outputs of their own.
GroupComparison judge_group(const FusedKernel& k, const std::vector<c10::IValue>& inputs,
                            const std::vector<at::Tensor>& outputs, const Tolerance* tolerance);

}  // namespace runtime
}  // namespace torchfuse
