// Shape tensors (passes/cache_shape_tensors.h) on the CPU: which tensors computed from sizes and
// constants alone become one torchfuse::shape_tensors call, which stay in the graph and why, the
// causal check of an attention mask made that way, and results against eager for several sizes
// (each size computes its own tensors; a repeated size reads the kept ones).
#include <limits>

#include <ATen/core/dispatch/Dispatcher.h>

#include "tests/cpu_fallbacks.h"
#include "tests/test_util.h"

namespace {

using tftest::count_occurrences;
using tftest::joined;

torchfuse::CompileOptions options(bool cache = true) {
  torchfuse::CompileOptions o = tftest::quiet_options();
  o.cache_shape_tensors = cache;
  return o;
}

std::vector<c10::IValue> qkv(int64_t t, c10::ScalarType dtype = c10::kFloat) {
  const auto o = torch::TensorOptions().dtype(dtype);
  return {torch::randn({2, 3, t, 16}, o), torch::randn({2, 3, t, 16}, o), torch::randn({2, 3, t, 16}, o)};
}

bool has(const std::vector<std::string>& lines, const std::string& what) {
  for (const std::string& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

// The tensor a module returns, alone or as a dict's one value (as Hugging Face's traced models).
at::Tensor only_tensor(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor();
  const c10::Dict<c10::IValue, c10::IValue> d = v.toGenericDict();
  EXPECT_EQ(d.size(), 1u);
  return d.begin()->value().toTensor();
}

// Fused calls (groups on their ATen fallbacks) against eager, on fresh inputs: sizes 8, 12, then
// 8 again (the kept tensors of the first call).
void expect_eager_results(const torch::jit::Module& m, c10::ScalarType dtype = c10::kFloat) {
  auto impl = tftest::on_cpu_fallbacks(m, options());
  for (int64_t t : {8, 12, 8}) {
    const std::vector<c10::IValue> in = qkv(t, dtype);
    const at::Tensor got = only_tensor(impl->forward(in)), want = only_tensor(impl->forward_eager(in));
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << "t = " << t << ": " << (got - want).abs().max();
  }
}

// A causal mask the way Hugging Face builds one: positions from arange, compared, within one
// packed sequence (an index through a list of tensors), then filled with the dtype's lowest value.
const char* kCausal = R"(
def forward(self, q, k, v):
    t = q.size(2)
    pos = torch.arange(t) + 0
    seq = torch.cumsum(torch.diff(pos, prepend=pos[:1] - 1) != 1, -1)
    allowed = (pos.unsqueeze(0) <= pos.unsqueeze(1)) & (seq[pos.unsqueeze(1)] == seq[pos.unsqueeze(0)])
    mask = torch.zeros([t, t]).masked_fill(allowed.logical_not(), -3.4028234663852886e+38)
    s = torch.matmul(q, k.transpose(-2, -1)) * 0.25 + mask[None, None, :, :]
    return {"out": torch.matmul(torch.softmax(s, -1), v)}
)";

TEST(ShapeTensors, CausalMaskFromSizesIsComputedOncePerSizeAndRunsCausal) {
  const auto m = tftest::module_from(kCausal);
  const auto e = torchfuse::compile(m, options()).explain(qkv(8));
  ASSERT_TRUE(has(e.rewrites, "shape tensors at aten::arange")) << joined(e.rewrites) << joined(e.refused);
  EXPECT_TRUE(has(e.rewrites, "checked causal")) << joined(e.rewrites);
  const std::string& g = e.rewritten_graph;
  EXPECT_EQ(count_occurrences(g, "torchfuse::shape_tensors("), 1) << g;
  EXPECT_EQ(g.find("aten::arange"), std::string::npos) << g;
  EXPECT_EQ(g.find("aten::masked_fill"), std::string::npos) << g;
  EXPECT_EQ(g.find("torchfuse::mask_kind"), std::string::npos) << g;  // inside the cut
  EXPECT_TRUE(tftest::contains_in_order(g, {"torchfuse::shape_tensors(", "torchfuse::attention("})) << g;
  expect_eager_results(m);
}

// A mask from sizes that every position takes part in (Hugging Face's ViT builds one, boolean;
// here additive zeros): checked once per size in the cut; the call leaves it out (ATen then picks
// a kernel that takes no mask). Results as eager's.
TEST(ShapeTensors, OpenMaskFromSizesIsCheckedInTheCut) {
  const auto m = tftest::module_from(R"(
def forward(self, q, k, v):
    t = q.size(2)
    mask = torch.zeros([t, t]).masked_fill(torch.arange(t)[None, :] < 0, -3.4028234663852886e+38)
    s = torch.matmul(q, k.transpose(-2, -1)) * 0.25 + mask[None, None, :, :]
    return torch.matmul(torch.softmax(s, -1), v)
)");
  const auto e = torchfuse::compile(m, options()).explain(qkv(8));
  ASSERT_TRUE(has(e.rewrites, "shape tensors at ")) << joined(e.rewrites) << joined(e.refused);
  EXPECT_TRUE(has(e.rewrites, "checked causal or open")) << joined(e.rewrites);
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"torchfuse::shape_tensors(", "torchfuse::attention("}))
      << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("torchfuse::mask_kind"), std::string::npos) << e.rewritten_graph;
  expect_eager_results(m);
}

