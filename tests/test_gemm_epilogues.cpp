// GEMM epilogues (passes/rewrite_gemm_epilogues.cpp, runtime/gemm_epilogue_op.cpp) on the CPU:
// which patterns become one torchfuse::gemm_epilogue node and which are refused and why
// (explain()), results against eager through the op's ATen path, and the op's own checks.
// tests/test_gemm_epilogues_gpu.cpp runs the cuBLASLt path.
#include <ATen/Context.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/version.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include "runtime/gemm_autotune.h"
#include "runtime/gemm_epilogue_op.h"
#include "runtime/gemm_parts.h"
#include "runtime/gemm_split_variants.h"
#include "tests/cpu_fallbacks.h"
#include "tests/test_util.h"

namespace {

using tftest::count_occurrences;
using tftest::joined;

constexpr const char* kOp = "torchfuse::gemm_epilogue";

torchfuse::CompileOptions options(bool gemm_epilogues = true) {
  torchfuse::CompileOptions o = tftest::quiet_options();
  o.gemm_epilogues = gemm_epilogues;
  o.split_linear_bias = false;  // tests/test_linear_bias.cpp covers that rewrite
  o.cublaslt_gemms = false;     // GEMMs left without an epilogue stay aten::linear here
  return o;
}

// The first inputs of `in`, one per name in `args` ("x, w, b").
std::vector<c10::IValue> first_of(const std::vector<c10::IValue>& in, const std::string& args) {
  const size_t n = static_cast<size_t>(count_occurrences(args, ",") + 1);
  return std::vector<c10::IValue>(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(std::min(n, in.size())));
}

torchfuse::Explanation explain(const std::string& args, const std::string& expr, const std::vector<c10::IValue>& in,
                               bool gemm_epilogues = true) {
  return torchfuse::compile(tftest::module_returning(args, expr), options(gemm_epilogues)).explain(first_of(in, args));
}

// x [B, T, K], w [N, K], b [N], r [B, T, N] with fresh random values.
std::vector<c10::IValue> linear_inputs(at::ScalarType dtype = at::kFloat, int64_t n = 24) {
  const auto o = torch::TensorOptions().dtype(dtype);
  return {torch::randn({2, 5, 16}, o), torch::randn({n, 16}, o), torch::randn({n}, o), torch::randn({2, 5, n}, o)};
}

// The rewritten graph holds `ops` gemm_epilogue nodes and none of `gone`, and explain().rewrites
// has one line per node, each naming its activation.
void expect_rewritten(const torchfuse::Explanation& e, int ops, const std::vector<std::string>& gone,
                      const std::string& rewrite_says) {
  EXPECT_EQ(count_occurrences(e.rewritten_graph, kOp), ops) << e.rewritten_graph;
  for (const std::string& op : gone) EXPECT_EQ(count_occurrences(e.rewritten_graph, op + "("), 0) << op << "\n" << e.rewritten_graph;
  ASSERT_EQ(e.rewrites.size(), static_cast<size_t>(ops)) << joined(e.rewrites);
  EXPECT_NE(e.rewrites.back().find(rewrite_says), std::string::npos) << joined(e.rewrites);
}

// The graph is left alone (its aten::linear still there; the epilogue op may have joined a fusion
// group) and a refusal names `reason`.
void expect_refused(const torchfuse::Explanation& e, const std::string& reason) {
  EXPECT_EQ(count_occurrences(e.rewritten_graph, kOp), 0) << e.rewritten_graph;
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::linear("), 1) << e.rewritten_graph;
  EXPECT_TRUE(e.rewrites.empty()) << joined(e.rewrites);
  bool found = false;
  for (const std::string& r : e.refused) found = found || (r.find("GEMM epilogue") != std::string::npos && r.find(reason) != std::string::npos);
  EXPECT_TRUE(found) << "no refusal naming '" << reason << "' in:\n" << joined(e.refused);
}

TEST(GemmEpilogues, LinearThenTanhGeluBecomesOneOp) {
  const auto e = explain("x, w, b", "torch.gelu(torch.linear(x, w, b), approximate='tanh')", linear_inputs());
  expect_rewritten(e, 1, {"aten::linear", "aten::gelu"}, "activation gelu_tanh");
  EXPECT_NE(e.rewrites[0].find("aten::linear"), std::string::npos) << e.rewrites[0];
  EXPECT_NE(e.rewrites[0].find("bias"), std::string::npos) << e.rewrites[0];
}

TEST(GemmEpilogues, LinearThenReluBecomesOneOp) {
  const auto e = explain("x, w, b", "torch.relu(torch.linear(x, w, b))", linear_inputs());
  expect_rewritten(e, 1, {"aten::linear", "aten::relu"}, "activation relu");
}

TEST(GemmEpilogues, ResidualAddEitherOrderWithAnActivationBecomesOneOp) {
  const auto in = linear_inputs();
  expect_rewritten(explain("x, w, b, r", "torch.relu(torch.linear(x, w, b) + r)", in), 1, {"aten::linear", "aten::add"},
                   "residual, activation relu");
  expect_rewritten(explain("x, w, b, r", "torch.relu(r + torch.linear(x, w, b))", in), 1, {"aten::linear", "aten::add"},
                   "residual, activation relu");
}

// Alone, a residual add is left to the fused kernel that reads it (it saves no pass there).
TEST(GemmEpilogues, ResidualAddAloneIsLeftToItsReader) {
  const auto in = linear_inputs();
  expect_refused(explain("x, w, b, r", "torch.linear(x, w, b) + r", in), "a residual add without an activation");
  expect_refused(explain("x, w, b, r", "r + torch.linear(x, w, b)", in), "a residual add without an activation");
}

TEST(GemmEpilogues, ActivationAfterTheResidualJoinsTheEpilogue) {
  // cuBLASLt's order: act(x W^T + b + r).
  const auto e = explain("x, w, b, r", "torch.relu(torch.linear(x, w, b) + r)", linear_inputs());
  expect_rewritten(e, 1, {"aten::linear", "aten::add", "aten::relu"}, "residual, activation relu");
}

TEST(GemmEpilogues, LinearWithoutBiasAndFrozenWeights) {
  torch::jit::Module m("M");
  m.register_parameter("w", torch::randn({24, 16}), false);
  m.define("def forward(self, x):\n    return torch.relu(torch.linear(x, self.w))\n");
  const auto e = torchfuse::compile(m, options()).explain({torch::randn({7, 16})});
  expect_rewritten(e, 1, {"aten::linear", "aten::relu"}, "no bias");
}

TEST(GemmEpilogues, AddmmAndMatmulWithTheirWeightTransposed) {
  const std::vector<c10::IValue> in{torch::randn({6, 16}), torch::randn({16, 24}), torch::randn({24}),
                                    torch::randn({6, 24})};
  expect_rewritten(explain("x, m, b, r", "torch.relu(torch.addmm(b, x, m))", in), 1, {"aten::addmm"}, "bias");
  const auto e = explain("x, m, b, r", "torch.relu(torch.matmul(x, m) + r)", in);
  expect_rewritten(e, 1, {"aten::matmul", "aten::add"}, "no bias, residual, activation relu");
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::t("), 1) << e.rewritten_graph;  // W = m^T
}

TEST(GemmEpilogues, AnMlpBlockGetsOneOpPerGemm) {
  const auto e = torchfuse::compile(tftest::module_from(R"JIT(
def forward(self, x, w1, b1, w2, b2):
    h = torch.gelu(torch.linear(x, w1, b1), approximate='tanh')
    return torch.relu(torch.linear(h, w2, b2) + x)
)JIT"),
                                    options())
                     .explain({torch::randn({3, 4, 16}), torch::randn({32, 16}), torch::randn({32}),
                               torch::randn({16, 32}), torch::randn({16})});
  expect_rewritten(e, 2, {"aten::linear", "aten::gelu", "aten::add"}, "residual, activation relu");
}

TEST(GemmEpilogues, ErfGeluIsRefused) {
  // cuBLASLt's GELU is the tanh approximation: erf GELU differs by up to ~1e-3.
  const auto e = explain("x, w, b", "torch.gelu(torch.linear(x, w, b))", linear_inputs());
  expect_refused(e, "erf");
}

TEST(GemmEpilogues, ErfGeluAfterTheResidualStaysOutOfTheEpilogue) {
  // The GELU cannot join (erf), and the residual alone is not worth an epilogue.
  const auto e = explain("x, w, b, r", "torch.gelu(torch.linear(x, w, b) + r)", linear_inputs());
  expect_refused(e, "a residual add without an activation");
  bool found = false;
  for (const std::string& r : e.refused) found = found || r.find("the activation stays in ATen: gelu with approximate='none'") != std::string::npos;
  EXPECT_TRUE(found) << joined(e.refused);
}

TEST(GemmEpilogues, BroadcastResidualIsRefused) {
  const auto in = linear_inputs();
  expect_refused(explain("x, w, b", "torch.linear(x, w, b) + b", in), "broadcast");
  // The GEMM's result broadcast up to the residual's shape.
  const std::vector<c10::IValue> up{torch::randn({5, 16}), torch::randn({24, 16}), torch::randn({24}),
                                    torch::randn({2, 5, 24})};
  expect_refused(explain("x, w, b, r", "torch.linear(x, w, b) + r", up), "broadcast");
}

TEST(GemmEpilogues, AlphaOtherThanOneIsRefused) {
  expect_refused(explain("x, w, b, r", "torch.add(torch.linear(x, w, b), r, alpha=2)", linear_inputs()), "alpha");
}

TEST(GemmEpilogues, DtypePromotionIsRefused) {
  auto in = linear_inputs();
  in[3] = torch::randn({2, 5, 24}, torch::kDouble);
  expect_refused(explain("x, w, b, r", "torch.linear(x, w, b) + r", in), "dtype promotion: the residual is f64");
  // f64 GEMMs: cuBLASLt has no f64 epilogues, and ATen's f64 GEMM gains nothing from the rewrite.
  std::vector<c10::IValue> f64;
  for (const auto& v : first_of(linear_inputs(), "x, w, b")) f64.emplace_back(v.toTensor().to(torch::kDouble));
  expect_refused(explain("x, w, b", "torch.relu(torch.linear(x, w, b))", f64), "dtype f64");
}

TEST(GemmEpilogues, SharedResultIsRefused) {
  auto in = linear_inputs();
  in.pop_back();
  const auto e = torchfuse::compile(tftest::module_from(R"JIT(
def forward(self, x, w, b):
    y = torch.linear(x, w, b)
    return torch.relu(y) * y
)JIT"),
                                    options())
                     .explain(in);
  expect_refused(e, "2 uses");
}

TEST(GemmEpilogues, OptionOffLeavesTheGraphAlone) {
  const auto e = explain("x, w, b", "torch.relu(torch.linear(x, w, b))", linear_inputs(), /*gemm_epilogues=*/false);
  EXPECT_EQ(count_occurrences(e.rewritten_graph, kOp), 0) << e.rewritten_graph;
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::linear("), 1) << e.rewritten_graph;
  EXPECT_TRUE(e.rewrites.empty()) << joined(e.rewrites);
  for (const std::string& r : e.refused) EXPECT_EQ(r.find("GEMM epilogue"), std::string::npos) << r;
}

// The rewritten specialization (groups on their ATen fallbacks) against eager, on fresh inputs.
void expect_matches_eager(const std::string& args, const std::string& expr, at::ScalarType dtype, double tol) {
  auto impl = tftest::on_cpu_fallbacks(tftest::module_returning(args, expr), options());
  for (int call = 0; call < 2; ++call) {
    const std::vector<c10::IValue> in = first_of(linear_inputs(dtype), args);
    const at::Tensor got = impl->forward(in).toTensor();
    const at::Tensor want = impl->forward_eager(in).toTensor();
    EXPECT_EQ(got.scalar_type(), dtype);
    EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want.to(torch::kDouble), tol, tol))
        << expr << ": max error " << (got.to(torch::kDouble) - want.to(torch::kDouble)).abs().max().item<double>();
  }
  const std::string graph = impl->graph_for(first_of(linear_inputs(dtype), args));
  EXPECT_EQ(count_occurrences(graph, kOp), 1) << graph;
}

const char* const kPatterns[][2] = {
    {"x, w, b", "torch.gelu(torch.linear(x, w, b), approximate='tanh')"},
    {"x, w, b", "torch.relu(torch.linear(x, w, b))"},
    {"x, w, b, r", "torch.relu(torch.linear(x, w, b) + r)"},
    {"x, w, b, r", "torch.relu(r + torch.linear(x, w, b))"},
    {"x, w, b, r", "torch.gelu(torch.linear(x, w) + r, approximate='tanh')"},
};

TEST(GemmEpilogues, CpuResultsMatchEagerInFloat32) {
  for (const auto& p : kPatterns) expect_matches_eager(p[0], p[1], at::kFloat, 1e-5);
}

TEST(GemmEpilogues, CpuResultsMatchEagerInBFloat16) {
  for (const auto& p : kPatterns) expect_matches_eager(p[0], p[1], at::kBFloat16, 2e-2);
}

// ---- the op itself ----

using torchfuse::runtime::gemm_epilogue;

at::Tensor reference(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& r,
                     const std::string& act) {
  at::Tensor y = torch::matmul(x.to(torch::kDouble), w.to(torch::kDouble).t());
  if (b.defined()) y = y + b.to(torch::kDouble);
  if (r.defined()) y = y + r.to(torch::kDouble);
  if (act == "relu") y = torch::relu(y);
  if (act == "gelu_tanh") y = torch::gelu(y, "tanh");
  return y;
}

TEST(GemmEpilogues, OpComputesActOfGemmPlusBiasPlusResidual) {
  const auto in = linear_inputs();
  const at::Tensor x = in[0].toTensor(), w = in[1].toTensor(), b = in[2].toTensor(), r = in[3].toTensor();
  const auto before = torchfuse::runtime::gemm_epilogue_counts();
  for (const char* act : {"none", "relu", "gelu_tanh"}) {
    for (int variant = 0; variant < 4; ++variant) {
      const at::Tensor bias = variant & 1 ? b : at::Tensor();
      const at::Tensor res = variant & 2 ? r : at::Tensor();
      const at::Tensor got = gemm_epilogue(x, w, bias, res, act);
      EXPECT_EQ(got.sizes(), r.sizes());
      EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), reference(x, w, bias, res, act), 1e-4, 1e-4))
          << act << " variant " << variant;
    }
  }
  // A transposed weight and a non-contiguous input read the same values.
  const at::Tensor got = gemm_epilogue(x.transpose(0, 1).contiguous().transpose(0, 1), w.t().contiguous().t(), b, r, "relu");
  EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), reference(x, w, b, r, "relu"), 1e-4, 1e-4));
  const auto after = torchfuse::runtime::gemm_epilogue_counts();
  EXPECT_EQ(after.cublaslt_calls, before.cublaslt_calls);  // CPU tensors: ATen only
  EXPECT_EQ(after.aten_calls, before.aten_calls + 13);
  EXPECT_NE(torchfuse::runtime::gemm_epilogue_last_fallback().find("not CUDA tensors"), std::string::npos)
      << torchfuse::runtime::gemm_epilogue_last_fallback();
}

