// The attention rewrite (passes/rewrite_attention.h) on CPU: which spellings of attention become
// one torchfuse::attention call, which stay as they are and why, and the call's own math
// (LibTorch 1.13 runs it through matmul and softmax; 2.x through scaled_dot_product_attention).
#include <limits>

#include <ATen/core/dispatch/Dispatcher.h>

#include "tests/test_util.h"

namespace {

torchfuse::Explanation explain(const torch::jit::Module& m, const std::vector<c10::IValue>& in,
                               bool rewrite = true) {
  torchfuse::CompileOptions o = tftest::quiet_options(2);
  o.rewrite_attention = rewrite;
  return torchfuse::compile(m, o).explain(in);
}

std::vector<c10::IValue> qkv(int64_t b, int64_t h, int64_t l, int64_t s, int64_t e,
                             c10::ScalarType dtype = c10::kFloat) {
  const auto o = torch::TensorOptions().dtype(dtype);
  return {torch::randn({b, h, l, e}, o), torch::randn({b, h, s, e}, o), torch::randn({b, h, s, e}, o)};
}

// One attention call in place of the pattern: no softmax and no matmul left.
::testing::AssertionResult rewritten_once(const torchfuse::Explanation& e) {
  if (e.rewrites.size() != 1) {
    return ::testing::AssertionFailure() << e.rewrites.size() << " rewrites; refused:\n" << tftest::joined(e.refused)
                                         << "graph:\n" << e.rewritten_graph;
  }
  const std::string& g = e.rewritten_graph;
  if (tftest::count_occurrences(g, "torchfuse::attention(") != 1 || g.find("aten::softmax") != std::string::npos ||
      g.find("aten::matmul") != std::string::npos) {
    return ::testing::AssertionFailure() << "expected one torchfuse::attention and no softmax/matmul in:\n" << g;
  }
  return ::testing::AssertionSuccess();
}

// The pattern left alone, for the reason `why`.
::testing::AssertionResult refused_because(const torchfuse::Explanation& e, const std::string& why) {
  if (!e.rewrites.empty()) return ::testing::AssertionFailure() << "rewritten: " << tftest::joined(e.rewrites);
  if (e.rewritten_graph.find("torchfuse::attention") != std::string::npos)
    return ::testing::AssertionFailure() << "attention call in:\n" << e.rewritten_graph;
  for (const auto& r : e.refused)
    if (r.find("attention at") != std::string::npos && r.find(why) != std::string::npos)
      return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no refusal saying '" << why << "' in:\n" << tftest::joined(e.refused);
}

TEST(AttentionRewrite, ScaledAdditiveMaskEvalDropoutBecomesOneCall) {
  auto m = tftest::module_from(R"(
def forward(self, q, k, v, mask):
    s = torch.matmul(q, k.transpose(-2, -1)) * 0.125
    s = s + mask
    p = torch.softmax(s, dim=-1)
    p = torch.dropout(p, 0.1, False)
    return torch.matmul(p, v)
)");
  auto in = qkv(2, 4, 16, 16, 64);
  in.push_back(torch::randn({2, 1, 1, 16}));
  const auto e = explain(m, in);
  EXPECT_TRUE(rewritten_once(e));
  EXPECT_NE(e.rewrites[0].find("* 0.125 + %mask"), std::string::npos) << e.rewrites[0];
}

// Layers sharing one mask: its fully masked rows are computed once, for every call.
TEST(AttentionRewrite, CallsSharingAMaskShareItsMaskedRows) {
  auto m = tftest::module_from(R"(
def forward(self, q, k, v, mask):
    a = torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.125 + mask, -1), v)
    b = torch.matmul(torch.softmax(torch.matmul(a, k.transpose(-2, -1)) * 0.125 + mask, -1), v)
    return b
)");
  auto in = qkv(2, 4, 16, 16, 64);
  in.push_back(torch::randn({2, 1, 16, 16}));
  const auto e = explain(m, in);
  EXPECT_EQ(e.rewrites.size(), 2u) << tftest::joined(e.refused);
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "torchfuse::attention("), 2) << e.rewritten_graph;
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "torchfuse::fully_masked_rows("), 1) << e.rewritten_graph;
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"torchfuse::fully_masked_rows(%mask", "torchfuse::attention(",
                                                            "torchfuse::attention("}));
}

