#include "passes/legality.h"

#include <algorithm>
#include <deque>

#include "passes/view_steps.h"
#include "src/error.h"

namespace torchfuse {

ClusterSet::ClusterSet(const ir::Graph& g) : graph(g), group_of(g.nodes().size(), -1) {}

int ClusterSet::make_cluster(std::vector<int> nodes) {
  std::sort(nodes.begin(), nodes.end());
  const int id = static_cast<int>(members.size());
  for (int n : nodes) {
    TORCHFUSE_INTERNAL_ASSERT(group_of[n] == -1, "node ", n, " is already in cluster ", group_of[n]);
    group_of[n] = id;
  }
  members.push_back(std::move(nodes));
  return id;
}

void ClusterSet::dissolve(int cluster) {
  for (int n : members[cluster]) group_of[n] = -1;
  members[cluster].clear();
}

void ClusterSet::merge(int into, int from) {
  TORCHFUSE_INTERNAL_ASSERT(into != from, "merging cluster ", into, " with itself");
  for (int n : members[from]) group_of[n] = into;
  auto& dst = members[into];
  dst.insert(dst.end(), members[from].begin(), members[from].end());
  std::sort(dst.begin(), dst.end());
  members[from].clear();
}

std::vector<const ir::Node*> ClusterSet::nodes_of(const std::vector<int>& clusters) const {
  std::vector<int> ids;
  for (int c : clusters) ids.insert(ids.end(), members[c].begin(), members[c].end());
  std::sort(ids.begin(), ids.end());
  std::vector<const ir::Node*> out;
  for (int id : ids) out.push_back(graph.nodes()[id]);
  return out;
}

std::vector<int> ClusterSet::ids_of(int a, int b) const {
  std::vector<int> ids = members[a];
  ids.insert(ids.end(), members[b].begin(), members[b].end());
  return ids;
}

ViewPaths ClusterSet::view_paths_of(const std::vector<int>& clusters) const {
  const auto& outs = graph.outputs();
  auto escapes = [&](const ir::Value* v) {
    if (std::find(outs.begin(), outs.end(), v) != outs.end()) return true;
    for (const ir::Node* user : v->uses) {
      if (std::find(clusters.begin(), clusters.end(), group_of[user->id]) == clusters.end()) return true;
    }
    return false;
  };
  return view_paths(nodes_of(clusters), escapes);
}

std::vector<int64_t> ClusterSet::domain(int cluster) const {
  if (has_view(nodes_of({cluster}))) {
    // The output domain: the shapes before the views are in other index spaces.
    const ViewPaths p = view_paths_of({cluster});
    TORCHFUSE_INTERNAL_ASSERT(p.why_not.empty(), "cluster ", cluster, " holds views it cannot hold: ", p.why_not);
    return p.domain;
  }
  std::vector<int64_t> shape;
  for (int id : members[cluster]) {
    const ir::Node* n = graph.nodes()[id];
    // A reduction's domain is its input's; its output is smaller.
    const ir::Type& t = ir::is_reduction(n->kind) ? n->inputs[0]->type : n->output()->type;
    auto b = ir::broadcast_shapes(shape, t.sizes);
    TORCHFUSE_INTERNAL_ASSERT(b.has_value(), "cluster ", cluster, " holds shapes that do not broadcast");
    shape = *b;
  }
  return shape;
}

bool ClusterSet::has_reduction(int cluster) const {
  for (int id : members[cluster])
    if (ir::along_dims(graph.nodes()[id]->kind)) return true;  // (scans too: fuse_reductions owns them)
  return false;
}

std::string node_name(const ir::Node* n) { return "%" + std::to_string(n->output()->id) + " (" + ir::op_name(n->kind) + ")"; }

std::string ClusterSet::name(int cluster) const { return node_name(graph.nodes()[members[cluster].back()]); }

bool escapes(const ClusterSet& set, int cluster, int other) {
  const auto& outs = set.graph.outputs();
  for (int id : set.members[cluster]) {
    for (const ir::Value* v : set.graph.nodes()[id]->outputs) {
      if (std::find(outs.begin(), outs.end(), v) != outs.end()) return true;
      for (const ir::Node* user : v->uses) {
        const int g = set.group_of[user->id];
        if (g != cluster && g != other) return true;
      }
    }
  }
  return false;
}

namespace {

// Is there a path from cluster `from` to cluster `to` through at least one node outside both?
bool path_through_outside(const ClusterSet& set, int from, int to) {
  const int last_to = set.members[to].back();
  std::vector<char> seen(set.graph.nodes().size(), 0);
  std::deque<int> work;
  auto push_users_outside = [&](int id) {
    for (const ir::Value* v : set.graph.nodes()[id]->outputs) {
      for (const ir::Node* user : v->uses) {
        const int g = set.group_of[user->id];
        if (g == from || g == to || seen[user->id] || user->id > last_to) continue;
        seen[user->id] = 1;
        work.push_back(user->id);
      }
    }
  };
  for (int id : set.members[from]) push_users_outside(id);
  while (!work.empty()) {
    const int id = work.front();
    work.pop_front();
    for (const ir::Value* v : set.graph.nodes()[id]->outputs) {
      for (const ir::Node* user : v->uses) {
        if (set.group_of[user->id] == to) return true;
      }
    }
    push_users_outside(id);
  }
  return false;
}

// An expand_as whose output the two clusters would write: every element it repeats, where
// eager's expand_as is a view (it stays one in ATen).
std::optional<std::string> expanded_output(const ClusterSet& set, int a, int b) {
  const auto& outs = set.graph.outputs();
  for (const ir::Node* n : set.nodes_of({a, b})) {
    if (n->kind != ir::OpKind::ExpandAs) continue;
    bool used_outside = std::find(outs.begin(), outs.end(), n->output()) != outs.end();
    for (const ir::Node* user : n->output()->uses) {
      const int g = set.group_of[user->id];
      used_outside = used_outside || (g != a && g != b);
    }
    if (used_outside) {
      return "its output %" + std::to_string(n->output()->id) +
             " (expand_as) would be written in full (eager's expand_as is a view: it stays one in ATen)";
    }
  }
  return std::nullopt;
}

// A cluster of views alone reading a value contiguous() produced in `producer`: fused, the group
// would write the views' shape contiguous, undoing the layout contiguous() asked for (a query
// written tokens-major for attention, passes/rewrite_attention.cpp); outside, the views are
// ATen's views of what the group wrote. (Consumers are visited last to first: a views-only
// cluster at this point has no fused reader left to join.)
std::optional<std::string> view_of_contiguous(const ClusterSet& set, int producer, int consumer) {
  const auto& nodes = set.graph.nodes();
  for (int id : set.members[consumer]) {
    if (!ir::is_view(nodes[id]->kind) || nodes[id]->kind == ir::OpKind::Contiguous) return std::nullopt;
  }
  for (int id : set.members[consumer]) {
    for (const ir::Value* v : nodes[id]->inputs) {
      const ir::Node* p = v->producer;
      if (p && p->kind == ir::OpKind::Contiguous && set.group_of[p->id] == producer) {
        return "the view " + set.name(consumer) + " of %" + std::to_string(v->id) +
               " (contiguous) stays a view outside the group, which writes the layout contiguous() asks for";
      }
    }
  }
  return std::nullopt;
}

c10::Device device_of(const ClusterSet& set, int cluster) {
  return set.graph.nodes()[set.members[cluster].front()]->output()->type.device;
}

}  // namespace

std::optional<std::string> why_not_fuse(const ClusterSet& set, int producer, int consumer) {
  if (device_of(set, producer) != device_of(set, consumer)) {
    return "they are on different devices";
  }
  if (auto why = expanded_output(set, producer, consumer)) return why;
  if (auto why = view_of_contiguous(set, producer, consumer)) return why;
  if (has_view(set.nodes_of({producer, consumer}))) {
    // Shapes on either side of a view are in different index spaces: view_paths checks that
    // every value reaches one output domain through one sequence of views, and the domain.
    const ViewPaths p = set.view_paths_of({producer, consumer});
    if (!p.why_not.empty()) return p.why_not;
    if (connected_outside(set, producer, consumer)) {
      return "a path through an unfused node connects them (fusing would create a cycle)";
    }
    return side_effect_between(set, producer, consumer);
  }
  const auto dp = set.domain(producer);
  const auto dc = set.domain(consumer);
  const auto merged = ir::broadcast_shapes(dp, dc);
  if (!merged) return "shapes " + ir::shape_str(dp) + " and " + ir::shape_str(dc) + " do not broadcast";
  if (*merged != dp && *merged != dc) {
    return "the merged domain " + ir::shape_str(*merged) + " is neither " + ir::shape_str(dp) + " nor " + ir::shape_str(dc);
  }
  if (*merged != dp && escapes(set, producer, consumer)) {
    return "its output " + ir::shape_str(dp) + " is used elsewhere and would be computed over " + ir::shape_str(*merged);
  }
  if (*merged != dc && escapes(set, consumer, producer)) {
    return "the group's output " + ir::shape_str(dc) + " is used elsewhere and would be computed over " +
           ir::shape_str(*merged);
  }
  if (connected_outside(set, producer, consumer)) {
    return "a path through an unfused node connects them (fusing would create a cycle)";
  }
  return side_effect_between(set, producer, consumer);
}

std::optional<std::string> why_not_fuse_siblings(const ClusterSet& set, int a, int b) {
  if (set.has_reduction(a) || set.has_reduction(b)) return "a group with a reduction does not take siblings";
  const auto da = set.domain(a);
  const auto db = set.domain(b);
  if (da != db) {
    return "their shapes " + ir::shape_str(da) + " and " + ir::shape_str(db) + " differ (one kernel runs one shape)";
  }
  return why_not_fuse(set, a, b);
}

bool connected_outside(const ClusterSet& set, int a, int b) {
  return path_through_outside(set, a, b) || path_through_outside(set, b, a);
}

std::optional<std::string> side_effect_between(const ClusterSet& set, int a, int b) {
  const int lo = std::min(set.members[a].front(), set.members[b].front());
  const int hi = std::max(set.members[a].back(), set.members[b].back());
  for (int id = lo + 1; id < hi; ++id) {
    const ir::Node* n = set.graph.nodes()[id];
    if (n->side_effects) {
      return "%" + std::to_string(n->outputs.empty() ? -1 : n->outputs[0]->id) + " (" + n->opaque_name +
             ") between them has side effects";
    }
  }
  return std::nullopt;
}

}  // namespace torchfuse
