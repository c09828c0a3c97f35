// Puts fusion groups back into the TorchScript graph: each group's nodes are replaced by one
// torchfuse::FusionGroup node; everything else stays and runs through ATen.
#pragma once

#include <cstdint>
#include <vector>

#include "passes/fusion_plan.h"
#include "src/frontend.h"

namespace torchfuse {
namespace runtime {

// The TorchScript nodes a group came from, in graph order, each once. A piece of a split list
// (the ListUnpack or __getitem__ its view came from, src/convert_splits.cpp) brings the op
// making the list along, which has no IR node of its own.
std::vector<torch::jit::Node*> group_source_nodes(const Conversion& conv, const FusionGroup& g);

// Rewrites the graph `conv` was converted from, in place. kernel_ids[i] is the registered
// FusedKernel of plan.groups[i].
void rewrite_graph(torch::jit::Graph& graph, const Conversion& conv, const FusionPlan& plan,
                   const std::vector<int64_t>& kernel_ids);

}  // namespace runtime
}  // namespace torchfuse
