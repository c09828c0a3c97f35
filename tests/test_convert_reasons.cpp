// Conversion::declined: every node whose converter turns it down says why it stays in ATen;
// nodes of kinds with no converter (matmul) are not listed.
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>

#include <functional>

#include "src/frontend.h"
#include "src/ir.h"
#include "tests/test_util.h"

namespace {

using Declined = std::vector<std::string>;
using GraphEdit = std::function<void(torch::jit::Graph&)>;

// The graph of function `f` in TorchScript `source`, constants folded as compile() folds them
// (so that a list argument such as [1] is a constant).
std::shared_ptr<torch::jit::Graph> graph_of(const std::string& source) {
  auto unit = torch::jit::compile(source);
  auto graph = torch::jit::toGraphFunction(unit->get_function("f")).graph()->copy();
  torch::jit::ConstantPropagation(graph);
  return graph;
}

// Profiles `source` on `inputs`, applies `edit` to the graph (to reach reasons that eager would
// reject while profiling: an out-of-range dim, an unknown mode), then converts it.
torchfuse::Conversion convert(const std::string& source, const std::vector<c10::IValue>& inputs,
                              const GraphEdit& edit = nullptr) {
  auto graph = graph_of(source);
  const torchfuse::Profile profile = torchfuse::profile_graph(graph, inputs);
  if (edit) edit(*graph);
  return torchfuse::convert_to_ir(*graph, profile);
}

Declined declined(const std::string& source, const std::vector<c10::IValue>& inputs, const GraphEdit& edit = nullptr) {
  return convert(source, inputs, edit).declined;
}

// The first node of this kind.
torch::jit::Node* first_node(torch::jit::Graph& graph, const char* kind) {
  for (torch::jit::Node* n : graph.nodes())
    if (std::string(n->kind().toQualString()) == kind) return n;
  ADD_FAILURE() << "no " << kind << " in\n" << graph.toString();
  return nullptr;
}

// An edit that makes input `index` of the first `kind` node the constant `value`.
GraphEdit set_constant_input(const char* kind, size_t index, c10::IValue value) {
  return [=](torch::jit::Graph& graph) {
    torch::jit::Node* n = first_node(graph, kind);
    if (!n) return;
    torch::jit::WithInsertPoint point(n);
    n->replaceInput(index, graph.insertConstant(value));
  };
}

int count_opaque(const torchfuse::ir::Graph& g) {
  int n = 0;
  for (const torchfuse::ir::Node* node : g.nodes())
    if (node->kind == torchfuse::ir::OpKind::Opaque) ++n;
  return n;
}

// def f(<args>): y = <expr>; return y. The declined node's output is then %y.1.
std::string returning_y(const std::string& args, const std::string& expr) {
  return "def f(" + args + "):\n    y = " + expr + "\n    return y\n";
}

struct Case {
  std::string source;
  std::vector<c10::IValue> inputs;
  GraphEdit edit;  // applied after profiling, or null
  Declined expected;
};

TEST(ConvertReasons, EachDeclineSaysWhy) {
  const c10::IValue x = torch::randn({4, 8});
  const c10::IValue x3 = torch::randn({2, 4, 8});
  const c10::IValue z = torch::randn({4, 8}, torch::kComplexFloat);
  const std::string stays = " stays in ATen: ";
  const std::vector<Case> cases = {
      {returning_y("x", "torch.norm(x, 3)"), {x}, nullptr,
       {"aten::norm (%y.1)" + stays + "norm with p=3: only p=2 is fused"}},
      {returning_y("x", "torch.linalg_vector_norm(x, 1.5)"), {x}, nullptr,
       {"aten::linalg_vector_norm (%y.1)" + stays + "linalg_vector_norm with ord=1.5: only ord=2 is fused"}},
      {returning_y("x, d: int", "torch.softmax(x, d)"), {x, 1}, nullptr,
       {"aten::softmax (%y.1)" + stays + "dim argument is not a constant"}},
      {returning_y("x, k: bool", "torch.amax(x, [1], k)"), {x, true}, nullptr,
       {"aten::amax (%y.1)" + stays + "keepdim is not a constant bool"}},
      {returning_y("x, a: float", "torch.add(x, x, alpha=a)"), {x, 2.0}, nullptr,
       {"aten::add (%y.1)" + stays + "alpha is not a constant number"}},
      {returning_y("a", "a + a"), {z}, nullptr,
       {"aten::add (%y.1)" + stays +
        "output dtype ComplexFloat: fused kernels compute on floating, integer and bool types"}},
      {returning_y("x", "torch.dropout(x, 0.5, True)"), {x}, nullptr,
       {"aten::dropout (%y.1)" + stays + "train=True: only dropout in eval mode is fused"}},
      {"def f(x):\n    v, i = torch.max(x, 1)\n    return v * 2.0, i\n", {x}, nullptr,
       {"aten::max (%v.1)" + stays + "max(input, dim) with its indices used: only the values are fused"}},
      // Integer tensors convert (i + 2 and i ** 2 are fused), integer tensor powers do not;
      // arithmetic on Python numbers has no tensor to fuse and is not listed.
      {"def f(i, n: int):\n    p = i ** i\n    m = n + 1\n    return (p + (i ** 2 + 2)) * m\n",
       {torch::arange(6).reshape({2, 3}), 3},
       nullptr,
       {"aten::pow (%p.1)" + stays + "pow on i64: only integer tensors to a constant power >= 0 are fused"}},
      // & on bools is logical and (fused); on integers it works on bits and stays.
      {returning_y("i", "(i & 6) + 1"), {torch::arange(6).reshape({2, 3})}, nullptr,
       {"aten::__and__ (%3)" + stays + "self is i64[2, 3]: only bools are fused (bits of integers are left to ATen)"}},
      // Eager rejects these while profiling: the graph is edited after it.
      {returning_y("x", "torch.softmax(x, 1)"), {x3}, set_constant_input("aten::softmax", 1, int64_t{4}),
       {"aten::softmax (%y.1)" + stays + "dim 4 out of range for rank 3"}},
      {returning_y("x", "torch.gelu(x, approximate='tanh')"), {x3},
       set_constant_input("aten::gelu", 1, std::string("foo")),
       {"aten::gelu (%y.1)" + stays + "approximate='foo' is not a gelu mode"}},
      {returning_y("x", "torch.layer_norm(x, [8])"), {x3},
       set_constant_input("aten::layer_norm", 1, std::vector<int64_t>{5, 8}),
       {"aten::layer_norm (%y.1)" + stays + "normalized_shape [5, 8] is not the trailing sizes of input f32[2, 4, 8]"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    EXPECT_EQ(declined(c.source, c.inputs, c.edit), c.expected);
  }
}

TEST(ConvertReasons, EachViewDeclineSaysWhy) {
  const c10::IValue x = torch::randn({4, 8});
  const c10::IValue col = torch::randn({4, 1});
  const c10::IValue x4 = torch::randn({2, 3, 4, 5});
  const std::string stays = " stays in ATen: ";
  const c10::IValue sizes = c10::List<int64_t>({32});
  const std::vector<Case> cases = {
      // (Ints the graph computes are fused: tests/test_size_views.cpp. A list that is no
      // ListConstruct, and a step, are not.)
      {returning_y("x, s: List[int]", "x.view(s)"), {x, sizes}, nullptr,
       {"aten::view (%y.1)" + stays + "size is neither a constant list of ints nor a list of ints the graph computes"}},
      {returning_y("x, k: int", "x[:, ::k]"), {x, 2}, nullptr, {"aten::slice (%y.1)" + stays + "step is not a constant int"}},
      {returning_y("x", "x.contiguous(memory_format=2)"), {x4}, nullptr,
       {"aten::contiguous (%y.1)" + stays + "memory_format=2: only torch.contiguous_format is fused (fused outputs are row-major)"}},
      {"def f(x):\n    l = x.chunk(2, 1)\n    y = torch.cat(l, 0)\n    return y\n", {x}, nullptr,
       {"aten::chunk (%l.1)" + stays + "its list is read by aten::cat (%y.1) (only unpacking and indexing by a constant are fused)",
        "aten::cat (%y.1)" + stays + "its list is not built by prim::ListConstruct in the graph (it comes from aten::chunk)"}},
      {"def f(x, i: int):\n    l = x.unbind(0)\n    y = l[i]\n    return y\n", {x, 1}, nullptr,
       {"aten::unbind (%l.1)" + stays + "its list is indexed by an int computed at run time, in aten::__getitem__ (%y.1)"}},
      // Eager rejects these while profiling: the graph is edited after it.
      {returning_y("x", "x[1:4:2]"), {x}, set_constant_input("aten::slice", 4, int64_t{0}),
       {"aten::slice (%y.1)" + stays + "step=0: slice steps must be positive"}},
      {returning_y("x", "x.select(1, 2)"), {x}, set_constant_input("aten::select", 2, int64_t{10}),
       {"aten::select (%y.1)" + stays + "select: the profiled output f32[4]{8} is not the select[1, 10] of the input f32[4, 8]"}},
      {returning_y("x", "x.narrow(1, 2, 3)"), {x}, set_constant_input("aten::narrow", 3, int64_t{-1}),
       {"aten::narrow (%y.1)" + stays + "length=-1: narrow's length must be non-negative"}},
      {"def f(x):\n    l = x.split(4, 1)\n    a, b = l\n    return a + b\n", {x}, set_constant_input("aten::split", 1, int64_t{0}),
       {"aten::split (%l.1)" + stays + "split_size=0: only a positive split size is fused"}},
      {"def f(x):\n    l = x.chunk(2, 1)\n    a, b = l\n    return a + b\n", {x}, set_constant_input("aten::chunk", 1, int64_t{3}),
       {"aten::chunk (%l.1)" + stays + "%a.1: the profiled f32[4, 4]{8, 1} is not the chunk[1, 3, 0, 2] of the input f32[4, 8]"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    EXPECT_EQ(declined(c.source, c.inputs, c.edit), c.expected);
  }
}

TEST(ConvertReasons, OpsWithoutConverterAreNotListedAndOrderIsGraphOrder) {
  const auto c = convert(
      "def f(x, w):\n    m = torch.matmul(x, w)\n    a = torch.norm(m, 1)\n    b = torch.dropout(m, 0.1, True)\n"
      "    return torch.relu(m) * a + b\n",
      {torch::randn({4, 8}), torch::randn({8, 3})});
  EXPECT_EQ(c.declined,
            (Declined{"aten::norm (%a.1) stays in ATen: norm with p=1: only p=2 is fused",
                      "aten::dropout (%b.1) stays in ATen: train=True: only dropout in eval mode is fused"}));
  EXPECT_EQ(count_opaque(*c.graph), 3);  // matmul, norm, dropout
}

TEST(ConvertReasons, NothingDeclinedWhenEverythingConverts) {
  const auto c = convert(
      "def f(x, y):\n    z = torch.relu(x * 2.0 + y)\n    s = torch.softmax(z, 1)\n"
      "    return torch.sum(s, [1], False) + torch.norm(z, 2, [1], False)\n",
      {torch::randn({4, 8}), torch::randn({4, 8})});
  EXPECT_TRUE(c.declined.empty()) << c.declined.front();
  EXPECT_EQ(count_opaque(*c.graph), 0) << torchfuse::ir::to_string(*c.graph);
}

}  // namespace
