#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "src/error.h"
#include "src/frontend.h"

namespace torchfuse {

ir::Type type_of_ivalue(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return ir::Type::other();
    if (t.layout() != c10::kStrided) return ir::Type::other();
    return ir::Type::tensor(t.scalar_type(), t.sizes().vec(), t.strides().vec(), t.device());
  }
  if (v.isDouble()) return ir::Type::scalar(c10::ScalarType::Double);
  if (v.isInt()) return ir::Type::scalar(c10::ScalarType::Long);
  if (v.isBool()) return ir::Type::scalar(c10::ScalarType::Bool);
  return ir::Type::other();
}

namespace {

bool any_16bit_cpu_tensor(const std::vector<c10::IValue>& inputs) {
  for (const auto& v : inputs) {
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    const at::Tensor& t = v.toTensor();
    if (!t.device().is_cpu()) return false;
    if (t.scalar_type() == c10::kHalf || t.scalar_type() == c10::kBFloat16) return true;
  }
  return false;
}

// The inputs as meta tensors: same dtypes, sizes and strides, no data.
std::vector<c10::IValue> on_meta(const std::vector<c10::IValue>& inputs) {
  std::vector<c10::IValue> out;
  for (const auto& v : inputs) {
    if (!v.isTensor() || !v.toTensor().defined()) {
      out.push_back(v);
      continue;
    }
    const at::Tensor& t = v.toTensor();
    out.emplace_back(at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta)));
  }
  return out;
}

// Runs the graph once on `inputs`, every top-level value exposed.
Profile run_profile(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& inputs) {
  TORCHFUSE_CHECK(inputs.size() == graph->inputs().size(), "torchfuse: forward expects ",
                  graph->inputs().size(), " inputs, got ", inputs.size());
  // Expose every top-level value as an extra output, run once, then restore the graph.
  const size_t original_outputs = graph->outputs().size();
  std::vector<const torch::jit::Value*> exposed;
  for (torch::jit::Node* n : graph->nodes()) {
    for (torch::jit::Value* out : n->outputs()) {
      graph->registerOutput(out);
      exposed.push_back(out);
    }
  }
  torch::jit::Stack stack(inputs.begin(), inputs.end());
  try {
    torch::jit::Code code(graph, "torchfuse_profile");
    torch::jit::InterpreterState state(code);
    state.run(stack);
  } catch (...) {
    while (graph->outputs().size() > original_outputs) graph->eraseOutput(graph->outputs().size() - 1);
    throw;
  }
  while (graph->outputs().size() > original_outputs) graph->eraseOutput(graph->outputs().size() - 1);
  TORCHFUSE_INTERNAL_ASSERT(stack.size() == original_outputs + exposed.size(), "profiling returned ",
                            stack.size(), " values");

  Profile profile;
  auto record = [&profile](const torch::jit::Value* v, const c10::IValue& iv) {
    profile.types[v] = type_of_ivalue(iv);
    if (iv.isInt()) profile.ints[v] = iv.toInt();
  };
  for (size_t i = 0; i < inputs.size(); ++i) record(graph->inputs()[i], inputs[i]);
  for (size_t i = 0; i < exposed.size(); ++i) record(exposed[i], stack[original_outputs + i]);
  stack.resize(original_outputs);
  profile.result = graph_result(stack);
  return profile;
}

}  // namespace


Profile profile_graph(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& inputs) {
  try {
    return run_profile(graph, inputs);
  } catch (const std::exception&) {
    // LibTorch's CPU kernels lack some fp16/bf16 ops (1.13: Half softmax), but planning needs
    // only types: run on meta tensors, and take their types as the CPU's. Where meta cannot run
    // the graph either, the CPU's error stands.
    if (!any_16bit_cpu_tensor(inputs)) throw;
    const std::exception_ptr cpu_error = std::current_exception();
    Profile meta;
    try {
      meta = run_profile(graph, on_meta(inputs));
    } catch (const std::exception&) {
      std::rethrow_exception(cpu_error);
    }
    for (auto& [value, type] : meta.types)
      if (type.is_tensor()) type.device = c10::Device(c10::kCPU);
    meta.result = c10::IValue();  // no values were computed
    return meta;
  }
}

}  // namespace torchfuse
