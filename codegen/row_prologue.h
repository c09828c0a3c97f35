// The parts of a row kernel's source around its body (codegen/row_reduction.cpp): the params
// struct, the header comment, each input's row offsets, and the device functions the body calls
// (the next row's L2 prefetch, staged rows' and ringed rows' bulk copies, column offsets of
// reduced dims that did not coalesce).
#pragma once

#include <string>

#include "codegen/reduction_analysis.h"
#include "codegen/reduction_layout.h"
#include "codegen/source_builder.h"
#include "passes/fusion_plan.h"

namespace torchfuse {
namespace codegen {

// The kernel's parameter struct (kNamePlaceholder_params).
void emit_row_params(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l);
// The comment that says what the kernel computes and how it is laid out.
void emit_row_header(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l, const ReductionAnalysis& a);
// Offsets of each input's row start (`prefix`ro<k>): the row index `row` decomposed over the
// kept dims.
void emit_row_offsets(SourceBuilder& b, const ReductionLayout& l, const std::string& row, const std::string& prefix);
// Lane 0 of each team starts bringing the row it takes next (`row_step` rows on) into L2.
void emit_next_row_prefetch(SourceBuilder& b, const ReductionLayout& l, const std::string& row_step);
// Staged rows: input k's byte offset inside a team's shared-memory row, an expression of p.cols.
std::string staged_offset(const ReductionLayout& l, size_t k);
// Staged rows: the device function copying a block's row group into one buffer (kNamePlaceholder_stage).
void emit_stage_function(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l);
// Ringed rows: the device function copying one chunk into a ring slot (kNamePlaceholder_ring).
void emit_ring_function(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l);
// Offset of column j inside a row for input k.
std::string red_offset(const ReductionLayout& l, size_t k, const std::string& j);
// Reduced dims that did not coalesce: each input's tf_red_offset_<k> device function.
void emit_red_offset_helpers(SourceBuilder& b, const FusionGroup& g, const ReductionLayout& l);

}  // namespace codegen
}  // namespace torchfuse
