// GPU tests of failure handling, caches and concurrency: per-group fallback on injected NVRTC,
// module-load and launch failures (when the specialization is built and at run time) and on
// out-of-memory while allocating outputs (that call only), strict mode, max_specializations,
// cold vs warm processes sharing a disk cache, an unwritable cache directory, one module on 4
// threads with their own streams, a build that must not hold up calls of built signatures, a
// second device, and per-group kernel timing. Skipped when no CUDA device is present.
#include <ftw.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "runtime/compiled_module.h"
#include "src/prepare_graph.h"
#include "tests/fs_util.h"
#include "tests/test_util.h"

using tftest::module_from;

namespace {

torch::Tensor rnd(std::vector<int64_t> sizes, c10::Device device = c10::Device(c10::kCUDA, 0)) {
  return torch::randn(sizes, torch::TensorOptions().device(device));
}

// Options that make NVRTC fail on `kernels` (debug_fail_kernels).
torchfuse::CompileOptions failing(const std::string& kernels, bool strict = false) {
  auto o = tftest::quiet_options();
  o.debug_fail_kernels = kernels;
  o.strict = strict;
  return o;
}

// The group whose kernel name starts with `prefix` ("tf_add_relu_mul_": tf_<pattern>_<hash>).
const torchfuse::GroupStats* group_named(const torchfuse::Stats& s, const std::string& prefix) {
  for (const auto& g : s.groups)
    if (g.kernel_name.rfind(prefix, 0) == 0) return &g;
  return nullptr;
}

void expect_matches_eager(torchfuse::CompiledModule& c, const std::vector<c10::IValue>& in, const std::string& label) {
  const auto report = torchfuse::compare_with_eager(c, in);
  EXPECT_TRUE(report.passed()) << label << "\n" << report.to_string();
}

TEST(GpuFallback, InjectedCompileFailureFallsBackForThatGroupOnly) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(tftest::groups_around_matmul(), failing("tf_add_relu_mul"));
  constexpr int kCalls = 3;
  testing::internal::CaptureStderr();
  for (int i = 0; i < kCalls; ++i) expect_matches_eager(c, {rnd({64, 64}), rnd({64, 64})}, "call " + std::to_string(i));
  const std::string log = testing::internal::GetCapturedStderr();
  // Logged once, with NVRTC's log and the source.
  EXPECT_EQ(tftest::count_occurrences(log, "fusion group tf_add_relu_mul_"), 1) << log;
  EXPECT_TRUE(tftest::contains_in_order(log, {"injected failure", "--- kernel source ---", "#error"}));
  const auto s = c.stats();
  EXPECT_EQ(s.fallback_groups, 1);
  EXPECT_EQ(s.fallback_calls, kCalls);
  EXPECT_EQ(s.fused_calls, kCalls);
  EXPECT_EQ(s.eager_calls, 0);
  const auto* fused = group_named(s, "tf_mul_tanh_");
  const auto* fallen = group_named(s, "tf_add_relu_mul_");
  ASSERT_TRUE(fused && fallen) << s.groups.size() << " groups";
  EXPECT_FALSE(fused->fell_back);
  EXPECT_EQ(fused->launches, kCalls);
  EXPECT_TRUE(fallen->fell_back);
  EXPECT_EQ(fallen->launches, 0);
  EXPECT_EQ(fallen->fallback_calls, kCalls);
  EXPECT_NE(fallen->fallback_reason.find("injected failure"), std::string::npos) << fallen->fallback_reason;
  // The graph keeps both fusion nodes: the fallback lives behind the node.
  EXPECT_EQ(tftest::fusion_nodes(c.graph_for({rnd({64, 64}), rnd({64, 64})})), 2);
}

TEST(GpuFallback, StrictMakesTheFailureAnError) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(tftest::groups_around_matmul(), failing("tf_add_relu_mul", /*strict=*/true));
  const std::string msg = tftest::error_of([&] { c.forward({rnd({64, 64}), rnd({64, 64})}); });
  EXPECT_TRUE(tftest::contains_in_order(msg, {"torchfuse (strict): fusion group tf_add_relu_mul_", " (add -> relu -> mul)",
                                              "injected failure"}));
  EXPECT_EQ(c.stats().specializations, 0);
  EXPECT_EQ(c.stats().fallback_groups, 0);
}

