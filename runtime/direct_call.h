// A rewritten graph that is one fusion node between the graph's inputs and its outputs runs
// without TorchScript's interpreter: the node's kernel is called on a stack built from the call's
// inputs (and the graph's constants), and the graph's outputs are taken from what it leaves. On a
// launch-bound call the interpreter's frame is a sizeable part of the host's time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/ir.h>

namespace torchfuse {
namespace runtime {

class FusedKernel;

class DirectCall {
 public:
  // The direct form of `graph`, whose fusion nodes carry kernel_ids[i] for kernels[i]; nullopt
  // unless the graph holds one fusion node, constants, and at most a tuple of what it returns.
  static std::optional<DirectCall> of(const torch::jit::Graph& graph, const std::vector<int64_t>& kernel_ids,
                                      const std::vector<std::shared_ptr<FusedKernel>>& kernels);
  // What the graph returns for these inputs (as run_rewritten's graph_result gives it).
  c10::IValue run(const std::vector<c10::IValue>& inputs) const;

 private:
  // Where a value comes from: a graph input, a constant, or an output of the node.
  struct Source {
    int input = -1;
    int node_output = -1;
    c10::IValue constant;
  };
  // A value the graph returns: one source, or a tuple of them.
  struct Returned {
    std::vector<Source> elements;
    bool tuple = false;
  };
  std::shared_ptr<FusedKernel> kernel_;
  std::vector<Source> node_inputs_;
  std::vector<Returned> returned_;
};

}  // namespace runtime
}  // namespace torchfuse
