// Bad inputs (issue 23, item 2): a test per class of input that a caller can get wrong, or that
// eager accepts and torchfuse must take as eager does. Each test asserts either a
// torchfuse::Error whose message names the problem (the input's position and name, what was
// expected and what came: dtype, rank, device, shape) or eager's result on fresh random inputs.
// These run without a GPU: calls on CPU tensors run eager, explain() plans and compiles the
// kernels, and run_on_fallbacks runs the rewritten graph (fusion nodes on their fallback graphs).
// The fused path's side of each class is in test_bad_inputs_gpu.cpp (BadInputsGpu.*).
#include <torch/torch.h>

#include <set>

#include "runtime/compiled_module.h"
#include "runtime/fused_kernel.h"
#include "runtime/guards.h"
#include "src/prepare_graph.h"
#include "tests/test_util.h"

using tftest::module_from;
using tftest::module_returning;
namespace ir = torchfuse::ir;

using tftest::dict;
using tftest::expect_error;
using tftest::list;
using tftest::tuple;

namespace {

// Does `fn` throw (eager's verdict on an input, taken from ATen itself)?
template <typename Fn>
bool throws(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception&) {
    return true;
  }
  return false;
}

torchfuse::CompiledModuleImpl impl_of(const torch::jit::Module& m) {
  return torchfuse::CompiledModuleImpl(torchfuse::prepare_module_graph(m), tftest::quiet_options());
}

// The rewritten graph (every group on its fallback graph, FusionGroup nodes included) against
// eager, on the same inputs.
void expect_rewrite_matches_eager(const torch::jit::Module& m, const std::vector<c10::IValue>& in) {
  auto impl = impl_of(m);
  const auto report = torchfuse::compare_outputs(impl.forward_eager(in), impl.run_on_fallbacks(in));
  EXPECT_TRUE(report.passed()) << report.to_string() << impl.explain(in, false).rewritten_graph;
}

// ---- wrong arity ----

TEST(BadInputs, WrongArity) {
  auto c = torchfuse::compile(module_returning("x, y", "torch.relu(x) * y"));
  const auto x = torch::randn({4, 8});
  for (const auto& in : std::vector<std::vector<c10::IValue>>{{x}, {x, x, x}, {}}) {
    const std::string got = "got " + std::to_string(in.size());
    expect_error([&] { c.forward(in); }, {"forward expects 2 inputs, " + got});
    expect_error([&] { c.forward_eager(in); }, {"forward expects 2 inputs, " + got});
    expect_error([&] { c.explain(in); }, {"forward expects 2 inputs, " + got});
  }
}

// ---- None ----

// None or an undefined tensor where the graph takes a tensor or a number is an error naming the
// input; where it takes Optional[Tensor], both are None, as in eager.
TEST(BadInputs, NoneAndUndefinedTensors) {
  const auto m = module_from(R"JIT(
def forward(self, x, s: float, o: Optional[torch.Tensor]):
    r = torch.relu(x * s) + 1.0
    if o is not None:
        r = r * o
    return r
)JIT");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto x = torch::randn({4, 8});
  const auto o = torch::randn({4, 8});
  expect_error([&] { c.forward({c10::IValue(), 0.5, o}); }, {"input 0 ('x') must be a Tensor, got None"});
  expect_error([&] { c.forward({at::Tensor(), 0.5, o}); }, {"input 0 ('x') must be a Tensor, got an undefined tensor"});
  expect_error([&] { c.explain({at::Tensor(), 0.5, o}); }, {"input 0 ('x') must be a Tensor, got an undefined tensor"});
  expect_error([&] { c.forward({x, c10::IValue(), o}); }, {"input 1 ('s') must be a float, got None"});
  const auto without = torch::relu(x * 0.5) + 1.0;
  EXPECT_TRUE(torch::allclose(c.forward({x, 0.5, c10::IValue()}).toTensor(), without));
  EXPECT_TRUE(torch::allclose(c.forward({x, 0.5, at::Tensor()}).toTensor(), without));
  EXPECT_TRUE(torch::allclose(c.forward({x, 0.5, o}).toTensor(), without * o));
  EXPECT_EQ(c.explain({x, 0.5, c10::IValue()}).kernels.size(), 1u);
  expect_rewrite_matches_eager(m, {x, 0.5, c10::IValue()});
  expect_rewrite_matches_eager(m, {x, 0.5, o});
}

