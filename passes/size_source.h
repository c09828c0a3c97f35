// Where a rewrite reads a size that a fused value has on every call: from the earliest value
// that has it, so that the size read does not make a group write that value out.
#pragma once

#include <cstdint>

#include "passes/graph_rewrites.h"

namespace torchfuse {

// The earliest value whose dim d has x's size on every call: up through fusible elementwise
// ops and the normalizations (softmax, log_softmax, layer and RMS norm), to an operand of the same rank whose profiled size there is the result's, above 1. (The
// guards pin which dims are size 1: an operand's dim of the result's size, above 1, never
// broadcasts. A dim of size 1 is read from x itself: its operands' size-1 dims could broadcast
// against others.) A size read of a value a fused group computes would make the group write it out.
torch::jit::Value* size_source(const RewriteContext& ctx, torch::jit::Value* x, int64_t d);

}  // namespace torchfuse
