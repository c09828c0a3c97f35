// What a TorchScript graph's prim::Constant nodes hold, read without running them.
#pragma once

#include <optional>

#include <ATen/core/Tensor.h>

namespace torch {
namespace jit {
struct Value;
}  // namespace jit
}  // namespace torch

namespace torchfuse {

// The tensor `v`'s prim::Constant node holds (a frozen parameter or buffer); nothing for any other
// value.
std::optional<at::Tensor> constant_tensor(const torch::jit::Value* v);

}  // namespace torchfuse
