#include "src/graph_constants.h"

#include <torch/csrc/jit/ir/ir.h>

#include <map>

namespace torchfuse {

std::optional<c10::IValue> constant_value(const torch::jit::Value* v) {
  auto iv = torch::jit::toIValue(v);  // c10::optional under LibTorch 1.13, std::optional later
  if (!iv) return std::nullopt;
  return *iv;
}

std::optional<bool> constant_bool(const torch::jit::Value* v) {
  const std::optional<c10::IValue> iv = constant_value(v);
  if (!iv || !iv->isBool()) return std::nullopt;
  return iv->toBool();
}

std::optional<int64_t> constant_int(const torch::jit::Value* v) {
  const std::optional<c10::IValue> iv = constant_value(v);
  if (!iv || !iv->isInt()) return std::nullopt;
  return iv->toInt();
}

bool is_none_constant(const torch::jit::Value* v) {
  const std::optional<c10::IValue> iv = constant_value(v);
  return iv && iv->isNone();
}

std::optional<at::Tensor> constant_tensor(const torch::jit::Value* v) {
  const torch::jit::Node* n = v->node();
  if (n->kind() != c10::prim::Constant || !n->hasAttribute(c10::attr::value)) return std::nullopt;
  if (n->kindOf(c10::attr::value) != torch::jit::AttributeKind::t) return std::nullopt;
  return n->t(c10::attr::value);
}

std::optional<int64_t> constant_dim(const torch::jit::Value* v, int64_t rank) {
  const std::optional<c10::IValue> iv = constant_value(v);
  if (!iv || !iv->isInt()) return std::nullopt;
  int64_t d = iv->toInt();
  if (d < 0) d += rank;
  if (d < 0 || d >= rank) return std::nullopt;
  return d;
}

namespace {

std::optional<FrozenLinear> frozen_linear(torch::jit::Node* n) {
  if (n->kind() != c10::aten::linear || n->inputs().size() != 3) return std::nullopt;
  const std::optional<at::Tensor> w = constant_tensor(n->input(1));
  if (!w || !w->defined() || w->dim() != 2) return std::nullopt;
  FrozenLinear l{n, *w, std::nullopt};
  if (n->input(2)->mustBeNone()) return l;
  const std::optional<at::Tensor> b = constant_tensor(n->input(2));
  if (!b || !b->defined()) return std::nullopt;
  l.bias = *b;
  return l;
}

}  // namespace

std::vector<std::vector<FrozenLinear>> frozen_linears_by_input(torch::jit::Graph& graph) {
  std::map<size_t, size_t> group_of;  // Value::unique() of the input -> index in `groups`
  std::vector<std::vector<FrozenLinear>> groups;
  for (torch::jit::Node* n : graph.nodes()) {
    std::optional<FrozenLinear> l = frozen_linear(n);
    if (!l) continue;
    auto [it, added] = group_of.emplace(n->input(0)->unique(), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(std::move(*l));
  }
  return groups;
}

}  // namespace torchfuse
