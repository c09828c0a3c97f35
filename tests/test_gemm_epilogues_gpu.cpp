// torchfuse::gemm_epilogue on the GPU (runtime/gemm_epilogue_op.cpp): every epilogue (bias,
// bias + tanh GELU, bias + ReLU, residual, residual + bias, residual + bias + ReLU) in f32, f16
// and bf16, 2-D and 3-D inputs of odd sizes, against eager's linear + add + activation, with the
// cuBLASLt path asserted to have run (gemm_epilogue_counts); operands cuBLASLt reads through
// strides or copies; f32 in full precision unless TF32 is allowed; and compiled modules whose
// rewritten GEMMs run there; calls that time cuBLASLt's candidate algorithms (gemm_autotune),
// also a shape first seen while a CUDA graph captures, and float32 calls timed against ATen's GEMM
// with split-K variants. Skipped without CUDA.
#include <iostream>
#include <tuple>

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "runtime/gemm_autotune.h"
#include "runtime/gemm_epilogue_op.h"
#include "runtime/gemm_parts.h"
#include "runtime/gemm_split_variants.h"
#include "runtime/graph_capture.h"
#include "tests/gemm_gpu_util.h"
#include "tests/test_util.h"

namespace {

using torchfuse::runtime::gemm_epilogue;
using torchfuse::runtime::gemm_epilogue_counts;
using torchfuse::runtime::gemm_epilogue_last_fallback;

struct Tolerance {
  double rtol, atol;
};

// Eager rounds the GEMM's result to the dtype before the add and the activation, the epilogue
// does not: a difference of about one unit in the last place of the output (values of order 1).
Tolerance tolerance(c10::ScalarType dtype) {
  if (dtype == torch::kHalf) return {1e-2, 1e-2};
  if (dtype == torch::kBFloat16) return {5e-2, 5e-2};
  return {1e-4, 1e-4};
}

struct Epilogue {
  const char* name;
  bool bias;
  bool residual;
  const char* activation;
};

const Epilogue kEpilogues[] = {
    {"bias", true, false, "none"},          {"bias+gelu_tanh", true, false, "gelu_tanh"},
    {"bias+relu", true, false, "relu"},     {"residual", false, true, "none"},
    {"residual+bias", true, true, "none"},  {"residual+bias+relu", true, true, "relu"},
    {"gelu_tanh (no bias)", false, false, "gelu_tanh"},
};

using tftest::gemm_eager;

// Runs one call and expects cuBLASLt to have run it and its result to be eager's.
void expect_cublaslt_matches_eager(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& r,
                                   const std::string& act, const std::string& label) {
  const auto before = gemm_epilogue_counts();
  const at::Tensor got = gemm_epilogue(x, w, b, r, act);
  const auto after = gemm_epilogue_counts();
  EXPECT_EQ(after.cublaslt_calls, before.cublaslt_calls + 1)
      << label << ": went through ATen: " << gemm_epilogue_last_fallback();
  const at::Tensor want = gemm_eager(x, w, b, r, act);
  ASSERT_EQ(got.sizes(), want.sizes()) << label;
  ASSERT_EQ(got.scalar_type(), want.scalar_type()) << label;
  const Tolerance tol = tolerance(x.scalar_type());
  const at::Tensor g = got.to(torch::kDouble), e = want.to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(g, e, tol.rtol, tol.atol))
      << label << ": max |cuBLASLt - eager| " << (g - e).abs().max().item<double>();
}

using Operands = tftest::GemmTestOperands;
using tftest::gemm_operands;

std::string dtype_name(c10::ScalarType t) { return c10::toString(t); }

using GpuGemmEpilogues = tftest::FullPrecisionF32;

TEST_F(GpuGemmEpilogues, EveryEpilogueDtypeAndRankRunsOnCublasLt) {
  const std::vector<std::vector<int64_t>> leads = {{37}, {3, 37}, {1}, {64}};
  const std::vector<std::pair<int64_t, int64_t>> kn = {{100, 129}, {64, 256}, {129, 37}};
  for (c10::ScalarType dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    for (const auto& lead : leads) {
      for (const auto& [k, n] : kn) {
        const Operands o = gemm_operands(lead, k, n, dtype);
        for (const Epilogue& e : kEpilogues) {
          const std::string label = dtype_name(dtype) + " " + e.name + " x" + c10::str(o.x.sizes()) + " w" +
                                    c10::str(o.w.sizes());
          expect_cublaslt_matches_eager(o.x, o.w, e.bias ? o.b : at::Tensor(), e.residual ? o.r : at::Tensor(),
                                        e.activation, label);
        }
      }
    }
  }
}

