// torchfuse IR: an SSA graph of typed values and ops, built from a TorchScript graph for one
// input signature. Values carry dtype, sizes, strides and device. Nodes are never edited after
// the frontend builds them: passes record their decisions beside the graph (FusionPlan).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

namespace torchfuse {
namespace ir {

enum class OpKind {
  // unary pointwise
  Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Erf, Relu, Gelu, GeluTanh, Silu, Cast,
  Reciprocal, LogicalNot, Sin, Cos, Log1p, Expm1, Exp2, Log2, Log10, Floor, Ceil, Round, Trunc, Sign,
  // binary pointwise

  Add, Sub, Mul, Div, DivTrunc, DivFloor, Pow, ClampMin, ClampMax, Maximum, Minimum,
  Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, Fmod, Remainder, Atan2,
  // Fill(like, value): `value` (a number) broadcast to the shape of the tensor `like`, whose
  // elements it does not read (zeros_like, ones_like, full_like).
  Fill,
  // ExpandAs(x, like): x broadcast to the shape of `like`, whose elements it does not read
  // (x.expand_as(like): like's sizes are only known per call, so this is no view with constant
  // dims; it computes nothing, see computes_nothing).
  ExpandAs,
  // ternary pointwise
  Where,
  // Cat(p_0, ..., p_{n-1}): aten::cat of n >= 2 tensors along dims[0]. Its operands are CatPiece
  // views, each of the output's shape (the piece laid into its range of the dim); each output
  // element is the one of the piece whose range holds its index along the dim, which the kernel
  // picks per element (codegen/pointwise.cpp). The ranges come from the call's sizes
  // (runtime: place_cat_pieces).
  Cat,
  // reductions over `dims` (keepdim as attribute)
  ReduceSum, ReduceMax, ReduceMin,
  // CumSum(x): the inclusive running sum of x along dims[0] (aten::cumsum), the shape of x. Only
  // the row schedule computes it, along its rows (a scan: passes/fuse_reductions.cpp).
  CumSum,
  // views (pointwise groups read them as index maps; see passes/view_steps.h), `dims` says how:
  // Permute: output dim i is input dim dims[i]. Unsqueeze: size-1 dims inserted at the output
  // positions `dims` (sorted). Squeeze: the input's size-1 dims `dims` (sorted) removed.
  // Flatten: input dims [dims[0], dims[1]] merged into one. Reshape: dims = the target sizes
  // (at most one -1, inferred), the elements in row-major order (x.view(sizes), and reshape
  // where it is a view: at::view's rule for which strides allow it).
  Permute, Unsqueeze, Squeeze, Flatten, Reshape,
  // Views that take part of a dim (DimRange says which, from the dim's size at run time, as
  // eager computes it). Slice: dims = [dim, start, end, step] (None start 0, None end INT64_MAX;
  // negative and out-of-range ends clamped). Narrow: [dim, start, length], or [dim, start,
  // length, total] for a piece of split_with_sizes (the dim must have size `total`). Chunk:
  // [dim, chunks, index, count] and Split: [dim, split_size, index, count], piece `index` of
  // chunk / split (`count` the number of pieces the list must have, -1 when only indexed).
  Slice, Narrow, Chunk, Split,
  // Select: dims = [dim, index] (negative from the end), or [dim, index, size] for a piece of
  // unbind (the dim must have size `size`). The dim goes away.
  Select,
  // Expand: dims = the target sizes (-1 keeps the input's; new leading dims), stride 0 where a
  // size-1 dim grows.
  Expand,
  // Contiguous: the same elements; eager's x.contiguous(). Fused, the group's output is written
  // contiguous anyway, so it only marks a view path (view_paths).
  Contiguous,
  // CatPiece: piece `index` of a cat along `dim`, in the cat's output index space: dims = [dim,
  // index, offset, total] (the profile's offset of the piece along the dim and the cat's size
  // there; the runtime takes both from each call's sizes). Only a Cat reads it: the element at
  // index i of the dim is the piece's i - offset, defined where i is in the piece's range.
  CatPiece,
  // anything else: runs through ATen, never fused
  Opaque,
};

const char* op_name(OpKind kind);
bool is_pointwise(OpKind kind);
bool is_reduction(OpKind kind);
// CumSum: each element depends on the elements before it along a dim (neither pointwise nor a
// reduction).
bool is_scan(OpKind kind);
// Reductions and scans: the node iterates over its input's elements along dims, so that only a
// reduction schedule computes it.
bool along_dims(OpKind kind);
bool is_comparison(OpKind kind);
// The op's result is exact when its operands are 16-bit values (an eager op's operands are, and a
// number clamped to or selected beside one is rounded to its dtype): rounding it again changes
// nothing, so kernels do not.
bool exact_on_16bit_operands(OpKind kind);
// Permute, Unsqueeze, Squeeze, Flatten, Reshape, Slice, Narrow, Chunk, Split, Select, Expand,
// Contiguous, CatPiece: they change which element is which, not values.
bool is_view(OpKind kind);
// Views and ExpandAs: a group of only these computes nothing (ATen's views cost no kernel).
bool computes_nothing(OpKind kind);
// The output sizes of view `kind` with `dims` on an input of `in` sizes, or nullopt when the
// dims do not fit (out of range, not a permutation, squeezing a dim that is not size 1, a range
// eager rejects). See src/ir_views.cpp.
std::optional<std::vector<int64_t>> view_output_sizes(OpKind kind, const std::vector<int64_t>& dims,
                                                      const std::vector<int64_t>& in);
// The elements of one dim that a Slice, Narrow, Chunk or Split takes: start, start + step, ...
// (length of them).
struct DimRange {
  int64_t start = 0;
  int64_t length = 0;
  int64_t step = 1;
};
// The range view `kind` with `dims` takes of a dim of size `size`, as eager computes it, or
// nullopt where eager raises (narrow out of range, a split into another number of pieces than
// the list unpacks, sizes that do not add up to the dim, a piece index out of range).
std::optional<DimRange> view_range(OpKind kind, const std::vector<int64_t>& dims, int64_t size);
// Select with `dims` on a dim of size `size`: the index it reads (negative counted from the
// end), or nullopt where eager raises (out of range; unbind's size differs).
std::optional<int64_t> select_index(const std::vector<int64_t>& dims, int64_t size);
// Number of inputs the op takes (-1: any, for Opaque); a view takes one more per entry of its
// dims computed at run time (Node::dim_operands).
int op_arity(OpKind kind);

enum class ValueKind { Tensor, Scalar, Other };

struct Type {
  ValueKind kind = ValueKind::Other;
  c10::ScalarType dtype = c10::ScalarType::Undefined;  // tensors and scalars
  std::vector<int64_t> sizes;                          // tensors only
  std::vector<int64_t> strides;                        // tensors only
  c10::Device device = c10::Device(c10::DeviceType::CPU);

