// On the GPU: each group's launches under its kernel's name in the PyTorch profiler (Kineto's
// record-function events and, where CUPTI delivers them, the kernels), the kernel cache across
// differently numbered graphs, and compare_groups naming the group that is wrong (debug_fail_kernels
// "wrong:"). Every test skips itself without a CUDA device.
#include <algorithm>
#include <functional>
#include <iostream>
#include <set>

#include "benchmarks/kernel_count.h"
#include "tests/test_util.h"

namespace {

using tftest::module_from;
using tftest::module_returning;

torch::Tensor rnd(std::vector<int64_t> sizes, c10::ScalarType dtype = c10::kFloat) {
  return torch::randn(sizes, torch::TensorOptions().device(c10::Device(c10::kCUDA, 0))).to(dtype);
}

struct ProfiledNames {
  std::set<std::string> records;  // record-function (CPU op) events
  std::set<std::string> kernels;  // GPU kernels, where CUPTI delivered them
};

// The names of what the Kineto profiler saw while `fn` ran (benchmarks/kernel_count.h).
ProfiledNames profile(const std::function<void()>& fn) {
  ProfiledNames names;
  for (const auto& event : torchfuse_bench::profile_events(fn)) (event.kernel ? names.kernels : names.records).insert(event.name);
  return names;
}

std::string listed(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += "  " + n + "\n";
  return s;
}

TEST(GpuNames, ProfilerShowsEachGroupUnderItsKernelsName) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(tftest::groups_around_matmul(), tftest::quiet_options());
  const std::vector<c10::IValue> in{rnd({64, 64}), rnd({64, 64})};
  c.forward(in);  // builds the specialization outside the profiled call
  const auto groups = c.stats().groups;
  ASSERT_EQ(groups.size(), 2u);
  const ProfiledNames seen = profile([&] { c.forward(in); });
  for (const auto& g : groups) {
    EXPECT_EQ(seen.records.count("torchfuse::" + g.kernel_name), 1u) << g.kernel_name << " among\n" << listed(seen.records);
  }
  if (seen.kernels.empty()) {
    std::cout << "[ NOTE ] the profiler recorded no GPU kernels (CUPTI unavailable?): kernel names not checked\n";
    return;
  }
  for (const auto& k : c.kernels()) EXPECT_EQ(seen.kernels.count(k.name), 1u) << k.name << " among\n" << listed(seen.kernels);
}

// The same softmax behind an unrelated group and a matmul: other IR ids and group id, the same
// kernel. The second module finds it in the process's kernel cache (the key is the kernel's name
// and canonical source): only its other group's kernel comes from NVRTC or the disk.
TEST(GpuNames, SameKernelFromAnotherGraphIsACacheHit) {
  REQUIRE_GPU();
  auto alone = torchfuse::compile(module_returning("x, m", "torch.softmax(x * 0.125 + m, -1)"), tftest::quiet_options());
  auto behind = torchfuse::compile(module_from(R"JIT(
def forward(self, w, x, m):
    u = torch.tanh(w) * 3.25 + w
    v = torch.matmul(u, u)
    return torch.softmax(x * 0.125 + m, -1), v
)JIT"),
                                   tftest::quiet_options());
  const auto x = rnd({4, 8, 256});
  const auto m = rnd({1, 1, 256});
  const std::vector<c10::IValue> in_alone{x, m};
  const std::vector<c10::IValue> in_behind{rnd({32, 32}), x, m};
  EXPECT_TRUE(torchfuse::compare_with_eager(alone, in_alone).passed());
  EXPECT_TRUE(torchfuse::compare_with_eager(behind, in_behind).passed());
  const auto a = alone.stats();
  const auto b = behind.stats();
  ASSERT_EQ(a.groups.size(), 1u);
  ASSERT_EQ(b.groups.size(), 2u);
  const auto same = std::find_if(b.groups.begin(), b.groups.end(),
                                 [&](const torchfuse::GroupStats& g) { return g.description == a.groups[0].description; });
  ASSERT_NE(same, b.groups.end());
  EXPECT_EQ(same->kernel_name, a.groups[0].kernel_name);
  EXPECT_EQ(b.kernels_compiled + b.kernel_disk_hits, 1) << "compiled " << b.kernels_compiled << ", disk hits "
                                                        << b.kernel_disk_hits;
}

