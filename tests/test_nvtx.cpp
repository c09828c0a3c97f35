// NVTX ranges as Nsight Systems sees them (runtime/group_trace.h): through NVTX's injection
// interface, with tests/nvtx_capture.cpp as the tool. ctest runs this binary with
// NVTX_INJECTION64_PATH naming the capture library (tests/CMakeLists.txt), which NVTX loads at
// the process's first NVTX call. Each range of a fusion group is a push and a pop in the
// "torchfuse" domain whose message is the registered string "torchfuse::<kernel name>".
// On the CPU: GroupTrace itself, and each group call of a module whose groups run their ATen
// fallbacks (the CPU test hook); on the GPU: each fused group's calls, once per call.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "runtime/group_trace.h"
#include "tests/cpu_fallbacks.h"
#include "tests/nvtx_capture.h"
#include "tests/test_util.h"

namespace {

using torchfuse::runtime::GroupTrace;

// The capture library's functions, as NVTX loaded it (all null when it did not).
struct Capture {
  tf_nvtx_capture_instances_fn instances = nullptr;
  tf_nvtx_capture_domains_fn domains = nullptr;
  tf_nvtx_capture_take_fn take = nullptr;
  std::string problem;  // why the functions are null
  explicit operator bool() const { return instances && domains && take; }
};

// NVTX loads the library at the process's first NVTX call (a GroupTrace's construction makes
// one), with RTLD_LOCAL: its symbols are reached through its own handle. The calling thread's
// events so far are forgotten.
Capture capture() {
  { const GroupTrace first_nvtx_call("tf_first_call_00000000"); }
  Capture c;
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  if (!path || !*path) {
    c.problem = "NVTX_INJECTION64_PATH is not set: run through ctest, or as NVTX_INJECTION64_PATH=" TORCHFUSE_NVTX_CAPTURE
                " torchfuse_nvtx_tests";
    return c;
  }
  void* handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!handle) {
    const char* why = dlerror();
    c.problem = std::string("NVTX did not load the injection library ") + path + " (" + (why ? why : "") + ")";
    return c;
  }
  c.instances = reinterpret_cast<tf_nvtx_capture_instances_fn>(dlsym(handle, TF_NVTX_CAPTURE_INSTANCES));
  c.domains = reinterpret_cast<tf_nvtx_capture_domains_fn>(dlsym(handle, TF_NVTX_CAPTURE_DOMAINS));
  c.take = reinterpret_cast<tf_nvtx_capture_take_fn>(dlsym(handle, TF_NVTX_CAPTURE_TAKE));
  dlclose(handle);  // NVTX holds its own reference
  if (!c) c.problem = std::string(path) + " lacks the tf_nvtx_capture_* functions";
  if (c) c.take();
  return c;
}

#define ASSERT_CAPTURING(c) ASSERT_TRUE(c) << (c).problem

// The calling thread's events since the last take, in the "torchfuse" domain only (other
// libraries in the process may use NVTX domains of their own), without the domain's creation
// (once per process, checked by DomainIsCreatedOnce).
std::vector<std::string> torchfuse_events(const Capture& c) {
  std::vector<std::string> events;
  std::istringstream lines(c.take());
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string kind, domain;
    words >> kind >> domain;
    if (kind != "domain" && domain == "torchfuse") events.push_back(line);
  }
  return events;
}

std::string listed(const std::vector<std::string>& events) {
  std::string s;
  for (const auto& e : events) s += "  " + e + "\n";
  return s.empty() ? "  (none)\n" : s;
}

// Each event is a push and its pop, none nested: counts of each range's message.
::testing::AssertionResult flat_ranges(const std::vector<std::string>& events, std::map<std::string, int>* counts) {
  for (size_t i = 0; i < events.size(); i += 2) {
    const std::string push = "push torchfuse registered ";
    if (events[i].rfind(push, 0) != 0 || i + 1 >= events.size() || events[i + 1] != "pop torchfuse") {
      return ::testing::AssertionFailure() << "event " << i << " does not open a range its next event closes:\n" << listed(events);
    }
    ++(*counts)[events[i].substr(push.size())];
  }
  return ::testing::AssertionSuccess();
}

TEST(NvtxRanges, DomainIsCreatedOnce) {
  const Capture c = capture();
  ASSERT_CAPTURING(c);
  const GroupTrace a("tf_mul_tanh_00000001");
  const GroupTrace b("tf_add_relu_mul_00000002");
  EXPECT_GE(c.instances(), 1);
  EXPECT_EQ(tftest::count_occurrences(c.domains(), "torchfuse\n"), 1) << c.domains();
}

