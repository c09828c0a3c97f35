// The attention rewrite on the GPU: every spelling the rewrite takes, against eager (and its
// float64 reference) in fp32, fp16 and bf16, with additive and boolean masks, fully masked rows,
// odd sizes, and the compiled module's CUDA graphs; calls timing ATen's pick against flash
// attention and torchfuse's kernel (attention_autotune), also a shape first seen while a CUDA
// graph captures; torchfuse's attention kernel called directly.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>

#include <ATen/core/dispatch/Dispatcher.h>

#include "runtime/attention_backends.h"
#include "runtime/attention_kernel.h"
#include "runtime/driver_api.h"
#include "runtime/gemm_autotune.h"
#include "runtime/graph_capture.h"
#include "tests/test_util.h"

namespace {

struct Case {
  const char* name;
  const char* source;
  bool mask;       // a 4th input: the additive mask (dtype of q) or a boolean one
  bool bool_mask;
  int64_t kv_groups = 1;  // query heads per key/value head (the inputs' key and value have fewer)
};

const Case kCases[] = {
    {"additive_mask", R"(
def forward(self, q, k, v, mask):
    s = torch.matmul(q, k.transpose(-2, -1)) * 0.125
    p = torch.softmax(s + mask, dim=-1)
    return torch.matmul(torch.dropout(p, 0.1, False), v)
)",
     true, false},
    {"hf_float_softmax", R"(
def forward(self, q, k, v, mask):
    w = torch.matmul(q, k.transpose(2, 3)) * 0.125
    w = w + mask
    w = torch.softmax(w, dim=-1, dtype=6).to(q.dtype)
    return torch.matmul(w, v)
)",
     true, false},
    {"div_sqrt_no_mask", R"(
def forward(self, q, k, v):
    s = torch.matmul(q, k.transpose(-2, -1)) / 8.0
    return torch.matmul(torch.softmax(s, -1), v)
)",
     false, false},
    {"masked_fill_inf", R"(
def forward(self, q, k, v, excluded):
    s = torch.matmul(q, k.permute(0, 1, 3, 2)) * 0.125
    s = s.masked_fill(excluded, float("-inf"))
    return torch.matmul(torch.softmax(s, -1), v)
)",
     true, true},
    {"where_kept", R"(
def forward(self, q, k, v, kept):
    s = torch.matmul(q * 0.125, k.transpose(-2, -1))
    s = torch.where(kept, s, float("-inf"))
    return torch.matmul(torch.softmax(s, -1), v)
)",
     true, true},
    {"grouped_heads", R"(
def forward(self, q, k, v, mask):
    b, kh, s, d = k.size(0), k.size(1), k.size(2), k.size(3)
    k = k.unsqueeze(2).expand(b, kh, 2, s, d).reshape(b, kh * 2, s, d)
    v = v.unsqueeze(2).expand(b, kh, 2, s, d).reshape(b, kh * 2, s, d)
    w = torch.matmul(q, k.transpose(2, 3)) * 0.125
    w = torch.softmax(w + mask, dim=-1, dtype=6).to(q.dtype)
    return torch.matmul(w, v)
)",
     true, false, 2},
    {"rotated_query_heads_merged", R"(
def forward(self, q, k, v):
    d = q.size(-1) // 2
    q = q * 0.75 + torch.cat((-q[..., d:], q[..., :d]), dim=-1) * 0.5
    o = torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.125, -1), v)
    return o.transpose(1, 2).contiguous()
)",
     false, false},
};

std::vector<c10::IValue> inputs_for(const Case& c, c10::ScalarType dt, int64_t b, int64_t h, int64_t l, int64_t s,
                                    int64_t e, bool fully_masked_row) {
  const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dt);
  std::vector<c10::IValue> in{torch::randn({b, h * c.kv_groups, l, e}, o), torch::randn({b, h, s, e}, o),
                              torch::randn({b, h, s, e}, o)};
  if (!c.mask) return in;
  if (c.bool_mask) {
    at::Tensor m = torch::rand({b, 1, l, s}, o.dtype(torch::kFloat)) > 0.3;  // true: kept (where) or excluded (fill)
    const bool kept = std::string(c.name) == "where_kept";
    if (fully_masked_row) m.index_put_({0, 0, l / 2}, !kept);
    in.push_back(m);
    return in;
  }
  at::Tensor m = torch::randn({b, 1, 1, s}, o) * 2;  // a padding-style mask, broadcast over rows
  if (fully_masked_row) {
    m = m.expand({b, 1, l, s}).contiguous();
    m.index_put_({0, 0, l / 2}, -std::numeric_limits<float>::infinity());
  }
  in.push_back(m);
  return in;
}

std::string dtype_name(c10::ScalarType dt) { return c10::toString(dt); }

