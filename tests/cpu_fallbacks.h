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

// The module compiled with its groups on their ATen fallbacks against eager: two calls on fresh
// standard-normal inputs of `shape`, each output tensor's values within float32 tolerances,
// strides eager's.
inline void expect_fallbacks_match_eager(const torch::jit::Module& m, const torchfuse::CompileOptions& options,
                                         const std::vector<int64_t>& shape) {
  auto impl = on_cpu_fallbacks(m, options);
  for (int call = 0; call < 2; ++call) {
    const std::vector<c10::IValue> in = {torch::randn(shape)};
    const std::vector<at::Tensor> got = output_tensors(impl->forward(in)), want = output_tensors(impl->forward_eager(in));
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(got.empty());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-4, 1e-5)) << "output " << i << ": " << (got[i] - want[i]).abs().max();
      EXPECT_EQ(got[i].strides(), want[i].strides()) << "output " << i;
    }
  }
}

}  // namespace tftest
