#include "passes/fuse_pointwise.h"

#include "passes/cluster_io.h"
#include "passes/legality.h"

#include <map>
#include <set>

namespace torchfuse {
namespace {

bool elementwise(const ir::Node* n) { return ir::is_pointwise(n->kind) || ir::is_view(n->kind); }

}  // namespace

void fuse_pointwise(PassContext& ctx) {
  ClusterSet set = clusters_from_plan(ctx);
  const auto& nodes = ctx.graph.nodes();
  // Nodes decomposed from one TorchScript node start in one cluster: the rewrite replaces whole
  // TorchScript nodes.
  // An op whose reduction stayed unfused (softmax over a leading dim, say) stays whole in ATen.
  std::map<int, std::vector<int>> by_origin;
  std::set<int> unfused_reduction_origins;
  for (const ir::Node* n : nodes) {
    if (elementwise(n) && set.group_of[n->id] == -1) by_origin[n->origin].push_back(n->id);
    if (ir::along_dims(n->kind) && set.group_of[n->id] == -1) unfused_reduction_origins.insert(n->origin);
  }
  for (auto& [origin, ids] : by_origin) {
    if (!unfused_reduction_origins.count(origin)) set.make_cluster(std::move(ids));
  }
  // Consumers last to first: each group grows towards its producers.
  for (size_t i = nodes.size(); i-- > 0;) {
    const ir::Node* consumer = nodes[i];
    if (!elementwise(consumer) && !ir::along_dims(consumer->kind)) continue;
    for (const ir::Value* v : consumer->inputs) {
      const ir::Node* producer = v->producer;
      if (!producer || !(elementwise(producer) || ir::along_dims(producer->kind))) continue;
      const int c = set.group_of[consumer->id];
      const int p = set.group_of[producer->id];
      if (p == c || p < 0 || c < 0) continue;
      if (set.has_reduction(p) || set.has_reduction(c)) {
        // fuse_reductions decides those; it takes no views.
        auto is_cat = [](ir::OpKind k) { return k == ir::OpKind::Cat || k == ir::OpKind::CatPiece; };
        const bool cat = is_cat(producer->kind) || is_cat(consumer->kind);
        if (cat || ir::is_view(producer->kind) || ir::is_view(consumer->kind)) {
          std::vector<int> both = set.members[p];
          both.insert(both.end(), set.members[c].begin(), set.members[c].end());
          ctx.refuse("cannot fuse " + set.name(p) + " into the group of " + set.name(c) +
                         (cat ? ": cat inside reduction groups is not fused yet"
                              : ": views inside reduction groups are not fused yet"),
                     both);
        }
        continue;
      }
      if (auto why = why_not_fuse(set, p, c)) {
        std::vector<int> both = set.members[p];
        both.insert(both.end(), set.members[c].begin(), set.members[c].end());
        ctx.refuse("cannot fuse " + set.name(p) + " into the group of " + set.name(c) + ": " + *why, both);
        continue;
      }
      set.merge(c, p);
    }
  }
  clusters_to_plan(set, ctx);
}

}  // namespace torchfuse