TEST_F(GpuGemmEpilogues, StridedOperandsAreReadInPlaceOrCopied) {
  for (c10::ScalarType dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    const Operands o = gemm_operands({37}, 100, 129, dtype);
    const std::string d = dtype_name(dtype);
    // A weight stored transposed ([K, N] row-major): cuBLASLt reads it with the other transpose.
    const at::Tensor wt = o.w.t().contiguous().t();
    expect_cublaslt_matches_eager(o.x, wt, o.b, o.r, "relu", d + " transposed weight");
    // An input whose rows are further apart than K (a slice of a wider tensor): its own ld.
    const at::Tensor wide = torch::randn({37, 160}, o.x.options());
    expect_cublaslt_matches_eager(wide.narrow(1, 8, 100), o.w, o.b, o.r, "gelu_tanh", d + " input with row stride 160");
    // A transposed input and residual, a 3-D input that does not flatten to 2-D as a view.
    expect_cublaslt_matches_eager(o.x.t().contiguous().t(), o.w, o.b, o.r.t().contiguous().t(), "none",
                                  d + " transposed input and residual");
    const at::Tensor x3 = torch::randn({37, 3, 100}, o.x.options()).transpose(0, 1);
    expect_cublaslt_matches_eager(x3, o.w, o.b, torch::randn({3, 37, 129}, o.x.options()), "relu",
                                  d + " 3-D input copied to flatten");
  }
}

TEST_F(GpuGemmEpilogues, MisalignedPointersStillGiveEagersResult) {
  // Pointers one element past a 16-byte boundary: the heuristic is told their alignment, and
  // where it has no algorithm the call goes through ATen. Either way the result is eager's.
  for (c10::ScalarType dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    const auto opts = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
    const at::Tensor x = torch::randn({37 * 100 + 1}, opts).narrow(0, 1, 37 * 100).view({37, 100});
    const at::Tensor w = (torch::randn({129 * 100 + 1}, opts) / 10).narrow(0, 1, 129 * 100).view({129, 100});
    const at::Tensor b = torch::randn({130}, opts).narrow(0, 1, 129);
    const at::Tensor got = gemm_epilogue(x, w, b, {}, "relu");
    const Tolerance tol = tolerance(dtype);
    EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), gemm_eager(x, w, b, {}, "relu").to(torch::kDouble), tol.rtol, tol.atol))
        << dtype_name(dtype) << " (path: " << (gemm_epilogue_last_fallback().empty() ? "cuBLASLt" : gemm_epilogue_last_fallback())
        << ")";
  }
}

TEST_F(GpuGemmEpilogues, Float32IsFullPrecisionUnlessTf32IsAllowed) {
  // K = 4096 products in full fp32 stay within 1e-4 of the scale (TF32 inputs, 10-bit mantissas,
  // would be about that far off).
  const Operands o = gemm_operands({64}, 4096, 128, torch::kFloat);
  const at::Tensor ref = torch::linear(o.x.to(torch::kDouble), o.w.to(torch::kDouble), o.b.to(torch::kDouble));
  const at::Tensor got = gemm_epilogue(o.x, o.w, o.b, {}, "none");
  EXPECT_TRUE(gemm_epilogue_last_fallback().empty()) << gemm_epilogue_last_fallback();
  const double scale = ref.abs().max().item<double>();
  EXPECT_LT((got.to(torch::kDouble) - ref).abs().max().item<double>(), 1e-4 * scale);
  // With TF32 allowed (as eager then is), a different algorithm key and still close to eager.
  at::globalContext().setAllowTF32CuBLAS(true);
  const at::Tensor fast = gemm_epilogue(o.x, o.w, o.b, {}, "none");
  const at::Tensor fast_eager = torch::linear(o.x, o.w, o.b);
  at::globalContext().setAllowTF32CuBLAS(false);
  EXPECT_TRUE(gemm_epilogue_last_fallback().empty()) << gemm_epilogue_last_fallback();
  EXPECT_LT((fast - fast_eager).abs().max().item<double>(), 1e-2 * scale);
}

