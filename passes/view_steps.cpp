#include "passes/view_steps.h"

#include <algorithm>
#include <set>

#include <ATen/TensorUtils.h>

#include "src/error.h"

namespace torchfuse {

ViewStep view_step_of(const ir::Node& view) {
  TORCHFUSE_INTERNAL_ASSERT(ir::is_view(view.kind), "not a view: ", ir::op_name(view.kind));
  ViewStep s;
  s.kind = view.kind;
  s.dims = view.dims;
  s.in_sizes = view.inputs.at(0)->type.sizes;
  s.rank = static_cast<int64_t>(s.in_sizes.size());
  s.view_id = view.output()->id;
  for (size_t j = 0; j < view.dim_operands.size(); ++j) {
    const int k = view.dim_operands[j];
    if (k <= 0) continue;
    s.dim_values.resize(view.dims.size(), nullptr);
    s.dim_values[j] = view.inputs.at(static_cast<size_t>(k));
  }
  return s;
}

bool with_call_dims(std::vector<ViewStep>& steps, const std::vector<c10::IValue>& values) {
  for (ViewStep& s : steps) {
    for (size_t j = 0; j < s.dim_inputs.size() && j < s.dims.size(); ++j) {
      const int k = s.dim_inputs[j];
      if (k < 0) continue;
      if (static_cast<size_t>(k) >= values.size() || !values[static_cast<size_t>(k)].isInt()) return false;
      s.dims[j] = values[static_cast<size_t>(k)].toInt();
    }
  }
  return true;
}

bool same_size_classes(const std::vector<int64_t>& call, const std::vector<int64_t>& profiled) {
  if (call.size() != profiled.size()) return false;
  for (size_t d = 0; d < call.size(); ++d) {
    if ((call[d] == 1) != (profiled[d] == 1) || (call[d] == 0) != (profiled[d] == 0)) return false;
  }
  return true;
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

// Sizes and strides of the tensor a step reads (left-padded to the step's rank), and where its
// first element is, in elements from the tensor's data pointer.
struct Strided {
  std::vector<int64_t>& sizes;
  std::vector<int64_t>& strides;
  int64_t& offset;
  RangeSizes* seen = nullptr;  // where range and select steps record the size of their dim
  const CatPlaces* places = nullptr;  // the call's places of cat pieces (null: the profile's)

  void record(const ViewStep& step, int64_t d) const {
    if (seen) seen->emplace_back(step.view_id, sizes[d]);
  }
};

bool apply_permute(const ViewStep& step, Strided& t) {
  if (static_cast<int64_t>(step.dims.size()) != step.rank) return false;
  std::vector<int64_t> s, st;
  for (int64_t d : step.dims) {
    s.push_back(t.sizes.at(d));
    st.push_back(t.strides.at(d));
  }
  t.sizes = std::move(s);
  t.strides = std::move(st);
  return true;
}

bool apply_unsqueeze(const ViewStep& step, Strided& t) {
  for (int64_t d : step.dims) {
    if (d < 0 || d > static_cast<int64_t>(t.sizes.size())) return false;
    t.sizes.insert(t.sizes.begin() + d, 1);
    t.strides.insert(t.strides.begin() + d, 0);
  }
  return true;
}

bool apply_squeeze(const ViewStep& step, Strided& t) {
  for (size_t i = step.dims.size(); i-- > 0;) {
    const int64_t d = step.dims[i];
    if (d < 0 || d >= static_cast<int64_t>(t.sizes.size()) || t.sizes[d] != 1) return false;
    t.sizes.erase(t.sizes.begin() + d);
    t.strides.erase(t.strides.begin() + d);
  }
  return true;
}

bool apply_flatten(const ViewStep& step, Strided& t) {
  auto& sizes = t.sizes;
  auto& strides = t.strides;
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

// view(sizes): the input's elements in row-major order under new sizes, where its strides
// allow that without a copy (at::view's rule: each run of input dims that is contiguous in
// memory must be made of whole runs of output dims); a dim of size 1 takes any stride.
bool apply_reshape(const ViewStep& step, Strided& t) {
  const auto target = ir::view_output_sizes(ir::OpKind::Reshape, step.dims, t.sizes);
  if (!target) return false;
  const std::vector<int64_t>& from = t.sizes;
  const std::vector<int64_t>& from_strides = t.strides;
  std::vector<int64_t> strides(target->size(), 1);
  int64_t numel = 1;
  for (int64_t s : from) numel *= s;
  if (numel == 0 || from.empty()) {
    // No element is read: any row-major strides do.
    for (size_t j = target->size(); j-- > 0;) {
      strides[j] = j + 1 < target->size() ? strides[j + 1] * std::max<int64_t>((*target)[j + 1], 1) : 1;
    }
  } else {
    int64_t view_d = static_cast<int64_t>(target->size()) - 1;
    int64_t base = from_strides.back();  // the stride of the innermost dim of the current run
    int64_t run_numel = 1, view_numel = 1;
    for (int64_t d = static_cast<int64_t>(from.size()) - 1; d >= 0; --d) {
      run_numel *= from[d];
      const bool run_ends = d == 0 || (from[d - 1] != 1 && from_strides[d - 1] != run_numel * base);
      if (!run_ends) continue;
      while (view_d >= 0 && (view_numel < run_numel || (*target)[view_d] == 1)) {
        strides[view_d] = view_numel * base;
        view_numel *= (*target)[view_d];
        --view_d;
      }
      if (view_numel != run_numel) return false;
      if (d > 0) {
        base = from_strides[d - 1];
        run_numel = 1;
        view_numel = 1;
      }
    }
    if (view_d != -1) return false;
  }
  t.sizes = *target;
  t.strides = std::move(strides);
  return true;
}

// 0, 1 or more: what the fusion plan's broadcasting depends on.
int size_class(int64_t n) { return n == 0 ? 0 : n == 1 ? 1 : 2; }

// The dim `dims[0]` of a range or select step, when the tensor and the step's profiled input
// have the step's rank.
bool acted_dim(const ViewStep& step, const Strided& t, int64_t& d) {
  const int64_t rank = static_cast<int64_t>(t.sizes.size());
  if (step.dims.empty() || static_cast<int64_t>(step.in_sizes.size()) != rank) return false;
  d = step.dims[0];
  return d >= 0 && d < rank;
}

// Is the tensor broadcast in dim d (size 1 where the value it stands for is longer)?
bool broadcast_in(const ViewStep& step, const Strided& t, int64_t d) { return t.sizes[d] == 1 && step.in_sizes[d] != 1; }

// Slice, narrow, chunk, split: the range of the dim (a broadcast dim stays its one element).
bool apply_range(const ViewStep& step, Strided& t) {
  int64_t d = 0;
  if (!acted_dim(step, t, d)) return false;
  if (broadcast_in(step, t, d)) return true;
  t.record(step, d);
  const auto r = ir::view_range(step.kind, step.dims, t.sizes[d]);
  if (!r) return false;
  // (With run-time dims, `dims` are the call's: the caller compares the whole path's sizes with
  // the profile's instead, same_size_classes.)
  if (!step.runtime_dims()) {
    const auto profiled = ir::view_range(step.kind, step.dims, step.in_sizes[d]);
    if (!profiled || size_class(r->length) != size_class(profiled->length)) return false;
  }
  t.offset += r->start * t.strides[d];
  t.sizes[d] = r->length;
  t.strides[d] *= r->step;
  return true;
}

// Select: the dim goes away at its index (a broadcast dim goes away with its one element).
bool apply_select(const ViewStep& step, Strided& t) {
  int64_t d = 0;
  if (!acted_dim(step, t, d)) return false;
  if (!broadcast_in(step, t, d)) {
    t.record(step, d);
    const auto i = ir::select_index(step.dims, t.sizes[d]);
    if (!i) return false;
    t.offset += *i * t.strides[d];
  }
  t.sizes.erase(t.sizes.begin() + d);
  t.strides.erase(t.strides.begin() + d);
  return true;
}

// Expand: new leading dims, and size-1 dims grown to the target with stride 0.
bool apply_expand(const ViewStep& step, Strided& t) {
  const auto& target = step.dims;
  if (target.size() < t.sizes.size()) return false;
  const size_t lead = target.size() - t.sizes.size();
  t.sizes.insert(t.sizes.begin(), lead, 1);
  t.strides.insert(t.strides.begin(), lead, 0);
  for (size_t j = 0; j < target.size(); ++j) {
    if (target[j] == -1 || target[j] == t.sizes[j]) continue;
    if (t.sizes[j] != 1 || target[j] < 0) return false;
    t.sizes[j] = target[j];
    t.strides[j] = 0;
  }
  return true;
}

// CatPiece: the dim takes the cat's size, the offset moves back by the piece's place (a dim of
// size 1 that the piece has longer is broadcast over the whole cat: it stays so).
bool apply_cat_piece(const ViewStep& step, Strided& t) {
  int64_t d = 0;
  if (!acted_dim(step, t, d) || step.dims.size() != 4) return false;
  if (broadcast_in(step, t, d)) return true;
  CatPlace place{step.dims[2], step.dims[3]};
  if (t.places) {
    auto it = t.places->find(step.view_id);
    if (it == t.places->end()) return false;
    place = it->second;
  }
  if (place.offset < 0 || t.sizes[d] + place.offset > place.total) return false;
  t.offset -= place.offset * t.strides[d];
  t.sizes[d] = place.total;
  return true;
}

// Left-pads the tensor to the step's rank (false when it has more dims).
bool pad_to_step(const ViewStep& step, Strided& t) {
  if (static_cast<int64_t>(t.sizes.size()) > step.rank) return false;
  while (static_cast<int64_t>(t.sizes.size()) < step.rank) {
    t.sizes.insert(t.sizes.begin(), 1);
    t.strides.insert(t.strides.begin(), 0);
  }
  return true;
}

bool apply_one(const ViewStep& step, Strided& t) {
  if (!pad_to_step(step, t)) return false;
  switch (step.kind) {
    case ir::OpKind::Permute: return apply_permute(step, t);
    case ir::OpKind::Unsqueeze: return apply_unsqueeze(step, t);
    case ir::OpKind::Squeeze: return apply_squeeze(step, t);
    case ir::OpKind::Flatten: return apply_flatten(step, t);
    case ir::OpKind::Reshape: return apply_reshape(step, t);
    case ir::OpKind::Slice: case ir::OpKind::Narrow: case ir::OpKind::Chunk: case ir::OpKind::Split:
      return apply_range(step, t);
    case ir::OpKind::Select: return apply_select(step, t);
    case ir::OpKind::Expand: return apply_expand(step, t);
    case ir::OpKind::Contiguous: return true;
    case ir::OpKind::CatPiece: return apply_cat_piece(step, t);
    default: return false;
  }
}

std::string name(const ir::Node* n) { return "%" + std::to_string(n->output()->id) + " (" + ir::op_name(n->kind) + ")"; }

// The expand among the views of the group that lead to `n`'s output (n itself included), or null.
const ir::Node* expand_before(const ir::Node* n, const std::set<const ir::Node*>& inside) {
  for (; n && inside.count(n) && ir::is_view(n->kind); n = n->inputs[0]->producer)
    if (n->kind == ir::OpKind::Expand) return n;
  return nullptr;
}

// Every reader of `v` outside the group is a reshape (or flatten) that eager copies: v's strides
// (an expand's zeros) do not merge into its sizes. Written in full by the group, contiguous, v
// costs what eager's copy costs, and the reshape becomes a view (Hugging Face's repeat_kv after
// a key's rotation: one kernel where eager takes two).
bool copied_by_its_readers(const ir::Value* v, const std::set<const ir::Node*>& inside) {
  const auto& strides = v->eager_strides.empty() ? v->type.strides : v->eager_strides;
  bool any = false;
  for (const ir::Node* u : v->uses) {
    if (inside.count(u)) continue;
    if (u->kind != ir::OpKind::Reshape && u->kind != ir::OpKind::Flatten) return false;
    if (at::detail::computeStride(v->type.sizes, strides, u->output()->type.sizes).has_value()) return false;
    any = true;
  }
  return any;
}

// Plan-time check of an input's path on its profiled type: each merge must be possible, and a
// merged dim must not broadcast the input inside it (a size-1 dim of the input where the view's
// input has more: no stride walks that). The guards pin which dims are size 1, so this holds
// for every call; the strides are checked again per call (apply_view_steps).
std::string check_strides_path(const ir::Value* v, const std::vector<ViewStep>& steps, std::vector<int64_t> strides) {
  std::vector<int64_t> sizes = v->type.sizes;
  int64_t offset = 0;
  Strided t{sizes, strides, offset};
  for (const ViewStep& step : steps) {
    std::vector<int64_t> padded = sizes;
    while (static_cast<int64_t>(padded.size()) < step.rank) padded.insert(padded.begin(), 1);
    if (step.kind == ir::OpKind::Reshape && static_cast<int64_t>(padded.size()) == step.rank) {
      for (int64_t d = 0; d < step.rank; ++d) {
        if (padded[d] == 1 && step.in_sizes[d] != 1) {
          return "input %" + std::to_string(v->id) + " " + ir::shape_str(v->type.sizes) +
                 " is broadcast before the view to " + ir::shape_str(step.dims) + " (of " + ir::shape_str(step.in_sizes) +
                 "; no strides read that)";
        }
      }
    }
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
    if (!apply_one(step, t)) {
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

// Records that node n reads input v: through n's own view (if n is one) and the views after n.
void add_read(std::vector<InputRead>& reads, const ir::Node* n, const ir::Value* v, const std::vector<ViewStep>& after) {
  std::vector<ViewStep> steps;
  if (ir::is_view(n->kind)) steps.push_back(view_step_of(*n));
  steps.insert(steps.end(), after.begin(), after.end());
  // A view of v begins its path: its output is the read's register. Other ops read v itself.
  const ir::Value* bind = ir::is_view(n->kind) ? n->output() : v;
  for (InputRead& r : reads) {
    if (r.steps != steps) continue;
    if (std::find(r.binds.begin(), r.binds.end(), bind) == r.binds.end()) r.binds.push_back(bind);
    return;
  }
  reads.push_back({std::move(steps), {bind}});
}

// Why input v cannot be read through `reads` ("" when it can): ops reading v itself must all
// see it through one path (one register stands for v), and each path must fit v's strides.
std::string check_reads(const ir::Value* v, const std::vector<InputRead>& reads) {
  const InputRead* direct = nullptr;
  for (const InputRead& r : reads) {
    if (std::find(r.binds.begin(), r.binds.end(), v) == r.binds.end()) continue;
    if (direct) {
      return "input %" + std::to_string(v->id) + " would be read through two different view paths (" +
             (direct->steps.empty() ? "none" : describe_steps(direct->steps)) + " and " +
             (r.steps.empty() ? "none" : describe_steps(r.steps)) + ")";
    }
    direct = &r;
  }
  for (const InputRead& r : reads) {
    if (r.steps.empty()) continue;
    const std::string why = check_input_path(v, r.steps);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

bool apply_view_steps(const std::vector<ViewStep>& steps, std::vector<int64_t>& sizes, std::vector<int64_t>& strides,
                      int64_t& offset, RangeSizes* seen, const CatPlaces* places) {
  Strided t{sizes, strides, offset, seen, places};
  for (const ViewStep& s : steps)
    if (!apply_one(s, t)) return false;
  return true;
}

bool cat_piece_size(const std::vector<ViewStep>& steps, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                    RangeSizes& pieces) {
  int64_t offset = 0;
  Strided t{sizes, strides, offset};
  for (const ViewStep& s : steps) {
    if (s.kind != ir::OpKind::CatPiece) {
      if (!apply_one(s, t)) return false;
      continue;
    }
    int64_t d = 0;
    if (!pad_to_step(s, t) || !acted_dim(s, t, d)) return false;
    if (!broadcast_in(s, t, d)) pieces.emplace_back(s.view_id, t.sizes[d]);
    return true;
  }
  return true;
}

std::optional<int64_t> dim_through_steps(int64_t dim, int64_t rank, const std::vector<ViewStep>& steps,
                                         int64_t domain_rank, std::string* why) {
  auto fail = [&](const ViewStep& s, const char* what) -> std::optional<int64_t> {
    if (why) *why = std::string("the view ") + ir::op_name(s.kind) + ir::shape_str(s.dims) + " " + what;
    return std::nullopt;
  };
  int64_t pos = dim;
  for (const ViewStep& s : steps) {
    if (s.rank < rank) return fail(s, "reads a value of higher rank");
    pos += s.rank - rank;  // left-padded to the step's rank
    const auto out = ir::view_output_sizes(s.kind, s.dims, s.in_sizes);
    if (!out) return fail(s, "does not fit its input");
    switch (s.kind) {
      case ir::OpKind::Permute: {
        const auto it = std::find(s.dims.begin(), s.dims.end(), pos);
        pos = it - s.dims.begin();
        break;
      }
      case ir::OpKind::Unsqueeze:
        for (int64_t d : s.dims)
          if (d <= pos) ++pos;
        break;
      case ir::OpKind::Squeeze: {
        if (std::find(s.dims.begin(), s.dims.end(), pos) != s.dims.end()) return fail(s, "squeezes the cat's dim");
        pos -= std::count_if(s.dims.begin(), s.dims.end(), [&](int64_t d) { return d < pos; });
        break;
      }
      case ir::OpKind::Flatten:
        if (pos >= s.dims[0] && pos <= s.dims[1]) return fail(s, "merges the cat's dim with others");
        if (pos > s.dims[1]) pos -= s.dims[1] - s.dims[0];
        break;
      case ir::OpKind::Slice: case ir::OpKind::Narrow: case ir::OpKind::Chunk: case ir::OpKind::Split:
        if (s.dims[0] == pos) return fail(s, "takes a range of the cat's dim");
        break;
      case ir::OpKind::Select:
        if (s.dims[0] == pos) return fail(s, "selects in the cat's dim");
        if (s.dims[0] < pos) --pos;
        break;
      case ir::OpKind::Expand:
        pos += static_cast<int64_t>(s.dims.size()) - s.rank;
        break;
      case ir::OpKind::Contiguous:
        break;
      case ir::OpKind::CatPiece:
        return fail(s, "lays it into another cat (cats of cats are not fused yet)");
      default:
        return fail(s, "is read after the cat");
    }
    rank = static_cast<int64_t>(out->size());
  }
  if (rank > domain_rank) return std::nullopt;
  return pos + domain_rank - rank;
}

bool range_sizes_agree(RangeSizes seen) {
  std::sort(seen.begin(), seen.end());
  for (size_t i = 1; i < seen.size(); ++i)
    if (seen[i].first == seen[i - 1].first && seen[i].second != seen[i - 1].second) return false;
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
  // Views alone may join each other (fuse_pointwise meets the views at the end of a chain
  // before the op they move): such a cluster computes nothing, is dropped unless an op joins
  // it later, and is checked again then.
  const bool views_only = std::all_of(nodes.begin(), nodes.end(), [](const ir::Node* n) { return ir::is_view(n->kind); });
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const ir::Node* n = *it;
    const ir::Value* out = n->output();
    std::optional<std::vector<ViewStep>> seq;
    const ir::Node* seq_user = nullptr;  // whose path seq is (null: outside the group)
    if (escapes(out)) {
      seq.emplace();
      if (ir::is_view(n->kind) && !computed.count(out) && !views_only) {
        p.why_not = "the view " + name(n) + " of a group input is also used outside the group (fusing would copy it)";
        return p;
      }
      const ir::Node* e = expand_before(n, inside);
      if (e && !copied_by_its_readers(out, inside)) {
        p.why_not = "its output " + name(n) + " would be written in full, every element " + name(e) +
                    " repeats (eager's expand is a view: it stays one in ATen)";
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
    // Inputs, and the paths each is read through.
    for (const ir::Value* v : n->inputs) {
      // 0-dim inputs too: unsqueeze makes them [1] (the runtime skips host scalars' steps).
      if ((v->producer && inside.count(v->producer)) || !v->type.is_tensor()) continue;
      add_read(p.input_reads[v], n, v, p.after.at(n));
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
  // Cats: each in one dim of the domain, and no piece read through another cat's piece.
  auto nested = [](const std::vector<ViewStep>& steps) {
    return std::count_if(steps.begin(), steps.end(), [](const ViewStep& s) { return s.kind == ir::OpKind::CatPiece; }) > 1;
  };
  for (const ir::Node* n : nodes) {
    if (nested(p.after.at(n))) {
      p.why_not = name(n) + " is a piece of a cat that is a piece of another cat (cats of cats are not fused yet)";
      return p;
    }
    if (n->kind != ir::OpKind::Cat) continue;
    std::string why;
    const auto d = dim_through_steps(n->dims.at(0), n->output()->type.rank(), p.after.at(n),
                                     static_cast<int64_t>(p.domain.size()), &why);
    if (!d) {
      p.why_not = "after the cat " + name(n) + ", " + why + " (only views that keep the cat's dim whole are fused after a cat)";
      return p;
    }
    p.cat_dims[n] = *d;
  }
  // In value order, so that the reason given does not depend on where values sit in memory.
  std::vector<std::pair<const ir::Value*, const std::vector<InputRead>*>> by_id;
  for (const auto& [v, reads] : p.input_reads) by_id.emplace_back(v, &reads);
  std::sort(by_id.begin(), by_id.end(), [](const auto& a, const auto& b) { return a.first->id < b.first->id; });
  for (const auto& [v, reads] : by_id) {
    for (const InputRead& r : *reads) {
      if (!nested(r.steps)) continue;
      p.why_not = "input %" + std::to_string(v->id) + " is read through the pieces of two cats (" + describe_steps(r.steps) +
                  "; cats of cats are not fused yet)";
      return p;
    }
    p.why_not = check_reads(v, *reads);
    if (!p.why_not.empty()) return p;
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
