// The attention rewrite (passes/rewrite_attention.h) on CPU: which spellings of attention become
// one torchfuse::attention call, which stay as they are and why, and the call's own math
// (LibTorch 1.13 runs it through matmul and softmax; 2.x through scaled_dot_product_attention).
#include <algorithm>
#include <limits>
#include <set>

#include <ATen/core/dispatch/Dispatcher.h>

#include "codegen/attention.h"
#include "codegen/kernel_name.h"
#include "codegen/nvrtc.h"
#include "runtime/attention_backends.h"
#include "runtime/attention_kernel.h"
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

// Layers sharing one mask: it is prepared (fully masked rows NaN) once, for every call.
TEST(AttentionRewrite, CallsSharingAMaskShareItsPreparedMask) {
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
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "torchfuse::attention_mask("), 1) << e.rewritten_graph;
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"torchfuse::attention_mask(%mask", "torchfuse::attention(",
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
  // masked_fill's mask marks the excluded positions: prepared with exclude=True, no negation.
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"torchfuse::attention_mask(%excluded", "torchfuse::attention("}));
  EXPECT_EQ(e.rewritten_graph.find("aten::logical_not"), std::string::npos) << e.rewritten_graph;

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

// Float32 grouped heads: the key's repeat joins the kernel that computes the key (its group
// writes the repeated heads, so the flatten after it is a view) and the value's stays a copy.
TEST(AttentionRewrite, Float32KeyRepeatJoinsItsKernel) {
  auto m = tftest::module_from(R"(
def forward(self, q, k, v):
    b, kh, s, d = k.size(0), k.size(1), k.size(2), k.size(3)
    k = torch.sigmoid(k) * 2.0 + 0.5
    k = k[:, :, None, :, :].expand(b, kh, 4, s, d).reshape(b, kh * 4, s, d)
    v = v[:, :, None, :, :].expand(b, kh, 4, s, d).reshape(b, kh * 4, s, d)
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(2, 3)) * 0.25, dim=-1), v)
)");
  std::vector<c10::IValue> in{torch::randn({2, 8, 8, 16}), torch::randn({2, 2, 8, 16}), torch::randn({2, 2, 8, 16})};
  const auto e = explain(m, in);
  ASSERT_TRUE(rewritten_once(e));
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << tftest::joined(e.refused);
  EXPECT_EQ(e.kernels[0].description, "sigmoid -> mul -> add -> unsqueeze[2] -> expand[-1, -1, 4, -1, -1]");
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"torchfuse::FusionGroup", "aten::flatten", "torchfuse::attention("}));
  torchfuse::CompiledModule compiled = torchfuse::compile(m, tftest::quiet_options(2));
  const at::Tensor want = m.forward(in).toTensor(), got = compiled.forward(in).toTensor();
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max();
}

