// Specializations whose rewritten graph is one fusion node run it without TorchScript's
// interpreter (runtime/direct_call.h). On the CPU, through the test hook that builds groups on
// their fallbacks: which graphs take the direct path, and that their results are eager's (one
// output, a tuple, an input returned beside the node's output, an input read twice).
#include <chrono>

#include "runtime/hot_path_clock.h"
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

// The hot-path clock (runtime/hot_path_clock.h) splits a call's host time by phase. On the CPU
// fallbacks a call passes the entry, the way to the fusion node, its fallback graph, the node's
// return and the results: those are timed, the fused launch's phases stay at zero, the spans add
// up to less than the calls' wall time, and nothing more is timed once the clock is uninstalled.
TEST(DirectCall, HotPathClockTimesThePhasesACallPasses) {
  namespace rt = torchfuse::runtime;
  auto impl = on_cpu_fallbacks(tftest::module_returning("x, y", "torch.relu(x * y + 1.0) * x"));
  const auto in = two_inputs();
  impl->forward(in);  // built
  ASSERT_TRUE(impl->runs_direct(in));
  constexpr int kCalls = 20;
  rt::HotPathClock clock;
  const auto t0 = std::chrono::steady_clock::now();
  {
    const rt::HotPathClock::Install installed(&clock);
    for (int i = 0; i < kCalls; ++i) impl->forward(in);
  }
  const double wall_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  const auto us = clock.mean_us(kCalls);
  auto at = [&](rt::HotPhase p) { return us[static_cast<int>(p)]; };
  for (rt::HotPhase p : {rt::HotPhase::entry, rt::HotPhase::between, rt::HotPhase::fallback, rt::HotPhase::node_exit,
                         rt::HotPhase::results}) {
    EXPECT_GT(at(p), 0.0) << rt::hot_phase_name(p);
  }
  for (rt::HotPhase p : {rt::HotPhase::guards, rt::HotPhase::inputs, rt::HotPhase::plan, rt::HotPhase::allocate,
                         rt::HotPhase::kernel, rt::HotPhase::pack, rt::HotPhase::launch, rt::HotPhase::graph_lookup,
                         rt::HotPhase::replay}) {
    EXPECT_EQ(at(p), 0.0) << rt::hot_phase_name(p);
  }
  double sum = 0;
  for (double u : us) sum += u;
  EXPECT_LE(sum * kCalls, wall_us);
  impl->forward(in);
  EXPECT_EQ(clock.mean_us(kCalls), us);
}

}  // namespace
