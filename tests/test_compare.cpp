// compare_with_eager's float64 reference on graphs shaped like traced Hugging Face models:
// integer inputs beside floating parameters (BERT, Llama), 16-bit parameters (ViT's conv), casts
// the graph asks for, size arithmetic, and a graph that cannot run in float64. The reference and
// the comparison are pure ATen, so they run here; compiled modules run eager on the CPU.
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>

#include "tests/test_util.h"

namespace {

// An embedding lookup, a layer norm and a projection, with its parameters in `dtype`:
// forward(ids) takes token ids only, as BERT and Llama do.
torch::jit::Module embedding_model(c10::ScalarType dtype) {
  torch::manual_seed(11);
  torch::jit::Module m("EmbeddingModel");
  m.register_parameter("table", torch::randn({50, 64}).to(dtype), false);
  m.register_parameter("ln_w", (1.0 + 0.1 * torch::randn({64})).to(dtype), false);
  m.register_parameter("ln_b", (0.1 * torch::randn({64})).to(dtype), false);
  m.register_parameter("proj", (torch::randn({64, 64}) / 8.0).to(dtype), false);
  m.register_buffer("mask_value", torch::full({1}, -1.0).to(dtype));
  m.define(R"JIT(
def forward(self, ids):
    h = torch.embedding(self.table, ids)
    h = torch.layer_norm(h, [64], self.ln_w, self.ln_b, 1e-5)
    h = torch.gelu(torch.matmul(h, self.proj)) + h
    h = torch.layer_norm(h, [64], self.ln_w, self.ln_b, 1e-5)
    h = torch.gelu(torch.matmul(h, self.proj)) + h
    h = torch.layer_norm(h, [64], self.ln_w, self.ln_b, 1e-5)
    return torch.where(ids.unsqueeze(-1) == 0, self.mask_value, h)
)JIT");
  return m;
}

at::Tensor token_ids() {
  torch::manual_seed(12);
  auto ids = torch::randint(0, 50, {4, 32}, torch::kLong);
  ids.index_put_({0, 0}, 0);
  return ids;
}

// (a) Integer inputs, floating parameters: the reference runs (it ran only for floating inputs).
TEST(Compare, IntegerInputsWithFloatingParametersGetTheFloat64Reference) {
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    auto c = torchfuse::compile(embedding_model(dtype));
    const std::vector<c10::IValue> in{token_ids()};
    const auto report = torchfuse::compare_with_eager(c, in);
    ASSERT_EQ(report.outputs.size(), 1u);
    EXPECT_TRUE(report.outputs[0].has_reference) << report.to_string();
    EXPECT_TRUE(report.reference_note.empty()) << report.reference_note;
    EXPECT_TRUE(report.passed()) << report.to_string();
    // The float64 columns hold what the reference says even where allclose to eager passed
    // (float32 rounds away from float64 somewhere in 4 x 32 x 16 sums).
    EXPECT_GT(report.outputs[0].eager_rmse_vs_reference, 0.0) << report.to_string();
    EXPECT_GT(report.outputs[0].eager_max_abs_error_vs_reference, 0.0) << report.to_string();
    if (dtype != torch::kBFloat16) continue;
    // A compiled result within bf16 rounding of float64 passes against the reference although it
    // may stray from eager's (BERT's 0.11 on outputs of 4 after 12 layers); the float64 columns
    // are filled.
    const at::Tensor eager = c.forward_eager(in).toTensor();
    const at::Tensor ref = c.forward_reference(in).toTensor();
    ASSERT_EQ(ref.scalar_type(), torch::kDouble);
    const at::Tensor rounded = ref.to(torch::kBFloat16);
    const auto judged = torchfuse::compare_outputs_with_reference(eager, rounded, ref);
    EXPECT_TRUE(judged.passed()) << judged.to_string();
    EXPECT_TRUE(judged.outputs[0].has_reference);
    EXPECT_GT(judged.outputs[0].max_abs_error_vs_reference + judged.outputs[0].eager_max_abs_error_vs_reference, 0.0)
        << judged.to_string();
    EXPECT_EQ(judged.to_string().find(" -  "), std::string::npos) << judged.to_string();
  }
}

