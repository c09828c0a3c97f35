#include "passes/fuse_reductions.h"

#include <algorithm>
#include <map>
#include <set>

#include "passes/cluster_io.h"
#include "passes/legality.h"
#include "passes/reduction_schedule.h"

namespace torchfuse {
namespace {

// (A cat's pieces are views, which reduction groups do not take: the cat stays out with them.)
bool fusible(const ir::Node* n) {
  return (ir::is_pointwise(n->kind) && n->kind != ir::OpKind::Cat) || ir::along_dims(n->kind);
}

// Why the row schedule cannot scan `rd` (a scan's dims and input shape), or nullopt. It scans
// along rows of up to kMaxScanRow elements, each in one block (row_reduction.cpp); a scan along
// another dim, or over longer rows, stays in ATen.
std::optional<std::string> why_no_scan(const ReductionDomain& rd) {
  const bool row = rd.schedule() == Schedule::RowReduction || rd.single_row();
  if (!row) return std::string("the row schedule scans along the last dim only");
  if (rd.domain.back() > kMaxScanRow) {
    return "rows of " + std::to_string(rd.domain.back()) + " elements, over the " + std::to_string(kMaxScanRow) +
           " one block scans";
  }
  return std::nullopt;
}

// A group being grown around its first reduction.
struct Growing {
  ClusterSet& set;
  int cluster;
  ReductionDomain rd;
  Schedule schedule;
  std::map<int, std::vector<int>> units;  // origin -> its fusible node ids (decompositions join whole)

  bool in_group(const ir::Value* v) const { return v->producer && set.group_of[v->producer->id] == cluster; }

  // Why the group's schedule cannot take several passes over the elements (a reduction reading a
  // reduction, a full-size epilogue, a seed reading its own result), or nullopt. Row and column
  // schedules take several passes; columns too few to fill the device split their rows over
  // blocks that meet between passes (choose_column_pass_split; before that split, x - x.mean(0)
  // on [16384, 4096] ran at 1642 us against eager's 277 and such shapes kept one pass).
  std::optional<std::string> why_no_passes() const {
    if (schedule == Schedule::FullReduction) return std::string("full_reduction schedules take one pass over the elements");
    return std::nullopt;
  }

  // `n`'s output is a graph output or read by a node neither in the group nor joining it.
  bool used_outside(const ir::Node* n, const std::set<int>& joining) const {
    const ir::Value* v = n->output();
    for (const ir::Value* out : set.graph.outputs())
      if (out == v) return true;
    for (const ir::Node* u : v->uses)
      if (set.group_of[u->id] != cluster && !joining.count(u->id)) return true;
    return false;
  }

  // Is `v` computed from a reduction result of the group (a per-row value, or derived from one)?
  bool after_reduction(const ir::Value* v, const std::set<int>& joining) const {
    if (!v->producer) return false;
    const int id = v->producer->id;
    if (set.group_of[id] != cluster && !joining.count(id)) return false;
    if (ir::is_reduction(v->producer->kind)) return true;
    for (const ir::Value* in : v->producer->inputs)
      if (after_reduction(in, joining)) return true;
    return false;
  }

  // A reduced value without keepdim ([R] for rows of [R, C]) broadcast against a larger shape
  // aligns with the trailing dims, not with the rows it holds (x * x.var(-1) with R == C scales
  // the columns): the schedules read per-row values per row, so such a node stays out. Reductions
  // over leading dims align either way.
  std::optional<std::string> broadcasts_squeezed_rows(const ir::Node* n, const std::set<int>& joining) const {
    const auto squeezed = rd.squeezed_shape();
    if (squeezed == rd.keep_shape() || n->output()->type.sizes == squeezed) return std::nullopt;
    bool leading = true;
    for (size_t i = 0; i < rd.dims.size(); ++i) leading = leading && rd.dims[i] == static_cast<int64_t>(i);
    if (leading) return std::nullopt;
    for (const ir::Value* in : n->inputs) {
      if (in->type.is_tensor() && in->type.sizes == squeezed && after_reduction(in, joining)) {
        return "it broadcasts %" + std::to_string(in->id) + ", a reduced value without keepdim " + ir::shape_str(squeezed) +
               ", against " + ir::shape_str(n->output()->type.sizes) + ": it aligns with the trailing dims, not its rows";
      }
    }
    return std::nullopt;
  }

