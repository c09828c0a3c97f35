// Pieces of generated code the column schedules share (codegen/split_reduction.cpp: the column
// reduction; codegen/column_passes.cpp: column groups of several passes), and with the full
// reduction: the params' output and partial-result pointers, __restrict__ copies of the
// pointers, a reduction's result in its output's register type, and the column layout's params,
// index segments and loads.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda_types.h"
#include "codegen/reduction_common.h"
#include "codegen/reduction_layout.h"
#include "codegen/source_builder.h"
#include "passes/fusion_plan.h"

namespace torchfuse {
namespace codegen {

// The params' output pointers, one partial-result pointer per reduction, and the block counters.
void emit_outputs_and_partials(SourceBuilder& b, const FusionGroup& g, const ReductionAnalysis& a);

// Local __restrict__ copies of the params' pointers. `Inputs`: the layout's operands (each with
// .access and .dtype).
template <typename Inputs>
inline void emit_restrict_pointers(SourceBuilder& b, const FusionGroup& g, const Inputs& inputs) {
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].access == Access::Scalar) continue;
    b.line("const " + storage_type(inputs[k].dtype) + "* __restrict__ " + input_name(k) + " = p." + input_name(k) + ";");
  }
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    b.line(storage_type(g.outputs[k]->type.dtype) + "* __restrict__ " + output_name(k) + " = p." + output_name(k) + ";");
  }
}

// The name of reduction `r`'s result in the register type of its output dtype: a wide
// accumulator (double for f32 sums) rounds as eager's result does, and the epilogue's operations
// see operands of the types they were generated for (tf_minimum(float, double) does not compile).
std::string result_in_register_type(SourceBuilder& b, const ir::Node& r, const std::string& accumulated);

// The column kernels' params struct: the domain [O, R, I], the split, each segment's sizes, each
// operand and its strides per segment, outputs, partials and counters.
void emit_column_params(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l, const ReductionAnalysis& a);

// "off += coord * stride" terms of one segment, decomposing `index` over the segment's sizes.
void emit_segment(SourceBuilder& b, const ReductionLayout& l, const std::vector<int64_t>& sizes, const std::string& seg,
                  const std::string& index, const std::string& prefix);

// Does input k of a column kernel load whole vectors of `vec` columns (a contiguous inner dim)?
bool column_vector_input(const ReductionLayout& l, size_t k);

// Input k for lane `lane` of the thread's columns: a vector element when the inner dim is
// contiguous, else a load at the lane's column. `slot` indexes the per-unroll vector arrays
// ("" without unroll).
std::string column_load(const ReductionLayout& l, size_t k, const std::string& slot);

// Is input k read per element of a column-passes kernel (not per column, not one value)?
bool column_element_input(const ReductionLayout& l, size_t k);

}  // namespace codegen
}  // namespace torchfuse
