// Shared state for converting one TorchScript node into IR nodes. Converters for families of
// ops (pointwise in frontend.cpp, reductions in convert_reductions.cpp) use it.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/ivalue.h>

#include "src/frontend.h"
#include "src/ir.h"

namespace torchfuse {

class ConvertContext {
 public:
  ConvertContext(ir::Graph& graph, const Profile& profile,
                 std::unordered_map<const torch::jit::Value*, ir::Value*>& env)
      : graph_(graph), profile_(profile), env_(env) {}

  // The node being converted.
  void begin(torch::jit::Node* node, int origin);
  torch::jit::Node* node() const { return node_; }
  size_t num_inputs() const;

  // IR value for TorchScript input i.
  ir::Value* in(size_t i) const;
  const ir::Type& in_type(size_t i) const { return in(i)->type; }
  // Profiled type of TorchScript output i.
  const ir::Type& out_type(size_t i = 0) const;
  // The constant of input i, if TorchScript knows it (prim::Constant).
  std::optional<c10::IValue> constant(size_t i) const;
  bool is_none(size_t i) const;

  // Emits a node with one output; the output type is given.
  ir::Node* emit(ir::OpKind kind, std::vector<ir::Value*> inputs, ir::Type out,
                 c10::ScalarType compute_dtype);
  // Emits a pointwise node whose output has the broadcast shape of its tensor inputs.
  ir::Value* pointwise(ir::OpKind kind, std::vector<ir::Value*> inputs, c10::ScalarType out_dtype,
                       c10::ScalarType compute_dtype);
  ir::Value* scalar(const c10::Scalar& s) { return graph_.add_scalar_constant(s); }
  // Binds TorchScript output i to an IR value.
  void bind_output(size_t i, ir::Value* v);
  // The node returns its input unchanged (to() with nothing to change, dropout in eval mode):
  // binds its output to the input's IR value; convert_to_ir then removes the node from the
  // TorchScript graph so that one TorchScript value stands for each IR value.
  void bind_identity(ir::Value* input);
  const std::vector<torch::jit::Node*>& identities() const { return identities_; }

  ir::Graph& graph() { return graph_; }

 private:
  ir::Graph& graph_;
  const Profile& profile_;
  std::unordered_map<const torch::jit::Value*, ir::Value*>& env_;
  torch::jit::Node* node_ = nullptr;
  int origin_ = -1;
  std::vector<torch::jit::Node*> identities_;
};

// PyTorch's type promotion for the operands of an op (tensors by dim and dtype, scalars by kind).
c10::ScalarType promote_types_of(const std::vector<const ir::Value*>& operands);
// The dtype arithmetic is done in: fp16/bf16 compute in fp32.
c10::ScalarType opmath_type(c10::ScalarType dtype);
bool is_floating(c10::ScalarType dtype);
// Dtypes that fused kernels can load, store and compute in.
bool is_kernel_dtype(c10::ScalarType dtype);

// A converter returns false when the node cannot be expressed in IR (it then stays Opaque);
// it must not have emitted anything in that case.
using Converter = bool (*)(ConvertContext&);
// Converters by TorchScript kind ("aten::add"); pointwise and reduction tables merged.
const std::unordered_map<std::string, Converter>& pointwise_converters();
const std::unordered_map<std::string, Converter>& reduction_converters();

}  // namespace torchfuse
