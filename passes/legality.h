// Fusion legality: may two clusters of IR nodes become one kernel? A named predicate shared by
// the fusion passes; it returns the reason when the answer is no.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "passes/view_steps.h"
#include "src/ir.h"

namespace torchfuse {

// "%7 (mul)": a node named in refusals and logs.
std::string node_name(const ir::Node* n);

// Nodes being grouped, by node id. group_of[id] is the cluster index or -1.
struct ClusterSet {
  explicit ClusterSet(const ir::Graph& g);
  const ir::Graph& graph;
  std::vector<int> group_of;
  std::vector<std::vector<int>> members;  // sorted node ids; empty once merged away

  int make_cluster(std::vector<int> nodes);
  // Undoes make_cluster for a cluster that was only tried.
  void dissolve(int cluster);
  // Moves every node of `from` into `into`.
  void merge(int into, int from);
  // The broadcast of every member's output shape (with views: of those in the output domain).
  std::vector<int64_t> domain(int cluster) const;
  // The nodes of the clusters, in node order.
  std::vector<const ir::Node*> nodes_of(const std::vector<int>& clusters) const;
  // The node ids of two clusters (a refusal names both).
  std::vector<int> ids_of(int a, int b) const;
  // view_paths of the clusters taken as one group.
  ViewPaths view_paths_of(const std::vector<int>& clusters) const;
  bool has_reduction(int cluster) const;
  // "%7 (mul)" for the last node of a cluster, to name it in messages.
  std::string name(int cluster) const;
};

// Why `producer` cannot be merged into `consumer`, or nullopt when it can:
//  - both on one device;
//  - shapes broadcast-compatible, with the merged domain one of the two;
//  - a value of the smaller cluster used outside the merge would be computed over the larger
//    domain: refused;
//  - no path between them through a node outside both (that would be a cycle);
//  - no node with side effects between their first and last nodes;
//  - views alone reading a contiguous() of the producer stay outside (the group writes that layout);
//  - with views in either: view_paths' rules (one sequence of views from each value to one
//    output domain, no pre-view value needed outside, merges possible) instead of the shape rules.
std::optional<std::string> why_not_fuse(const ClusterSet& set, int producer, int consumer);

// Why two sibling clusters (neither reads the other; fuse_siblings) cannot become one kernel, or
// nullopt when they can: neither holds a reduction (a sibling joins a pointwise kernel), both have
// one iteration shape (the merged kernel runs one), and why_not_fuse's rules (device, views, no
// path between them through an unfused node, no side effects between them) hold.
std::optional<std::string> why_not_fuse_siblings(const ClusterSet& set, int a, int b);

// True when some value of `cluster` is used outside `cluster` and `other`, or is a graph output.
bool escapes(const ClusterSet& set, int cluster, int other);
// A path from one cluster to the other, or back, through a node outside both.
bool connected_outside(const ClusterSet& set, int a, int b);
// The first node with side effects strictly between the two clusters' first and last nodes.
std::optional<std::string> side_effect_between(const ClusterSet& set, int a, int b);

}  // namespace torchfuse