// A mask from sizes that is not causal (each query sees itself and later keys): checked, found
// not causal, and the call reads it.
TEST(ShapeTensors, NonCausalMaskFromSizesIsKeptAsTheMask) {
  const auto m = tftest::module_from(tftest::replace_all(kCausal, "pos.unsqueeze(0) <= pos.unsqueeze(1)",
                                                         "pos.unsqueeze(0) >= pos.unsqueeze(1)"));
  const auto e = torchfuse::compile(m, options()).explain(qkv(8));
  ASSERT_TRUE(has(e.rewrites, "checked causal")) << joined(e.rewrites) << joined(e.refused);
  expect_eager_results(m);
}

// Int results of the cut (a size over 2, for slices) reach their readers; no attention here.
TEST(ShapeTensors, PositionsAndIntsFromSizes) {
  const auto m = tftest::module_from(R"(
def forward(self, q, k, v):
    t = q.size(2)
    half = int(torch.tensor(q.size(3)) // 2)
    freq = torch.arange(t).float().unsqueeze(1) * torch.arange(half).float().unsqueeze(0) * 0.01
    cos = torch.cat([torch.cos(freq), torch.cos(freq)], -1)
    rot = torch.cat([-q[..., half:], q[..., :half]], -1)
    return q * cos + rot * k
)");
  const auto e = torchfuse::compile(m, options()).explain(qkv(8));
  ASSERT_TRUE(has(e.rewrites, "shape tensors at")) << joined(e.rewrites) << joined(e.refused);
  EXPECT_EQ(e.rewritten_graph.find("aten::arange"), std::string::npos) << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("aten::cos"), std::string::npos) << e.rewritten_graph;
  expect_eager_results(m);
}

// Written later, returned, or random: computed on every call as before.
TEST(ShapeTensors, WrittenReturnedOrRandomTensorsStayInTheGraph) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"written", R"(
def forward(self, q, k, v):
    pos = torch.arange(q.size(2)).float()
    pos.add_(1.0)
    return q * pos.unsqueeze(1)
)"},
      {"returned", R"(
def forward(self, q, k, v):
    pos = torch.arange(q.size(2)).float()
    return q * pos.unsqueeze(1), pos
)"},
      {"random", R"(
def forward(self, q, k, v):
    noise = torch.rand([q.size(2), 1])
    return q * noise
)"},
  };
  for (const auto& [name, source] : cases) {
    const auto e = torchfuse::compile(tftest::module_from(source), options()).explain(qkv(8));
    EXPECT_FALSE(has(e.rewrites, "shape tensors")) << name << ": " << joined(e.rewrites);
    EXPECT_EQ(e.rewritten_graph.find("torchfuse::shape_tensors"), std::string::npos) << name << ":\n" << e.rewritten_graph;
  }
}