// Hugging Face's repeat_kv (unsqueeze, expand, reshape) on key and value: the call reads the
// tensors before the repeat, with enable_gqa, and the repeats' copies leave the graph. In float32,
// which no fused attention kernel reads grouped, the repeat is put back as unsqueeze, expand and
// flatten (no reshape), for the key's to join the kernel computing it.
TEST(AttentionRewrite, RepeatedKeyValueHeadsBecomeGroupedHeads) {
  auto m = tftest::module_from(R"(
def forward(self, q, k, v, mask):
    b, kh, s, d = k.size(0), k.size(1), k.size(2), k.size(3)
    k = k.unsqueeze(2).expand(b, kh, 3, s, d).reshape(b, kh * 3, s, d)
    v = v[:, :, None, :, :].expand(b, kh, 3, s, d).reshape(b, kh * 3, s, d)  # as repeat_kv spells it
    w = torch.matmul(q, k.transpose(2, 3)) * 0.25
    w = torch.softmax(w + mask, dim=-1, dtype=6).to(q.dtype)
    return torch.matmul(w, v)
)");
  std::vector<c10::IValue> in{torch::randn({2, 6, 8, 16}), torch::randn({2, 2, 8, 16}), torch::randn({2, 2, 8, 16}),
                              torch::randn({2, 1, 8, 8})};
  const auto e = explain(m, in);
  ASSERT_TRUE(rewritten_once(e));
  EXPECT_NE(e.rewrites[0].find("3 query heads per head: grouped heads; repeated in the graph"), std::string::npos)
      << e.rewrites[0];
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"aten::expand", "aten::flatten", "torchfuse::attention("}));
  EXPECT_EQ(e.rewritten_graph.find("aten::reshape"), std::string::npos) << e.rewritten_graph;
  std::vector<c10::IValue> half;
  for (const auto& t : in) half.emplace_back(t.toTensor().to(torch::kBFloat16));
  const auto eh = explain(m, half);
  ASSERT_TRUE(rewritten_once(eh));
  EXPECT_NE(eh.rewrites[0].find("3 query heads per head: grouped heads)"), std::string::npos) << eh.rewrites[0];
  EXPECT_EQ(eh.rewritten_graph.find("aten::expand"), std::string::npos) << eh.rewritten_graph;
  EXPECT_EQ(eh.rewritten_graph.find("aten::reshape"), std::string::npos) << eh.rewritten_graph;
  // Against eager, through the compiled module (the call's math on this LibTorch).
  torchfuse::CompiledModule compiled = torchfuse::compile(m, tftest::quiet_options(2));
  const at::Tensor want = m.forward(in).toTensor(), got = compiled.forward(in).toTensor();
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max();

  // Key and value repeated by different counts (or only one of them) keep their repeats.
  auto uneven = tftest::module_from(R"(
def forward(self, q, k, v):
    k = k.unsqueeze(2).expand(2, 2, 3, 8, 16).reshape(2, 6, 8, 16)
    v = v.repeat(1, 3, 1, 1)
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(2, 3)), -1), v)
)");
  const std::vector<c10::IValue> three = {in[0], in[1], in[2]};
  const auto u = explain(uneven, three);
  // The value's repeat is spelled first (passes/spell_index_ops.h): its copies tile the heads,
  // which is no grouping of them.
  ASSERT_EQ(u.rewrites.size(), 2u) << tftest::joined(u.rewrites) << tftest::joined(u.refused);
  EXPECT_NE(u.rewrites[0].find("aten::repeat ("), std::string::npos) << u.rewrites[0];
  EXPECT_EQ(tftest::count_occurrences(u.rewritten_graph, "torchfuse::attention("), 1) << u.rewritten_graph;
  EXPECT_EQ(u.rewrites[1].find("grouped heads"), std::string::npos) << u.rewrites[1];
  torchfuse::CompiledModule uc = torchfuse::compile(uneven, tftest::quiet_options(2));
  const at::Tensor uwant = uneven.forward(three).toTensor(), ugot = uc.forward(three).toTensor();
  EXPECT_TRUE(torch::allclose(ugot, uwant, 1e-5, 1e-5)) << (ugot - uwant).abs().max();
}

