// Outputs written over a dying input's memory (Inductor's in_out_ptr): where a call's input is
// an intermediate that nothing reads after the group (the TorchScript interpreter moved its last
// use onto the stack, so the call holds its only reference and no view shares its storage), an
// output of the same sizes and dtype takes that memory instead of a fresh allocation. The kernel
// reads each element of it before writing the output there, in the same thread: a fused chain
// after a GEMM then writes into lines the GEMM just left in L2, and the allocator hands out one
// buffer fewer. CompileOptions::outputs_in_place, off by default (H200, BERT bf16 batch 8: the
// same GPU time either way; docs/performance.md).
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/ivalue.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

#include "codegen/schedule.h"
#include "passes/fusion_plan.h"

namespace torchfuse {
namespace runtime {

// Per output of `g`: the input whose memory it may take on a call, or -1. The rules that hold
// for every call: pointwise and row groups (one kernel a call, each element of the input read by
// the thread that writes the output there, before it writes it), an element output with the
// input's profiled sizes and dtype, written in the row schedule's last pass (an earlier pass's
// output would be read back over in a looped row), an input read as itself (no views, cats or
// scans) that only the output's own computation reads, so that every load of an element feeds
// the store to it. Each input serves one output at most. `a`: the group's analysis (a row
// group's output must be in the last pass with online softmax sums and without).
std::vector<int> in_place_candidates(const FusionGroup& g, const codegen::GroupAnalysis& a);

// Whether this call's input may become an output of these sizes and dtype: a dense tensor of them
// (contiguous, as outputs are), not needing grad, whose only reference is the call's, whose
// storage no other tensor shares and came from an allocator (not from_blob).
bool can_take_over(const c10::IValue& input, c10::IntArrayRef sizes, c10::ScalarType dtype);

// Per output, the input of this call whose memory it takes, or -1: the candidates whose inputs
// can_take_over, `sizes_of(k)` and `dtype_of(k)` the output's. Empty where no output can.
template <typename Sizes, typename Dtype>
c10::SmallVector<int, 4> take_over(const std::vector<int>& candidates, const c10::IValue* inputs, Sizes sizes_of,
                                   Dtype dtype_of) {
  c10::SmallVector<int, 4> taken;
  for (size_t k = 0; k < candidates.size(); ++k) {
    const int j = candidates[k];
    if (j < 0 || !can_take_over(inputs[j], sizes_of(k), dtype_of(k))) continue;
    if (taken.empty()) taken.assign(candidates.size(), -1);
    taken[k] = j;
  }
  return taken;
}

}  // namespace runtime
}  // namespace torchfuse
