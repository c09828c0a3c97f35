// Indexing by aranges as views (passes/view_arange_indices.h), on the CPU: Hugging Face's padding
// mask, an offset arange, the bounds eager checks, and the indices it leaves, with the reason.
#include "tests/fallback_util.h"
#include "tests/mask_modules.h"

namespace {

using tftest::joined;

bool has_index(const std::string& graph) { return graph.find("aten::index(") != std::string::npos; }

// BERT's padding mask as Hugging Face builds it (tests/mask_modules.h): the index becomes a view
// and the cast, the where and the mul one kernel.
TEST(ViewAranges, PaddingMaskIndexBecomesAViewOfTheMask) {
  const auto m = tftest::module_from(tftest::kArangeIndexedMask);
  for (int64_t batch : {4, 1}) {
    const std::vector<c10::IValue> in{torch::randint(0, 2, {batch, 16}, torch::kLong), torch::randn({batch, 2, 3, 16})};
    const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
    ASSERT_TRUE(tftest::any_line_has(e.rewrites, "indexed by aranges -> narrow and unsqueeze views"))
        << joined(e.rewrites) << joined(e.refused);
    EXPECT_FALSE(has_index(e.rewritten_graph)) << e.rewritten_graph;
    ASSERT_EQ(e.kernels.size(), 1u) << e.ir_after << joined(e.refused);
    const auto [got, want] = tftest::fallback_and_eager(m, in);
    EXPECT_TRUE(torch::equal(got, want)) << "batch " << batch;
  }
}

// An arange plus a constant, shorter than the dim: the rows it names, as a narrow.
TEST(ViewAranges, OffsetArangeTakesTheRowsItNames) {
  const auto m = tftest::module_from(R"JIT(
def forward(self, x, y):
    i = torch.arange(y.size(0)) + 2
    return torch.relu(x[i] * 3.0) + y
)JIT");
  const std::vector<c10::IValue> in{torch::randn({10, 5}), torch::randn({6, 5})};
  const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
  ASSERT_TRUE(tftest::any_line_has(e.rewrites, "indexed by aranges")) << joined(e.rewrites) << joined(e.refused);
  EXPECT_FALSE(has_index(e.rewritten_graph)) << e.rewritten_graph;
  const auto [got, want] = tftest::fallback_and_eager(m, in);
  EXPECT_TRUE(torch::equal(got, want));
  EXPECT_TRUE(torch::equal(want, torch::relu(in[0].toTensor().narrow(0, 2, 6) * 3.0) + in[1].toTensor()));
}

// An arange past the end of its dim raises, as eager's index does (here narrow's check).
TEST(ViewAranges, ArangePastTheDimRaisesAsEagerDoes) {
  const auto m = tftest::module_from(R"JIT(
def forward(self, x, y):
    i = torch.arange(y.size(0))
    return torch.relu(x[i] * 3.0) + 1.0
)JIT");
  auto graph = m.get_method("forward").graph()->copy();
  graph->eraseInput(0);
  torchfuse::prepare_graph(graph);
  auto impl = std::make_shared<torchfuse::CompiledModuleImpl>(graph, tftest::quiet_options());
  torchfuse::CompiledModuleImpl::TestHooks hooks;
  hooks.cpu_fallbacks = true;
  impl->set_test_hooks(hooks);
  const auto x = torch::randn({8, 5});
  const auto fits = impl->forward({x, torch::randn({8})}).toTensor();
  EXPECT_TRUE(torch::equal(fits, torch::relu(x * 3.0) + 1.0));
  const std::vector<c10::IValue> past{x, torch::randn({9})};
  EXPECT_ANY_THROW(impl->forward_eager(past));
  EXPECT_ANY_THROW(impl->forward(past));
}

// Left as gathers, each with its reason: a returned result (the view would alias the input), aranges
// along decreasing dims (a transpose, no view of the input as laid out), an index that is no
// arange, and a graph that writes a tensor in place.
TEST(ViewAranges, LeavesOtherIndicesWithTheReason) {
  struct Case {
    const char* name;
    const char* source;
    const char* why;
  };
  const Case cases[] = {
      {"returned", R"JIT(
def forward(self, x):
    b = torch.arange(x.size(0))[:, None]
    k = torch.arange(x.size(1))[None, :]
    return x[b, k]
)JIT",
       "its result is returned"},
      {"transposed", R"JIT(
def forward(self, x):
    b = torch.arange(x.size(0))[None, :]
    k = torch.arange(x.size(1))[:, None]
    return x[b, k] * 2.0 + 1.0
)JIT",
       "its aranges do not lie along increasing dims"},
      {"rotated", R"JIT(
def forward(self, x):
    b = torch.remainder(torch.arange(x.size(0)) + 1, x.size(0))
    return x[b] * 2.0 + 1.0
)JIT",
       "an index is not an arange"},
      {"written", R"JIT(
def forward(self, x):
    b = torch.arange(x.size(0))
    y = x[b] * 2.0 + 1.0
    x.add_(1.0)
    return y
)JIT",
       "the graph writes tensors in place"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const auto m = tftest::module_from(c.source);
    const std::vector<c10::IValue> in{torch::randn({6, 4})};
    const auto e = torchfuse::compile(m, tftest::quiet_options()).explain(in);
    EXPECT_TRUE(tftest::any_line_has(e.refused, std::string("stays an index: ") + c.why)) << joined(e.refused);
    EXPECT_FALSE(tftest::any_line_has(e.rewrites, "indexed by aranges")) << joined(e.rewrites);
    EXPECT_TRUE(has_index(e.rewritten_graph)) << e.rewritten_graph;
    if (std::string(c.name) == "written") continue;  // the write makes eager's x differ between runs
    const auto [got, want] = tftest::fallback_and_eager(m, in);
    EXPECT_TRUE(torch::equal(got, want));
  }
}

}  // namespace
