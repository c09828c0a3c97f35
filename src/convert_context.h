// Shared state for converting one TorchScript node into IR nodes. Converters for families of
// ops (pointwise in convert_pointwise.cpp, activations in convert_activations.cpp, reductions in
// convert_reductions.cpp) use it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
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

  // The node being converted (clears the reason of the previous node's decline).
  void begin(torch::jit::Node* node, int origin);
  torch::jit::Node* node() const { return node_; }
  size_t num_inputs() const;

  // The converter gives up on the node, which stays in ATen: records why, for the user
  // ("norm with p=3: only p=2 is fused"), and returns false so that a converter can
  // `return ctx.decline(...)`. Helpers that decline return their failure value and their
  // callers return false without a reason of their own.
  bool decline(std::string why);
  // Why the node was declined ("" when no decline was recorded).
  const std::string& decline_reason() const { return decline_reason_; }
  // Schema name of input i ("dim", "keepdim", "alpha"), or "argument <i>" without a schema.
  std::string arg_name(size_t i) const;
  // "p=3", "approximate='foo'": input i's name and constant value (only the name when it is
  // not a constant).
  std::string arg_str(size_t i) const;
  // The op, for reasons: its kind without the namespace ("norm").
  std::string op_name() const;
  // "sum with 3 arguments": the op and its input count, for reasons that list the forms a
  // converter handles.
  std::string op_with_arity() const;
  // True when the node has at least n inputs; declines it otherwise.
  bool needs_inputs(size_t n);

  // IR value for TorchScript input i.
  ir::Value* in(size_t i) const;
  // IR value of an earlier TorchScript value (nullptr when it has none).
  ir::Value* ir_value(const torch::jit::Value* v) const;
  const ir::Type& in_type(size_t i) const { return in(i)->type; }
  // Profiled type of TorchScript output i.
  const ir::Type& out_type(size_t i = 0) const;
  // Profiled type of any top-level TorchScript value (Other when it has none).
  const ir::Type& type_of(const torch::jit::Value* v) const;
  // The constant of input i, if TorchScript knows it (prim::Constant).
  std::optional<c10::IValue> constant(size_t i) const;
  bool is_none(size_t i) const;
  // An int argument: a constant, or an int computed at run time (size arithmetic: aten::size,
  // aten::Int of a 0-dim tensor, floordiv...), which plans with its profiled value and reaches
  // the group as an operand that each call supplies (`operand`, null for a constant).
  struct IntArg {
    int64_t value = 0;
    ir::Value* operand = nullptr;
  };
  // Input i as an IntArg; nullopt when it is neither (None, a float, an int without a profile).
  std::optional<IntArg> int_arg(size_t i) const;
  // Input i as a list of IntArgs: a constant list, or a prim::ListConstruct of ints.
  std::optional<std::vector<IntArg>> int_list_arg(size_t i) const;

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

  // Pieces of a list that a converted chunk, split or unbind makes (convert_splits.cpp): the
  // nodes reading the list (prim::ListUnpack, aten::__getitem__) become one IR view per output,
  // each its own unit for fusion. The converter of the list's op records them here; the node
  // reading the list is then converted by emit_pieces, not by a converter.
  struct Piece {
    ir::OpKind kind = ir::OpKind::Slice;
    std::vector<int64_t> dims;
  };
  struct Pieces {
    ir::Value* input = nullptr;  // the tensor the list's op splits
    std::vector<Piece> outputs;  // one per output of the reading node
  };
  void defer_pieces(const torch::jit::Node* reader, Pieces pieces) { pieces_[reader] = std::move(pieces); }
  const Pieces* pieces_for(const torch::jit::Node* reader) const {
    auto it = pieces_.find(reader);
    return it == pieces_.end() ? nullptr : &it->second;
  }
  // A prim::ListConstruct whose tensors a cat or stack reads (convert_cat_list): the list is no
  // IR node, and the op converts.
  void mark_cat_list(const torch::jit::Node* list) { cat_lists_.insert(list); }
  bool cat_list_converted(const torch::jit::Node* list) const { return cat_lists_.count(list) > 0; }
  // The origin of the nodes emitted from now on (a ListUnpack's pieces each take their own).
  void set_origin(int origin) { origin_ = origin; }

  ir::Graph& graph() { return graph_; }

  // Types known only at run time. The input guards fix the dtype and device of the graph's
  // inputs and of what ops compute from them, but not of what control flow returns (the branch
  // taken can change between calls of one specialization), nor of what an op with a run-time
  // dtype or device argument computes (x.to(d) for an int input d), nor of what is computed
  // from those. Converters must not bake such a type into the graph: a to() of such a value is
  // no identity to delete, a run-time dtype argument is not the profiled one. (Fused groups
  // check such values on every call: runtime::input_differs.)
  bool runtime_typed(const torch::jit::Value* v) const { return runtime_typed_.count(v) > 0; }
  // The node's first dtype or device argument that is neither a constant nor the dtype or device
  // of a value whose type is fixed ("dtype (%d)"), or "".
  std::string runtime_type_argument() const;
  // After the node is converted: marks its outputs as runtime-typed where it is control flow,
  // reads a runtime-typed value or takes a runtime dtype or device argument.
  void note_output_types();

 private:
  ir::Graph& graph_;
  const Profile& profile_;
  std::unordered_map<const torch::jit::Value*, ir::Value*>& env_;
  torch::jit::Node* node_ = nullptr;
  int origin_ = -1;
  std::string decline_reason_;
  std::vector<torch::jit::Node*> identities_;
  std::unordered_set<const torch::jit::Value*> runtime_typed_;
  std::unordered_map<const torch::jit::Node*, Pieces> pieces_;
  std::unordered_set<const torch::jit::Node*> cat_lists_;
};