// Rows of 64 and of 8192 elements need different row schedules: the second is a kernel variant
// generated at run time, which "runtime:" makes fail.
torch::jit::Module row_softmax() { return module_from("def forward(self, x):\n    return torch.softmax(x * 2.0, -1)\n"); }

// NVRTC, module load and launch of a variant generated at run time: each falls back for good.
TEST(GpuFallback, RuntimeVariantFailureFallsBackAndStays) {
  REQUIRE_GPU();
  const std::pair<const char*, const char*> cases[] = {
      {"runtime:*", "injected failure"},
      {"load:runtime:*", "cuModuleLoadData (injected by debug_fail_kernels) failed"},
      {"launch:runtime:*", "cuLaunchKernel"}};  // (or cuLaunchKernelEx, for a cluster of blocks)
  for (const auto& [spec, reason] : cases) {
    SCOPED_TRACE(spec);
    auto c = torchfuse::compile(row_softmax(), failing(spec));
    expect_matches_eager(c, {rnd({32, 64})}, "short rows");
    const auto before = c.stats();
    ASSERT_EQ(before.fallback_groups, 0);
    ASSERT_EQ(before.kernel_launches, 1);
    testing::internal::CaptureStderr();
    expect_matches_eager(c, {rnd({32, 8192})}, "long rows (new variant fails)");
    expect_matches_eager(c, {rnd({32, 64})}, "short rows again (stays on the fallback)");
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(tftest::count_occurrences(log, "fusion group tf_softmax_"), 1) << log;
    const auto after = c.stats();
    EXPECT_EQ(after.specializations, 1);
    EXPECT_EQ(after.fallback_groups, 1);
    EXPECT_EQ(after.fallback_calls, 2);
    EXPECT_EQ(after.kernel_launches, 1);
    EXPECT_GE(after.kernel_variants, 2);
    ASSERT_EQ(after.groups.size(), 1u);
    EXPECT_NE(after.groups[0].fallback_reason.find(reason), std::string::npos) << after.groups[0].fallback_reason;
  }
}

TEST(GpuFallback, StrictRuntimeFailureIsAnErrorAndTheGroupStaysFused) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(row_softmax(), failing("runtime:*", /*strict=*/true));
  expect_matches_eager(c, {rnd({32, 64})}, "short rows");
  const std::string msg = tftest::error_of([&] { c.forward({rnd({32, 8192})}); });
  EXPECT_TRUE(tftest::contains_in_order(msg, {"torchfuse (strict): fusion group tf_softmax_", "at run time",
                                              "injected failure"}));
  expect_matches_eager(c, {rnd({32, 64})}, "short rows after the error");
  EXPECT_EQ(c.stats().fallback_groups, 0);
  EXPECT_EQ(c.stats().kernel_launches, 2);
}

// ---- module load, launch and out-of-memory faults ----

// A load or launch failure of group 1 (tf_add_relu_mul_*): that group runs through ATen for good,
// logged once with the driver call and its error code; group 0 (tf_mul_tanh_*) stays fused; every
// result is eager's.
void expect_falls_back_for_good(const std::string& spec, const std::string& call, const std::string& code) {
  auto c = torchfuse::compile(tftest::groups_around_matmul(), failing(spec));
  constexpr int kCalls = 3;
  testing::internal::CaptureStderr();
  for (int i = 0; i < kCalls; ++i) expect_matches_eager(c, {rnd({64, 64}), rnd({64, 64})}, "call " + std::to_string(i));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(tftest::count_occurrences(log, "fusion group tf_add_relu_mul_"), 1) << log;
  EXPECT_EQ(tftest::count_occurrences(log, "fusion group tf_mul_tanh_"), 0) << log;
  EXPECT_TRUE(tftest::contains_in_order(log, {"fusion group tf_add_relu_mul_", " (add -> relu -> mul) cannot run fused",
                                              "CUDA driver call " + call + " (injected by debug_fail_kernels) failed",
                                              "(code " + code + ")", "--- kernel source ---"}));
  const auto s = c.stats();
  EXPECT_EQ(s.fallback_groups, 1);
  EXPECT_EQ(s.fallback_calls, kCalls);
  EXPECT_EQ(s.oom_calls, 0);
  EXPECT_EQ(s.fused_calls, kCalls);
  EXPECT_EQ(s.eager_calls, 0);
  const auto* fused = group_named(s, "tf_mul_tanh_");
  const auto* fallen = group_named(s, "tf_add_relu_mul_");
  ASSERT_TRUE(fused && fallen) << s.groups.size() << " groups";
  EXPECT_FALSE(fused->fell_back);
  EXPECT_EQ(fused->launches, kCalls);
  EXPECT_TRUE(fallen->fell_back);
  EXPECT_EQ(fallen->launches, 0);
  EXPECT_EQ(fallen->calls, kCalls);
  EXPECT_EQ(fallen->fallback_calls, kCalls);
  EXPECT_NE(fallen->fallback_reason.find(call), std::string::npos) << fallen->fallback_reason;
}

