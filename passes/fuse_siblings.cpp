#include "passes/fuse_siblings.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace torchfuse {
namespace {

// A cluster that computes something elementwise and reduces nothing: a candidate sibling.
bool pointwise_compute(const ClusterSet& set, int cluster) {
  if (set.members[cluster].empty() || set.has_reduction(cluster)) return false;
  return std::any_of(set.members[cluster].begin(), set.members[cluster].end(),
                     [&](int id) { return ir::is_pointwise(set.graph.nodes()[id]->kind); });
}

// The tensors each candidate reads from outside itself, by value id: the value's readers in order
// of their first node (ids are dense and in creation order: no pointer decides the order). A
// scalar literal read by two chains is no reason to fuse them.
std::map<int, std::vector<int>> readers_by_value(const ClusterSet& set) {
  std::map<int, std::vector<int>> readers;
  std::vector<int> clusters;
  for (int c = 0; c < static_cast<int>(set.members.size()); ++c)
    if (pointwise_compute(set, c)) clusters.push_back(c);
  std::sort(clusters.begin(), clusters.end(),
            [&](int a, int b) { return set.members[a].front() < set.members[b].front(); });
  for (int c : clusters) {
    std::set<int> read;
    for (int id : set.members[c]) {
      for (const ir::Value* v : set.graph.nodes()[id]->inputs) {
        if (v->constant || (v->producer && set.group_of[v->producer->id] == c)) continue;
        read.insert(v->id);
      }
    }
    for (int v : read) readers[v].push_back(c);
  }
  return readers;
}

}  // namespace

int merge_siblings(ClusterSet& set, PassContext& ctx) {
  int merges = 0;
  std::map<int, int> merged_into;  // a cluster merged away -> the cluster that took it
  auto current = [&](int c) {
    while (merged_into.count(c)) c = merged_into.at(c);
    return c;
  };
  std::set<std::pair<int, int>> tried;
  for (const auto& [value, readers] : readers_by_value(set)) {
    for (size_t i = 1; i < readers.size(); ++i) {
      const int into = current(readers[0]);
      const int from = current(readers[i]);
      if (into == from || !tried.insert({into, from}).second) continue;
      if (auto why = why_not_fuse_siblings(set, into, from)) {
        ctx.refuse("cannot fuse siblings " + set.name(into) + " and " + set.name(from) + " (both read %" +
                       std::to_string(value) + "): " + *why,
                   set.ids_of(into, from));
        continue;
      }
      if (ctx.logs.fusion) {
        log_info("fusion: siblings " + set.name(into) + " and " + set.name(from) + " (both read %" +
                 std::to_string(value) + ") become one group");
      }
      set.merge(into, from);
      merged_into[from] = into;
      ++merges;
    }
  }
  return merges;
}

}  // namespace torchfuse
