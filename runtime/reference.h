// The float64 reference run of a TorchScript graph (CompiledModule::forward_reference, and
// compare_groups for one group's fallback graph): floating inputs and floating tensor constants
// upcast to float64, integer and bool tensors as they are, and every cast to a narrower float the
// graph asks for rounding there and returning to float64 right after it is made.
#pragma once

#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>

namespace torchfuse {
namespace runtime {

// Runs a copy of `graph` so on `inputs`; returns the interpreter's stack (the graph's outputs).
// Throws what the run throws (an op without a float64 kernel, a dtype assert in the model).
torch::jit::Stack run_float64_reference(torch::jit::Graph& graph, const std::vector<c10::IValue>& inputs);

}  // namespace runtime
}  // namespace torchfuse