// The name is registered when the trace is made; a Range pushes it on construction and pops it
// on destruction, on the constructing thread.
TEST(NvtxRanges, RangePushesTheRegisteredNameAndPopsIt) {
  const Capture c = capture();
  ASSERT_CAPTURING(c);
  const GroupTrace trace("tf_mul_tanh_0123abcd");
  EXPECT_EQ(trace.name(), "torchfuse::tf_mul_tanh_0123abcd");
  EXPECT_EQ(torchfuse_events(c), std::vector<std::string>{"string torchfuse torchfuse::tf_mul_tanh_0123abcd"});
  {
    const GroupTrace::Range range(trace);
    EXPECT_EQ(torchfuse_events(c), std::vector<std::string>{"push torchfuse registered torchfuse::tf_mul_tanh_0123abcd"});
  }
  EXPECT_EQ(torchfuse_events(c), std::vector<std::string>{"pop torchfuse"});
}

TEST(NvtxRanges, RangesNestAndStayOnTheirThread) {
  const Capture c = capture();
  ASSERT_CAPTURING(c);
  const GroupTrace outer("tf_outer_00000001");
  const GroupTrace inner("tf_inner_00000002");
  torchfuse_events(c);
  {
    const GroupTrace::Range a(outer);
    const GroupTrace::Range b(inner);
  }
  EXPECT_EQ(torchfuse_events(c), (std::vector<std::string>{"push torchfuse registered torchfuse::tf_outer_00000001",
                                                           "push torchfuse registered torchfuse::tf_inner_00000002",
                                                           "pop torchfuse", "pop torchfuse"}));
  std::vector<std::string> other;
  std::thread([&] {
    { const GroupTrace::Range r(inner); }
    other = torchfuse_events(c);
  }).join();
  EXPECT_EQ(other, (std::vector<std::string>{"push torchfuse registered torchfuse::tf_inner_00000002", "pop torchfuse"}));
  EXPECT_EQ(torchfuse_events(c), std::vector<std::string>{});
}

// A module's calls: each group call is one range named after the group's kernel (a registered
// string), pushed and popped in FusedKernel::run on the calling thread; no range nests in
// another, and no name is registered again per call (flat_ranges takes nothing but pushes and
// pops).
void expect_one_range_per_group_call(const std::function<void()>& call, const std::function<torchfuse::Stats()>& stats) {
  call();  // builds the specialization (kernel names, their registered strings)
  const Capture c = capture();
  ASSERT_CAPTURING(c);
  const auto before = stats().groups;
  ASSERT_GE(before.size(), 2u);
  constexpr int kCalls = 3;
  for (int i = 0; i < kCalls; ++i) call();
  const auto events = torchfuse_events(c);
  std::map<std::string, int> counts;
  ASSERT_TRUE(flat_ranges(events, &counts));
  const auto after = stats().groups;
  ASSERT_EQ(after.size(), before.size());
  std::map<std::string, int> expected;
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].calls - before[i].calls, kCalls) << after[i].kernel_name;
    expected["torchfuse::" + after[i].kernel_name] += kCalls;
  }
  EXPECT_EQ(counts, expected) << listed(events);
}

TEST(NvtxRanges, EachGroupCallOfAModuleIsOneRange) {
  auto impl = tftest::on_cpu_fallbacks(tftest::groups_around_matmul());
  const std::vector<c10::IValue> in{torch::randn({8, 8}), torch::randn({8, 8})};
  expect_one_range_per_group_call([&] { impl->forward(in); }, [&] { return impl->stats(); });
}

TEST(NvtxRangesGpu, EachFusedGroupCallIsOneRangeNamedAfterItsKernel) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(tftest::module_from(R"JIT(
def forward(self, x, w):
    a = torch.gelu(x * 2.0) + 1.0
    m = torch.matmul(a, w)
    return torch.softmax(m * 0.125, -1)
)JIT"),
                              tftest::quiet_options());
  const auto cuda = torch::TensorOptions().device(c10::Device(c10::kCUDA, 0));
  const std::vector<c10::IValue> in{torch::randn({64, 64}, cuda), torch::randn({64, 64}, cuda)};
  expect_one_range_per_group_call([&] { c.forward(in); }, [&] { return c.stats(); });
  const auto stats = c.stats();
  EXPECT_EQ(stats.groups.size(), 2u);
  for (const auto& g : stats.groups) {
    EXPECT_FALSE(g.fell_back) << g.kernel_name << ": " << g.fallback_reason;
    EXPECT_EQ(g.fallback_calls, 0) << g.kernel_name;
    EXPECT_GE(g.launches, g.calls) << g.kernel_name;
  }
  torch::cuda::synchronize();
}

}  // namespace
