// Views whose arguments the graph computes at run time (size arithmetic, issue 22 item 3):
// x[..., : x.size(-1) // 2], x.view(x.size(0), x.size(1), 4, -1), mask.expand(B, 1, T, T), as
// scripted code writes them, and the prim::NumToTensor / aten::Int chains of traced models.
// They fuse like constant views; each call reads its own ints (ir::Node::dim_operands), so one
// specialization serves every size. CPU tests check plans and refusals; GPU tests run two sizes
// per specialization against eager in every dtype.
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/test_util.h"

namespace {

using Shapes = std::vector<std::vector<int64_t>>;

struct SizeViewCase {
  const char* name;
  const char* source;
  std::function<Shapes(int64_t)> shapes;  // inputs' shapes for a size parameter n
};

std::vector<SizeViewCase> size_view_cases() {
  return {
      {"rotate_halves", R"JIT(
def forward(self, x, y):
    h = x.size(-1) // 2
    x1 = x[..., :h]
    x2 = x[..., h:]
    return torch.sigmoid(x1 * 2.0 - x2) * y
)JIT",
       [](int64_t n) { return Shapes{{2, n, 32}, {2, n, 16}}; }},
      {"head_split", R"JIT(
def forward(self, x, s):
    b = x.size(0)
    t = x.size(1)
    q = x.view(b, t, 4, -1).transpose(1, 2)
    return torch.tanh(q * 0.5 + 1.0) * s
)JIT",
       [](int64_t n) { return Shapes{{2, n, 64}, {1, 1, 1, 16}}; }},
      {"head_split_sizes", R"JIT(
def forward(self, x):
    b, t, c = x.size()
    return torch.relu(x * 2.0).view(b, t, 8, c // 8).permute(0, 2, 1, 3) + 1.0
)JIT",
       [](int64_t n) { return Shapes{{3, n, 64}}; }},
      {"mask_expand", R"JIT(
def forward(self, x, m):
    b = x.size(0)
    t = x.size(2)
    e = m[:, None, None, :].expand(b, 1, t, t)
    return (1.0 - e) * -10000.0 + x
)JIT",
       [](int64_t n) { return Shapes{{2, 4, n, n}, {2, n}}; }},
      {"narrow_from_size", R"JIT(
def forward(self, x):
    n = x.size(1)
    return torch.exp(x.narrow(1, n // 4, n // 2) * 0.5) + 1.0
)JIT",
       [](int64_t n) { return Shapes{{4, n * 4}}; }},
      {"head_split_contiguous", R"JIT(
def forward(self, x):
    b, t, c = x.size(0), x.size(1), x.size(2)
    return (x.view(b, t, 4, c // 4).transpose(1, 2) * 0.125).contiguous()
)JIT",
       [](int64_t n) { return Shapes{{2, n, 32}}; }},
      {"constant_view", R"JIT(
def forward(self, x):
    return torch.relu(x * 2.0).view(-1, 4, 8) - 1.0
)JIT",
       [](int64_t n) { return Shapes{{n, 32}}; }},
  };
}

std::vector<c10::IValue> random_inputs(const Shapes& shapes, c10::ScalarType dtype, c10::Device device) {
  std::vector<c10::IValue> in;
  for (const auto& s : shapes) in.emplace_back(torch::randn(s).to(device).to(dtype));
  return in;
}

TEST(SizeViews, ViewsWithRunTimeSizesFuseIntoOneKernel) {
  for (const auto& c : size_view_cases()) {
    SCOPED_TRACE(c.name);
    auto compiled = torchfuse::compile(tftest::module_from(c.source), tftest::quiet_options());
    const auto e = compiled.explain(random_inputs(c.shapes(12), c10::kFloat, c10::kCPU), true);
    EXPECT_EQ(e.kernels.size(), 1u) << e.ir_after << tftest::joined(e.refused);
    for (const auto& r : e.refused) {
      EXPECT_EQ(r.find("not a constant"), std::string::npos) << r;
      EXPECT_EQ(r.find("stays in ATen"), std::string::npos) << r;
    }
  }
}