  static Type tensor(c10::ScalarType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                     c10::Device device);
  static Type scalar(c10::ScalarType dtype);
  static Type other();
  int64_t numel() const;
  int64_t rank() const { return static_cast<int64_t>(sizes.size()); }
  bool is_tensor() const { return kind == ValueKind::Tensor; }
  bool is_scalar() const { return kind == ValueKind::Scalar; }
  // "f32[8192, 8192]" (strides shown only when not contiguous), "f64" for scalars, "other".
  std::string str() const;
};

// Short dtype names used by the printer: f32, f16, bf16, f64, i64, i32, i16, i8, u8, b8.
const char* dtype_short_name(c10::ScalarType dtype);
// fp16 or bf16: stored in 16 bits, computed in float registers.
inline bool is_16bit_float(c10::ScalarType t) { return t == c10::ScalarType::Half || t == c10::ScalarType::BFloat16; }

// A 0-dim CPU tensor read by ops on a GPU: eager hands its value to the GPU kernel as a number
// (TensorIterator's CPU scalars), and so do fused kernels (a kernel parameter read on the host).
inline bool is_host_scalar(const Type& t, const c10::Device& compute_device) {
  return t.is_tensor() && t.sizes.empty() && t.device.is_cpu() && !compute_device.is_cpu();
}

struct Node;

struct Value {
  int id = -1;  // printed as %id; dense, in creation order
  Type type;
  std::optional<c10::Scalar> constant;  // a scalar literal (Python number in the source)
  // The number of elements a reduction group reduces, minus this offset, at 0 at least (a mean's
  // N, a variance's N - correction). Known per call, not when the graph is compiled, so that one
  // specialization serves every size.
  std::optional<double> reduced_count_minus;
  bool is_constant_tensor = false;      // a frozen parameter or buffer
  // Eager stores this value in its fp16/bf16 dtype (it is an ATen op's result, not a composite's
  // intermediate). Kernels keep it in a float register; see feeds_discontinuity.
  bool eager_rounds = false;
  // A comparison, a truncating or floor division, a logical op or a cast to an integral type
  // reads this value or one computed from it (mark_discontinuity_feeds): where eager_rounds too,
  // kernels round the register to the 16-bit dtype where it is made, as eager does, since a value
  // an ulp off may land on the other side of a bound there. Elsewhere the rounding only moves
  // results within the dtype's tolerance, and costs a conversion per op.
  bool feeds_discontinuity = false;
  // An explicit cast to its own 16-bit dtype read it (`t.to(torch.bfloat16)` of a bf16 t): eager's
  // identity, but the float64 reference rounds there, so kernels round it as for a discontinuity.
  bool cast_to_own_dtype = false;
  // A max or min reduction reads this value, directly or through ops exact on 16-bit operands
  // (mark_discontinuity_feeds): eager's max is bit-equal to one stored element, so a row's max
  // minus the row is exactly 0 at the max. Where eager_rounds too, kernels round the register
  // where it is made (fuzz seed 5, program 1321). Unlike feeds_discontinuity, values further up
  // are not rounded for it: the max and the element it is compared with share the one register.
  bool read_by_selection = false;
  // The strides eager gives this value (the profile's), when an ATen op's result: `type.strides`
  // are those of a fused group's output (contiguous), but the value arrives with these when its
  // op stays in ATen (a transposed input makes a transposed sum).
  std::vector<int64_t> eager_strides;
  Node* producer = nullptr;             // null for graph inputs and constants
  std::vector<Node*> uses;              // one entry per use, in node order
  int source_index = -1;                // the TorchScript value it stands for (frontend table), -1 if none
  std::string debug_name;               // TorchScript's name, if any
};

struct Node {
  int id = -1;  // position in Graph::nodes (topological order)
  OpKind kind = OpKind::Opaque;
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  // attributes
  std::vector<int64_t> dims;        // reductions: sorted, non-negative; views: see OpKind
  // Views: for each entry of `dims` that an int computed at run time gives (size arithmetic:
  // x[..., : x.size(-1) // 2], x.view(B, T, H, -1)), the index in `inputs` of that int (a
  // scalar operand after the viewed tensor, inputs[0]); 0 for a constant. Empty when every
  // entry is a constant. `dims` holds the profiled values, which the plan is made for; the
  // runtime reads each call's own (passes/view_steps.h).
  std::vector<int> dim_operands;
  bool keepdim = false;             // reductions
  c10::ScalarType compute_dtype = c10::ScalarType::Undefined;  // dtype the op computes in (before opmath)
  std::string opaque_name;          // Opaque: the ATen/prim op name
  std::vector<int64_t> pinned_sizes;  // reductions: sizes the reduced dims must have (layer_norm's normalized_shape)
  bool side_effects = false;        // Opaque: mutates or has side effects; fusion must not cross it
  int origin = -1;                  // index of the TorchScript node it came from, -1 if none
  // That node's op, unqualified ("softmax", "add_"): kernel names say what a group computes
  // (passes/group_pattern.h), which the decomposed IR ops alone do not.
  std::string origin_op;

