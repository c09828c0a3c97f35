// torchfuse::gemm_epilogue.parts on the GPU (runtime/gemm_parts.cpp): a GEMM read as column
// ranges, run whole or one GEMM per range into the same output, against eager's linear + add +
// activation in f32, f16 and bf16; the timed choice between the two forms, once per shape and
// process; a shape first seen while a CUDA graph captures; and a compiled module whose merged
// linears take their parts (CompileOptions::concat_linears_autotune). Skipped without CUDA.
#include <torch/cuda.h>
#include <torch/torch.h>

#include "runtime/gemm_autotune.h"
#include "runtime/gemm_epilogue_op.h"
#include "runtime/gemm_parts.h"
#include "runtime/graph_capture.h"
#include "tests/gemm_gpu_util.h"
#include "tests/test_util.h"

namespace {

using torchfuse::runtime::gemm_epilogue_apart;
using torchfuse::runtime::gemm_epilogue_counts;
using torchfuse::runtime::gemm_epilogue_last_fallback;
using torchfuse::runtime::gemm_epilogue_parts;

// What the forms are compared with: eager's ops in the dtype, then float64 (the epilogue adds
// before rounding, eager after: about an ulp of the output).
at::Tensor eager_ops(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& r,
                     const std::string& act) {
  return tftest::gemm_eager(x, w, b, r, act).to(torch::kDouble);
}

double tol_for(c10::ScalarType dtype) { return dtype == torch::kBFloat16 ? 5e-2 : dtype == torch::kHalf ? 1e-2 : 1e-4; }

using GpuGemmParts = tftest::FullPrecisionF32;

// The records of calls described as `call`.
std::vector<torchfuse::runtime::GemmPartsChoice> choices_for(const std::string& call) {
  std::vector<torchfuse::runtime::GemmPartsChoice> out;
  for (const auto& c : torchfuse::runtime::gemm_parts_choices())
    if (c.call == call) out.push_back(c);
  return out;
}

TEST_F(GpuGemmParts, BothFormsMatchEagerInEveryDtypeAndEpilogue) {
  struct Epilogue {
    bool bias, residual;
    const char* act;
  };
  const Epilogue epilogues[] = {{true, false, "none"}, {true, true, "relu"}, {false, false, "gelu_tanh"}, {false, true, "none"}};
  // The third part's columns start 8 bytes off a 16-byte boundary in the 16-bit dtypes.
  const std::vector<int64_t> parts{128, 36, 36};
  for (c10::ScalarType dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    for (const Epilogue& e : epilogues) {
      const tftest::GemmTestOperands c = tftest::gemm_operands({3, 37}, 96, 200, dtype);
      const at::Tensor b = e.bias ? c.b : at::Tensor(), r = e.residual ? c.r : at::Tensor();
      const at::Tensor want = eager_ops(c.x, c.w, b, r, e.act);
      const std::string label = std::string(c10::toString(dtype)) + " bias " + std::to_string(e.bias) + " residual " +
                                std::to_string(e.residual) + " " + e.act;
      for (bool apart : {true, false}) {
        const auto before = gemm_epilogue_counts();
        const at::Tensor got = apart ? gemm_epilogue_apart(c.x, c.w, b, r, e.act, 4, parts)
                                     : gemm_epilogue_parts(c.x, c.w, b, r, e.act, 4, parts);
        const auto after = gemm_epilogue_counts();
        // A timed float32 call may keep ATen's GEMM (its candidate 0): one call either way.
        if (dtype == torch::kFloat)
          EXPECT_EQ(after.cublaslt_calls + after.aten_calls, before.cublaslt_calls + before.aten_calls + 1) << label;
        else
          EXPECT_EQ(after.cublaslt_calls, before.cublaslt_calls + 1)
              << label << (apart ? " apart" : " timed") << ": " << gemm_epilogue_last_fallback();
        ASSERT_EQ(got.sizes(), want.sizes()) << label;
        const double tol = tol_for(dtype);
        EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want, tol, tol))
            << label << (apart ? " apart" : " timed") << ": max error " << (got.to(torch::kDouble) - want).abs().max().item<double>();
      }
    }
  }
}

TEST_F(GpuGemmParts, TheFasterFormIsKeptOncePerShape) {
  // Shapes no other test uses (a shape is timed once per process).
  const std::string call = "BFloat16 M=1031 N=1040 K=264 parts [520, 520], bias";
  ASSERT_TRUE(choices_for(call).empty()) << call << " was timed before this test";
  for (int i = 0; i < 3; ++i) {
    const tftest::GemmTestOperands c = tftest::gemm_operands({1031}, 264, 1040, torch::kBFloat16);  // fresh values every call
    const at::Tensor got = gemm_epilogue_parts(c.x, c.w, c.b, {}, "none", 8, {520, 520});
    const at::Tensor want = eager_ops(c.x, c.w, c.b, {}, "none");
    EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want, 5e-2, 5e-2))
        << "call " << i << ": max error " << (got.to(torch::kDouble) - want).abs().max().item<double>();
  }
  const auto records = choices_for(call);
  ASSERT_EQ(records.size(), 1u) << call << ": timed once for three calls";
  const auto& rec = records.front();
  ASSERT_TRUE(rec.why_not.empty()) << rec.why_not;
  EXPECT_GT(rec.merged_us, 0.0);
  EXPECT_GT(rec.apart_us, 0.0);
  EXPECT_EQ(rec.apart, torchfuse::runtime::keep_apart(rec.merged_us, rec.apart_us, 2))
      << "merged " << rec.merged_us << " us, apart " << rec.apart_us << " us";
}

