// Export front door, part 2: an exported program (src/export_reader.h) as the TorchScript graph
// the rest of torchfuse takes (the same kind compile() makes of a frozen module: inputs are the
// call's inputs, parameters, buffers and tensor constants are graph constants).
//
// Each call_function node names an operator overload ("torch.ops.aten.mul.Tensor"); the
// operator and the overload must exist in this LibTorch (its JIT operator registry, which holds
// the dispatcher's ATen schemas). The node is emitted with TorchScript's own schema matching on
// the node's arguments (positional ones by position, keyword ones by name), which picks the
// overload a TorchScript graph would hold for them (mul.Tensor with a float operand becomes
// mul.Scalar, as `x * 0.5` is in TorchScript). Symbolic sizes stay values computed from the
// inputs (aten.sym_size.int becomes aten::size), so the graph serves every size of the exported
// range. Runtime asserts of export (_assert_scalar, _assert_tensor_metadata, ...) are dropped:
// src/export_contract.cpp checks the inputs instead. The mode regions of export's training IR
// (higher_order.wrap_with_set_grad_enabled, and wrap_with_autocast with autocast disabled) have
// their bodies inlined: neither mode changes a value there. aten.item recorded as a SymInt,
// SymFloat or SymBool becomes TorchScript's int, float or bool of a tensor.
//
// Refused, each a torchfuse::Error naming the node, its target and the reason: higher-order ops
// (cond, while_loop, map, autocast regions that enable autocast, ...), ops missing from this LibTorch (an
// unregistered custom op, an ATen op newer than this LibTorch), arguments with no TorchScript
// value (subgraphs, custom objects), programs that update buffers or parameters, training
// programs (loss and gradient outputs), effect tokens and custom-object inputs.
#pragma once

#include <memory>
#include <optional>

#include <c10/core/Device.h>

#include "src/export_reader.h"

namespace torch {
namespace jit {
struct Graph;
}  // namespace jit
}  // namespace torch

namespace torchfuse {
namespace exported {

// The graph of `program`, its parameters, buffers and constants moved to `device` (and every
// device argument of its ops, e.g. arange's or full's, set to it), or left on the CPU as read
// when `device` is empty. The graph is not yet prepared (prepare_graph runs next).
std::shared_ptr<torch::jit::Graph> build_graph(const Program& program, const std::optional<c10::Device>& device);

}  // namespace exported
}  // namespace torchfuse
