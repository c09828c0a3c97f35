// CompileOptions::cuda_graphs on the GPU: capture after the warm-up calls, replays against eager
// with fresh inputs every call (f32 and bf16), a graph per new signature up to the limit, the
// lifetime of outputs (copied by default, the graph's own with zero-copy), static inputs that
// save the copies, split reductions (their counters) inside graphs, captures that fail (a host
// synchronization, a CPU tensor input) running uncaptured with the reason, and threads on their
// own streams sharing one module's graphs. Every test skips without a CUDA device.
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <thread>

#include "tests/gpu_view_util.h"
#include "tests/test_util.h"

namespace {

using tftest::have_gpu;

torchfuse::CompileOptions graphs(int warmup = 2) {
  auto o = tftest::quiet_options();
  o.cuda_graphs = true;
  o.cuda_graph_warmup_calls = warmup;
  return o;
}

// Fused groups on both sides of a GEMM, a softmax and a layer norm: kernels and ATen ops in one graph.
torch::jit::Module block() {
  return tftest::module_from(R"JIT(
def forward(self, x, w):
    h = torch.layer_norm(x, [x.size(-1)], None, None, 1e-5) * 1.5 + 0.25
    m = torch.matmul(h, w)
    a = torch.gelu(m + 1.0) * torch.sigmoid(m)
    return torch.softmax(a * 0.5, -1) + a
)JIT");
}

void expect_matches_eager(torchfuse::CompiledModule& c, const std::vector<c10::IValue>& in, const c10::IValue& got,
                          const std::string& label) {
  SCOPED_TRACE(label);
  const auto report = torchfuse::compare_outputs_with_reference(c.forward_eager(in), got, c.forward_reference(in));
  EXPECT_TRUE(report.passed()) << report.to_string();
}

class CudaGraphsGpu : public ::testing::TestWithParam<c10::ScalarType> {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(CudaGraphsGpu, CapturedAfterWarmupAndReplayedWithFreshInputs) {
  auto c = torchfuse::compile(block(), graphs());
  for (int i = 0; i < 8; ++i) {
    const auto in = tftest::random_cuda_inputs({{16, 64}, {64, 96}}, GetParam());
    const c10::IValue got = c.forward(in);
    expect_matches_eager(c, in, got, "call " + std::to_string(i));
  }
  const auto s = c.stats();
  EXPECT_EQ(s.cuda_graph_captures, 1);
  EXPECT_EQ(s.cuda_graph_uncaptured_calls, 3);  // two warm-up calls, then the capturing call
  EXPECT_EQ(s.cuda_graph_replays, 5);
  EXPECT_EQ(s.cuda_graph_input_copies, 10);
  EXPECT_TRUE(s.cuda_graph_refusals.empty());
  EXPECT_EQ(s.fused_calls, 8);
  EXPECT_GE(tftest::fusion_nodes(c.graph_for(tftest::random_cuda_inputs({{16, 64}, {64, 96}}, GetParam()))), 2);
  EXPECT_EQ(c.explain(tftest::random_cuda_inputs({{16, 64}, {64, 96}}, GetParam())).cuda_graphs, "captured");
}

TEST_P(CudaGraphsGpu, EachNewSignatureCapturesItsOwnGraphUpToTheLimit) {
  auto o = graphs(0);
  o.max_specializations = 2;
  auto c = torchfuse::compile(block(), o);
  const std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{16, 64}, {64, 96}}, {{8, 32}, {32, 48}}, {{4, 64}, {64, 96}}};
  for (int round = 0; round < 3; ++round) {
    for (const auto& s : shapes) {
      const auto in = tftest::random_cuda_inputs(s, GetParam());
      expect_matches_eager(c, in, c.forward(in), "round " + std::to_string(round));
    }
  }
  const auto s = c.stats();
  // One specialization serves the three sizes; graphs are per exact size, two at most.
  EXPECT_EQ(s.specializations, 1);
  EXPECT_EQ(s.cuda_graph_captures, 2);
  EXPECT_EQ(s.cuda_graph_replays, 4);
  EXPECT_EQ(s.cuda_graph_uncaptured_calls, 2 + 3);  // the capturing calls, and every call of the third size
  ASSERT_EQ(s.cuda_graph_refusals.size(), 1u);
  EXPECT_TRUE(tftest::contains_in_order(s.cuda_graph_refusals[0],
                                        {"[4, 64]", "2 graphs are captured already", "max_specializations"}))
      << s.cuda_graph_refusals[0];
}