TEST_F(GpuGemmParts, AShapeFirstSeenWhileCapturingRunsWholeUntimed) {
  const c10::Device device(torch::kCUDA, 0);
  const tftest::GemmTestOperands c = tftest::gemm_operands({53}, 144, 96, torch::kBFloat16);
  const std::vector<int64_t> parts{64, 32};
  const std::string call = "BFloat16 M=53 N=96 K=144 parts [64, 32], bias, relu";
  ASSERT_TRUE(choices_for(call).empty()) << call << " was timed before this test";
  auto stream = torchfuse::runtime::new_capture_stream(device);
  at::Tensor captured;
  auto graph = torchfuse::runtime::capture_graph(stream.stream, [&] {
    captured = gemm_epilogue_parts(c.x, c.w, c.b, {}, "relu", 8, parts);
  });
  EXPECT_TRUE(choices_for(call).empty()) << "timed inside a capture";
  const at::Tensor want = eager_ops(c.x, c.w, c.b, {}, "relu");
  graph->replay();
  torch::cuda::synchronize();
  EXPECT_TRUE(torch::allclose(captured.to(torch::kDouble), want, 5e-2, 5e-2)) << "replay of the untimed call";
  const at::Tensor outside = gemm_epilogue_parts(c.x, c.w, c.b, {}, "relu", 8, parts);
  EXPECT_TRUE(torch::allclose(outside.to(torch::kDouble), want, 5e-2, 5e-2)) << "the first call outside";
  EXPECT_EQ(choices_for(call).size(), 1u) << "not timed on the first call outside the capture";
  graph->replay();
  torch::cuda::synchronize();
  EXPECT_TRUE(torch::allclose(captured.to(torch::kDouble), want, 5e-2, 5e-2)) << "a replay after the timing";
}

// q, k and v projections and an MLP's gate and up written apart, all reading x: with
// concat_linears_autotune the merged GEMM carries its five parts and times its forms on the
// first call; the module matches the original on fresh inputs. Without (the default), merged and
// untimed.
TEST_F(GpuGemmParts, MergedLinearsOfACompiledModuleTakeTheirParts) {
  const auto o = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  torch::jit::Module m("Block");
  for (const auto& [name, rows] : std::vector<std::pair<std::string, int64_t>>{{"wq", 128}, {"wk", 32}, {"wv", 32}, {"wg", 256}, {"wu", 256}})
    m.register_parameter(name, (torch::randn({rows, 96}) / std::sqrt(96.0)).to(o), false);
  m.define(R"JIT(
def forward(self, x):
    q = torch.linear(x, self.wq)
    k = torch.linear(x, self.wk)
    v = torch.linear(x, self.wv)
    h = torch.cat([q, k + v], -1)
    return torch.silu(torch.linear(x, self.wg)) * torch.linear(x, self.wu), h
)JIT");
  const torchfuse::CompileOptions untimed_options = tftest::quiet_options();
  torchfuse::CompileOptions timed_options = untimed_options;
  timed_options.concat_linears_autotune = true;
  const std::vector<c10::IValue> in{torch::randn({4, 33, 96}, o)};
  const auto untimed = torchfuse::compile(m, untimed_options).explain(in);
  EXPECT_EQ(tftest::count_occurrences(untimed.rewritten_graph, "value=[128, 32, 32, 256, 256]"), 0) << untimed.rewritten_graph;
  const std::string call = "BFloat16 M=132 N=704 K=96 parts [128, 32, 32, 256, 256]";
  ASSERT_TRUE(choices_for(call).empty()) << call << " was timed before this test";
  torchfuse::CompiledModule fused = torchfuse::compile(m, timed_options);
  const auto e = fused.explain(in);
  // All five read x: one GEMM of five parts.
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "value=[128, 32, 32, 256, 256]"), 1) << e.rewritten_graph;
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "torchfuse::gemm_epilogue("), 1) << e.rewritten_graph;
  for (int call = 0; call < 3; ++call) {
    const std::vector<c10::IValue> fresh{torch::randn({4, 33, 96}, o)};
    const auto got = fused.forward(fresh).toTuple()->elements();
    const auto want = fused.forward_eager(fresh).toTuple()->elements();
    for (size_t i = 0; i < 2; ++i) {
      const at::Tensor g = got[i].toTensor().to(torch::kDouble), w = want[i].toTensor().to(torch::kDouble);
      ASSERT_EQ(g.sizes(), w.sizes());
      EXPECT_TRUE(torch::allclose(g, w, 1e-1, 1e-1)) << "output " << i << ": max error " << (g - w).abs().max().item<double>();
    }
  }
  EXPECT_EQ(fused.stats().eager_calls, 0);
  const auto records = choices_for(call);
  ASSERT_EQ(records.size(), 1u) << call << ": timed once for its calls";
  EXPECT_TRUE(records.front().why_not.empty()) << records.front().why_not;
}

}  // namespace
