// The specialization cache without a GPU (CompiledModuleImpl::TestHooks::cpu_fallbacks: CPU calls
// take the fused path, their groups on fallback graphs): max_specializations, and builds that
// run outside the module's lock (a build in flight does not hold up calls of built signatures;
// callers of the signature being built wait for that one build; a failed build is retried).
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include <torch/torch.h>

#include "runtime/compiled_module.h"
#include "src/prepare_graph.h"
#include "tests/test_util.h"

namespace {

using torchfuse::CompiledModuleImpl;

// One pointwise group and one row reduction.
torch::jit::Module two_groups() {
  return tftest::module_from("def forward(self, x):\n    return (torch.relu(x * 2.0) + 1.0, torch.softmax(x - 1.0, -1))\n");
}

std::unique_ptr<CompiledModuleImpl> on_fallbacks(torchfuse::CompileOptions options,
                                                 CompiledModuleImpl::TestHooks hooks = {}) {
  auto impl = std::make_unique<CompiledModuleImpl>(torchfuse::prepare_module_graph(two_groups()), options);
  hooks.cpu_fallbacks = true;
  impl->set_test_hooks(std::move(hooks));
  return impl;
}

// Inputs of three signatures: float rank 2, double rank 2, float rank 3.
std::vector<c10::IValue> input_of(int signature) {
  switch (signature) {
    case 0: return {torch::randn({4, 8})};
    case 1: return {torch::randn({4, 8}, torch::kDouble)};
    default: return {torch::randn({2, 4, 8})};
  }
}

void expect_same(const c10::IValue& expected, const c10::IValue& actual, const std::string& label) {
  const auto report = torchfuse::compare_outputs(expected, actual);
  EXPECT_TRUE(report.passed()) << label << "\n" << report.to_string();
}

// Past the limit a new signature runs eager (right results), warned once, counted; signatures
// already built stay on their specializations.
TEST(Specializations, PastTheLimitNewSignaturesRunEagerLoggedOnceAndCounted) {
  auto options = tftest::quiet_options();
  options.max_specializations = 2;
  auto impl = on_fallbacks(options);
  testing::internal::CaptureStderr();
  constexpr int kRounds = 3;
  for (int round = 0; round < kRounds; ++round) {
    for (int sig = 0; sig < 3; ++sig) {
      const auto in = input_of(sig);
      expect_same(impl->forward_eager(in), impl->forward(in), "signature " + std::to_string(sig));
    }
  }
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(tftest::count_occurrences(log, "(max_specializations)"), 1) << log;
  EXPECT_TRUE(tftest::contains_in_order(log, {"2 specializations compiled (max_specializations); new input signatures run eager"}));
  const auto s = impl->stats();
  EXPECT_EQ(s.specializations, 2);
  EXPECT_EQ(s.over_limit_calls, kRounds);
  EXPECT_EQ(s.eager_calls, kRounds);
  EXPECT_EQ(s.fused_calls, 2 * kRounds);
  EXPECT_NE(impl->graph_for(input_of(0)), "");
  EXPECT_NE(impl->graph_for(input_of(1)), "");
  EXPECT_EQ(impl->graph_for(input_of(2)), "");  // never built
  for (const auto& g : s.groups) EXPECT_EQ(g.calls, kRounds) << g.kernel_name << " of specialization " << g.specialization;
}

// Holds the build of one signature until released, and counts builds per signature.
struct BuildGate {
  std::mutex mu;
  std::map<std::string, int> builds;
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::string held;  // the signature whose build waits

  CompiledModuleImpl::TestHooks hooks() {
    CompiledModuleImpl::TestHooks h;
    h.before_build = [this](const std::vector<c10::IValue>& in) {
      const at::Tensor& x = in[0].toTensor();
      const std::string sig = (x.scalar_type() == at::kDouble ? "f64" : "f32") + std::to_string(x.dim());
      int n = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        n = ++builds[sig];
      }
      if (sig == held && n == 1) {  // (a second build of it, a bug the tests report, is not held)
        entered.set_value();
        released.wait();
      }
    };
    return h;
  }
};