TEST(AttentionGpu, EveryRewriteMatchesEager) {
  REQUIRE_GPU();
  torch::manual_seed(0);
  for (const Case& c : kCases) {
    for (c10::ScalarType dt : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      // (batch, heads, queries, keys, head dim): flash-friendly and odd shapes.
      for (auto [b, h, l, s, e] : {std::array<int64_t, 5>{2, 4, 128, 128, 64}, {3, 5, 37, 53, 64}, {1, 2, 1, 77, 80}}) {
        auto m = tftest::module_from(c.source);
        torchfuse::CompiledModule compiled = torchfuse::compile(m, tftest::quiet_options(2));
        const auto in = inputs_for(c, dt, b, h, l, s, e, false);
        const std::string where = std::string(c.name) + " " + dtype_name(dt) + " " + std::to_string(l) + "x" + std::to_string(s);
        const auto explanation = compiled.explain(in);
        ASSERT_EQ(explanation.rewrites.size(), 1u) << where << "\n" << tftest::joined(explanation.refused);
        if (c.kv_groups > 1) EXPECT_NE(explanation.rewrites[0].find("grouped heads"), std::string::npos) << where;
        const auto report = torchfuse::compare_with_eager(compiled, in);
        EXPECT_TRUE(report.passed()) << where << "\n" << report.to_string();
      }
    }
  }
}

// Rows whose every position is masked out: eager's softmax makes them NaN, and so must the call.
TEST(AttentionGpu, FullyMaskedRowsAreNanAsInEager) {
  REQUIRE_GPU();
  torch::manual_seed(1);
  for (const Case& c : kCases) {
    if (!c.mask) continue;
    for (c10::ScalarType dt : {c10::kFloat, c10::kBFloat16}) {
      auto m = tftest::module_from(c.source);
      torchfuse::CompiledModule compiled = torchfuse::compile(m, tftest::quiet_options(2));
      const auto in = inputs_for(c, dt, 2, 4, 64, 64, 64, true);
      const std::string where = std::string(c.name) + " " + dtype_name(dt);
      const at::Tensor eager = m.forward(in).toTensor();
      const at::Tensor fused = compiled.forward(in).toTensor();
      ASSERT_EQ(compiled.explain(in).rewrites.size(), 1u) << where;
      ASSERT_TRUE(eager.isnan().any().item<bool>()) << where << ": the case lost its fully masked row";
      EXPECT_TRUE(torch::equal(eager.isnan(), fused.isnan())) << where;
      const auto report = torchfuse::compare_with_eager(compiled, in);
      EXPECT_TRUE(report.passed()) << where << "\n" << report.to_string();
    }
  }
}

// A causal mask built from the sizes and filled with -inf: a key holding a NaN makes its
// column of scores NaN, which eager's masked_fill leaves out of every earlier query's row. ATen's
// math (float32 with a head dim its fused kernels refuse, 65) adds its causal mask instead, and
// its rows came out NaN (fuzz seed 83, program 464): such calls run the math with masked_fill.
TEST(AttentionGpu, CausalRowsLeaveOutTheNaNKeysTheyMask) {
  REQUIRE_GPU();
  torch::manual_seed(3);
  const char* source = R"(
def forward(self, q, k, v):
    causal = torch.ones(q.size(-2), q.size(-2), dtype=11, device=q.device).triu(1)
    s = (torch.matmul(q, k.transpose(-2, -1)) * 0.125).masked_fill(causal, float('-inf'))
    return torch.matmul(torch.softmax(s, -1), v)
)";
  struct Shape {
    c10::ScalarType dt;
    int64_t e;
    bool math;  // ATen picks its math for it
  };
  for (const Shape& sh : {Shape{c10::kFloat, 65, true}, Shape{c10::kFloat, 64, false}, Shape{c10::kBFloat16, 64, false}}) {
    const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(sh.dt);
    const int64_t l = 48;
    at::Tensor q = torch::randn({2, 3, l, sh.e}, o), k = torch::randn({2, 3, l, sh.e}, o), v = torch::randn({2, 3, l, sh.e}, o);
    k.index_put_({0, 1, l - 5, 3}, std::numeric_limits<float>::quiet_NaN());
    const std::string where = dtype_name(sh.dt) + " head dim " + std::to_string(sh.e);
#if TORCHFUSE_HAVE_SDPA_GQA
    ASSERT_EQ(at::_fused_sdp_choice(q, k, v, c10::nullopt, 0.0, true, 0.125, false) == 0, sh.math) << where;
#endif
    auto m = tftest::module_from(source);
    torchfuse::CompiledModule compiled = torchfuse::compile(m, tftest::quiet_options(2));
    const std::vector<c10::IValue> in{q, k, v};
    const auto rewrites = compiled.explain(in).rewrites;  // the mask's sizes folded, then attention
    ASSERT_EQ(std::count_if(rewrites.begin(), rewrites.end(), [](const std::string& r) { return r.rfind("attention", 0) == 0; }), 1)
        << where << "\n" << tftest::joined(rewrites);
    const at::Tensor eager = m.forward(in).toTensor();
    const at::Tensor fused = compiled.forward(in).toTensor();
    // Rows after the NaN key read it: NaN; rows before it are finite.
    ASSERT_TRUE(eager.isnan().any().item<bool>()) << where;
    ASSERT_TRUE(eager.index({0, 1, torch::indexing::Slice(0, l - 5)}).isfinite().all().item<bool>()) << where;
    EXPECT_TRUE(torch::equal(eager.isnan(), fused.isnan())) << where;
    const auto report = torchfuse::compare_with_eager(compiled, in);
    EXPECT_TRUE(report.passed()) << where << "\n" << report.to_string();
  }
}