TEST(AttentionRewrite, DivisionBySqrtOfHeadDimIsTheScale) {
  auto m = tftest::module_from(R"(
def forward(self, q, k, v):
    s = torch.matmul(q, k.transpose(2, 3)) / 8.0
    return torch.matmul(torch.softmax(s, -1), v)
)");
  const auto e = explain(m, qkv(1, 2, 8, 8, 64));
  EXPECT_TRUE(rewritten_once(e));
  EXPECT_NE(e.rewrites[0].find("* 0.125)"), std::string::npos) << e.rewrites[0];
}

TEST(AttentionRewrite, SoftmaxInFloatThenCastBackAsHuggingFaceWritesIt) {
  auto m = tftest::module_from(R"(
def forward(self, q, k, v, mask):
    w = torch.matmul(q, k.transpose(2, 3)) * 0.125
    w = w + mask
    w = torch.softmax(w, dim=-1, dtype=6).to(q.dtype)
    w = torch.dropout(w, 0.0, False)
    return torch.matmul(w, v)
)");
  for (c10::ScalarType dt : {c10::kFloat, c10::kBFloat16}) {
    auto in = qkv(2, 4, 8, 8, 32, dt);
    in.push_back(torch::randn({2, 1, 8, 8}).to(dt));
    EXPECT_TRUE(rewritten_once(explain(m, in))) << c10::toString(dt);
  }
}

TEST(AttentionRewrite, BooleanMasksBecomeTheCallsMask) {
  auto fill = tftest::module_from(R"(
def forward(self, q, k, v, excluded):
    s = torch.matmul(q, k.transpose(-2, -1)) * 0.25
    s = s.masked_fill(excluded, float("-inf"))
    return torch.matmul(torch.softmax(s, -1), v)
)");
  auto in = qkv(1, 2, 8, 8, 16);
  in.push_back(torch::rand({1, 1, 8, 8}) > 0.7);
  const auto e = explain(fill, in);
  EXPECT_TRUE(rewritten_once(e));
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"aten::logical_not", "torchfuse::attention("}));

  auto where = tftest::module_from(R"(
def forward(self, q, k, v, kept):
    s = torch.matmul(q, k.transpose(-2, -1)) * 0.25
    s = torch.where(kept, s, float("-inf"))
    return torch.matmul(torch.softmax(s, -1), v)
)");
  EXPECT_TRUE(rewritten_once(explain(where, in)));
}

TEST(AttentionRewrite, KeyTransposedByPermuteOrAlreadyTransposed) {
  auto permuted = tftest::module_from(R"(
def forward(self, q, k, v):
    s = torch.matmul(q, k.permute(0, 1, 3, 2)) * 0.125
    return torch.matmul(torch.softmax(s, -1), v)
)");
  EXPECT_TRUE(rewritten_once(explain(permuted, qkv(2, 2, 8, 8, 16))));

  // key^T given as it is: the call takes its transpose, a view.
  auto given = tftest::module_from(R"(
def forward(self, q, kt, v):
    return torch.matmul(torch.softmax(torch.matmul(q, kt) * 0.125, -1), v)
)");
  auto in = qkv(2, 2, 8, 8, 16);
  in[1] = in[1].toTensor().transpose(-2, -1).contiguous();
  const auto e = explain(given, in);
  EXPECT_TRUE(rewritten_once(e));
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"aten::transpose", "torchfuse::attention("}));
}