// A query rotated by elementwise ops (RoPE) and an output whose heads are merged next: the fused
// kernel writes the query tokens-major, the call reads it through a transpose, and no copy of
// the query or the output is left outside the kernel.
TEST(AttentionRewrite, RotatedQueryIsWrittenInTheOutputsLayout) {
  auto m = tftest::module_from(R"(
def forward(self, x, cos, sin, k, v):
    q = x.view(2, 16, 4, 8).transpose(1, 2)
    q1 = q[..., :4]
    q2 = q[..., 4:]
    q = q * cos + torch.cat((-q2, q1), dim=-1) * sin
    o = torch.matmul(torch.softmax(torch.matmul(q, k.transpose(2, 3)) * 0.3, -1), v)
    return o.transpose(1, 2).contiguous().reshape(2, 16, 32)
)");
  std::vector<c10::IValue> in{torch::randn({2, 16, 32}), torch::randn({16, 8}), torch::randn({16, 8}),
                              torch::randn({2, 4, 16, 8}), torch::randn({2, 4, 16, 8})};
  const auto e = explain(m, in);
  ASSERT_TRUE(rewritten_once(e));
  EXPECT_NE(e.rewrites[0].find("query written tokens-major"), std::string::npos) << e.rewrites[0];
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << e.rewritten_graph;
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"torchfuse::FusionGroup", "aten::transpose", "torchfuse::attention("}))
      << e.ir_after << e.rewritten_graph;
  bool view_kept_outside = false;
  for (const auto& r : e.refused) view_kept_outside = view_kept_outside || r.find("(contiguous) stays a view outside the group") != std::string::npos;
  EXPECT_TRUE(view_kept_outside) << tftest::joined(e.refused);
  EXPECT_EQ(e.rewritten_graph.find("aten::contiguous(%"), e.rewritten_graph.rfind("aten::contiguous(%"))
      << "one contiguous (the output's, now a no-op) expected:\n" << e.rewritten_graph;
  torchfuse::CompiledModule compiled = torchfuse::compile(m, tftest::quiet_options(2));
  const at::Tensor want = m.forward(in).toTensor(), got = compiled.forward(in).toTensor();
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max();
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

// The calls through the dispatcher, as the rewritten graph's nodes call them.
at::Tensor attention_call(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const c10::optional<at::Tensor>& mask, double scale, bool mask_prepared = false,
                          bool enable_gqa = false, bool timed = false) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchfuse::attention", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                               const c10::optional<at::Tensor>&, double, bool, bool, bool, int64_t, bool)>();
  return op.call(q, k, v, mask, scale, false, mask_prepared, enable_gqa, /*mask_kind=*/0, timed);
}

at::Tensor attention_mask_call(const at::Tensor& mask, c10::ScalarType dtype, bool exclude) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchfuse::attention_mask", "")
                             .typed<at::Tensor(const at::Tensor&, c10::ScalarType, bool)>();
  return op.call(mask, dtype, exclude);
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
  // The same through a mask prepared once (as the rewrite passes it), from the excluded positions.
  const at::Tensor prepared = attention_mask_call(excluded, q.scalar_type(), /*exclude=*/true);
  EXPECT_TRUE(torch::allclose(attention_call(q, k, v, prepared, 0.125, /*mask_prepared=*/true), want_fill, 1e-5, 1e-5,
                              /*equal_nan=*/true));
}

// The prepared mask: additive in the asked dtype, -inf where a position is left out, NaN across
// rows that leave out every position, the rest as given.
TEST(AttentionOp, PreparedMaskMarksFullyMaskedRowsNan) {
  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor kept = torch::rand({2, 1, 6, 5}) > 0.4;
  kept.index_put_({1, 0, 2}, false);  // row left out entirely
  kept.index_put_({0, 0, 0}, true);   // row kept entirely
  for (c10::ScalarType dt : {c10::kFloat, c10::kBFloat16}) {
    const at::Tensor got = attention_mask_call(kept, dt, /*exclude=*/false);
    EXPECT_EQ(got.scalar_type(), dt);
    EXPECT_EQ(got.sizes(), kept.sizes());
    EXPECT_TRUE(got[1][0][2].isnan().all().item<bool>());
    EXPECT_TRUE(torch::equal(got[0][0][0], torch::zeros({5}, torch::TensorOptions().dtype(dt))));
    const at::Tensor rows_ok = got.isnan().logical_not();
    EXPECT_TRUE(torch::equal(got.masked_select(rows_ok & kept.logical_not()).isinf(),
                             torch::ones_like(got.masked_select(rows_ok & kept.logical_not()), torch::kBool)));
    EXPECT_TRUE(torch::equal(attention_mask_call(kept.logical_not(), dt, /*exclude=*/true).isnan(), got.isnan()));
  }
  // An additive mask keeps its values; only its all -inf rows change, to NaN.
  at::Tensor additive = torch::randn({2, 1, 4, 7});
  additive.index_put_({0, 0, 3}, -inf);
  additive.index_put_({1, 0, 1, 0}, -inf);  // one position, not the row
  const at::Tensor got = attention_mask_call(additive, c10::kFloat, false);
  EXPECT_TRUE(got[0][0][3].isnan().all().item<bool>());
  EXPECT_EQ(got.isnan().sum().item<int64_t>(), 7);
  EXPECT_TRUE(torch::equal(got.masked_select(got.isnan().logical_not()), additive.masked_select(got.isnan().logical_not())));
}

