// Batch, group and instance norms as the ops they compute (passes/decompose_norms.h), on the CPU:
// the rewrite's report, the plan (the norm and its neighbours in one kernel, its generated source
// compiling with NVRTC), eager's results through the groups' ATen fallbacks on fresh inputs of
// the compiled sizes and of others, and the norms left alone, with the reason.
#include "tests/fallback_util.h"

namespace {

using tftest::joined;

bool has(const std::vector<std::string>& lines, const std::string& what) { return tftest::any_line_has(lines, what); }

// A module whose forward is `source`, holding the buffers w, b, rm (a running mean) and rv (a
// running variance, positive) of `channels` entries, as a model's norm layer holds them.
torch::jit::Module norm_module(const std::string& source, int64_t channels, c10::ScalarType dtype) {
  return tftest::norm_layer_module(source, channels, torch::TensorOptions().dtype(dtype));
}

// `got` against eager's `want` on `in`, judged as compare_with_eager judges (allclose, else
// against the float64 run of the module: a bf16 difference of one rounding in an operand of a
// cancelling subtraction is larger than the result's tolerance).
void expect_judged_against_float64(const torch::jit::Module& m, const std::vector<c10::IValue>& in,
                                   const at::Tensor& got, const at::Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.scalar_type(), want.scalar_type());
  torch::jit::Module ref = m.clone();
  ref.to(torch::kDouble);
  std::vector<c10::IValue> in64;
  for (const auto& v : in) in64.emplace_back(v.toTensor().to(torch::kDouble));
  const at::Tensor reference = ref.forward(in64).toTensor();
  const auto report = torchfuse::compare_outputs_with_reference(want, got, reference);
  EXPECT_TRUE(report.passed()) << report.to_string();
}

// The module's frozen forward run with its groups on their ATen fallbacks, against the module
// itself (eager), on `in`.
void expect_eager_results(const torch::jit::Module& m, const std::vector<c10::IValue>& in) {
  const auto [got, want] = tftest::frozen_fallback_and_eager(m, in);
  expect_judged_against_float64(m, in, got, want);
}

struct NormCase {
  const char* name;
  const char* source;
  std::vector<int64_t> shape;  // compiled with
  std::vector<int64_t> other;  // run again with (another batch and spatial size)
  const char* applied;         // in the rewrite's report
  // How the one kernel's ops end, for float32 and for bfloat16 (a cast to float32 first, one
  // rounding cast at the end): the norm's neighbours are in it.
  const char* f32;
  const char* bf16;
};

const std::vector<NormCase> kCases = {
    {"batch_norm_relu_residual",
     "def forward(self, x):\n    y = torch.batch_norm(x, self.w, self.b, self.rm, self.rv, False, 0.1, 1e-5, True)\n"
     "    return torch.relu(y + x)\n",
     {4, 16, 9, 7}, {2, 16, 5, 11}, "aten::batch_norm", "sub -> mul -> mul -> add -> add -> relu",
     "sub -> mul -> mul -> add -> cast -> add -> relu"},
    {"batch_norm_1d",
     "def forward(self, x):\n    return torch.sigmoid(torch.batch_norm(x, self.w, self.b, self.rm, self.rv, False, 0.1, 1e-3, False))\n",
     {33, 16}, {5, 16}, "aten::batch_norm", "sub -> mul -> mul -> add -> sigmoid",
     "sub -> mul -> mul -> add -> cast -> sigmoid"},
    {"batch_norm_no_affine",
     "def forward(self, x):\n    return torch.batch_norm(x, None, None, self.rm, self.rv, False, 0.1, 1e-5, True) * 2.0\n",
     {3, 16, 10}, {6, 16, 4}, "aten::batch_norm", "sub -> mul -> mul", "sub -> mul -> cast -> mul"},
    {"group_norm_silu",
     "def forward(self, x):\n    return torch.silu(torch.group_norm(x, 4, self.w, self.b, 1e-5, True))\n",
     {2, 16, 6, 5}, {3, 16, 4, 9}, "aten::group_norm", "rsqrt -> sub -> mul -> mul -> add -> silu",
     "rsqrt -> sub -> mul -> mul -> add -> cast -> silu"},
    {"group_norm_3d_no_affine",
     "def forward(self, x):\n    return torch.group_norm(x, 8, None, None, 1e-6, True) + x\n",
     {4, 16, 37}, {2, 16, 50}, "aten::group_norm", "rsqrt -> sub -> mul -> add",
     "rsqrt -> sub -> mul -> cast -> add"},
    {"instance_norm",
     "def forward(self, x):\n    return torch.relu(torch.instance_norm(x, self.w, self.b, None, None, True, 0.1, 1e-5, True))\n",
     {2, 16, 8, 8}, {3, 16, 5, 6}, "aten::instance_norm", "rsqrt -> sub -> mul -> mul -> add -> relu",
     "rsqrt -> sub -> mul -> mul -> add -> cast -> relu"},
    {"instance_norm_running_stats",
     "def forward(self, x):\n    return torch.instance_norm(x, None, None, self.rm, self.rv, False, 0.1, 1e-5, True) - x\n",
     {2, 16, 8, 8}, {3, 16, 5, 6}, "aten::instance_norm", "sub -> mul -> sub", "sub -> mul -> cast -> sub"},
};