  // Why `n`, which reads a reduction and has the reduced shape without keepdim, cannot mix its
  // inputs, or nullopt.
  std::optional<std::string> mixes_reduced(const ir::Node* n, const std::set<int>& joining) const {
    const auto& shape = n->output()->type.sizes;
    for (const ir::Value* in : n->inputs) {
      if (in->type.is_tensor() && in->type.sizes != shape && in->type.rank() != 0) {
        return "it mixes a reduced value " + ir::shape_str(shape) + " with " + ir::shape_str(in->type.sizes);
      }
      // A value of the reduced shape computed per element in the group (not from a reduction)
      // is an element value to the schedules: mixed in, the result would be one too, written
      // over the whole domain (fuzz seed 5, program 3220: a variance over a size-1 leading dim;
      // seed 38, program 373: the element value joining after the node that mixes it).
      const bool computed_here = in->producer && (set.group_of[in->producer->id] == cluster || joining.count(in->producer->id));
      if (computed_here && in->type.is_tensor() && in->type.rank() != 0 && !after_reduction(in, joining)) {
        return "it mixes a reduced value " + ir::shape_str(shape) + " with %" + std::to_string(in->id) +
               ", computed per element in the group";
      }
    }
    return std::nullopt;
  }

  // `n` of the group reads a reduction and has the reduced shape without keepdim.
  bool reduced_without_keepdim(const ir::Node* n, const std::set<int>& joining) const {
    const auto& shape = n->output()->type.sizes;
    if (shape != rd.squeezed_shape() || shape == rd.keep_shape() || ir::is_reduction(n->kind) || ir::is_scan(n->kind)) return false;
    for (const ir::Value* in : n->inputs)
      if (after_reduction(in, joining)) return true;
    return false;
  }