// ---- lists, tuples, dicts of tensors ----

const char* kListSource = "def forward(self, xs: List[torch.Tensor]):\n    return torch.relu(xs[0] * 2.0) + xs[1]\n";
const char* kTupleSource =
    "def forward(self, xs: Tuple[torch.Tensor, torch.Tensor]):\n    return torch.relu(xs[0] * 2.0) + xs[1]\n";
const char* kDictSource =
    "def forward(self, xs: Dict[str, torch.Tensor]):\n    return torch.relu(xs['a'] * 2.0) + xs['b']\n";

TEST(BadInputs, ContainersOfTensorsMatchEager) {
  const auto a = torch::randn({4, 8}), b = torch::randn({4, 8});
  const auto expected = torch::relu(a * 2.0) + b;
  const std::vector<std::pair<const char*, c10::IValue>> cases = {
      {kListSource, list({a, b})}, {kTupleSource, tuple({a, b})}, {kDictSource, dict({{"a", a}, {"b", b}})}};
  for (const auto& [source, in] : cases) {
    SCOPED_TRACE(source);
    auto c = torchfuse::compile(module_from(source), tftest::quiet_options());
    EXPECT_TRUE(torch::allclose(c.forward({in}).toTensor(), expected));
    EXPECT_EQ(c.explain({in}).kernels.size(), 1u);
    expect_rewrite_matches_eager(module_from(source), {in});
  }
}

// A container of the wrong kind or size, or holding None, is an error naming the input and the
// element (the interpreter's own: "isList() INTERNAL ASSERT FAILED", "Expected a proper Tensor").
TEST(BadInputs, ContainersOfTheWrongKindOrWithNone) {
  const auto a = torch::randn({4, 8}), b = torch::randn({4, 8});
  auto l = torchfuse::compile(module_from(kListSource));
  expect_error([&] { l.forward({a}); }, {"input 0 ('xs') must be a List[Tensor], got Tensor"});
  expect_error([&] { l.forward({list({a, at::Tensor()})}); },
               {"input 0 ('xs') element 1 must be a Tensor, got an undefined tensor"});
  expect_error([&] { l.forward({tuple({a, b})}); }, {"input 0 ('xs') must be a List[Tensor], got a tuple of 2"});
  // A list too short: eager's own error (an index out of range), naming the input.
  expect_error([&] { l.forward({list({a})}); }, {"inputs: 0 ('xs') list [f32[4, 8] on cpu]", "out of range"});
  auto t = torchfuse::compile(module_from(kTupleSource));
  expect_error([&] { t.forward({tuple({a, b, a})}); },
               {"input 0 ('xs') must be a Tuple[Tensor, Tensor], got a tuple of 3"});
  expect_error([&] { t.forward({tuple({a, c10::IValue()})}); }, {"input 0 ('xs') element 1 must be a Tensor, got None"});
  auto d = torchfuse::compile(module_from(kDictSource));
  expect_error([&] { d.forward({list({a, b})}); }, {"input 0 ('xs') must be a Dict[str, Tensor], got a list"});
  expect_error([&] { d.forward({dict({{"a", a}, {"b", at::Tensor()}})}); },
               {"input 0 ('xs') entry 'b' must be a Tensor, got an undefined tensor"});
}