TEST_F(GpuGemmEpilogues, Float64GoesThroughAten) {
  const Operands o = gemm_operands({37}, 100, 129, torch::kDouble);
  const at::Tensor got = gemm_epilogue(o.x, o.w, o.b, o.r, "relu");
  EXPECT_NE(gemm_epilogue_last_fallback().find("dtype"), std::string::npos) << gemm_epilogue_last_fallback();
  EXPECT_TRUE(torch::allclose(got, gemm_eager(o.x, o.w, o.b, o.r, "relu"), 1e-10, 1e-10));
}

TEST_F(GpuGemmEpilogues, BadInputsAreErrors) {
  const Operands o = gemm_operands({37}, 100, 129, torch::kHalf);
  tftest::expect_error([&] { gemm_epilogue(o.x, o.w.to(torch::kFloat), o.b, {}, "none"); }, {"weight", "input's dtype"});
  tftest::expect_error([&] { gemm_epilogue(o.x, o.w.cpu(), o.b, {}, "none"); }, {"weight", "input's device"});
  tftest::expect_error([&] { gemm_epilogue(o.x, o.w.narrow(1, 0, 99), o.b, {}, "none"); }, {"do not multiply"});
}

// A compiled transformer MLP block: both GEMMs become gemm_epilogue nodes and run on cuBLASLt;
// the result is eager's.
TEST_F(GpuGemmEpilogues, CompiledMlpBlockRunsItsGemmsOnCublasLt) {
  for (c10::ScalarType dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    torch::jit::Module m("Mlp");
    const auto o = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
    m.register_parameter("w1", (torch::randn({256, 96}) / std::sqrt(96.0)).to(o), false);
    m.register_parameter("b1", torch::randn({256}).to(o), false);
    m.register_parameter("w2", (torch::randn({96, 256}) / 16.0).to(o), false);
    m.register_parameter("b2", torch::randn({96}).to(o), false);
    m.define(R"JIT(
def forward(self, x):
    h = torch.gelu(torch.linear(x, self.w1, self.b1), approximate='tanh')
    return torch.relu(torch.linear(h, self.w2, self.b2) + x)
)JIT");
    torchfuse::CompiledModule fused = torchfuse::compile(m, tftest::quiet_options());
    const std::vector<c10::IValue> in{torch::randn({3, 37, 96}, o)};
    const auto e = fused.explain(in);
    EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "torchfuse::gemm_epilogue"), 2) << e.rewritten_graph;
    const auto before = gemm_epilogue_counts();
    for (int call = 0; call < 3; ++call) {
      const std::vector<c10::IValue> fresh{torch::randn({3, 37, 96}, o)};
      const at::Tensor got = fused.forward(fresh).toTensor();
      const at::Tensor want = fused.forward_eager(fresh).toTensor();
      const Tolerance tol = tolerance(dtype);
      EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), 2 * tol.rtol, 2 * tol.atol))
          << dtype_name(dtype) << ": max error " << (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>();
    }
    const auto after = gemm_epilogue_counts();
    // At least the 3 fused calls' 2 GEMMs each (the first call's profiling runs may add more).
    EXPECT_GE(after.cublaslt_calls - before.cublaslt_calls, 6) << dtype_name(dtype) << ": " << gemm_epilogue_last_fallback();
  }
}

// Linears of one input merged (passes/concat_linears.cpp): q, k and v projections written apart
// and an MLP's gate and up projections, all reading x here, become one 16-bit GEMM, their results
// slices of it, each GEMM one cuBLASLt call; float32 linears stay apart. Against the original
// module on fresh inputs of two lengths.
// q, k and v projections written apart and a SwiGLU MLP's gate and up, all reading x [B, T, 96].
torch::jit::Module sibling_linears_block(c10::ScalarType dtype) {
  torch::jit::Module m("Block");
  const auto o = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
  for (const auto& [name, rows, cols] : std::vector<std::tuple<std::string, int64_t, int64_t>>{
           {"wq", 128, 96}, {"wk", 32, 96}, {"wv", 32, 96}, {"wg", 256, 96}, {"wu", 256, 96}, {"wd", 96, 256}})
    m.register_parameter(name, (torch::randn({rows, cols}) / std::sqrt(double(cols))).to(o), false);
  m.define(R"JIT(
def forward(self, x):
    B = x.size(0)
    T = x.size(1)
    q = torch.linear(x, self.wq).view(B, T, 4, 32).transpose(1, 2)
    k = torch.linear(x, self.wk).view(B, T, 1, 32).transpose(1, 2)
    v = torch.linear(x, self.wv).view(B, T, 1, 32).transpose(1, 2)
    h = (q * torch.sigmoid(k) + v).transpose(1, 2).reshape(B, T, 128)
    return torch.linear(torch.silu(torch.linear(x, self.wg)) * torch.linear(x, self.wu), self.wd) + h.sum(-1, keepdim=True)
)JIT");
  return m;
}

