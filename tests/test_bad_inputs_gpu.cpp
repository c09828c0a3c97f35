// Bad inputs on the fused path (issue 23, item 2; the CPU side is test_bad_inputs.cpp): CPU and
// CUDA tensors mixed, tensors on another GPU, 0-size and 0-dim tensors, overlapping strides,
// aliasing, in-place ops, dtypes that change between calls (also inside the graph, through
// control flow), requires_grad inside lists, tuples and dicts. Each test asserts a
// torchfuse::Error naming the problem or eager's result on fresh random inputs (poisoned
// outputs, so an element a kernel does not write fails). Skipped without a CUDA device.
#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/test_util.h"

using tftest::module_from;
using tftest::module_returning;

using tftest::dict;
using tftest::expect_error;
using tftest::list;
using tftest::tuple;

namespace {

torchfuse::CompileOptions poisoned() {
  auto o = tftest::quiet_options();
  o.debug_poison_outputs = true;
  return o;
}

torch::Tensor rnd(std::vector<int64_t> sizes, c10::ScalarType dtype = c10::kFloat, c10::Device device = c10::kCUDA) {
  return torch::randn(sizes, torch::TensorOptions().device(device)).to(dtype);
}

// compare_with_eager, and the call ran the fused graph.
void expect_fused_matches_eager(torchfuse::CompiledModule& c, const std::vector<c10::IValue>& in,
                                const std::string& label) {
  SCOPED_TRACE(label);
  const auto before = c.stats();
  const auto report = torchfuse::compare_with_eager(c, in);
  torch::cuda::synchronize();
  EXPECT_TRUE(report.passed()) << report.to_string() << c.graph_for(in);
  EXPECT_GT(c.stats().fused_calls, before.fused_calls) << "the call ran eager";
}

// ---- CPU and CUDA mixed ----

TEST(BadInputsGpu, CpuCudaMixes) {
  REQUIRE_GPU();
  // What eager refuses: an error naming each input's device.
  auto c = torchfuse::compile(module_returning("x, y", "torch.relu(x * 2.0) + y"), poisoned());
  expect_error([&] { c.forward({rnd({4, 4}), rnd({4, 4}, c10::kFloat, c10::kCPU)}); },
               {"inputs: 0 ('x') f32[4, 4] on cuda:0, 1 ('y') f32[4, 4] on cpu", "on different devices (cuda:0, cpu)",
                "ATen's error"});
  // What eager accepts: a CPU 0-dim tensor beside CUDA tensors, a CPU input the graph moves.
  expect_fused_matches_eager(c, {rnd({64, 32}), rnd({}, c10::kFloat, c10::kCPU)}, "CPU 0-dim tensor");
  auto scaled = torchfuse::compile(module_returning("x, s", "torch.relu(x * 2.0) * s + 1.0"), poisoned());
  expect_fused_matches_eager(scaled, {rnd({64, 32}), rnd({}, c10::kFloat, c10::kCPU)}, "CPU 0-dim factor");
  auto moved = torchfuse::compile(module_returning("x, y", "torch.relu(x * 2.0) + y.to(x.device) * 3.0"), poisoned());
  expect_fused_matches_eager(moved, {rnd({64, 32}), rnd({64, 32}, c10::kFloat, c10::kCPU)}, "moved by the graph");
}

// Parameters on the CPU (frozen into constants) and CUDA inputs: the message says where the
// constants are.
TEST(BadInputsGpu, ParametersOnTheCpuInputsOnCuda) {
  REQUIRE_GPU();
  torch::jit::Module m("TestModule");
  m.register_parameter("w", torch::randn({32}), false);
  m.define("def forward(self, x):\n    return torch.relu(x * self.w) + 1.0\n");
  auto c = torchfuse::compile(m, poisoned());
  expect_error([&] { c.forward({rnd({8, 32})}); },
               {"0 ('x') f32[8, 32] on cuda:0", "different devices (cuda:0, cpu)",
                "tensor constants (frozen parameters) are on cpu"});
}

// ---- another GPU ----

TEST(BadInputsGpu, TensorsOnAnotherGpu) {
  REQUIRE_GPU();
  const int devices = static_cast<int>(torch::cuda::device_count());
  if (devices < 2) GTEST_SKIP() << "needs 2 CUDA devices, found " << devices;
  const c10::Device d0(c10::kCUDA, 0), d1(c10::kCUDA, 1);
  auto c = torchfuse::compile(module_returning("x, y", "torch.relu(x * 2.0) + y"), poisoned());
  // All on the second GPU: fused there, the result there.
  expect_fused_matches_eager(c, {rnd({64, 32}, c10::kFloat, d1), rnd({64, 32}, c10::kFloat, d1)}, "cuda:1");
  EXPECT_EQ(c.forward({rnd({64, 32}, c10::kFloat, d1), rnd({64, 32}, c10::kFloat, d1)}).toTensor().device(), d1);
  // Split over two GPUs: eager's error, naming both.
  expect_error([&] { c.forward({rnd({4, 4}, c10::kFloat, d0), rnd({4, 4}, c10::kFloat, d1)}); },
               {"0 ('x') f32[4, 4] on cuda:0, 1 ('y') f32[4, 4] on cuda:1", "different devices (cuda:0, cuda:1)"});
  // ... unless the graph moves them, which eager does: eager's result (it used to be an error).
  auto moved = torchfuse::compile(module_returning("x, y", "torch.relu(x * 2.0) + y.to(x.device)"), poisoned());
  const std::vector<c10::IValue> in{rnd({64, 32}, c10::kFloat, d0), rnd({64, 32}, c10::kFloat, d1)};
  const auto report = torchfuse::compare_outputs(moved.forward_eager(in), moved.forward(in));
  EXPECT_TRUE(report.passed()) << report.to_string();
  EXPECT_EQ(moved.stats().eager_calls, 1);  // a specialization's kernels run on one GPU
}

// ---- 0-size and 0-dim ----

TEST(BadInputsGpu, ZeroSizeAndZeroDimTensorsFused) {
  REQUIRE_GPU();
  struct Case {
    const char* expr;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {"torch.relu(x * 2.0) + 1.0", {0, 8}},  {"torch.softmax(x * 2.0, -1)", {0, 64}},
      {"torch.softmax(x * 2.0, -1)", {8, 0}}, {"(x * 2.0).sum(-1)", {8, 0}},
      {"(x * 2.0).sum(0)", {0, 64}},          {"(x * 2.0).sum(0)", {64, 0}},
      {"(x * 2.0).sum()", {0}},               {"torch.layer_norm(x * 2.0, [64])", {0, 64}},
      {"torch.relu(x * 2.0) + 1.0", {}},      {"(x * 2.0).sum() + 1.0", {}},
  };
  for (const auto& k : cases) {
    std::string label = std::string(k.expr) + " on [";
    for (size_t i = 0; i < k.shape.size(); ++i) label += (i ? ", " : "") + std::to_string(k.shape[i]);
    label += "]";
    auto c = torchfuse::compile(module_returning("x", k.expr), poisoned());
    expect_fused_matches_eager(c, {rnd(k.shape)}, label);
    EXPECT_EQ(c.stats().fallback_groups, 0) << label;
  }
  // A 0-dim tensor beside a full one, and a 0-size batch after a full one (a new signature).
  auto c = torchfuse::compile(module_returning("x, s", "torch.sigmoid(x * s) - s"), poisoned());
  expect_fused_matches_eager(c, {rnd({64, 64}), rnd({})}, "0-dim operand");
  expect_fused_matches_eager(c, {rnd({0, 64}), rnd({})}, "empty batch");
  // Under strict too: a logsumexp over an empty dim (fuzz seed 83, program 698) after a full call.
  auto options = poisoned();
  options.strict = true;
  auto s = torchfuse::compile(module_returning("x", "torch.logsumexp(x * 2.0, -1)"), options);
  expect_fused_matches_eager(s, {rnd({8, 64})}, "strict, full rows");
  expect_fused_matches_eager(s, {rnd({8, 0})}, "strict, empty rows");
  torch::cuda::synchronize();  // a fault would surface here
}

// ---- overlapping strides ----

TEST(BadInputsGpu, OverlappingStridesFused) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(module_returning("x, y", "torch.softmax(x * y, -1) + x"), poisoned());
  const auto overlapping = [] { return rnd({64 + 63}).as_strided({64, 64}, {1, 1}); };
  const auto expanded = [] { return rnd({64, 1}).expand({64, 64}); };
  expect_fused_matches_eager(c, {overlapping(), expanded()}, "as_strided rows overlapping, expand");
  expect_fused_matches_eager(c, {expanded(), overlapping()}, "the other way round");
  auto pw = torchfuse::compile(module_returning("x, y", "torch.gelu(x) * y + x"), poisoned());
  expect_fused_matches_eager(pw, {overlapping(), rnd({1, 64}).expand({64, 64})}, "pointwise");
}