// The module load fails when the specialization is built.
TEST(GpuFallback, InjectedLoadFailureFallsBackForThatGroupOnly) {
  REQUIRE_GPU();
  expect_falls_back_for_good("load:tf_add_relu_mul", "cuModuleLoadData", "200");  // CUDA_ERROR_INVALID_IMAGE
}

// The launch fails at the first call (the kernel compiled and loaded).
TEST(GpuFallback, InjectedLaunchFailureFallsBackForThatGroupOnly) {
  REQUIRE_GPU();
  expect_falls_back_for_good("launch:tf_add_relu_mul", "cuLaunchKernel", "701");  // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
}

// The caching allocator runs out of memory for group 1's outputs on the first two calls
// (it is asked for 512 TiB, and throws its own c10::OutOfMemoryError): those calls run the
// group's ops through ATen, the next ones launch its kernel again. Logged once, each call counted.
TEST(GpuFallback, OutOfMemoryFallsBackForThatCallOnly) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(tftest::groups_around_matmul(), failing("oom#2:tf_add_relu_mul"));
  constexpr int kCalls = 4;
  testing::internal::CaptureStderr();
  for (int i = 0; i < kCalls; ++i) expect_matches_eager(c, {rnd({64, 64}), rnd({64, 64})}, "call " + std::to_string(i));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(tftest::count_occurrences(log, "ran out of CUDA memory"), 1) << log;
  EXPECT_TRUE(tftest::contains_in_order(log, {"fusion group tf_add_relu_mul_", " (add -> relu -> mul) ran out of CUDA memory",
                                              "later calls try the kernel again", "out of memory"}));
  const auto s = c.stats();
  EXPECT_EQ(s.fallback_groups, 0);
  EXPECT_EQ(s.oom_calls, 2);
  EXPECT_EQ(s.fallback_calls, 2);
  EXPECT_EQ(s.fused_calls, kCalls);
  const auto* fused = group_named(s, "tf_mul_tanh_");
  const auto* oom = group_named(s, "tf_add_relu_mul_");
  ASSERT_TRUE(fused && oom) << s.groups.size() << " groups";
  EXPECT_EQ(fused->launches, kCalls);
  EXPECT_EQ(fused->oom_calls, 0);
  EXPECT_FALSE(oom->fell_back);
  EXPECT_EQ(oom->fallback_reason, "");
  EXPECT_EQ(oom->calls, kCalls);
  EXPECT_EQ(oom->oom_calls, 2);
  EXPECT_EQ(oom->fallback_calls, 2);
  EXPECT_EQ(oom->launches, kCalls - 2);
}

TEST(GpuFallback, OutOfMemoryOnEveryCallIsLoggedOnce) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(tftest::groups_around_matmul(), failing("oom:tf_add_relu_mul"));
  constexpr int kCalls = 3;
  testing::internal::CaptureStderr();
  for (int i = 0; i < kCalls; ++i) expect_matches_eager(c, {rnd({64, 64}), rnd({64, 64})}, "call " + std::to_string(i));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(tftest::count_occurrences(log, "ran out of CUDA memory"), 1) << log;
  const auto s = c.stats();
  EXPECT_EQ(s.oom_calls, kCalls);
  EXPECT_EQ(s.fallback_groups, 0);
  const auto* oom = group_named(s, "tf_add_relu_mul_");
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->launches, 0);
  EXPECT_EQ(oom->fallback_calls, kCalls);
}