TEST_F(GpuGemmEpilogues, SiblingLinearsRunAsOneGemm) {
  for (c10::ScalarType dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    torch::jit::Module m = sibling_linears_block(dtype);
    const auto o = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
    torchfuse::CompiledModule fused = torchfuse::compile(m, tftest::quiet_options());
    const auto e = fused.explain({torch::randn({3, 37, 96}, o)});
    const bool lt = dtype != torch::kFloat;  // float32 linears stay apart, and ATen's
    // q, k, v, gate and up all read x: one GEMM of 704 features; down reads the SwiGLU.
    EXPECT_EQ(tftest::count_occurrences(tftest::joined(e.rewrites), "with 704 output features, each result a slice"),
              lt ? 1 : 0)
        << dtype_name(dtype) << "\n" << tftest::joined(e.rewrites) << tftest::joined(e.refused);
    EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, lt ? "torchfuse::gemm_epilogue(" : "aten::linear("), lt ? 2 : 6)
        << dtype_name(dtype) << "\n" << e.rewritten_graph;
    const auto before = gemm_epilogue_counts();
    for (int call = 0; call < 3; ++call) {
      const std::vector<c10::IValue> fresh{torch::randn({3, 37 + call, 96}, o)};
      const at::Tensor got = fused.forward(fresh).toTensor().to(torch::kDouble);
      const at::Tensor want = m.forward(fresh).toTensor().to(torch::kDouble);
      const Tolerance tol = tolerance(dtype);
      ASSERT_EQ(got.sizes(), want.sizes());
      EXPECT_TRUE(torch::allclose(got, want, 4 * tol.rtol, 4 * tol.atol))
          << dtype_name(dtype) << ": max error " << (got - want).abs().max().item<double>();
    }
    const auto after = gemm_epilogue_counts();
    if (lt) EXPECT_GE(after.cublaslt_calls - before.cublaslt_calls, 6) << dtype_name(dtype) << ": " << gemm_epilogue_last_fallback();
  }
}

// Under gemm_autotune the float32 linears merge as the 16-bit ones do; each merged call times
// merged against apart, ATen's GEMM among each form's candidates, and whatever it keeps matches
// eager on fresh inputs of three lengths.
TEST_F(GpuGemmEpilogues, Float32SiblingLinearsMergeUnderAutotuneAndMatchEager) {
  torch::jit::Module m = sibling_linears_block(torch::kFloat);
  const auto o = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA);
  torchfuse::CompileOptions options = tftest::quiet_options();
  options.gemm_autotune = true;
  torchfuse::CompiledModule fused = torchfuse::compile(m, options);
  const auto e = fused.explain({torch::randn({3, 41, 96}, o)});
  EXPECT_EQ(tftest::count_occurrences(tftest::joined(e.rewrites), "with 704 output features, each result a slice"), 1)
      << tftest::joined(e.rewrites) << tftest::joined(e.refused);
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "aten::linear("), 0) << e.rewritten_graph;
  const size_t parts_before = torchfuse::runtime::gemm_parts_choices().size();
  for (int call = 0; call < 3; ++call) {
    const std::vector<c10::IValue> fresh{torch::randn({3, 41 + call, 96}, o)};
    const at::Tensor got = fused.forward(fresh).toTensor().to(torch::kDouble);
    const at::Tensor want = m.forward(fresh).toTensor().to(torch::kDouble);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::allclose(got, want, 1e-4, 1e-4)) << "call " << call << ": max error " << (got - want).abs().max().item<double>();
  }
  const auto choices = torchfuse::runtime::gemm_parts_choices();
  ASSERT_GT(choices.size(), parts_before) << "the merged GEMM did not time its forms";
  for (size_t i = parts_before; i < choices.size(); ++i) {
    EXPECT_EQ(choices[i].call.rfind("Float M=", 0), 0u) << choices[i].call;
    EXPECT_TRUE(choices[i].why_not.empty()) << choices[i].call << ": " << choices[i].why_not;
    std::cout << choices[i].call << ": " << (choices[i].apart ? "apart" : "merged") << " (merged " << choices[i].merged_us
              << " us, apart " << choices[i].apart_us << " us)\n";
  }
}