// Guards look inside tuples and dicts (lists: Defects.GuardsLookInsideLists): a dtype or
// requires_grad change there is a new signature.
TEST(BadInputs, GuardsLookInsideTuplesAndDicts) {
  using torchfuse::input_signature;
  const auto a = torch::randn({4}), b = torch::randn({4});
  EXPECT_EQ(input_signature({tuple({a, b})}), input_signature({tuple({torch::randn({4}), torch::randn({4})})}));
  EXPECT_NE(input_signature({tuple({a, b})}), input_signature({tuple({a, b.to(torch::kHalf)})}));
  EXPECT_NE(input_signature({tuple({a, b})}), input_signature({tuple({a, torch::randn({4}).requires_grad_()})}));
  EXPECT_NE(input_signature({dict({{"a", a}, {"b", b}})}), input_signature({dict({{"a", a}, {"b", b.to(torch::kHalf)}})}));
  EXPECT_NE(input_signature({dict({{"a", a}, {"b", b}})}),
            input_signature({dict({{"a", a}, {"b", torch::randn({4}).requires_grad_()}})}));
}

// A tensor that requires grad inside a list, tuple or dict takes the eager path, as a top-level
// one does: the result is eager's, with its autograd graph.
TEST(BadInputs, RequiresGradInsideContainersKeepsAutograd) {
  for (const char* source : {kListSource, kTupleSource, kDictSource}) {
    SCOPED_TRACE(source);
    auto c = torchfuse::compile(module_from(source), tftest::quiet_options());
    const auto a = torch::randn({4, 8}).requires_grad_(), b = torch::randn({4, 8});
    const c10::IValue in = source == kListSource    ? list({a, b})
                           : source == kTupleSource ? tuple({a, b})
                                                    : dict({{"a", a}, {"b", b}});
    const auto out = c.forward({in}).toTensor();
    ASSERT_TRUE(out.requires_grad());
    out.sum().backward();
    EXPECT_TRUE(torch::allclose(a.grad(), (a > 0).to(torch::kFloat) * 2.0));
  }
}

// ---- dtypes that change between calls ----

TEST(BadInputs, DtypeChangingBetweenCallsIsANewSignature) {
  const auto m = module_returning("x, y", "torch.softmax(x * 2.0, -1) + y");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  std::set<std::string> signatures;
  for (auto dtype : {torch::kFloat, torch::kDouble, torch::kBFloat16, torch::kFloat}) {
    SCOPED_TRACE(c10::toString(dtype));
    const std::vector<c10::IValue> in{torch::randn({8, 64}).to(dtype), torch::randn({64}).to(dtype)};
    signatures.insert(torchfuse::input_signature(in));
    const auto report = torchfuse::compare_outputs(c.forward_eager(in), c.forward(in));
    EXPECT_TRUE(report.passed()) << report.to_string();
    const auto e = c.explain(in);
    ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
    EXPECT_NE(e.ir_before.find(std::string(ir::dtype_short_name(dtype)) + "[8, 64]"), std::string::npos) << e.ir_before;
  }
  EXPECT_EQ(signatures.size(), 3u);
  // Inputs of two dtypes promote as eager promotes them.
  const std::vector<c10::IValue> mixed{torch::randn({8, 64}), torch::randn({64}).to(torch::kBFloat16)};
  EXPECT_TRUE(torchfuse::compare_outputs(c.forward_eager(mixed), c.forward(mixed)).passed());
  // A dtype kernels cannot compute in stays in ATen, and says so.
  auto cx = torchfuse::compile(module_returning("x", "x * 2.0 + 1.0"), tftest::quiet_options());
  const auto z = torch::randn({4, 8}, torch::kComplexFloat);
  EXPECT_TRUE(torch::allclose(cx.forward({z}).toTensor(), z * 2.0 + 1.0));
  const auto e = cx.explain({z});
  EXPECT_TRUE(e.kernels.empty());
  ASSERT_FALSE(e.refused.empty());
  EXPECT_NE(e.refused[0].find("fused kernels compute on floating, integer and bool types"), std::string::npos)
      << e.refused[0];
}

