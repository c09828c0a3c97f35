#include "codegen/reduction_analysis.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

#include "codegen/cuda_types.h"
#include "src/error.h"

namespace torchfuse {
namespace codegen {

namespace {

// Known in every thread without loading anything: numbers in the source and N.
bool is_literal(const ir::Value* v) { return v->constant.has_value() || v->reduced_count_minus.has_value(); }

}  // namespace

int ReductionAnalysis::level_of(const ir::Value* v) const {
  auto it = level.find(v);
  return it == level.end() ? 0 : it->second;
}

const OnlineSum* ReductionAnalysis::online_sum(const ir::Node* r) const {
  auto it = online.find(r);
  return it == online.end() ? nullptr : &it->second;
}

int ReductionAnalysis::accumulate_pass(const ir::Node* r) const {
  const OnlineSum* o = online_sum(r);
  return level_of((o ? o->max : r)->inputs[0]);
}

const ir::Node* ReductionAnalysis::duplicate_of(const ir::Node* r) const {
  auto it = duplicates.find(r);
  return it == duplicates.end() ? nullptr : it->second;
}

RowRewrites row_rewrites(bool online_sums) { return RowRewrites{online_sums, true}; }

bool ReductionAnalysis::absorbed_max(const ir::Node* r) const {
  return std::any_of(online.begin(), online.end(), [&](const auto& kv) { return kv.second.max == r; });
}

namespace {

bool transcendental(ir::OpKind k) {
  switch (k) {
    case ir::OpKind::Exp: case ir::OpKind::Log: case ir::OpKind::Tanh: case ir::OpKind::Sigmoid: case ir::OpKind::Erf:
    case ir::OpKind::Gelu: case ir::OpKind::GeluTanh: case ir::OpKind::Silu: case ir::OpKind::Pow:
    case ir::OpKind::Sin: case ir::OpKind::Cos: case ir::OpKind::Log1p: case ir::OpKind::Expm1: case ir::OpKind::Exp2:
    case ir::OpKind::Log2: case ir::OpKind::Log10: case ir::OpKind::Atan2: return true;
    default: return false;
  }
}

// Does computing element value `v` inside the group take a transcendental op?
bool costly(const FusionGroup& g, const ReductionAnalysis& a, const ir::Value* v) {
  const ir::Node* n = v->producer;
  if (!n || a.is_row(v) || std::find(g.nodes.begin(), g.nodes.end(), n) == g.nodes.end()) return false;
  if (transcendental(n->kind)) return true;
  return std::any_of(n->inputs.begin(), n->inputs.end(), [&](const ir::Value* in) { return costly(g, a, in); });
}

bool in_group(const FusionGroup& g, const ir::Node* n) {
  return n && std::find(g.nodes.begin(), g.nodes.end(), n) != g.nodes.end();
}

// Computed and kept in float registers (f32, f16 and bf16 values alike).
bool float_registers(const ir::Node& n) {
  const auto compute = n.compute_dtype == c10::ScalarType::Undefined ? n.output()->type.dtype : n.compute_dtype;
  return register_dtype(compute) == c10::ScalarType::Float && register_dtype(n.output()->type.dtype) == c10::ScalarType::Float;
}

bool is_constant(const ir::Value* v, double c) { return v->constant.has_value() && v->constant->toDouble() == c; }

// The max reduction that shift `m` is: its result, or where(|max| == inf, 0, max) as
// convert_logsumexp builds it (`masked`); nullptr for anything else.
const ir::Node* shift_max(const FusionGroup& g, const ir::Value* m, bool* masked) {
  *masked = false;
  const ir::Node* n = m->producer;
  if (!in_group(g, n)) return nullptr;
  if (n->kind == ir::OpKind::ReduceMax) return n;
  if (n->kind != ir::OpKind::Where || !is_constant(n->inputs[1], 0.0)) return nullptr;
  const ir::Node* r = n->inputs[2]->producer;
  const ir::Node* eq = n->inputs[0]->producer;
  if (!in_group(g, r) || r->kind != ir::OpKind::ReduceMax || !in_group(g, eq) || eq->kind != ir::OpKind::Eq) return nullptr;
  const ir::Node* abs = eq->inputs[0]->producer;
  if (!in_group(g, abs) || abs->kind != ir::OpKind::Abs || abs->inputs[0] != r->output() ||
      !is_constant(eq->inputs[1], std::numeric_limits<double>::infinity())) {
    return nullptr;
  }
  *masked = true;
  return r;
}

// Is sum reduction `s` of the form sum(exp(f - shift(max(f)))), all in float registers?
std::optional<OnlineSum> online_pair(const FusionGroup& g, const ir::Node& s) {
  if (s.kind != ir::OpKind::ReduceSum || register_dtype(s.output()->type.dtype) != c10::ScalarType::Float) return std::nullopt;
  const ir::Node* e = s.inputs[0]->producer;
  if (!in_group(g, e) || e->kind != ir::OpKind::Exp || !float_registers(*e)) return std::nullopt;
  const ir::Node* d = e->inputs[0]->producer;
  if (!in_group(g, d) || d->kind != ir::OpKind::Sub || !float_registers(*d)) return std::nullopt;
  OnlineSum pair;
  pair.max = shift_max(g, d->inputs[1], &pair.masked);
  if (!pair.max || pair.max->inputs[0] != d->inputs[0] || pair.max->dims != s.dims ||
      register_dtype(pair.max->output()->type.dtype) != c10::ScalarType::Float) {
    return std::nullopt;
  }
  return pair;
}

// Does a value of `shape` vary along a reduced dim of `rd`, right-aligned as broadcasting aligns
// it? Such a value is one per element, whatever its inputs hold: where(mask [R, 1], row [R, 1],
// w [C]) broadcasts a [C] input over the rows into [R, C].
bool varies_along_reduced(const ReductionDomain& rd, const std::vector<int64_t>& shape) {
  const int64_t rank = static_cast<int64_t>(rd.domain.size());
  const int64_t n = static_cast<int64_t>(shape.size());
  for (int64_t i = std::max<int64_t>(0, n - rank); i < n; ++i) {
    const int64_t d = rank - n + i;
    if (shape[i] != 1 && std::find(rd.dims.begin(), rd.dims.end(), d) != rd.dims.end()) return true;
  }
  return false;
}

// What the row schedule's cache policies need (ReductionAnalysis::cache_needs).
RowCacheNeeds cache_needs_of(const FusionGroup& g, const ReductionAnalysis& a) {
  RowCacheNeeds needs;
  auto bytes = [](const ir::Value* v) { return static_cast<int>(std::max<size_t>(4, c10::elementSize(register_dtype(v->type.dtype)))); };
  for (const ir::Value* v : a.cached) {
    needs.values_bytes += bytes(v);
    needs.costly_recompute = needs.costly_recompute || costly(g, a, v);
  }
  for (const ir::Value* v : a.cached_first) needs.first_pass_bytes += bytes(v);
  for (size_t k = 0; k < g.inputs.size(); ++k)
    if (a.reread_inputs.count(g.inputs[k])) needs.reread_inputs.push_back(k);
  return needs;
}

}  // namespace

ReductionAnalysis analyze_reduction_group(const FusionGroup& g, RowRewrites rewrites) {
  ReductionAnalysis a;
  const ir::Node* first = nullptr;
  for (const ir::Node* n : g.nodes)
    if (ir::along_dims(n->kind) && !first) first = n;
  TORCHFUSE_INTERNAL_ASSERT(first != nullptr, "group ", g.id, " has no reduction or scan");
  a.rd = ReductionDomain::of(*first);

  // Per-row values: reduction results and what is computed from per-row values alone. A group
  // input is per row when it has no extent over the reduced dims ([R, 1], [1, 1] or [] for rows
  // of an [R, C] domain: ReductionDomain::holds_rows), or the squeezed shape and a node computed
  // from a reduction result reads it (a [C] weight and a [R] row value look alike when R == C:
  // how they are used decides). The shape decides, as it decides the output's shape: a per-row
  // value computed per element would be written over the whole domain.
  std::set<const ir::Value*> derived;  // computed from a reduction result
  std::set<const ir::Value*> scanned;  // computed from a scan's output
  for (const ir::Value* v : g.inputs) {
    a.level[v] = 0;
    // (A 0-dim tensor is one value for every row, also where a row is one element.)
    if (v->type.is_scalar() || (v->type.is_tensor() && (v->type.rank() == 0 || a.rd.holds_rows(v->type.sizes)))) {
      a.per_row.insert(v);
    }
  }
  const auto squeezed = a.rd.squeezed_shape();
  for (const ir::Node* n : g.nodes) {
    int lvl = 0;
    bool from_scan = false;
    for (const ir::Value* in : n->inputs) {
      if (!is_literal(in)) lvl = std::max(lvl, a.level_of(in));
      from_scan = from_scan || scanned.count(in) > 0;
    }
    if (from_scan || ir::is_scan(n->kind)) scanned.insert(n->output());
    if (ir::is_scan(n->kind)) {
      a.scan_of_scan = a.scan_of_scan || from_scan;
      // An element value, known a pass after its input's (the team scans the chunk totals).
      TORCHFUSE_INTERNAL_ASSERT(!a.is_row(n->inputs[0]) && !is_literal(n->inputs[0]), "scan %", n->output()->id,
                                " of a value that is not per element");
      a.level[n->output()] = lvl + 1;
      a.scans.push_back(n);
      continue;
    }
    if (ir::is_reduction(n->kind)) {
      a.level[n->output()] = lvl + 1;
      for (const ir::Node* r : a.reductions) {
        if (!rewrites.share_duplicates || a.duplicate_of(r) || r->kind != n->kind || r->inputs[0] != n->inputs[0] || r->dims != n->dims) continue;
        a.duplicates[n] = r;
        a.level[n->output()] = a.level_of(r->output());
        break;
      }
      a.reductions.push_back(n);
      auto pair = rewrites.online_sums && !a.duplicate_of(n) ? online_pair(g, *n) : std::nullopt;
      if (pair && a.duplicate_of(pair->max)) pair->max = a.duplicate_of(pair->max);
      if (pair && !a.is_row(pair->max->inputs[0]) && !is_literal(pair->max->inputs[0]) && !a.absorbed_max(pair->max)) {
        a.online[n] = *pair;
        a.level[n->output()] = a.level_of(pair->max->output());
      }
      a.per_row.insert(n->output());
      derived.insert(n->output());
      continue;
    }
    a.level[n->output()] = lvl;
    bool from_reduction = false;
    bool all_row = true;
    std::vector<const ir::Value*> squeezed_inputs;
    for (const ir::Value* in : n->inputs) {
      if (is_literal(in)) continue;
      from_reduction = from_reduction || derived.count(in) > 0;
      if (a.is_row(in) || (in->type.is_tensor() && in->type.rank() == 0)) continue;
      if (!in_group(g, in->producer) && in->type.sizes == squeezed) {  // a group input (the graph's or another group's)
        squeezed_inputs.push_back(in);
        continue;
      }
      all_row = false;
    }
    // (A node of per-row inputs whose output still varies along the reduced dims broadcasts a
    // squeezed-shape input over them: that input is per column, the output per element. Fuzz
    // seed 52, program 1050: on a square domain the [C] input looked like a squeezed row value,
    // and the output was planned as [R].)
    const auto& out = n->output()->type;
    const bool row_shaped = !out.is_tensor() || out.sizes == squeezed || !varies_along_reduced(a.rd, out.sizes);
    if (all_row && row_shaped && (from_reduction || squeezed_inputs.empty())) {
      for (const ir::Value* in : squeezed_inputs) a.per_row.insert(in);
      a.per_row.insert(n->output());
      if (from_reduction) derived.insert(n->output());
      a.row_nodes.push_back(n);
    } else {
      a.element_nodes.push_back(n);
    }
  }
  for (const ir::Node* r : a.reductions) a.passes = std::max(a.passes, a.accumulate_pass(r) + 1);
  for (const ir::Node* s : a.scans) a.passes = std::max(a.passes, a.level_of(s->inputs[0]) + 1);
  for (const ir::Value* out : g.outputs)
    if (!a.is_row(out)) a.passes = std::max(a.passes, a.level_of(out) + 1);
  a.cached = a.cached_values(g, Reuse::Values);
  a.cached_first = a.cached_values(g, Reuse::FirstPass);
  std::map<const ir::Value*, int> passes_reading;
  for (int p = 0; p < a.passes; ++p)
    for (const ir::Value* v : a.pass_values(g, p, Reuse::None)) ++passes_reading[v];
  for (const ir::Value* v : g.inputs)
    if (passes_reading[v] > 1) a.reread_inputs.insert(v);
  a.cache_needs = cache_needs_of(g, a);
  a.cache_needs.scans = !a.scans.empty();
  return a;
}


std::vector<const ir::Value*> ReductionAnalysis::pass_targets(const FusionGroup& g, int pass) const {
  std::vector<const ir::Value*> t;
  for (const ir::Node* r : reductions) {
    // An online sum reads its max's input, which the max already targets.
    if (!online.count(r) && level_of(r->inputs[0]) == pass && !is_row(r->inputs[0])) t.push_back(r->inputs[0]);
  }
  for (const ir::Node* s : scans)  // its chunk totals
    if (level_of(s->inputs[0]) == pass) t.push_back(s->inputs[0]);
  for (const ir::Value* out : g.outputs)
    if (!is_row(out) && level_of(out) == pass) t.push_back(out);
  return t;
}

bool ReductionAnalysis::reusable(const ir::Value* v, Reuse reuse) const {
  switch (reuse) {
    case Reuse::None: return false;
    case Reuse::Values: return true;
    case Reuse::FirstPass: return level_of(v) == 0;
  }
  return false;
}

std::vector<const ir::Value*> ReductionAnalysis::pass_values(const FusionGroup& g, int pass, Reuse reuse) const {
  // Reusable values computed by earlier passes: read back instead of recomputed.
  std::set<const ir::Value*> earlier;
  if (reuse != Reuse::None) {
    for (int p = 0; p < pass; ++p) {
      for (const ir::Value* v : pass_values(g, p, reuse))
        if (reusable(v, reuse)) earlier.insert(v);
    }
  }
  std::vector<const ir::Value*> order;
  std::set<const ir::Value*> seen;
  std::function<void(const ir::Value*)> visit = [&](const ir::Value* v) {
    if (is_literal(v) || is_row(v) || seen.count(v)) return;
    seen.insert(v);
    if (earlier.count(v)) {
      order.push_back(v);  // read from the cache
      return;
    }
    if (v->producer && level.count(v) && std::find(g.nodes.begin(), g.nodes.end(), v->producer) != g.nodes.end()) {
      for (const ir::Value* in : v->producer->inputs) visit(in);
    }
    order.push_back(v);
  };
  for (const ir::Value* t : pass_targets(g, pass)) visit(t);
  return order;
}

std::map<const ir::Value*, int> ReductionAnalysis::first_passes(const FusionGroup& g, Reuse reuse) const {
  std::map<const ir::Value*, int> first;
  for (int p = 0; p < passes; ++p)
    for (const ir::Value* v : pass_values(g, p, reuse)) first.emplace(v, p);
  return first;
}

std::set<const ir::Value*> ReductionAnalysis::cached_values(const FusionGroup& g, Reuse reuse) const {
  std::set<const ir::Value*> cached;
  std::set<const ir::Value*> earlier;
  for (int p = 0; p < passes; ++p) {
    const auto values = pass_values(g, p, reuse);
    for (const ir::Value* v : values)
      if (earlier.count(v) && reusable(v, reuse)) cached.insert(v);
    earlier.insert(values.begin(), values.end());
  }
  return cached;
}

}  // namespace codegen
}  // namespace torchfuse
