#include "passes/prune_groups.h"

#include <algorithm>
#include <vector>

#include <ATen/TensorUtils.h>

namespace torchfuse {
namespace {

bool row_major(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  if (strides.size() != sizes.size()) return true;
  int64_t expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// Ops that cost eager a kernel: everything but views, and a contiguous() of a value eager holds
// in another layout (a mul of a transposed view: eager's contiguous copies it).
bool costs_eager_a_kernel(const ir::Node* n) {
  if (n->kind != ir::OpKind::Contiguous) return !ir::computes_nothing(n->kind);
  const ir::Value* in = n->inputs.at(0);
  const auto& strides = in->eager_strides.empty() ? in->type.strides : in->eager_strides;
  return in->producer && !ir::computes_nothing(in->producer->kind) && !row_major(in->type.sizes, strides);
}

// Copies eager makes after the group: a reshape (or flatten) outside it of an output whose eager
// layout does not merge (passes/sink_reshapes.h moves a head merge's reshape after the add that
// reads it; the add alone is one op, but eager's add of the transposed heads comes out transposed
// and the reshape copies it, where the group writes its output row-major and the reshape is a view).
int64_t copies_after(const FusionGroup& g) {
  int64_t copies = 0;
  auto inside = [&](const ir::Node* n) { return std::find(g.nodes.begin(), g.nodes.end(), n) != g.nodes.end(); };
  for (const ir::Node* made : g.nodes) {
    const ir::Value* v = made->output();
    const auto& strides = v->eager_strides.empty() ? v->type.strides : v->eager_strides;
    for (const ir::Node* n : v->uses) {
      if ((n->kind != ir::OpKind::Reshape && n->kind != ir::OpKind::Flatten) || inside(n)) continue;
      if (!at::detail::computeStride(v->type.sizes, strides, n->output()->type.sizes).has_value()) ++copies;
    }
  }
  return copies;
}

// A contiguous() of a value transposed against row-major order (its innermost dim lies a stride
// apart and another dim's elements are adjacent): ATen's copy reads or writes across lines, the
// group's tiled kernel (tile_transposed_inputs) neither. passes/stage_transposed_rows.h puts such
// copies before row reductions.
bool transposing_copy(const ir::Node* n) {
  if (n->kind != ir::OpKind::Contiguous) return false;
  const ir::Value* in = n->inputs.at(0);
  const auto& strides = in->eager_strides.empty() ? in->type.strides : in->eager_strides;
  if (strides.size() != in->type.sizes.size()) return false;
  // Its innermost dim of size > 1 is the row: size-1 dims dropped first.
  std::vector<int64_t> sizes, kept;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (in->type.sizes[d] == 1) continue;
    sizes.push_back(in->type.sizes[d]);
    kept.push_back(strides[d]);
  }
  return ir::rows_across_lines(sizes, kept, 1);
}

// A group of one GELU (erf): ATen's kernel for it is bound by its arithmetic below memory speed,
// where the generated kernel is not (see prune_groups.h). The tanh form was not measured alone.
bool lone_gelu(const FusionGroup& g) {
  const ir::Node* op = nullptr;
  for (const ir::Node* n : g.nodes) {
    if (ir::computes_nothing(n->kind)) continue;
    if (op) return false;
    op = n;
  }
  return op && op->kind == ir::OpKind::Gelu;
}

}  // namespace

void prune_groups(PassContext& ctx) {
  std::vector<FusionGroup> kept;
  for (auto& g : ctx.plan.groups) {
    // Views (and expand_as) alone compute nothing: a kernel would only copy what ATen views for free.
    // (Except a transposing copy, which the group makes faster than ATen.)
    const bool transposes = std::any_of(g.nodes.begin(), g.nodes.end(), transposing_copy);
    if (!transposes &&
        std::all_of(g.nodes.begin(), g.nodes.end(), [](const ir::Node* n) { return ir::computes_nothing(n->kind); }))
      continue;
    // A reduction alone still gains: its prologue/epilogue may be trivial, but the schedule is ours.
    const bool has_reduction = std::any_of(g.nodes.begin(), g.nodes.end(),
                                           [](const ir::Node* n) { return ir::along_dims(n->kind); });
    // Views count for nothing: ATen's views cost no kernel (but its contiguous() of a computed
    // value in another layout is a copy).
    const auto ops = std::count_if(g.nodes.begin(), g.nodes.end(), costs_eager_a_kernel) + copies_after(g) +
                     (lone_gelu(g) ? 1 : 0);
    if (has_reduction || transposes || ops >= ctx.min_group_size) {
      g.id = static_cast<int>(kept.size());
      kept.push_back(std::move(g));
      continue;
    }
    std::vector<int> ids;
    for (const ir::Node* n : g.nodes) ids.push_back(n->id);
    ctx.refuse("group of %" + std::to_string(g.nodes.back()->output()->id) + " (" + g.describe() +
                   ") left to ATen: " + std::to_string(ops) + " op(s), fewer than min_group_size " +
                   std::to_string(ctx.min_group_size),
               ids);
  }
  ctx.plan.groups = std::move(kept);
}

}  // namespace torchfuse