TEST(AttentionGpu, RunsUnderCudaGraphs) {
  REQUIRE_GPU();
  torch::manual_seed(2);
  auto m = tftest::module_from(kCases[1].source);
  torchfuse::CompileOptions o = tftest::quiet_options(2);
  torchfuse::CompiledModule plain = torchfuse::compile(m, o);
  o.cuda_graphs = true;
  torchfuse::CompiledModule graphed = torchfuse::compile(m, o);
  const auto in = inputs_for(kCases[1], c10::kBFloat16, 8, 12, 128, 128, 64, false);
  const at::Tensor want = plain.forward(in).toTensor();
  at::Tensor got;
  for (int i = 0; i < 5; ++i) got = graphed.forward(in).toTensor();
  EXPECT_GE(graphed.stats().cuda_graph_replays, 1);
  // The replay runs the very kernels the plain call runs.
  EXPECT_TRUE(torch::equal(got, want)) << (got.to(torch::kFloat) - want.to(torch::kFloat)).abs().max().item<float>();
  const auto report = torchfuse::compare_with_eager(plain, in);
  EXPECT_TRUE(report.passed()) << report.to_string();
}

// Operands narrowed out of wider rows (rows 133 elements apart, starting 2 in) or at an odd
// offset reach ATen's fused kernels as aligned copies: cuDNN attention read such a query wrong
// (fuzz seed 36, program 587); a query of one row a head whose row stride is 1 reaches them
// restrided. Every dtype, against eager and its float64 reference.
TEST(AttentionGpu, MisalignedOperandsMatchEager) {
  REQUIRE_GPU();
  torch::manual_seed(2);
  const char* source = R"(
def forward(self, x):
    return torch.matmul(torch.softmax(torch.matmul(x, torch.tanh(x).transpose(-2, -1)) * 0.125, -1), torch.sigmoid(x))
)";
  for (c10::ScalarType dt : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dt);
    const std::vector<std::pair<std::string, at::Tensor>> layouts = {
        {"narrowed", torch::randn({100, 3, 36, 133}, o).narrow(-1, 2, 128)},
        {"offset", torch::randn({2 * 4 * 64 * 64 + 3}, o).narrow(0, 3, 2 * 4 * 64 * 64).view({2, 4, 64, 64})},
        {"narrowed_64", torch::randn({2, 4, 77, 72}, o).narrow(-1, 1, 64)},
        // One row a head, transposed: its row stride is 1 (fuzz seed 41, program 290).
        {"one_row_transposed", torch::randn({5, 7, 1000, 1}, o).transpose(-1, -2)},
    };
    for (const auto& [name, x] : layouts) {
      const std::string where = name + " " + dtype_name(dt);
      auto m = tftest::module_from(source);
      torchfuse::CompiledModule compiled = torchfuse::compile(m, tftest::quiet_options(2));
      const std::vector<c10::IValue> in{x};
      ASSERT_EQ(compiled.explain(in).rewrites.size(), 1u) << where;
      for (int call = 0; call < 2; ++call) {
        const auto report = torchfuse::compare_with_eager(compiled, in);
        EXPECT_TRUE(report.passed()) << where << "\n" << report.to_string();
      }
    }
  }
}

// Empty operands (no batch, rows, keys or head dim) give eager's result: empty, or a value
// averaged over the keys where the head dim is 0. ATen's fused kernels reject or mishandle them
// (GPU fuzz seed 48: an undefined result).
TEST(AttentionGpu, EmptyOperandsMatchEager) {
  REQUIRE_GPU();
  torch::manual_seed(4);
  for (const Case& c : kCases) {
    for (c10::ScalarType dt : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      // (batch, heads, queries, keys, head dim)
      for (auto [b, h, l, s, e] : {std::array<int64_t, 5>{0, 2, 17, 17, 64}, {2, 3, 0, 19, 64}, {2, 3, 5, 0, 64}, {1, 2, 7, 9, 0}}) {
        const std::string where = std::string(c.name) + " " + dtype_name(dt) + " [" + std::to_string(b) + ", " +
                                  std::to_string(h) + ", " + std::to_string(l) + ", " + std::to_string(s) + ", " +
                                  std::to_string(e) + "]";
        auto m = tftest::module_from(c.source);
        torchfuse::CompiledModule compiled = torchfuse::compile(m, tftest::quiet_options(2));
        const auto in = inputs_for(c, dt, b, h, l, s, e, false);
        const auto report = torchfuse::compare_with_eager(compiled, in);
        EXPECT_TRUE(report.passed()) << where << "\n" << report.to_string();
      }
    }
  }
}

