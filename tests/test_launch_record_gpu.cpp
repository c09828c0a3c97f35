// Recorded launches on the GPU (runtime/launch_record.h): a group's second call of a geometry
// repeats the first call's launch with new pointers. Every call of these tests gets a fresh draw of
// inputs and is checked against eager with the float64 reference; geometries alternate (sizes,
// transposed and offset inputs, pointers off the vector alignment), so a record used for the wrong
// geometry, or a pointer patched from the wrong input, gives wrong values. Outputs are not
// poisoned here: poisoned outputs are filled per call, so those calls never take the shortcut.
#include <functional>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "tests/test_util.h"

namespace {

using Inputs = std::vector<c10::IValue>;
using MakeInputs = std::function<Inputs(c10::ScalarType)>;

torch::Tensor rand_on_gpu(std::vector<int64_t> sizes, c10::ScalarType dtype) {
  return torch::randn(sizes, torch::TensorOptions().device(torch::kCUDA)).to(dtype);
}

// Input geometries in turn, each call on a fresh draw, every result against eager: the number
// of calls that repeated a record.
int64_t check_calls(torchfuse::CompiledModule& c, const std::vector<MakeInputs>& geometries, c10::ScalarType dtype,
                    int rounds) {
  const int64_t before = c.stats().recorded_calls;
  for (int r = 0; r < rounds; ++r) {
    for (size_t g = 0; g < geometries.size(); ++g) {
      const Inputs in = geometries[g](dtype);
      const auto report = torchfuse::compare_with_eager(c, in);
      EXPECT_TRUE(report.passed()) << "round " << r << ", geometry " << g << ", " << c10::toString(dtype) << "\n"
                                   << report.to_string();
    }
  }
  torch::cuda::synchronize();
  return c.stats().recorded_calls - before;
}

struct Case {
  std::string name;
  std::string params;
  std::string body;
  std::vector<MakeInputs> geometries;
};

std::vector<Case> cases() {
  const auto t = rand_on_gpu;
  std::vector<Case> out;
  out.push_back({"pointwise", "x, y", "torch.relu(x * y + 1.0) * x",
                 {[=](c10::ScalarType d) { return Inputs{t({64, 1024}, d), t({64, 1024}, d)}; },
                  [=](c10::ScalarType d) { return Inputs{t({1024, 64}, d).t(), t({64, 1024}, d)}; },
                  [=](c10::ScalarType d) { return Inputs{t({64, 1025}, d).narrow(1, 1, 1024), t({64, 1024}, d)}; },
                  [=](c10::ScalarType d) { return Inputs{t({3, 7}, d), t({3, 7}, d)}; },
                  // The first geometry's sizes and strides, its pointer one element off the
                  // vector alignment: only the key's misalignment tells the two apart.
                  [=](c10::ScalarType d) {
                    return Inputs{t({64 * 1024 + 1}, d).narrow(0, 1, 64 * 1024).view({64, 1024}), t({64, 1024}, d)};
                  }}});
  out.push_back({"broadcast", "x, w, b", "torch.sigmoid(x * w + b)",
                 {[=](c10::ScalarType d) { return Inputs{t({37, 129}, d), t({129}, d), t({129}, d)}; },
                  [=](c10::ScalarType d) { return Inputs{t({512, 256}, d), t({256}, d), t({256}, d)}; },
                  [=](c10::ScalarType d) { return Inputs{t({37, 130}, d).narrow(1, 1, 129), t({129}, d), t({129}, d)}; },
                  [=](c10::ScalarType d) {
                    return Inputs{t({512 * 256 + 3}, d).narrow(0, 3, 512 * 256).view({512, 256}), t({256}, d), t({256}, d)};
                  }}});
  out.push_back({"layer_norm", "x, w, b", "torch.layer_norm(x * 2.0, [x.size(-1)], w, b, 1e-5)",
                 {[=](c10::ScalarType d) { return Inputs{t({128, 768}, d), t({768}, d), t({768}, d)}; },
                  [=](c10::ScalarType d) { return Inputs{t({5, 768}, d), t({768}, d), t({768}, d)}; },
                  [=](c10::ScalarType d) { return Inputs{t({128, 64}, d), t({64}, d), t({64}, d)}; }}});
  out.push_back({"softmax_dim0", "x", "torch.softmax(x * 0.5, 0)",
                 {[=](c10::ScalarType d) { return Inputs{t({256, 96}, d)}; },
                  [=](c10::ScalarType d) { return Inputs{t({96, 256}, d).t()}; }}});
  // An input read through a slice: its pointer sits past the tensor's data pointer.
  out.push_back({"slice_view", "x, y", "torch.sigmoid(x[:, 3:67]) * y",
                 {[=](c10::ScalarType d) { return Inputs{t({32, 80}, d), t({32, 64}, d)}; },
                  [=](c10::ScalarType d) { return Inputs{t({16, 70}, d), t({16, 64}, d)}; }}});
  out.push_back({"two_outputs", "x, y", "(torch.tanh(x + y), x * y - 1.0)",
                 {[=](c10::ScalarType d) { return Inputs{t({8, 300}, d), t({8, 300}, d)}; },
                  [=](c10::ScalarType d) { return Inputs{t({8, 300}, d), t({1, 300}, d).expand({8, 300})}; }}});
  return out;
}

TEST(GpuRecordedLaunches, RepeatedGeometriesMatchEager) {
  REQUIRE_GPU();
  for (const Case& k : cases()) {
    for (c10::ScalarType dtype : {c10::ScalarType::Float, c10::ScalarType::BFloat16}) {
      SCOPED_TRACE(k.name + " " + c10::toString(dtype));
      auto c = torchfuse::compile(tftest::module_returning(k.params, k.body), tftest::quiet_options());
      const int64_t recorded = check_calls(c, k.geometries, dtype, 3);
      const torchfuse::Stats s = c.stats();
      EXPECT_EQ(s.fallback_groups, 0);
      // Every geometry after its first call repeats its record (one group per case here).
      const int64_t calls = 3 * static_cast<int64_t>(k.geometries.size());
      EXPECT_GE(recorded, calls - 2 * static_cast<int64_t>(k.geometries.size())) << c.graph_for(k.geometries[0](dtype));
    }
  }
}

TEST(GpuRecordedLaunches, InputsSharingAStorage) {
  REQUIRE_GPU();
  const auto m = tftest::module_returning("x, y", "torch.relu(x * y + x) - y");
  const auto t = [] { return rand_on_gpu({64, 256}, c10::ScalarType::Float); };
  // Recorded from separate inputs, then called with one tensor for both.
  auto c = torchfuse::compile(m, tftest::quiet_options());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(torchfuse::compare_with_eager(c, {t(), t()}).passed());
  const at::Tensor a = t();
  EXPECT_TRUE(torchfuse::compare_with_eager(c, {a, a}).passed());
  // First called with one tensor for both: that call cannot be recorded; separate inputs record.
  auto d = torchfuse::compile(m, tftest::quiet_options());
  for (int i = 0; i < 3; ++i) {
    const at::Tensor b = t();
    EXPECT_TRUE(torchfuse::compare_with_eager(d, {b, b}).passed());
  }
  EXPECT_EQ(d.stats().recorded_calls, 0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(torchfuse::compare_with_eager(d, {t(), t()}).passed());
  const at::Tensor b = t();
  EXPECT_TRUE(torchfuse::compare_with_eager(d, {b, b}).passed());
  torch::cuda::synchronize();
  EXPECT_GE(c.stats().recorded_calls, 3);
  EXPECT_GE(d.stats().recorded_calls, 2);
}

TEST(GpuRecordedLaunches, NotRecordedWhereTheyCannotRepeat) {
  REQUIRE_GPU();
  const auto big = [](c10::ScalarType d) { return Inputs{rand_on_gpu({4096, 2048}, d)}; };
  // Off by option: every call plans.
  auto options = tftest::quiet_options();
  options.record_launches = false;
  auto off = torchfuse::compile(tftest::module_returning("x", "torch.sigmoid(x) * x + 1.0"), options);
  EXPECT_EQ(check_calls(off, {big}, c10::ScalarType::Float, 4), 0);
  // A full reduction's partials and counters are not an input's or an output's: never recorded.
  auto full = torchfuse::compile(tftest::module_returning("x", "(x * x).sum()"), tftest::quiet_options());
  EXPECT_EQ(check_calls(full, {big}, c10::ScalarType::Float, 4), 0);
  EXPECT_GT(full.stats().kernel_launches, 0);
  // Poisoned outputs are filled per call: never recorded.
  auto poison = tftest::quiet_options();
  poison.debug_poison_outputs = true;
  auto poisoned = torchfuse::compile(tftest::module_returning("x", "torch.sigmoid(x) * x + 1.0"), poison);
  EXPECT_EQ(check_calls(poisoned, {big}, c10::ScalarType::Float, 4), 0);
}

}  // namespace