// Under strict each fault is an Error naming the group and the fault: a load failure when the
// specialization is built (none is kept), a launch failure or an out-of-memory at run time.
TEST(GpuFallback, StrictMakesLoadLaunchAndOomFaultsErrors) {
  REQUIRE_GPU();
  struct Case {
    const char* spec;
    const char* when;
    const char* fault;
    int specializations;
  };
  const Case cases[] = {
      {"load:tf_add_relu_mul", "when its specialization is built", "cuModuleLoadData (injected by debug_fail_kernels)", 0},
      {"launch:tf_add_relu_mul", "at run time", "cuLaunchKernel (injected by debug_fail_kernels)", 1},
      {"oom:tf_add_relu_mul", "at run time", "CUDA out of memory allocating its outputs", 1}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.spec);
    auto c = torchfuse::compile(tftest::groups_around_matmul(), failing(k.spec, /*strict=*/true));
    const std::string msg = tftest::error_of([&] { c.forward({rnd({64, 64}), rnd({64, 64})}); });
    EXPECT_TRUE(tftest::contains_in_order(
        msg, {"torchfuse (strict): fusion group tf_add_relu_mul_",
              std::string(" (add -> relu -> mul) cannot run fused ") + k.when, k.fault}));
    const auto s = c.stats();
    EXPECT_EQ(s.specializations, k.specializations);
    EXPECT_EQ(s.fallback_groups, 0);
    EXPECT_EQ(s.fallback_calls, 0);
    EXPECT_EQ(s.oom_calls, 0);
  }
}

// ---- max_specializations ----

TEST(GpuSpecializations, PastTheLimitNewSignaturesRunEagerLoggedOnceAndCounted) {
  REQUIRE_GPU();
  auto o = tftest::quiet_options();
  o.max_specializations = 2;
  auto c = torchfuse::compile(row_softmax(), o);
  const auto input_of = [](int sig) -> std::vector<c10::IValue> {
    if (sig == 0) return {rnd({16, 64})};
    if (sig == 1) return {rnd({16, 64}).to(torch::kHalf)};
    return {rnd({4, 16, 64})};
  };
  constexpr int kRounds = 3;
  testing::internal::CaptureStderr();
  for (int round = 0; round < kRounds; ++round)
    for (int sig = 0; sig < 3; ++sig) expect_matches_eager(c, input_of(sig), "signature " + std::to_string(sig));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(tftest::count_occurrences(log, "(max_specializations)"), 1) << log;
  const auto s = c.stats();
  EXPECT_EQ(s.specializations, 2);
  EXPECT_EQ(s.over_limit_calls, kRounds);
  EXPECT_EQ(s.eager_calls, kRounds);
  EXPECT_EQ(s.fused_calls, 2 * kRounds);
  EXPECT_EQ(s.kernel_launches, 2 * kRounds);
  EXPECT_EQ(c.graph_for(input_of(2)), "");
  EXPECT_EQ(tftest::fusion_nodes(c.graph_for(input_of(1))), 1);
}

// ---- cold vs warm process ----

constexpr const char* kChildStatsEnv = "TORCHFUSE_TEST_CHILD_STATS";
constexpr const char* kChildTest = "GpuCacheChild.CompileRunAndWriteStats";

// Pointwise, row reduction and column reduction groups.
torch::jit::Module three_schedules() {
  return module_from(R"JIT(
def forward(self, x, w, b, y):
    n = torch.layer_norm(x * 2.0, [256], w, b, 1e-5)
    c = x.sum(0) * 0.5
    p = torch.sigmoid(y) * y + 1.0
    return (n, c, p)
)JIT");
}

std::vector<c10::IValue> three_schedules_inputs() {
  return {rnd({512, 256}), rnd({256}), rnd({256}), rnd({64, 100})};
}