// (f) The check still fails a wrong result: one position's features scaled, or every value off.
TEST(Compare, WrongResultsFailAgainstTheReference) {
  auto c = torchfuse::compile(embedding_model(torch::kBFloat16));
  const std::vector<c10::IValue> in{token_ids()};
  const at::Tensor eager = c.forward_eager(in).toTensor();
  const at::Tensor ref = c.forward_reference(in).toTensor();
  at::Tensor one_row = eager.clone();
  one_row.select(1, 5).mul_(1.5);
  const auto bad_row = torchfuse::compare_outputs_with_reference(eager, one_row, ref);
  EXPECT_FALSE(bad_row.passed()) << bad_row.to_string();
  EXPECT_TRUE(bad_row.outputs[0].has_reference);
  EXPECT_EQ(bad_row.outputs[0].worst_index.at(1), 5) << bad_row.to_string();
  const auto bad_all = torchfuse::compare_outputs_with_reference(eager, (eager.to(torch::kFloat) + 0.1).to(torch::kBFloat16), ref);
  EXPECT_FALSE(bad_all.passed()) << bad_all.to_string();
  EXPECT_NE(bad_all.to_string().find("FAIL"), std::string::npos);
}

// (b) bf16 inputs and bf16 parameters (ViT's patch embedding): the reference upcasts the frozen
// weights too, so conv2d and matmul see float64 on both sides (they threw on double x bf16).
TEST(Compare, SixteenBitParametersRunInFloat64) {
  torch::manual_seed(13);
  torch::jit::Module m("PatchEmbedding");
  const auto w = torch::randn({8, 3, 4, 4}).to(torch::kBFloat16);
  const auto b = torch::randn({8}).to(torch::kBFloat16);
  const auto p = (torch::randn({8, 16}) / 4.0).to(torch::kBFloat16);
  m.register_parameter("w", w, false);
  m.register_parameter("b", b, false);
  m.register_parameter("p", p, false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.conv2d(x, self.w, self.b, [4, 4])
    y = y.flatten(2).transpose(1, 2)
    return torch.matmul(y, self.p)
)JIT");
  auto c = torchfuse::compile(m);
  const auto x = torch::randn({2, 3, 16, 16}).to(torch::kBFloat16);
  at::Tensor ref;
  ASSERT_NO_THROW(ref = c.forward_reference({x}).toTensor());
  ASSERT_EQ(ref.scalar_type(), torch::kDouble);
  const auto d = [](const at::Tensor& t) { return t.to(torch::kDouble); };
  const auto expected = torch::matmul(torch::conv2d(d(x), d(w), d(b), 4).flatten(2).transpose(1, 2), d(p));
  EXPECT_TRUE(torch::allclose(ref, expected, 1e-12, 1e-12)) << (ref - expected).abs().max();
  // Not eager's bf16 result: the reference computed in float64.
  EXPECT_FALSE(torch::equal(ref, d(c.forward_eager({x}).toTensor())));
  const auto report = torchfuse::compare_with_eager(c, {x});
  EXPECT_TRUE(report.outputs.at(0).has_reference) << report.to_string();
  EXPECT_TRUE(report.reference_note.empty()) << report.reference_note;
  EXPECT_TRUE(report.passed()) << report.to_string();
}

// A frozen parameter used only inside a block (an If branch) is upcast too.
TEST(Compare, ConstantsInsideBlocksAreUpcastToo) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %c0 : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %c0)
  %cond : bool = aten::gt(%n, %c0)
  %r : Tensor = prim::If(%cond)
    block0():
      %a : Tensor = aten::matmul(%x, %x)
      -> (%a)
    block1():
      -> (%x)
  return (%r)
)IR",
                      graph.get());
  torch::jit::Node* if_node = nullptr;
  for (torch::jit::Node* n : graph->nodes())
    if (n->kind() == c10::prim::If) if_node = n;
  ASSERT_NE(if_node, nullptr);
  torch::jit::Node* mm = *if_node->blocks()[0]->nodes().begin();
  torch::manual_seed(16);
  const auto w = torch::randn({8, 8}).to(torch::kBFloat16);
  {
    torch::jit::WithInsertPoint point(mm);
    mm->replaceInput(1, graph->insertConstant(w));
  }
  auto c = torchfuse::compile_graph(graph);
  const auto x = torch::randn({4, 8}).to(torch::kBFloat16);
  at::Tensor ref;
  ASSERT_NO_THROW(ref = c.forward_reference({x}).toTensor());
  ASSERT_EQ(ref.scalar_type(), torch::kDouble);
  EXPECT_TRUE(torch::allclose(ref, torch::matmul(x.to(torch::kDouble), w.to(torch::kDouble)), 1e-12, 1e-12));
}

