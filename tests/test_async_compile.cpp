// CompileOptions::async_compile without a GPU (CompiledModuleImpl::TestHooks: CPU calls take the
// fused path on fallback graphs, and before_build holds a build): the first calls of a new
// signature run eager while its specialization builds on the module's worker, then calls run
// fused; a failed build leaves its signature eager; destroying the module waits for the build in
// flight. The race tests are meant to pass under --gtest_repeat=50 (and ThreadSanitizer).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
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

torchfuse::CompileOptions async_options() {
  auto o = tftest::quiet_options();
  o.async_compile = true;
  return o;
}

std::unique_ptr<CompiledModuleImpl> on_fallbacks(torchfuse::CompileOptions options, CompiledModuleImpl::TestHooks hooks = {}) {
  auto impl = std::make_unique<CompiledModuleImpl>(torchfuse::prepare_module_graph(two_groups()), options);
  hooks.cpu_fallbacks = true;
  impl->set_test_hooks(std::move(hooks));
  return impl;
}

// Inputs of two signatures: float rank 2 (of varying rows), double rank 2.
std::vector<c10::IValue> input_of(int signature, int64_t rows = 4) {
  return {torch::randn({rows, 8}, signature == 0 ? torch::kFloat : torch::kDouble)};
}

std::string signature_name(const std::vector<c10::IValue>& in) {
  return in[0].toTensor().scalar_type() == at::kDouble ? "f64" : "f32";
}

void expect_same(const c10::IValue& expected, const c10::IValue& actual, const std::string& label) {
  const auto report = torchfuse::compare_outputs(expected, actual);
  EXPECT_TRUE(report.passed()) << label << "\n" << report.to_string();
}

// A deadlock detector, not a timing check.
constexpr auto kGenerous = std::chrono::seconds(60);

// Polls `done` until it holds or kGenerous passes.
bool eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kGenerous;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Holds the first build of `held` until released; counts builds per signature and records the
// threads they ran on and whether grad mode was on there.
struct BuildGate {
  std::mutex mu;
  std::map<std::string, int> builds;
  std::set<std::thread::id> threads;
  bool grad_enabled_in_build = true;
  std::string held;
  std::string fails;  // a signature whose builds throw
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();

  CompiledModuleImpl::TestHooks hooks() {
    CompiledModuleImpl::TestHooks h;
    h.before_build = [this](const std::vector<c10::IValue>& in) {
      const std::string sig = signature_name(in);
      int n = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        n = ++builds[sig];
        threads.insert(std::this_thread::get_id());
        grad_enabled_in_build = c10::GradMode::is_enabled();
      }
      if (sig == fails) throw torchfuse::Error("torchfuse test: the build of " + sig + " fails");
      if (sig == held && n == 1) {
        entered.set_value();
        released.wait();
      }
    };
    return h;
  }
  int builds_of(const std::string& sig) {
    std::lock_guard<std::mutex> lock(mu);
    return builds[sig];
  }
};

TEST(AsyncCompile, FirstCallRunsEagerWhileTheBuildIsHeldThenCallsRunFused) {
  BuildGate gate;
  gate.held = "f32";
  auto impl = on_fallbacks(async_options(), gate.hooks());
  const auto in = input_of(0);
  auto first = std::async(std::launch::async, [&] { return impl->forward(in); });
  const bool returned = first.wait_for(kGenerous) == std::future_status::ready;
  if (!returned) gate.release.set_value();
  ASSERT_TRUE(returned) << "the first call waited for its build";
  gate.entered.get_future().wait();  // the worker holds the build
  expect_same(impl->forward_eager(in), first.get(), "the first call");
  auto s = impl->stats();
  EXPECT_EQ(s.eager_calls, 1);
  EXPECT_EQ(s.async_pending_calls, 1);
  EXPECT_EQ(s.fused_calls, 0);
  EXPECT_EQ(s.specializations, 0);
  EXPECT_EQ(impl->graph_for(in), "");
  EXPECT_EQ(impl->why_eager(in), "its specialization is being compiled in the background");

  gate.release.set_value();
  ASSERT_TRUE(eventually([&] { return impl->stats().specializations == 1; }));
  const auto in2 = input_of(0, 7);  // same signature, other sizes
  expect_same(impl->forward_eager(in2), impl->forward(in2), "a call after the build");
  s = impl->stats();
  EXPECT_EQ(s.fused_calls, 1);
  EXPECT_EQ(s.eager_calls, 1);
  EXPECT_EQ(s.background_builds, 1);
  EXPECT_EQ(s.background_build_failures, 0);
  EXPECT_NE(impl->graph_for(in), "");
  EXPECT_EQ(impl->why_eager(in), "");
  EXPECT_EQ(gate.builds_of("f32"), 1);
  std::lock_guard<std::mutex> lock(gate.mu);
  EXPECT_EQ(gate.threads.size(), 1u);
  EXPECT_EQ(gate.threads.count(std::this_thread::get_id()), 0u) << "built on the calling thread";
}

