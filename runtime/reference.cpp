#include "runtime/reference.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/constants.h>

#include "src/frontend.h"

namespace torchfuse {
namespace runtime {

namespace {

// Gives every floating tensor constant of `block` and its nested blocks (the parameters and
// buffers freezing put into the graph, tensors a trace captured) float64 values, as
// forward_reference does for the inputs: a float64 input meeting a bf16 weight would make
// _convolution or layer_norm refuse the mix, and matmul round to the weight's dtype. Integer and
// bool constants (token-id tables, masks) keep their dtypes.
void upcast_floating_constants(torch::jit::Block* block) {
  for (torch::jit::Node* n : block->nodes()) {
    for (torch::jit::Block* b : n->blocks()) upcast_floating_constants(b);
    if (n->kind() != c10::prim::Constant || !n->hasAttribute(c10::attr::value)) continue;
    if (n->kindOf(c10::attr::value) != torch::jit::AttributeKind::t) continue;
    const at::Tensor t = n->t(c10::attr::value);
    if (!t.defined() || !t.is_floating_point() || t.scalar_type() == at::kDouble) continue;
    n->t_(c10::attr::value, t.to(at::kDouble));  // the copy's attribute; the module's tensor stays
    n->output()->inferTypeFrom(n->t(c10::attr::value));
  }
}

// The casts readable from the graph itself return to float64: an op whose `dtype` argument is a
// constant fp16, bf16 or fp32 (.to(torch.bfloat16), softmax(x, d, dtype=torch.float32),
// full(..., dtype=...)). It rounds there and what follows runs in float64. Inside If and Loop
// bodies, which the profile does not see, these are the only casts that return; at the top level
// they must return before the profiling run too, or an op meeting such a value and a float64 one
// (a Hugging Face mask made with full(..., dtype=torch.bfloat16) and where()) stops that run.
void widen_constant_casts(torch::jit::Graph& graph, torch::jit::Block* block) {
  for (torch::jit::Node* n : block->nodes()) {
    for (torch::jit::Block* b : n->blocks()) widen_constant_casts(graph, b);
    const c10::FunctionSchema* schema = n->maybeSchema();
    if (!schema || n->outputs().size() != 1 || !n->output()->type()->cast<c10::TensorType>()) continue;
    const c10::optional<int> at = schema->argumentIndexWithName("dtype");
    if (!at || static_cast<size_t>(*at) >= n->inputs().size()) continue;
    const c10::optional<c10::IValue> dtype = torch::jit::toIValue(n->input(*at));
    if (!dtype || !dtype->isInt()) continue;
    const auto t = static_cast<c10::ScalarType>(dtype->toInt());
    if (t != at::kHalf && t != at::kBFloat16 && t != at::kFloat) continue;
    torch::jit::WithInsertPoint point(n->next());
    torch::jit::Value* wide = graph.insert(c10::aten::to, {n->output(), static_cast<int64_t>(at::kDouble)});
    n->output()->replaceAllUsesAfterNodeWith(wide->node(), wide);
  }
}

}  // namespace

torch::jit::Stack run_float64_reference(torch::jit::Graph& source, const std::vector<c10::IValue>& inputs) {
  std::vector<c10::IValue> upcast;
  for (const auto& v : inputs) {
    const bool floating = v.isTensor() && v.toTensor().defined() && v.toTensor().is_floating_point();
    upcast.push_back(floating ? c10::IValue(v.toTensor().to(at::kDouble)) : v);
  }
  auto graph = source.copy();
  upcast_floating_constants(graph->block());
  widen_constant_casts(*graph, graph->block());
  // With float64 inputs and constants, every top-level value narrower than float64 is a cast the
  // graph asks for (.to(torch.bfloat16), .half(), .float(), a dtype argument such as
  // softmax(x, d, dtype=torch.float32) or zeros(..., dtype=...)): it rounds there, as in eager,
  // and returns to float64 right after it is made. (Values inside blocks are not profiled:
  // there only the casts with a constant dtype argument return, widen_constant_casts.)
  const Profile profile = profile_graph(graph, upcast);
  std::vector<torch::jit::Value*> narrow;
  for (torch::jit::Node* n : graph->nodes()) {
    for (torch::jit::Value* out : n->outputs()) {
      auto it = profile.types.find(out);
      if (it == profile.types.end() || !it->second.is_tensor()) continue;
      const auto t = it->second.dtype;
      if (t == at::kHalf || t == at::kBFloat16 || t == at::kFloat) narrow.push_back(out);
    }
  }
  for (torch::jit::Value* v : narrow) {
    torch::jit::WithInsertPoint point(v->node()->next());
    torch::jit::Value* wide = graph->insert(c10::aten::to, {v, static_cast<int64_t>(at::kDouble)});
    v->replaceAllUsesAfterNodeWith(wide->node(), wide);
  }
  torch::jit::Code code(graph, "torchfuse_reference");
  torch::jit::Stack stack(upcast.begin(), upcast.end());
  torch::jit::InterpreterState(code).run(stack);
  return stack;
}

}  // namespace runtime
}  // namespace torchfuse
