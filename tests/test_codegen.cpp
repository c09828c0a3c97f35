// Codegen: the source builder, literals, layouts, and every generated kernel through NVRTC for
// sm_90 (no GPU needed).
#include <algorithm>
#include <map>
#include <random>
#include <sstream>

#include "codegen/cuda_types.h"
#include "codegen/layout.h"
#include "codegen/nvrtc.h"
#include "codegen/source_builder.h"
#include "codegen/tuning.h"
#include "runtime/process_tuning.h"
#include "tests/test_util.h"

using tftest::contains_in_order;
using tftest::module_from;
using tftest::module_returning;

namespace {

namespace cg = torchfuse::codegen;

TEST(SourceBuilder, IndentsScopesAndNamesDeterministically) {
  cg::SourceBuilder b;
  b.line("int f() {");
  {
    auto s = b.scope("if (x)");
    const std::string first = b.fresh("t");
    const std::string second = b.fresh("t");
    b.line("return " + first + " + " + second + ";");
  }
  EXPECT_EQ(b.str(), "int f() {\nif (x) {\n  return t0 + t1;\n}\n");
  EXPECT_EQ(b.fresh("u"), "u0");
}

TEST(Literals, ExactAndLocaleIndependent) {
  EXPECT_EQ(cg::literal(c10::Scalar(0.1), c10::kFloat), "0.1f");
  EXPECT_EQ(cg::literal(c10::Scalar(0.1), c10::kDouble), "0.1");
  // The shortest text that reads back to the same float.
  EXPECT_EQ(cg::literal(c10::Scalar(0.79788456), c10::kFloat), "0.7978846f");
  EXPECT_EQ(std::stof("0.7978846"), static_cast<float>(0.79788456));
  EXPECT_EQ(cg::literal(c10::Scalar(1e-5), c10::kHalf), "1e-05f");
  EXPECT_EQ(cg::literal(c10::Scalar(2.0), c10::kFloat), "2.0f");
  EXPECT_EQ(cg::literal(c10::Scalar(int64_t{3}), c10::kLong), "3LL");
  EXPECT_EQ(cg::literal(c10::Scalar(std::numeric_limits<double>::infinity()), c10::kFloat),
            "__int_as_float(0x7f800000)");
  std::setlocale(LC_NUMERIC, "de_DE.UTF-8");  // a decimal comma locale, if installed
  EXPECT_EQ(cg::literal(c10::Scalar(0.5), c10::kFloat), "0.5f");
  std::setlocale(LC_NUMERIC, "C");
}

cg::OperandShape tensor(c10::ScalarType t, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  cg::OperandShape s;
  s.dtype = t;
  s.sizes = std::move(sizes);
  s.strides = std::move(strides);
  return s;
}

TEST(Layout, ContiguousCoalescesToOneDim) {
  auto l = cg::plan_pointwise_layout({64, 32, 8}, {tensor(c10::kFloat, {64, 32, 8}, {256, 8, 1})}, {c10::kFloat}, 1 << 22, cg::Tuning{});
  EXPECT_EQ(l.sizes, (std::vector<int64_t>{16384}));
  EXPECT_EQ(l.inputs[0].access, cg::Access::Linear);
  EXPECT_EQ(l.vec, 4);
  EXPECT_FALSE(l.index64);
}

TEST(Layout, BiasIsInnerContiguousAndRowVectorInnerBroadcast) {
  auto l = cg::plan_pointwise_layout({64, 32},
                                     {tensor(c10::kBFloat16, {64, 32}, {32, 1}), tensor(c10::kBFloat16, {32}, {1}),
                                      tensor(c10::kBFloat16, {64, 1}, {1, 1}), tensor(c10::kFloat, {}, {})},
                                     {c10::kBFloat16}, 1 << 22, cg::Tuning{});
  EXPECT_EQ(l.sizes, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(l.inputs[0].access, cg::Access::Linear);
  EXPECT_EQ(l.inputs[1].access, cg::Access::InnerContig);
  EXPECT_EQ(l.inputs[1].strides, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(l.inputs[2].access, cg::Access::InnerBroadcast);
  EXPECT_EQ(l.inputs[3].access, cg::Access::Uniform);
  EXPECT_EQ(l.vec, 8);
}

TEST(Layout, TransposedInputIsStridedAndHugeNeeds64Bit) {
  auto l = cg::plan_pointwise_layout({16, 8}, {tensor(c10::kFloat, {16, 8}, {1, 16})}, {c10::kFloat}, 1 << 22, cg::Tuning{});
  EXPECT_EQ(l.inputs[0].access, cg::Access::Strided);
  auto big = cg::plan_pointwise_layout({int64_t{1} << 31}, {tensor(c10::kHalf, {int64_t{1} << 31}, {1})}, {c10::kHalf},
                                       1 << 22, cg::Tuning{});
  EXPECT_TRUE(big.index64);
  EXPECT_NE(big.key(), l.key());
}

TEST(Nvrtc, FailureCarriesLogAndSource) {
  cg::GeneratedKernel k;
  k.name = "broken";
  k.source = "extern \"C\" __global__ void broken() { this is not cuda; }\n";
  try {
    cg::compile_to_cubin(k, "sm_90");
    FAIL() << "NVRTC accepted broken source";
  } catch (const torchfuse::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("NVRTC log"), std::string::npos) << msg;
    EXPECT_NE(msg.find("this is not cuda"), std::string::npos) << msg;
    EXPECT_NE(msg.find("error"), std::string::npos) << msg;
  }
}

// Every kernel the pointwise schedule generates for these graphs compiles for sm_90.
struct KernelCase {
  std::string name;
  std::string args;
  std::string expr;
  std::vector<torch::Tensor> inputs;
};

std::vector<KernelCase> kernel_cases() {
  const auto f = [](std::vector<int64_t> s, c10::ScalarType t = c10::kFloat) { return torch::randn(s).to(t); };
  return {
      {"gelu_tanh", "x", "0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))", {f({64, 64})}},
      {"bias_gelu_erf", "x, b", "(x + b) * 0.5 * (1.0 + torch.erf((x + b) * 0.7071067811865476))", {f({64, 64}), f({64})}},
      {"bf16_chain", "x, y", "torch.sigmoid(x) * y + torch.tanh(y)", {f({8, 64}, c10::kBFloat16), f({8, 64}, c10::kBFloat16)}},
      {"half_to_float", "x", "x.float() * 2.0 + 1.0", {f({8, 64}, c10::kHalf)}},
      {"transposed", "x, y", "torch.relu(x.t() * y)", {f({32, 16}), f({16, 32})}},
      {"row_broadcast", "x, r", "torch.exp(x - r) / 2.0", {f({16, 32}), f({16, 1})}},
      {"compare_where", "x, y", "torch.where(x > y, x * 2.0, y - 1.0)", {f({100}), f({100})}},
      {"int_math", "i, x", "(i * 3 + 1) * x", {torch::arange(64).reshape({8, 8}), f({8, 8})}},
      {"double", "x", "torch.erf(x) * 2.0 + torch.sqrt(torch.abs(x))", {f({8, 8}, c10::kDouble)}},
      {"pow_clamp_div", "x, y", "torch.clamp(x.pow(3) / (y * y + 1.0), -2.0, 2.0) ** 0.5", {f({64}), f({64})}},
      {"floor_trunc", "x, y", "torch.div(x, y + 3.0, rounding_mode='floor') + torch.div(x, 3.0, rounding_mode='trunc')",
       {f({64}), f({64})}},
      {"logic", "x, y", "torch.logical_and(x > 0, y < 0).float() + torch.maximum(x, y)", {f({64}), f({64})}},
      {"silu_mul", "a, b", "torch.silu(a) * b", {f({32, 32}, c10::kBFloat16), f({32, 32}, c10::kBFloat16)}},
      {"scalar_tensor", "x, s", "x * s + s", {f({16, 16}), f({})}},
  };
}

TEST(NvrtcCompilesEveryKernel, ForSm90) {
  for (const auto& c : kernel_cases()) {
    SCOPED_TRACE(c.name);
    auto m = module_returning(c.args, c.expr);
    std::vector<c10::IValue> in(c.inputs.begin(), c.inputs.end());
    const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in, /*compile_kernels=*/true);
    ASSERT_GE(e.kernels.size(), 1u) << e.ir_after;
    ASSERT_EQ(e.cubin_bytes.size(), e.kernels.size());
    for (size_t i = 0; i < e.kernels.size(); ++i) {
      EXPECT_GT(e.cubin_bytes[i], 0u);
      EXPECT_TRUE(contains_in_order(e.kernels[i].source, {"// torchfuse fusion group", "_compute(", "  // %",
                                                          "extern \"C\" __global__"}));
    }
  }
}

TEST(Codegen, HalfAndBf16StayInStorageTypeWithFloatMath) {
  auto m = module_returning("x, y", "torch.sigmoid(x) * y");
  const auto x = torch::randn({8, 64}).to(c10::kBFloat16);
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain({x, x});
  ASSERT_EQ(e.kernels.size(), 1u);
  EXPECT_TRUE(contains_in_order(e.kernels[0].source,
                                {"const tf_bf16* in0;", "float t0 = tf_sigmoid_fast(in0);", "tf_vec<tf_bf16, 8>",
                                 "const tf_vec<tf_bf16, 8> o0 = tf_pack<tf_bf16>(r0);", "tf_float_to_bf16(r0)"}));
}

// A fused chain keeps fp16/bf16 values in float registers. A value eager stores in 16 bits (an
// ATen op's result, not a composite's intermediate) is rounded where it is made when a
// discontinuous op (comparison, floor division, cast to an integer) reads it or a value computed
// from it; an fp16 one that is not becomes inf beyond fp16's range, as eager's would.
TEST(Codegen, SixteenBitValuesRoundWhereEagerWouldDecideOtherwise) {
  struct Case {
    c10::ScalarType dtype;
    const char* expr;
    std::vector<std::string> rounded, ranged;  // op names, sorted
  };
  const Case cases[] = {
      // |x| + 1 and its log reach the comparison; abs is exact; the product does not.
      {c10::kBFloat16, "torch.where(torch.log(torch.abs(x) + 1.0) > 0.1, x * 2.0, x)", {"add", "log"}, {}},
      // (fp16 takes ops LibTorch 1.13 has CPU kernels for: explain() profiles the graph there.)
      {c10::kHalf, "torch.where(torch.abs(x) * 3.0 + 1.0 > 1.5, x * 2.0, x)", {"add", "mul"}, {"mul"}},
      // Nothing discontinuous: layer norm's internals and results stay unrounded.
      {c10::kBFloat16, "torch.layer_norm(x * 2.0, [64]) + 1.0", {}, {}},
      // An explicit cast to the value's own dtype: eager's identity, a rounding in the reference.
      {c10::kBFloat16, "torch.exp(x).to(15) * 3.0 + x", {"exp"}, {}},
      {c10::kHalf, "x * x * x + 1.0", {}, {"add", "mul", "mul"}},
      {c10::kHalf, "(x * x).int()", {"mul"}, {}},
      // Per-row results round always (few values; a cancelling difference shows their rounding):
      // the mean's scaling, not the per-element difference.
      {c10::kBFloat16, "x - x.mean(-1, keepdim=True)", {"div"}, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.expr) + " " + c10::toString(c.dtype));
    const std::string round = c.dtype == c10::kHalf ? "tf_round_half(" : "tf_round_bf16(";
    auto m = module_returning("x", c.expr);
    const auto e = torchfuse::compile(m, tftest::quiet_options()).explain({torch::randn({8, 64}).to(c.dtype)});
    ASSERT_EQ(e.kernels.size(), 1u);
    const std::string& src = e.kernels[0].source;
    // Each IR statement once (a pass may compute a value again): how does its line end up?
    std::map<std::string, std::string> how;
    std::istringstream lines(src.substr(src.find("// torchfuse fusion group")));
    for (std::string line; std::getline(lines, line);) {
      const size_t c0 = line.find("  // %");
      const size_t eq = c0 == std::string::npos ? c0 : line.find(" = ", c0);
      if (eq == std::string::npos || line.find(" = ") > c0) continue;
      const std::string code = line.substr(0, c0);
      how[line.substr(c0 + 5)] = code.find(round) != std::string::npos      ? "round"
                                 : code.find("tf_half_range(") != std::string::npos ? "range"
                                                                                    : "plain";
    }
    std::vector<std::string> rounded, ranged;
    for (const auto& [ir, h] : how) {
      const std::string op = ir.substr(ir.find(" = ") + 3);
      if (h == "round") rounded.push_back(op.substr(0, op.find('(')));
      if (h == "range") ranged.push_back(op.substr(0, op.find('(')));
    }
    std::sort(rounded.begin(), rounded.end());
    std::sort(ranged.begin(), ranged.end());
    EXPECT_EQ(rounded, c.rounded) << src;
    EXPECT_EQ(ranged, c.ranged) << src;
  }
}

