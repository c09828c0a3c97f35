// Helpers of the CPU view tests (tests/test_views.cpp: reshaping views; tests/test_view_slices.cpp:
// views that take part of a tensor or broadcast it): a view chain as a case, and explain()'s plans,
// kernels and refusals without a GPU.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "passes/view_steps.h"
#include "tests/test_util.h"

namespace tftest {

// A view between pointwise ops: forward(self, <args>) returns `expr`.
struct ViewCase {
  const char* name;
  const char* args;
  const char* expr;
  std::vector<std::vector<int64_t>> shapes;  // of the inputs, in order
  const char* ir_view;                       // the view as the IR prints it
};

inline std::vector<c10::IValue> inputs_of(const ViewCase& c, c10::ScalarType dtype) {
  std::vector<c10::IValue> in;
  for (const auto& s : c.shapes) in.emplace_back(torch::randn(s).to(dtype));
  return in;
}

// Plans, kernels and (with `compile`) NVRTC's cubins for `arch`, without a GPU.
inline torchfuse::Explanation explain(const torch::jit::Module& m, const std::vector<c10::IValue>& in, bool compile = false,
                                      const std::string& arch = "sm_90", int min_group_size = 2) {
  auto options = quiet_options(min_group_size);
  options.offline_arch = arch;
  return torchfuse::compile(m, options).explain(in, compile);
}

inline bool any_refusal_contains(const torchfuse::Explanation& e, const std::string& text) {
  for (const auto& r : e.refused)
    if (r.find(text) != std::string::npos) return true;
  return false;
}

// What to print when a group was not formed: the refusals, the IR after fusion and the graph.
inline std::string refusals(const torchfuse::Explanation& e) {
  std::string s;
  for (const auto& r : e.refused) s += r + "\n";
  return s + e.ir_after + e.rewritten_graph;
}

// The case's chain is one group (f32): the IR before fusion holds the view, one kernel and one
// fusion node replace it, none of `eager_ops` is left in the graph, and the group's description
// and the plan name the view.
inline void expect_view_chain_is_one_group(const ViewCase& c, const std::vector<std::string>& eager_ops) {
  SCOPED_TRACE(c.name);
  const auto e = explain(module_returning(c.args, c.expr), inputs_of(c, c10::kFloat));
  EXPECT_NE(e.ir_before.find(std::string("= ") + c.ir_view), std::string::npos) << e.ir_before;
  ASSERT_EQ(e.kernels.size(), 1u) << refusals(e);
  EXPECT_EQ(fusion_nodes(e.rewritten_graph), 1) << e.rewritten_graph;
  for (const auto& op : eager_ops) EXPECT_EQ(e.rewritten_graph.find(op), std::string::npos) << op << " left in\n" << e.rewritten_graph;
  const std::string view_name = std::string(c.ir_view).substr(0, std::string(c.ir_view).find('['));
  EXPECT_NE(e.kernels[0].description.find(view_name), std::string::npos) << e.kernels[0].description;
  EXPECT_TRUE(contains_in_order(e.ir_after, {"read through ", view_name}));
}

// The stride transform the runtime applies (apply_view_steps) against torch's own views.
struct StridesCase {
  const char* name;
  at::Tensor input;
  std::vector<int64_t> value_sizes;  // the shape the input broadcasts to before the views
  std::vector<torchfuse::ViewStep> steps;
  std::function<at::Tensor(const at::Tensor&)> torch_views;
};

// Reading the input through the transformed sizes, strides and offset (as_strided) gives the
// views of the input broadcast to the steps' shape.
inline void expect_strides_agree_with_torch_views(const StridesCase& c) {
  SCOPED_TRACE(c.name);
  std::vector<int64_t> sizes = c.input.sizes().vec(), strides = c.input.strides().vec();
  int64_t offset = 0;
  ASSERT_TRUE(torchfuse::apply_view_steps(c.steps, sizes, strides, offset));
  const at::Tensor read = c.input.as_strided(sizes, strides, c.input.storage_offset() + offset);
  const at::Tensor expected = c.torch_views(c.input.expand(c.value_sizes).contiguous());
  EXPECT_TRUE(torch::equal(read.expand(expected.sizes()), expected)) << read << expected;
}

// Both halves of a rotation returned together: two chains reading the same slices of q, cos and
// sin, neither reading the other (sibling chains; tests/test_fuse_siblings.cpp). q [.., 64], cos
// and sin [.., 64].
constexpr const char* kRotationHalves = R"JIT(
def forward(self, q, cos, sin):
    q1 = q[..., :32]
    q2 = q[..., 32:]
    c = cos[..., :32]
    s = sin[..., :32]
    return q1 * c - q2 * s, q2 * c + q1 * s
)JIT";

}  // namespace tftest