// (c) Casts the graph asks for still round in the reference: .to(bf16), .half(), and softmax's
// dtype argument (the value comes back to float64 right after each).
TEST(Compare, TheReferenceRoundsWhereTheGraphCasts) {
  torch::manual_seed(14);
  torch::jit::Module m("Casts");
  const auto w = torch::randn({32, 32}) / 5.0;
  m.register_parameter("w", w, false);
  m.define(R"JIT(
def forward(self, x):
    y = torch.matmul(x, self.w)
    z = y.to(15).float() * 3.0 + x.half().float()
    return z, torch.softmax(y, -1, 6)
)JIT");
  auto c = torchfuse::compile(m);
  const auto x = torch::randn({8, 32});
  const auto out = c.forward_reference({x}).toTupleRef().elements();
  ASSERT_EQ(out.size(), 2u);
  const at::Tensor z = out[0].toTensor(), s = out[1].toTensor();
  ASSERT_EQ(z.scalar_type(), torch::kDouble);
  ASSERT_EQ(s.scalar_type(), torch::kDouble);
  const auto yd = torch::matmul(x.to(torch::kDouble), w.to(torch::kDouble));
  const auto xd = x.to(torch::kDouble);
  EXPECT_TRUE(torch::equal(z, yd.to(torch::kBFloat16).to(torch::kDouble) * 3.0 + x.to(torch::kHalf).to(torch::kDouble)));
  EXPECT_FALSE(torch::allclose(z, yd * 3.0 + xd, 1e-6, 1e-6));  // the roundings happened
  EXPECT_TRUE(torch::equal(s, torch::softmax(yd, -1, torch::kFloat).to(torch::kDouble)));
  EXPECT_FALSE(torch::equal(s, torch::softmax(yd, -1)));
  const auto report = torchfuse::compare_with_eager(c, {x});
  ASSERT_EQ(report.outputs.size(), 2u);
  EXPECT_TRUE(report.outputs[0].has_reference && report.outputs[1].has_reference) << report.to_string();
  EXPECT_TRUE(report.passed()) << report.to_string();
}

// A value made narrow by a constant dtype argument, meeting a float64 one in an op that does not
// promote (matmul): the cast must return to float64 before the reference's profiling run, not
// only after it (a Hugging Face mask made with full(..., dtype=torch.bfloat16) stopped that run).
TEST(Compare, ConstantCastsReturnBeforeTheReferenceRuns) {
  torch::manual_seed(15);
  auto m = tftest::module_returning("x", "torch.matmul(x, torch.full([x.size(1), 16], 0.25, dtype=6)).relu() * 2.0");
  auto c = torchfuse::compile(m);
  const auto x = torch::randn({8, 16});
  const at::Tensor ref = c.forward_reference({x}).toTensor();
  ASSERT_EQ(ref.scalar_type(), torch::kDouble);
  EXPECT_TRUE(torch::allclose(ref, torch::matmul(x.to(torch::kDouble), torch::full({16, 16}, 0.25, torch::kDouble)).relu() * 2.0));
  const auto report = torchfuse::compare_with_eager(c, {x});
  EXPECT_TRUE(report.reference_note.empty()) << report.reference_note;
  EXPECT_TRUE(report.passed()) << report.to_string();
}

