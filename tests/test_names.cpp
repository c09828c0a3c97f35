// Kernel names (codegen/kernel_name.h, passes/group_pattern.h): tf_<pattern>_<hash of the
// canonical source>, deterministic, descriptive, distinct for different kernels and equal for the
// same kernel from differently numbered graphs; and compare_groups where no group runs fused.
// No GPU needed.
#include <regex>
#include <set>

#include <torch/csrc/autograd/profiler_kineto.h>

#include "codegen/kernel_name.h"
#include "passes/group_pattern.h"
#include "runtime/compiled_module.h"
#include "runtime/group_check.h"
#include "runtime/group_trace.h"
#include "runtime/kernel_cache.h"
#include "tests/cpu_fallbacks.h"
#include "tests/test_util.h"

namespace {

using tftest::module_from;
using tftest::module_returning;
using tftest::on_cpu_fallbacks;

std::vector<torchfuse::KernelInfo> kernels_of(const torch::jit::Module& m, const std::vector<c10::IValue>& in) {
  return torchfuse::compile(m, tftest::quiet_options()).explain(in).kernels;
}

// The one kernel whose ops are `description`.
torchfuse::KernelInfo kernel_with(const std::vector<torchfuse::KernelInfo>& kernels, const std::string& description) {
  for (const auto& k : kernels)
    if (k.description == description) return k;
  ADD_FAILURE() << "no kernel computes " << description;
  return {};
}

torchfuse::codegen::GeneratedKernel generated(const torchfuse::KernelInfo& k) {
  torchfuse::codegen::GeneratedKernel g;
  g.name = k.name;
  g.source = k.source;
  return g;
}

bool is_kernel_name(const std::string& name) {
  static const std::regex form("tf_[a-z0-9_]+_[0-9a-f]{8}");
  return std::regex_match(name, form);
}

TEST(KernelNames, SayWhatTheGroupComputes) {
  const auto x = torch::randn({8, 64});
  const std::pair<std::string, std::string> cases[] = {
      {"torch.softmax(x * 2.0, -1)", "tf_softmax_"},
      {"torch.layer_norm(x, [64])", "tf_layer_norm_"},
      {"torch.log_softmax(x, -1)", "tf_log_softmax_"},
      {"(x * 2.0).sum(-1)", "tf_sum_"},
      {"(x + 1.0).mean(-1)", "tf_mean_"},
      {"x * torch.sigmoid(x)", "tf_sigmoid_mul_"},
      {"torch.relu(x * 2.0) + 1.0", "tf_mul_relu_add_"},
      // Past three ops the arithmetic gives way: the tanh form of GELU written out.
      {"0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * torch.pow(x, 3.0))))", "tf_pow_tanh_"},
  };
  for (const auto& [expr, prefix] : cases) {
    const auto kernels = kernels_of(module_returning("x", expr), {x});
    ASSERT_EQ(kernels.size(), 1u) << expr;
    const std::string& name = kernels[0].name;
    EXPECT_EQ(name.rfind(prefix, 0), 0u) << expr << ": " << name;
    EXPECT_TRUE(is_kernel_name(name)) << name;
  }
}

// The name is the entry point and prefixes the params struct and the device helpers; the
// placeholder the generators write is gone.
TEST(KernelNames, NameTheEntryPointAndItsHelpers) {
  const auto pointwise = kernels_of(module_returning("x", "torch.relu(x * 2.0) + 1.0"), {torch::randn({8, 64})});
  ASSERT_EQ(pointwise.size(), 1u);
  const std::string& n = pointwise[0].name;
  EXPECT_TRUE(tftest::contains_in_order(pointwise[0].source, {"struct " + n + "_params", "void " + n + "_compute(",
                                                              ") " + n + "(const " + n + "_params p)", n + "_compute("}));
  const auto row = kernels_of(module_returning("x", "torch.softmax(x, -1)"), {torch::randn({8, 64})});
  ASSERT_EQ(row.size(), 1u);
  EXPECT_TRUE(tftest::contains_in_order(row[0].source, {"struct " + row[0].name + "_params", ") " + row[0].name + "(const "}));
  for (const auto& k : {pointwise[0], row[0]})
    EXPECT_EQ(k.source.find(torchfuse::codegen::kNamePlaceholder), std::string::npos) << k.source;
}

TEST(KernelNames, AreDeterministic) {
  const auto m = module_returning("x, m", "torch.softmax(x * 0.125 + m, -1)");
  const std::vector<c10::IValue> in{torch::randn({4, 8, 256}), torch::randn({1, 1, 256})};
  const auto a = kernels_of(m, in);
  const auto b = kernels_of(m, in);  // another compile of the same module: nothing shared but the process
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].name, b[0].name);
  EXPECT_EQ(a[0].source, b[0].source);
}