// Turning the rewrite off keeps eager's ops (the fused softmax still runs as one kernel).
TEST(AttentionGpu, OptionOffStillMatches) {
  REQUIRE_GPU();
  auto m = tftest::module_from(kCases[0].source);
  torchfuse::CompileOptions o = tftest::quiet_options(2);
  o.rewrite_attention = false;
  torchfuse::CompiledModule compiled = torchfuse::compile(m, o);
  const auto in = inputs_for(kCases[0], c10::kHalf, 2, 4, 128, 128, 64, false);
  EXPECT_TRUE(compiled.explain(in).rewrites.empty());
  EXPECT_TRUE(torchfuse::compare_with_eager(compiled, in).passed());
}

// torchfuse::attention as the rewritten graph calls it with timed=True (the mask prepared), or
// untimed.
at::Tensor timed_call(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const c10::optional<at::Tensor>& mask,
                      double scale, bool is_causal, bool enable_gqa = false, bool timed = true) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchfuse::attention", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                               const c10::optional<at::Tensor>&, double, bool, bool, bool, int64_t, bool)>();
  return op.call(q, k, v, mask, scale, is_causal, /*mask_prepared=*/true, enable_gqa, /*mask_kind=*/0, timed);
}

// softmax(q k^T * scale + mask (+ causal)) v in float64; key and value heads repeated to the query's.
at::Tensor masked_reference(const at::Tensor& q, const at::Tensor& key, const at::Tensor& value,
                            const c10::optional<at::Tensor>& mask, double scale, bool is_causal) {
  const int64_t groups = q.size(1) / key.size(1);
  const at::Tensor k = key.repeat_interleave(groups, 1), v = value.repeat_interleave(groups, 1);
  at::Tensor s = torch::matmul(q.to(torch::kDouble), k.to(torch::kDouble).transpose(-2, -1)) * scale;
  if (mask) s = s + mask->to(torch::kDouble);
  if (is_causal) {
    const at::Tensor keep = torch::ones({q.size(-2), k.size(-2)}, s.options().dtype(torch::kBool)).tril();
    s = s.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  }
  return torch::matmul(torch::softmax(s, -1), v.to(torch::kDouble));
}

at::Tensor reference(const at::Tensor& q, const at::Tensor& key, const at::Tensor& value, double scale, bool is_causal) {
  return masked_reference(q, key, value, c10::nullopt, scale, is_causal);
}


size_t choices_for(const std::string& call) {
  size_t n = 0;
  for (const auto& c : torchfuse::runtime::attention_backend_choices()) n += c.call == call;
  return n;
}

std::string call_name(c10::ScalarType dt, const std::vector<int64_t>& q, const std::vector<int64_t>& k, bool causal,
                      bool gqa = false) {
  std::ostringstream os;
  os << (dt == torch::kBFloat16 ? "bf16" : "f16") << " q " << c10::IntArrayRef(q) << " k " << c10::IntArrayRef(k)
     << (causal ? ", causal" : "") << (gqa ? ", grouped heads" : "");
  return os.str();
}