// The choices recorded for calls described as `call`.
int choices_for(const std::string& call) {
  int n = 0;
  for (const auto& c : torchfuse::runtime::gemm_algorithm_choices()) n += c.call == call;
  return n;
}

// "bf16 M=131 N=2312 K=776, bias": how the op names a call (M: the input's rows).
std::string call_name(c10::ScalarType dtype, int64_t m, int64_t n, int64_t k, const Epilogue& e) {
  const std::string d = dtype == torch::kBFloat16 ? "bf16" : dtype == torch::kHalf ? "f16" : "f32";
  std::string s = d + " M=" + std::to_string(m) + " N=" + std::to_string(n) + " K=" + std::to_string(k);
  if (e.bias) s += ", bias";
  if (e.residual) s += ", residual";
  if (std::string(e.activation) != "none") s += ", activation";
  return s;
}

TEST_F(GpuGemmEpilogues, AutotunedCallsMatchEagerAndTimeEachShapeOnce) {
  struct Case {
    std::vector<int64_t> lead;
    int64_t k, n;
    c10::ScalarType dtype;
    Epilogue e;
  };
  // Shapes no other test uses (a shape is timed once per process): a batch-1 layer's projections
  // and odd sizes, every dtype.
  const std::vector<Case> cases = {
      {{131}, 776, 2312, torch::kBFloat16, kEpilogues[0]},
      {{1, 129}, 3080, 776, torch::kBFloat16, kEpilogues[4]},
      {{7}, 97, 41, torch::kHalf, kEpilogues[2]},
      {{203}, 301, 257, torch::kFloat, kEpilogues[1]},
  };
  for (const Case& c : cases) {
    int64_t m = 1;
    for (int64_t d : c.lead) m *= d;
    const std::string name = call_name(c.dtype, m, c.n, c.k, c.e);
    ASSERT_EQ(choices_for(name), 0) << name << " was timed before this test";
    for (int call = 0; call < 3; ++call) {
      const Operands o = gemm_operands(c.lead, c.k, c.n, c.dtype);  // fresh values every call
      const at::Tensor b = c.e.bias ? o.b : at::Tensor(), r = c.e.residual ? o.r : at::Tensor();
      const auto before = gemm_epilogue_counts();
      const at::Tensor got = gemm_epilogue(o.x, o.w, b, r, c.e.activation, 8);
      const auto after = gemm_epilogue_counts();
      // A float32 call may keep ATen's GEMM, its candidate 0: one call either way.
      if (c.dtype == torch::kFloat)
        EXPECT_EQ(after.cublaslt_calls + after.aten_calls, before.cublaslt_calls + before.aten_calls + 1) << name;
      else
        EXPECT_EQ(after.cublaslt_calls, before.cublaslt_calls + 1) << name << ": " << gemm_epilogue_last_fallback();
      const at::Tensor want = gemm_eager(o.x, o.w, b, r, c.e.activation);
      const Tolerance tol = tolerance(c.dtype);
      ASSERT_EQ(got.sizes(), want.sizes()) << name;
      EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), tol.rtol, tol.atol))
          << name << " call " << call << ": max error " << (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>();
    }
    ASSERT_EQ(choices_for(name), 1) << name << ": timed once for three calls";
    torchfuse::runtime::GemmAlgorithmChoice choice;
    for (const auto& ch : torchfuse::runtime::gemm_algorithm_choices())
      if (ch.call == name) choice = ch;
    EXPECT_TRUE(choice.why_not.empty()) << name << ": " << choice.why_not;
    EXPECT_TRUE(choice.held) << name << ": timed without holding the stream";
    EXPECT_TRUE(choice.l2_flushed) << name << ": timed with a warm L2";
    ASSERT_GE(choice.candidates, 1) << name;
    ASSERT_LE(choice.candidates, 8 + torchfuse::runtime::kMaxSplitVariants + 1) << name;
    ASSERT_EQ(choice.us.size(), static_cast<size_t>(choice.candidates)) << name;
    ASSERT_EQ(choice.labels.size(), static_cast<size_t>(choice.candidates)) << name;
    EXPECT_EQ(choice.labels[0], c.dtype == torch::kFloat ? "ATen" : "heuristic 0") << name;
    ASSERT_GE(choice.chosen, 0) << name;
    ASSERT_LT(choice.chosen, choice.candidates) << name;
    EXPECT_GT(choice.us[choice.chosen], 0.0) << name;
    // The kept one is the fastest, or the heuristic's first with none faster by the margin.
    const double bound = choice.us[choice.chosen] * (choice.chosen == 0 ? 1.0 - torchfuse::runtime::kKeepFirstMargin : 1.0);
    for (double us : choice.us) EXPECT_TRUE(us < 0 || us >= bound) << name << ": a faster one was not kept";
    if (choice.chosen != 0)
      EXPECT_LE(choice.us[choice.chosen], choice.us[0] * (1.0 - torchfuse::runtime::kKeepFirstMargin)) << name;
  }
}