TEST_P(CudaGraphsGpu, OutputsAreCopiesUnlessZeroCopy) {
  for (bool zero_copy : {false, true}) {
    SCOPED_TRACE(zero_copy ? "zero-copy" : "copied");
    auto o = graphs(0);
    o.cuda_graph_zero_copy_outputs = zero_copy;
    auto c = torchfuse::compile(block(), o);
    c.forward(tftest::random_cuda_inputs({{16, 64}, {64, 96}}, GetParam()));  // captures
    const auto in1 = tftest::random_cuda_inputs({{16, 64}, {64, 96}}, GetParam());
    const at::Tensor out1 = c.forward(in1).toTensor();
    const at::Tensor kept = out1.clone();
    const auto in2 = tftest::random_cuda_inputs({{16, 64}, {64, 96}}, GetParam());
    const at::Tensor out2 = c.forward(in2).toTensor();
    expect_matches_eager(c, in2, out2, "second replay");
    if (zero_copy) {
      // The graph's own tensor: the next replay overwrote it.
      EXPECT_EQ(out1.data_ptr(), out2.data_ptr());
      EXPECT_TRUE(torch::equal(out1, out2));
    } else {
      EXPECT_NE(out1.data_ptr(), out2.data_ptr());
      EXPECT_TRUE(torch::equal(out1, kept));
      expect_matches_eager(c, in1, out1, "first replay's output after the second");
    }
    EXPECT_EQ(c.stats().cuda_graph_replays, 2);
  }
}

TEST_P(CudaGraphsGpu, PassingTheStaticInputsSavesTheCopies) {
  auto c = torchfuse::compile(block(), graphs(0));
  const auto first = tftest::random_cuda_inputs({{16, 64}, {64, 96}}, GetParam());
  EXPECT_TRUE(c.cuda_graph_inputs(first).empty());
  c.forward(first);
  std::vector<at::Tensor> statics = c.cuda_graph_inputs(first);
  ASSERT_EQ(statics.size(), 2u);
  const int64_t copies = c.stats().cuda_graph_input_copies;
  for (int i = 0; i < 3; ++i) {
    const auto fresh = tftest::random_cuda_inputs({{16, 64}, {64, 96}}, GetParam());
    statics[0].copy_(fresh[0].toTensor());
    statics[1].copy_(fresh[1].toTensor());
    const c10::IValue got = c.forward({statics[0], statics[1]});
    expect_matches_eager(c, fresh, got, "static inputs " + std::to_string(i));
  }
  EXPECT_EQ(c.stats().cuda_graph_input_copies, copies);
  EXPECT_EQ(c.stats().cuda_graph_replays, 3);
}

// Transposed and sliced inputs keep their strides in the static buffers (same kernels).
TEST_P(CudaGraphsGpu, StridedInputsReplay) {
  auto c = torchfuse::compile(tftest::module_returning("x, y", "torch.relu(x * y + 1.0) * torch.sigmoid(x)"), graphs(1));
  for (int i = 0; i < 5; ++i) {
    const auto base = tftest::random_cuda_inputs({{64, 48}, {48, 130}}, GetParam());
    const at::Tensor x = base[0].toTensor().t();                                  // [48, 64], transposed
    const at::Tensor y = base[1].toTensor().narrow(1, 3, 64);                      // [48, 64], a slice
    expect_matches_eager(c, {x, y}, c.forward({x, y}), "call " + std::to_string(i));
  }
  EXPECT_EQ(c.stats().cuda_graph_replays, 3);
}