  std::optional<std::string> why_not_node(const ir::Node* n, const std::set<int>& joining) const {
    const c10::Device device = set.graph.nodes()[set.members[cluster].front()]->output()->type.device;
    if (n->output()->type.device != device) return std::string("it is on another device");
    if (ir::is_scan(n->kind)) {
      const ReductionDomain other = ReductionDomain::of(*n);
      if (other.domain != rd.domain || other.dims != rd.dims) return "it scans " + other.str() + ", the group reduces " + rd.str();
      if (schedule != Schedule::RowReduction) {
        return std::string("only the row schedule scans; the group's is ") + schedule_name(schedule);
      }
      // (Rows of one element reduced and scanned along the same dim: the scan's input has the
      // reduced shape, which the schedules read per row, where the scan reads elements; fuzz
      // seed 37, program 2005.)
      const auto& in = n->inputs[0]->type.sizes;
      if ((in == rd.keep_shape() || in == rd.squeezed_shape()) && after_reduction(n->inputs[0], joining)) {
        return "it scans %" + std::to_string(n->inputs[0]->id) + ", a reduced value: the row schedule scans element values";
      }
      return why_no_scan(rd);
    }
    if (ir::is_reduction(n->kind)) {
      const ReductionDomain other = ReductionDomain::of(*n);
      if (other.domain != rd.domain || other.dims != rd.dims) {
        return "it reduces " + other.str() + ", the group reduces " + rd.str();
      }
      if (after_reduction(n->inputs[0], joining)) {
        if (auto why = why_no_passes()) return "a reduction of a reduced value needs several passes (" + *why + ")";
      }
      return std::nullopt;
    }
    // The reduction schedules read inputs through no view steps, and an expand_as inside their
    // groups built kernels NVRTC rejected (fuzz seed 5, programs 1049, 3309, 4783, 9722).
    if (n->kind == ir::OpKind::ExpandAs) return std::string("expand_as inside reduction groups is not fused yet");
    const auto& shape = n->output()->type.sizes;
    bool reads_reduction = false;
    for (const ir::Value* in : n->inputs) reads_reduction = reads_reduction || after_reduction(in, joining);
    if (auto why = broadcasts_squeezed_rows(n, joining)) return why;
    if (reads_reduction && shape == rd.squeezed_shape() && shape != rd.keep_shape()) return mixes_reduced(n, joining);
    auto b = ir::broadcast_shapes(shape, rd.domain);
    if (!b || *b != rd.domain) {
      return "its shape " + ir::shape_str(shape) + " does not broadcast to the domain " + ir::shape_str(rd.domain);
    }
    // The group writes full-size and per-row outputs: a value computed before the reduction over
    // only some dims (a [C] column value in a [R, C] row group) cannot be one.
    if (!reads_reduction && shape != rd.domain && used_outside(n, joining)) {
      return "its output " + ir::shape_str(shape) + " is used outside the group, which writes only " +
             ir::shape_str(rd.domain) + " and per-row outputs";
    }
    const bool full = shape == rd.domain;
    // (Column groups write them in a later pass: generate_column_normalization.)
    const auto no_passes = full ? why_no_passes() : std::nullopt;
    if (no_passes) {
      for (const ir::Value* in : n->inputs) {
        if (after_reduction(in, joining)) return "a full-size epilogue needs a second pass (" + *no_passes + ")";
      }
    }
    return std::nullopt;
  }

  // Some element value or reduction of the group (with the nodes `joining` it) reads a reduction
  // result (needs a 2nd pass).
  bool needs_passes(const std::vector<int>& joining = {}) const {
    std::vector<const ir::Node*> nodes;
    for (int id : set.members[cluster]) nodes.push_back(set.graph.nodes()[id]);
    for (int id : joining) nodes.push_back(set.graph.nodes()[id]);
    return reads_own_reduction(nodes);
  }

