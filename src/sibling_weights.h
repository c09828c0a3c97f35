// Sibling linears' weights in one buffer: 16-bit and float32 linears reading the same input with
// frozen weights (the q, k and v projections of a layer written apart, an MLP's gate and up
// projections) get their weights (and biases) copied into one tensor each, every linear reading a
// contiguous row range of it. Values and the graph's ops do not change, only where the weights
// are stored: passes/concat_linears.cpp can then run such linears as one GEMM over the whole
// buffer without holding a second copy of the weights.
#pragma once

namespace torch {
namespace jit {
struct Graph;
}  // namespace jit
}  // namespace torch

namespace torchfuse {

// For graphs whose tensor constants torchfuse owns (a frozen clone of a module, an exported
// program's weights): the originals are released once the graph holds the views.
void store_sibling_weights_together(torch::jit::Graph& graph);

}  // namespace torchfuse