// ---- aliasing ----

TEST(BadInputsGpu, AliasingOnTheFusedPath) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(module_returning("x, y", "torch.relu(x * 2.0) + y * x"), poisoned());
  const auto a = rnd({64, 64});
  expect_fused_matches_eager(c, {a, a}, "the same tensor twice");
  expect_fused_matches_eager(c, {a, a.t()}, "an input and its transpose");
  expect_fused_matches_eager(c, {a, a[3]}, "a row of the input");
  expect_fused_matches_eager(c, {a.narrow(1, 2, 32), a.narrow(1, 0, 32)}, "overlapping slices");
  // Outputs that are the input, a view of it, an identity to() of it, or one value twice.
  auto outs = torchfuse::compile(
      module_from("def forward(self, x):\n    a = torch.relu(x * 2.0) + 1.0\n    return (x, x.view(-1), x.float(), a, a)\n"),
      poisoned());
  outs.forward({rnd({16, 32})});
  const auto x = rnd({16, 32});
  const auto o = outs.forward({x}).toTupleRef().elements();
  torch::cuda::synchronize();
  EXPECT_TRUE(o[0].toTensor().is_same(x));
  EXPECT_EQ(o[1].toTensor().data_ptr(), x.data_ptr());
  EXPECT_TRUE(o[2].toTensor().is_same(x));
  EXPECT_TRUE(o[3].toTensor().is_same(o[4].toTensor()));
  EXPECT_TRUE(torch::allclose(o[3].toTensor(), torch::relu(x * 2.0) + 1.0));
  EXPECT_EQ(outs.stats().fused_calls, 2);
}