// Grouped heads: key and value with fewer heads than the query, each serving a run of query
// heads, against the spelled-out repeat.
TEST(AttentionOp, GroupedHeadsMatchTheRepeatedKeysAndValues) {
  const at::Tensor q = torch::randn({2, 6, 8, 16}), k = torch::randn({2, 2, 8, 16}), v = torch::randn({2, 2, 8, 16});
  at::Tensor mask = torch::randn({2, 1, 8, 8});
  mask.index_put_({1, 0, 4}, -std::numeric_limits<float>::infinity());
  const at::Tensor kr = k.unsqueeze(2).expand({2, 2, 3, 8, 16}).reshape({2, 6, 8, 16});
  const at::Tensor vr = v.unsqueeze(2).expand({2, 2, 3, 8, 16}).reshape({2, 6, 8, 16});
  const at::Tensor want = torch::matmul(torch::softmax(torch::matmul(q, kr.transpose(-2, -1)) * 0.25 + mask, -1), vr);
  const at::Tensor got = attention_call(q, k, v, mask, 0.25, false, /*enable_gqa=*/true);
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5, /*equal_nan=*/true));
  EXPECT_TRUE(got[1].select(1, 4).isnan().all().item<bool>());
}

// Float64 calls keep float64 through the softmax, causal ones included (the math's scores were
// float32, 9 digits short of eager's).
TEST(AttentionOp, Float64CallsComputeInFloat64) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchfuse::attention", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                               const c10::optional<at::Tensor>&, double, bool, bool, bool, int64_t, bool)>();
  const at::Tensor q = torch::randn({2, 3, 9, 16}, torch::kDouble), k = torch::randn({2, 3, 9, 16}, torch::kDouble),
                   v = torch::randn({2, 3, 9, 16}, torch::kDouble);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "no mask");
    at::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * 0.25;
    if (causal) {
      scores = scores.masked_fill(torch::ones({9, 9}, torch::kBool).triu(1), -std::numeric_limits<double>::infinity());
    }
    const at::Tensor want = torch::matmul(torch::softmax(scores, -1), v);
    const at::Tensor got = op.call(q, k, v, c10::nullopt, 0.25, causal, false, false, /*mask_kind=*/0, false);
    ASSERT_EQ(got.scalar_type(), torch::kDouble);
    EXPECT_TRUE(torch::allclose(got, want, 1e-12, 1e-12)) << (got - want).abs().max().item<double>();
  }
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
  std::string gqa;
  try {
    attention_call(torch::randn({1, 5, 4, 8}), k, v, c10::nullopt, 1.0, false, /*enable_gqa=*/true);
  } catch (const std::exception& e) {
    gqa = e.what();
  }
  EXPECT_NE(gqa.find("must be a multiple of the key's and value's"), std::string::npos) << gqa;
  std::string prepared;
  try {
    attention_call(q, k, v, torch::randn({1, 1, 4, 4}, torch::kDouble), 1.0, /*mask_prepared=*/true);
  } catch (const std::exception& e) {
    prepared = e.what();
  }
  EXPECT_NE(prepared.find("boolean or of the query's dtype"), std::string::npos) << prepared;
}