// A dtype given as a run-time value (an int input) can change between calls of one
// specialization: to() and sum(dtype=) with it stay in ATen (they used to take the profiled
// dtype for good, or delete to() as the identity).
TEST(BadInputs, RunTimeDtypeArgumentsStayInAten) {
  const auto m = module_from(R"JIT(
def forward(self, x, d: int):
    y = torch.relu(x.to(d) * 2.0) + 1.0
    return y, torch.sum(x * 3.0, -1, dtype=d)
)JIT");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto x = torch::randn({4, 8});
  for (int64_t d : {int64_t{6}, int64_t{7}}) {  // float, double
    const auto e = c.explain({x, d});
    EXPECT_NE(e.rewritten_graph.find("aten::to"), std::string::npos) << e.rewritten_graph;
    EXPECT_NE(e.rewritten_graph.find("aten::sum"), std::string::npos) << e.rewritten_graph;
    bool said = false;
    for (const auto& r : e.refused) said = said || r.find("dtype (%d") != std::string::npos;
    EXPECT_TRUE(said) << "explain() should say the dtype is only known at run time";
    expect_rewrite_matches_eager(m, {x, d});
  }
}

// ---- devices ----

// Tensors on different devices fail in eager; torchfuse's error names each input's device
// (here CPU and meta, which need no GPU; CPU and CUDA in BadInputsGpu.CpuCudaMixes).
TEST(BadInputs, TensorsOnDifferentDevicesNameTheirDevices) {
  const auto m = module_returning("x, y", "x * 2.0 + y");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto x = torch::randn({4, 4});
  const auto meta = torch::empty({4, 4}, torch::TensorOptions().device(torch::kMeta));
  if (throws([&] { return x * 2.0 + meta; })) {
    for (int eager = 0; eager < 2; ++eager) {
      expect_error([&] { eager ? c.forward_eager({x, meta}) : c.forward({x, meta}); },
                   {"inputs: 0 ('x') f32[4, 4] on cpu, 1 ('y') f32[4, 4] on meta", "on different devices (cpu, meta)",
                    "ATen's error"});
    }
  } else {
    EXPECT_EQ(c.forward({x, meta}).toTensor().sizes(), (x * 2.0 + meta).sizes());
  }
  // All on another device: eager's result, as eager gives it.
  const auto out = c.forward({meta, meta}).toTensor();
  EXPECT_TRUE(out.is_meta());
  EXPECT_EQ(out.sizes(), meta.sizes());
  EXPECT_EQ(c.stats().fused_calls, 0);
}

// Parameters (tensor constants once frozen) on another device than the inputs: the message
// says where the constants are.
TEST(BadInputs, ParametersOnAnotherDeviceThanTheInputs) {
  torch::jit::Module m("TestModule");
  m.register_parameter("w", torch::empty({4}, torch::TensorOptions().device(torch::kMeta)), false);
  m.define("def forward(self, x):\n    return x * self.w + 1.0\n");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto x = torch::randn({4, 4});
  if (!throws([&] { return x * torch::empty({4}, torch::TensorOptions().device(torch::kMeta)); })) {
    GTEST_SKIP() << "this LibTorch multiplies CPU and meta tensors";
  }
  expect_error([&] { c.forward({x}); },
               {"0 ('x') f32[4, 4] on cpu", "different devices (cpu, meta)", "tensor constants (frozen parameters) are on meta"});
}

// ---- 0-size and 0-dim tensors ----

struct ShapeCase {
  const char* expr;
  std::vector<int64_t> shape;
  size_t kernels;
};

