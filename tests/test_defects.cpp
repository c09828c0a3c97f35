// Defects found trying the API as a new user would (issue 23), each a regression test: values
// that if/loop bodies read, graphs with several or no outputs, dict results, copies that must
// not alias, guards inside lists, option validation, ints for floats, compile_nn's mode.
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include "runtime/compiled_module.h"
#include "runtime/guards.h"
#include "src/prepare_graph.h"
#include "tests/test_util.h"

using tftest::module_from;

namespace {

// Every group on its fallback graph (the rewritten graph, FusionGroup nodes included, runs on the
// CPU) against eager, for each input set.
void expect_rewrite_matches_eager(const torch::jit::Module& m, const std::vector<std::vector<c10::IValue>>& calls,
                                  size_t groups) {
  torchfuse::CompiledModuleImpl impl(torchfuse::prepare_module_graph(m), tftest::quiet_options());
  for (const auto& in : calls) {
    const auto e = impl.explain(in, false);
    ASSERT_EQ(e.kernels.size(), groups) << e.ir_after;
    const auto report = torchfuse::compare_outputs(impl.forward_eager(in), impl.run_on_fallbacks(in));
    EXPECT_TRUE(report.passed()) << report.to_string() << e.rewritten_graph;
  }
}

// A fused chain whose result only an if-body reads: it is the group's output (it used to have
// none: "group 0 has no outputs").
TEST(Defects, ChainReadOnlyInsideAnIfBody) {
  const auto m = module_from(R"JIT(
def forward(self, x, flag: bool):
    y = torch.relu(x * 2.0)
    z = x + 1.0
    if flag:
        z = z + y
    return z
)JIT");
  const auto x = torch::randn({8, 16});
  expect_rewrite_matches_eager(m, {{x, true}, {x, false}}, 1);
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain({x, true});
  bool said = false;
  for (const auto& r : e.refused) said = said || r.find("prim::If") != std::string::npos;
  EXPECT_TRUE(said) << "explain() should say why the if-body's add is not fused";
}

// A value both a later fused op and an if-body read stays available to the if-body.
TEST(Defects, ValueReadByAGroupAndAnIfBody) {
  const auto m = module_from(R"JIT(
def forward(self, x, flag: bool):
    a = torch.sigmoid(x) * 3.0
    b = torch.relu(a) + 1.0
    if flag:
        b = b * a
    return b
)JIT");
  const auto x = torch::randn({8, 16});
  expect_rewrite_matches_eager(m, {{x, true}, {x, false}}, 1);
}

// A loop accumulator over a fused value.
TEST(Defects, ValueReadByALoopBody) {
  const auto m = module_from(R"JIT(
def forward(self, x, n: int):
    y = torch.sigmoid(x) * 3.0
    acc = x * 0.5
    for i in range(n):
        acc = acc + y
    return acc
)JIT");
  const auto x = torch::randn({8, 16});
  expect_rewrite_matches_eager(m, {{x, int64_t{3}}, {x, int64_t{0}}}, 1);
}

std::shared_ptr<torch::jit::Graph> parse(const std::string& ir) {
  auto g = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, g.get());
  return g;
}

// (x * 2, relu(x * 2)): a graph with two outputs, not a tuple.
std::shared_ptr<torch::jit::Graph> two_outputs() {
  return parse(R"IR(
graph(%x : Tensor):
  %c : float = prim::Constant[value=2.]()
  %a : Tensor = aten::mul(%x, %c)
  %b : Tensor = aten::relu(%a)
  return (%a, %b)
)IR");
}

// compile_graph on a graph with two outputs returns both (it used to return the first alone).
TEST(Defects, GraphWithTwoOutputsReturnsBoth) {
  const auto g = two_outputs();
  auto c = torchfuse::compile_graph(g, tftest::quiet_options());
  const auto x = torch::randn({4, 8});
  const auto out = c.forward({x});
  ASSERT_TRUE(out.isTuple());
  const auto& e = out.toTupleRef().elements();
  ASSERT_EQ(e.size(), 2u);
  EXPECT_TRUE(torch::equal(e[0].toTensor(), x * 2.0));
  EXPECT_TRUE(torch::equal(e[1].toTensor(), torch::relu(x * 2.0)));
  EXPECT_EQ(torchfuse::compare_with_eager(c, {x}).outputs.size(), 2u);
  torchfuse::CompiledModuleImpl impl(g, tftest::quiet_options());
  const auto report = torchfuse::compare_outputs(impl.forward_eager({x}), impl.run_on_fallbacks({x}));
  EXPECT_EQ(report.outputs.size(), 2u);
  EXPECT_TRUE(report.passed()) << report.to_string();
}