TEST(AttentionAutotune, RewrittenCallsCarryTheTimedFlag) {
  auto m = tftest::module_from(R"(
def forward(self, q, k, v):
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.25, -1), v)
)");
  struct Case {
    std::optional<bool> option;
    bool graphs;
    const char* want;
  };
  // Unset: timed exactly where the module captures CUDA graphs.
  for (const Case& c : {Case{std::nullopt, false, "0"}, Case{std::nullopt, true, "1"}, Case{true, false, "1"},
                        Case{false, true, "0"}}) {
    torchfuse::CompileOptions o = tftest::quiet_options(2);
    o.cuda_graphs = c.graphs;
    o.attention_autotune = c.option;
    const auto e = torchfuse::compile(m, o).explain(qkv(1, 2, 8, 8, 16));
    const std::string where = std::string("option ") + (c.option ? (*c.option ? "on" : "off") : "unset") +
                              (c.graphs ? ", graphs" : "");
    ASSERT_TRUE(rewritten_once(e)) << where;
    const std::string arg = tftest::last_call_argument(e.rewritten_graph, "torchfuse::attention");
    EXPECT_EQ(tftest::constant_value(e.rewritten_graph, arg, "bool"), c.want) << where << "\n" << e.rewritten_graph;
  }
}

// Whether a refusal's reason names `part`.
::testing::AssertionResult says(const std::string& why, const std::string& part) {
  if (why.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << why << "' lacks '" << part << "'";
}

// Flash attention's conditions, each refused with its reason; the device is checked last, so the
// rest is testable here.
TEST(AttentionAutotune, FlashUnusableSaysWhy) {
  using torchfuse::runtime::flash_unusable;
  const auto o = torch::TensorOptions().dtype(torch::kBFloat16);
  const at::Tensor q = torch::randn({1, 2, 8, 16}, o), k = torch::randn({1, 2, 8, 16}, o), v = torch::randn({1, 2, 8, 16}, o);
  EXPECT_TRUE(says(flash_unusable(q, k, v, c10::nullopt, false), "not CUDA tensors"));
  EXPECT_TRUE(says(flash_unusable(q, k, v, c10::nullopt, true), "not CUDA tensors"));
  EXPECT_TRUE(says(flash_unusable(q.to(torch::kFloat), k.to(torch::kFloat), v.to(torch::kFloat), c10::nullopt, false),
                   "not 16-bit"));
  EXPECT_TRUE(says(flash_unusable(q, k, v, torch::zeros({1, 1, 8, 8}, o), false), "a mask"));
  EXPECT_TRUE(says(flash_unusable(q[0], k[0], v[0], c10::nullopt, false), "not rank 4"));
  const at::Tensor q12 = torch::randn({1, 2, 8, 12}, o), k12 = torch::randn({1, 2, 8, 12}, o);
  EXPECT_TRUE(says(flash_unusable(q12, k12, torch::randn({1, 2, 8, 12}, o), c10::nullopt, false), "head dim 12"));
  EXPECT_TRUE(says(flash_unusable(q, k, torch::randn({1, 2, 8, 24}, o), c10::nullopt, false), "head dims differ"));
  EXPECT_TRUE(says(flash_unusable(q, k.narrow(1, 0, 1), v.narrow(1, 0, 1), c10::nullopt, false), "head count"));
  // Grouped heads: fewer key/value heads are fine where they divide the query's.
  EXPECT_TRUE(says(flash_unusable(q, k.narrow(1, 0, 1), v.narrow(1, 0, 1), c10::nullopt, false, /*enable_gqa=*/true),
                   "not CUDA tensors"));
  const at::Tensor q3 = torch::randn({1, 3, 8, 16}, o);
  EXPECT_TRUE(says(flash_unusable(q3, k, v, c10::nullopt, false, /*enable_gqa=*/true), "head count"));
  const at::Tensor k6 = torch::randn({1, 2, 6, 16}, o), v6 = torch::randn({1, 2, 6, 16}, o);
  EXPECT_TRUE(says(flash_unusable(q, k6, v6, c10::nullopt, true), "causal with unequal sequence lengths"));
  EXPECT_TRUE(says(flash_unusable(q, k6, v6, c10::nullopt, false), "not CUDA tensors"));
  EXPECT_TRUE(says(flash_unusable(q.narrow(2, 0, 0), k, v, c10::nullopt, false), "empty"));
  const at::Tensor q_t = torch::randn({1, 2, 16, 8}, o).transpose(-1, -2);
  EXPECT_TRUE(says(flash_unusable(q_t, k, v, c10::nullopt, false), "not contiguous"));
  const at::Tensor q_rows20 = torch::randn({1, 2, 8, 20}, o).narrow(3, 0, 16);
  EXPECT_TRUE(says(flash_unusable(q_rows20, k, v, c10::nullopt, false), "a stride not a multiple of 8"));
  const at::Tensor q_offset = torch::randn({1 * 2 * 8 * 16 + 1}, o).narrow(0, 1, 1 * 2 * 8 * 16).view({1, 2, 8, 16});
  EXPECT_TRUE(says(flash_unusable(q_offset, k, v, c10::nullopt, false), "16-byte aligned"));
}

// torchfuse's attention kernel's conditions, each refused with its reason (the device last).
TEST(AttentionKernel, UnusableSaysWhy) {
  using torchfuse::runtime::attention_kernel_unusable;
  const auto o = torch::TensorOptions().dtype(torch::kBFloat16);
  const at::Tensor q = torch::randn({2, 4, 8, 32}, o), k = torch::randn({2, 4, 6, 32}, o), v = torch::randn({2, 4, 6, 32}, o);
  EXPECT_TRUE(says(attention_kernel_unusable(q, k, v, c10::nullopt, false), "not CUDA tensors"));
  // Masks broadcast to the scores [2, 4, 8, 6]; transposed operands and key lengths of any size are fine.
  EXPECT_TRUE(says(attention_kernel_unusable(q, k, v, torch::randn({2, 1, 1, 6}, o), false), "not CUDA tensors"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k, v, torch::randn({8, 6}, o), false), "not CUDA tensors"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k.transpose(2, 3).contiguous().transpose(2, 3), v, c10::nullopt, false),
                   "not CUDA tensors"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k, v, torch::randn({2, 1, 7, 6}, o), false), "does not broadcast"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k, v, torch::randn({1, 2, 4, 8, 6}, o), false), "rank above 4"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k, v, torch::ones({2, 1, 1, 6}, o.dtype(torch::kBool)), false),
                   "not additive"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k, v, torch::randn({2, 1, 1, 6}), false), "not additive"));
  EXPECT_TRUE(says(attention_kernel_unusable(q.to(torch::kFloat), k.to(torch::kFloat), v.to(torch::kFloat),
                                             c10::nullopt, false),
                   "not 16-bit"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k.to(torch::kHalf), v, c10::nullopt, false), "dtypes differ"));
  EXPECT_TRUE(says(attention_kernel_unusable(q[0], k[0], v[0], c10::nullopt, false), "not rank 4"));
  const at::Tensor q24 = torch::randn({2, 4, 8, 24}, o), k24 = torch::randn({2, 4, 6, 24}, o);
  EXPECT_TRUE(says(attention_kernel_unusable(q24, k24, torch::randn({2, 4, 6, 24}, o), c10::nullopt, false), "head dim 24"));
  const at::Tensor q256 = torch::randn({1, 1, 8, 256}, o), k256 = torch::randn({1, 1, 6, 256}, o);
  EXPECT_TRUE(says(attention_kernel_unusable(q256, k256, k256, c10::nullopt, false), "head dim 256"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k, torch::randn({2, 4, 6, 16}, o), c10::nullopt, false), "head dims differ"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k.narrow(1, 0, 2), v.narrow(1, 0, 2), c10::nullopt, false), "head count"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k.narrow(1, 0, 2), v.narrow(1, 0, 2), c10::nullopt, /*enable_gqa=*/true),
                   "not CUDA tensors"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k.narrow(1, 0, 3), v.narrow(1, 0, 3), c10::nullopt, true), "head count"));
  EXPECT_TRUE(says(attention_kernel_unusable(q, k, v.narrow(2, 0, 5), c10::nullopt, false), "different lengths"));
  EXPECT_TRUE(says(attention_kernel_unusable(q.narrow(2, 0, 0), k, v, c10::nullopt, false), "empty"));
}