// A float32 call that times its candidates (gemm_autotune) times ATen's GEMM first and split-K
// variants of the heuristic's algorithms beside them, at a batch-1 layer's shape (Llama's q
// projection at 128 tokens: 16 output tiles of 128 x 128 for 132 SMs), and whichever it keeps
// computes eager's result.
TEST_F(GpuGemmEpilogues, Float32TimedCallsTryAtenAndSplitKVariants) {
  const Epilogue plain{"plain", false, false, "none"};
  const std::string name = call_name(torch::kFloat, 128, 2048, 2048, plain);
  ASSERT_EQ(choices_for(name), 0) << name << " was timed before this test";
  for (int call = 0; call < 3; ++call) {
    const auto o = tftest::gemm_operands({1, 128}, 2048, 2048, torch::kFloat);  // fresh values every call
    const at::Tensor got = gemm_epilogue(o.x, o.w, {}, {}, "none", 8);
    const at::Tensor want = gemm_eager(o.x, o.w, {}, {}, "none");
    const Tolerance tol = tolerance(torch::kFloat);
    EXPECT_TRUE(torch::allclose(got, want, tol.rtol, tol.atol))
        << name << " call " << call << ": max error " << (got - want).abs().max().item<double>();
  }
  ASSERT_EQ(choices_for(name), 1) << name;
  torchfuse::runtime::GemmAlgorithmChoice choice;
  for (const auto& ch : torchfuse::runtime::gemm_algorithm_choices())
    if (ch.call == name) choice = ch;
  ASSERT_TRUE(choice.why_not.empty()) << choice.why_not;
  ASSERT_EQ(choice.labels.size(), choice.us.size());
  ASSERT_FALSE(choice.labels.empty());
  EXPECT_EQ(choice.labels[0], "ATen");
  EXPECT_GT(choice.us[0], 0.0) << "ATen's GEMM was not timed";
  int splits_timed = 0;
  std::string table;
  for (size_t i = 0; i < choice.labels.size(); ++i) {
    splits_timed += choice.labels[i].find("split-K") != std::string::npos && choice.us[i] > 0;
    table += "  " + choice.labels[i] + ": " + std::to_string(choice.us[i]) + " us\n";
  }
  EXPECT_GE(splits_timed, 1) << "no split-K variant was timed:\n" << table;
  std::cout << name << ": kept " << choice.labels[static_cast<size_t>(choice.chosen)] << "\n" << table;
  // The kept candidate runs the next call: ATen's path where ATen's GEMM won.
  const auto before = gemm_epilogue_counts();
  const auto o = tftest::gemm_operands({128}, 2048, 2048, torch::kFloat);
  (void)gemm_epilogue(o.x, o.w, {}, {}, "none", 8);
  const auto after = gemm_epilogue_counts();
  EXPECT_EQ(after.aten_calls - before.aten_calls, choice.chosen == 0 ? 1 : 0) << "kept " << choice.labels[static_cast<size_t>(choice.chosen)];
}