TEST(GemmEpilogues, OpIsRegisteredForTorchScript) {
  const auto in = linear_inputs();
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %r : Tensor):
  %act : str = prim::Constant[value="gelu_tanh"]()
  %candidates : int = prim::Constant[value=8]()
  %y : Tensor = torchfuse::gemm_epilogue(%x, %w, %b, %r, %act, %candidates)
  return (%y)
)IR",
                      graph.get());
  torch::jit::Code code(graph, "gemm_epilogue");
  torch::jit::Stack stack(in.begin(), in.end());
  torch::jit::InterpreterState(code).run(stack);
  const at::Tensor got = stack.at(0).toTensor();
  const at::Tensor want = reference(in[0].toTensor(), in[1].toTensor(), in[2].toTensor(), in[3].toTensor(), "gelu_tanh");
  EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want, 1e-4, 1e-4));
}

TEST(GemmEpilogues, OpRejectsBadInputsClearly) {
  const at::Tensor x = torch::randn({4, 16}), w = torch::randn({8, 16}), b = torch::randn({8});
  tftest::expect_error([&] { gemm_epilogue(x.to(torch::kDouble), w, b, {}, "none"); }, {"weight", "input's dtype"});
  tftest::expect_error([&] { gemm_epilogue(x, w, b.to(torch::kHalf), {}, "none"); }, {"bias", "input's dtype"});
  tftest::expect_error([&] { gemm_epilogue(torch::randn({4, 15}), w, b, {}, "none"); }, {"do not multiply"});
  tftest::expect_error([&] { gemm_epilogue(x, torch::randn({2, 8, 16}), {}, {}, "none"); }, {"weight must be 2-D"});
  tftest::expect_error([&] { gemm_epilogue(x, w, torch::randn({7}), {}, "none"); }, {"bias", "1-D"});
  tftest::expect_error([&] { gemm_epilogue(x, w, b, torch::randn({8}), "none"); }, {"residual", "no broadcasting"});
  tftest::expect_error([&] { gemm_epilogue(x, w, b, {}, "gelu"); }, {"unknown activation 'gelu'"});
  tftest::expect_error([&] { gemm_epilogue(x, w, b, {}, "none", 0); }, {"candidates must be in 1..32", "got 0"});
  tftest::expect_error([&] { gemm_epilogue(x, w, b, {}, "none", 33); }, {"candidates must be in 1..32", "got 33"});
  tftest::expect_error([&] { gemm_epilogue(x.to(torch::kLong), w.to(torch::kLong), {}, {}, "none"); },
                       {"floating-point"});
}