TEST(BadInputs, ZeroSizeAndZeroDimTensors) {
  const std::vector<ShapeCase> cases = {
      {"torch.relu(x * 2.0) + 1.0", {0, 8}, 1},       {"torch.softmax(x * 2.0, -1)", {0, 64}, 1},
      {"torch.softmax(x * 2.0, -1)", {8, 0}, 1},      {"(x * 2.0).sum(-1)", {8, 0}, 1},
      {"(x * 2.0).mean(-1) + 1.0", {8, 0}, 1},        {"(x * 2.0).sum(0)", {0, 64}, 1},
      {"(x * 2.0).sum(0)", {64, 0}, 1},               {"(x * 2.0).sum()", {0}, 1},
      {"torch.layer_norm(x * 2.0, [64])", {0, 64}, 1}, {"torch.relu(x * 2.0) + 1.0", {}, 1},
      {"(x * 2.0).sum() + 1.0", {}, 1},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(std::string(k.expr) + " on " + ir::shape_str(k.shape));
    const auto m = module_returning("x", k.expr);
    auto c = torchfuse::compile(m, tftest::quiet_options());
    const auto x = torch::randn(k.shape);
    const auto e = c.explain({x}, /*compile_kernels=*/true);  // plans and NVRTC-compiles at these sizes
    EXPECT_EQ(e.kernels.size(), k.kernels) << e.ir_after;
    const auto report = torchfuse::compare_outputs(c.forward_eager({x}), c.forward({x}));
    EXPECT_TRUE(report.passed()) << report.to_string();
    expect_rewrite_matches_eager(m, {x});
  }
  // Size 0 is a guard of its own (size-0 dims take other branches of the planners).
  EXPECT_NE(torchfuse::input_signature({torch::randn({0, 8})}), torchfuse::input_signature({torch::randn({3, 8})}));
  // A reduction eager refuses on an empty dim: eager's error, naming the input.
  auto amax = torchfuse::compile(module_returning("x", "torch.amax(x * 2.0, -1)"));
  const auto empty = torch::randn({8, 0});
  ASSERT_TRUE(throws([&] { return torch::amax(empty * 2.0, -1); }));
  expect_error([&] { amax.forward({empty}); }, {"inputs: 0 ('x') f32[8, 0] on cpu", "ATen's error"});
}

// ---- overlapping and negative strides ----

// Inputs whose elements overlap (expand's stride 0, as_strided with overlapping rows) are read
// as eager reads them; the guard's layout class is "strided".
TEST(BadInputs, OverlappingStrides) {
  const auto m = module_returning("x, y", "torch.softmax(x * y, -1) + x");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto overlapping = torch::randn({16}).as_strided({4, 4}, {1, 1});
  const auto expanded = torch::randn({4, 1}).expand({4, 4});
  const std::vector<c10::IValue> in{overlapping, expanded};
  for (const auto& g : torchfuse::input_guards(in)) EXPECT_NE(g.find("strided"), std::string::npos) << g;
  const auto e = c.explain(in, /*compile_kernels=*/true);
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_NE(e.ir_before.find("f32[4, 4]{1, 1}"), std::string::npos) << e.ir_before;
  EXPECT_NE(e.ir_before.find("f32[4, 4]{1, 0}"), std::string::npos) << e.ir_before;
  EXPECT_TRUE(torchfuse::compare_outputs(c.forward_eager(in), c.forward(in)).passed());
  expect_rewrite_matches_eager(m, in);
  // Writing into overlapping memory is what eager refuses: its error, naming the input.
  auto writes = torchfuse::compile(module_from("def forward(self, x):\n    x.add_(1.0)\n    return x * 2.0\n"));
  const auto target = torch::randn({4, 1}).expand({4, 4});
  ASSERT_TRUE(throws([&] { return torch::randn({4, 1}).expand({4, 4}).add_(1.0); }));
  expect_error([&] { writes.forward({target}); }, {"inputs: 0 ('x') f32[4, 4] on cpu", "ATen's error"});
}