// Calls of a signature whose build is held, from several threads at once: all run eager, none
// waits, all get the right results, and one build serves them.
TEST(AsyncCompile, ConcurrentCallsDuringTheBuildRunEagerWithRightResults) {
  BuildGate gate;
  gate.held = "f32";
  auto impl = on_fallbacks(async_options(), gate.hooks());
  impl->forward(input_of(0));
  gate.entered.get_future().wait();
  constexpr int kThreads = 4;
  constexpr int kCalls = 10;
  auto work = [&](int t) {
    std::string problems;
    for (int i = 0; i < kCalls; ++i) {
      const auto in = input_of(0, 2 + t + i);
      const auto report = torchfuse::compare_outputs(impl->forward_eager(in), impl->forward(in));
      if (!report.passed()) problems += "thread " + std::to_string(t) + " call " + std::to_string(i) + "\n" + report.to_string();
    }
    return problems;
  };
  std::vector<std::future<std::string>> threads;
  for (int t = 0; t < kThreads; ++t) threads.push_back(std::async(std::launch::async, work, t));
  const auto deadline = std::chrono::steady_clock::now() + kGenerous;
  bool all_done = true;
  for (auto& f : threads) all_done = all_done && f.wait_until(deadline) == std::future_status::ready;
  gate.release.set_value();
  ASSERT_TRUE(all_done) << "a call waited for the build";
  for (auto& f : threads) EXPECT_EQ(f.get(), "");
  auto s = impl->stats();
  EXPECT_EQ(s.eager_calls, kThreads * kCalls + 1);
  EXPECT_EQ(s.async_pending_calls, kThreads * kCalls + 1);
  EXPECT_EQ(s.fused_calls, 0);
  ASSERT_TRUE(eventually([&] { return impl->stats().specializations == 1; }));
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(work(t), "");
  s = impl->stats();
  EXPECT_EQ(s.fused_calls, kThreads * kCalls);
  EXPECT_EQ(s.background_builds, 1);
  EXPECT_EQ(gate.builds_of("f32"), 1);
}

// No hold: threads call while the build runs and publishes; every result is right, each call is
// counted once (eager while pending, fused after), and one build is done.
TEST(AsyncCompile, CallsRacingThePublicationAreRightAndCountedOnce) {
  BuildGate gate;
  auto impl = on_fallbacks(async_options(), gate.hooks());
  constexpr int kThreads = 4;
  constexpr int kCalls = 25;
  std::atomic<bool> go{false};
  auto work = [&](int t) {
    while (!go) std::this_thread::yield();
    std::string problems;
    for (int i = 0; i < kCalls; ++i) {
      const auto in = input_of(i % 2, 3 + t);
      const auto report = torchfuse::compare_outputs(impl->forward_eager(in), impl->forward(in));
      if (!report.passed()) problems += "thread " + std::to_string(t) + " call " + std::to_string(i) + "\n" + report.to_string();
    }
    return problems;
  };
  std::vector<std::future<std::string>> threads;
  for (int t = 0; t < kThreads; ++t) threads.push_back(std::async(std::launch::async, work, t));
  go = true;
  for (auto& f : threads) EXPECT_EQ(f.get(), "");
  ASSERT_TRUE(eventually([&] { return impl->stats().specializations == 2; }));
  const auto s = impl->stats();
  EXPECT_EQ(s.eager_calls, s.async_pending_calls);
  EXPECT_EQ(s.eager_calls + s.fused_calls, kThreads * kCalls);
  EXPECT_GE(s.async_pending_calls, 2);  // the first call of each signature
  EXPECT_EQ(s.background_builds, 2);
  EXPECT_EQ(gate.builds_of("f32"), 1);
  EXPECT_EQ(gate.builds_of("f64"), 1);
}