// A part whose value is read before a size it depends on is known: the part stays in the graph
// with the reason, and the causal check of its mask goes with it (it would read the mask on every
// call).
TEST(ShapeTensors, PartReadBeforeItsLastKeyStaysWithTheReason) {
  const auto m = tftest::module_from(R"(
def forward(self, q, k, v):
    pos = torch.arange(q.size(2)).float()
    early = q * pos.unsqueeze(1)
    n = early.size(0)
    mask = torch.zeros([q.size(2), q.size(2)]).masked_fill(pos.unsqueeze(0) > pos.unsqueeze(1) + n * 0, float("-inf"))
    s = torch.matmul(early, k.transpose(-2, -1)) * 0.25 + mask
    return torch.matmul(torch.softmax(s, -1), v)
)");
  const auto e = torchfuse::compile(m, options()).explain(qkv(8));
  EXPECT_TRUE(has(e.refused, "is read before the size")) << joined(e.refused);
  EXPECT_FALSE(has(e.rewrites, "shape tensors")) << joined(e.rewrites);
  EXPECT_NE(e.rewritten_graph.find("aten::arange"), std::string::npos) << e.rewritten_graph;
  EXPECT_EQ(e.rewritten_graph.find("torchfuse::mask_is_causal"), std::string::npos) << e.rewritten_graph;
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "torchfuse::attention("), 1) << e.rewritten_graph;
  expect_eager_results(m);
}

TEST(ShapeTensors, OptionOffLeavesTheGraph) {
  const auto e = torchfuse::compile(tftest::module_from(kCausal), options(/*cache=*/false)).explain(qkv(8));
  EXPECT_FALSE(has(e.rewrites, "shape tensors")) << joined(e.rewrites);
  EXPECT_NE(e.rewritten_graph.find("aten::arange"), std::string::npos) << e.rewritten_graph;
}

int64_t mask_is_causal(const at::Tensor& mask) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchfuse::mask_is_causal", "")
                             .typed<int64_t(const at::Tensor&)>();
  return op.call(mask);
}

int64_t mask_kind(const at::Tensor& mask) {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("torchfuse::mask_kind", "").typed<int64_t(const at::Tensor&)>();
  return op.call(mask);
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                     bool is_causal, int64_t kind = 0) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchfuse::attention", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                               const c10::optional<at::Tensor>&, double, bool, bool, bool, int64_t, bool)>();
  return op.call(q, k, v, mask, 0.25, is_causal, /*mask_prepared=*/true, /*enable_gqa=*/false, kind, /*timed=*/false);
}

at::Tensor causal_mask(int64_t t, c10::ScalarType dtype, double fill) {
  const at::Tensor keep = torch::ones({t, t}, torch::kBool).tril();
  return torch::zeros({t, t}, torch::TensorOptions().dtype(dtype)).masked_fill(keep.logical_not(), fill);
}

TEST(ShapeTensors, MaskIsCausalOnlyForTheExactPattern) {
  const double inf = std::numeric_limits<double>::infinity();
  for (c10::ScalarType dt : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    const double lowest = dt == c10::kFloat ? -3.4028234663852886e+38 : dt == c10::kHalf ? -65504.0 : -3.3895313892515355e+38;
    EXPECT_EQ(mask_is_causal(causal_mask(6, dt, -inf)), 1) << dt;
    EXPECT_EQ(mask_is_causal(causal_mask(6, dt, lowest)), 1) << dt;
    EXPECT_EQ(mask_is_causal(causal_mask(6, dt, lowest).expand({2, 3, 6, 6})), 1) << dt;
    EXPECT_EQ(mask_is_causal(causal_mask(6, dt, -1e4)), 0) << dt;  // finite: scores can still count
    EXPECT_EQ(mask_is_causal(causal_mask(6, dt, -inf).t().contiguous()), 0) << dt;
    at::Tensor one_off = causal_mask(6, dt, -inf);
    one_off.index_put_({4, 1}, -inf);  // a position the causal mask keeps
    EXPECT_EQ(mask_is_causal(one_off), 0) << dt;
    at::Tensor batch_off = causal_mask(6, dt, -inf).repeat({2, 1, 1, 1});
    batch_off.index_put_({1, 0, 5, 5}, 0.5);
    EXPECT_EQ(mask_is_causal(batch_off), 0) << dt;
  }
  EXPECT_EQ(mask_is_causal(torch::zeros({6, 7})), 0);
  // Boolean (a scaled_dot_product_attention call's mask, taken as given): true takes part.
  EXPECT_EQ(mask_is_causal(torch::ones({6, 6}, torch::kBool).tril()), 1);
  EXPECT_EQ(mask_is_causal(torch::ones({2, 1, 6, 6}, torch::kBool).tril()), 1);
  EXPECT_EQ(mask_is_causal(torch::ones({6, 6}, torch::kBool).triu()), 0);
  EXPECT_EQ(mask_is_causal(torch::ones({6, 6}, torch::kBool)), 0);
}

