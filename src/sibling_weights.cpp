#include "src/sibling_weights.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/constants.h>

#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "src/graph_constants.h"

namespace torchfuse {
namespace {

using torch::jit::Node;

// A linear whose weight (and bias, if any) can share a buffer: a contiguous floating 2-D weight
// (16-bit or float32) and a contiguous 1-D bias of its dtype and device, each read by this linear
// alone.
bool shareable(const FrozenLinear& l) {
  const at::Tensor& w = l.weight;
  if (!w.is_contiguous() || w.requires_grad()) return false;
  // 16-bit linears merge; float32 ones where GEMMs are timed (passes/concat_linears.cpp says
  // why). Which options a graph is compiled with is not known here, and storing float32 siblings
  // together changes no value and keeps no second copy.
  if (w.scalar_type() != at::kHalf && w.scalar_type() != at::kBFloat16 && w.scalar_type() != at::kFloat) return false;
  // A constant used elsewhere too (a tied weight) keeps its own storage.
  if (l.node->input(1)->uses().size() != 1) return false;
  if (!l.bias) return true;
  const at::Tensor& b = *l.bias;
  return b.dim() == 1 && b.is_contiguous() && b.scalar_type() == w.scalar_type() && b.device() == w.device() &&
         l.node->input(2)->uses().size() == 1;
}

// Linears that can share one buffer with `first`: same dtype, device and columns, and a bias
// exactly when it has one.
bool compatible(const FrozenLinear& first, const FrozenLinear& l) {
  return l.weight.scalar_type() == first.weight.scalar_type() && l.weight.device() == first.weight.device() &&
         l.weight.size(1) == first.weight.size(1) && l.bias.has_value() == first.bias.has_value();
}

// Copies `parts` into one tensor and points each constant node at its row range.
void share(const std::vector<at::Tensor>& parts, const std::vector<Node*>& constants) {
  const at::Tensor all = at::cat(parts, 0);
  int64_t row = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    constants[i]->t_(c10::attr::value, all.narrow(0, row, parts[i].size(0)));
    row += parts[i].size(0);
  }
}

}  // namespace

void store_sibling_weights_together(torch::jit::Graph& graph) {
  // The buffer's rows follow the linears' order in the graph.
  for (const std::vector<FrozenLinear>& linears : frozen_linears_by_input(graph)) {
    std::vector<const FrozenLinear*> group;
    for (const FrozenLinear& l : linears)
      if (shareable(l) && (group.empty() || compatible(*group.front(), l))) group.push_back(&l);
    if (group.size() < 2) continue;
    std::vector<at::Tensor> weights, biases;
    std::vector<Node*> weight_nodes, bias_nodes;
    for (const FrozenLinear* l : group) {
      weights.push_back(l->weight);
      weight_nodes.push_back(l->node->input(1)->node());
      if (!l->bias) continue;
      biases.push_back(*l->bias);
      bias_nodes.push_back(l->node->input(2)->node());
    }
    at::NoGradGuard no_grad;
    share(weights, weight_nodes);
    if (!biases.empty()) share(biases, bias_nodes);
  }
}

}  // namespace torchfuse
