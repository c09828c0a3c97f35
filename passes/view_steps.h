// Views inside pointwise groups. A pointwise kernel computes one element of the group's output
// domain per thread and reads each input through strides; a view between two ops changes no
// value, only which element is which. So a group with views reads each input through the
// sequence of views between it and the output domain: the runtime applies those steps to the
// input's sizes and strides (apply_view_steps) before the domain is built, and the kernel sees
// ordinary strided inputs. Every value of the group must reach the outputs through exactly one
// sequence of views (view_paths says where that fails).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/ir.h"

namespace torchfuse {

// One view applied to an input on its way to the output domain.
struct ViewStep {
  ir::OpKind kind = ir::OpKind::Permute;  // Permute, Unsqueeze, Squeeze or Flatten
  std::vector<int64_t> dims;              // as ir::Node::dims
  int64_t rank = 0;                       // the IR rank of the value the view applies to
  std::vector<int64_t> in_sizes;          // its profiled sizes (plan-time checks, messages)
  bool operator==(const ViewStep& o) const {
    return kind == o.kind && dims == o.dims && rank == o.rank && in_sizes == o.in_sizes;
  }
  bool operator!=(const ViewStep& o) const { return !(*this == o); }
};
ViewStep view_step_of(const ir::Node& view);
// "permute[0, 2, 1]", steps joined by " -> ".
std::string describe_steps(const std::vector<ViewStep>& steps);

// Applies `steps` to a tensor's sizes and strides, in order: before each step the tensor is
// left-padded with size-1, stride-0 dims to the step's rank (broadcasting aligns ranks that
// way); then permute reorders, unsqueeze inserts size 1 / stride 0, squeeze drops a size-1 dim,
// flatten merges dims [s, e] into one. A merge needs stride[i] == stride[i+1] * size[i+1] for
// each pair of adjacent dims of size > 1 in the range; returns false when that fails (or a
// squeezed dim is not size 1, or the tensor has a higher rank than a step expects), leaving
// sizes and strides unspecified.
bool apply_view_steps(const std::vector<ViewStep>& steps, std::vector<int64_t>& sizes, std::vector<int64_t>& strides);

// The views of a set of nodes that would be one group (topological order).
struct ViewPaths {
  // For each node, the views from its output to the group's output domain.
  std::map<const ir::Node*, std::vector<ViewStep>> after;
  // For each tensor input of rank > 0 (values read but not computed by the nodes), the views
  // from it to the output domain.
  std::map<const ir::Value*, std::vector<ViewStep>> input_steps;
  // The broadcast of the shapes in the output domain (nodes with no views after them).
  std::vector<int64_t> domain;
  // Why the nodes cannot be one group with views ("" when they can).
  std::string why_not;
};
// `escapes(v)`: v is needed outside the nodes (a graph output or read by another node).
ViewPaths view_paths(const std::vector<const ir::Node*>& nodes, const std::function<bool(const ir::Value*)>& escapes);
bool has_view(const std::vector<const ir::Node*>& nodes);

}  // namespace torchfuse