// The op's parts overload (runtime/gemm_parts.h) from TorchScript on the CPU, where both forms
// run ATen's linear; parts that do not describe the weight's rows are errors naming them.
TEST(GemmParts, OverloadRunsFromTorchScriptAndRejectsBadParts) {
  const auto in = linear_inputs(at::kFloat, 8);
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %r : Tensor):
  %act : str = prim::Constant[value="relu"]()
  %candidates : int = prim::Constant[value=8]()
  %parts : int[] = prim::Constant[value=[3, 5]]()
  %y : Tensor = torchfuse::gemm_epilogue(%x, %w, %b, %r, %act, %candidates, %parts)
  return (%y)
)IR",
                      graph.get());
  torch::jit::Code code(graph, "gemm_epilogue_parts");
  torch::jit::Stack stack(in.begin(), in.end());
  torch::jit::InterpreterState(code).run(stack);
  const at::Tensor x = in[0].toTensor(), w = in[1].toTensor(), b = in[2].toTensor(), r = in[3].toTensor();
  const at::Tensor want = reference(x, w, b, r, "relu");
  EXPECT_TRUE(torch::allclose(stack.at(0).toTensor().to(torch::kDouble), want, 1e-4, 1e-4));
  const at::Tensor apart = torchfuse::runtime::gemm_epilogue_apart(x, w, b, r, "relu", 8, {3, 5});
  EXPECT_TRUE(torch::allclose(apart.to(torch::kDouble), want, 1e-4, 1e-4));
  using torchfuse::runtime::gemm_epilogue_parts;
  tftest::expect_error([&] { gemm_epilogue_parts(x, w, b, r, "relu", 8, {3, 4}); },
                       {"parts [3, 4]", "must add up to weight's dim 0 (8 output features), not 7"});
  tftest::expect_error([&] { gemm_epilogue_parts(x, w, b, r, "relu", 8, {8, 0}); }, {"positive widths", "[8, 0]"});
  tftest::expect_error([&] { gemm_epilogue_parts(x, w, b, r, "relu", 8, {}); }, {"at least one width"});
  tftest::expect_error([&] { gemm_epilogue_parts(x, w, b, r, "relu", 0, {3, 5}); }, {"candidates must be in 1..32"});
  tftest::expect_error([&] { gemm_epilogue_parts(x, w.t(), b, r, "relu", 8, {3, 5}); }, {"do not multiply"});
}