TEST(AttentionGpu, TimedCallsMatchEagerAndTimeEachShapeOnce) {
  REQUIRE_GPU();
#if TORCHFUSE_HAVE_SDPA
  torch::manual_seed(5);
  struct Shape {
    c10::ScalarType dt;
    int64_t b, h, l, s, d;
    bool causal;
    int64_t kv_heads = 0;  // grouped heads (enable_gqa) where set
  };
  // A batch-1 model's heads and tokens, causal and not; an odd length; another head dim; l != s;
  // grouped heads as Llama's (4 query heads per key/value head).
  std::vector<Shape> shapes{{torch::kBFloat16, 1, 11, 128, 128, 64, false}, {torch::kBFloat16, 1, 13, 128, 128, 64, true},
                            {torch::kHalf, 2, 5, 197, 197, 64, true}, {torch::kBFloat16, 2, 3, 77, 300, 128, false}};
#if TORCHFUSE_HAVE_SDPA_GQA
  shapes.push_back({torch::kBFloat16, 1, 20, 128, 128, 64, true, 5});
#endif
  for (const Shape& sh : shapes) {
    const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(sh.dt);
    const int64_t kv = sh.kv_heads ? sh.kv_heads : sh.h;
    const std::string name = call_name(sh.dt, {sh.b, sh.h, sh.l, sh.d}, {sh.b, kv, sh.s, sh.d}, sh.causal, sh.kv_heads != 0);
    ASSERT_EQ(choices_for(name), 0u) << name << " was timed before this test";
    const double scale = 1.0 / std::sqrt(static_cast<double>(sh.d));
    for (int call = 0; call < 3; ++call) {  // fresh values each call: the first times, the others run the choice
      const at::Tensor q = torch::randn({sh.b, sh.h, sh.l, sh.d}, o), k = torch::randn({sh.b, kv, sh.s, sh.d}, o),
                       v = torch::randn({sh.b, kv, sh.s, sh.d}, o);
      const at::Tensor got = timed_call(q, k, v, c10::nullopt, scale, sh.causal, sh.kv_heads != 0);
      const double tol = sh.dt == torch::kHalf ? 1e-2 : 2e-2;
      EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), reference(q, k, v, scale, sh.causal), tol, tol))
          << name << " call " << call;
    }
    ASSERT_EQ(choices_for(name), 1u) << name << ": timed once, on its first call";
    torchfuse::runtime::AttentionBackendChoice r;
    for (const auto& c : torchfuse::runtime::attention_backend_choices())
      if (c.call == name) r = c;
    // ATen's pick, flash attention unless ATen picks it, torchfuse's kernel (every shape here
    // has a head dim it takes), and its keys schedule where that is worth timing.
    const bool keys = torchfuse::runtime::attention_key_split_worth_timing(
        torch::empty({sh.b, sh.h, sh.l, sh.d}, o), torch::empty({sh.b, kv, sh.s, sh.d}, o),
        torchfuse::runtime::device_info(0).sm_count);
    const size_t kernels = keys ? 2 : 1;
    ASSERT_GE(r.backends.size(), 1 + kernels) << name;
    EXPECT_EQ(r.backends[r.backends.size() - kernels], "torchfuse") << name;
    if (keys) EXPECT_EQ(r.backends.back().rfind("torchfuse (keys split ", 0), 0u) << name;
    EXPECT_EQ(r.backends.size() == 2 + kernels, r.backends[1] == "flash") << name;
    if (r.why_not.empty()) {
      ASSERT_EQ(r.us.size(), r.backends.size()) << name;
      for (double us : r.us) EXPECT_GT(us, 0) << name;
      EXPECT_TRUE(r.held) << name << ": timed unheld on a driver with stream memory operations";
      EXPECT_EQ(r.chosen, torchfuse::runtime::choose_candidate(r.us)) << name;
    } else {
      EXPECT_EQ(r.chosen, 0) << name << ": " << r.why_not;
    }
    std::cout << "[ timed    ] " << name << ": " << r.backends[r.chosen];
    for (size_t i = 0; i < r.us.size(); ++i) std::cout << (i ? ", " : " (") << r.backends[i] << " " << r.us[i] << " us";
    std::cout << (r.us.empty() ? "" : ")") << (r.why_not.empty() ? "" : " " + r.why_not) << "\n";
  }
  // A masked call: flash attention cannot run it, ATen's pick is timed against torchfuse's kernel.
  const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  const size_t before = torchfuse::runtime::attention_backend_choices().size();
  const at::Tensor q = torch::randn({1, 9, 64, 64}, o), k = torch::randn({1, 9, 64, 64}, o), v = torch::randn({1, 9, 64, 64}, o);
  const at::Tensor mask = torch::randn({1, 1, 1, 64}, o);
  const at::Tensor got = timed_call(q, k, v, mask, 0.125, false);
  const at::Tensor s = torch::matmul(q.to(torch::kDouble), k.to(torch::kDouble).transpose(-2, -1)) * 0.125 + mask.to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), torch::matmul(torch::softmax(s, -1), v.to(torch::kDouble)), 2e-2, 2e-2));
  const auto after = torchfuse::runtime::attention_backend_choices();
  ASSERT_EQ(after.size(), before + 1);
  EXPECT_EQ(after.back().call, "bf16 q [1, 9, 64, 64] k [1, 9, 64, 64], mask [1, 1, 1, 64]");
  // 36 warps of 16 rows leave the H200's multiprocessors under 4 warps each: the keys schedule is timed too.
  ASSERT_EQ(after.back().backends.size(), 3u);
  EXPECT_EQ(after.back().backends[1], "torchfuse");
  EXPECT_EQ(after.back().backends[2].rfind("torchfuse (keys split ", 0), 0u) << after.back().backends[2];
#else
  GTEST_SKIP() << "LibTorch < 2.1: no fused attention to time";
#endif
}

TEST(AttentionGpu, TimedShapeFirstSeenWhileCapturingIsTimedOnItsFirstCallOutside) {
  REQUIRE_GPU();
#if TORCHFUSE_HAVE_SDPA
  torch::manual_seed(6);
  const c10::Device device(torch::kCUDA, 0);
  const auto o = torch::TensorOptions().device(device).dtype(torch::kBFloat16);
  const at::Tensor q = torch::randn({1, 7, 96, 64}, o), k = torch::randn({1, 7, 96, 64}, o), v = torch::randn({1, 7, 96, 64}, o);
  const std::string name = call_name(torch::kBFloat16, {1, 7, 96, 64}, {1, 7, 96, 64}, true);
  ASSERT_EQ(choices_for(name), 0u) << name << " was timed before this test";
  timed_call(q, k, v, c10::nullopt, 0.125, false);  // another key (not causal): loads the kernels outside the capture
  auto stream = torchfuse::runtime::new_capture_stream(device);
  at::Tensor captured;
  auto graph = torchfuse::runtime::capture_graph(stream.stream, [&] { captured = timed_call(q, k, v, c10::nullopt, 0.125, true); });
  EXPECT_EQ(choices_for(name), 0u) << "timed inside a capture";
  const at::Tensor want = reference(q, k, v, 0.125, true);
  graph->replay();
  torch::cuda::synchronize();
  EXPECT_TRUE(torch::allclose(captured.to(torch::kDouble), want, 2e-2, 2e-2)) << "replay of ATen's pick";
  const at::Tensor outside = timed_call(q, k, v, c10::nullopt, 0.125, true);
  EXPECT_TRUE(torch::allclose(outside.to(torch::kDouble), want, 2e-2, 2e-2)) << "the first call outside";
  EXPECT_EQ(choices_for(name), 1u) << "not timed on the first call outside the capture";
  graph->replay();
  torch::cuda::synchronize();
  EXPECT_TRUE(torch::allclose(captured.to(torch::kDouble), want, 2e-2, 2e-2)) << "a replay after the timing";
#else
  GTEST_SKIP() << "LibTorch < 2.1: no fused attention to time";
#endif
}

