// Shape tensors: the parts of a graph that compute tensors from sizes and constants alone
// (position ids, causal masks, rotary tables), cut out by passes/cache_shape_tensors.h into a
// graph of their own. Its inputs are the ints it was computed from (the key); each call of
// torchfuse::shape_tensors (runtime/shape_tensors_op.cpp) returns what it gave for that key
// before, or runs it and keeps the result.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace torch {
namespace jit {
struct Graph;
struct Code;
}  // namespace jit
}  // namespace torch

namespace torchfuse {

// Keys kept per cut; a call with another key past them runs the graph and keeps nothing.
constexpr size_t kMaxShapeTensorKeys = 16;

struct ShapeTensors {
  // Inputs: the key's ints; outputs: Tensor[] and int[] (the values the rest of the graph reads).
  std::shared_ptr<torch::jit::Graph> graph;
  std::string description;  // what it computes, for messages

  struct Result {
    std::vector<at::Tensor> tensors;
    std::vector<int64_t> ints;
  };
  // Guards what follows.
  std::mutex mu;
  std::shared_ptr<torch::jit::Code> code;  // made on the first run
  std::list<std::pair<std::vector<int64_t>, Result>> results;  // by key, at most kMaxShapeTensorKeys
};

// Registers a cut for torchfuse::shape_tensors(id, key) to find; it stays registered as long as
// the returned handle lives (the rewritten graph's owner keeps it).
std::shared_ptr<const void> register_shape_tensors(std::shared_ptr<ShapeTensors> cut, int64_t* id);
// The cut registered under `id`; throws an internal error when none is.
std::shared_ptr<ShapeTensors> find_shape_tensors(int64_t id);

}  // namespace torchfuse
