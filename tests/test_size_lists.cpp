// Normalized shapes computed from the input's own sizes, as scripted models write them
// (layer_norm(x, [x.size(-1)], w, b)): they fuse like constant ones, and their sizes are not
// pinned, since the list follows the input on every call.
#include "tests/test_util.h"

using tftest::module_from;

namespace {

const char* const kLayerNorm = R"JIT(
def forward(self, x, w, b):
    return torch.layer_norm(x * 2.0, [x.size(-1)], w, b, 1e-5)
)JIT";

TEST(SizeLists, LayerNormOverTheInputsOwnLastSizeFuses) {
  const std::vector<c10::IValue> in{torch::randn({8, 96}), torch::randn({96}), torch::randn({96})};
  const auto e = torchfuse::compile(module_from(kLayerNorm), tftest::quiet_options()).explain(in, true);
  ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after;
  EXPECT_NE(e.kernels[0].description.find("reduce_sum"), std::string::npos);
  for (const auto& r : e.refused) EXPECT_EQ(r.find("layer_norm"), std::string::npos) << r;
}

TEST(SizeLists, SeveralTrailingSizesAndTheWholeSize) {
  const auto two = module_from(R"JIT(
def forward(self, x):
    return torch.layer_norm(x + 1.0, [x.size(-2), x.size(-1)]) * 2.0
)JIT");
  const auto all = module_from(R"JIT(
def forward(self, x):
    return torch.layer_norm(x + 1.0, x.size()) * 2.0
)JIT");
  const std::vector<c10::IValue> in{torch::randn({4, 6, 32})};
  EXPECT_EQ(torchfuse::compile(two, tftest::quiet_options()).explain(in).kernels.size(), 1u);
  EXPECT_EQ(torchfuse::compile(all, tftest::quiet_options()).explain(in).kernels.size(), 1u);
}

// A list of sizes that are not the trailing ones stays in ATen and says why.
TEST(SizeLists, OtherSizesAreDeclined) {
  const auto m = module_from(R"JIT(
def forward(self, x):
    return torch.layer_norm(x + 1.0, [x.size(0)]) * 2.0
)JIT");
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain({torch::randn({6, 6})});
  bool said = false;
  for (const auto& r : e.refused) said = said || r.find("nor a list of the input's trailing sizes") != std::string::npos;
  EXPECT_TRUE(said);
}

// On the GPU: one specialization serves rows of 96 and of 1000 (sizes are not guarded), and
// both match eager.
TEST(SizeListsGpu, NewRowLengthsNeedNoNewSpecialization) {
  REQUIRE_GPU();
  auto c = torchfuse::compile(module_from(kLayerNorm), tftest::quiet_options());
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  for (int64_t n : {96, 1000}) {
    for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
      const std::vector<c10::IValue> in{torch::randn({16, n}, opts).to(dtype), torch::randn({n}, opts).to(dtype),
                                        torch::randn({n}, opts).to(dtype)};
      const auto report = torchfuse::compare_with_eager(c, in);
      EXPECT_TRUE(report.passed()) << n << "\n" << report.to_string();
    }
  }
  EXPECT_EQ(c.stats().specializations, 2);  // one per dtype
  EXPECT_GT(c.stats().kernel_launches, 0);
}

}  // namespace