// PyTorch has no negative strides: at::as_strided rejects them before torchfuse sees a tensor
// (a c10::Error of the caller's own), and inside a graph torchfuse passes eager's error on,
// naming the inputs. Reversing is torch.flip, a copy, which fuses around as eager computes it.
TEST(BadInputs, NegativeStridesAreEagersError) {
  const auto x = torch::randn({4, 8});
  EXPECT_THROW(x.as_strided({4, 8}, {-8, 1}), c10::Error);
  auto c = torchfuse::compile(module_returning("x", "torch.relu(x.as_strided([4, 8], [-8, 1]) * 2.0)"));
  ASSERT_TRUE(throws([&] { return c.forward_eager({x}); }));
  expect_error([&] { c.forward({x}); }, {"inputs: 0 ('x') f32[4, 8] on cpu", "egative strides"});
  const auto flip = module_returning("x", "torch.relu(torch.flip(x, [0]) * 2.0) + x");
  auto f = torchfuse::compile(flip, tftest::quiet_options());
  EXPECT_TRUE(torch::allclose(f.forward({x}).toTensor(), torch::relu(torch::flip(x, {0}) * 2.0) + x));
  EXPECT_EQ(f.explain({x}).kernels.size(), 1u);
  expect_rewrite_matches_eager(flip, {x});
}

// ---- aliasing ----

// The same tensor twice, or one input a view of another: kernels only read their inputs.
TEST(BadInputs, InputsAliasingEachOther) {
  const auto m = module_returning("x, y", "torch.relu(x * 2.0) + y * x");
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto a = torch::randn({8, 8});
  for (const auto& in : std::vector<std::vector<c10::IValue>>{{a, a}, {a, a.t()}, {a, a[3]}, {a.narrow(1, 2, 4), a.narrow(1, 0, 4)}}) {
    const auto x = in[0].toTensor(), y = in[1].toTensor();
    EXPECT_TRUE(torch::allclose(c.forward(in).toTensor(), torch::relu(x * 2.0) + y * x));
    EXPECT_EQ(c.explain(in).kernels.size(), 1u);
    expect_rewrite_matches_eager(m, in);
  }
}

// What eager returns as the input itself, or a view of it, torchfuse returns the same way: a
// graph returning its input, a view of it, an identity to(), one value twice.
TEST(BadInputs, OutputsAliasingInputs) {
  const auto x = torch::randn({4, 8});
  auto elements = [](const c10::IValue& v) { return v.toTupleRef().elements().vec(); };
  {
    auto impl = impl_of(module_returning("x", "x"));
    EXPECT_TRUE(impl.forward({x}).toTensor().is_same(x));
    EXPECT_TRUE(impl.run_on_fallbacks({x}).toTensor().is_same(x));
  }
  for (const char* first : {"x", "x.float()", "x.to(6)"}) {
    SCOPED_TRACE(first);
    auto impl = impl_of(module_returning("x", std::string("(") + first + ", torch.relu(x * 2.0) * 3.0)"));
    for (const auto& out : {impl.forward({x}), impl.run_on_fallbacks({x})}) {
      EXPECT_TRUE(elements(out)[0].toTensor().is_same(x));
      EXPECT_TRUE(torch::allclose(elements(out)[1].toTensor(), torch::relu(x * 2.0) * 3.0));
    }
  }
  {
    auto impl = impl_of(module_returning("x", "(x.view(-1), torch.relu(x * 2.0) + 1.0, x.t())"));
    for (const auto& out : {impl.forward({x}), impl.run_on_fallbacks({x})}) {
      EXPECT_EQ(elements(out)[0].toTensor().data_ptr(), x.data_ptr());
      EXPECT_EQ(elements(out)[2].toTensor().data_ptr(), x.data_ptr());
      EXPECT_TRUE(torch::allclose(elements(out)[1].toTensor(), torch::relu(x * 2.0) + 1.0));
    }
  }
  {
    const auto m = module_from("def forward(self, x):\n    a = torch.relu(x * 2.0)\n    return (a, a, a.view(-1))\n");
    auto impl = impl_of(m);
    ASSERT_EQ(impl.explain({x}, false).kernels.size(), 1u);
    for (const auto& out : {impl.forward({x}), impl.run_on_fallbacks({x})}) {
      EXPECT_TRUE(elements(out)[0].toTensor().is_same(elements(out)[1].toTensor()));
      EXPECT_EQ(elements(out)[2].toTensor().data_ptr(), elements(out)[0].toTensor().data_ptr());
    }
  }
}

