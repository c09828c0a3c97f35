// Specializations whose rewritten graph is one fusion node run it without TorchScript's
// interpreter (runtime/direct_call.h). On the CPU, through the test hook that builds groups on
// their fallbacks: which graphs take the direct path, and that their results are eager's (one
// output, a tuple, an input returned beside the node's output, an input read twice).
#include "tests/cpu_fallbacks.h"
#include "tests/test_util.h"

namespace {

using tftest::on_cpu_fallbacks;

std::vector<c10::IValue> two_inputs() { return {torch::randn({6, 16}), torch::randn({6, 16})}; }

TEST(DirectCall, OneFusionNodeRunsWithoutTheInterpreter) {
  auto impl = on_cpu_fallbacks(tftest::module_returning("x, y", "torch.relu(x * y + 1.0) * x"));
  for (int i = 0; i < 3; ++i) {
    const auto in = two_inputs();
    const at::Tensor got = impl->forward(in).toTensor();
    EXPECT_TRUE(torch::allclose(got, impl->forward_eager(in).toTensor()));
  }
  EXPECT_TRUE(impl->runs_direct(two_inputs()));
  EXPECT_EQ(tftest::fusion_nodes(impl->graph_for(two_inputs())), 1);
}

TEST(DirectCall, TuplesAndInputsReturnedBesideTheNodesOutputs) {
  auto impl = on_cpu_fallbacks(tftest::module_from(R"JIT(
def forward(self, x, y):
    a = torch.sigmoid(x * y + 1.0)
    b = torch.relu(a * 2.0 - x)
    return b, x, a
)JIT"));
  const auto in = two_inputs();
  const c10::IValue got = impl->forward(in);
  const c10::IValue want = impl->forward_eager(in);
  ASSERT_TRUE(got.isTuple());
  const auto& g = got.toTupleRef().elements();
  const auto& w = want.toTupleRef().elements();
  ASSERT_EQ(g.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(torch::allclose(g[i].toTensor(), w[i].toTensor())) << i;
  EXPECT_TRUE(g[1].toTensor().is_same(in[0].toTensor()));  // the input itself, as the interpreter returns it
  EXPECT_TRUE(impl->runs_direct(in));
}

TEST(DirectCall, OtherOpsBesideTheNodeKeepTheInterpreter) {
  auto impl = on_cpu_fallbacks(tftest::groups_around_matmul());
  const std::vector<c10::IValue> in = {torch::randn({4, 8}), torch::randn({8, 8})};
  EXPECT_TRUE(torch::allclose(impl->forward(in).toTensor(), impl->forward_eager(in).toTensor(), 1e-5, 1e-5));
  EXPECT_FALSE(impl->runs_direct(in));
}

}  // namespace
