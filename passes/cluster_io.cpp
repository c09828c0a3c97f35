#include "passes/cluster_io.h"

#include <algorithm>

namespace torchfuse {

ClusterSet clusters_from_plan(const PassContext& ctx) {
  ClusterSet set(ctx.graph);
  for (const auto& g : ctx.plan.groups) {
    std::vector<int> ids;
    for (const ir::Node* n : g.nodes) ids.push_back(n->id);
    set.make_cluster(std::move(ids));
  }
  return set;
}

void clusters_to_plan(const ClusterSet& set, PassContext& ctx) {
  std::vector<const std::vector<int>*> live;
  for (const auto& m : set.members)
    if (!m.empty()) live.push_back(&m);
  std::sort(live.begin(), live.end(), [](const auto* a, const auto* b) { return a->front() < b->front(); });
  ctx.plan.groups.clear();
  for (const auto* m : live) {
    FusionGroup g;
    g.id = static_cast<int>(ctx.plan.groups.size());
    for (int id : *m) g.nodes.push_back(ctx.graph.nodes()[id]);
    ctx.plan.groups.push_back(std::move(g));
  }
}

}  // namespace torchfuse