TEST(AttentionRewrite, ThreeDimBatchedMatmul) {
  auto m = tftest::module_from(R"(
def forward(self, q, k, v):
    s = torch.bmm(q, k.transpose(1, 2)) * 0.125
    return torch.bmm(torch.softmax(s, -1), v)
)");
  EXPECT_TRUE(rewritten_once(explain(m, {torch::randn({4, 8, 16}), torch::randn({4, 12, 16}), torch::randn({4, 12, 8})})));
}

TEST(AttentionRewrite, PatternsWhoseSemanticsDifferStayWithTheReason) {
  auto in = qkv(2, 2, 8, 8, 16);
  auto weights_returned = tftest::module_from(R"(
def forward(self, q, k, v):
    p = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.25, -1)
    return torch.matmul(p, v), p
)");
  EXPECT_TRUE(refused_because(explain(weights_returned, in), "is read elsewhere"));

  auto finite_fill = tftest::module_from(R"(
def forward(self, q, k, v, excluded):
    s = (torch.matmul(q, k.transpose(-2, -1)) * 0.25).masked_fill(excluded, -1e9)
    return torch.matmul(torch.softmax(s, -1), v)
)");
  auto with_bool = in;
  with_bool.push_back(torch::rand({2, 1, 8, 8}) > 0.5);
  EXPECT_TRUE(refused_because(explain(finite_fill, with_bool), "not -inf"));

  auto promoting_mask = tftest::module_from(R"(
def forward(self, q, k, v, mask):
    s = torch.matmul(q, k.transpose(-2, -1)) * 0.25 + mask
    return torch.matmul(torch.softmax(s, -1).to(q.dtype), v)
)");
  auto with_f64 = in;
  with_f64.push_back(torch::randn({2, 1, 8, 8}, torch::kDouble));
  EXPECT_TRUE(refused_because(explain(promoting_mask, with_f64), "promotes the scores"));

  auto broadcasting_mask = tftest::module_from(R"(
def forward(self, q, k, v, mask):
    s = torch.matmul(q, k.transpose(-2, -1)) * 0.25 + mask
    return torch.matmul(torch.softmax(s, -1), v)
)");
  auto q3 = std::vector<c10::IValue>{torch::randn({2, 8, 16}), torch::randn({2, 8, 16}), torch::randn({2, 8, 16}),
                                     torch::randn({3, 2, 8, 8})};
  EXPECT_TRUE(refused_because(explain(broadcasting_mask, q3), "broadcasts the scores"));

  auto wrong_dim = tftest::module_from(R"(
def forward(self, q, k, v):
    p = torch.softmax(torch.matmul(q, k.transpose(-2, -1)), 2)
    return torch.matmul(p, v)
)");
  EXPECT_TRUE(refused_because(explain(wrong_dim, in), "not over the last dim"));

  auto batch_broadcast = tftest::module_from(R"(
def forward(self, q, k, v):
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)), -1), v)
)");
  auto bcast = qkv(2, 2, 8, 8, 16);
  bcast[1] = torch::randn({1, 2, 8, 16});
  EXPECT_TRUE(refused_because(explain(batch_broadcast, bcast), "broadcast over their batch dims"));
}

TEST(AttentionRewrite, NotAttentionIsNotReported) {
  // A softmax between matmuls over another pairing is still attention-shaped; a plain matmul
  // chain without softmax is not, and says nothing.
  auto m = tftest::module_from(R"(
def forward(self, a, b, c):
    return torch.matmul(torch.relu(torch.matmul(a, b)), c)
)");
  const auto e = explain(m, {torch::randn({4, 8}), torch::randn({8, 8}), torch::randn({8, 4})});
  for (const auto& r : e.rewrites) EXPECT_EQ(r.find("attention"), std::string::npos) << r;
  for (const auto& r : e.refused) EXPECT_EQ(r.find("attention at"), std::string::npos) << r;
}