// Fast math: exp, sigmoid and SiLU take their ex2/rcp forms only where eager rounds the result to
// 16 bits; 1 + tanh(u), 1 + erf(u) and both GELUs take theirs in every float dtype (1 + erf and
// the exact GELU a shorter one where the result is 16-bit); fast_math=0 turns all of them off.
// Every kernel compiles through NVRTC.
TEST(Codegen, FastMathWhereEagerRoundsTo16Bits) {
  struct Case {
    const char* expr;
    c10::ScalarType dtype;
    const char* expect;  // in the source
    const char* absent;  // not in the source
  };
  const Case cases[] = {
      {"torch.sigmoid(x) * x", c10::kFloat, "= tf_sigmoid(", "_fast("},
      {"torch.sigmoid(x) * x", c10::kBFloat16, "= tf_sigmoid_fast(", "= tf_sigmoid("},
      {"torch.exp(x) * 2.0", c10::kFloat, "= expf(", "_fast("},
      {"torch.exp(x) * 2.0", c10::kBFloat16, "= tf_exp_fast(", "expf("},
      {"torch.silu(x) * x", c10::kBFloat16, "= tf_silu_fast(", "= tf_silu("},
      {"torch.silu(x) * x", c10::kFloat, "= tf_silu(", "_fast("},
      {"0.5 * x * (1 + torch.tanh(0.8 * x))", c10::kFloat, "= tf_one_plus_tanh(", "+ 1.0f)"},
      {"0.5 * x * (torch.tanh(0.8 * x) + 1.0)", c10::kBFloat16, "= tf_one_plus_tanh(", "+ 1.0f)"},
      {"x * (torch.tanh(x) + 2.0)", c10::kFloat, "+ 2.0f)", "tf_one_plus_tanh("},
      {"x * 0.5 * (1.0 + torch.erf(x * 0.7071067811865476))", c10::kFloat, "= tf_one_plus_erf(", "_16("},
      {"x * 0.5 * (torch.erf(x * 0.7071067811865476) + 1)", c10::kBFloat16, "= tf_one_plus_erf_16(", "+ 1.0f)"},
      {"torch.erf(x) * 2.0 + 1.0", c10::kFloat, "= erff(", "tf_one_plus_erf("},
      {"torch.gelu(x) * 2.0", c10::kFloat, "= tf_gelu_fast(", "= tf_gelu("},
      {"torch.gelu(x) * 2.0", c10::kBFloat16, "= tf_gelu_fast_16(", "= tf_gelu("},
      {"torch.gelu(x, approximate='tanh') * 2.0", c10::kBFloat16, "= tf_gelu_tanh_fast(", "= tf_gelu_tanh("},
  };
  const auto options = tftest::quiet_options(1);
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.expr) + " " + c10::toString(c.dtype));
    const std::vector<c10::IValue> in{torch::randn({8, 64}).to(c.dtype)};
    const auto fast = torchfuse::compile(module_returning("x", c.expr), options).explain(in, /*compile_kernels=*/true);
    ASSERT_EQ(fast.kernels.size(), 1u);
    // The generated part (the prelude defines every helper).
    auto body = [](const std::string& source) { return source.substr(source.find("_compute(")); };
    const std::string& src = fast.kernels[0].source;
    EXPECT_NE(body(src).find(c.expect), std::string::npos) << src;
    EXPECT_EQ(body(src).find(c.absent), std::string::npos) << src;
    ASSERT_EQ(fast.cubin_bytes.size(), 1u);
    EXPECT_GT(fast.cubin_bytes[0], 0u) << src;

    torchfuse::runtime::ScopedTuning off(torchfuse::codegen::parse_tuning("fast_math=0"));
    const auto plain = torchfuse::compile(module_returning("x", c.expr), options).explain(in);
    ASSERT_EQ(plain.kernels.size(), 1u);
    EXPECT_EQ(body(plain.kernels[0].source).find("_fast("), std::string::npos) << plain.kernels[0].source;
    EXPECT_EQ(body(plain.kernels[0].source).find("tf_one_plus_"), std::string::npos) << plain.kernels[0].source;
  }
}

