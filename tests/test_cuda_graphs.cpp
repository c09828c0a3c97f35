// CompileOptions::cuda_graphs without a GPU: option checks, the environment switch, what
// explain() and stats() say of calls that cannot be captured, and the counter arena captured
// split reductions use. Capture and replay themselves are tested on the GPU
// (tests/test_cuda_graphs_gpu.cpp).
#include <cstdlib>

#include "runtime/cuda_graphs.h"
#include "runtime/launch_util.h"
#include "tests/cpu_fallbacks.h"
#include "tests/test_util.h"

namespace {

using tftest::on_cpu_fallbacks;

torch::jit::Module chain() { return tftest::module_returning("x, y", "torch.relu(x * y + 1.0) * 2.0"); }

torchfuse::CompileOptions graphs_on() {
  auto o = tftest::quiet_options();
  o.cuda_graphs = true;
  return o;
}

TEST(CudaGraphs, NegativeWarmupIsAnErrorNamingTheField) {
  auto o = graphs_on();
  o.cuda_graph_warmup_calls = -1;
  tftest::expect_error([&] { torchfuse::compile(chain(), o); }, {"cuda_graph_warmup_calls", "at least 0", "-1"});
}

TEST(CudaGraphs, ExplainSaysOffWithoutTheOption) {
  auto c = torchfuse::compile(chain(), tftest::quiet_options());
  const auto e = c.explain({torch::randn({4, 8}), torch::randn({4, 8})});
  EXPECT_EQ(e.cuda_graphs, "off");
  EXPECT_TRUE(c.cuda_graph_inputs({torch::randn({4, 8}), torch::randn({4, 8})}).empty());
}

TEST(CudaGraphs, EnvironmentSwitchesThemOn) {
  ::setenv("TORCHFUSE_CUDA_GRAPHS", "1", 1);
  auto c = torchfuse::compile(chain(), tftest::quiet_options());
  ::unsetenv("TORCHFUSE_CUDA_GRAPHS");
  const auto e = c.explain({torch::randn({4, 8}), torch::randn({4, 8})});
  EXPECT_NE(e.cuda_graphs, "off");
  // CPU tensors run eager: nothing to capture, and explain says why.
  EXPECT_TRUE(tftest::contains_in_order(e.cuda_graphs, {"uncaptured", "runs eager", "no input is a CUDA tensor"}))
      << e.cuda_graphs;
}

// Fused calls that run on the CPU (the test hook) go through the graph runner, which refuses
// them once with the reason and runs them as without graphs.
TEST(CudaGraphs, CallsOffTheGpuRunUncapturedWithTheReason) {
  auto impl = on_cpu_fallbacks(chain(), graphs_on());
  for (int i = 0; i < 4; ++i) {
    const auto x = torch::randn({4, 8});
    const auto y = torch::randn({4, 8});
    const at::Tensor got = impl->forward({x, y}).toTensor();
    EXPECT_TRUE(torch::allclose(got, torch::relu(x * y + 1.0) * 2.0));
  }
  const auto s = impl->stats();
  EXPECT_EQ(s.fused_calls, 4);
  EXPECT_EQ(s.cuda_graph_captures, 0);
  EXPECT_EQ(s.cuda_graph_replays, 0);
  EXPECT_EQ(s.cuda_graph_uncaptured_calls, 4);
  ASSERT_EQ(s.cuda_graph_refusals.size(), 1u);
  EXPECT_TRUE(tftest::contains_in_order(s.cuda_graph_refusals[0], {"(f32[4, 8], f32[4, 8])", "runs on cpu", "not on a GPU"}))
      << s.cuda_graph_refusals[0];
  const auto e = impl->explain({torch::randn({4, 8}), torch::randn({4, 8})}, false);
  EXPECT_TRUE(tftest::contains_in_order(e.cuda_graphs, {"uncaptured:", "runs on cpu"})) << e.cuda_graphs;
  EXPECT_TRUE(impl->cuda_graph_inputs({torch::randn({4, 8}), torch::randn({4, 8})}).empty());
}

// A module-wide refusal (profile_kernels times every kernel with events, which a graph would
// freeze) names itself.
TEST(CudaGraphs, ModuleWideRefusalNamesItself) {
  torchfuse::runtime::GraphPolicy policy;
  policy.refused = "profile_kernels times every kernel with CUDA events";
  torchfuse::runtime::GraphRunner runner(policy);
  int runs = 0;
  const auto run = [&](const std::vector<c10::IValue>& in) {
    ++runs;
    return c10::IValue(in[0].toTensor() + 1);
  };
  const auto x = torch::randn({3});
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(torch::equal(runner.call({x}, c10::Device("cuda:0"), nullptr, run).toTensor(), x + 1));
  EXPECT_EQ(runs, 3);
  const auto counts = runner.counts();
  EXPECT_EQ(counts.uncaptured_calls, 3);
  ASSERT_EQ(counts.refusals.size(), 1u);
  EXPECT_TRUE(tftest::contains_in_order(counts.refusals[0], {"(f32[3])", "profile_kernels"}));
  EXPECT_TRUE(tftest::contains_in_order(runner.status({x}, c10::Device("cuda:0")), {"uncaptured", "profile_kernels"}));
}

// Inside a capture, split reductions take their counters from the graph's arena: zeroed buffers
// the graph keeps, grown by adding a buffer (earlier ones stay: captured kernels point into them).
TEST(CudaGraphs, CapturedCountersComeFromTheGraphsArena) {
  torchfuse::runtime::CounterArena arena;
  const c10::Device cpu("cpu");
  {
    torchfuse::runtime::ScopedCounterArena scope(&arena);
    void* first = torchfuse::runtime::stream_counters(cpu, 10);
    ASSERT_EQ(arena.buffers.size(), 1u);
    EXPECT_EQ(first, arena.buffers[0].data_ptr());
    EXPECT_GE(arena.buffers[0].numel(), 10);
    EXPECT_EQ(arena.buffers[0].sum().item<int64_t>(), 0);
    EXPECT_EQ(torchfuse::runtime::stream_counters(cpu, 12), first);  // fits: shared, as on a stream
    void* grown = torchfuse::runtime::stream_counters(cpu, 5000);
    ASSERT_EQ(arena.buffers.size(), 2u);
    EXPECT_NE(grown, first);
    EXPECT_GE(arena.buffers[1].numel(), 5000);
    EXPECT_EQ(arena.buffers[0].data_ptr(), first);  // still held
  }
}

}  // namespace