// A model with a pointwise group, a layer norm and a softmax (one row group, or two), in f32 and
// bf16: every group ran
// fused, was compared with its own ATen ops, and matches.
TEST(GpuCompareGroups, EveryGroupOfACorrectModuleMatches) {
  REQUIRE_GPU();
  const auto m = module_from(R"JIT(
def forward(self, x, w, b):
    a = torch.tanh(x * 2.0)
    h = torch.matmul(a, a)
    y = torch.layer_norm(h + 1.0, [64], w, b)
    return torch.softmax(y * 0.5, -1) * 3.0
)JIT");
  for (const c10::ScalarType dtype : {c10::kFloat, c10::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    auto c = torchfuse::compile(m, tftest::quiet_options());
    const std::vector<c10::IValue> in{rnd({64, 64}, dtype), rnd({64}, dtype), rnd({64}, dtype)};
    const auto r = torchfuse::compare_groups(c, in);
    ASSERT_TRUE(r.checked()) << r.to_string();
    EXPECT_TRUE(r.passed()) << r.to_string();
    EXPECT_EQ(r.groups.size(), c.stats().groups.size());
    EXPECT_GE(r.groups.size(), 2u) << r.to_string();
    for (const auto& g : r.groups) EXPECT_TRUE(g.compared) << g.kernel_name << ": " << g.note;
    EXPECT_NE(r.to_string().find("every group matches its ATen ops"), std::string::npos) << r.to_string();
  }
}

// debug_fail_kernels "wrong:" adds 1 to element 0 of one group's output: compare_with_eager sees
// a wrong model, compare_groups names the group; the other group, given the wrong values on both
// sides, matches.
TEST(GpuCompareGroups, NamesTheGroupThatIsWrong) {
  REQUIRE_GPU();
  struct Case {
    const char* spec;
    const char* wrong;  // the prefix of the wrong group's kernel name
    const char* right;
  };
  const Case cases[] = {{"wrong:tf_mul_tanh", "tf_mul_tanh_", "tf_add_relu_mul_"},
                        {"wrong:tf_add_relu_mul", "tf_add_relu_mul_", "tf_mul_tanh_"}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.spec);
    auto o = tftest::quiet_options();
    o.debug_fail_kernels = k.spec;
    auto c = torchfuse::compile(tftest::groups_around_matmul(), o);
    const std::vector<c10::IValue> in{rnd({64, 64}), rnd({64, 64})};
    EXPECT_FALSE(torchfuse::compare_with_eager(c, in).passed());
    const auto r = torchfuse::compare_groups(c, in);
    ASSERT_EQ(r.groups.size(), 2u) << r.to_string();
    const torchfuse::GroupComparison* bad = r.first_mismatch();
    ASSERT_NE(bad, nullptr) << r.to_string();
    EXPECT_EQ(bad->kernel_name.rfind(k.wrong, 0), 0u) << r.to_string();
    EXPECT_TRUE(bad->compared);
    EXPECT_EQ(bad->problem.rfind("output 0: ", 0), 0u) << bad->problem;
    EXPECT_EQ(bad->worst_index, (std::vector<int64_t>{0, 0})) << r.to_string();
    EXPECT_GE(bad->max_abs_error, 0.5) << r.to_string();
    for (const auto& g : r.groups) {
      if (g.kernel_name.rfind(k.right, 0) != 0) continue;
      EXPECT_TRUE(g.compared && g.passed) << r.to_string();
    }
    EXPECT_NE(r.to_string().find(std::string("first mismatch: group ") + std::to_string(bad->group) + ", " + bad->kernel_name),
              std::string::npos)
        << r.to_string();
  }
}

}  // namespace