// ---- in-place ops ----

// A graph that writes its inputs runs eager: the caller sees the write once (the profiling run
// would have made it twice), also where the input is an element of a list, tuple or dict.
TEST(BadInputs, InPlaceOpsOnInputsWriteOnce) {
  struct Case {
    const char* source;
    std::function<c10::IValue(const at::Tensor&, const at::Tensor&)> pack;
  };
  const std::vector<Case> cases = {
      {"def forward(self, x, y):\n    x.add_(1.0)\n    return torch.relu(x * 2.0) + y\n",
       nullptr},
      {"def forward(self, x, y):\n    x.relu_()\n    x.add_(1.0)\n    return torch.relu(x * 2.0) + y\n", nullptr},
      {"def forward(self, xs: List[torch.Tensor]):\n    xs[0].add_(1.0)\n    return torch.relu(xs[0] * 2.0) + xs[1]\n",
       [](const at::Tensor& a, const at::Tensor& b) { return list({a, b}); }},
      {"def forward(self, xs: Tuple[torch.Tensor, torch.Tensor]):\n    xs[0].add_(1.0)\n    return torch.relu(xs[0] * 2.0) + xs[1]\n",
       [](const at::Tensor& a, const at::Tensor& b) { return tuple({a, b}); }},
      {"def forward(self, xs: Dict[str, torch.Tensor]):\n    xs['a'].add_(1.0)\n    return torch.relu(xs['a'] * 2.0) + xs['b']\n",
       [](const at::Tensor& a, const at::Tensor& b) { return dict({{"a", a}, {"b", b}}); }},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.source);
    const auto m = module_from(k.source);
    EXPECT_TRUE(torchfuse::writes_to_inputs_or_constants(torchfuse::prepare_module_graph(m)));
    auto c = torchfuse::compile(m, tftest::quiet_options());
    const auto a = torch::randn({4, 8}), b = torch::randn({4, 8});
    auto mine = a.clone();
    auto call = [&](torchfuse::CompiledModule& cm, const at::Tensor& t) {
      return k.pack ? cm.forward({k.pack(t, b)}) : cm.forward({t, b});
    };
    const auto out = call(c, mine).toTensor();
    auto ref = a.clone();
    if (std::string(k.source).find("relu_") != std::string::npos) ref.relu_();
    ref.add_(1.0);
    EXPECT_TRUE(torch::equal(mine, ref)) << "the input was not written exactly once";
    EXPECT_TRUE(torch::allclose(out, torch::relu(ref * 2.0) + b));
  }
}

// In-place ops on values the graph computes: no fused group crosses the write, so every reader
// sees the value as eager does before or after it (a group of mul and relu around y.add_(1)
// would read y unwritten).
TEST(BadInputs, InPlaceOpsInsideTheGraph) {
  const char* sources[] = {
      R"JIT(
def forward(self, x):
    y = x * 2.0 - 1.0
    z = torch.sigmoid(y)
    y.add_(1.0)
    w = torch.relu(y) * 3.0
    return z + w
)JIT",
      R"JIT(
def forward(self, x):
    y = x * 2.0 - 1.0
    y[0].relu_()
    return torch.sigmoid(y) + 1.0
)JIT",
      R"JIT(
def forward(self, x):
    y = torch.tanh(x) * 2.0
    y.mul_(x)
    return y + torch.exp(y) * 0.5
)JIT",
  };
  for (const char* source : sources) {
    SCOPED_TRACE(source);
    const auto m = module_from(source);
    EXPECT_FALSE(torchfuse::writes_to_inputs_or_constants(torchfuse::prepare_module_graph(m)));
    const auto x = torch::randn({6, 8});
    auto impl = impl_of(m);
    const auto e = impl.explain({x}, false);
    EXPECT_GE(e.kernels.size(), 1u) << e.ir_after;
    expect_rewrite_matches_eager(m, {x});
  }
}