// Different kernels: other constants, other dtypes, other layouts (transposed, sliced rows),
// other ops. No two share a name.
TEST(KernelNames, DifferForDifferentKernels) {
  const auto x = torch::randn({8, 64});
  std::vector<torchfuse::KernelInfo> all;
  for (const char* expr : {"torch.relu(x) * 2.0", "torch.relu(x) * 3.0", "torch.relu(x) + 2.0", "torch.softmax(x, -1)",
                           "torch.log_softmax(x, -1)"}) {
    const auto k = kernels_of(module_returning("x", expr), {x});
    all.insert(all.end(), k.begin(), k.end());
  }
  const auto relu_mul = module_returning("x", "torch.relu(x) * 2.0");
  for (const auto& in : {x.to(c10::kBFloat16), x.t(), x.narrow(1, 0, 32)}) {
    const auto k = kernels_of(relu_mul, {in});
    all.insert(all.end(), k.begin(), k.end());
  }
  ASSERT_EQ(all.size(), 8u);
  std::set<std::string> names, sources;
  for (const auto& k : all) {
    names.insert(k.name);
    sources.insert(k.source);
  }
  EXPECT_EQ(sources.size(), all.size());
  EXPECT_EQ(names.size(), all.size());
  EXPECT_EQ(all[0].name.substr(0, 12), all[1].name.substr(0, 12));  // both tf_relu_mul_: the hash tells them apart
}

// The same chain in a graph with unrelated ops in front (another group, a matmul): other IR value
// ids and another group id, so other comments, but the same code, name and cache key.
TEST(KernelNames, SameKernelFromDifferentlyNumberedGraphs) {
  const auto alone = module_returning("x, m", "torch.softmax(x * 0.125 + m, -1)");
  const auto behind = module_from(R"JIT(
def forward(self, w, x, m):
    u = torch.tanh(w) * 3.0 + w
    v = torch.matmul(u, u)
    return torch.softmax(x * 0.125 + m, -1), v
)JIT");
  const auto x = torch::randn({4, 8, 256});
  const auto m = torch::randn({1, 1, 256});
  const auto a = kernels_of(alone, {x, m});
  const auto b = kernels_of(behind, {torch::randn({16, 16}), x, m});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 2u);
  const auto k = kernel_with(b, a[0].description);
  EXPECT_EQ(k.name, a[0].name);
  EXPECT_NE(k.source, a[0].source);  // the comments name other IR values and another group
  EXPECT_EQ(torchfuse::codegen::canonical_source(k.source), torchfuse::codegen::canonical_source(a[0].source));
  // (Keys hold whole sources: compared, not printed.)
  using torchfuse::runtime::KernelCache;
  EXPECT_TRUE(KernelCache::key(generated(k), "sm_90") == KernelCache::key(generated(a[0]), "sm_90"));
  EXPECT_TRUE(KernelCache::key(generated(b[0]), "sm_90") != KernelCache::key(generated(b[1]), "sm_90"));
}