// Merged or apart (runtime/gemm_parts.h): apart only where it is kKeepFirstMargin faster and
// saves more GPU time than its extra calls cost the host; a form that declined loses.
TEST(GemmParts, ApartIsKeptOnlyWhereItSavesMoreThanItsExtraCalls) {
  using torchfuse::runtime::keep_apart;
  using torchfuse::runtime::kApartCallHostUs;
  using torchfuse::runtime::kKeepFirstMargin;
  struct Case {
    double merged, apart;
    size_t parts;
    bool want;
  };
  const Case cases[] = {
      {136.5, 128.4, 2, true},   // 6% and 8 us faster: one more call pays for itself
      {136.5, 134.0, 2, false},  // under the margin
      {12.0, 10.0, 2, false},    // 17% faster, but 2 us against a call's host time
      {200.0, 200.0 - 2.5 * kApartCallHostUs, 3, true},  // 2.5 calls' worth against 2 more calls
      {200.0, 200.0 - 1.6 * kApartCallHostUs, 3, false},
      {100.0, 100.0 * (1.0 - kKeepFirstMargin) + 0.01, 2, false},
      {-1.0, 50.0, 2, true},     // merged declined
      {50.0, -1.0, 2, false},    // apart declined
      {-1.0, -1.0, 2, false},
  };
  for (const Case& c : cases)
    EXPECT_EQ(keep_apart(c.merged, c.apart, c.parts), c.want)
        << "merged " << c.merged << " us, apart " << c.apart << " us, " << c.parts << " parts";
}

