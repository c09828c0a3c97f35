#include "passes/cut_column_epilogues.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "passes/legality.h"
#include "passes/reduction_schedule.h"

namespace torchfuse {
namespace {

std::string mib(int64_t bytes) {
  if (bytes < (int64_t{1} << 20)) return std::to_string((bytes + 512) >> 10) + " KiB";
  return std::to_string((bytes + (1 << 19)) >> 20) + " MiB";
}

// A group's nodes parted at its reductions: `stats` computes the reductions and the per-column
// values made from them, `epilogue` the element values after them.
struct Parts {
  std::vector<const ir::Node*> stats;
  std::vector<const ir::Node*> epilogue;
};

// The nodes the group's reductions need (in-group ancestors, the reductions included), the
// per-column values computed from those (of the reduction's keep or squeezed shape), and the
// rest: the element values after the reductions, and values of other shapes they read (a
// comparison of another group's per-column value, broadcast over these rows).
Parts part_at_reductions(const FusionGroup& g, const ReductionDomain& rd) {
  std::set<const ir::Node*> feeds;  // reductions and what they read in the group
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    const ir::Node* n = *it;
    bool needed = ir::is_reduction(n->kind);
    for (const ir::Value* v : n->outputs)
      for (const ir::Node* user : v->uses) needed = needed || feeds.count(user);
    if (needed) feeds.insert(n);
  }
  Parts p;
  std::set<const ir::Node*> epilogue;
  for (const ir::Node* n : g.nodes) {
    bool after = !rd.is_row_shape(n->output()->type.sizes);
    for (const ir::Value* in : n->inputs) after = after || (in->producer && epilogue.count(in->producer));
    if (after && !feeds.count(n)) {
      epilogue.insert(n);
      p.epilogue.push_back(n);
    } else {
      p.stats.push_back(n);
    }
  }
  return p;
}

// The group's inputs that have an element per domain element (read once per pass): their bytes,
// and whether each is a 16-bit float.
struct ElementInputs {
  int64_t bytes = 0;
  bool all_16bit = true;
};

ElementInputs element_inputs(const FusionGroup& g, const std::vector<int64_t>& domain) {
  std::set<const ir::Node*> inside(g.nodes.begin(), g.nodes.end());
  std::set<const ir::Value*> seen;
  int64_t numel = 1;
  for (int64_t s : domain) numel *= s;
  ElementInputs e;
  for (const ir::Node* n : g.nodes) {
    for (const ir::Value* v : n->inputs) {
      if ((v->producer && inside.count(v->producer)) || !v->type.is_tensor() || !seen.insert(v).second) continue;
      if (v->type.numel() != numel) continue;
      e.bytes += numel * static_cast<int64_t>(c10::elementSize(v->type.dtype));
      e.all_16bit = e.all_16bit && ir::is_16bit_float(v->type.dtype);
    }
  }
  return e;
}

// 16-bit element inputs are cut from a quarter of the threshold: column passes read them a
// 2-byte column a thread, a warp 64 bytes of a row, and ran behind the cut's pointwise kernel
// even where the input fits L2 (H200, x - x.mean(0) bf16: 34.9 us cut against 38.7 at 32 MiB,
// 58.7 against 72.8 at 64), where f32 ran ahead of it up to 96 MiB (56.6 against 60.5 at 64).
int64_t threshold_for(const ElementInputs& e, int64_t threshold) { return e.all_16bit ? threshold / 4 : threshold; }

// Why `p` cannot be cut into two groups, or nullopt when it can.
std::optional<std::string> why_not_cut(const ir::Graph& graph, const Parts& p, const ReductionDomain& rd) {
  const std::vector<int64_t>& domain = rd.domain;
  if (p.epilogue.empty()) return std::string("nothing after its reductions is an element value");
  const std::set<const ir::Node*> epilogue(p.epilogue.begin(), p.epilogue.end());
  // A pointwise group writes its outputs over its whole domain.
  for (const ir::Node* n : p.epilogue) {
    if (n->output()->type.sizes == domain) continue;
    bool escapes = std::count(graph.outputs().begin(), graph.outputs().end(), n->output()) > 0;
    for (const ir::Node* user : n->output()->uses) escapes = escapes || !epilogue.count(user);
    if (escapes)
      return node_name(n) + " of shape " + ir::shape_str(n->output()->type.sizes) + " is used after the group and would be computed over " +
             ir::shape_str(domain);
  }
  // (No stats node reads the epilogue: part_at_reductions puts every reader of it there.)
  std::set<int> stat_origins;
  for (const ir::Node* n : p.stats) stat_origins.insert(n->origin);
  for (const ir::Node* n : p.epilogue) {
    if (n->origin >= 0 && stat_origins.count(n->origin))
      return node_name(n) + " comes from the same op (" + n->origin_op + ") as a reduction's operands";
    for (const ir::Value* in : n->inputs) {
      if (in->reduced_count_minus) return node_name(n) + " reads the reduced element count, which only the reduction knows";
      const ir::Node* made = in->producer;
      if (!made || epilogue.count(made) || !std::count(p.stats.begin(), p.stats.end(), made)) continue;
      if (in->type.sizes == domain)
        return node_name(n) + " reads " + node_name(made) + ", an element value its reductions read as well (cut, it would be written out whole)";
      // A column group writes element and per-column values only.
      if (!rd.is_row_shape(in->type.sizes))
        return node_name(n) + " reads " + node_name(made) + " of shape " + ir::shape_str(in->type.sizes) +
               ", which feeds the reductions and is neither an element nor a per-column value";
    }
  }
  return std::nullopt;
}

// The column group's reduction domain, or nullopt for other groups and column groups of one pass.
std::optional<ReductionDomain> multi_pass_column(const FusionGroup& g) {
  const ir::Node* reduction = nullptr;
  for (const ir::Node* n : g.nodes) {
    if (ir::is_scan(n->kind)) return std::nullopt;
    if (!reduction && ir::is_reduction(n->kind)) reduction = n;
  }
  if (!reduction) return std::nullopt;
  ReductionDomain rd = ReductionDomain::of(*reduction);
  if (rd.schedule() != Schedule::ColumnReduction || !reads_own_reduction(g.nodes)) return std::nullopt;
  return rd;
}

std::vector<int> ids_of(const std::vector<const ir::Node*>& nodes) {
  std::vector<int> ids;
  for (const ir::Node* n : nodes) ids.push_back(n->id);
  return ids;
}

}  // namespace