// Every variant of the kernel builds with NVRTC for Ampere and Hopper (no GPU needed), and its
// name follows its source.
TEST(AttentionKernel, EveryVariantCompiles) {
  namespace cg = torchfuse::codegen;
  std::set<std::string> names;
  int variants = 0;
  for (c10::ScalarType dt : {c10::ScalarType::BFloat16, c10::ScalarType::Half}) {
    for (int d : {16, 64, 128}) {
      for (int bits = 0; bits < 16; ++bits) {
        cg::AttentionSpec s;
        s.dtype = dt;
        s.head_dim = d;
        s.warps = 1 << (bits % 3);
        s.mask = bits & 1;
        s.causal = bits & 2;
        s.vector_loads = bits & 4;
        // The second half splits the keys where the head dim allows (else reads the mask in pairs only).
        if (bits & 8) {
          s.key_block = bits & 1 ? 32 : 64;
          s.key_split = std::min(s.warps == 1 ? 2 : s.warps, cg::attention_max_key_split(d, s.key_block));
          if (s.key_split > 1) s.warps = s.key_split;
          s.mask_pairs = s.mask;
          if (s.key_split == 1 && !s.mask) continue;  // the first half's variant
        }
        const cg::GeneratedKernel k = cg::generate_attention(s);
        EXPECT_EQ(k.block_size, 32 * s.warps);
        EXPECT_EQ(k.name.rfind("tf_attention_", 0), 0u) << k.name;
        EXPECT_EQ(k.source.find(cg::kNamePlaceholder), std::string::npos) << k.name;
        names.insert(k.name);
        ++variants;
        // NVRTC's time: every flag at one head dim on Hopper, one variant a head dim on Ampere.
        if (d == 64) EXPECT_NO_THROW(cg::compile_to_cubin(k, "sm_90")) << k.name << "\n" << k.source;
        if (bits == 7 || bits == 15) EXPECT_NO_THROW(cg::compile_to_cubin(k, "sm_80")) << k.name << "\n" << k.source;
      }
    }
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(variants)) << "two variants share a name";
  EXPECT_EQ(cg::generate_attention(cg::AttentionSpec{}).source, cg::generate_attention(cg::AttentionSpec{}).source);
}

TEST(AttentionAutotune, CpuCallsTimeNothing) {
  // Timing is for CUDA tensors: a CPU call gives the untimed call's result and records no choice.
  const auto in = qkv(2, 3, 8, 8, 16);
  const at::Tensor q = in[0].toTensor(), k = in[1].toTensor(), v = in[2].toTensor();
  const size_t before = torchfuse::runtime::attention_backend_choices().size();
  const at::Tensor timed = attention_call(q, k, v, c10::nullopt, 0.25, false, false, /*timed=*/true);
  EXPECT_TRUE(torch::equal(timed, attention_call(q, k, v, c10::nullopt, 0.25)));
  EXPECT_TRUE(torch::allclose(timed, torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-2, -1)) * 0.25, -1), v),
                              1e-5, 1e-5));
  EXPECT_EQ(torchfuse::runtime::attention_backend_choices().size(), before);
}

}  // namespace