// A scaled head split made contiguous is two kernels in eager (the mul keeps the transposed
// layout, contiguous copies it) and one fused, though it holds one op besides its views; a
// contiguous() of a value eager already holds row-major costs eager nothing, and a lone op
// before it stays in ATen.
TEST(SizeViews, ContiguousOfATransposedResultCountsAsAnOp) {
  const std::vector<c10::IValue> in{torch::randn({2, 12, 32})};
  auto split = torchfuse::compile(tftest::module_from(R"JIT(
def forward(self, x):
    b, t, c = x.size(0), x.size(1), x.size(2)
    return (x.view(b, t, 4, c // 4).transpose(1, 2) * 0.125).contiguous()
)JIT"),
                                  tftest::quiet_options());
  EXPECT_EQ(split.explain(in).kernels.size(), 1u);
  auto plain = torchfuse::compile(tftest::module_returning("x", "(x * 0.125).contiguous()"), tftest::quiet_options());
  const auto e = plain.explain(in);
  EXPECT_EQ(e.kernels.size(), 0u);
  bool said = false;
  for (const auto& r : e.refused) said = said || r.find("fewer than min_group_size") != std::string::npos;
  EXPECT_TRUE(said) << tftest::joined(e.refused);
}

// The printed IR names the int a dim comes from.
TEST(SizeViews, IrPrintsRunTimeDimsAsTheirValues) {
  auto compiled = torchfuse::compile(tftest::module_from(size_view_cases()[0].source), tftest::quiet_options());
  const auto e = compiled.explain(random_inputs({{2, 12, 32}, {2, 12, 16}}, c10::kFloat, c10::kCPU));
  // slice[dims=[2, 0, %h, 1]] and slice[dims=[2, %h, INT64_MAX, 1]], %h an int.
  EXPECT_TRUE(tftest::contains_in_order(e.ir_before, {"slice[dims=[2, 0, %", "slice[dims=[2, %"})) << e.ir_before;
}

// Traced models compute sizes through 0-dim tensors: size -> NumToTensor -> floor_divide -> Int.
TEST(SizeViews, TracedSizeArithmeticFuses) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor, %cos : Tensor, %sin : Tensor):
  %three : int = prim::Constant[value=3]()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %big : int = prim::Constant[value=9223372036854775807]()
  %s : int = aten::size(%x, %three)
  %st : Tensor = prim::NumToTensor(%s)
  %ht : Tensor = aten::floor_divide(%st, %two)
  %h : int = aten::Int(%ht)
  %x1 : Tensor = aten::slice(%x, %three, %zero, %h, %one)
  %x2 : Tensor = aten::slice(%x, %three, %h, %big, %one)
  %a : Tensor = aten::mul(%x1, %cos)
  %b : Tensor = aten::mul(%x2, %sin)
  %r : Tensor = aten::sub(%a, %b, %one)
  return (%r)
)IR",
                      graph.get());
  auto compiled = torchfuse::compile_graph(graph, tftest::quiet_options());
  const std::vector<c10::IValue> in{torch::randn({2, 4, 6, 16}), torch::randn({6, 8}), torch::randn({6, 8})};
  const auto e = compiled.explain(in);
  EXPECT_EQ(e.kernels.size(), 1u) << e.ir_after << tftest::joined(e.refused);
  const auto out = compiled.forward(in).toTensor();
  const auto x = in[0].toTensor();
  const auto expected = x.slice(3, 0, 8) * in[1].toTensor() - x.slice(3, 8) * in[2].toTensor();
  EXPECT_TRUE(torch::allclose(out, expected));
}