TEST(GemmAutotune, RewrittenCallsCarryTheCandidateCount) {
  for (bool autotune : {true, false}) {
    torchfuse::CompileOptions o = options();
    o.gemm_autotune = autotune;
    const auto in = linear_inputs();
    const auto e = torchfuse::compile(tftest::module_returning("x, w, b", "torch.relu(torch.linear(x, w, b))"), o)
                       .explain(first_of(in, "x, w, b"));
    ASSERT_EQ(count_occurrences(e.rewritten_graph, kOp), 1) << e.rewritten_graph;
    const std::string arg = tftest::last_call_argument(e.rewritten_graph, kOp);
    ASSERT_FALSE(arg.empty()) << e.rewritten_graph;
    EXPECT_EQ(tftest::constant_value(e.rewritten_graph, arg, "int"), autotune ? "8" : "1") << e.rewritten_graph;
  }
}

// Untimed, a float32 linear without an epilogue stays ATen's; timed, it becomes the op (which
// times ATen's GEMM as its candidate 0 on the GPU), and the rewrite says so. On the CPU both run
// ATen's linear and match eager.
TEST(GemmAutotune, Float32PlainGemmsBecomeTheOpOnlyWhenTimed) {
  for (bool autotune : {false, true}) {
    torchfuse::CompileOptions o = options();
    o.cublaslt_gemms = true;
    o.gemm_autotune = autotune;
    const auto in = first_of(linear_inputs(at::kFloat), "x, w");
    auto fused = torchfuse::compile(tftest::module_returning("x, w", "torch.linear(x, w) * 2.0"), o);
    const auto e = fused.explain(in);
    EXPECT_EQ(count_occurrences(e.rewritten_graph, kOp), autotune ? 1 : 0) << e.rewritten_graph;
    EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::linear("), autotune ? 0 : 1) << e.rewritten_graph;
    bool said = false;
    for (const std::string& r : e.rewrites) said = said || r.find("float32: timed against ATen's GEMM") != std::string::npos;
    EXPECT_EQ(said, autotune) << joined(e.rewrites);
    if (autotune) {
      const std::string arg = tftest::last_call_argument(e.rewritten_graph, kOp);
      EXPECT_EQ(tftest::constant_value(e.rewritten_graph, arg, "int"), "8") << e.rewritten_graph;
    }
    const std::vector<c10::IValue> fresh = first_of(linear_inputs(at::kFloat), "x, w");
    const at::Tensor got = fused.forward(fresh).toTensor();
    const at::Tensor want = at::linear(fresh[0].toTensor(), fresh[1].toTensor()) * 2.0;
    EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << "autotune " << autotune;
  }
}

TEST(GemmAutotune, SplitCountsLeaveEachSliceAtLeastTheMinimumDepth) {
  using torchfuse::runtime::split_k_counts;
  EXPECT_EQ(split_k_counts(3072), (std::vector<int>{2, 3, 4, 6, 8, 12, 16}));
  EXPECT_EQ(split_k_counts(768), (std::vector<int>{2, 3, 4, 6, 8, 12}));
  EXPECT_EQ(split_k_counts(200), (std::vector<int>{2, 3}));
  EXPECT_EQ(split_k_counts(128), (std::vector<int>{2}));
  EXPECT_TRUE(split_k_counts(127).empty());
  EXPECT_TRUE(split_k_counts(0).empty());
  for (int64_t k : {129, 500, 777, 1000, 5632})
    for (int s : split_k_counts(k)) EXPECT_GE(k / s, torchfuse::runtime::kMinSplitDepth) << "k " << k << ", " << s << " splits";
}

TEST(GemmAutotune, AlgorithmsCompareByEveryWord) {
  cublasLtMatmulAlgo_t a{}, b{};
  for (int i = 0; i < 8; ++i) a.data[i] = b.data[i] = 100 + i;
  EXPECT_TRUE(torchfuse::runtime::same_algorithm(a, b));
  b.data[7] ^= 1;  // e.g. the split count's word
  EXPECT_FALSE(torchfuse::runtime::same_algorithm(a, b));
  torchfuse::runtime::SplitVariant v;
  v.source = 1;
  v.splits = 4;
  EXPECT_EQ(v.label(), "heuristic 1, split-K 4");
}

// The split-K schemes a cuBLASLt call may use follow torch's reduced-precision settings as
// eager's cuBLASLt GEMMs do: every scheme by default; partials in the compute type (or no split)
// where reduced precision is disallowed, so never "in place" in the 16-bit output; no split where
// split-K is disallowed too (LibTorch 2.9 and later).
TEST(GemmEpilogues, ReductionSchemesFollowTorchsReducedPrecisionSettings) {
  using torchfuse::runtime::cublaslt_reduction_mask;
  at::Context& ctx = at::globalContext();
  constexpr uint32_t kAll = 0x7, kComputeTypeOrNone = 0x2, kNone = 0x0;
  EXPECT_EQ(cublaslt_reduction_mask(at::kFloat), kAll);
  ctx.setAllowFP16ReductionCuBLAS(false);
  EXPECT_EQ(cublaslt_reduction_mask(at::kHalf), kComputeTypeOrNone);
  EXPECT_EQ(cublaslt_reduction_mask(at::kFloat), kAll) << "float32 takes no mask";
  ctx.setAllowFP16ReductionCuBLAS(true);
  EXPECT_EQ(cublaslt_reduction_mask(at::kHalf), kAll);
#if TORCH_VERSION_MAJOR >= 2
  ctx.setAllowBF16ReductionCuBLAS(false);
  EXPECT_EQ(cublaslt_reduction_mask(at::kBFloat16), kComputeTypeOrNone);
  ctx.setAllowBF16ReductionCuBLAS(true);
  EXPECT_EQ(cublaslt_reduction_mask(at::kBFloat16), kAll);
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9)
  ctx.setAllowFP16ReductionCuBLAS(false, false);
  EXPECT_EQ(cublaslt_reduction_mask(at::kHalf), kNone);
  ctx.setAllowBF16ReductionCuBLAS(false, false);
  EXPECT_EQ(cublaslt_reduction_mask(at::kBFloat16), kNone);
  ctx.setAllowFP16ReductionCuBLAS(true);
  ctx.setAllowBF16ReductionCuBLAS(true);
#else
  (void)kNone;
#endif
}

