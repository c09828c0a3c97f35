#include "passes/view_steps.h"

#include <algorithm>
#include <set>

#include "src/error.h"

namespace torchfuse {

ViewStep view_step_of(const ir::Node& view) {
  TORCHFUSE_INTERNAL_ASSERT(ir::is_view(view.kind), "not a view: ", ir::op_name(view.kind));
  ViewStep s;
  s.kind = view.kind;
  s.dims = view.dims;
  s.in_sizes = view.inputs.at(0)->type.sizes;
  s.rank = static_cast<int64_t>(s.in_sizes.size());
  return s;
}

std::string describe_steps(const std::vector<ViewStep>& steps) {
  std::string s;
  for (const ViewStep& v : steps) {
    if (!s.empty()) s += " -> ";
    s += ir::op_name(v.kind);
    s += ir::shape_str(v.dims);
  }
  return s;
}

namespace {

bool apply_one(const ViewStep& step, std::vector<int64_t>& sizes, std::vector<int64_t>& strides) {
  if (static_cast<int64_t>(sizes.size()) > step.rank) return false;
  while (static_cast<int64_t>(sizes.size()) < step.rank) {
    sizes.insert(sizes.begin(), 1);
    strides.insert(strides.begin(), 0);
  }
  switch (step.kind) {
    case ir::OpKind::Permute: {
      if (static_cast<int64_t>(step.dims.size()) != step.rank) return false;
      std::vector<int64_t> s, t;
      for (int64_t d : step.dims) {
        s.push_back(sizes.at(d));
        t.push_back(strides.at(d));
      }
      sizes = std::move(s);
      strides = std::move(t);
      return true;
    }
    case ir::OpKind::Unsqueeze:
      for (int64_t d : step.dims) {
        if (d < 0 || d > static_cast<int64_t>(sizes.size())) return false;
        sizes.insert(sizes.begin() + d, 1);
        strides.insert(strides.begin() + d, 0);
      }
      return true;
    case ir::OpKind::Squeeze:
      for (size_t i = step.dims.size(); i-- > 0;) {
        const int64_t d = step.dims[i];
        if (d < 0 || d >= static_cast<int64_t>(sizes.size()) || sizes[d] != 1) return false;
        sizes.erase(sizes.begin() + d);
        strides.erase(strides.begin() + d);
      }
      return true;
    case ir::OpKind::Flatten: {
      const int64_t lo = step.dims.at(0), hi = step.dims.at(1);
      if (lo < 0 || hi >= static_cast<int64_t>(sizes.size()) || lo > hi) return false;
      int64_t numel = 1;
      for (int64_t d = lo; d <= hi; ++d) numel *= sizes[d];
      int64_t stride = 0;  // of the innermost dim of size > 1 seen so far (walking outwards)
      int64_t expect = -1;  // the stride the next outer dim of size > 1 must have
      for (int64_t d = hi; d >= lo && numel != 0; --d) {
        if (sizes[d] == 1) continue;
        if (expect < 0) stride = strides[d];
        else if (strides[d] != expect) return false;
        expect = strides[d] * sizes[d];
      }
      if (numel == 0) stride = 0;
      sizes.erase(sizes.begin() + lo, sizes.begin() + hi + 1);
      strides.erase(strides.begin() + lo, strides.begin() + hi + 1);
      sizes.insert(sizes.begin() + lo, numel);
      strides.insert(strides.begin() + lo, stride);
      return true;
    }
    default:
      return false;
  }
}

std::string name(const ir::Node* n) { return "%" + std::to_string(n->output()->id) + " (" + ir::op_name(n->kind) + ")"; }

// Plan-time check of an input's path on its profiled type: each merge must be possible, and a
// merged dim must not broadcast the input inside it (a size-1 dim of the input where the view's
// input has more: no stride walks that). The guards pin which dims are size 1, so this holds
// for every call; the strides are checked again per call (apply_view_steps).
std::string check_strides_path(const ir::Value* v, const std::vector<ViewStep>& steps, std::vector<int64_t> strides) {
  std::vector<int64_t> sizes = v->type.sizes;
  for (const ViewStep& step : steps) {
    std::vector<int64_t> padded = sizes;
    while (static_cast<int64_t>(padded.size()) < step.rank) padded.insert(padded.begin(), 1);
    if (step.kind == ir::OpKind::Flatten && static_cast<int64_t>(padded.size()) == step.rank) {
      bool all_one = true, broadcast = false;
      for (int64_t d = step.dims[0]; d <= step.dims[1]; ++d) {
        all_one = all_one && padded[d] == 1;
        broadcast = broadcast || (padded[d] == 1 && step.in_sizes[d] != 1);
      }
      if (broadcast && !all_one) {
        return "input %" + std::to_string(v->id) + " " + ir::shape_str(v->type.sizes) +
               " is broadcast inside the dims that flatten merges (" + ir::shape_str(step.in_sizes) + ", dims " +
               std::to_string(step.dims[0]) + ".." + std::to_string(step.dims[1]) + ")";
      }
    }
    if (!apply_one(step, sizes, strides)) {
      return "input %" + std::to_string(v->id) + " " + v->type.str() + " cannot be read through " +
             describe_steps(steps) + " (its strides do not merge)";
    }
  }
  return "";
}

// Both layouts the input may arrive in must read through the path: a fused producer's
// (contiguous) and eager's, should its op stay in ATen (too small a group, a refusal).
std::string check_input_path(const ir::Value* v, const std::vector<ViewStep>& steps) {
  const std::string why = check_strides_path(v, steps, v->type.strides);
  if (!why.empty() || v->eager_strides.empty() || v->eager_strides == v->type.strides) return why;
  const std::string eager = check_strides_path(v, steps, v->eager_strides);
  if (eager.empty()) return "";
  return eager.substr(0, eager.rfind(" (")) + " (its strides as eager makes them, " + ir::shape_str(v->eager_strides) +
         ", do not merge)";
}

}  // namespace

bool apply_view_steps(const std::vector<ViewStep>& steps, std::vector<int64_t>& sizes, std::vector<int64_t>& strides) {
  for (const ViewStep& s : steps)
    if (!apply_one(s, sizes, strides)) return false;
  return true;
}

bool has_view(const std::vector<const ir::Node*>& nodes) {
  return std::any_of(nodes.begin(), nodes.end(), [](const ir::Node* n) { return ir::is_view(n->kind); });
}

ViewPaths view_paths(const std::vector<const ir::Node*>& nodes, const std::function<bool(const ir::Value*)>& escapes) {
  ViewPaths p;
  const std::set<const ir::Node*> inside(nodes.begin(), nodes.end());
  // Values computed by the group's ops (not only moved by its views): a view of anything else
  // that the group would output would be copied, where eager aliases it.
  std::set<const ir::Value*> computed;
  for (const ir::Node* n : nodes) {
    const bool moves_computed = ir::is_view(n->kind) && computed.count(n->inputs[0]);
    if (!ir::is_view(n->kind) || moves_computed) computed.insert(n->output());
  }
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const ir::Node* n = *it;
    const ir::Value* out = n->output();
    std::optional<std::vector<ViewStep>> seq;
    const ir::Node* seq_user = nullptr;  // whose path seq is (null: outside the group)
    if (escapes(out)) {
      seq.emplace();
      if (ir::is_view(n->kind) && !computed.count(out)) {
        p.why_not = "the view " + name(n) + " of a group input is also used outside the group (fusing would copy it)";
        return p;
      }
    }
    for (const ir::Node* u : out->uses) {
      if (!inside.count(u)) continue;
      std::vector<ViewStep> cand;
      if (ir::is_view(u->kind)) cand.push_back(view_step_of(*u));
      const auto& rest = p.after.at(u);
      cand.insert(cand.end(), rest.begin(), rest.end());
      if (!seq) {
        seq = std::move(cand);
        seq_user = u;
        continue;
      }
      if (*seq == cand) continue;
      const ir::Node* view = ir::is_view(u->kind) ? u : seq_user && ir::is_view(seq_user->kind) ? seq_user : nullptr;
      p.why_not = name(n) + ", computed before " + (view ? "the view " + name(view) : std::string("a view")) +
                  ", is also needed " + (seq_user ? "on another view path" : "outside the group") +
                  " (the group's outputs must all be in one index domain)";
      return p;
    }
    p.after[n] = seq ? *seq : std::vector<ViewStep>{};
  }
  bool first = true;
  for (const ir::Node* n : nodes) {
    // Inputs, and the path each is read through.
    for (const ir::Value* v : n->inputs) {
      // 0-dim inputs too: unsqueeze makes them [1] (the runtime skips host scalars' steps).
      if ((v->producer && inside.count(v->producer)) || !v->type.is_tensor()) continue;
      std::vector<ViewStep> steps;
      if (ir::is_view(n->kind)) steps.push_back(view_step_of(*n));
      const auto& rest = p.after.at(n);
      steps.insert(steps.end(), rest.begin(), rest.end());
      auto [at, inserted] = p.input_steps.emplace(v, steps);
      if (!inserted && at->second != steps) {
        p.why_not = "input %" + std::to_string(v->id) + " would be read through two different view paths (" +
                    (at->second.empty() ? "none" : describe_steps(at->second)) + " and " +
                    (steps.empty() ? "none" : describe_steps(steps)) + ")";
        return p;
      }
    }
    if (!p.after.at(n).empty()) continue;
    auto b = ir::broadcast_shapes(first ? std::vector<int64_t>{} : p.domain, n->output()->type.sizes);
    first = false;
    if (!b) {
      p.why_not = "shapes in the output domain do not broadcast";
      return p;
    }
    p.domain = *b;
  }
  // In value order, so that the reason given does not depend on where values sit in memory.
  std::vector<std::pair<const ir::Value*, const std::vector<ViewStep>*>> by_id;
  for (const auto& [v, steps] : p.input_steps) by_id.emplace_back(v, &steps);
  std::sort(by_id.begin(), by_id.end(), [](const auto& a, const auto& b) { return a.first->id < b.first->id; });
  for (const auto& [v, steps_ptr] : by_id) {
    const std::vector<ViewStep>& steps = *steps_ptr;
    if (steps.empty()) continue;
    const std::string why = check_input_path(v, steps);
    if (!why.empty()) {
      p.why_not = why;
      return p;
    }
  }
  for (const ir::Node* n : nodes) {
    if (escapes(n->output()) && n->output()->type.sizes != p.domain) {
      p.why_not = "its output " + name(n) + " " + ir::shape_str(n->output()->type.sizes) +
                  " is used elsewhere and would be computed over " + ir::shape_str(p.domain);
      return p;
    }
  }
  return p;
}

}  // namespace torchfuse