// Started by GpuCache.ColdThenWarmProcess in a process of its own; a no-op otherwise.
TEST(GpuCacheChild, CompileRunAndWriteStats) {
  const char* stats_path = std::getenv(kChildStatsEnv);
  if (!stats_path) GTEST_SKIP() << "runs only when started by GpuCache.ColdThenWarmProcess";
  REQUIRE_GPU();
  const auto in = three_schedules_inputs();
  torch::cuda::synchronize();
  const auto start = std::chrono::steady_clock::now();
  auto c = torchfuse::compile(three_schedules(), tftest::quiet_options());
  const auto out = c.forward(in);
  torch::cuda::synchronize();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const auto report = torchfuse::compare_outputs_with_reference(c.forward_eager(in), out, c.forward_reference(in));
  ASSERT_TRUE(report.passed()) << report.to_string();
  ASSERT_EQ(tftest::fusion_nodes(c.graph_for(in)), 3) << c.graph_for(in);
  const auto s = c.stats();
  std::ofstream f(stats_path);
  f << "kernels_compiled " << s.kernels_compiled << "\nkernel_disk_hits " << s.kernel_disk_hits
    << "\nkernel_memory_hits " << s.kernel_memory_hits << "\nfirst_result_ms " << ms << "\n";
  ASSERT_TRUE(f.good()) << "cannot write " << stats_path;
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs the child test in a new process with the cache dir (default: `dir`/cache); its stats by
// name, its output in *output.
std::map<std::string, double> run_child(const std::string& exe, const std::string& dir, const std::string& run,
                                        std::string cache_dir = "", std::string* output = nullptr) {
  if (cache_dir.empty()) cache_dir = dir + "/cache";
  const std::string stats = dir + "/" + run + ".stats";
  const std::string log = dir + "/" + run + ".log";
  const std::string cmd = "TORCHFUSE_CACHE_DIR='" + cache_dir + "' " + kChildStatsEnv + "='" + stats + "' '" + exe +
                          "' --gtest_filter=" + kChildTest + " >'" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << run << " process failed:\n" << read_file(log);
  if (output) *output = read_file(log);
  std::map<std::string, double> values;
  std::istringstream in(read_file(stats));
  std::string key;
  double value = 0;
  while (in >> key >> value) values[key] = value;
  EXPECT_EQ(values.size(), 4u) << run << " process wrote no stats:\n" << read_file(log);
  return values;
}

TEST(GpuCache, ColdThenWarmProcess) {
  REQUIRE_GPU();
  const std::string exe = self_exe();
  ASSERT_FALSE(exe.empty());
  const tftest::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string& dir = tmp.path();
  auto cold = run_child(exe, dir, "cold");
  auto warm = run_child(exe, dir, "warm");
  EXPECT_GT(cold["kernels_compiled"], 0);
  EXPECT_EQ(cold["kernel_disk_hits"], 0);
  EXPECT_EQ(warm["kernels_compiled"], 0);
  EXPECT_GT(warm["kernel_disk_hits"], 0);
  EXPECT_EQ(warm["kernel_disk_hits"], cold["kernels_compiled"]);
  std::cout << "compile() to first result: cold process " << cold["first_result_ms"] << " ms ("
            << cold["kernels_compiled"] << " NVRTC compilations), warm process " << warm["first_result_ms"]
            << " ms (" << warm["kernel_disk_hits"] << " disk hits)\n";
}

// A cache directory the process cannot write (read-only; for root, /proc/self): kernels compile
// and run from memory, the first failed store warns once, nothing comes from disk.
TEST(GpuCache, UnwritableCacheDirectoryWarnsOnceAndCompilesToMemory) {
  REQUIRE_GPU();
  const std::string exe = self_exe();
  ASSERT_FALSE(exe.empty());
  const tftest::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string& dir = tmp.path();
  const std::string cache_dir = tftest::unwritable_dir(dir);
  std::string output;
  auto stats = run_child(exe, dir, "unwritable", cache_dir, &output);
  EXPECT_GT(stats["kernels_compiled"], 0);
  EXPECT_EQ(stats["kernel_disk_hits"], 0);
  EXPECT_EQ(tftest::count_occurrences(output, "cannot write the kernel cache in " + cache_dir), 1) << output;
  EXPECT_EQ(tftest::count_occurrences(output, "cannot write the kernel cache"), 1) << output;
}

// ---- concurrency ----

// Split column and full reductions count finished blocks in counters private to each stream;
// the last block of each reduction resets its counter. Many calls on one stream, and four
// threads with their own streams at once, must all see whole, correct reductions.
TEST(GpuConcurrency, SplitReductionsOnManyStreams) {
  REQUIRE_GPU();
  auto m = module_from(R"JIT(
def forward(self, x):
    return (x.sum(0) * 0.5, (x * x).mean())
)JIT");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  constexpr int kThreads = 4;
  constexpr int kIterations = 30;
  const torchfuse::Tolerance tol{1e-4, 1e-4};
  std::mutex mu;
  std::vector<std::string> problems;
  auto work = [&](int t, bool own_stream) {
    try {
      const c10::Device device(c10::kCUDA, 0);
      std::optional<c10::StreamGuard> guard;
      if (own_stream) guard.emplace(c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStreamFromGlobalPool(device, false));
      for (int i = 0; i < kIterations; ++i) {
        // 4096+ rows of 256 columns: few column tiles, so the reduced dim splits across blocks.
        const std::vector<c10::IValue> in{rnd({4096 + 320 * t + 17 * i, 256})};
        const auto expected = c.forward_eager(in);
        const auto actual = c.forward(in);
        const auto report = torchfuse::compare_outputs(expected, actual, &tol);
        if (!report.passed()) {
          std::lock_guard<std::mutex> lock(mu);
          problems.push_back("thread " + std::to_string(t) + " iteration " + std::to_string(i) + "\n" + report.to_string());
        }
      }
      torch::cuda::synchronize();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu);
      problems.push_back("thread " + std::to_string(t) + ": " + e.what());
    }
  };
  work(0, false);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t, true);
  for (auto& th : threads) th.join();
  torch::cuda::synchronize();
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems, first:\n" << (problems.empty() ? "" : problems[0]);
  const auto s = c.stats();
  EXPECT_EQ(s.fused_calls, (kThreads + 1) * kIterations);
  EXPECT_EQ(s.fallback_groups, 0);
  // One kernel per reduction group and call: the partials combine inside it.
  EXPECT_EQ(s.kernel_launches, 2 * (kThreads + 1) * kIterations);
}

