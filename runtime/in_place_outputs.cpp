#include "runtime/in_place_outputs.h"

#include <set>

#include <ATen/core/Tensor.h>

namespace torchfuse {
namespace runtime {
namespace {

// The group's values output `out` is computed from (itself included).
std::set<const ir::Value*> computed_from(const FusionGroup& g, const ir::Value* out) {
  std::set<const ir::Value*> from{out};
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    const ir::Node* n = *it;
    bool feeds = false;
    for (const ir::Value* o : n->outputs) feeds = feeds || from.count(o) > 0;
    if (!feeds) continue;
    for (const ir::Value* in : n->inputs) from.insert(in);
  }
  return from;
}

// Input k is read as itself, by nodes that all feed `from` (the output's computation).
bool read_only_for(const FusionGroup& g, size_t k, const std::set<const ir::Value*>& from) {
  if (k < g.input_views.size() && !g.input_views[k].empty()) return false;
  if (k < g.input_binds.size() && !g.input_binds[k].empty()) return false;
  if (g.cat_piece_of_input(k).first >= 0) return false;
  const ir::Value* v = g.inputs[k];
  for (const ir::Node* n : g.nodes) {
    bool reads = false;
    for (const ir::Value* in : n->inputs) reads = reads || in == v;
    if (!reads) continue;
    for (const ir::Value* o : n->outputs)
      if (!from.count(o)) return false;
  }
  return true;
}

// A row group's element value computed in its last pass, with online sums and without.
bool in_last_pass(const ir::Value* v, const codegen::GroupAnalysis& a) {
  for (const codegen::ReductionAnalysis* r : {a.get(), a.online ? &*a.online : nullptr}) {
    if (r && (r->is_row(v) || r->level_of(v) != r->passes - 1)) return false;
  }
  return true;
}

}  // namespace

std::vector<int> in_place_candidates(const FusionGroup& g, const codegen::GroupAnalysis& analysis) {
  const codegen::ReductionAnalysis* a = analysis.get();
  std::vector<int> candidates(g.outputs.size(), -1);
  if (g.schedule != Schedule::Pointwise && g.schedule != Schedule::RowReduction) return candidates;
  if (!g.cats.empty() || g.has_views()) return candidates;
  if (g.schedule == Schedule::RowReduction && (!a || !a->scans.empty())) return candidates;
  std::vector<bool> used(g.inputs.size(), false);
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const ir::Value* out = g.outputs[k];
    if (!out->type.is_tensor()) continue;
    if (a && !in_last_pass(out, analysis)) continue;
    const std::set<const ir::Value*> from = computed_from(g, out);
    for (size_t j = 0; j < g.inputs.size(); ++j) {
      const ir::Value* in = g.inputs[j];
      if (used[j] || !in->type.is_tensor() || !from.count(in)) continue;
      if (in->type.dtype != out->type.dtype || in->type.sizes != out->type.sizes) continue;
      if (!read_only_for(g, j, from)) continue;
      used[j] = true;
      candidates[k] = static_cast<int>(j);
      break;
    }
  }
  return candidates;
}

bool can_take_over(const c10::IValue& input, c10::IntArrayRef sizes, c10::ScalarType dtype) {
  if (!input.isTensor()) return false;
  const at::Tensor& t = input.toTensor();
  if (!t.defined() || t.layout() != c10::kStrided || t.scalar_type() != dtype || t.requires_grad()) return false;
  if (t.sizes() != sizes || !t.is_contiguous() || t.numel() == 0) return false;
  // The call's reference alone, no view of the same memory anywhere, and memory an allocator gave
  // (not a caller's buffer wrapped by from_blob, which the caller may read again).
  return t.use_count() == 1 && t.storage().use_count() == 1 && t.storage().data() != nullptr &&
         t.storage().allocator() != nullptr;
}

}  // namespace runtime
}  // namespace torchfuse