TEST(Defects, GraphWithoutOutputsReturnsNone) {
  const auto g = parse(R"IR(
graph(%x : Tensor):
  return ()
)IR");
  auto c = torchfuse::compile_graph(g, tftest::quiet_options());
  EXPECT_TRUE(c.forward({torch::randn({2})}).isNone());
  EXPECT_TRUE(c.forward_eager({torch::randn({2})}).isNone());
}

TEST(Defects, CompareWithEagerTakesDicts) {
  const auto m = module_from(R"JIT(
def forward(self, x):
    return {"a": x * 2.0, "b": torch.relu(x)}
)JIT");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto report = torchfuse::compare_with_eager(c, {torch::randn({4, 8})});
  EXPECT_EQ(report.outputs.size(), 2u);
  EXPECT_TRUE(report.passed()) << report.to_string();
}

// to(copy=True) and _to_copy return a new tensor even to the same dtype: a cast in the IR, not
// the identity (whose result would alias the input).
TEST(Defects, CopyingToIsACastNotTheIdentity) {
  const auto x = torch::randn({4, 8});
  const auto copy = torchfuse::compile(tftest::module_returning("x", "torch.relu(x.to(6, False, True)) * 2.0"),
                                       tftest::quiet_options())
                        .explain({x});
  EXPECT_NE(copy.ir_before.find("cast"), std::string::npos) << copy.ir_before;
  const auto plain =
      torchfuse::compile(tftest::module_returning("x", "torch.relu(x.to(6)) * 2.0"), tftest::quiet_options()).explain({x});
  EXPECT_EQ(plain.ir_before.find("cast"), std::string::npos) << plain.ir_before;
  // Alone (a group of one op stays in ATen) the copy is eager's: a new tensor.
  auto c = torchfuse::compile(tftest::module_returning("x", "x.to(6, False, True)"), tftest::quiet_options());
  const auto out = c.forward({x}).toTensor();
  EXPECT_NE(out.data_ptr(), x.data_ptr());
  EXPECT_TRUE(torch::equal(out, x));
}

// Tensors inside list inputs are guarded: a dtype or requires_grad change there is a new signature.
TEST(Defects, GuardsLookInsideLists) {
  using torchfuse::input_signature;
  auto list = [](std::vector<at::Tensor> ts) { return c10::IValue(c10::List<at::Tensor>(ts)); };
  const auto a = torch::randn({4}), b = torch::randn({4});
  EXPECT_EQ(input_signature({list({a, b})}), input_signature({list({torch::randn({4}), torch::randn({4})})}));
  EXPECT_NE(input_signature({list({a, b})}), input_signature({list({a, b.to(torch::kBFloat16)})}));
  EXPECT_NE(input_signature({list({a, b})}), input_signature({list({a, torch::randn({4}).requires_grad_()})}));
  EXPECT_NE(input_signature({list({a, b})}), input_signature({list({a, b, a})}));
}

// explain() of fp16 graphs works without a GPU even where LibTorch's CPU kernels lack the op
// (1.13 has no Half softmax): planning takes its types from a meta run. (1.13 has no meta
// layer norm either: an fp16 layer norm still needs a CPU kernel there; see docs, Known limits.)
TEST(Defects, ExplainsHalfGraphsOnTheCpu) {
  const auto x = torch::randn({32, 96}).to(torch::kHalf);
  for (const char* expr : {"torch.softmax(x * 2.0, dim=-1)", "torch.log_softmax(x, 1) + x", "torch.sigmoid(x) * x"}) {
    SCOPED_TRACE(expr);
    const auto e = torchfuse::compile(tftest::module_returning("x", expr), tftest::quiet_options()).explain({x}, true);
    ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
    EXPECT_GT(e.cubin_bytes.at(0), 0u);
    EXPECT_NE(e.kernels[0].source.find("tf_half"), std::string::npos);
  }
}

// ---- the same on the GPU, through the fused path ----