// Canonical sources keep the code and drop only graph numbering in comments: "%<id>" and the
// group id, never what string literals (inline assembly) hold.
TEST(KernelNames, CanonicalSourceDropsOnlyGraphNumbersInComments) {
  namespace cg = torchfuse::codegen;
  EXPECT_EQ(cg::canonical_source("// torchfuse fusion group 12 (pointwise): mul\nfloat t1 = (t0 * 0.5f);  // %7 = mul(%5, 0.5)\n"),
            "// torchfuse fusion group  (pointwise): mul\nfloat t1 = (t0 * 0.5f);  // % = mul(%, 0.5)\n");
  const std::string code = "int a = b % 3;\nasm(\"mov.b32 %0, %1; // %2\" : \"=r\"(x) : \"r\"(y));\nchar c = '\"';  // %4\n";
  EXPECT_EQ(cg::canonical_source(code),
            "int a = b % 3;\nasm(\"mov.b32 %0, %1; // %2\" : \"=r\"(x) : \"r\"(y));\nchar c = '\"';  // %\n");
  EXPECT_EQ(cg::canonical_source("// vector width 4; 32-bit indices"), "// vector width 4; 32-bit indices");
  // The hash: 8 hex digits, stable across runs and platforms (FNV-1a, fixed mixing).
  EXPECT_EQ(cg::short_hash(""), cg::short_hash(""));
  EXPECT_NE(cg::short_hash("a"), cg::short_hash("b"));
  EXPECT_EQ(cg::short_hash("torchfuse").size(), 8u);
  EXPECT_EQ(cg::kernel_name_for("", "x"), "tf_fused_" + cg::short_hash("x"));
}

TEST(KernelNames, PatternPartsAreIdentifierPieces) {
  EXPECT_EQ(torchfuse::pattern_part("__and__"), "and");
  EXPECT_EQ(torchfuse::pattern_part("add_"), "add");
  EXPECT_EQ(torchfuse::pattern_part("linalg_vector_norm"), "linalg_vector_norm");
  EXPECT_EQ(torchfuse::pattern_part("Foo::Bar"), "foo_bar");
  EXPECT_EQ(torchfuse::pattern_part("___"), "");
}

// ---- compare_groups without a GPU ----

TEST(CompareGroups, CpuInputsRunEagerAndNothingIsChecked) {
  auto c = torchfuse::compile(tftest::groups_around_matmul(), tftest::quiet_options());
  const auto r = torchfuse::compare_groups(c, {torch::randn({8, 8}), torch::randn({8, 8})});
  EXPECT_TRUE(r.groups.empty());
  EXPECT_FALSE(r.checked());
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.first_mismatch(), nullptr);
  EXPECT_NE(r.note.find("no fusion group ran: forward ran eager: no input is a CUDA tensor"), std::string::npos) << r.note;
  EXPECT_NE(r.to_string().find(r.note), std::string::npos) << r.to_string();
}

// With every group on its fallback, each group has a row saying why it was not checked, and the
// report says that none ran fused.
TEST(CompareGroups, GroupsOnTheirFallbacksAreListedNotChecked) {
  auto impl = on_cpu_fallbacks(tftest::groups_around_matmul());
  torchfuse::CompiledModule c(impl);
  const auto r = torchfuse::compare_groups(c, {torch::randn({8, 8}), torch::randn({8, 8})});
  ASSERT_EQ(r.groups.size(), 2u) << r.to_string();
  EXPECT_FALSE(r.checked());
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.groups[0].kernel_name.rfind("tf_mul_tanh_", 0), 0u) << r.to_string();
  EXPECT_EQ(r.groups[1].kernel_name.rfind("tf_add_relu_mul_", 0), 0u) << r.to_string();
  for (const auto& g : r.groups) {
    EXPECT_FALSE(g.compared);
    EXPECT_NE(g.note.find("runs its ATen fallback for good"), std::string::npos) << g.note;
  }
  EXPECT_NE(r.note.find("no fusion group ran fused on this call"), std::string::npos) << r.note;
  EXPECT_TRUE(tftest::contains_in_order(r.to_string(), {"group", "kernel", "ops", "verdict", "tf_mul_tanh_", "mul -> tanh",
                                                        "not checked", "tf_add_relu_mul_", "not checked"}))
      << r.to_string();
}

// Random inputs of the group's profiled types (tensors on the CPU, numbers as doubles or ints).
std::vector<c10::IValue> group_inputs(const torchfuse::FusionGroup& g) {
  std::vector<c10::IValue> in;
  for (const auto* v : g.inputs) {
    if (!v->type.is_tensor()) {
      in.emplace_back(c10::isFloatingType(v->type.dtype) ? c10::IValue(0.5) : c10::IValue(int64_t{2}));
      continue;
    }
    in.emplace_back(torch::randn(v->type.sizes).to(v->type.dtype));
  }
  return in;
}

