#include "passes/finalize_groups.h"

#include <algorithm>
#include <set>

#include "passes/group_pattern.h"
#include "passes/reduction_schedule.h"
#include "src/error.h"

namespace torchfuse {
namespace {

bool is_graph_output(const ir::Graph& g, const ir::Value* v) {
  return std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
}

// Each input once per path it is read through (ViewPaths::input_reads), with that path's views
// and the values its operand stands for; numbers and inputs read without views as they are.
void read_inputs_through_paths(FusionGroup& g, const ViewPaths& p) {
  std::vector<const ir::Value*> inputs;
  std::vector<std::vector<ViewStep>> views;
  std::vector<std::vector<const ir::Value*>> binds;
  for (const ir::Value* v : g.inputs) {
    auto it = p.input_reads.find(v);
    if (it == p.input_reads.end()) {
      inputs.push_back(v);
      views.emplace_back();
      binds.emplace_back();
      continue;
    }
    for (const InputRead& r : it->second) {
      inputs.push_back(v);
      views.push_back(r.steps);
      binds.push_back(r.binds);
    }
  }
  // Where each call's value of a run-time dim comes from: the int's place among the inputs.
  for (auto& path : views) {
    for (ViewStep& step : path) {
      if (!step.runtime_dims()) continue;
      step.dim_inputs.assign(step.dims.size(), -1);
      for (size_t j = 0; j < step.dim_values.size(); ++j) {
        if (!step.dim_values[j]) continue;
        auto at = std::find(inputs.begin(), inputs.end(), step.dim_values[j]);
        TORCHFUSE_INTERNAL_ASSERT(at != inputs.end(), "group ", g.id, ": the run-time dim %", step.dim_values[j]->id,
                                  " of a view is not among its inputs");
        step.dim_inputs[j] = static_cast<int>(at - inputs.begin());
      }
    }
  }
  g.inputs = std::move(inputs);
  g.input_views = std::move(views);
  g.input_binds = std::move(binds);
}

void finalize_one(const ir::Graph& graph, FusionGroup& g) {
  std::set<const ir::Node*> inside(g.nodes.begin(), g.nodes.end());
  std::set<const ir::Value*> seen_inputs;
  g.inputs.clear();
  g.outputs.clear();
  for (const ir::Node* n : g.nodes) {
    for (const ir::Value* v : n->inputs) {
      if (v->producer && inside.count(v->producer)) continue;
      if (v->constant || v->reduced_count_minus) continue;  // literals, and N the kernel knows
      TORCHFUSE_INTERNAL_ASSERT(v->type.is_tensor() || v->type.is_scalar(), "group input %", v->id,
                                " is neither a tensor nor a number");
      if (seen_inputs.insert(v).second) g.inputs.push_back(v);
    }
  }
  for (const ir::Node* n : g.nodes) {
    for (const ir::Value* v : n->outputs) {
      bool used_outside = is_graph_output(graph, v);
      for (const ir::Node* user : v->uses) used_outside = used_outside || !inside.count(user);
      if (used_outside) g.outputs.push_back(v);
    }
  }
  // A reduction group iterates over what its reductions read; a pointwise group over the
  // broadcast of its ops' shapes.
  std::vector<int64_t> domain;
  bool reduction_domain = false;
  for (const ir::Node* n : g.nodes) {
    if (!ir::along_dims(n->kind)) continue;
    domain = n->inputs[0]->type.sizes;
    reduction_domain = true;
    break;
  }
  g.input_views.assign(g.inputs.size(), {});
  g.input_binds.assign(g.inputs.size(), {});
  if (has_view(g.nodes)) {
    // The output domain; each input is read through its views into it.
    TORCHFUSE_INTERNAL_ASSERT(!reduction_domain, "group ", g.id, " holds views and a reduction");
    const ViewPaths p = view_paths(g.nodes, [&](const ir::Value* v) {
      if (is_graph_output(graph, v)) return true;
      for (const ir::Node* user : v->uses)
        if (!inside.count(user)) return true;
      return false;
    });
    TORCHFUSE_INTERNAL_ASSERT(p.why_not.empty(), "group ", g.id, " holds views it cannot hold: ", p.why_not);
    domain = p.domain;
    read_inputs_through_paths(g, p);
    g.cats.clear();
    for (const ir::Node* n : g.nodes) {
      if (n->kind != ir::OpKind::Cat) continue;
      GroupCat c;
      c.node = n;
      c.domain_dim = p.cat_dims.at(n);
      for (const ir::Value* piece : n->inputs) {
        c.piece_ids.push_back(piece->id);
        c.profiled_sizes.push_back(piece->producer->inputs.at(0)->type.sizes.at(n->dims.at(0)));
      }
      g.cats.push_back(std::move(c));
    }
  }
  for (const ir::Node* n : g.nodes) {
    if (reduction_domain || has_view(g.nodes)) break;
    auto b = ir::broadcast_shapes(domain, n->output()->type.sizes);
    TORCHFUSE_INTERNAL_ASSERT(b.has_value(), "group ", g.id, " holds shapes that do not broadcast");
    domain = *b;
  }
  g.domain = domain;
  g.schedule = choose_schedule(g);
  g.pattern = group_pattern(g);
  TORCHFUSE_INTERNAL_ASSERT(!g.outputs.empty(), "group ", g.id, " has no outputs");
}

}  // namespace

void finalize_groups(PassContext& ctx) {
  for (auto& g : ctx.plan.groups) finalize_one(ctx.graph, g);
}

}  // namespace torchfuse