TEST(GpuConcurrency, FourThreadsOnTheirOwnStreams) {
  REQUIRE_GPU();
  auto m = module_from(R"JIT(
def forward(self, x, w, b):
    h = torch.layer_norm(x, [128], w, b, 1e-5)
    return (torch.softmax(torch.gelu(h) * 2.0, -1), torch.sigmoid(x) * x + 1.0)
)JIT");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  constexpr int kThreads = 4;
  constexpr int kIterations = 25;
  std::mutex mu;
  std::vector<std::string> problems;
  auto work = [&](int t) {
    try {
      const c10::Device device(c10::kCUDA, 0);
      const c10::Stream stream =
          c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStreamFromGlobalPool(device, false);
      c10::StreamGuard guard(stream);
      const auto w = rnd({128});
      const auto b = rnd({128});
      for (int i = 0; i < kIterations; ++i) {
        const std::vector<c10::IValue> in{rnd({8 + 24 * t + i, 128}), w, b};
        const auto expected = c.forward_eager(in);  // on this thread's stream, like the fused call
        const auto actual = c.forward(in);
        const auto report = torchfuse::compare_outputs(expected, actual);
        if (!report.passed()) {
          std::lock_guard<std::mutex> lock(mu);
          problems.push_back("thread " + std::to_string(t) + " iteration " + std::to_string(i) + "\n" +
                             report.to_string());
        }
      }
      stream.synchronize();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu);
      problems.push_back("thread " + std::to_string(t) + ": " + e.what());
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (auto& th : threads) th.join();
  torch::cuda::synchronize();
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems, first:\n" << (problems.empty() ? "" : problems[0]);
  const auto s = c.stats();
  EXPECT_EQ(s.fused_calls, kThreads * kIterations);
  EXPECT_EQ(s.eager_calls, 0);
  EXPECT_EQ(s.specializations, 1);
  EXPECT_EQ(s.fallback_groups, 0);
}

// A specialization being built (held in TestHooks::before_build) does not hold up calls of a
// built signature: another thread's calls, on their own stream, finish and match eager while
// the build waits. The wait is a deadlock detector, not a timing check: the calls take
// milliseconds, and only a lock held across the build would keep them waiting for the release.
TEST(GpuConcurrency, ABuildInFlightDoesNotHoldUpCallsOfBuiltSignatures) {
  REQUIRE_GPU();
  torchfuse::CompiledModuleImpl impl(torchfuse::prepare_module_graph(row_softmax()), tftest::quiet_options());
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> held_builds{0};
  torchfuse::CompiledModuleImpl::TestHooks hooks;
  hooks.before_build = [&](const std::vector<c10::IValue>& in) {
    if (in[0].toTensor().scalar_type() != torch::kHalf || held_builds++ != 0) return;
    entered.set_value();
    released.wait();
  };
  impl.set_test_hooks(hooks);
  const std::vector<c10::IValue> built{rnd({32, 64})};
  impl.forward(built);
  std::thread builder([&] { impl.forward({rnd({32, 64}).to(torch::kHalf)}); });
  entered.get_future().wait();
  constexpr int kCalls = 20;
  auto calls = std::async(std::launch::async, [&] {
    const c10::Device device(c10::kCUDA, 0);
    c10::StreamGuard guard(c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStreamFromGlobalPool(device, false));
    std::string problems;
    for (int i = 0; i < kCalls; ++i) {
      const std::vector<c10::IValue> in{rnd({32 + i, 64})};
      const auto report = torchfuse::compare_outputs(impl.forward_eager(in), impl.forward(in));
      if (!report.passed()) problems += "call " + std::to_string(i) + "\n" + report.to_string();
    }
    torch::cuda::synchronize();
    return problems;
  });
  const bool done = calls.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  release.set_value();
  builder.join();
  EXPECT_TRUE(done) << "calls of a built signature waited for another signature's build";
  EXPECT_EQ(calls.get(), "");
  const auto s = impl.stats();
  EXPECT_EQ(s.specializations, 2);
  EXPECT_EQ(s.fused_calls, kCalls + 2);
  EXPECT_EQ(held_builds.load(), 1);
}

// ---- a second device ----

TEST(GpuDevices, CompiledOnDevice0ThenCalledOnDevice1) {
  REQUIRE_GPU();
  const int devices = static_cast<int>(torch::cuda::device_count());
  if (devices < 2) GTEST_SKIP() << "needs 2 CUDA devices, found " << devices;
  auto c = torchfuse::compile(three_schedules(), tftest::quiet_options());
  const c10::Device d1(c10::kCUDA, 1);
  expect_matches_eager(c, three_schedules_inputs(), "cuda:0");
  const std::vector<c10::IValue> in1{rnd({512, 256}, d1), rnd({256}, d1), rnd({256}, d1), rnd({64, 100}, d1)};
  expect_matches_eager(c, in1, "cuda:1");
  const auto out = c.forward(in1);
  torch::cuda::synchronize();
  for (const auto& v : out.toTuple()->elements()) EXPECT_EQ(v.toTensor().device(), d1);
  const auto s = c.stats();
  EXPECT_EQ(s.specializations, 2);  // the device is part of the guard
  EXPECT_EQ(s.fallback_groups, 0);
  EXPECT_EQ(s.eager_calls, 0);
}

// ---- kernel timing ----

TEST(GpuProfile, PerGroupLaunchesAndTimes) {
  REQUIRE_GPU();
  auto m = module_from(R"JIT(
def forward(self, x, y):
    return (torch.softmax(x * 2.0, -1), torch.gelu(y) + 1.0)
)JIT");
  auto o = tftest::quiet_options();
  o.profile_kernels = true;
  auto c = torchfuse::compile(m, o);
  constexpr int kCalls = 10;
  for (int i = 0; i < kCalls; ++i) {
    const std::vector<c10::IValue> in{rnd({256, 1000}), rnd({64, 333})};
    if (i == 0) expect_matches_eager(c, in, "profiled");
    else c.forward(in);
  }
  const auto s = c.stats();
  ASSERT_EQ(s.groups.size(), 2u);
  int64_t launches = 0;
  for (const auto& g : s.groups) {
    SCOPED_TRACE(g.kernel_name + " (" + g.description + ")");
    EXPECT_EQ(g.calls, kCalls);
    EXPECT_EQ(g.launches, kCalls);
    EXPECT_EQ(g.timed_calls, kCalls);
    EXPECT_GT(g.total_ms, 0.0);
    EXPECT_NEAR(g.mean_ms, g.total_ms / kCalls, 1e-9);
    EXPECT_FALSE(g.fell_back);
    launches += g.launches;
  }
  EXPECT_EQ(launches, s.kernel_launches);

  // Off by default: nothing timed.
  auto plain = torchfuse::compile(m, tftest::quiet_options());
  plain.forward({rnd({256, 1000}), rnd({64, 333})});
  for (const auto& g : plain.stats().groups) {
    EXPECT_EQ(g.timed_calls, 0);
    EXPECT_EQ(g.total_ms, 0.0);
  }
}

}  // namespace
