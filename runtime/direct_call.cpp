#include "runtime/direct_call.h"

#include <torch/csrc/jit/ir/constants.h>

#include "runtime/fused_kernel.h"
#include "runtime/fusion_op.h"
#include "src/frontend.h"
#include "src/graph_constants.h"

namespace torchfuse {
namespace runtime {

namespace {

// The source of `v`: a graph input, a constant, an output of `node`; nullopt for anything else.
template <typename Source>
std::optional<Source> source_of(const torch::jit::Graph& graph, const torch::jit::Value* v, const torch::jit::Node* node) {
  Source s;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    if (graph.inputs()[i] != v) continue;
    s.input = static_cast<int>(i);
    return s;
  }
  if (v->node() == node) {
    s.node_output = static_cast<int>(v->offset());
    return s;
  }
  if (v->node()->kind() == c10::prim::Constant) {
    std::optional<c10::IValue> constant = constant_value(v);
    if (!constant) return std::nullopt;
    s.constant = *constant;
    return s;
  }
  return std::nullopt;
}

}  // namespace

std::optional<DirectCall> DirectCall::of(const torch::jit::Graph& graph, const std::vector<int64_t>& kernel_ids,
                                         const std::vector<std::shared_ptr<FusedKernel>>& kernels) {
  const torch::jit::Node* fusion = nullptr;
  for (const torch::jit::Node* n : graph.nodes()) {
    if (n->kind() == c10::prim::Constant || n->kind() == c10::prim::TupleConstruct) continue;
    if (n->kind() != fusion_group_symbol() || fusion) return std::nullopt;
    fusion = n;
  }
  if (!fusion) return std::nullopt;
  DirectCall call;
  const int64_t id = fusion->i(kernel_id_attr());
  for (size_t i = 0; i < kernel_ids.size(); ++i)
    if (kernel_ids[i] == id) call.kernel_ = kernels.at(i);
  if (!call.kernel_) return std::nullopt;
  for (const torch::jit::Value* v : fusion->inputs()) {
    std::optional<Source> s = source_of<Source>(graph, v, fusion);
    if (!s || s->node_output >= 0) return std::nullopt;
    call.node_inputs_.push_back(std::move(*s));
  }
  for (const torch::jit::Value* out : graph.outputs()) {
    Returned r;
    if (out->node()->kind() == c10::prim::TupleConstruct) {
      r.tuple = true;
      for (const torch::jit::Value* e : out->node()->inputs()) {
        std::optional<Source> s = source_of<Source>(graph, e, fusion);
        if (!s) return std::nullopt;
        r.elements.push_back(std::move(*s));
      }
    } else {
      std::optional<Source> s = source_of<Source>(graph, out, fusion);
      if (!s) return std::nullopt;
      r.elements.push_back(std::move(*s));
    }
    call.returned_.push_back(std::move(r));
  }
  // A tuple built inside the graph and not returned: not this shape.
  for (const torch::jit::Node* n : graph.nodes()) {
    if (n->kind() != c10::prim::TupleConstruct) continue;
    bool returned = false;
    for (const torch::jit::Value* out : graph.outputs()) returned = returned || out->node() == n;
    if (!returned) return std::nullopt;
  }
  return call;
}

c10::IValue DirectCall::run(const std::vector<c10::IValue>& inputs) const {
  std::vector<c10::IValue> stack;
  stack.reserve(node_inputs_.size());
  for (const Source& s : node_inputs_) stack.push_back(s.input >= 0 ? inputs[s.input] : s.constant);
  kernel_->run(stack);  // leaves the node's outputs
  const auto value_of = [&](const Source& s) -> c10::IValue {
    if (s.input >= 0) return inputs[s.input];
    if (s.node_output >= 0) return stack.at(s.node_output);
    return s.constant;
  };
  // The common case, one value returned as is: no list to build.
  if (returned_.size() == 1 && !returned_[0].tuple) return value_of(returned_[0].elements[0]);
  std::vector<c10::IValue> results;
  results.reserve(returned_.size());
  for (const Returned& r : returned_) {
    if (!r.tuple) {
      results.push_back(value_of(r.elements[0]));
      continue;
    }
    std::vector<c10::IValue> elements;
    for (const Source& s : r.elements) elements.push_back(value_of(s));
    results.push_back(c10::ivalue::Tuple::create(std::move(elements)));
  }
  return graph_result(results);
}

}  // namespace runtime
}  // namespace torchfuse