TEST(Codegen, SizesAreArgumentsNotConstants) {
  auto m = module_returning("x, b", "torch.relu(x + b) * 2.0");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto small = c.explain({torch::randn({8, 16}), torch::randn({16})});
  const auto large = c.explain({torch::randn({64, 48}), torch::randn({48})});
  ASSERT_EQ(small.kernels.size(), 1u);
  EXPECT_EQ(small.kernels[0].source, large.kernels[0].source);
  // Nowhere in the generated part (the prelude's constants may hold any digits).
  const std::string& src = small.kernels[0].source;
  const size_t generated = src.find("---- end of prelude ----");
  ASSERT_NE(generated, std::string::npos) << src;
  EXPECT_EQ(src.find("48", generated), std::string::npos) << src.substr(generated);
}

// tf_fast_div's arithmetic, on the host: (umulhi(n, m) + n) >> s must be n / d for every
// 0 <= n < 2^31. Checked at the edges (multiples of d and their neighbours, the largest n) and
// on random n, for small divisors, powers of two and their neighbours, and random divisors.
TEST(FastDivider, MatchesIntegerDivision) {
  auto divide = [](uint32_t n, uint64_t packed) {
    const uint64_t m = packed >> 32, s = packed & 63u;
    const uint64_t hi = (uint64_t{n} * m) >> 32;
    return static_cast<uint32_t>((hi + n) >> s);
  };
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= 4100; ++d) divisors.push_back(d);
  for (int e = 12; e < 31; ++e) {
    for (int64_t d : {(int64_t{1} << e) - 1, int64_t{1} << e, (int64_t{1} << e) + 1}) divisors.push_back(d);
  }
  divisors.push_back(50257);
  divisors.push_back((int64_t{1} << 31) - 1);
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any(0, 0x7fffffffu);
  for (int i = 0; i < 2000; ++i) divisors.push_back(std::max<uint32_t>(1, any(rng)));
  for (int64_t d : divisors) {
    const uint64_t packed = cg::fast_divider(d);
    std::vector<uint32_t> ns = {0, 1, 0x7fffffffu, 0x7ffffffeu};
    for (uint32_t k : {1u, 2u, 3u, 1000u, 0x7fffffffu / static_cast<uint32_t>(d)}) {
      const uint64_t multiple = uint64_t{k} * static_cast<uint64_t>(d);
      if (multiple > 0x7fffffffu) continue;
      ns.push_back(static_cast<uint32_t>(multiple));
      ns.push_back(static_cast<uint32_t>(multiple - 1));
      if (multiple < 0x7fffffffu) ns.push_back(static_cast<uint32_t>(multiple + 1));
    }
    for (int i = 0; i < 64; ++i) ns.push_back(any(rng));
    for (uint32_t n : ns) {
      ASSERT_EQ(divide(n, packed), n / static_cast<uint32_t>(d)) << "n = " << n << ", d = " << d;
    }
  }
}

TEST(FastDivider, BroadcastIndexUsesIt) {
  auto m = module_returning("x, b", "torch.relu(x + b) * 2.0");
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain({torch::randn({8, 16}), torch::randn({16})});
  ASSERT_EQ(e.kernels.size(), 1u);
  EXPECT_TRUE(contains_in_order(e.kernels[0].source, {"unsigned long long size_div[2];", "tf_fast_div((unsigned)rem, p.size_div[1])"}))
      << e.kernels[0].source;
}

}  // namespace