std::vector<c10::IValue> input(const std::vector<int64_t>& shape, c10::ScalarType dtype) {
  return {(torch::randn(shape) * 2.0 + 0.5).to(dtype)};
}

// Each norm is decomposed and fuses with what follows it into one kernel whose source NVRTC
// compiles (explain() builds every kernel), and the decomposed graph gives eager's results at the
// compiled sizes and at others, in float32 and bfloat16.
TEST(DecomposeNorms, NormsFuseWithTheirNeighboursAndMatchEager) {
  for (const auto dtype : {c10::kFloat, c10::kBFloat16}) {
    for (const auto& tc : kCases) {
      SCOPED_TRACE(std::string(tc.name) + " " + c10::toString(dtype));
      const auto m = norm_module(tc.source, 16, dtype);
      const auto in = input(tc.shape, dtype);
      const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in, /*compile_kernels=*/true);
      ASSERT_TRUE(has(e.rewrites, std::string(tc.applied) + " (")) << joined(e.rewrites) << joined(e.refused);
      ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << e.rewritten_graph << joined(e.refused);
      EXPECT_FALSE(tftest::contains_in_order(e.rewritten_graph, {tc.applied})) << e.rewritten_graph;
      // The kernel writes the result alone (no float32 copy of a 16-bit input, no intermediate).
      const size_t outputs = e.ir_after.find("outputs(");
      ASSERT_NE(outputs, std::string::npos) << e.ir_after;
      const std::string written = e.ir_after.substr(outputs, e.ir_after.find(')', outputs) - outputs);
      EXPECT_EQ(written.find(','), std::string::npos) << e.ir_after;
      const std::string want = dtype == c10::kFloat ? tc.f32 : tc.bf16;
      const std::string& got = e.kernels[0].description;
      EXPECT_TRUE(got.size() >= want.size() && got.compare(got.size() - want.size(), want.size(), want) == 0)
          << got << "\n" << joined(e.refused);
      expect_eager_results(m, in);
      expect_eager_results(m, input(tc.other, dtype));
    }
  }
}

// A bfloat16 norm computes in float32 and rounds once, as ATen's kernel: its statistics and
// parameters are float32 constants shaped [C, 1, 1] (the variance's rsqrt made once), every step
// is a float32 value, and one cast makes the bf16 result the residual add reads.
TEST(DecomposeNorms, SixteenBitNormsRoundOnce) {
  const auto m = norm_module(kCases[0].source, 16, c10::kBFloat16);
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(input(kCases[0].shape, c10::kBFloat16));
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_EQ(tftest::count_occurrences(e.ir_after, "f32[16, 1, 1] = constant_tensor"), 4) << e.ir_after;
  EXPECT_TRUE(tftest::contains_in_order(e.ir_after, {"f32[4, 16, 9, 7] = sub(", "f32[4, 16, 9, 7] = mul(",
                                                     "f32[4, 16, 9, 7] = mul(", "f32[4, 16, 9, 7] = add(",
                                                     "bf16[4, 16, 9, 7] = cast[to=bf16](", "bf16[4, 16, 9, 7] = add("}));
  EXPECT_EQ(tftest::count_occurrences(e.ir_after, "= cast["), 1) << e.ir_after;
}