// ---- control flow ----

// A branch on the data: the specialization holds both branches (they run in ATen); explain()
// says so; each call takes the branch its data asks for.
TEST(BadInputs, ControlFlowOnTheData) {
  const auto m = module_from(R"JIT(
def forward(self, x):
    y = x * 2.0 + 1.0
    if bool(y.sum() > 0):
        y = torch.relu(y) * 3.0
    else:
        y = torch.sigmoid(y) - 1.0
    return y * x
)JIT");
  const auto positive = torch::rand({4, 8}) + 0.5;
  const auto negative = -(torch::rand({4, 8}) + 0.5);
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto e = c.explain({positive});
  bool said = false;
  for (const auto& r : e.refused) said = said || r.find("prim::If") != std::string::npos;
  EXPECT_TRUE(said) << "explain() should say the branches run in ATen";
  for (const auto& x : {positive, negative}) {
    EXPECT_TRUE(torchfuse::compare_outputs(c.forward_eager({x}), c.forward({x})).passed());
    expect_rewrite_matches_eager(m, {x});
  }
}

// A branch whose result changes dtype between calls (the guard of a bool input is its kind,
// not its value): to() of that result is no identity to delete, and a group reading it checks
// its inputs on every call (BadInputsGpu.ControlFlowChangingDtypes runs it fused).
TEST(BadInputs, ControlFlowChangingDtypes) {
  const auto m = module_from(R"JIT(
def forward(self, x, half: bool):
    if half:
        y = x.half()
    else:
        y = x
    z = y.float()
    return torch.relu(z * 2.0) + 1.0, y * 2.0 - 1.0
)JIT");
  const auto x = torch::randn({4, 8});
  auto c = torchfuse::compile(m, tftest::quiet_options());
  const auto e = c.explain({x, false});
  // x.half() in the branch, and y.float() (the identity for this call's y, not the next one's).
  EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "aten::to("), 2) << e.rewritten_graph;
  bool said = false;
  for (const auto& r : e.refused) said = said || r.find("only known at run time") != std::string::npos;
  EXPECT_TRUE(said) << "explain() should say why y.float() is kept";
  for (bool half : {false, true}) {
    SCOPED_TRACE(half);
    const auto report = torchfuse::compare_outputs(c.forward_eager({x, half}), c.forward({x, half}));
    EXPECT_TRUE(report.passed()) << report.to_string();
  }
  // What the fused path checks of a group's inputs on every call.
  using torchfuse::runtime::input_differs;
  const ir::Type f32 = ir::Type::tensor(torch::kFloat, {4, 8}, {8, 1}, c10::Device(c10::kCPU));
  EXPECT_EQ(input_differs(f32, torch::randn({4, 8})), "");
  EXPECT_EQ(input_differs(f32, torch::randn({9, 3})), "");  // sizes are kernel arguments
  EXPECT_EQ(input_differs(f32, torch::randn({8, 4}).t()), "");  // and so are strides
  EXPECT_EQ(input_differs(f32, torch::randn({4, 8}).to(torch::kHalf)), "is f16[4, 8] on cpu, compiled for f32[4, 8] on cpu");
  EXPECT_NE(input_differs(f32, torch::randn({4, 1})), "");     // a broadcast dim
  EXPECT_NE(input_differs(f32, torch::randn({0, 8})), "");     // an empty dim
  EXPECT_NE(input_differs(f32, torch::randn({4, 8, 2})), "");  // rank
  EXPECT_NE(input_differs(f32, c10::IValue()), "");
  const ir::Type number = ir::Type::scalar(c10::ScalarType::Double);
  EXPECT_EQ(input_differs(number, 2.0), "");
  EXPECT_NE(input_differs(number, int64_t{2}), "");
}

}  // namespace
