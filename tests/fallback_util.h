// CPU tests of graph rewrites: the module's rewritten graph run with its fusion groups on their
// ATen fallbacks (no GPU needed), against eager.
#pragma once

#include <utility>
#include <vector>

#include "runtime/compiled_module.h"
#include "src/prepare_graph.h"
#include "tests/test_util.h"

namespace tftest {

// The module's forward (reading no attribute) compiled with its groups on their ATen fallbacks:
// {its result, eager's} for `in`.
inline std::pair<at::Tensor, at::Tensor> fallback_and_eager(const torch::jit::Module& m, const std::vector<c10::IValue>& in) {
  auto graph = m.get_method("forward").graph()->copy();
  graph->eraseInput(0);  // self
  torchfuse::prepare_graph(graph);
  auto impl = std::make_shared<torchfuse::CompiledModuleImpl>(graph, quiet_options());
  torchfuse::CompiledModuleImpl::TestHooks hooks;
  hooks.cpu_fallbacks = true;
  impl->set_test_hooks(hooks);
  return {impl->forward(in).toTensor(), impl->forward_eager(in).toTensor()};
}

// The same for a module with parameters and buffers: its forward frozen as compile() prepares it,
// run on the ATen fallbacks, against the module's own forward.
inline std::pair<at::Tensor, at::Tensor> frozen_fallback_and_eager(const torch::jit::Module& m,
                                                                    const std::vector<c10::IValue>& in) {
  auto impl = std::make_shared<torchfuse::CompiledModuleImpl>(torchfuse::prepare_module_graph(m), quiet_options());
  torchfuse::CompiledModuleImpl::TestHooks hooks;
  hooks.cpu_fallbacks = true;
  impl->set_test_hooks(hooks);
  torch::jit::Module eager = m;
  return {impl->forward(in).toTensor(), eager.forward(in).toTensor()};
}

}  // namespace tftest
