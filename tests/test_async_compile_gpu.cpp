// CompileOptions::async_compile on a GPU: the first call of a new signature runs eager (right
// results at once) while its kernels compile on the module's worker; later calls switch to the
// fused graph. fp32 and bf16, fresh random inputs, inputs made on a side stream just before the
// call (the worker's stream waits for them). Skipped when no CUDA device is present.
#include <chrono>
#include <iostream>
#include <thread>

#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/test_util.h"

namespace {

torch::jit::Module pointwise_and_softmax() {
  return tftest::module_from(R"JIT(
def forward(self, x, y):
    h = torch.gelu(x * 2.0 + y)
    return (h * torch.sigmoid(y), torch.softmax(h - 1.0, -1))
)JIT");
}

torchfuse::CompileOptions async_options() {
  auto o = tftest::quiet_options();
  o.async_compile = true;
  o.debug_poison_outputs = true;
  return o;
}

std::vector<c10::IValue> inputs(std::vector<int64_t> sizes, c10::ScalarType dtype) {
  const auto opts = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
  return {torch::randn(sizes, opts), torch::randn(sizes, opts)};
}

// Compiled against eager and the float64 reference, by the dtype's tolerance.
std::string mismatch(torchfuse::CompiledModule& c, const std::vector<c10::IValue>& in, const c10::IValue& actual) {
  const auto report = torchfuse::compare_outputs_with_reference(c.forward_eager(in), actual, c.forward_reference(in));
  return report.passed() ? "" : report.to_string();
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Calls with fresh inputs (every result checked) until the signature runs fused, at most 120 s.
// Returns the calls made.
int call_until_fused(torchfuse::CompiledModule& c, const std::vector<int64_t>& sizes, c10::ScalarType dtype) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int calls = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const int64_t fused_before = c.stats().fused_calls;
    const auto in = inputs(sizes, dtype);
    const auto out = c.forward(in);
    ++calls;
    EXPECT_EQ(mismatch(c, in, out), "") << "call " << calls;
    if (c.stats().fused_calls > fused_before) return calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ADD_FAILURE() << "no fused call within 120 s: " << c.stats().async_pending_calls << " calls ran eager meanwhile";
  return calls;
}

TEST(AsyncCompileGpu, FirstCallsRunEagerThenFusedFp32AndBf16) {
  REQUIRE_GPU();
  for (const c10::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    auto c = torchfuse::compile(pointwise_and_softmax(), async_options());
    const std::vector<int64_t> sizes{96, 256};
    const auto in = inputs(sizes, dtype);
    const auto t0 = std::chrono::steady_clock::now();
    const auto first = c.forward(in);
    torch::cuda::synchronize();
    const double first_ms = ms_since(t0);
    auto s = c.stats();
    EXPECT_EQ(s.fused_calls, 0);
    EXPECT_EQ(s.async_pending_calls, 1);
    EXPECT_EQ(mismatch(c, in, first), "");
    const int calls = call_until_fused(c, {sizes[0] + 5, sizes[1]}, dtype);  // same signature, other rows
    const double built_ms = ms_since(t0);
    std::cout << "[ INFO     ] " << c10::toString(dtype) << ": first call " << first_ms << " ms (eager); fused after "
              << built_ms << " ms and " << calls << " more calls\n";
    // Fused from now on: every later call, with its kernels.
    constexpr int kFused = 5;
    for (int i = 0; i < kFused; ++i) {
      const auto later = inputs({sizes[0] + 11 * i, sizes[1]}, dtype);
      EXPECT_EQ(mismatch(c, later, c.forward(later)), "") << "fused call " << i;
    }
    torch::cuda::synchronize();
    const auto before = s;
    s = c.stats();
    EXPECT_EQ(s.background_builds, 1);
    EXPECT_EQ(s.background_build_failures, 0);
    EXPECT_EQ(s.specializations, 1);
    EXPECT_EQ(s.fallback_groups, 0);
    EXPECT_EQ(s.fused_calls, kFused + 1);
    EXPECT_EQ(s.eager_calls, s.async_pending_calls);
    EXPECT_GT(s.kernel_launches, before.kernel_launches);
    // The graph built in the background is the one the calling thread builds without the option.
    auto built_by_caller = torchfuse::compile(pointwise_and_softmax(), tftest::quiet_options());
    built_by_caller.forward(in);
    EXPECT_GE(tftest::fusion_nodes(c.graph_for(in)), 1) << c.graph_for(in);
    EXPECT_EQ(tftest::fusion_nodes(c.graph_for(in)), tftest::fusion_nodes(built_by_caller.graph_for(in)))
        << c.graph_for(in) << built_by_caller.graph_for(in);
    torch::cuda::synchronize();
  }
}

// Inputs made on a side stream just before the call, and a second signature (rank 3) after the
// first is built: each first call eager and right, then fused.
TEST(AsyncCompileGpu, InputsFromASideStreamAndASecondSignature) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(pointwise_and_softmax(), async_options());
  const c10::Device device(c10::kCUDA, 0);
  const c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
  c10::StreamGuard on_side(cuda.getStreamFromGlobalPool(device, false));
  // Large enough that making them takes a while on the side stream.
  const auto in = inputs({2048, 1024}, torch::kFloat);
  EXPECT_EQ(mismatch(c, in, c.forward(in)), "");
  call_until_fused(c, {2048, 1024}, torch::kFloat);
  const auto in3 = inputs({4, 64, 128}, torch::kFloat);
  const int64_t pending = c.stats().async_pending_calls;
  EXPECT_EQ(mismatch(c, in3, c.forward(in3)), "");
  EXPECT_EQ(c.stats().async_pending_calls, pending + 1);
  call_until_fused(c, {4, 64, 128}, torch::kFloat);
  cuda.getStream(device).synchronize();
  const auto s = c.stats();
  EXPECT_EQ(s.specializations, 2);
  EXPECT_EQ(s.background_builds, 2);
  EXPECT_EQ(s.fallback_groups, 0);
}

// Modules destroyed right after their first call, their kernels compiling: no crash, no hang,
// and the device still works.
TEST(AsyncCompileGpu, DestroyedWhileItsKernelsCompile) {
  REQUIRE_GPU();
  for (int i = 0; i < 3; ++i) {
    auto c = torchfuse::compile(pointwise_and_softmax(), async_options());
    const auto in = inputs({64, 128 + 32 * i}, i % 2 ? torch::kBFloat16 : torch::kFloat);
    c.forward(in);
  }
  torch::cuda::synchronize();
  const auto x = torch::ones({8}, torch::TensorOptions().device(torch::kCUDA));
  EXPECT_EQ((x * 2.0).sum().item<double>(), 16.0);
}

}  // namespace