// Left as they are, each with its reason: a training-mode batch norm (it updates the running
// statistics), a float64 input, a group norm whose group count is computed at run time.
TEST(DecomposeNorms, LeavesWhatItCannotSpell) {
  struct Left {
    const char* source;
    c10::ScalarType dtype;
    const char* reason;
  };
  const std::vector<Left> cases = {
      {"def forward(self, x):\n    return torch.batch_norm(x, self.w, self.b, self.rm, self.rv, True, 0.1, 1e-5, True)\n",
       c10::kFloat, "training mode"},
      {"def forward(self, x):\n    return torch.batch_norm(x, self.w, self.b, self.rm, self.rv, False, 0.1, 1e-5, True)\n",
       c10::kDouble, "input dtype f64"},
      {"def forward(self, x):\n    return torch.group_norm(x, x.size(0), self.w, self.b, 1e-5, True)\n", c10::kFloat,
       "num_groups is not a positive constant"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.source);
    const auto m = norm_module(tc.source, 16, tc.dtype);
    const auto in = input({4, 16, 6, 6}, tc.dtype);
    const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
    EXPECT_TRUE(has(e.refused, std::string("stays one ATen op: ") + tc.reason)) << joined(e.refused);
    EXPECT_TRUE(e.rewrites.empty() || !has(e.rewrites, "_norm (")) << joined(e.rewrites);
  }
}

// A norm whose parameters are the forward's inputs (not constants): the running variance's
// rsqrt and the reshapes are ops of the graph, and the results still match eager.
TEST(DecomposeNorms, ParametersFromInputs) {
  const auto m = tftest::module_returning(
      "x, w, b, rm, rv", "torch.relu(torch.batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5, True))");
  const std::vector<c10::IValue> in = {torch::randn({4, 8, 5, 5}), 1.0 + 0.5 * torch::randn({8}), torch::randn({8}),
                                       torch::randn({8}), 0.2 + torch::rand({8})};
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
  ASSERT_TRUE(has(e.rewrites, "aten::batch_norm (")) << joined(e.rewrites) << joined(e.refused) << e.rewritten_graph;
  EXPECT_TRUE(tftest::contains_in_order(e.rewritten_graph, {"torchfuse::FusionGroup"})) << e.rewritten_graph;
  const auto [got, want] = tftest::fallback_and_eager(m, in);
  EXPECT_TRUE(torch::allclose(got, want, 2e-5, 2e-5)) << (got - want).abs().max();
}

// Group and instance norms whose weight and bias are inputs, in 16 bits: the parameters' float32
// casts join the norm's kernel (one kernel, no ATen cast before it), and the results match eager
// as compare_with_eager judges them (eager's CPU bf16 group norm differs from float32-then-round
// by several bf16 roundings on some inputs: allclose alone failed on a CI machine's).
TEST(DecomposeNorms, SixteenBitParametersFromInputsCastInTheKernel) {
  const std::vector<std::pair<const char*, std::vector<int64_t>>> sources = {
      {"torch.silu(torch.group_norm(x, 4, w, b, 1e-5, True))", {2, 16, 6, 5}},
      {"torch.relu(torch.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, True))", {3, 16, 4, 7}},
  };
  for (const auto& [body, shape] : sources) {
    SCOPED_TRACE(body);
    const auto m = tftest::module_returning("x, w, b", body);
    const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16);
    const std::vector<c10::IValue> in = {(torch::randn(shape) * 2.0 + 0.5).to(bf16), (1.0 + 0.5 * torch::randn({16})).to(bf16),
                                         torch::randn({16}).to(bf16)};
    const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
    ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << joined(e.refused);
    EXPECT_EQ(tftest::count_occurrences(e.rewritten_graph, "aten::to("), 0) << e.rewritten_graph;
    const auto [got, want] = tftest::fallback_and_eager(m, in);
    expect_judged_against_float64(m, in, got, want);
  }
}

}  // namespace
