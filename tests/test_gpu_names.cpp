// On the GPU: the kernel cache across differently numbered graphs. Every test skips itself
// without a CUDA device.
#include <algorithm>

#include "tests/test_util.h"

namespace {

using tftest::module_from;
using tftest::module_returning;

torch::Tensor rnd(std::vector<int64_t> sizes, c10::ScalarType dtype = c10::kFloat) {
  return torch::randn(sizes, torch::TensorOptions().device(c10::Device(c10::kCUDA, 0))).to(dtype);
}

// The same softmax behind an unrelated group and a matmul: other IR ids and group id, the same
// kernel. The second module finds it in the process's kernel cache (the key is the kernel's name
// and canonical source): only its other group's kernel comes from NVRTC or the disk.
TEST(GpuNames, SameKernelFromAnotherGraphIsACacheHit) {
  REQUIRE_GPU();
  auto alone = torchfuse::compile(module_returning("x, m", "torch.softmax(x * 0.125 + m, -1)"), tftest::quiet_options());
  auto behind = torchfuse::compile(module_from(R"JIT(
def forward(self, w, x, m):
    u = torch.tanh(w) * 3.25 + w
    v = torch.matmul(u, u)
    return torch.softmax(x * 0.125 + m, -1), v
)JIT"),
                                   tftest::quiet_options());
  const auto x = rnd({4, 8, 256});
  const auto m = rnd({1, 1, 256});
  const std::vector<c10::IValue> in_alone{x, m};
  const std::vector<c10::IValue> in_behind{rnd({32, 32}), x, m};
  EXPECT_TRUE(torchfuse::compare_with_eager(alone, in_alone).passed());
  EXPECT_TRUE(torchfuse::compare_with_eager(behind, in_behind).passed());
  const auto a = alone.stats();
  const auto b = behind.stats();
  ASSERT_EQ(a.groups.size(), 1u);
  ASSERT_EQ(b.groups.size(), 2u);
  const auto same = std::find_if(b.groups.begin(), b.groups.end(),
                                 [&](const torchfuse::GroupStats& g) { return g.description == a.groups[0].description; });
  ASSERT_NE(same, b.groups.end());
  EXPECT_EQ(same->kernel_name, a.groups[0].kernel_name);
  EXPECT_EQ(b.kernels_compiled + b.kernel_disk_hits, 1) << "compiled " << b.kernels_compiled << ", disk hits "
                                                        << b.kernel_disk_hits;
}

}  // namespace
