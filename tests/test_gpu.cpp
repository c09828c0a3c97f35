// GPU tests: every op and many chains, fp32/fp16/bf16, broadcasting, scalars, non-contiguous
// inputs, huge tensors; compiled against eager on fresh random inputs with poisoned outputs.
// Skipped when no CUDA device is present.
#include <cmath>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/test_util.h"

using tftest::module_from;
using tftest::module_returning;

namespace {

torchfuse::CompileOptions poisoned() {
  auto o = tftest::quiet_options();
  o.debug_poison_outputs = true;
  return o;
}

// Compiles on one draw of inputs, then checks a fresh draw: one fused call launching
// `kernels` kernels, every output within the dtype's tolerance of eager.
void expect_matches_eager(const torch::jit::Module& m, const std::function<std::vector<c10::IValue>()>& make_inputs,
                          int kernels, const std::string& label) {
  SCOPED_TRACE(label);
  auto c = torchfuse::compile(m, poisoned());
  c.forward(make_inputs());  // first call: profile (eager), fuse, compile
  const auto in = make_inputs();
  const auto expected = c.forward_eager(in);
  const auto before = c.stats();
  const auto actual = c.forward(in);
  torch::cuda::synchronize();
  const auto after = c.stats();
  EXPECT_EQ(after.fused_calls - before.fused_calls, 1);
  EXPECT_EQ(after.kernel_launches - before.kernel_launches, kernels) << c.graph_for(in);
  EXPECT_EQ(tftest::fusion_nodes(c.graph_for(in)), kernels) << c.graph_for(in);
  const auto report = torchfuse::compare_outputs_with_reference(expected, actual, c.forward_reference(in));
  EXPECT_TRUE(report.passed()) << report.to_string() << c.graph_for(in);
}

enum class Layout { Contiguous, Transposed, Sliced };

torch::Tensor make(std::vector<int64_t> sizes, c10::ScalarType dtype, Layout layout, bool positive = false) {
  auto opts = torch::TensorOptions().device(torch::kCUDA);
  auto gen = [&](std::vector<int64_t> s) { return positive ? torch::rand(s, opts) + 0.5 : torch::randn(s, opts); };
  torch::Tensor t;
  switch (layout) {
    case Layout::Contiguous: t = gen(sizes); break;
    case Layout::Transposed: t = gen({sizes[1], sizes[0]}).t(); break;
    case Layout::Sliced: t = gen({sizes[0], sizes[1] * 2}).slice(1, 0, sizes[1] * 2, 2); break;
  }
  return t.to(dtype);
}

const char* kOpExprs[] = {
    "(x + y) * 2.0",
    "torch.add(x, y, alpha=2) - 1.0",
    "torch.sub(x, y, alpha=0.5) * x",
    "(1.5 - x) * y",
    "x * y + 3",
    "x / y * 0.5",
    "torch.div(x, y, rounding_mode='floor') + x",
    "torch.div(x, y, rounding_mode='trunc') + x",
    "-x * y",
    "torch.abs(x) + y",
    "torch.exp(x) * y",
    "torch.log(y) + x",
    "torch.sqrt(y) * x",
    "torch.rsqrt(y) * x",
    "torch.tanh(x) * y",
    "torch.sigmoid(x) * y",
    "torch.erf(x) + y",
    "torch.pow(y, 2.5) + x",
    "y ** 2 - x",
    "y ** 3 + torch.pow(y, -1) + torch.pow(y, 0.5)",
    "torch.relu(x) * y",
    "torch.gelu(x) + y",
    "torch.gelu(x, approximate='tanh') * y",
    "torch.silu(x) * y",
    "torch.clamp(x, -0.5, 0.5) + y",
    "torch.clamp_min(x, 0.1) * y",
    "torch.clamp_max(x, 0.1) * y",
    "torch.where(b, x, y) * 2.0",
    "torch.where(x > y, x, 0.0) + 1.0",
    "(x < y).type_as(x) + x",
    "(x <= y).type_as(x) * y",
    "(x >= 0.0).type_as(x) + y",
    "(x == x).type_as(x) + y",
    "(x != y).type_as(x) * x",
    "x.float() * y.float() + 1.0",
    "torch.maximum(x, y) * 2.0",
    "torch.minimum(x, y) * 2.0",
    "torch.reciprocal(y) + x",
    "torch.logical_not(b).type_as(x) * x",
};

struct OpParam {
  c10::ScalarType dtype;
  Layout layout;
};

class GpuOps : public ::testing::TestWithParam<OpParam> {};

void PrintTo(const OpParam& p, std::ostream* os) {
  *os << c10::toString(p.dtype) << ", layout " << static_cast<int>(p.layout);
}

std::string param_name(const ::testing::TestParamInfo<OpParam>& info) {
  static const char* const kLayouts[] = {"contiguous", "transposed", "sliced"};
  const c10::ScalarType t = info.param.dtype;
  const std::string dtype = t == c10::kFloat ? "f32" : t == c10::kHalf ? "f16" : "bf16";
  return dtype + "_" + kLayouts[static_cast<int>(info.param.layout)];
}

TEST_P(GpuOps, EveryOpMatchesEager) {
  REQUIRE_GPU();
  const auto p = GetParam();
  for (const char* expr : kOpExprs) {
    auto m = module_returning("x, y, b", expr);
    // x: [48, 80] in the parameter's layout; y: [80] broadcast over rows (positive); b: bool.
    auto inputs = [&] {
      return std::vector<c10::IValue>{make({48, 80}, p.dtype, p.layout), make({80}, p.dtype, Layout::Contiguous, true),
                                      torch::rand({48, 80}, torch::kCUDA) > 0.5};
    };
    expect_matches_eager(m, inputs, 1, expr);
  }
}

INSTANTIATE_TEST_SUITE_P(
    DtypesAndLayouts, GpuOps,
    ::testing::Values(OpParam{c10::kFloat, Layout::Contiguous}, OpParam{c10::kFloat, Layout::Transposed},
                      OpParam{c10::kFloat, Layout::Sliced}, OpParam{c10::kHalf, Layout::Contiguous},
                      OpParam{c10::kHalf, Layout::Transposed}, OpParam{c10::kHalf, Layout::Sliced},
                      OpParam{c10::kBFloat16, Layout::Contiguous}, OpParam{c10::kBFloat16, Layout::Transposed},
                      OpParam{c10::kBFloat16, Layout::Sliced}),
    param_name);

struct Chain {
  std::string name;
  std::string source;  // full forward definition
  std::function<std::vector<c10::IValue>(c10::ScalarType)> inputs;
  int kernels = 1;
};

torch::Tensor rnd(std::vector<int64_t> s, c10::ScalarType t) { return torch::randn(s, torch::kCUDA).to(t); }

std::vector<Chain> chains() {
  return {
      {"gelu_tanh", "def forward(self, x):\n    return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({256, 512}, t)}; }},
      {"bias_gelu_erf",
       "def forward(self, x, b):\n    y = x + b\n    return y * 0.5 * (1.0 + torch.erf(y * 0.7071067811865476))\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({256, 512}, t), rnd({512}, t)}; }},
      {"swiglu", "def forward(self, a, b):\n    return torch.silu(a) * b\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({128, 256}, t), rnd({128, 256}, t)}; }},
      {"residual_layerscale", "def forward(self, x, r, g):\n    return r + g * torch.gelu(x)\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({4, 64, 96}, t), rnd({4, 64, 96}, t), rnd({96}, t)}; }},
      {"two_outputs", "def forward(self, x, r):\n    h = x + r\n    return (h, torch.relu(h) * 2.0)\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({64, 128}, t), rnd({64, 128}, t)}; }},
      {"diamond", "def forward(self, x):\n    a = x * 2.0\n    return torch.sigmoid(a) * (a + 1.0)\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({1000, 37}, t)}; }},
      {"row_and_col_broadcast", "def forward(self, x, r, c):\n    return torch.exp(x - r) * c + 1.0\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({64, 128}, t), rnd({64, 1}, t), rnd({1, 128}, t)}; }},
      {"runtime_scalar", "def forward(self, x, s: float):\n    return torch.tanh(x * s) + s\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({77, 33}, t), 0.37}; }},
      {"zero_dim_tensor", "def forward(self, x, s):\n    return torch.relu(x * s) - s\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({64, 64}, t), rnd({}, t)}; }},
      {"four_d_mask", "def forward(self, s, m):\n    return torch.sigmoid(s * 0.125 + m) * s\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({2, 4, 32, 32}, t), rnd({1, 1, 32, 32}, t)}; }},
      {"matmul_between", "def forward(self, x, w):\n    a = torch.tanh(x * 2.0)\n    m = torch.matmul(a, w)\n    return torch.relu(m + 1.0) * a\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({64, 64}, t), rnd({64, 64}, t)}; }, 2},
      {"mixed_precision", "def forward(self, x, w):\n    xf = x.float()\n    return (xf * torch.rsqrt(xf * xf + 1e-6)).type_as(x) * w\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({64, 128}, t), rnd({128}, t)}; }},
      {"odd_sizes", "def forward(self, x, y):\n    return torch.clamp(x * y + 0.5, -1.0, 1.0) * torch.sigmoid(y)\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({3, 5, 7}, t), rnd({7}, t)}; }},
      // 0-dim CPU tensors beside GPU tensors (traced models make them: position ids, scales): a
      // kernel parameter, as eager's CPU scalars; f32 5.2 rounds to the 16-bit common dtype.
      {"cpu_scalar_input", "def forward(self, x, s):\n    return torch.relu(x * s + 1.0) - s\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({64, 128}, t), torch::tensor(0.37)}; }},
      {"cpu_scalars_made_in_graph",
       "def forward(self, x):\n    s = torch.tensor(2.6) * 2.0\n    n = torch.tensor(3)\n"
       "    return torch.sigmoid(x) * s + x / s - n\n",
       [](auto t) { return std::vector<c10::IValue>{rnd({33, 257}, t)}; }},
  };
}

TEST(GpuChains, MatchEagerInEveryDtype) {
  REQUIRE_GPU();
  for (const auto& c : chains()) {
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      expect_matches_eager(module_from(c.source), [&] { return c.inputs(dtype); }, c.kernels,
                           c.name + " " + c10::toString(dtype));
    }
  }
}

// Fast math (ex2/rcp forms of exp, sigmoid, SiLU where eager rounds to 16 bits; 1 + tanh(u) as
// 2 / (1 + exp(-2u)), 1 + erf(u) as erfc(-u) and both GELUs through them, in every dtype) on
// values from tiny to overflowing, infinities and NaN.
TEST(GpuChains, FastMathMatchesEagerAtEdgeValues) {
  REQUIRE_GPU();
  const char* exprs[] = {"torch.exp(x) * 0.5", "torch.sigmoid(x) * 2.0", "torch.silu(x) * 1.5",
                         "0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))",
                         "x * (torch.tanh(x * 3.0) + 1.0)",
                         "x * 0.5 * (1.0 + torch.erf(x * 0.7071067811865476))",
                         "(torch.erf(x * 0.37) + 1.0) * 3.0",
                         "torch.gelu(x) * 2.0",
                         "torch.gelu(x, approximate='tanh') * 2.0"};
  auto inputs = [](c10::ScalarType t) {
    auto x = torch::randn({64, 128}, torch::kCUDA) * 6.0;
    const std::vector<double> edges = {0.0, -0.0, 1e-30, -1e-30, 1e-4, -1e-4, 10.0, -10.0, 20.0, -20.0,
                                       50.0, -50.0, 88.0, -88.0, 89.0, -89.0, 100.0, -100.0, 1e30, -1e30,
                                       INFINITY, -INFINITY, NAN};
    auto flat = x.view({-1});
    for (size_t i = 0; i < edges.size(); ++i) flat[static_cast<int64_t>(i * 131)] = edges[i];
    return std::vector<c10::IValue>{x.to(t)};
  };
  for (const char* expr : exprs) {
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      expect_matches_eager(module_returning("x", expr), [&] { return inputs(dtype); }, 1,
                           std::string(expr) + " " + c10::toString(dtype));
    }
  }
}

// tf_one_plus_erf's stated bound (absolute error below 4e-7 against float64) on a dense sweep
// over [-6, 6], which crosses its clamp at |u| = 4, and on random values.
TEST(GpuChains, OnePlusErfWithinItsErrorBound) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(module_returning("x", "torch.erf(x) + 1.0"), tftest::quiet_options(1));
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto x = torch::cat({torch::linspace(-6.0, 6.0, 1 << 20, opts), torch::randn({1 << 16}, opts) * 2.0});
  const auto out = c.forward({x}).toTensor();
  ASSERT_EQ(c.kernels().size(), 1u);
  ASSERT_NE(c.kernels()[0].source.find("= tf_one_plus_erf("), std::string::npos) << c.kernels()[0].source;
  const auto exact = torch::erf(x.to(torch::kDouble)) + 1.0;
  const double err = (out.to(torch::kDouble) - exact).abs().max().item<double>();
  const double eager_err = ((torch::erf(x) + 1.0).to(torch::kDouble) - exact).abs().max().item<double>();
  EXPECT_LT(err, 4e-7) << "eager's float error: " << eager_err;
  EXPECT_GT(err, 0.0);  // the sweep reaches values the float result cannot hold exactly
  // 16-bit results (tf_one_plus_erf_16): within one ulp of the exact value (rounding takes half)
  // wherever it is at least 2^-7, and within 2^-7 ulps' worth below.
  for (auto dtype : {c10::kHalf, c10::kBFloat16}) {
    const auto x16 = x.to(dtype);
    auto c16 = torchfuse::compile(module_returning("x", "torch.erf(x) + 1.0"), tftest::quiet_options(1));
    const auto out16 = c16.forward({x16}).toTensor().to(torch::kDouble);
    ASSERT_NE(c16.kernels().at(0).source.find("tf_one_plus_erf_16("), std::string::npos);
    const auto exact16 = torch::erf(x16.to(torch::kDouble)) + 1.0;
    const double ulp = dtype == c10::kHalf ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    const double rel = ((out16 - exact16).abs() / exact16.abs().clamp_min(std::ldexp(1.0, -7))).max().item<double>();
    EXPECT_LE(rel, ulp) << c10::toString(dtype);
  }
}

TEST(GpuChains, OneKernelForTheSuiteElementwiseCases) {
  REQUIRE_GPU();
  for (const auto& c : chains()) {
    if (c.name != "gelu_tanh" && c.name != "bias_gelu_erf") continue;
    auto m = module_from(c.source);
    auto compiled = torchfuse::compile(m);
    const auto in = c.inputs(c10::kFloat);
    compiled.forward(in);
    EXPECT_EQ(tftest::fusion_nodes(compiled.graph_for(in)), 1) << compiled.graph_for(in);
    EXPECT_EQ(compiled.graph_for(in).find("aten::"), std::string::npos) << compiled.graph_for(in);
  }
}

TEST(GpuChains, HundredMillionElements) {
  REQUIRE_GPU();
  auto m = module_returning("x, b", "torch.gelu(x + b) * 0.5 + x");
  expect_matches_eager(m, [] { return std::vector<c10::IValue>{rnd({100000, 1000}, c10::kFloat), rnd({1000}, c10::kFloat)}; },
                       1, "1e8 elements");
}

// kernels() lists what was compiled for the device: the kernel built for the profiled layout,
// then the variant a misaligned input of the same signature needed (no vector loads). Each is
// named by its own source (tf_<pattern>_<hash>): one pattern, two hashes.
TEST(GpuChains, KernelsAreTheOnesCompiledForTheDevice) {
  REQUIRE_GPU();
  auto m = module_returning("x", "torch.softmax(x * 2.0, dim=-1)");
  auto c = torchfuse::compile(m, poisoned());
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto aligned = torch::randn({64, 1024}, opts);
  const auto misaligned = torch::randn({64 * 1024 + 1}, opts).narrow(0, 1, 64 * 1024).view({64, 1024});
  ASSERT_TRUE(torchfuse::compare_with_eager(c, {aligned}).passed());
  ASSERT_EQ(c.kernels().size(), 1u);
  EXPECT_NE(c.kernels()[0].source.find("vector width 4"), std::string::npos) << c.kernels()[0].source;
  const auto report = torchfuse::compare_with_eager(c, {misaligned});
  EXPECT_TRUE(report.passed()) << report.to_string();
  EXPECT_EQ(c.stats().specializations, 1);
  const auto kernels = c.kernels();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_NE(kernels[0].name, kernels[1].name);
  EXPECT_EQ(kernels[0].name.rfind("tf_softmax_", 0), 0u) << kernels[0].name;
  EXPECT_EQ(kernels[1].name.rfind("tf_softmax_", 0), 0u) << kernels[1].name;
  EXPECT_NE(kernels[0].source.find("vector width 4"), std::string::npos);
  EXPECT_NE(kernels[1].source.find("vector width 1"), std::string::npos) << kernels[1].source;
}

TEST(GpuChains, MoreThanTwoToTheThirtyOneElements) {
  REQUIRE_GPU();
  const int64_t n = (int64_t{1} << 31) + 4099;  // odd tail: not a multiple of any vector width
  auto m = module_returning("x", "x * 2.0 + 1.0");
  auto c = torchfuse::compile(m, poisoned());
  auto x = torch::rand({n}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kHalf));
  c.forward({x});
  x.uniform_(-1, 1);
  const auto out = c.forward({x}).toTensor();
  torch::cuda::synchronize();
  ASSERT_EQ(c.kernels().size(), 1u);
  EXPECT_NE(c.kernels()[0].source.find("typedef long long tf_index;"), std::string::npos);
  EXPECT_EQ(c.stats().fused_calls, 2);
  // Chunked comparison against eager: the whole tensor in double would not fit.
  const int64_t chunk = int64_t{1} << 28;
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t len = std::min(chunk, n - start);
    const auto expected = x.narrow(0, start, len) * 2.0 + 1.0;
    const auto report = torchfuse::compare_outputs(expected, out.narrow(0, start, len));
    ASSERT_TRUE(report.passed()) << "chunk at " << start << "\n" << report.to_string();
  }
}

TEST(GpuRuntime, NewShapesAndDtypesStayCorrect) {
  REQUIRE_GPU();
  auto m = module_returning("x, b", "torch.sigmoid(x + b) * x");
  auto c = torchfuse::compile(m, poisoned());
  for (auto [rows, dtype] : std::vector<std::pair<int64_t, c10::ScalarType>>{
           {8, c10::kFloat}, {33, c10::kFloat}, {8, c10::kHalf}, {1, c10::kBFloat16}, {8, c10::kFloat}}) {
    const auto x = rnd({rows, 40}, dtype);
    const auto b = rnd({40}, dtype);
    c.forward({x, b});
    const auto report = torchfuse::compare_outputs(c.forward_eager({x, b}), c.forward({x, b}));
    EXPECT_TRUE(report.passed()) << rows << " " << dtype << "\n" << report.to_string();
  }
  // Guards are by class: 8 and 33 rows of f32 share one specialization; f16, and bf16 with a
  // size-1 dim, each get their own.
  EXPECT_EQ(c.stats().specializations, 3);
}

TEST(GpuRuntime, MixedDevicesAreAClearError) {
  REQUIRE_GPU();
  auto m = module_returning("x, y", "torch.relu(x) * y");
  auto c = torchfuse::compile(m);
  EXPECT_THROW(c.forward({rnd({4, 4}, c10::kFloat), torch::randn({4, 4})}), std::exception);
}

}  // namespace

namespace {

TEST(GpuGuards, TwentyBatchSizesReuseTheKernels) {
  REQUIRE_GPU();
  auto m = module_from(R"JIT(
def forward(self, x, w, b):
    h = torch.layer_norm(x, [256], w, b, 1e-5)
    return torch.softmax(torch.gelu(h) * 2.0, -1) + x.mean(0)
)JIT");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto w = rnd({256}, c10::kFloat);
  const auto b = rnd({256}, c10::kFloat);
  for (int64_t batch = 2; batch < 22; ++batch) {
    const auto x = rnd({batch * 7, 256}, c10::kFloat);
    const auto report = torchfuse::compare_with_eager(c, {x, w, b});
    ASSERT_TRUE(report.passed()) << "batch " << batch << "\n" << report.to_string();
  }
  const auto s = c.stats();
  EXPECT_EQ(s.specializations, 1);
  EXPECT_EQ(s.eager_calls, 0);
  // Three groups (layer norm + gelu + softmax rows, the column mean, the final add); a kernel source
  // per group and compile-time layout: a handful at most, however many batch sizes.
  const int groups = tftest::count_occurrences(c.graph_for({rnd({14, 256}, c10::kFloat), w, b}), "torchfuse::FusionGroup");
  EXPECT_GE(groups, 2);
  EXPECT_LE(s.kernel_variants, 2 * groups) << "kernel variants " << s.kernel_variants;
  EXPECT_LE(s.kernels_compiled, s.kernel_variants + groups);
  std::cout << "20 batch sizes: specializations " << s.specializations << ", kernel sources " << s.kernel_variants
            << ", NVRTC compilations " << s.kernels_compiled << ", cache hits " << s.kernel_cache_hits << "\n";
}

TEST(GpuGuards, ABroadcastDimRecompilesAndSaysWhy) {
  REQUIRE_GPU();
  auto o = tftest::quiet_options();
  o.logs = "recompiles";
  auto c = torchfuse::compile(module_returning("x, y", "torch.relu(x * y) + 1.0"), o);
  testing::internal::CaptureStderr();
  c.forward({rnd({8, 16}, c10::kFloat), rnd({8, 16}, c10::kFloat)});
  c.forward({rnd({8, 16}, c10::kFloat), rnd({1, 16}, c10::kFloat)});
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("recompiles: specialization #1: input 1"), std::string::npos) << log;
  EXPECT_EQ(c.stats().specializations, 2);
}

TEST(GpuGuards, NormalizedShapeMismatchIsAnError) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(module_returning("x", "torch.layer_norm(x, [64])"));
  c.forward({rnd({8, 64}, c10::kFloat)});
  EXPECT_THROW(c.forward({rnd({8, 32}, c10::kFloat)}), std::exception);
}

}  // namespace

namespace {

// Graphs of scripted functions (what a Python user's torch.jit.script(fn).graph holds): inlined
// F.silu's constant branch and ListConstruct reduction dims fold, each graph runs as one kernel.
TEST(GpuApi, ScriptedFunctionGraphsMatchEager) {
  REQUIRE_GPU();
  for (const char* name : {"swiglu", "softmax"}) {
    for (auto dtype : {c10::kFloat, c10::kBFloat16}) {
      SCOPED_TRACE(std::string(name) + " " + c10::toString(dtype));
      auto c = torchfuse::compile_graph(tftest::scripted_function_graph(name));
      auto inputs = [&] {
        std::vector<c10::IValue> in{rnd({96, 1000}, dtype)};
        if (std::string(name) == "swiglu") in.emplace_back(rnd({96, 1000}, dtype));
        return in;
      };
      c.forward(inputs());
      const auto before = c.stats();
      const auto report = torchfuse::compare_with_eager(c, inputs());
      EXPECT_TRUE(report.passed()) << report.to_string();
      const auto after = c.stats();
      EXPECT_EQ(after.fused_calls - before.fused_calls, 1);
      EXPECT_EQ(after.kernel_launches - before.kernel_launches, 1);
    }
  }
}

}  // namespace
