#include "src/graph_constants.h"

#include <torch/csrc/jit/ir/ir.h>

namespace torchfuse {

std::optional<at::Tensor> constant_tensor(const torch::jit::Value* v) {
  const torch::jit::Node* n = v->node();
  if (n->kind() != c10::prim::Constant || !n->hasAttribute(c10::attr::value)) return std::nullopt;
  if (n->kindOf(c10::attr::value) != torch::jit::AttributeKind::t) return std::nullopt;
  return n->t(c10::attr::value);
}

}  // namespace torchfuse