  Value* output() const { return outputs.at(0); }
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Value* add_input(Type type, std::string debug_name = "");
  Value* add_scalar_constant(const c10::Scalar& value);
  // N - offset for the reduction group the value is used in (see Value::reduced_count_minus).
  Value* add_reduced_count(double offset);
  Value* add_tensor_constant(Type type, std::string debug_name = "");
  Value* add_other(std::string debug_name = "");  // an untyped value (lists, None, strings)
  // Appends a node; its output types are given (the frontend knows them from profiling).
  Node* add_node(OpKind kind, std::vector<Value*> inputs, std::vector<Type> output_types);
  void add_output(Value* v) { outputs_.push_back(v); }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Node*>& nodes() const { return nodes_; }
  const std::vector<Value*>& values() const { return values_; }
  // Constants and other values that are neither inputs nor node outputs, in creation order.
  std::vector<Value*> free_values() const;

 private:
  Value* new_value(Type type);

  std::vector<std::unique_ptr<Value>> value_storage_;
  std::vector<std::unique_ptr<Node>> node_storage_;
  std::vector<Value*> values_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Node*> nodes_;
};

// Sets Value::feeds_discontinuity and Value::read_by_selection on every value of the graph.
void mark_discontinuity_feeds(Graph& graph);

// Prints one node as "%5 : f32[4, 8] = add(%3, %4)".
std::string to_string(const Node& node);
// The whole graph: inputs, constants, nodes, outputs. Stable: same graph, same text.
std::string to_string(const Graph& graph);

// Checks SSA form and types: every use defined before it, use lists consistent, arity,
// pointwise shapes broadcast to the output, comparison outputs bool, reduction dims in range.
// Returns the problems found (empty when the graph is well formed).
std::vector<std::string> verify(const Graph& graph);
// verify() and throw an internal error listing the problems.
void verify_or_throw(const Graph& graph, const std::string& after_what);

// The broadcast of two shapes (right-aligned, size 1 stretches), or nullopt if incompatible.
std::optional<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b);
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);
// Rows of the trailing `block` dims read across lines: the innermost of those dims of size > 1
// lies a stride apart, and a dim before them of size > 1 has stride 1 (a transposed layout).
bool rows_across_lines(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t block);
// "[64, 1000]", as the printer writes shapes (for messages).
std::string shape_str(const std::vector<int64_t>& sizes);

}  // namespace ir
}  // namespace torchfuse
