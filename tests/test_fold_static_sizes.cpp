// Sizes fixed by the graph folded to constants (passes/fold_static_sizes.h), on the CPU: the
// rewrite's report, the size arithmetic gone from the rewritten graph (scripted `//` and the
// tracer's NumToTensor / floor_divide / Int), sizes of inputs left alone, and results against the
// module through the groups' ATen fallbacks.
#include <torch/csrc/jit/ir/irparser.h>

#include "tests/cpu_fallbacks.h"
#include "tests/fallback_util.h"

namespace {

using tftest::any_line_has;
using tftest::count_occurrences;
using tftest::joined;

// Llama's rotate_half on heads viewed from a linear: `q.size(-1) // 2` is the view's constant 8
// halved, and the linear's output features (16) are its weight's rows.
TEST(FoldStaticSizes, HalfOfAViewedHeadDimIsAConstant) {
  torch::jit::Module m("Rope");
  m.register_parameter("w", torch::randn({16, 16}) / 4.0, false);
  m.define(R"JIT(
def forward(self, x):
    B = x.size(0)
    T = x.size(1)
    y = torch.linear(x, self.w)
    q = y.view(B, T, 2, y.size(-1) // 2).transpose(1, 2)
    h = q.size(-1) // 2
    return torch.cat([-q[..., h:], q[..., :h]], -1) * 2.0 + q
)JIT");
  const std::vector<c10::IValue> in{torch::randn({3, 5, 16})};
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
  ASSERT_TRUE(any_line_has(e.rewrites, "static sizes folded (2)")) << joined(e.rewrites) << e.rewritten_graph;
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::floordiv("), 0) << e.rewritten_graph;
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::size("), 2) << e.rewritten_graph;  // B and T stay
  auto impl = tftest::on_cpu_fallbacks(m);
  for (int64_t t : {5, 9}) {
    const std::vector<c10::IValue> fresh{torch::randn({3, t, 16})};
    const at::Tensor got = impl->forward(fresh).toTensor(), want = m.forward(fresh).toTensor();
    EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max();
  }
}

// The tracer's spelling of the same arithmetic: NumToTensor, floor_divide, Int.
TEST(FoldStaticSizes, TracedSizeArithmeticFolds) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %c0 : int = prim::Constant[value=0]()
  %c1 : int = prim::Constant[value=1]()
  %c2 : int = prim::Constant[value=2]()
  %c3 : int = prim::Constant[value=3]()
  %cm1 : int = prim::Constant[value=-1]()
  %c8 : int = prim::Constant[value=8]()
  %B : int = aten::size(%x, %c0)
  %T : int = aten::size(%x, %c1)
  %l : int[] = prim::ListConstruct(%B, %T, %cm1, %c8)
  %v : Tensor = aten::view(%x, %l)
  %q : Tensor = aten::transpose(%v, %c1, %c2)
  %s : int = aten::size(%q, %c3)
  %t : Tensor = prim::NumToTensor(%s)
  %h : Tensor = aten::floor_divide(%t, %c2)
  %hi : int = aten::Int(%h)
  %a : Tensor = aten::slice(%q, %cm1, %hi, %none, %c1)
  %b : Tensor = aten::slice(%q, %cm1, %c0, %hi, %c1)
  %na : Tensor = aten::neg(%a)
  %parts : Tensor[] = prim::ListConstruct(%na, %b)
  %r : Tensor = aten::cat(%parts, %cm1)
  %out : Tensor = aten::mul(%r, %q)
  return (%out)
)IR",
                      graph.get());
  const std::vector<c10::IValue> in{torch::randn({2, 6, 32})};
  const auto e = torchfuse::compile_graph(graph, tftest::quiet_options()).explain(in);
  ASSERT_TRUE(any_line_has(e.rewrites, "static sizes folded (1): aten::size (%")) << joined(e.rewrites);
  EXPECT_TRUE(any_line_has(e.rewrites, ") = 8")) << joined(e.rewrites);
  for (const char* gone : {"prim::NumToTensor(", "aten::floor_divide(", "aten::Int("})
    EXPECT_EQ(count_occurrences(e.rewritten_graph, gone), 0) << gone << "\n" << e.rewritten_graph;
  auto prepared = graph->copy();
  torchfuse::prepare_graph(prepared);
  auto impl = std::make_shared<torchfuse::CompiledModuleImpl>(prepared, tftest::quiet_options());
  torchfuse::CompiledModuleImpl::TestHooks hooks;
  hooks.cpu_fallbacks = true;
  impl->set_test_hooks(hooks);
  const at::Tensor got = impl->forward(in).toTensor(), want = impl->forward_eager(in).toTensor();
  EXPECT_TRUE(torch::allclose(got, want, 1e-6, 1e-6)) << (got - want).abs().max();
}

// Sizes that come from the inputs change between calls: they stay.
TEST(FoldStaticSizes, InputSizesStay) {
  const auto m = tftest::module_from(R"JIT(
def forward(self, x):
    return x.view(x.size(0), -1).sum(-1) * 2.0 + x.size(1)
)JIT");
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain({torch::randn({4, 6, 8})});
  EXPECT_FALSE(any_line_has(e.rewrites, "static sizes folded")) << joined(e.rewrites);
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::size("), 2) << e.rewritten_graph;
}

// Through permute and unsqueeze: the view's constant 8 and the new dim's 1 fold, the batch stays.
TEST(FoldStaticSizes, ThroughPermuteAndUnsqueeze) {
  const auto m = tftest::module_from(R"JIT(
def forward(self, x):
    y = x.view(x.size(0), 4, 8).permute(2, 0, 1).unsqueeze(0)
    return y * float(y.size(1) + y.size(0)) + float(y.size(2))
)JIT");
  const std::vector<c10::IValue> in{torch::randn({3, 32})};
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
  ASSERT_TRUE(any_line_has(e.rewrites, "static sizes folded (2)")) << joined(e.rewrites) << e.rewritten_graph;
  // x.size(0) for the view and y.size(2) (the batch, through the permute) stay.
  EXPECT_EQ(count_occurrences(e.rewritten_graph, "aten::size("), 2) << e.rewritten_graph;
  const auto [got, want] = tftest::fallback_and_eager(m, in);
  EXPECT_TRUE(torch::allclose(got, want, 1e-6, 1e-6)) << (got - want).abs().max();
}

}  // namespace