TEST(GemmAutotune, CpuCallsTimeNothing) {
  // The timing is cuBLASLt's: calls ATen runs record no choice, whatever the candidate count.
  const auto in = linear_inputs();
  const size_t before = torchfuse::runtime::gemm_algorithm_choices().size();
  const at::Tensor got = gemm_epilogue(in[0].toTensor(), in[1].toTensor(), in[2].toTensor(), {}, "relu", 8);
  EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), reference(in[0].toTensor(), in[1].toTensor(), in[2].toTensor(), {}, "relu"),
                              1e-4, 1e-4));
  EXPECT_EQ(torchfuse::runtime::gemm_algorithm_choices().size(), before);
}

TEST(GemmAutotune, TheFastestIsKeptOnlyWhenItBeatsTheHeuristicsFirstByTheMargin) {
  using torchfuse::runtime::choose_candidate;
  EXPECT_EQ(choose_candidate({5.0, 4.0, 4.5}), 1);
  EXPECT_EQ(choose_candidate({5.0, 4.9, 5.2}), 0) << "2% faster: within the margin";
  EXPECT_EQ(choose_candidate({5.0, 4.8, 5.2}), 1) << "4% faster";
  EXPECT_EQ(choose_candidate({-1.0, 6.0, 5.0}), 2) << "the heuristic's first declined";
  EXPECT_EQ(choose_candidate({5.0, -1.0, -1.0}), 0);
  EXPECT_EQ(choose_candidate({-1.0, -1.0}), -1);
  EXPECT_EQ(choose_candidate({}), -1);
  EXPECT_EQ(choose_candidate({3.0, 3.0, 2.0, 2.0}), 2) << "ties go to the earlier candidate";
}

}  // namespace