// A deadlock detector, not a timing check: a call of a built signature takes milliseconds; if
// it waited for the held build instead, it would wait until the test releases the build.
constexpr auto kGenerous = std::chrono::seconds(60);

TEST(Specializations, ABuildInFlightDoesNotHoldUpCallsOfBuiltSignatures) {
  BuildGate gate;
  gate.held = "f642";  // signature 1 (double, rank 2)
  auto impl = on_fallbacks(tftest::quiet_options(), gate.hooks());
  const auto in0 = input_of(0);
  impl->forward(in0);  // built before the held build starts
  const auto in1 = input_of(1);
  std::thread builder([&] { impl->forward(in1); });
  gate.entered.get_future().wait();
  // While signature 1 is being built: signature 0 (built) runs, and so does the build of
  // signature 2 (another new one).
  auto built = std::async(std::launch::async, [&] { return impl->forward(in0); });
  const auto in2 = input_of(2);
  auto other_new = std::async(std::launch::async, [&] { return impl->forward(in2); });
  const auto deadline = std::chrono::steady_clock::now() + kGenerous;
  const bool built_done = built.wait_until(deadline) == std::future_status::ready;
  const bool other_done = other_new.wait_until(deadline) == std::future_status::ready;
  gate.release.set_value();
  builder.join();
  EXPECT_TRUE(built_done) << "a call of a built signature waited for another signature's build";
  EXPECT_TRUE(other_done) << "a build waited for another signature's build";
  expect_same(impl->forward_eager(in0), built.get(), "built signature during the build");
  expect_same(impl->forward_eager(in2), other_new.get(), "another new signature during the build");
  expect_same(impl->forward_eager(in1), impl->forward(in1), "the held signature after its build");
  const auto s = impl->stats();
  EXPECT_EQ(s.specializations, 3);
  EXPECT_EQ(s.eager_calls, 0);
  EXPECT_EQ(gate.builds["f322"], 1);
  EXPECT_EQ(gate.builds["f642"], 1);
  EXPECT_EQ(gate.builds["f323"], 1);
}

// Callers of a signature being built wait for that build and share it: one build, and every
// caller gets the right result.
TEST(Specializations, CallersOfASignatureBeingBuiltShareOneBuild) {
  BuildGate gate;
  gate.held = "f322";
  auto impl = on_fallbacks(tftest::quiet_options(), gate.hooks());
  const auto in = input_of(0);
  std::thread first([&] { impl->forward(in); });
  gate.entered.get_future().wait();
  constexpr int kWaiters = 4;
  std::vector<std::future<c10::IValue>> waiters;
  for (int i = 0; i < kWaiters; ++i) waiters.push_back(std::async(std::launch::async, [&] { return impl->forward(in); }));
  gate.release.set_value();
  first.join();
  const auto expected = impl->forward_eager(in);
  for (auto& w : waiters) expect_same(expected, w.get(), "a caller that came during the build");
  EXPECT_EQ(gate.builds["f322"], 1);
  const auto s = impl->stats();
  EXPECT_EQ(s.specializations, 1);
  EXPECT_EQ(s.fused_calls, kWaiters + 1);
}

// A build that throws keeps nothing: the caller gets the error, and the next call builds again.
TEST(Specializations, AFailedBuildIsThrownAndTriedAgain) {
  CompiledModuleImpl::TestHooks hooks;
  int attempts = 0;
  hooks.before_build = [&](const std::vector<c10::IValue>&) {
    if (++attempts == 1) throw torchfuse::Error("torchfuse test: the first build fails");
  };
  auto impl = on_fallbacks(tftest::quiet_options(), hooks);
  const auto in = input_of(0);
  EXPECT_EQ(tftest::error_of([&] { impl->forward(in); }), "torchfuse test: the first build fails");
  EXPECT_EQ(impl->stats().specializations, 0);
  expect_same(impl->forward_eager(in), impl->forward(in), "the second call");
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ(impl->stats().specializations, 1);
}

}  // namespace
