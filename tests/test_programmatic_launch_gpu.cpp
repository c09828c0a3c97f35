// Programmatic dependent launch on the GPU (runtime/programmatic_launch.h): with the switch on,
// torchfuse's kernels go out early behind the kernel before them (theirs or cuBLAS's) and wait
// for it in their first statement. A missing or misplaced wait reads a result before it is
// written: these tests queue many calls back to back, with fresh inputs each, directly, through
// recorded launches and in CUDA graph replays, and check every result against eager afterwards.
#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "runtime/driver_api.h"
#include "runtime/programmatic_launch.h"
#include "tests/test_util.h"

namespace {

namespace rt = torchfuse::runtime;

// The switch on for one test, as it was after.
struct SwitchedOn {
  const bool before = rt::programmatic_launch_switched_on();
  SwitchedOn() { rt::set_programmatic_launch(true); }
  ~SwitchedOn() { rt::set_programmatic_launch(before); }
};

// Kernels each reading the one before: a pointwise group, cuBLAS's GEMM, a row group (softmax of
// the GEMM's output plus an input), a column reduction of it, and a pointwise group of both.
torch::jit::Module chain() {
  return tftest::module_from(R"JIT(
def forward(self, x, w, y):
    a = torch.tanh(x * 2.0)
    m = torch.matmul(a, w)
    h = torch.softmax(m + y, dim=-1)
    s = h.sum(0)
    return torch.relu(h * s + a)
)JIT");
}

std::vector<c10::IValue> chain_inputs(c10::ScalarType dtype) {
  const auto o = torch::TensorOptions().device(torch::kCUDA);
  return {torch::randn({64, 256}, o).to(dtype), (torch::randn({256, 256}, o) * 0.1).to(dtype),
          torch::randn({64, 256}, o).to(dtype)};
}

// `calls` calls queued back to back, then each result against eager on its own inputs.
void check_back_to_back(torchfuse::CompiledModule& c, torch::jit::Module& eager, c10::ScalarType dtype, int calls,
                        const char* what) {
  std::vector<std::vector<c10::IValue>> inputs;
  std::vector<at::Tensor> got;
  for (int i = 0; i < calls; ++i) {
    inputs.push_back(chain_inputs(dtype));
    got.push_back(c.forward(inputs.back()).toTensor().clone());
  }
  torch::cuda::synchronize();
  const double tol = dtype == c10::kFloat ? 1e-4 : 2e-2;
  for (int i = 0; i < calls; ++i) {
    const at::Tensor want = eager.forward(inputs[static_cast<size_t>(i)]).toTensor();
    EXPECT_TRUE(torch::allclose(got[static_cast<size_t>(i)].to(torch::kFloat), want.to(torch::kFloat), tol, tol))
        << what << " " << c10::toString(dtype) << " call " << i << ": max error "
        << (got[static_cast<size_t>(i)].to(torch::kFloat) - want.to(torch::kFloat)).abs().max().item<float>();
  }
}

TEST(ProgrammaticLaunchGpu, SwitchedOnWhereTheDeviceCan) {
  REQUIRE_GPU();
  SwitchedOn on;
  EXPECT_EQ(rt::programmatic_launch(0), rt::device_info(0).cc_major >= 9);
  rt::set_programmatic_launch(false);
  EXPECT_FALSE(rt::programmatic_launch(0));
}

TEST(ProgrammaticLaunchGpu, ChainsQueuedBackToBackMatchEager) {
  REQUIRE_GPU();
  torch::manual_seed(41);
  SwitchedOn on;
  auto m = chain();
  for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
    torchfuse::CompiledModule c = torchfuse::compile(m, tftest::quiet_options());
    check_back_to_back(c, m, dtype, 40, "direct and recorded launches");
    EXPECT_GE(c.stats().recorded_calls, 1) << "no call went through a recorded launch";
    const auto report = torchfuse::compare_with_eager(c, chain_inputs(dtype));
    EXPECT_TRUE(report.passed()) << report.to_string();
  }
}

// The benchmarks' control: ordinary launches through cuLaunchKernelEx with no attribute.
TEST(ProgrammaticLaunchGpu, ExtendedLaunchesWithoutTheAttributeMatchEager) {
  REQUIRE_GPU();
  torch::manual_seed(43);
  const bool pdl_before = rt::programmatic_launch_switched_on();
  rt::set_programmatic_launch(false);
  rt::set_extended_launch(true);
  auto m = chain();
  for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
    torchfuse::CompiledModule c = torchfuse::compile(m, tftest::quiet_options());
    check_back_to_back(c, m, dtype, 40, "extended launches");
    EXPECT_GE(c.stats().recorded_calls, 1) << "no call went through a recorded launch";
  }
  rt::set_extended_launch(false);
  rt::set_programmatic_launch(pdl_before);
}

TEST(ProgrammaticLaunchGpu, GraphReplaysMatchEager) {
  REQUIRE_GPU();
  torch::manual_seed(42);
  SwitchedOn on;
  auto m = chain();
  torchfuse::CompileOptions o = tftest::quiet_options();
  o.cuda_graphs = true;
  for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
    torchfuse::CompiledModule c = torchfuse::compile(m, o);
    check_back_to_back(c, m, dtype, 40, "graph replays");
    EXPECT_GE(c.stats().cuda_graph_replays, 1) << "no call replayed a graph";
  }
}

}  // namespace