// ---- in-place ops ----

TEST(BadInputsGpu, InPlaceOpsOnTheFusedPath) {
  REQUIRE_GPU();
  // On values the graph computes: fused around the write, never across it.
  const char* inside[] = {
      "def forward(self, x):\n    y = x * 2.0 - 1.0\n    z = torch.sigmoid(y)\n    y.add_(1.0)\n"
      "    w = torch.relu(y) * 3.0\n    return z + w\n",
      "def forward(self, x):\n    y = x * 2.0 - 1.0\n    y[0].relu_()\n    return torch.sigmoid(y) + 1.0\n",
      "def forward(self, x):\n    y = torch.tanh(x) * 2.0\n    y.mul_(x)\n    return y + torch.exp(y) * 0.5\n",
  };
  for (const char* source : inside) {
    auto c = torchfuse::compile(module_from(source), poisoned());
    expect_fused_matches_eager(c, {rnd({64, 96})}, source);
  }
  // On inputs, also inside a list: eager, and the caller sees the write once.
  auto on_input = torchfuse::compile(
      module_from("def forward(self, x, y):\n    x.add_(1.0)\n    return torch.relu(x * 2.0) + y\n"), poisoned());
  auto on_element = torchfuse::compile(
      module_from("def forward(self, xs: List[torch.Tensor]):\n    xs[0].add_(1.0)\n    return torch.relu(xs[0] * 2.0) + xs[1]\n"),
      poisoned());
  for (int element = 0; element < 2; ++element) {
    auto& c = element ? on_element : on_input;
    const auto a = rnd({64, 96}), b = rnd({64, 96});
    auto mine = a.clone();
    const auto out = (element ? c.forward({list({mine, b})}) : c.forward({mine, b})).toTensor();
    torch::cuda::synchronize();
    EXPECT_TRUE(torch::equal(mine, a + 1.0)) << "the input was not written exactly once";
    EXPECT_TRUE(torch::allclose(out, torch::relu((a + 1.0) * 2.0) + b));
    EXPECT_EQ(c.stats().fused_calls, 0);
  }
}

// ---- dtypes that change between calls ----

TEST(BadInputsGpu, DtypeChangingBetweenCallsIsANewSpecialization) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(module_returning("x, y", "torch.softmax(x * 2.0, -1) + y"), poisoned());
  for (auto dtype : {c10::kFloat, c10::kHalf, c10::kBFloat16, c10::kFloat}) {
    expect_fused_matches_eager(c, {rnd({64, 256}, dtype), rnd({256}, dtype)}, c10::toString(dtype));
  }
  EXPECT_EQ(c.stats().specializations, 3);
  EXPECT_EQ(c.stats().fallback_calls, 0);
}

