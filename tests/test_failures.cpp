// Failure handling without a GPU: strict mode names the ops it would leave to ATen, injected
// NVRTC failures carry the log and the source and are never cached, the injection grammar (load,
// launch and oom faults), the kernel cache over an unwritable disk cache, and every group's
// fallback graph computes what eager computes.
#include <cstring>

#include <torch/torch.h>

#include "codegen/nvrtc.h"
#include "runtime/failure_injection.h"
#include "runtime/kernel_cache.h"
#include "runtime/compiled_module.h"
#include "runtime/disk_cache.h"
#include "src/prepare_graph.h"
#include "tests/fs_util.h"
#include "tests/test_util.h"

using tftest::contains_in_order;
using tftest::module_from;
using tftest::module_returning;

namespace {

torchfuse::CompileOptions strict_options() {
  auto o = tftest::quiet_options();
  o.strict = true;
  return o;
}

// A reduction over non-contiguous dims stays in ATen: strict names it, with the reason.
TEST(Strict, UnfusedReductionIsAnErrorNamingTheOp) {
  auto m = module_returning("x", "torch.relu(x * 2.0) + x.var([0, 2], keepdim=True)");
  const std::vector<c10::IValue> in{torch::randn({4, 5, 6})};
  const auto relaxed = torchfuse::compile(m, tftest::quiet_options()).explain(in);
  ASSERT_FALSE(relaxed.refused.empty());
  const std::string msg = tftest::error_of([&] { torchfuse::compile(m, strict_options()).explain(in); });
  EXPECT_TRUE(contains_in_order(msg, {"torchfuse (strict): 1 op(s)", "aten::var -> %", "reduce_sum",
                                      "refused: cannot fuse %", "not one contiguous block of dims"}));
  // The elementwise ops fused; only the variance is named.
  EXPECT_EQ(msg.find("aten::relu"), std::string::npos) << msg;
}

TEST(Strict, LoneOpsBecomeGroupsAndOpaqueOpsAreFine) {
  const std::vector<c10::IValue> in{torch::randn({8, 8}), torch::randn({8, 8})};
  auto lone = module_returning("x, w", "torch.matmul(torch.relu(x), w)");
  EXPECT_TRUE(torchfuse::compile(lone, tftest::quiet_options()).explain(in).kernels.empty());
  const auto e = torchfuse::compile(lone, strict_options()).explain(in);
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_EQ(e.kernels[0].description, "relu");
  EXPECT_TRUE(torchfuse::compile(module_returning("x, w", "torch.matmul(x, w)"), strict_options())
                  .explain(in)
                  .kernels.empty());
}

TEST(Strict, ARefusedMergeLeavesNoOpBehind) {
  // The merge is refused (s would be computed over [8, 16]), but both sides become groups.
  auto m = module_from("def forward(self, x, b):\n    s = torch.sigmoid(b) * 2.0\n    return (x + s, s)\n");
  const auto e = torchfuse::compile(m, strict_options()).explain({torch::randn({8, 16}), torch::randn({16})});
  EXPECT_EQ(e.kernels.size(), 2u) << e.ir_after;
  EXPECT_FALSE(e.refused.empty());
}

TEST(InjectedFailure, OnlyTheNamedKernelGetsIt) {
  auto o = tftest::quiet_options();
  o.debug_fail_kernels = "tf_add_relu_mul";
  const auto e = torchfuse::compile(tftest::groups_around_matmul(), o).explain({torch::randn({8, 8}), torch::randn({8, 8})});
  ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after;
  EXPECT_EQ(e.kernels[1].description, "add -> relu -> mul");
  EXPECT_EQ(e.kernels[0].source.find("#error"), std::string::npos);
  EXPECT_EQ(e.kernels[1].source.rfind("#error torchfuse: injected failure", 0), 0u) << e.kernels[1].source;
  // "runtime:" spares the kernels built with the specialization.
  o.debug_fail_kernels = "runtime:*";
  for (const auto& k : torchfuse::compile(tftest::groups_around_matmul(), o).explain({torch::randn({8, 8}), torch::randn({8, 8})}).kernels)
    EXPECT_EQ(k.source.find("#error"), std::string::npos);
}

TEST(InjectedFailure, NvrtcFailsWithLogAndSource) {
  auto o = tftest::quiet_options();
  o.debug_fail_kernels = "*";
  const std::string msg = tftest::error_of([&] {
    torchfuse::compile(tftest::groups_around_matmul(), o).explain({torch::randn({8, 8}), torch::randn({8, 8})}, /*compile_kernels=*/true);
  });
  EXPECT_TRUE(contains_in_order(msg, {"NVRTC could not compile kernel tf_mul_tanh", "--- NVRTC log ---",
                                      "injected failure", "--- kernel source ---", "#error", "extern \"C\""}));
}

TEST(InjectedFailure, MatchingRules) {
  const auto f = torchfuse::runtime::FailureInjection::parse(" tf_add_relu_mul , runtime:tf_softmax");
  EXPECT_TRUE(f.matches("tf_add_relu_mul", false));
  EXPECT_TRUE(f.matches("tf_add_relu_mul", true));
  EXPECT_FALSE(f.matches("tf_softmax", false));
  EXPECT_TRUE(f.matches("tf_softmax", true));
  EXPECT_FALSE(f.matches("tf_mul_tanh", true));
  EXPECT_TRUE(torchfuse::runtime::FailureInjection::parse("*").matches("anything", false));
  EXPECT_TRUE(torchfuse::runtime::FailureInjection::parse("").empty());
}

TEST(InjectedFailure, IsNeverCachedAndHasItsOwnKey) {
  namespace rt = torchfuse::runtime;
  torchfuse::codegen::GeneratedKernel plain;
  plain.name = "tf_mul_tanh";
  plain.source = "extern \"C\" __global__ void tf_mul_tanh(float* p) { p[threadIdx.x] = 1.0f; }\n";
  const auto injected = rt::with_injected_failure(plain);
  EXPECT_NE(rt::KernelCache::key(plain, "sm_90"), rt::KernelCache::key(injected, "sm_90"));
  rt::CompileCounters counters;
  // Asked twice, NVRTC fails twice: a failure is never stored as a cubin.
  for (int i = 0; i < 2; ++i) {
    const std::string msg = tftest::error_of([&] { rt::KernelCache::global().cubin(injected, "sm_90", &counters); });
    EXPECT_NE(msg.find("injected failure"), std::string::npos) << "attempt " << i << ": " << msg;
  }
  EXPECT_EQ(counters.nvrtc_compiles, 0);
  EXPECT_EQ(counters.memory_hits, 0);
  EXPECT_EQ(counters.disk_hits, 0);
}

TEST(InjectedFailure, KindsCountsAndRuntimeEntries) {
  namespace rt = torchfuse::runtime;
  using rt::Fault;
  const auto f = rt::FailureInjection::parse("load:tf_add_relu_mul, launch:runtime:tf_softmax, oom:tf_layer_norm, nvrtc:tf_sum");
  EXPECT_TRUE(f.matches(Fault::Load, "tf_add_relu_mul", false));
  EXPECT_FALSE(f.matches(Fault::Nvrtc, "tf_add_relu_mul", false));  // a kind names its own fault only
  EXPECT_FALSE(f.matches(Fault::Launch, "tf_add_relu_mul", false));
  EXPECT_FALSE(f.matches(Fault::Launch, "tf_softmax", false));
  EXPECT_TRUE(f.matches(Fault::Launch, "tf_softmax", true));
  EXPECT_TRUE(f.matches(Fault::Nvrtc, "tf_sum", false));
  EXPECT_TRUE(f.matches("tf_sum", false));
  EXPECT_FALSE(f.take_oom("tf_add_relu_mul"));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(f.take_oom("tf_layer_norm")) << "uncounted: every call, call " << i;
}

TEST(InjectedFailure, CountedOomFaultsRunOutAndCopiesShareTheCount) {
  namespace rt = torchfuse::runtime;
  const auto f = rt::FailureInjection::parse("oom#2:tf_mul_tanh");
  const rt::FailureInjection copy = f;  // each FusedKernel holds a copy of its specialization's
  EXPECT_FALSE(f.take_oom("tf_add_relu_mul"));
  EXPECT_TRUE(f.take_oom("tf_mul_tanh"));
  EXPECT_TRUE(copy.take_oom("tf_mul_tanh"));
  EXPECT_FALSE(f.take_oom("tf_mul_tanh"));
  EXPECT_FALSE(copy.take_oom("tf_mul_tanh"));
  // A fresh parse (a new specialization) starts over.
  EXPECT_TRUE(rt::FailureInjection::parse("oom#2:tf_mul_tanh").take_oom("tf_mul_tanh"));
}

TEST(InjectedFailure, MalformedEntriesAreErrorsFromCompile) {
  const auto m = tftest::groups_around_matmul();
  auto error_for = [&](const std::string& spec) {
    auto o = tftest::quiet_options();
    o.debug_fail_kernels = spec;
    return tftest::error_of([&] { torchfuse::compile(m, o); });
  };
  EXPECT_TRUE(contains_in_order(error_for("tf_mul_tanh,crash:tf_add_relu_mul"),
                                {"debug_fail_kernels entry 'crash:tf_add_relu_mul'", "unknown fault kind 'crash'"}));
  EXPECT_NE(error_for("launch#2:*").find("only oom faults take a count"), std::string::npos);
  EXPECT_NE(error_for("oom#0:*").find("at least 1"), std::string::npos);
  EXPECT_NE(error_for("oom#x:*").find("at least 1"), std::string::npos);
  EXPECT_NE(error_for("oom:runtime:*").find("runtime: does not apply"), std::string::npos);
  EXPECT_NE(error_for("wrong:runtime:*").find("wrong faults happen at run time only"), std::string::npos);
  EXPECT_NE(error_for("wrong#2:*").find("only oom faults take a count"), std::string::npos);
  EXPECT_NE(error_for("load:").find("no kernel named"), std::string::npos);
  for (const char* fine : {"", "*", "tf_add_relu_mul,", "runtime:*", "nvrtc:runtime:tf_mul_tanh", "load:*", "launch:runtime:*",
                           "oom#3:tf_add_relu_mul", "wrong:tf_mul_tanh"}) {
    EXPECT_EQ(error_for(fine), "") << fine;
  }
}

// Load and launch faults mark the source with a comment: it still compiles (NVRTC does not
// fail), its key is its own, and the driver call sites find the mark.
TEST(InjectedFailure, LoadAndLaunchMarksCompileAndAreFoundByKind) {
  namespace rt = torchfuse::runtime;
  auto o = tftest::quiet_options();
  o.debug_fail_kernels = "load:tf_mul_tanh,launch:tf_add_relu_mul";
  const std::vector<c10::IValue> in{torch::randn({8, 8}), torch::randn({8, 8})};
  const auto e = torchfuse::compile(tftest::groups_around_matmul(), o).explain(in, /*compile_kernels=*/true);
  ASSERT_EQ(e.kernels.size(), 2u) << e.ir_after;
  ASSERT_EQ(e.cubin_bytes.size(), 2u);
  for (size_t k = 0; k < 2; ++k) EXPECT_GT(e.cubin_bytes[k], 0u) << e.kernels[k].name;
  torchfuse::codegen::GeneratedKernel load, launch;
  load.name = e.kernels[0].name;
  load.source = e.kernels[0].source;
  launch.name = e.kernels[1].name;
  launch.source = e.kernels[1].source;
  EXPECT_TRUE(rt::has_injected_fault(load, rt::Fault::Load)) << load.source.substr(0, 200);
  EXPECT_FALSE(rt::has_injected_fault(load, rt::Fault::Launch));
  EXPECT_TRUE(rt::has_injected_fault(launch, rt::Fault::Launch)) << launch.source.substr(0, 200);
  EXPECT_FALSE(rt::has_injected_fault(launch, rt::Fault::Load));
  EXPECT_EQ(load.source.find("#error"), std::string::npos);
  // The unmarked kernel, for comparison: same code after the mark, another cache key.
  o.debug_fail_kernels = "";
  const auto plain = torchfuse::compile(tftest::groups_around_matmul(), o).explain(in);
  torchfuse::codegen::GeneratedKernel unmarked;
  unmarked.name = plain.kernels[0].name;
  unmarked.source = plain.kernels[0].source;
  EXPECT_FALSE(rt::has_injected_fault(unmarked, rt::Fault::Load));
  EXPECT_EQ(load.source.substr(load.source.find('\n') + 1), unmarked.source);
  EXPECT_NE(rt::KernelCache::key(load, "sm_90"), rt::KernelCache::key(unmarked, "sm_90"));
  // Several kinds on one kernel: every mark is found; NVRTC's comes first (it fails first).
  auto all = rt::FailureInjection::parse("nvrtc:*,load:*,launch:*").apply(unmarked, false);
  EXPECT_EQ(all.source.rfind("#error torchfuse: injected failure", 0), 0u);
  EXPECT_TRUE(rt::has_injected_fault(all, rt::Fault::Load));
  EXPECT_TRUE(rt::has_injected_fault(all, rt::Fault::Launch));
  // A mark's text further down the source (not a leading line) is not a mark.
  torchfuse::codegen::GeneratedKernel buried = unmarked;
  buried.source += "// torchfuse: injected fault: load (debug_fail_kernels)\n";
  EXPECT_FALSE(rt::has_injected_fault(buried, rt::Fault::Load));
}

// ---- the kernel cache over an unwritable disk cache ----

torchfuse::codegen::GeneratedKernel probe_kernel(const std::string& name) {
  torchfuse::codegen::GeneratedKernel k;
  k.name = name;
  k.source = "extern \"C\" __global__ void " + name + "(float* p) { p[threadIdx.x] = 2.0f; }\n";
  return k;
}

// Compiles two kernels (each asked twice) through a kernel cache whose disk cannot take them:
// both compile, the repeats come from memory, and the disk problem is one warning.
void expect_memory_only_with_one_warning(torchfuse::runtime::KernelCache& cache, const std::string& what) {
  namespace rt = torchfuse::runtime;
  rt::CompileCounters counters;
  testing::internal::CaptureStderr();
  for (const char* name : {"tf_cache_probe_a", "tf_cache_probe_b"}) {
    for (int i = 0; i < 2; ++i) {
      const auto image = cache.cubin(probe_kernel(name), "sm_90", &counters);
      ASSERT_TRUE(image && image->size() > 4) << name;
      EXPECT_EQ(image->compare(0, 4, "\x7f" "ELF"), 0) << name << ": not a cubin";
    }
  }
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(tftest::count_occurrences(log, "cannot write the kernel cache"), 1) << what << ":\n" << log;
  EXPECT_EQ(counters.nvrtc_compiles, 2) << what;
  EXPECT_EQ(counters.memory_hits, 2) << what;
  EXPECT_EQ(counters.disk_hits, 0) << what;
  EXPECT_FALSE(cache.disk().storing()) << what;
  const auto c = cache.disk().counters();
  EXPECT_EQ(c.stores, 0) << what;
  EXPECT_EQ(c.store_failures, 2) << what;
}

TEST(KernelCacheDisk, ReadOnlyDirectoryKeepsKernelsInMemoryWithOneWarning) {
  tftest::TempDir tmp;
  torchfuse::runtime::KernelCache cache(tftest::unwritable_dir(tmp.path()));
  expect_memory_only_with_one_warning(cache, "read-only directory");
}

TEST(KernelCacheDisk, FullDiskKeepsKernelsInMemoryWithOneWarning) {
  tftest::TempDir tmp;
  torchfuse::runtime::KernelCache cache(tmp.path());
  cache.disk().set_write_for_testing(&tftest::full_disk_write);
  expect_memory_only_with_one_warning(cache, "full disk");
  EXPECT_NE(cache.disk().store_error().find(std::strerror(ENOSPC)), std::string::npos) << cache.disk().store_error();
}

// ---- fallback graphs ----

// Runs `m` with every fusion group on its fallback graph and compares with eager.
void expect_fallbacks_match_eager(const torch::jit::Module& m, const std::vector<c10::IValue>& in, size_t groups) {
  torchfuse::CompiledModuleImpl impl(torchfuse::prepare_module_graph(m), tftest::quiet_options());
  const auto e = impl.explain(in, false);
  ASSERT_EQ(e.kernels.size(), groups) << e.ir_after;
  const auto report = torchfuse::compare_outputs(impl.forward_eager(in), impl.run_on_fallbacks(in));
  EXPECT_TRUE(report.passed()) << report.to_string() << e.rewritten_graph;
}

TEST(FallbackGraph, GroupsAroundAMatmulMatchEager) {
  expect_fallbacks_match_eager(tftest::groups_around_matmul(), {torch::randn({16, 16}), torch::randn({16, 16})}, 2);
}

TEST(FallbackGraph, ReductionsConstantsNumbersAndSeveralOutputs) {
  auto m = module_from(R"JIT(
def forward(self, x, w, b, mat, s: float):
    h = torch.layer_norm(x * s, [32], w, b, 1e-5)
    a = torch.softmax(h, -1)
    y = torch.matmul(a, mat)
    return (torch.gelu(y) + 1.0, y.sum(0) * 3.0, h, torch.exp(x - x.amax(-1, keepdim=True)))
)JIT");
  expect_fallbacks_match_eager(
      m, {torch::randn({24, 32}), torch::randn({32}), torch::randn({32}), torch::randn({32, 32}), 0.75}, 4);
}

TEST(FallbackGraph, FrozenParametersAreInputs) {
  torch::jit::Module m("WithParams");
  m.register_parameter("w", torch::randn({32}), false);
  m.register_parameter("b", torch::randn({32}), false);
  m.define("def forward(self, x):\n    return torch.sigmoid(x * self.w + self.b) * x\n");
  expect_fallbacks_match_eager(m, {torch::randn({8, 32})}, 1);
}

}  // namespace
