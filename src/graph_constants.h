// What a TorchScript graph's prim::Constant nodes hold, read without running them.
#pragma once

#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

namespace torch {
namespace jit {
struct Graph;
struct Node;
struct Value;
}  // namespace jit
}  // namespace torch

namespace torchfuse {

// What `v`'s prim::Constant node holds (an IValue None for a None constant); nothing for any other
// value. Read constants through this, not by assigning torch::jit::toIValue to a std::optional:
// under LibTorch 1.13 toIValue returns a c10::optional, which std::optional<IValue> takes as an
// engaged IValue holding None, so a non-constant would read as the constant None.
std::optional<c10::IValue> constant_value(const torch::jit::Value* v);

// The bool `v`'s prim::Constant node holds; nothing for any other value.
std::optional<bool> constant_bool(const torch::jit::Value* v);

// The int `v`'s prim::Constant node holds; nothing for any other value.
std::optional<int64_t> constant_int(const torch::jit::Value* v);

// `v` is a None constant (an optional argument left out).
bool is_none_constant(const torch::jit::Value* v);

// The tensor `v`'s prim::Constant node holds (a frozen parameter or buffer); nothing for any other
// value.
std::optional<at::Tensor> constant_tensor(const torch::jit::Value* v);

// The constant int `v` as a dim of a tensor of `rank` dims, negative dims counted from the end;
// nothing for a non-constant or out of range.
std::optional<int64_t> constant_dim(const torch::jit::Value* v, int64_t rank);

// aten::linear(x, W, b?) with W a frozen 2-D tensor and b none or a frozen tensor.
struct FrozenLinear {
  torch::jit::Node* node = nullptr;
  at::Tensor weight;
  std::optional<at::Tensor> bias;
};

// The graph's frozen linears (top-level block) grouped by the value they read: groups in the order
// of their first linear, each group's linears in graph order.
std::vector<std::vector<FrozenLinear>> frozen_linears_by_input(torch::jit::Graph& graph);

}  // namespace torchfuse