// A compiled module with CUDA graphs times its attention (the option's default there), and its
// replays give the plain module's results.
TEST(AttentionGpu, GraphedModuleTimesItsAttentionAndMatches) {
  REQUIRE_GPU();
  torch::manual_seed(7);
  auto m = tftest::module_from(kCases[2].source);  // div_sqrt_no_mask
  torchfuse::CompileOptions o = tftest::quiet_options(2);
  torchfuse::CompiledModule plain = torchfuse::compile(m, o);
  o.cuda_graphs = true;
  torchfuse::CompiledModule graphed = torchfuse::compile(m, o);
  const auto in = inputs_for(kCases[2], c10::kBFloat16, 1, 3, 112, 112, 64, false);
  const size_t before = torchfuse::runtime::attention_backend_choices().size();
  at::Tensor got;
  for (int i = 0; i < 5; ++i) got = graphed.forward(in).toTensor();
  EXPECT_GE(graphed.stats().cuda_graph_replays, 1);
#if TORCHFUSE_HAVE_SDPA
  EXPECT_EQ(torchfuse::runtime::attention_backend_choices().size(), before + 1);
#endif
  const at::Tensor want = plain.forward(in).toTensor();
  EXPECT_TRUE(torch::allclose(got.to(torch::kFloat), want.to(torch::kFloat), 2e-2, 2e-2))
      << (got.to(torch::kFloat) - want.to(torch::kFloat)).abs().max().item<float>();
  const auto report = torchfuse::compare_with_eager(graphed, in);
  EXPECT_TRUE(report.passed()) << report.to_string();
}