void cut_column_epilogues(PassContext& ctx) {
  if (ctx.cut_column_bytes <= 0) return;
  std::vector<FusionGroup> groups;
  for (FusionGroup& g : ctx.plan.groups) {
    const auto rd = multi_pass_column(g);
    const ElementInputs inputs = rd ? element_inputs(g, rd->domain) : ElementInputs{};
    const int64_t threshold = threshold_for(inputs, ctx.cut_column_bytes);
    if (!rd || inputs.bytes <= threshold) {
      groups.push_back(std::move(g));
      continue;
    }
    Parts p = part_at_reductions(g, *rd);
    const std::string group = "the column group of " + node_name(g.nodes.front()) + " (" + rd->str() + ", " + mib(inputs.bytes) +
                              " of element inputs, over " + mib(threshold) + ")";
    if (auto why = why_not_cut(ctx.graph, p, *rd)) {
      if (ctx.logs.fusion) log_info("fusion: " + group + " stays one kernel: " + *why);
      groups.push_back(std::move(g));
      continue;
    }
    ctx.refuse("cannot fuse " + node_name(p.epilogue.front()) + " into " + group +
                   ": the element values after its reductions run as a pointwise group of their own",
               ids_of(p.epilogue));
    FusionGroup epilogue;
    epilogue.nodes = std::move(p.epilogue);
    g.nodes = std::move(p.stats);
    groups.push_back(std::move(g));
    groups.push_back(std::move(epilogue));
  }
  // Groups in the order of their first nodes, numbered again (as clusters_to_plan leaves them).
  std::stable_sort(groups.begin(), groups.end(),
                   [](const FusionGroup& a, const FusionGroup& b) { return a.nodes.front()->id < b.nodes.front()->id; });
  for (size_t i = 0; i < groups.size(); ++i) groups[i].id = static_cast<int>(i);
  ctx.plan.groups = std::move(groups);
}

}  // namespace torchfuse
