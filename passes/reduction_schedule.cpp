#include "passes/reduction_schedule.h"

#include <algorithm>
#include <set>

#include "src/error.h"

namespace torchfuse {

ReductionDomain ReductionDomain::of(const ir::Node& reduction) {
  TORCHFUSE_INTERNAL_ASSERT(ir::along_dims(reduction.kind), "not a reduction or scan: ", ir::op_name(reduction.kind));
  return {reduction.inputs[0]->type.sizes, reduction.dims};
}

std::vector<int64_t> ReductionDomain::keep_shape() const {
  std::vector<int64_t> s = domain;
  for (int64_t d : dims) s[d] = 1;
  return s;
}

std::vector<int64_t> ReductionDomain::squeezed_shape() const {
  std::vector<int64_t> s;
  for (int64_t d = 0; d < static_cast<int64_t>(domain.size()); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) s.push_back(domain[d]);
  return s;
}

bool ReductionDomain::is_row_shape(const std::vector<int64_t>& shape) const {
  return shape == keep_shape() || shape == squeezed_shape();
}

bool ReductionDomain::holds_rows(const std::vector<int64_t>& shape) const {
  const int64_t rank = static_cast<int64_t>(domain.size());
  const int64_t n = static_cast<int64_t>(shape.size());
  if (n > rank || keep_shape() == domain) return false;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = rank - n + i;
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (shape[i] != 1 && (reduced || shape[i] != domain[d])) return false;
  }
  return true;
}

std::optional<Schedule> ReductionDomain::schedule() const {
  const int64_t rank = static_cast<int64_t>(domain.size());
  if (dims.empty() || static_cast<int64_t>(dims.size()) == rank) return Schedule::FullReduction;
  int64_t kept = 1;
  for (int64_t s : squeezed_shape()) kept *= s;
  if (kept == 1) return Schedule::FullReduction;  // one output: reduce the whole domain
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] != dims[i - 1] + 1) return std::nullopt;
  if (dims.back() == rank - 1) return Schedule::RowReduction;
  return Schedule::ColumnReduction;
}

bool ReductionDomain::single_row() const {
  if (schedule() != Schedule::FullReduction || dims.empty()) return false;
  const int64_t rank = static_cast<int64_t>(domain.size());
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] != dims[i - 1] + 1) return false;
  return dims.back() == rank - 1;
}

std::string ReductionDomain::str() const {
  std::string s = "dims [";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  s += "] of [";
  for (size_t i = 0; i < domain.size(); ++i) s += (i ? ", " : "") + std::to_string(domain[i]);
  return s + "]";
}

namespace {

// Is `v` computed in the group from one of its reductions or scans (known after a pass)?
bool derives_from_reduction(const ir::Value* v, const std::set<const ir::Node*>& inside) {
  const ir::Node* p = v->producer;
  if (!p || !inside.count(p)) return false;
  if (ir::along_dims(p->kind)) return true;
  for (const ir::Value* in : p->inputs)
    if (derives_from_reduction(in, inside)) return true;
  return false;
}

}  // namespace

bool reads_own_reduction(const std::vector<const ir::Node*>& nodes) {
  const std::set<const ir::Node*> inside(nodes.begin(), nodes.end());
  std::vector<int64_t> domain;
  for (const ir::Node* n : nodes)
    if (ir::along_dims(n->kind)) domain = n->inputs[0]->type.sizes;
  for (const ir::Node* n : nodes) {
    if (ir::is_scan(n->kind)) return true;  // its output comes a pass after its input
    if (!ir::is_reduction(n->kind) && n->output()->type.sizes != domain) continue;
    for (const ir::Value* in : n->inputs)
      if (derives_from_reduction(in, inside)) return true;
  }
  return false;
}

Schedule choose_schedule(const FusionGroup& g) {
  // Only the row schedule scans (fuse_reductions fuses a scan only along rows).
  for (const ir::Node* n : g.nodes)
    if (ir::is_scan(n->kind)) return Schedule::RowReduction;
  for (const ir::Node* n : g.nodes) {
    if (!ir::is_reduction(n->kind)) continue;
    const ReductionDomain rd = ReductionDomain::of(*n);
    auto s = rd.schedule();
    TORCHFUSE_INTERNAL_ASSERT(s.has_value(), "group ", g.id, " reduces dims that are not contiguous");
    if (rd.single_row() && reads_own_reduction(g.nodes)) return Schedule::RowReduction;
    return *s;
  }
  return Schedule::Pointwise;
}

}  // namespace torchfuse