TEST(DefectsGpu, ListElementDtypeChangeRecompilesInsteadOfThrowing) {
  REQUIRE_GPU();
  const auto m = module_from(R"JIT(
def forward(self, xs: List[torch.Tensor]):
    return torch.relu(xs[0] * 2.0) + xs[1]
)JIT");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  auto list = [](std::vector<at::Tensor> ts) { return c10::IValue(c10::List<at::Tensor>(ts)); };
  const auto x = torch::randn({4, 8}, torch::kCUDA);
  const auto first = torchfuse::compare_with_eager(c, {list({x, x})});
  EXPECT_TRUE(first.passed()) << first.to_string();
  const auto second = torchfuse::compare_with_eager(c, {list({x, x.to(torch::kBFloat16)})});
  EXPECT_TRUE(second.passed()) << second.to_string();
  EXPECT_EQ(c.stats().specializations, 2);
}

TEST(DefectsGpu, IfBodiesAndLoopsReadFusedValues) {
  REQUIRE_GPU();
  const auto m = module_from(R"JIT(
def forward(self, x, flag: bool, n: int):
    a = torch.sigmoid(x) * 3.0
    b = torch.relu(a) + 1.0
    if flag:
        b = b * a
    for i in range(n):
        b = b + a
    return b
)JIT");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto x = torch::randn({64, 96}, torch::kCUDA);
  for (bool flag : {true, false}) {
    const auto report = torchfuse::compare_with_eager(c, {x, flag, int64_t{2}});
    EXPECT_TRUE(report.passed()) << report.to_string();
  }
  EXPECT_GT(c.stats().fused_calls, 0);
}

TEST(DefectsGpu, TwoOutputsAndCopiesOnTheFusedPath) {
  REQUIRE_GPU();
  const auto g = two_outputs();
  auto two = torchfuse::compile_graph(g, tftest::quiet_options());
  const auto x = torch::randn({64, 96}, torch::kCUDA);
  const auto report = torchfuse::compare_with_eager(two, {x});
  EXPECT_EQ(report.outputs.size(), 2u);
  EXPECT_TRUE(report.passed()) << report.to_string();
  auto copy = torchfuse::compile(tftest::module_returning("x", "(x.to(6, False, True), torch.relu(x) * 2.0)"),
                                 tftest::quiet_options());
  const auto out = copy.forward({x}).toTupleRef().elements();
  EXPECT_NE(out[0].toTensor().data_ptr(), x.data_ptr());
  EXPECT_TRUE(torch::equal(out[0].toTensor(), x));
}

TEST(Defects, OptionsAreValidated) {
  const auto m = tftest::module_returning("x", "torch.relu(x) * 2.0");
  auto bad = [&](auto set) {
    torchfuse::CompileOptions o;
    set(o);
    return tftest::error_of([&] { torchfuse::compile(m, o); });
  };
  EXPECT_NE(bad([](auto& o) { o.min_group_size = -3; }).find("min_group_size must be at least 1, got -3"),
            std::string::npos);
  EXPECT_NE(bad([](auto& o) { o.max_specializations = 0; }).find("max_specializations must be at least 1, got 0"),
            std::string::npos);
  EXPECT_NE(bad([](auto& o) { o.offline_arch = "hopper"; }).find("offline_arch must look like \"sm_90\""),
            std::string::npos);
  EXPECT_EQ(bad([](auto& o) { o.offline_arch = "sm_90a"; }), "");
}

// An int where the graph takes a float is taken as that float (as a Python call of a scripted
// function takes it), on every path: the graph never computes with an int there.
TEST(Defects, AnIntWhereTheGraphTakesAFloatBecomesAFloat) {
  const auto m = module_from("def forward(self, x, s: float):\n    return x * (s / 4)\n");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto x = torch::randn({4});
  EXPECT_TRUE(torch::allclose(c.forward({x, int64_t{2}}).toTensor(), x * 0.5));
  EXPECT_TRUE(torch::allclose(c.forward_eager({x, int64_t{2}}).toTensor(), x * 0.5));
  EXPECT_TRUE(torchfuse::compare_with_eager(c, {x, int64_t{2}}).passed());
}

// compile_nn traces in eval mode, as compile() freezes modules in eval mode, and leaves the
// module's own mode as it was.
TEST(Defects, CompileNnTracesInEvalMode) {
  torch::nn::Dropout dropout(0.5);
  dropout->train();
  const auto x = torch::randn({64, 64});
  auto c = torchfuse::compile_nn(dropout, {x});
  EXPECT_TRUE(torch::equal(c.forward({x}).toTensor(), x));
  EXPECT_TRUE(dropout->is_training());
}

}  // namespace