TEST(AttentionRewrite, OptionOffLeavesTheGraph) {
  auto m = tftest::module_from(R"(
def forward(self, q, k, v):
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.25, -1), v)
)");
  const auto e = explain(m, qkv(1, 2, 8, 8, 16), /*rewrite=*/false);
  EXPECT_TRUE(e.rewrites.empty());
  EXPECT_EQ(e.rewritten_graph.find("torchfuse::attention"), std::string::npos) << e.rewritten_graph;
  EXPECT_NE(e.rewritten_graph.find("aten::matmul"), std::string::npos) << e.rewritten_graph;
}

// The call through the dispatcher, as the rewritten graph's node calls it.
at::Tensor attention_call(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const c10::optional<at::Tensor>& mask, double scale) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchfuse::attention", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                               const c10::optional<at::Tensor>&, double, bool,
                                               const c10::optional<at::Tensor>&)>();
  return op.call(q, k, v, mask, scale, false, c10::nullopt);
}

// The call against the spelled-out math, fully masked rows included (NaN, as eager).
TEST(AttentionOp, MatchesTheMathItReplacesOnCpu) {
  auto in = qkv(2, 3, 8, 8, 16);
  const at::Tensor q = in[0].toTensor(), k = in[1].toTensor(), v = in[2].toTensor();
  at::Tensor mask = torch::randn({2, 1, 8, 8});
  mask.index_put_({0, 0, 3}, -std::numeric_limits<float>::infinity());  // a fully masked row
  at::Tensor excluded = torch::rand({2, 1, 8, 8}) > 0.6;
  excluded.index_put_({1, 0, 5}, true);
  const at::Tensor s = torch::matmul(q, k.transpose(-2, -1)) * 0.125;
  const at::Tensor want_add = torch::matmul(torch::softmax(s + mask, -1), v);
  const at::Tensor want_fill =
      torch::matmul(torch::softmax(s.masked_fill(excluded, -std::numeric_limits<double>::infinity()), -1), v);
  const at::Tensor want_plain = torch::matmul(torch::softmax(s, -1), v);
  const at::Tensor got_add = attention_call(q, k, v, mask, 0.125);
  const at::Tensor got_fill = attention_call(q, k, v, excluded.logical_not(), 0.125);
  const at::Tensor got_plain = attention_call(q, k, v, c10::nullopt, 0.125);
  EXPECT_TRUE(torch::allclose(got_add, want_add, 1e-5, 1e-5, /*equal_nan=*/true));
  EXPECT_TRUE(torch::allclose(got_fill, want_fill, 1e-5, 1e-5, /*equal_nan=*/true));
  EXPECT_TRUE(torch::allclose(got_plain, want_plain, 1e-5, 1e-5));
  EXPECT_TRUE(got_add[0][0][3].isnan().all().item<bool>());
  EXPECT_TRUE(want_add[0][0][3].isnan().all().item<bool>());
  EXPECT_FALSE(got_add[0][0][2].isnan().any().item<bool>());
  EXPECT_TRUE(got_fill[1][0][5].isnan().all().item<bool>());
}

TEST(AttentionOp, BadInputsSayWhatIsWrong) {
  const auto qkv_in = qkv(1, 2, 4, 4, 8);
  const at::Tensor q = qkv_in[0].toTensor(), k = qkv_in[1].toTensor(), v = qkv_in[2].toTensor();
  auto error_of = [&](const at::Tensor& a, const at::Tensor& b, const at::Tensor& c,
                      const c10::optional<at::Tensor>& m) -> std::string {
    try {
      attention_call(a, b, c, m, 1.0);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(q, k.to(torch::kDouble), v, c10::nullopt).find("need one dtype"), std::string::npos);
  EXPECT_NE(error_of(q, torch::randn({1, 2, 4, 7}), v, c10::nullopt).find("do not chain"), std::string::npos);
  EXPECT_NE(error_of(q, k, v, torch::randn({1, 1, 4, 4}, torch::kDouble)).find("boolean or of the query's dtype"),
            std::string::npos);
  EXPECT_NE(error_of(torch::randn({4, 8}), k, v, c10::nullopt).find("same rank"), std::string::npos);
}

}  // namespace
