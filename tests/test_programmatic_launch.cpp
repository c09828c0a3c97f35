// Programmatic dependent launch on the CPU side (runtime/programmatic_launch.h): every entry point
// of every kind of generated kernel waits for the grids before it first thing, which is what
// lets the runtime launch it early; name_kernel marks only kernels whose every entry point
// does; the switch. tests/test_programmatic_launch_gpu.cpp runs kernels launched so.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "codegen/attention.h"
#include "codegen/kernel.h"
#include "codegen/kernel_name.h"
#include "runtime/programmatic_launch.h"
#include "tests/suite_modules.h"
#include "tests/test_util.h"

namespace {

namespace cg = torchfuse::codegen;

// Each entry point's first statement, after its opening brace.
std::vector<std::string> first_statements(const std::string& source) {
  std::vector<std::string> firsts;
  const std::string entry = "extern \"C\" __global__";
  for (size_t at = source.find(entry); at != std::string::npos; at = source.find(entry, at + entry.size())) {
    const size_t brace = source.find('{', at);
    const size_t start = source.find_first_not_of(" \n", brace + 1);
    firsts.push_back(source.substr(start, source.find('\n', start) - start));
  }
  return firsts;
}

void expect_entry_points_wait(const torch::jit::Module& m, const std::vector<c10::IValue>& in, const std::string& what) {
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in, /*compile_kernels=*/false);
  ASSERT_FALSE(e.kernels.empty()) << what;
  for (const auto& k : e.kernels) {
    const std::vector<std::string> firsts = first_statements(k.source);
    ASSERT_FALSE(firsts.empty()) << what << ": no entry point in\n" << k.source;
    for (const std::string& s : firsts) EXPECT_EQ(s, cg::kGridDependencyCall) << what << " " << k.name << "\n" << k.source;
  }
}

// Pointwise (plain and tiled over a transposed input), row, column, split column and full
// reductions, and a scan: each entry point's first statement is the wait.
TEST(ProgrammaticLaunch, EveryKindOfKernelWaitsFirst) {
  for (const auto& p : tftest::suite_patterns()) {
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      auto in = tftest::suite_small_inputs(p.name);
      for (auto& v : in) v = v.toTensor().to(dtype);
      expect_entry_points_wait(tftest::module_from(tftest::with_row_length(p.source, 96)), in,
                               p.name + " " + c10::toString(dtype));
    }
  }
  expect_entry_points_wait(tftest::module_returning("x", "torch.relu(x.t()) * 2.0"), {torch::randn({256, 192})},
                           "tiled pointwise");
  expect_entry_points_wait(tftest::module_returning("x", "x.sum(0) + x.amax(0)"), {torch::randn({4096, 256})},
                           "split column reduction");
  expect_entry_points_wait(tftest::module_returning("x", "(x * x).mean()"), {torch::randn({512, 256})},
                           "full reduction");
  expect_entry_points_wait(tftest::module_returning("x", "torch.cumsum(x * 2.0, 1)"), {torch::randn({64, 300})}, "scan");
}

// name_kernel marks a kernel only where every entry point waits; the attention kernel does.
TEST(ProgrammaticLaunch, KernelsAreMarkedOnlyWhereEveryEntryPointWaits) {
  const std::string entry = "extern \"C\" __global__ void " + cg::kNamePlaceholder + "_a() {\n";
  const std::string wait = std::string("  ") + cg::kGridDependencyCall + "\n}\n";
  EXPECT_TRUE(cg::name_kernel(entry + wait, "t", 32).grid_dependency);
  EXPECT_FALSE(cg::name_kernel(entry + "}\n", "t", 32).grid_dependency);
  const std::string second = "extern \"C\" __global__ void " + cg::kNamePlaceholder + "_b() {\n}\n";
  EXPECT_FALSE(cg::name_kernel(entry + wait + second, "t", 32).grid_dependency);
  cg::AttentionSpec s;
  EXPECT_TRUE(cg::generate_attention(s).grid_dependency);
  s.key_split = s.warps = 2;
  EXPECT_TRUE(cg::generate_attention(s).grid_dependency);
}

// Off unless switched on; never on without a device of compute capability 9.0 (none here).
TEST(ProgrammaticLaunch, SwitchedOnlyWhereADeviceCanLaunchSo) {
  namespace rt = torchfuse::runtime;
  const bool before = rt::programmatic_launch_switched_on();
  rt::set_programmatic_launch(true);
  EXPECT_TRUE(rt::programmatic_launch_switched_on());
  if (!tftest::have_gpu()) EXPECT_FALSE(rt::programmatic_launch(0));
  rt::set_programmatic_launch(false);
  EXPECT_FALSE(rt::programmatic_launch_switched_on());
  EXPECT_FALSE(rt::programmatic_launch(0));
  rt::set_programmatic_launch(before);
}

TEST(ProgrammaticLaunch, ExtendedLaunchIsABenchmarkSwitchOffByDefault) {
  namespace rt = torchfuse::runtime;
  EXPECT_FALSE(rt::extended_launch_switched_on());
  rt::set_extended_launch(true);
  EXPECT_TRUE(rt::extended_launch_switched_on());
  // It changes the driver call, never whether a launch is programmatic.
  const bool before = rt::programmatic_launch_switched_on();
  rt::set_programmatic_launch(false);
  EXPECT_FALSE(rt::programmatic_launch(0));
  rt::set_programmatic_launch(before);
  rt::set_extended_launch(false);
  EXPECT_FALSE(rt::extended_launch_switched_on());
}

}  // namespace