// torchfuse's attention kernel called directly: head dims 16 to 128, a key length from 1 to
// several blocks of 64, query rows not a multiple of 16, masks of every broadcast, causal,
// grouped heads, operands viewed out of one projection (16-byte loads) and transposed keys
// (element loads), in bf16 and f16; each with the rows schedule and the keys schedule.
TEST(AttentionKernelGpu, MatchesFloat64AcrossShapesMasksAndLayouts) {
  REQUIRE_GPU();
  torch::manual_seed(11);
  enum class Mask { None, Padding, Full, Rank1 };
  enum class Layout { Contiguous, Projection, KeyTransposed };
  struct Shape {
    c10::ScalarType dt;
    int64_t b, h, kv, l, s, d;
    Mask mask;
    bool causal;
    Layout layout;
  };
  const Shape shapes[] = {
      {torch::kBFloat16, 1, 12, 12, 128, 128, 64, Mask::Padding, false, Layout::Projection},  // BERT, batch 1
      {torch::kBFloat16, 8, 12, 12, 128, 128, 64, Mask::Padding, false, Layout::Projection},  // BERT, batch 8
      {torch::kHalf, 2, 5, 5, 197, 197, 64, Mask::None, true, Layout::Contiguous},
      {torch::kBFloat16, 2, 3, 3, 77, 300, 128, Mask::Full, false, Layout::Contiguous},
      {torch::kBFloat16, 1, 20, 5, 128, 128, 64, Mask::None, true, Layout::Projection},  // grouped heads
      {torch::kHalf, 3, 2, 2, 33, 70, 32, Mask::Rank1, false, Layout::KeyTransposed},
      {torch::kBFloat16, 1, 2, 2, 1, 129, 16, Mask::None, false, Layout::Contiguous},  // one query row
      {torch::kHalf, 1, 4, 4, 300, 300, 128, Mask::Padding, true, Layout::KeyTransposed},
      {torch::kBFloat16, 1, 6, 6, 90, 90, 80, Mask::Padding, false, Layout::Contiguous},  // keys split 2 of 32
      {torch::kHalf, 2, 3, 3, 50, 129, 48, Mask::Full, true, Layout::Contiguous},
  };
  for (const Shape& sh : shapes) {
    const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(sh.dt);
    at::Tensor q, k, v;
    if (sh.layout == Layout::Projection) {
      // One [b, l, heads + 2 kv heads, d] projection, each operand a head-major view of it.
      const at::Tensor all = torch::randn({sh.b, sh.l, sh.h + 2 * sh.kv, sh.d}, o);
      q = all.narrow(2, 0, sh.h).transpose(1, 2);
      k = all.narrow(2, sh.h, sh.kv).transpose(1, 2);
      v = all.narrow(2, sh.h + sh.kv, sh.kv).transpose(1, 2);
      ASSERT_EQ(sh.l, sh.s);
    } else {
      q = torch::randn({sh.b, sh.h, sh.l, sh.d}, o);
      k = sh.layout == Layout::KeyTransposed ? torch::randn({sh.b, sh.kv, sh.d, sh.s}, o).transpose(2, 3)
                                             : torch::randn({sh.b, sh.kv, sh.s, sh.d}, o);
      v = torch::randn({sh.b, sh.kv, sh.s, sh.d}, o);
    }
    c10::optional<at::Tensor> mask;
    if (sh.mask == Mask::Padding) {  // Hugging Face's: the last quarter of each sequence's keys at the lowest value
      at::Tensor m = torch::zeros({sh.b, 1, 1, sh.s}, o);
      const double lowest = sh.dt == torch::kHalf ? static_cast<double>(std::numeric_limits<c10::Half>::lowest())
                                                  : static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
      m.narrow(3, sh.s - sh.s / 4, sh.s / 4).fill_(lowest);
      mask = m;
    } else if (sh.mask == Mask::Full) {
      mask = torch::randn({sh.b, sh.h, sh.l, sh.s}, o);
    } else if (sh.mask == Mask::Rank1) {
      mask = torch::randn({sh.s}, o);
    }
    const std::string name = call_name(sh.dt, {sh.b, sh.h, sh.l, sh.d}, {sh.b, sh.kv, sh.s, sh.d}, sh.causal, sh.kv != sh.h) +
                             (mask ? " masked" : "");
    ASSERT_EQ(torchfuse::runtime::attention_kernel_unusable(q, k, v, mask, sh.kv != sh.h), "") << name;
    const double scale = 1.0 / std::sqrt(static_cast<double>(sh.d));
    const at::Tensor want = masked_reference(q, k, v, mask, scale, sh.causal);
    for (auto schedule : {torchfuse::runtime::AttentionSchedule::kRows, torchfuse::runtime::AttentionSchedule::kKeys}) {
      const std::string label = name + (schedule == torchfuse::runtime::AttentionSchedule::kKeys ? ", keys schedule" : "");
      const at::Tensor got =
          torchfuse::runtime::attention_kernel(q, k, v, mask, scale, sh.causal, sh.kv != sh.h, schedule);
      ASSERT_EQ(got.sizes(), want.sizes()) << label;
      EXPECT_EQ(got.scalar_type(), sh.dt) << label;
      const double tol = sh.dt == torch::kHalf ? 1e-2 : 2e-2;
      EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want, tol, tol))
          << label << ": max error " << (got.to(torch::kDouble) - want).abs().max().item<double>();
      // The query's layout: heads inside rows where the query's are (the view back needs no copy).
      if (sh.layout == Layout::Projection) EXPECT_TRUE(got.transpose(1, 2).is_contiguous()) << label;
      else EXPECT_TRUE(got.is_contiguous()) << label;
    }
  }
}

// Rows whose every score is -inf, or with a NaN among them, come out NaN (eager's softmax); the
// other rows of the same heads are unaffected. Both schedules (the keys split 2 ways over 90).
TEST(AttentionKernelGpu, FullyMaskedAndNaNRowsComeOutNaN) {
  REQUIRE_GPU();
  torch::manual_seed(12);
  for (c10::ScalarType dt : {torch::kBFloat16, torch::kHalf}) {
    const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dt);
    const at::Tensor q = torch::randn({2, 3, 40, 64}, o), k = torch::randn({2, 3, 90, 64}, o), v = torch::randn({2, 3, 90, 64}, o);
    at::Tensor mask = torch::randn({1, 1, 40, 90}, o);
    mask[0][0][3].fill_(-std::numeric_limits<double>::infinity());
    mask[0][0][5][80] = std::numeric_limits<double>::quiet_NaN();  // in the second block of keys
    const at::Tensor want = masked_reference(q, k, v, mask, 0.125, false);
    for (auto schedule : {torchfuse::runtime::AttentionSchedule::kRows, torchfuse::runtime::AttentionSchedule::kKeys}) {
      const at::Tensor got =
          torchfuse::runtime::attention_kernel(q, k, v, mask, 0.125, false, false, schedule).to(torch::kDouble);
      EXPECT_TRUE(torch::allclose(got, want, 2e-2, 2e-2, /*equal_nan=*/true));
      const at::Tensor nan_rows = got.isnan().all(-1);
      EXPECT_TRUE(nan_rows.select(2, 3).all().item<bool>());
      EXPECT_TRUE(nan_rows.select(2, 5).all().item<bool>());
      EXPECT_EQ(nan_rows.sum().item<int64_t>(), 2 * 2 * 3) << "NaN beyond rows 3 and 5";
    }
  }
}

