// Graph preparation, before a graph is profiled and converted: inlining, constant folding,
// tuple lowering, frozen parameters as constants.
#pragma once

#include <memory>

namespace torch {
namespace jit {
struct Graph;
struct Module;
}  // namespace jit
}  // namespace torch

namespace torchfuse {

// Clones, freezes and inlines a module's forward; drops `self`.
std::shared_ptr<torch::jit::Graph> prepare_module_graph(const torch::jit::Module& module);
// Does some node write to a graph input or constant (or a view of one, or a tensor a list,
// tuple or dict input holds)?
bool writes_to_inputs_or_constants(const std::shared_ptr<torch::jit::Graph>& graph);
// Inlines calls, detaches tensor constants, removes dead code.
void prepare_graph(const std::shared_ptr<torch::jit::Graph>& graph);

}  // namespace torchfuse