// A reshape that is no view of the strides it reads (a transposed value's merged dims) moves
// after the pointwise ops reading it (passes/sink_reshapes.h): one kernel computes in the
// transposed value's shape, and the reshape back stays outside it, a view, with the reason.
TEST(SizeViews, ReshapeThatCopiesMovesAfterItsReaders) {
  auto compiled = torchfuse::compile(tftest::module_from(R"JIT(
def forward(self, x):
    b = x.size(0)
    t = x.size(2)
    return torch.relu(x.transpose(1, 2).reshape(b, t, -1) * 2.0) + 1.0
)JIT"),
                                     tftest::quiet_options());
  const auto e = compiled.explain({torch::randn({2, 4, 10, 8})});
  bool moved = false, said = false;
  for (const auto& r : e.rewrites) moved = moved || r.find("moved after 3 pointwise op(s)") != std::string::npos;
  for (const auto& r : e.refused) said = said || r.find("do not merge") != std::string::npos;
  EXPECT_TRUE(moved) << tftest::joined(e.rewrites);
  EXPECT_TRUE(said) << tftest::joined(e.refused);
  EXPECT_EQ(e.kernels.size(), 1u) << e.ir_after;
}

// An int the view needs that is computed from the group's own output would need the group
// before itself: that view stays out.
TEST(SizeViews, SizesOfAGroupsOwnValueDoNotMakeACycle) {
  auto compiled = torchfuse::compile(tftest::module_from(R"JIT(
def forward(self, x):
    y = torch.relu(x * 2.0)
    h = y.size(-1) // 2
    return torch.sigmoid(y[..., :h] + 1.0)
)JIT"),
                                     tftest::quiet_options());
  const std::vector<c10::IValue> in{torch::randn({4, 16})};
  const auto e = compiled.explain(in);
  EXPECT_LE(e.kernels.size(), 2u);
  const auto expected = torch::sigmoid(torch::relu(in[0].toTensor() * 2.0).slice(1, 0, 8) + 1.0);
  EXPECT_TRUE(torch::allclose(compiled.forward(in).toTensor(), expected));
}

// On the GPU: one specialization serves two sizes, each call reading its own ints; every
// dtype matches eager (against float64 where eager rounds).
TEST(SizeViewsGpu, RunTimeSizesFollowEachCall) {
  REQUIRE_GPU();
  for (const auto& c : size_view_cases()) {
    for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      const std::string label = std::string(c.name) + " " + c10::toString(dtype);
      SCOPED_TRACE(label);
      auto o = tftest::quiet_options();
      o.debug_poison_outputs = true;
      auto compiled = torchfuse::compile(tftest::module_from(c.source), o);
      compiled.forward(random_inputs(c.shapes(12), dtype, c10::kCUDA));
      for (int64_t n : {12, 20, 6}) {
        const auto in = random_inputs(c.shapes(n), dtype, c10::kCUDA);
        const auto before = compiled.stats();
        const auto report = torchfuse::compare_with_eager(compiled, in);
        torch::cuda::synchronize();
        const auto after = compiled.stats();
        EXPECT_TRUE(report.passed()) << n << "\n" << report.to_string() << compiled.graph_for(in);
        EXPECT_EQ(after.kernel_launches - before.kernel_launches, 1) << n << compiled.graph_for(in);
        EXPECT_EQ(after.fallback_calls - before.fallback_calls, 0) << n;
      }
      EXPECT_EQ(compiled.stats().specializations, 1);
    }
  }
}

// A call whose ints make a view eager rejects (a view of sizes that do not multiply out) runs
// the fallback, which raises eager's error.
TEST(SizeViewsGpu, ImpossibleRunTimeViewRaisesEagersError) {
  REQUIRE_GPU();
  auto compiled = torchfuse::compile(tftest::module_from(R"JIT(
def forward(self, x, k: int):
    return torch.relu(x * 2.0).view(x.size(0), k, -1) + 1.0
)JIT"),
                                     tftest::quiet_options());
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  const auto x = torch::randn({4, 24}, opts);
  const auto good = compiled.forward({x, int64_t{3}}).toTensor();
  EXPECT_TRUE(torch::allclose(good, torch::relu(x * 2.0).view({4, 3, -1}) + 1.0));
  const auto other = compiled.forward({x, int64_t{6}}).toTensor();
  EXPECT_TRUE(torch::allclose(other, torch::relu(x * 2.0).view({4, 6, -1}) + 1.0));
  EXPECT_THROW(compiled.forward({x, int64_t{5}}), std::exception);
}

}  // namespace
