// The attention rewrite on the GPU: every spelling the rewrite takes, against eager (and its
// float64 reference) in fp32, fp16 and bf16, with additive and boolean masks, fully masked rows,
// odd sizes, and the compiled module's CUDA graphs.
#include <array>
#include <limits>

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

}  // namespace