// The same inside an If body, which the profile does not see: the cast rounds once, and the
// product after it is float64 (not bf16, which would round it again).
TEST(Compare, CastsInsideBlocksRoundOnceToo) {
  auto c = torchfuse::compile(tftest::module_from(R"JIT(
def forward(self, x):
    if x.size(0) > 0:
        y = x.to(15) * 3.0 + 0.001
        z = torch.softmax(x, -1, 6) * 0.1
    else:
        y = x
        z = x
    return y, z
)JIT"));
  torch::manual_seed(17);
  const auto x = torch::randn({8, 64});
  const auto out = c.forward_reference({x}).toTupleRef().elements();
  const auto xd = x.to(torch::kDouble);
  const at::Tensor y = out.at(0).toTensor(), z = out.at(1).toTensor();
  ASSERT_EQ(y.scalar_type(), torch::kDouble);
  EXPECT_TRUE(torch::equal(y, x.to(torch::kBFloat16).to(torch::kDouble) * 3.0 + 0.001)) << (y - xd * 3.0).abs().max();
  EXPECT_TRUE(torch::equal(z, torch::softmax(xd, -1, torch::kFloat).to(torch::kDouble) * 0.1));
}

// (d) A traced graph's size arithmetic: NumToTensor(size(x, 1)), integer tensors from it (a
// reshape size through aten::Int, an index), and a float scale from it (sqrt of a long tensor
// is float32: it rounds there and returns to float64). The integer tensors stay integer.
TEST(Compare, TracedSizeArithmeticKeepsWorking) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %c0 : int = prim::Constant[value=0]()
  %c1 : int = prim::Constant[value=1]()
  %c2 : int = prim::Constant[value=2]()
  %cm1 : int = prim::Constant[value=-1]()
  %n : int = aten::size(%x, %c1)
  %nt : Tensor = prim::NumToTensor(%n)
  %twice : Tensor = aten::mul(%nt, %c2)
  %cols : int = aten::Int(%twice)
  %sizes : int[] = prim::ListConstruct(%cm1, %cols)
  %y : Tensor = aten::reshape(%x, %sizes)
  %scale : Tensor = aten::sqrt(%nt)
  %z : Tensor = aten::div(%y, %scale)
  %last : Tensor = aten::sub(%twice, %c1, %c1)
  %idx : Tensor = aten::unsqueeze(%last, %c0)
  %picked : Tensor = aten::index_select(%z, %c1, %idx)
  %out : (Tensor, Tensor) = prim::TupleConstruct(%z, %picked)
  return (%out)
)IR",
                      graph.get());
  auto c = torchfuse::compile_graph(graph);
  torch::manual_seed(15);
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const auto x = torch::randn({6, 8}).to(dtype);
    c10::IValue result;
    ASSERT_NO_THROW(result = c.forward_reference({x})) << c10::toString(dtype);
    const auto out = result.toTupleRef().elements();
    const at::Tensor z = out.at(0).toTensor(), picked = out.at(1).toTensor();
    ASSERT_EQ(z.scalar_type(), torch::kDouble);
    // sqrt(8) as eager computes it, in float32; the division in float64.
    const double scale = static_cast<double>(std::sqrt(8.0f));
    const auto expected = x.to(torch::kDouble).reshape({-1, 16}) / scale;
    EXPECT_TRUE(torch::equal(z, expected)) << (z - expected).abs().max();
    EXPECT_TRUE(torch::equal(picked, expected.narrow(1, 15, 1)));
    const auto report = torchfuse::compare_with_eager(c, {x});
    ASSERT_EQ(report.outputs.size(), 2u);
    EXPECT_TRUE(report.outputs[0].has_reference) << report.to_string();
    EXPECT_TRUE(report.passed()) << report.to_string();
  }
}

// (e) A graph that cannot run in float64: the report says so, and why, instead of '-' alone.
// quantize_per_tensor takes float32 only; a dtype assert in the model is another such graph.
TEST(Compare, AReferenceThatCannotRunIsReported) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"torch.quantize_per_tensor(x * 2.0, 0.1, 0, 13).dequantize() + 1.0", ""},
      {"", "def forward(self, x):\n    assert x.dtype == 6, 'float32 only'\n    return x * 2.0 + 1.0\n"},
  };
  for (const auto& [expr, source] : cases) {
    auto c = torchfuse::compile(source.empty() ? tftest::module_returning("x", expr) : tftest::module_from(source));
    const auto x = torch::randn({4, 16});
    EXPECT_ANY_THROW(c.forward_reference({x}));
    const auto report = torchfuse::compare_with_eager(c, {x});
    ASSERT_EQ(report.outputs.size(), 1u);
    EXPECT_FALSE(report.outputs[0].has_reference);
    EXPECT_TRUE(report.passed()) << report.to_string();  // judged against eager alone
    EXPECT_EQ(report.reference_note.rfind("no float64 reference: ", 0), 0u) << report.reference_note;
    EXPECT_NE(report.to_string().find(report.reference_note), std::string::npos) << report.to_string();
    // One line, the op's own message, not the interpreter's wrapper or a C++ backtrace.
    EXPECT_EQ(report.reference_note.find('\n'), std::string::npos) << report.reference_note;
    EXPECT_EQ(report.reference_note.find("The following operation failed"), std::string::npos) << report.reference_note;
    if (!source.empty()) EXPECT_NE(report.reference_note.find("float32 only"), std::string::npos) << report.reference_note;
    std::cout << report.to_string();
  }
  // No floating value anywhere: nothing to say, the check is exact.
  auto ints = torchfuse::compile(tftest::module_returning("x", "x * 2 + 1"));
  const auto report = torchfuse::compare_with_eager(ints, {torch::arange(8)});
  EXPECT_TRUE(report.reference_note.empty()) << report.reference_note;
  EXPECT_FALSE(report.outputs.at(0).has_reference);
  EXPECT_TRUE(report.passed());
}

}  // namespace
