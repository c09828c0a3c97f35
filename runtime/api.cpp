// The public entry points: compile() for modules, graphs, callables and nn::Modules.
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/csrc/jit/passes/frozen_graph_optimizations.h>
#include <ATen/Context.h>

#include "runtime/driver_api.h"
#include "runtime/compiled_module.h"
#include "src/export_contract.h"
#include "src/export_graph.h"
#include "src/export_reader.h"
#include "src/prepare_graph.h"
#include "src/sibling_weights.h"
#include "src/error.h"

namespace torchfuse {

CompiledModule::CompiledModule(std::shared_ptr<CompiledModuleImpl> impl) : impl_(std::move(impl)) {}

c10::IValue CompiledModule::forward(std::vector<c10::IValue> inputs) { return impl_->forward(std::move(inputs)); }
c10::IValue CompiledModule::forward_eager(std::vector<c10::IValue> inputs) {
  return impl_->forward_eager(std::move(inputs));
}
std::vector<KernelInfo> CompiledModule::kernels() const { return impl_->kernels(); }
Explanation CompiledModule::explain(const std::vector<c10::IValue>& inputs, bool compile_kernels) const {
  return impl_->explain(inputs, compile_kernels);
}
Stats CompiledModule::stats() const { return impl_->stats(); }
std::vector<at::Tensor> CompiledModule::cuda_graph_inputs(const std::vector<c10::IValue>& inputs) const {
  return impl_->cuda_graph_inputs(inputs);
}
std::string CompiledModule::graph_for(const std::vector<c10::IValue>& inputs) const { return impl_->graph_for(inputs); }
c10::IValue CompiledModule::forward_reference(const std::vector<c10::IValue>& inputs) {
  return impl_->forward_reference(inputs);
}
std::vector<c10::ScalarType> CompiledModule::value_dtypes(const std::vector<c10::IValue>& inputs) const {
  return impl_->value_dtypes(inputs);
}

CompiledModule compile(const torch::jit::Module& module, CompileOptions options) {
  return CompiledModule(std::make_shared<CompiledModuleImpl>(prepare_module_graph(module), std::move(options)));
}

CompiledModule compile_graph(std::shared_ptr<torch::jit::Graph> graph, CompileOptions options) {
  TORCHFUSE_CHECK(graph != nullptr, "torchfuse::compile_graph: graph is null");
  auto copy = graph->copy();
  prepare_graph(copy);
  return CompiledModule(std::make_shared<CompiledModuleImpl>(copy, std::move(options)));
}

namespace {

CompiledModule compile_exported_on(const std::string& path, const std::optional<c10::Device>& device,
                                   CompileOptions options) {
  const exported::Program program = exported::read_program(path);
  auto graph = exported::build_graph(program, device);
  // What freeze() runs on a module's graph (the TorchScript front door): the weights are constants
  // here too, so linears of one input become one (the q, k, v projections), convolutions fold their
  // batch norms, and so on. Both front doors then plan the same graph.
  torch::jit::OptimizeFrozenGraph(graph, /*optimize_numerics=*/true);
  prepare_graph(graph);
  store_sibling_weights_together(*graph);  // the program's weights, read from the archive: torchfuse's own
  auto impl = std::make_shared<CompiledModuleImpl>(graph, std::move(options));
  impl->set_input_check([contract = exported::contract_of(program, device)](const std::vector<c10::IValue>& inputs) {
    contract.check(inputs);
  });
  return CompiledModule(impl);
}

}  // namespace

CompiledModule compile_exported(const std::string& path, CompileOptions options) {
  return compile_exported_on(path, std::nullopt, std::move(options));
}

CompiledModule compile_exported(const std::string& path, const c10::Device& device, CompileOptions options) {
  return compile_exported_on(path, device, std::move(options));
}

CompiledModule compile(const TensorFn& fn, const std::vector<at::Tensor>& example_inputs, CompileOptions options) {
  TORCHFUSE_CHECK(static_cast<bool>(fn), "torchfuse::compile: the callable is empty");
  TORCHFUSE_CHECK(!example_inputs.empty(), "torchfuse::compile: tracing needs at least one example input");
  torch::jit::Stack inputs;
  for (const auto& t : example_inputs) {
    TORCHFUSE_CHECK(t.defined(), "torchfuse::compile: example inputs must be defined tensors");
    inputs.emplace_back(t);
  }
  auto traced = [&fn](torch::jit::Stack in) -> torch::jit::Stack {
    std::vector<at::Tensor> tensors;
    for (auto& v : in) tensors.push_back(v.toTensor());
    std::vector<at::Tensor> outs = fn(tensors);
    TORCHFUSE_CHECK(!outs.empty(), "torchfuse::compile: the traced callable returned no tensors");
    if (outs.size() == 1) return {outs[0]};
    std::vector<c10::IValue> elems(outs.begin(), outs.end());
    return {c10::ivalue::Tuple::create(std::move(elems))};
  };
  std::shared_ptr<torch::jit::tracer::TracingState> state;
  {
    // Tracing records ops; autograd bookkeeping would only add noise.
    at::NoGradGuard no_grad;
    state = torch::jit::tracer::trace(std::move(inputs), traced, [](const at::Tensor&) { return std::string(); },
                                      /*strict=*/false, /*force_outplace=*/false)
                .first;
  }
  auto graph = state->graph;
  prepare_graph(graph);
  return CompiledModule(std::make_shared<CompiledModuleImpl>(graph, std::move(options)));
}

bool cuda_available() { return at::hasCUDA() && runtime::driver_api() != nullptr; }

}  // namespace torchfuse
