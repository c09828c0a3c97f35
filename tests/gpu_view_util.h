// Helpers of the GPU tests that run view and cat chains as one kernel against eager
// (tests/test_views_gpu.cpp, tests/test_cat_gpu.cpp).
#pragma once

#include <torch/cuda.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "tests/test_util.h"

namespace tftest {

// Fresh standard-normal CUDA inputs of the given shapes, in `dtype`.
inline std::vector<c10::IValue> random_cuda_inputs(const std::vector<std::vector<int64_t>>& shapes, c10::ScalarType dtype) {
  std::vector<c10::IValue> in;
  for (const auto& s : shapes) in.emplace_back(torch::randn(s, torch::TensorOptions().device(torch::kCUDA)).to(dtype));
  return in;
}

// Quiet options whose fused outputs start as NaN: an element a kernel fails to write shows.
inline torchfuse::CompileOptions poisoned_options() {
  auto o = quiet_options();
  o.debug_poison_outputs = true;
  return o;
}

// One fused call on `in`: one kernel launched, one fusion node, eager's values.
inline void expect_one_fused_kernel(torchfuse::CompiledModule& c, const std::vector<c10::IValue>& in, const std::string& label) {
  SCOPED_TRACE(label);
  const auto before = c.stats();
  const auto report = torchfuse::compare_with_eager(c, in);
  torch::cuda::synchronize();
  const auto after = c.stats();
  EXPECT_TRUE(report.passed()) << report.to_string() << c.graph_for(in);
  EXPECT_EQ(after.fused_calls - before.fused_calls, 1);
  EXPECT_EQ(after.kernel_launches - before.kernel_launches, 1) << c.graph_for(in);
  EXPECT_EQ(after.fallback_calls - before.fallback_calls, 0);
  EXPECT_EQ(fusion_nodes(c.graph_for(in)), 1) << c.graph_for(in);
}

}  // namespace tftest