  // Why the nodes of `origin` cannot join the group, or nullopt (then they have joined).
  std::optional<std::string> try_join(int origin) {
    const auto& ids = units.at(origin);
    std::set<int> joining(ids.begin(), ids.end());
    for (int id : ids) {
      if (auto why = why_not_node(set.graph.nodes()[id], joining)) return why;
    }
    // A reduction joining after its users: a user already in the group that broadcast this
    // unit's squeezed result as a plain input would now read it per row.
    for (int id : set.members[cluster]) {
      const ir::Node* member = set.graph.nodes()[id];
      if (auto why = broadcasts_squeezed_rows(member, joining)) return why;
      // An element value joining after the member that mixes it with a reduced value.
      if (!reduced_without_keepdim(member, joining)) continue;
      if (auto why = mixes_reduced(member, joining)) return "%" + std::to_string(member->output()->id) + " would read it: " + *why;
    }
    // A reduction joining after the full-size members that read it (they joined first, reading it
    // as an input) would need a second pass where the schedule takes one (fuzz seed 45, program
    // 382: x.mean(0, keepdim=True) beside argmin(x, 0) over [3, 1, 1]).
    if (auto no_passes = why_no_passes()) {
      if (needs_passes(ids)) return "the group would read its own reduction in a second pass (" + *no_passes + ")";
    }
    const int trial = set.make_cluster(ids);
    for (int id : ids) {
      const ir::Node* n = set.graph.nodes()[id];
      const bool row_or_full = n->output()->type.sizes == rd.domain || rd.is_row_shape(n->output()->type.sizes) ||
                               ir::is_reduction(n->kind);
      if (!row_or_full && escapes(set, trial, cluster)) {
        set.dissolve(trial);
        return "its output " + ir::shape_str(n->output()->type.sizes) + " is used elsewhere and would be computed over " +
               ir::shape_str(rd.domain);
      }
    }
    if (connected_outside(set, trial, cluster)) {
      set.dissolve(trial);
      return std::string("a path through an unfused node connects them (fusing would create a cycle)");
    }
    if (auto why = side_effect_between(set, trial, cluster)) {
      set.dissolve(trial);
      return why;
    }
    set.merge(cluster, trial);
    return std::nullopt;
  }
};

}  // namespace

void fuse_reductions(PassContext& ctx) {
  ClusterSet set = clusters_from_plan(ctx);
  std::map<int, std::vector<int>> units;
  for (const ir::Node* n : ctx.graph.nodes())
    if (fusible(n)) units[n->origin].push_back(n->id);

  std::set<std::pair<int, int>> refused;  // (seed, origin): log each refusal once
  for (const ir::Node* seed : ctx.graph.nodes()) {
    if (!ir::along_dims(seed->kind) || set.group_of[seed->id] != -1) continue;
    const ReductionDomain rd = ReductionDomain::of(*seed);
    const auto schedule = rd.schedule();
    const bool scan = ir::is_scan(seed->kind);
    if (scan) {
      if (auto why = why_no_scan(rd)) {
        ctx.refuse("cannot fuse " + node_name(seed) + ": it scans " + rd.str() + ": " + *why, units.at(seed->origin));
        continue;
      }
    }
    if (!schedule) {
      ctx.refuse("cannot fuse " + node_name(seed) + ": it reduces " + rd.str() +
                     ", which are not one contiguous block of dims",
                 units.at(seed->origin));
      continue;
    }
    // A single row grows as a row (choose_schedule gives it the full-reduction schedule back
    // where nothing reads the reduction again).
    const bool one_row = rd.single_row() && seed->inputs[0]->type.numel() <= kMaxSingleRow;
    Growing g{set, set.make_cluster(units.at(seed->origin)), rd, one_row || scan ? Schedule::RowReduction : *schedule, units};
    // Row and column schedules take several passes; one block or cluster reads a single row.
    const auto no_passes = g.why_no_passes();
    if (no_passes && g.needs_passes()) {
      const std::string why = rd.single_row() ? "one row of more than " + std::to_string(kMaxSingleRow) +
                                                    " elements, which one block or cluster would read"
                                              : *no_passes;
      ctx.refuse("cannot fuse " + node_name(seed) + ": it reduces " + rd.str() + " and reads its own reduction (" + why + ")",
                 units.at(seed->origin));
      set.dissolve(g.cluster);
      continue;
    }
    // Grow to a fixed point: producers (prologue) and users (epilogue) of the group's nodes.
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<int> candidates;
      for (int id : set.members[g.cluster]) {
        const ir::Node* n = ctx.graph.nodes()[id];
        for (const ir::Value* in : n->inputs)
          if (in->producer && fusible(in->producer) && set.group_of[in->producer->id] == -1)
            candidates.push_back(in->producer->origin);
        for (const ir::Value* out : n->outputs)
          for (const ir::Node* user : out->uses)
            if (fusible(user) && set.group_of[user->id] == -1) candidates.push_back(user->origin);
      }
      std::sort(candidates.begin(), candidates.end());
      candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
      for (int origin : candidates) {
        if (set.group_of[units.at(origin).front()] != -1) continue;
        if (auto why = g.try_join(origin)) {
          if (refused.insert({seed->id, origin}).second) {
            const ir::Node* first = ctx.graph.nodes()[units.at(origin).back()];
            ctx.refuse("cannot fuse " + node_name(first) + " into the reduction group of " + node_name(seed) + ": " + *why,
                       units.at(origin));
          }
          continue;
        }
        changed = true;
      }
    }
  }
  clusters_to_plan(set, ctx);
}

}  // namespace torchfuse