// What compare_groups does as each kernel returns (runtime::judge_group), on the CPU with outputs
// of the test's own: the group's ATen results pass; with element 0 of one output off by 1 (as
// debug_fail_kernels "wrong:" makes it) the group fails there. f32 and bf16, a pointwise and a
// row-reduction group, judged against the float64 run of the group's ops.
TEST(CompareGroups, JudgeFailsAGroupOneElementOff) {
  const auto m = module_from(R"JIT(
def forward(self, x, w):
    a = torch.tanh(x * 2.0)
    h = torch.matmul(a, w)
    return torch.softmax(h * 0.5, -1) + 1.0
)JIT");
  for (const c10::ScalarType dtype : {c10::kFloat, c10::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    auto impl = on_cpu_fallbacks(m);
    const std::vector<c10::IValue> in{torch::randn({16, 64}).to(dtype), torch::randn({64, 64}).to(dtype)};
    impl->forward(in);
    const auto kernels = impl->group_kernels(in);
    ASSERT_EQ(kernels.size(), 2u);
    for (const auto& k : kernels) {
      SCOPED_TRACE(k->group().kernel_name);
      const std::vector<c10::IValue> group_in = group_inputs(k->group());
      std::vector<at::Tensor> right;
      for (const auto& v : k->run_fallback_on(group_in)) right.push_back(v.toTensor());
      const auto pass = torchfuse::runtime::judge_group(*k, group_in, right, nullptr);
      EXPECT_TRUE(pass.compared && pass.passed) << pass.problem << " " << pass.note;
      EXPECT_EQ(pass.note, "");  // judged against float64
      EXPECT_EQ(pass.kernel_name, k->group().kernel_name);
      std::vector<at::Tensor> wrong;
      for (const auto& t : right) wrong.push_back(t.clone());
      wrong[0].reshape({-1})[0].add_(1);
      const auto fail = torchfuse::runtime::judge_group(*k, group_in, wrong, nullptr);
      EXPECT_TRUE(fail.compared);
      EXPECT_FALSE(fail.passed);
      EXPECT_EQ(fail.problem.rfind("output 0: ", 0), 0u) << fail.problem;
      EXPECT_EQ(fail.worst_index, (std::vector<int64_t>{0, 0}));
      EXPECT_GE(fail.max_abs_error, 0.5);
    }
  }
}

// Each group call runs inside a PyTorch profiler record named torchfuse::<kernel name>: on the
// CPU, groups on their fallbacks (the CPU test hook) show in the profiler's CPU events.
TEST(KernelNames, ProfilerRecordsEachGroupCall) {
  namespace profiler = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  auto impl = on_cpu_fallbacks(tftest::groups_around_matmul());
  const std::vector<c10::IValue> in{torch::randn({8, 8}), torch::randn({8, 8})};
  impl->forward(in);  // builds the specialization outside the profiled call
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  const std::set<ActivityType> cpu{ActivityType::CPU};
  profiler::prepareProfiler(config, cpu);
  profiler::enableProfiler(config, cpu);
  impl->forward(in);
  const auto result = profiler::disableProfiler();
  std::set<std::string> names;
  for (const auto& e : result->events()) names.insert(e.name());
  std::string listed;
  for (const auto& n : names) listed += "  " + n + "\n";
  const auto groups = impl->stats().groups;
  ASSERT_EQ(groups.size(), 2u);
  for (const auto& g : groups) EXPECT_EQ(names.count("torchfuse::" + g.kernel_name), 1u) << g.kernel_name << " among\n" << listed;
}

// Without an NVTX tool (no NVTX_INJECTION64_PATH: tests/test_nvtx.cpp runs with one), ranges
// are no-ops that nest and unwind like any other scope.
TEST(KernelNames, NvtxRangesWithoutAToolAreHarmless) {
  using torchfuse::runtime::GroupTrace;
  const GroupTrace outer("tf_mul_tanh_0123abcd");
  const GroupTrace inner("tf_add_relu_mul_4567ef01");
  EXPECT_EQ(outer.name(), "torchfuse::tf_mul_tanh_0123abcd");
  for (int i = 0; i < 3; ++i) {
    const GroupTrace::Range a(outer);
    const GroupTrace::Range b(inner);
  }
  try {
    const GroupTrace::Range r(outer);
    throw std::runtime_error("unwinds");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "unwinds");
  }
  EXPECT_EQ(inner.name(), "torchfuse::tf_add_relu_mul_4567ef01");
}

}  // namespace
