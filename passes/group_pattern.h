// What a fusion group computes, as the first part of its kernels' names (codegen/kernel_name.h):
// "softmax", "layer_norm", "sum", "mul_sigmoid". Deterministic: made of the TorchScript ops the
// group's IR nodes came from (ir::Node::origin_op), never of ids or pointers.
#pragma once

#include <string>

#include "passes/fusion_plan.h"

namespace torchfuse {

// Up to this many characters, [a-z0-9_], never empty ("fused" when no op has a usable name).
constexpr size_t kMaxPatternLength = 32;

// Reduction groups: their reductions' ops ("softmax", "layer_norm", "amax_sum" for a softmax
// written out). Pointwise groups: their ops in order, without repeats ("mul_relu_add"); past
// three, the arithmetic, casts and views give way to the rest ("gelu" in "mul_add_gelu_mul").
// At most three ops, cut at an op boundary to kMaxPatternLength.
std::string group_pattern(const FusionGroup& g);

// An op name as a pattern part: lowercase [a-z0-9_], runs of other characters as one '_',
// without leading or trailing '_' ("__and__" -> "and", "add_" -> "add").
std::string pattern_part(const std::string& op);

}  // namespace torchfuse
