// The fallback of one fusion group: a standalone TorchScript graph made of the group's source
// nodes, which the interpreter runs through ATen when the group's kernel cannot be built or
// launched. Its inputs are the group's inputs, in the order of the FusionGroup node's inputs; its
// outputs are the group's outputs, in the order of the node's outputs.
#pragma once

#include <memory>

#include "passes/fusion_plan.h"
#include "src/frontend.h"

namespace torchfuse {
namespace runtime {

// Must run before rewrite_graph, which destroys the source nodes. Constants and constant
// lists the nodes read are cloned into the new graph. Throws torchfuse::Error (internal) when a
// node reads a value that is neither a group input, a group value nor a constant expression.
std::shared_ptr<torch::jit::Graph> build_fallback_graph(const Conversion& conv, const FusionGroup& g);

}  // namespace runtime
}  // namespace torchfuse
