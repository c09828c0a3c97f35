#include "passes/fuse_pointwise.h"

#include "passes/cluster_io.h"
#include "passes/fuse_siblings.h"
#include "passes/legality.h"

#include <map>
#include <set>
#include <utility>

namespace torchfuse {
namespace {

bool elementwise(const ir::Node* n) { return ir::is_pointwise(n->kind) || ir::is_view(n->kind); }

// A refusal and the nodes it names, kept until the round that decides it is the last.
using Refusals = std::vector<std::pair<std::string, std::vector<int>>>;

// Consumers last to first: each group grows towards its producers.
Refusals grow_towards_producers(ClusterSet& set) {
  Refusals refused;
  const auto& nodes = set.graph.nodes();
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
          refused.emplace_back("cannot fuse " + set.name(p) + " into the group of " + set.name(c) +
                                   (cat ? ": cat inside reduction groups is not fused yet"
                                        : ": views inside reduction groups are not fused yet"),
                               set.ids_of(p, c));
        }
        continue;
      }
      if (auto why = why_not_fuse(set, p, c)) {
        refused.emplace_back("cannot fuse " + set.name(p) + " into the group of " + set.name(c) + ": " + *why,
                             set.ids_of(p, c));
        continue;
      }
      set.merge(c, p);
    }
  }
  return refused;
}

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
  Refusals refused = grow_towards_producers(set);
  // Sibling groups merged, a second round takes in the producers they now read alone (a view both
  // siblings read); its refusals replace the first round's, which it decides again.
  if (ctx.fuse_siblings && merge_siblings(set, ctx) > 0) refused = grow_towards_producers(set);
  for (const auto& [why, ids] : refused) ctx.refuse(why, ids);
  clusters_to_plan(set, ctx);
}

}  // namespace torchfuse
