// A compiled module whose groups exist without a GPU: its CPU calls build specializations with
// every group on its fallback graph (CompiledModuleImpl::TestHooks::cpu_fallbacks), and each
// group call runs FusedKernel::run as a fused call would, its ATen ops instead of a kernel.
#pragma once

#include <memory>

#include "runtime/compiled_module.h"
#include "src/prepare_graph.h"
#include "tests/test_util.h"

namespace tftest {

inline std::shared_ptr<torchfuse::CompiledModuleImpl> on_cpu_fallbacks(const torch::jit::Module& m,
                                                                       const torchfuse::CompileOptions& options = quiet_options()) {
  auto impl = std::make_shared<torchfuse::CompiledModuleImpl>(torchfuse::prepare_module_graph(m), options);
  torchfuse::CompiledModuleImpl::TestHooks hooks;
  hooks.cpu_fallbacks = true;
  impl->set_test_hooks(hooks);
  return impl;
}

}  // namespace tftest