// A build that throws: logged once with the signature, not tried again; the signature's calls run
// eager (right results, counted) and other signatures still build.
TEST(AsyncCompile, AFailedBuildLeavesItsSignatureEagerLoggedOnceAndCounted) {
  BuildGate gate;
  gate.fails = "f32";
  auto impl = on_fallbacks(async_options(), gate.hooks());
  const auto in = input_of(0);
  testing::internal::CaptureStderr();
  expect_same(impl->forward_eager(in), impl->forward(in), "the first call");
  const bool failed = eventually([&] { return impl->why_eager(in).find("failed") != std::string::npos; });
  constexpr int kLater = 3;
  for (int i = 0; i < kLater; ++i) {
    const auto later = input_of(0, 5 + i);
    expect_same(impl->forward_eager(later), impl->forward(later), "a later call");
  }
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(failed) << impl->why_eager(in);
  EXPECT_EQ(impl->why_eager(in), "its specialization's background build failed: torchfuse test: the build of f32 fails");
  EXPECT_EQ(tftest::count_occurrences(log, "background build of the specialization"), 1) << log;
  EXPECT_TRUE(tftest::contains_in_order(log, {"background build of the specialization for input signature 'f32 rank 2 cpu",
                                              "' failed; its calls run eager: torchfuse test: the build of f32 fails"}))
      << log;
  auto s = impl->stats();
  EXPECT_EQ(s.async_pending_calls, 1);
  EXPECT_EQ(s.async_failed_calls, kLater);
  EXPECT_EQ(s.eager_calls, kLater + 1);
  EXPECT_EQ(s.background_build_failures, 1);
  EXPECT_EQ(s.background_builds, 0);
  EXPECT_EQ(s.specializations, 0);
  EXPECT_EQ(gate.builds_of("f32"), 1);

  const auto other = input_of(1);
  impl->forward(other);
  ASSERT_TRUE(eventually([&] { return impl->stats().specializations == 1; }));
  expect_same(impl->forward_eager(other), impl->forward(other), "another signature");
  s = impl->stats();
  EXPECT_EQ(s.fused_calls, 1);
  EXPECT_EQ(s.background_builds, 1);
}

// Under strict nothing fusible runs in ATen for good: after the background build failed, the
// signature's calls throw its error (the call that queued it ran eager).
TEST(AsyncCompile, UnderStrictAFailedBuildsCallsThrowItsError) {
  BuildGate gate;
  gate.fails = "f32";
  auto options = async_options();
  options.strict = true;
  auto impl = on_fallbacks(options, gate.hooks());
  const auto in = input_of(0);
  testing::internal::CaptureStderr();
  expect_same(impl->forward_eager(in), impl->forward(in), "the first call");
  const bool failed = eventually([&] { return impl->stats().background_build_failures == 1; });
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(failed);
  ASSERT_TRUE(eventually([&] { return impl->why_eager(in).find("failed") != std::string::npos; }));
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(tftest::error_of([&] { impl->forward(in); }), "torchfuse test: the build of f32 fails");
  EXPECT_EQ(gate.builds_of("f32"), 1);
  EXPECT_EQ(impl->stats().async_failed_calls, 0);
}

// The inputs a worker keeps: the caller's tensors, in a list of its own.
TEST(AsyncCompile, TheWorkerKeepsTheTensorsInListsOfItsOwn) {
  const at::Tensor a = torch::ones({2});
  c10::List<at::Tensor> list({a});
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  dict.insert("a", a);
  const std::vector<c10::IValue> in{a, list, dict};
  const auto held = torchfuse::runtime::inputs_for_worker(in);
  list.push_back(torch::zeros({2}));
  dict.insert("b", a);
  ASSERT_EQ(held.size(), 3u);
  EXPECT_TRUE(held[0].toTensor().is_same(a));
  ASSERT_EQ(held[1].toList().size(), 1u);
  EXPECT_TRUE(held[1].toList().get(0).toTensor().is_same(a));
  EXPECT_EQ(held[2].toGenericDict().size(), 1u);
  EXPECT_TRUE(held[2].toGenericDict().at("a").toTensor().is_same(a));
}

