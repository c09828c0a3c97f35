// compile_exported on the GPU: the .pt2 test programs (tests/data/pt2/) compiled with their
// weights on CUDA and run fused, against PyTorch's saved outputs and against the same graph
// unfused (compare_with_eager); sizes inside the exported range reuse the specialization.
#include <gtest/gtest.h>

#include "tests/export_cases.h"
#include "tests/test_util.h"
#include "torchfuse/torchfuse.h"

namespace {

using tfexport::case_path;
using tfexport::load_case;
using tfexport::to_device;

class ExportGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportGpu, FusedMatchesPyTorchAndEager) {
  REQUIRE_GPU();
  const std::string name = GetParam();
  const tfexport::Case c = load_case(name);
  const c10::Device cuda("cuda");
  torchfuse::CompiledModule m = torchfuse::compile_exported(case_path(name), cuda, tfexport::export_case_options(name));
  const auto inputs = to_device(c.first.inputs, cuda);
  const c10::IValue out = m.forward(inputs);
  EXPECT_EQ(out.isTuple(), c.tuple_output);
  for (const at::Tensor& t : tfexport::tensors_of(out)) EXPECT_TRUE(t.is_cuda());
  EXPECT_TRUE(tfexport::matches_saved(c.first.outputs, out, 10.0)) << name;
  const torchfuse::ComparisonReport report = torchfuse::compare_with_eager(m, inputs);
  EXPECT_TRUE(report.passed()) << name << "\n" << report.to_string();
  for (size_t i = 0; i < c.more.size(); ++i) {
    const auto more = to_device(c.more[i].inputs, cuda);
    EXPECT_TRUE(tfexport::matches_saved(c.more[i].outputs, m.forward(more), 10.0)) << name << " call " << i;
    const torchfuse::ComparisonReport r = torchfuse::compare_with_eager(m, more);
    EXPECT_TRUE(r.passed()) << name << " call " << i << "\n" << r.to_string();
  }
  const torchfuse::Stats s = m.stats();
  EXPECT_GE(s.fused_calls, 1);
  EXPECT_EQ(s.eager_calls, 0);
  EXPECT_FALSE(s.groups.empty()) << name;
  EXPECT_EQ(s.fallback_groups, 0);
  // Sizes are kernel arguments: another batch (seq) inside the range is the same specialization,
  // unless it makes a dim 1 (norms_params_buffers' second call has batch 1: a guard of its own).
  EXPECT_EQ(s.specializations, name == "norms_params_buffers" ? 2 : 1) << name;
}

INSTANTIATE_TEST_SUITE_P(Pt2, ExportGpu, ::testing::ValuesIn(tfexport::case_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// compile_exported optimizes the frozen graph as compile() does for a module (freeze()): on CUDA,
// biased linears of one input (q, k and v written apart) become one linear, so both front doors
// plan, and time, the same graph.
TEST(ExportGpuGraph, LinearsOfOneInputAreConcatenatedAsFreezeDoes) {
  REQUIRE_GPU();
  if (!tfexport::file_exists(case_path("separate_projections"))) {
    GTEST_SKIP() << "separate_projections.pt2 not generated yet: python3 scripts/export_pt2_cases.py --out tests/data/pt2";
  }
  const tfexport::Case c = load_case("separate_projections");
  const c10::Device cuda("cuda");
  torchfuse::CompiledModule m = torchfuse::compile_exported(case_path("separate_projections"), cuda);
  const auto inputs = to_device(c.first.inputs, cuda);
  const std::string graph = m.explain(inputs).rewritten_graph;
  EXPECT_EQ(tftest::count_occurrences(graph, "aten::linear("), 1) << graph;
  EXPECT_TRUE(tfexport::matches_saved(c.first.outputs, m.forward(inputs), 10.0));
}

// Weights left on the CPU (compile_exported(path)) with CUDA inputs: an Error that says how to
// compile for the inputs' device, not a device-mix failure inside an op.
TEST(ExportGpuDevice, CpuWeightsWithCudaInputsNameTheFix) {
  REQUIRE_GPU();
  const tfexport::Case c = load_case("pointwise_static");
  torchfuse::CompiledModule m = torchfuse::compile_exported(case_path("pointwise_static"));
  try {
    m.forward(to_device(c.first.inputs, c10::Device("cuda")));
    FAIL() << "no error";
  } catch (const torchfuse::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("input 0 ('x') is on cuda:0 but the program's weights are on cpu"), std::string::npos) << what;
    EXPECT_NE(what.find("compile_exported(path, c10::Device(\"cuda:0\"))"), std::string::npos) << what;
  }
}

// The ranges hold on the GPU path too (checked before the specialization is looked up).
TEST(ExportGpuDevice, OutsideTheRangeIsAnError) {
  REQUIRE_GPU();
  torchfuse::CompiledModule m = torchfuse::compile_exported(case_path("softmax_dynamic_batch"), c10::Device("cuda"));
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  try {
    m.forward({torch::randn({65, 4, 32}, opts), torch::randn({65, 1, 32}, opts)});
    FAIL() << "no error";
  } catch (const torchfuse::Error& e) {
    EXPECT_NE(std::string(e.what()).find("dim 0 is 65, outside the range [1, 64]"), std::string::npos) << e.what();
  }
  EXPECT_EQ(m.stats().specializations, 0);
}

}  // namespace