// A float32 module compiled with gemm_autotune: its linears without an epilogue become the op
// too (timed against ATen's GEMM; gate and up merged into one), and the module matches eager on
// fresh inputs of two lengths.
TEST_F(GpuGemmEpilogues, Float32ModuleWithTimedGemmsMatchesEager) {
  torch::jit::Module m("Mlp");
  const auto o = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA);
  for (const auto& [name, rows, cols] :
       std::vector<std::tuple<std::string, int64_t, int64_t>>{{"wg", 352, 160}, {"wu", 352, 160}, {"wd", 160, 352}})
    m.register_parameter(name, (torch::randn({rows, cols}) / std::sqrt(double(cols))).to(o), false);
  m.define(R"JIT(
def forward(self, x):
    return torch.linear(torch.silu(torch.linear(x, self.wg)) * torch.linear(x, self.wu), self.wd) + x
)JIT");
  torchfuse::CompileOptions options = tftest::quiet_options();
  options.gemm_autotune = true;
  torchfuse::CompiledModule fused = torchfuse::compile(m, options);
  const auto e = fused.explain({torch::randn({2, 67, 160}, o)});
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "torchfuse::gemm_epilogue("), 2) << e.rewritten_graph;
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "value=[352, 352]"), 1) << "gate and up merged, timed by parts";
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "aten::linear("), 0) << e.rewritten_graph;
  for (int64_t t : {67, 131}) {
    const std::vector<c10::IValue> in{torch::randn({2, t, 160}, o)};
    const at::Tensor got = fused.forward(in).toTensor().to(torch::kDouble);
    const at::Tensor want = m.forward(in).toTensor().to(torch::kDouble);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::allclose(got, want, 1e-4, 1e-4)) << "T " << t << ": max error " << (got - want).abs().max().item<double>();
  }
}

// Untimed calls (one candidate, gemm_autotune off: the default) run the heuristic's first through
// cuBLASLt and time nothing, in every dtype (a float32 call has no ATen candidate then).
TEST_F(GpuGemmEpilogues, UntimedCallsRunTheHeuristicsFirstAndTimeNothing) {
  for (c10::ScalarType dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    const Epilogue& e = kEpilogues[4];  // residual + bias
    const std::string name = call_name(dtype, 61, 136, 232, e);
    ASSERT_EQ(choices_for(name), 0) << name << " was timed before this test";
    for (int call = 0; call < 3; ++call) {
      const auto o = tftest::gemm_operands({61}, 232, 136, dtype);
      const auto before = gemm_epilogue_counts();
      const at::Tensor got = gemm_epilogue(o.x, o.w, o.b, o.r, e.activation, 1);
      EXPECT_EQ(gemm_epilogue_counts().cublaslt_calls, before.cublaslt_calls + 1) << name << ": " << gemm_epilogue_last_fallback();
      const at::Tensor want = gemm_eager(o.x, o.w, o.b, o.r, e.activation);
      const Tolerance tol = tolerance(dtype);
      EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), tol.rtol, tol.atol)) << name;
    }
    EXPECT_EQ(choices_for(name), 0) << name << ": an untimed call was timed";
  }
}

TEST_F(GpuGemmEpilogues, AShapeFirstSeenWhileCapturingIsTimedOnItsFirstCallOutside) {
  const c10::Device device(torch::kCUDA, 0);
  const Operands o = gemm_operands({53}, 144, 88, torch::kBFloat16);
  const Epilogue& e = kEpilogues[2];  // bias + relu
  const std::string name = call_name(torch::kBFloat16, 53, 88, 144, e);
  ASSERT_EQ(choices_for(name), 0) << name << " was timed before this test";
  auto stream = torchfuse::runtime::new_capture_stream(device);
  at::Tensor captured;
  auto graph = torchfuse::runtime::capture_graph(stream.stream, [&] { captured = gemm_epilogue(o.x, o.w, o.b, {}, e.activation, 8); });
  EXPECT_EQ(choices_for(name), 0) << "timed inside a capture";
  const at::Tensor want = gemm_eager(o.x, o.w, o.b, {}, e.activation).to(torch::kDouble);
  const Tolerance tol = tolerance(torch::kBFloat16);
  graph->replay();
  torch::cuda::synchronize();
  EXPECT_TRUE(torch::allclose(captured.to(torch::kDouble), want, tol.rtol, tol.atol)) << "replay of the untimed call";
  const at::Tensor outside = gemm_epilogue(o.x, o.w, o.b, {}, e.activation, 8);
  EXPECT_TRUE(torch::allclose(outside.to(torch::kDouble), want, tol.rtol, tol.atol)) << "the first call outside";
  EXPECT_EQ(choices_for(name), 1) << "not timed on the first call outside the capture";
  graph->replay();
  torch::cuda::synchronize();
  EXPECT_TRUE(torch::allclose(captured.to(torch::kDouble), want, tol.rtol, tol.atol)) << "a replay after the timing";
}

}  // namespace