// mask_kind: 2 where every position takes part (boolean all true, additive all zero, expanded or
// not), 1 for the causal pattern, 0 otherwise.
TEST(ShapeTensors, MaskKindFindsOpenAndCausalMasks) {
  EXPECT_EQ(mask_kind(torch::ones({6, 6}, torch::kBool)), 2);
  EXPECT_EQ(mask_kind(torch::ones({1, 1, 197, 1}, torch::kBool).expand({2, 1, 197, 197})), 2);
  for (c10::ScalarType dt : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
    EXPECT_EQ(mask_kind(torch::zeros({2, 1, 6, 6}, torch::TensorOptions().dtype(dt))), 2) << dt;
    EXPECT_EQ(mask_kind(torch::zeros({6}, torch::TensorOptions().dtype(dt))), 2) << dt;
    EXPECT_EQ(mask_kind(causal_mask(6, dt, -std::numeric_limits<double>::infinity())), 1) << dt;
    at::Tensor almost = torch::zeros({6, 6}, torch::TensorOptions().dtype(dt));
    almost.index_put_({5, 0}, -1.0);
    EXPECT_EQ(mask_kind(almost), 0) << dt;
  }
  at::Tensor one_out = torch::ones({2, 1, 6, 6}, torch::kBool);
  one_out.index_put_({1, 0, 3, 2}, false);
  EXPECT_EQ(mask_kind(one_out), 0);
  EXPECT_EQ(mask_kind(torch::ones({6, 6}, torch::kBool).tril()), 1);
  EXPECT_EQ(mask_kind(torch::ones({0, 6}, torch::kBool)), 0);
  EXPECT_EQ(mask_kind(torch::ones({6, 6}, torch::kLong)), 0);
}

// mask_kind 2: the open mask is left out (the result is the call's without a mask); a kind
// outside 0..2 is an error naming it.
TEST(ShapeTensors, AttentionLeavesOutAnOpenMask) {
  const auto in = qkv(8);
  const at::Tensor q = in[0].toTensor(), k = in[1].toTensor(), v = in[2].toTensor();
  const at::Tensor want = torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-2, -1)) * 0.25, -1), v);
  const at::Tensor open = torch::ones({1, 1, 8, 1}, torch::kBool).expand({2, 1, 8, 8});
  EXPECT_TRUE(torch::allclose(attention(q, k, v, open, false, /*kind=*/2), want, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(attention(q, k, v, torch::zeros({8, 8}), false, /*kind=*/2), want, 1e-5, 1e-5));
  try {
    attention(q, k, v, open, false, /*kind=*/3);
    ADD_FAILURE() << "mask_kind 3 was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("mask_kind must be 0, 1 or 2, got 3"), std::string::npos) << e.what();
  }
}

// is_causal with a mask: causal where the mask spans the scores' last two dims (the mask is not
// read), the mask alone where it does not (a broadcast row).
TEST(ShapeTensors, AttentionCallWithCausalClaim) {
  const auto in = qkv(8);
  const at::Tensor q = in[0].toTensor(), k = in[1].toTensor(), v = in[2].toTensor();
  const at::Tensor mask = causal_mask(8, c10::kFloat, -std::numeric_limits<double>::infinity());
  const at::Tensor want = torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-2, -1)) * 0.25 + mask, -1), v);
  EXPECT_TRUE(torch::allclose(attention(q, k, v, mask, /*is_causal=*/true), want, 1e-5, 1e-5));
  const at::Tensor row = torch::randn({1, 8});
  const at::Tensor want_row = torch::matmul(torch::softmax(torch::matmul(q, k.transpose(-2, -1)) * 0.25 + row, -1), v);
  EXPECT_TRUE(torch::allclose(attention(q, k, v, row, /*is_causal=*/true), want_row, 1e-5, 1e-5));
}

}  // namespace