// BERT's masked attention at batch 1, timed: ATen's pick (cuDNN) against torchfuse's kernel,
// once; every call matches the float64 math whichever is kept.
TEST(AttentionKernelGpu, TimedMaskedCallsKeepTheFasterAndMatch) {
  REQUIRE_GPU();
#if TORCHFUSE_HAVE_SDPA
  torch::manual_seed(13);
  const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  const std::string name = "bf16 q [1, 12, 128, 64] k [1, 12, 128, 64], mask [1, 1, 1, 128]";
  ASSERT_EQ(choices_for(name), 0u);
  for (int call = 0; call < 3; ++call) {
    const at::Tensor all = torch::randn({1, 128, 36, 64}, o);
    const at::Tensor q = all.narrow(2, 0, 12).transpose(1, 2), k = all.narrow(2, 12, 12).transpose(1, 2),
                     v = all.narrow(2, 24, 12).transpose(1, 2);
    at::Tensor mask = torch::zeros({1, 1, 1, 128}, o);
    mask.narrow(3, 96, 32).fill_(-std::numeric_limits<double>::infinity());
    const at::Tensor got = timed_call(q, k, v, mask, 0.125, false);
    EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), masked_reference(q, k, v, mask, 0.125, false), 2e-2, 2e-2))
        << "call " << call;
  }
  ASSERT_EQ(choices_for(name), 1u);
  torchfuse::runtime::AttentionBackendChoice r;
  for (const auto& c : torchfuse::runtime::attention_backend_choices())
    if (c.call == name) r = c;
  // 96 warps of 16 rows: fewer than 4 a multiprocessor on an A100 or H100/H200, so the keys
  // schedule is timed too (4 warps a block, one block of 32 keys each).
  ASSERT_EQ(r.backends.size(), 3u);
  EXPECT_EQ(r.backends[1], "torchfuse");
  EXPECT_EQ(r.backends[2], "torchfuse (keys split 4, blocks of 32)");
  EXPECT_TRUE(r.why_not.empty()) << r.why_not;
  ASSERT_EQ(r.us.size(), 3u);
  for (double us : r.us) EXPECT_GT(us, 0);
  EXPECT_EQ(r.chosen, torchfuse::runtime::choose_candidate(r.us));
  std::cout << "[ timed    ] " << name << ": " << r.backends[r.chosen] << " (" << r.backends[0] << " " << r.us[0]
            << " us, torchfuse " << r.us[1] << " us, keys split 4 " << r.us[2] << " us)\n";
#else
  GTEST_SKIP() << "LibTorch < 2.1: no fused attention to time";
#endif
}

// TORCHFUSE_ATTENTION_KERNEL=1 (the GPU fuzzer's switch) runs torchfuse's kernel wherever it can,
// untimed calls too: its mark, a row whose every mask entry is -inf coming out NaN (ATen's fused
// kernels give 0 there), and its results; a float32 call, which it cannot run, stays ATen's.
TEST(AttentionKernelGpu, ForcedByTheEnvironmentWhereItCanRun) {
  REQUIRE_GPU();
  torch::manual_seed(14);
  struct Unset {  // the tests after this one run unforced whatever fails here
    ~Unset() { unsetenv("TORCHFUSE_ATTENTION_KERNEL"); }
  } unset;
  using torchfuse::runtime::AttentionSchedule;
  for (const auto& [value, schedule] : {std::make_pair("1", AttentionSchedule::kRows), std::make_pair("keys", AttentionSchedule::kKeys)}) {
    ASSERT_EQ(setenv("TORCHFUSE_ATTENTION_KERNEL", value, 1), 0);
    ASSERT_TRUE(torchfuse::runtime::attention_kernel_forced() == schedule) << value;
    for (c10::ScalarType dt : {torch::kBFloat16, torch::kFloat}) {
      const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dt);
      // 130 keys: the keys schedule splits them over 2 warps.
      const at::Tensor q = torch::randn({2, 4, 32, 64}, o), k = torch::randn({2, 4, 130, 64}, o),
                       v = torch::randn({2, 4, 130, 64}, o);
      at::Tensor mask = torch::randn({1, 1, 32, 130}, o);
      if (dt == torch::kBFloat16) mask[0][0][7].fill_(-std::numeric_limits<double>::infinity());
      const at::Tensor got = timed_call(q, k, v, mask, 0.125, false, false, /*timed=*/false);
      const at::Tensor want = masked_reference(q, k, v, mask, 0.125, false);
      const double tol = dt == torch::kFloat ? 1e-3 : 2e-2;
      EXPECT_TRUE(torch::allclose(got.to(torch::kDouble), want, tol, tol, /*equal_nan=*/true)) << value << " " << dt;
      if (dt == torch::kBFloat16)
        EXPECT_TRUE(got.select(2, 7).isnan().all().item<bool>()) << value << ": row 7 not the kernel's NaN";
    }
  }
  ASSERT_EQ(setenv("TORCHFUSE_ATTENTION_KERNEL", "0", 1), 0);
  EXPECT_FALSE(torchfuse::runtime::attention_kernel_forced());
}

}  // namespace
