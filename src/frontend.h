// Frontend: TorchScript graph -> torchfuse IR for one input signature.
//
// The graph is first run once on the call's inputs with every intermediate value exposed as an
// output ("profiling"), which gives every value its dtype, sizes, strides and device, also after
// ops torchfuse does not know. Then each TorchScript node becomes IR nodes: known ops as typed
// pointwise or reduction nodes (composite ops decomposed into primitives), anything else as an
// Opaque node that runs through ATen.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/ivalue.h>

#include "src/ir.h"

namespace torch {
namespace jit {
struct Graph;
struct Node;
struct Value;
}  // namespace jit
}  // namespace torch

namespace torchfuse {

// Runtime type of every top-level TorchScript value for one call, and that call's result.
struct Profile {
  std::unordered_map<const torch::jit::Value*, ir::Type> types;
  // The value of every int (sizes and size arithmetic: aten::size, aten::Int, floordiv): views
  // whose arguments are computed at run time plan with these and read each call's own.
  std::unordered_map<const torch::jit::Value*, int64_t> ints;
  c10::IValue result;  // the graph's own output for these inputs (computed by ATen)
};

Profile profile_graph(const std::shared_ptr<torch::jit::Graph>& graph, const std::vector<c10::IValue>& inputs);

// The IR and how it maps back to the TorchScript graph it came from.
struct Conversion {
  std::unique_ptr<ir::Graph> graph;
  std::vector<torch::jit::Value*> source_values;  // ir::Value::source_index -> TorchScript value
  // ir::Node::origin -> TorchScript node (a ListUnpack appears once per output: its pieces are
  // fusion units of their own, see convert_splits.cpp)
  std::vector<torch::jit::Node*> source_nodes;
  // One entry per node whose converter declined it, in graph order: "aten::norm (%5) stays in
  // ATen: norm with p=3: only p=2 is fused". Ops without a converter (matmul) are not listed.
  std::vector<std::string> declined;
};

Conversion convert_to_ir(torch::jit::Graph& graph, const Profile& profile);

// ir::Type of a runtime value (tensor, number, bool; anything else is Other).
ir::Type type_of_ivalue(const c10::IValue& v);

// The values node `n` reads: its inputs, then the values defined outside it that the nodes of its
// blocks (if/loop bodies) read, each once, in order of first use. Fusion must treat a value
// an if-body reads as read by the if node.
std::vector<torch::jit::Value*> values_read(torch::jit::Node* n);

// A graph's result from the stack it left: its one output, a tuple of several, None for none.
c10::IValue graph_result(std::vector<c10::IValue>& stack);

}  // namespace torchfuse
