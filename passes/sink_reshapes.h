// A reshape that must copy (its input's strides do not merge: x.transpose(1, 2).reshape(b, t, c),
// attention's head merge) cuts the pointwise chain that reads it into an ATen copy and a group.
// Where the reshaped value feeds a chain of pointwise ops whose other tensor operands have the
// reshape's output shape, the reshape moves to the chain's end: the ops compute in the reshape
// input's shape (those operands reshaped to it, which for them is a view), and the chain's result,
// computed fresh, is reshaped back (a view). One fused kernel reads the transposed input through
// its strides, and no copy is made. Row-major order is what a reshape keeps, so every element
// meets the same operands as before.
// A view or reshape of a row op's result (softmax, a norm, a reduction; directly or through
// pointwise ops and casts: a decomposed group norm's view back to its input's sizes) moves the
// same way, copy or not: views do not join reduction groups, so the chain after it would be cut
// from the row op's kernel.
#pragma once

#include "passes/graph_rewrites.h"

namespace torchfuse {

void sink_reshapes(RewriteContext& ctx);

}  // namespace torchfuse