// Split reductions count finished blocks in counters; inside graphs they are the graph's own.
TEST_P(CudaGraphsGpu, SplitReductionsReplayAcrossTwoModules) {
  auto a = torchfuse::compile(tftest::module_returning("x", "(x * x).mean()"), graphs(0));
  auto b = torchfuse::compile(tftest::module_returning("x", "torch.sigmoid(x).sum(0)"), graphs(0));
  for (int i = 0; i < 4; ++i) {
    const auto xa = tftest::random_cuda_inputs({{2048, 4096}}, GetParam());
    const auto xb = tftest::random_cuda_inputs({{8192, 256}}, GetParam());
    const c10::IValue ra = a.forward(xa);
    const c10::IValue rb = b.forward(xb);
    expect_matches_eager(a, xa, ra, "mean " + std::to_string(i));
    expect_matches_eager(b, xb, rb, "column sum " + std::to_string(i));
  }
  EXPECT_EQ(a.stats().cuda_graph_replays, 3);
  EXPECT_EQ(b.stats().cuda_graph_replays, 3);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaGraphsGpu, ::testing::Values(at::kFloat, at::kBFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

// A host synchronization inside the graph (.item() through int()) cannot be captured: the
// capture fails, the signature runs uncaptured for good, results stay right, stats say why.
TEST(CudaGraphsGpuRefusals, HostSynchronizationRunsUncaptured) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  auto c = torchfuse::compile(tftest::module_from(R"JIT(
def forward(self, x):
    k = int(torch.argmax(x[0]))
    return torch.relu(x * 2.0 + 1.0) * k
)JIT"),
                              graphs(1));
  for (int i = 0; i < 5; ++i) {
    const auto in = tftest::random_cuda_inputs({{32, 64}}, at::kFloat);
    expect_matches_eager(c, in, c.forward(in), "call " + std::to_string(i));
  }
  const auto s = c.stats();
  EXPECT_EQ(s.cuda_graph_captures, 0);
  EXPECT_EQ(s.cuda_graph_replays, 0);
  EXPECT_EQ(s.cuda_graph_uncaptured_calls, 5);
  ASSERT_EQ(s.cuda_graph_refusals.size(), 1u);
  EXPECT_TRUE(tftest::contains_in_order(s.cuda_graph_refusals[0], {"(f32[32, 64])", "CUDA graph capture failed"}))
      << s.cuda_graph_refusals[0];
  EXPECT_TRUE(tftest::contains_in_order(c.explain(tftest::random_cuda_inputs({{32, 64}}, at::kFloat)).cuda_graphs,
                                        {"uncaptured: ", "capture failed"}));
  EXPECT_EQ(s.fallback_groups, 0);  // the failed capture blamed no kernel
}

// Random ops cannot be replayed with fresh numbers from a graph torchfuse captured (the default
// generator stays out of captures, so that other threads' random ops never see it in capture
// mode): the capture fails and the calls run uncaptured; random numbers keep working.
TEST(CudaGraphsGpuRefusals, RandomOpsRunUncapturedAndTheGeneratorStaysUsable) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  auto c = torchfuse::compile(tftest::module_returning("x", "torch.relu(x * 2.0 + 1.0) * torch.rand_like(x)"), graphs(0));
  std::vector<at::Tensor> outs;
  for (int i = 0; i < 3; ++i) {
    const at::Tensor x = torch::randn({16, 32}, torch::kCUDA).abs() + 0.5;
    const at::Tensor out = c.forward({x}).toTensor();
    // relu(2x + 1) * u with u in [0, 1): between 0 and relu(2x + 1), and not the same each call.
    EXPECT_TRUE((out >= 0).all().item<bool>());
    EXPECT_TRUE((out <= torch::relu(x * 2.0 + 1.0)).all().item<bool>());
    outs.push_back(out / torch::relu(x * 2.0 + 1.0));
  }
  EXPECT_FALSE(torch::allclose(outs[1], outs[2]));
  const auto s = c.stats();
  EXPECT_EQ(s.cuda_graph_captures, 0);
  ASSERT_EQ(s.cuda_graph_refusals.size(), 1u);
  EXPECT_TRUE(tftest::contains_in_order(s.cuda_graph_refusals[0], {"capture failed"})) << s.cuda_graph_refusals[0];
  EXPECT_NO_THROW(torch::randn({4}, torch::kCUDA).sum().item<float>());
}

TEST(CudaGraphsGpuRefusals, CpuTensorInputRunsUncaptured) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  auto c = torchfuse::compile(tftest::module_returning("x, s", "torch.relu(x * s + 1.0) * 2.0"), graphs(0));
  for (int i = 0; i < 3; ++i) {
    const std::vector<c10::IValue> in = {torch::randn({8, 32}, torch::kCUDA), torch::randn({})};
    expect_matches_eager(c, in, c.forward(in), "call " + std::to_string(i));
  }
  const auto s = c.stats();
  EXPECT_EQ(s.cuda_graph_captures, 0);
  ASSERT_EQ(s.cuda_graph_refusals.size(), 1u);
  EXPECT_TRUE(tftest::contains_in_order(s.cuda_graph_refusals[0], {"input 1 holds a CPU tensor"}));
}

TEST(CudaGraphsGpuRefusals, ProfilingRunsUncaptured) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  auto o = graphs(0);
  o.profile_kernels = true;
  auto c = torchfuse::compile(block(), o);
  const auto in = tftest::random_cuda_inputs({{16, 64}, {64, 96}}, at::kFloat);
  expect_matches_eager(c, in, c.forward(in), "profiled");
  EXPECT_EQ(c.stats().cuda_graph_captures, 0);
  EXPECT_TRUE(tftest::contains_in_order(c.explain(in).cuda_graphs, {"uncaptured", "profile_kernels"}));
}

// Threads on streams of their own call one module: replays are ordered, every result is eager's
// (computed on the same stream), and graphs of two signatures interleave.
TEST(CudaGraphsGpuThreads, ThreadsOnTheirOwnStreamsShareTheGraphs) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  auto c = torchfuse::compile(block(), graphs(1));
  const c10::Device device("cuda:0");
  constexpr int kThreads = 4;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      c10::Stream stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStreamFromGlobalPool(device, false);
      c10::StreamGuard guard(stream);
      for (int i = 0; i < 40; ++i) {
        const bool small = (i + t) % 2 == 0;
        const auto in = tftest::random_cuda_inputs(small ? std::vector<std::vector<int64_t>>{{8, 64}, {64, 96}}
                                                         : std::vector<std::vector<int64_t>>{{32, 64}, {64, 96}},
                                                   at::kFloat);
        const at::Tensor got = c.forward(in).toTensor();
        const at::Tensor want = c.forward_eager(in).toTensor();
        if (!torch::allclose(got, want, 1e-4, 1e-4)) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  const auto s = c.stats();
  EXPECT_EQ(s.cuda_graph_captures, 2);
  EXPECT_GT(s.cuda_graph_replays, 100);
  EXPECT_TRUE(s.cuda_graph_refusals.empty());
}

}  // namespace
