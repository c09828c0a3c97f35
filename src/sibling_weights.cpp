#include "src/sibling_weights.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/constants.h>

#include <map>
#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "src/graph_constants.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// A linear whose weight (and bias, if any) are frozen tensors that can share a buffer: a
// contiguous 2-D weight and a contiguous 1-D bias of its dtype and device.
struct Member {
  Node* linear;
  at::Tensor weight;
  std::optional<at::Tensor> bias;
};

std::optional<Member> member(Node* n) {
  if (n->kind() != c10::aten::linear || n->inputs().size() != 3) return std::nullopt;
  const std::optional<at::Tensor> w = constant_tensor(n->input(1));
  if (!w || !w->defined() || w->dim() != 2 || !w->is_contiguous() || w->requires_grad()) return std::nullopt;
  // Only 16-bit linears merge (passes/concat_linears.cpp says why).
  if (w->scalar_type() != at::kHalf && w->scalar_type() != at::kBFloat16) return std::nullopt;
  // A constant used elsewhere too (a tied weight) keeps its own storage.
  if (n->input(1)->uses().size() != 1) return std::nullopt;
  Member m{n, *w, std::nullopt};
  if (n->input(2)->mustBeNone()) return m;
  const std::optional<at::Tensor> b = constant_tensor(n->input(2));
  if (!b || !b->defined() || b->dim() != 1 || !b->is_contiguous() || b->scalar_type() != w->scalar_type() ||
      b->device() != w->device() || n->input(2)->uses().size() != 1)
    return std::nullopt;
  m.bias = *b;
  return m;
}

// Members that can share one buffer with `first`: same dtype, device and columns, and a bias
// exactly when it has one.
bool compatible(const Member& first, const Member& m) {
  return m.weight.scalar_type() == first.weight.scalar_type() && m.weight.device() == first.weight.device() &&
         m.weight.size(1) == first.weight.size(1) && m.bias.has_value() == first.bias.has_value();
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
  // By input, in node order (the buffer's rows follow the linears' order in the graph).
  std::map<size_t, std::vector<Member>> by_input;
  std::vector<size_t> order;
  for (Node* n : graph.nodes()) {
    std::optional<Member> m = member(n);
    if (!m) continue;
    const size_t key = n->input(0)->unique();
    auto& group = by_input[key];
    if (group.empty()) order.push_back(key);
    if (!group.empty() && !compatible(group.front(), *m)) continue;
    group.push_back(*m);
  }
  for (size_t key : order) {
    const std::vector<Member>& group = by_input[key];
    if (group.size() < 2) continue;
    std::vector<at::Tensor> weights, biases;
    std::vector<Node*> weight_nodes, bias_nodes;
    for (const Member& m : group) {
      weights.push_back(m.weight);
      weight_nodes.push_back(m.linear->input(1)->node());
      if (!m.bias) continue;
      biases.push_back(*m.bias);
      bias_nodes.push_back(m.linear->input(2)->node());
    }
    at::NoGradGuard no_grad;
    share(weights, weight_nodes);
    if (!biases.empty()) share(biases, bias_nodes);
  }
}

}  // namespace torchfuse