// max_specializations counts builds in flight: while the only slot builds, a new signature runs
// eager past the limit, and stays there after the build.
TEST(AsyncCompile, BuildsInTheBackgroundCountTowardMaxSpecializations) {
  BuildGate gate;
  gate.held = "f32";
  auto options = async_options();
  options.max_specializations = 1;
  auto impl = on_fallbacks(options, gate.hooks());
  testing::internal::CaptureStderr();
  impl->forward(input_of(0));
  gate.entered.get_future().wait();
  const auto other = input_of(1);
  expect_same(impl->forward_eager(other), impl->forward(other), "past the limit");
  gate.release.set_value();
  const bool built = eventually([&] { return impl->stats().specializations == 1; });
  impl->forward(other);
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(built);
  EXPECT_EQ(tftest::count_occurrences(log, "(max_specializations)"), 1) << log;
  const auto s = impl->stats();
  EXPECT_EQ(s.over_limit_calls, 2);
  EXPECT_EQ(s.async_pending_calls, 1);
  EXPECT_EQ(s.eager_calls, 3);
  EXPECT_EQ(gate.builds_of("f64"), 0);
  EXPECT_EQ(impl->why_eager(other), "its input signature is past max_specializations");
}

// Destroying the module while its build is held: the destructor waits for that build (the
// worker uses the module), drops the build queued behind it, and returns once it is released.
TEST(AsyncCompile, DestroyingTheModuleWaitsForTheBuildInFlightAndDropsQueuedOnes) {
  BuildGate gate;
  gate.held = "f32";
  auto impl = on_fallbacks(async_options(), gate.hooks());
  impl->forward(input_of(0));
  gate.entered.get_future().wait();
  impl->forward(input_of(1));  // queued behind the held build
  auto destroyed = std::async(std::launch::async, [&] { impl.reset(); });
  const bool waited = destroyed.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout;
  gate.release.set_value();
  const bool returned = destroyed.wait_for(kGenerous) == std::future_status::ready;
  ASSERT_TRUE(returned) << "the destructor hung";
  EXPECT_TRUE(waited) << "the destructor did not wait for the build in flight";
  EXPECT_EQ(gate.builds_of("f32"), 1);
  EXPECT_EQ(gate.builds_of("f64"), 0) << "a queued build ran during destruction";
}

// Modules destroyed at once after their first call, their builds running: no crash, no hang.
TEST(AsyncCompile, DestroyingTheModuleAsItsBuildRunsIsSafe) {
  for (int i = 0; i < 20; ++i) {
    auto impl = on_fallbacks(async_options());
    impl->forward(input_of(i % 2));
    impl->forward(input_of(1 - i % 2));
    if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100 * i));
  }
}

// The worker runs with the caller's thread-local state: a call under no_grad, with an input that
// requires grad, takes the fused path and is profiled without grad mode, as the caller's would.
TEST(AsyncCompile, TheBuildRunsWithTheCallersGradMode) {
  BuildGate gate;
  auto impl = on_fallbacks(async_options(), gate.hooks());
  const std::vector<c10::IValue> in{torch::randn({4, 8}).requires_grad_()};
  {
    at::NoGradGuard no_grad;
    impl->forward(in);
  }
  ASSERT_TRUE(eventually([&] { return impl->stats().background_builds == 1; }));
  std::lock_guard<std::mutex> lock(gate.mu);
  EXPECT_FALSE(gate.grad_enabled_in_build);
}

// Off (the default), the calling thread builds and its first call runs fused; with
// $TORCHFUSE_ASYNC_COMPILE=1 the first call runs eager.
TEST(AsyncCompile, OffByDefaultTheCallerBuildsOnEnvironmentTurnsItOn) {
  {
    BuildGate gate;
    auto impl = on_fallbacks(tftest::quiet_options(), gate.hooks());
    const auto in = input_of(0);
    expect_same(impl->forward_eager(in), impl->forward(in), "async off");
    const auto s = impl->stats();
    EXPECT_EQ(s.fused_calls, 1);
    EXPECT_EQ(s.eager_calls, 0);
    EXPECT_EQ(s.async_pending_calls, 0);
    EXPECT_EQ(s.background_builds, 0);
    std::lock_guard<std::mutex> lock(gate.mu);
    EXPECT_EQ(gate.threads.count(std::this_thread::get_id()), 1u);
  }
  setenv("TORCHFUSE_ASYNC_COMPILE", "1", 1);
  auto impl = on_fallbacks(tftest::quiet_options());
  unsetenv("TORCHFUSE_ASYNC_COMPILE");
  impl->forward(input_of(0));
  EXPECT_EQ(impl->stats().async_pending_calls, 1);
  ASSERT_TRUE(eventually([&] { return impl->stats().background_builds == 1; }));
}

}  // namespace