// PyTorch's type promotion for the operands of an op (tensors by dim and dtype, scalars by kind).
c10::ScalarType promote_types_of(const std::vector<const ir::Value*>& operands);
// The dtype arithmetic is done in: fp16/bf16 compute in fp32.
c10::ScalarType opmath_type(c10::ScalarType dtype);
bool is_floating(c10::ScalarType dtype);
// Dtypes that fused kernels can load, store and compute in.
bool is_kernel_dtype(c10::ScalarType dtype);

// Pieces of decline reasons.
// A constant argument as Python would write it: 3, 2.0, True, None, 'tanh', [0, 1].
std::string describe_constant(const c10::IValue& v);
// "<what> dtype ComplexFloat: fused kernels compute on floating, integer and bool types".
std::string not_kernel_dtype(const std::string& what, c10::ScalarType dtype);
// "<what> is an int, not a tensor" (a Python number) or "<what> is not a tensor".
std::string not_a_tensor(const std::string& what, const ir::Type& type);

// A converter returns false when the node cannot be expressed in IR (it then stays Opaque),
// through ConvertContext::decline with the reason; it must not have emitted anything then.
using Converter = bool (*)(ConvertContext&);
// Converters by TorchScript kind ("aten::add"); pointwise and reduction tables merged.
const std::unordered_map<std::string, Converter>& pointwise_converters();
const std::unordered_map<std::string, Converter>& reduction_converters();
const std::unordered_map<std::string, Converter>& activation_converters();
// permute, transpose, t, unsqueeze, squeeze, flatten, view / reshape (convert_views.cpp).
const std::unordered_map<std::string, Converter>& view_converters();
// slice, select, narrow, expand, expand_as, contiguous, alias, detach (convert_slices.cpp).
const std::unordered_map<std::string, Converter>& slice_converters();
// chunk, split, split_with_sizes, unbind, whose list is unpacked (convert_splits.cpp).
const std::unordered_map<std::string, Converter>& split_converters();
// cat, stack (convert_cat.cpp): they convert when their list's prim::ListConstruct did.
const std::unordered_map<std::string, Converter>& cat_converters();
// The node ctx has begun, a prim::ListConstruct: when its one use is a cat or stack that
// converts, binds the list to an Other value (no IR node) and returns true; false leaves it
// to become an Opaque node (no reason recorded: the cat's converter states it).
bool convert_cat_list(ConvertContext& ctx);
// The IR views of the node ctx has begun, whose pieces a split converter recorded
// (ConvertContext::pieces_for): output i becomes a view of the split tensor, binds the node's
// output i and takes the origin new_origin(i) (the node's own for i = 0).
void emit_pieces(ConvertContext& ctx, const std::function<int(size_t)>& new_origin);
// Helpers shared by the view converters (convert_views.cpp).
// The view's input, a tensor of a kernel dtype; declines otherwise.
ir::Value* view_input(ConvertContext& ctx);
// A constant int argument as a dim of a rank-`rank` tensor, normalized; declines otherwise.
std::optional<int64_t> dim_arg(ConvertContext& ctx, size_t index, int64_t rank);
// Emits view `kind` of x and binds output `output` to it when the profiled output is that view
// of x; declines otherwise.
bool emit_view(ConvertContext& ctx, ir::Value* x, ir::OpKind kind, std::vector<int64_t> dims, size_t output = 0);
// The same, with dims of which some are ints computed at run time (ConvertContext::IntArg with
// an operand): they become the node's operands after x (ir::Node::dim_operands).
bool emit_view_args(ConvertContext& ctx, ir::Value* x, ir::OpKind kind, const std::vector<ConvertContext::IntArg>& dims);
// Helpers of the pointwise converters (convert_pointwise.cpp), shared with the activations'.
// The output is a tensor of the operands' broadcast shape, on their device; declines otherwise.
bool pointwise_output_matches(ConvertContext& ctx, const std::vector<ir::Value*>& operands);
// A tensor operand converted to a 16-bit common dtype first, as eager loads it.
ir::Value* to_common_dtype(ConvertContext& ctx, ir::Value* v, c10::ScalarType common);
// A Python float rounded to a 16-bit dtype, as eager's comparison, clamp and where kernels take it.
ir::Value* literal_as_dtype(ConvertContext& ctx, ir::Value* v, c10::ScalarType common);
// x clamped to [lo, hi] (either may be null), the bounds taken as eager's clamp takes them.
ir::Value* clamp_between(ConvertContext& ctx, ir::Value* x, ir::Value* lo, ir::Value* hi, c10::ScalarType out);
// The elementwise form of a binary op (type promotion, 16-bit operands): max(a, b) and
// min(a, b), whose reduction forms share their names, convert through it.
bool convert_binary_op(ConvertContext& ctx, ir::OpKind kind);

}  // namespace torchfuse