// Control flow whose result changes dtype between calls of one specialization (a bool input is
// guarded by kind, not value): the group reading it runs its ATen ops for such a call (it used
// to throw "compiled for Float"), and to() of it is not deleted as an identity.
TEST(BadInputsGpu, ControlFlowChangingDtypes) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(module_from(R"JIT(
def forward(self, x, half: bool):
    if half:
        y = x.half()
    else:
        y = x
    return torch.relu(y * 2.0) + 1.0, torch.sigmoid(y.float() * 3.0) - 1.0
)JIT"),
                              poisoned());
  const auto x = rnd({64, 96});
  expect_fused_matches_eager(c, {x, false}, "float branch, first");
  const auto out = c.forward({x, true}).toTupleRef().elements();
  torch::cuda::synchronize();
  EXPECT_EQ(out[0].toTensor().scalar_type(), c10::kHalf);
  EXPECT_EQ(out[1].toTensor().scalar_type(), c10::kFloat);
  const auto half = torchfuse::compare_with_eager(c, {x, true});
  EXPECT_TRUE(half.passed()) << half.to_string();
  const auto s = c.stats();
  EXPECT_EQ(s.specializations, 1);
  EXPECT_GT(s.fallback_calls, 0);   // the half calls
  EXPECT_EQ(s.fallback_groups, 0);  // no group gave up its kernel
  expect_fused_matches_eager(c, {x, false}, "float branch, again");
  // A dtype given as an int input: to() and sum(dtype=) follow it on every call.
  auto d = torchfuse::compile(module_from(R"JIT(
def forward(self, x, d: int):
    return torch.relu(x.to(d) * 2.0) + 1.0, torch.sum(x * 3.0, -1, dtype=d)
)JIT"),
                              poisoned());
  for (int64_t dtype : {int64_t{6}, int64_t{5}, int64_t{7}}) {  // float, half, double
    const auto o = d.forward({x, dtype}).toTupleRef().elements();
    const auto e = d.forward_eager({x, dtype}).toTupleRef().elements();
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(o[i].toTensor().scalar_type(), e[i].toTensor().scalar_type()) << "dtype " << dtype;
      EXPECT_TRUE(torchfuse::compare_outputs(e[i], o[i]).passed()) << "dtype " << dtype;
    }
  }
}

// ---- requires_grad inside lists, tuples and dicts ----

TEST(BadInputsGpu, RequiresGradInsideContainersRunsEager) {
  REQUIRE_GPU();
  const char* sources[] = {
      "def forward(self, xs: List[torch.Tensor]):\n    return torch.relu(xs[0] * 2.0) + xs[1]\n",
      "def forward(self, xs: Tuple[torch.Tensor, torch.Tensor]):\n    return torch.relu(xs[0] * 2.0) + xs[1]\n",
      "def forward(self, xs: Dict[str, torch.Tensor]):\n    return torch.relu(xs['a'] * 2.0) + xs['b']\n",
  };
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(sources[kind]);
    auto c = torchfuse::compile(module_from(sources[kind]), poisoned());
    auto pack = [&](const at::Tensor& a, const at::Tensor& b) {
      return kind == 0 ? list({a, b}) : kind == 1 ? tuple({a, b}) : dict({{"a", a}, {"b", b}});
    };
    expect_fused_matches_eager(c, {pack(rnd({64, 32}), rnd({64, 32}))}, "no grad: fused");
    const auto a = rnd({64, 32}).requires_grad_(), b = rnd({64, 32});
    const auto before = c.stats();
    const auto out = c.forward({pack(a, b)}).toTensor();
    EXPECT_EQ(c.stats().eager_calls, before.eager_calls + 1);
    ASSERT_TRUE(out.requires_grad());
    out.sum().backward();
    EXPECT_TRUE(torch::allclose(a.grad(), (a > 0).to(torch::kFloat) * 2.0));
    EXPECT_EQ(c.stats().specializations, 1);
  }
}

// ---- None and control flow on the fused path ----

TEST(BadInputsGpu, OptionalTensorsAndBranchesOnTheData) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(module_from(R"JIT(
def forward(self, x, o: Optional[torch.Tensor]):
    r = torch.relu(x * 2.0) + 1.0
    if o is not None:
        r = r * o
    if bool(r.sum() > 1000.0):
        r = torch.sigmoid(r) * 3.0
    else:
        r = torch.tanh(r) - 1.0
    return r + x
)JIT"),
                              poisoned());
  expect_fused_matches_eager(c, {rnd({64, 96}), c10::IValue()}, "None");
  expect_fused_matches_eager(c, {rnd({64, 96}), rnd({64, 96})}, "a tensor");
  expect_fused_matches_eager(c, {rnd({4, 4}) * 0.01, c10::IValue()}, "the other branch");
  expect_error([&] { c.forward({at::Tensor(), c10::IValue()}); }, {"input 0 ('x') must be a Tensor, got an undefined tensor"});
  EXPECT_EQ(c.stats().specializations, 2);
}

}  // namespace
