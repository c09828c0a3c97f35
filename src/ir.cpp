#include "src/ir.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "src/error.h"
#include "src/literal.h"

namespace torchfuse {
namespace ir {

namespace {

struct OpInfo {
  OpKind kind;
  const char* name;
  int arity;
};

// One row per op kind, in enum order.
constexpr OpInfo kOps[] = {
    {OpKind::Neg, "neg", 1},           {OpKind::Abs, "abs", 1},
    {OpKind::Exp, "exp", 1},           {OpKind::Log, "log", 1},
    {OpKind::Sqrt, "sqrt", 1},         {OpKind::Rsqrt, "rsqrt", 1},
    {OpKind::Tanh, "tanh", 1},         {OpKind::Sigmoid, "sigmoid", 1},
    {OpKind::Erf, "erf", 1},           {OpKind::Relu, "relu", 1},
    {OpKind::Gelu, "gelu", 1},         {OpKind::GeluTanh, "gelu_tanh", 1},
    {OpKind::Silu, "silu", 1},         {OpKind::Cast, "cast", 1},
    {OpKind::Reciprocal, "reciprocal", 1}, {OpKind::LogicalNot, "logical_not", 1},
    {OpKind::Sin, "sin", 1},           {OpKind::Cos, "cos", 1},
    {OpKind::Log1p, "log1p", 1},       {OpKind::Expm1, "expm1", 1},
    {OpKind::Exp2, "exp2", 1},         {OpKind::Log2, "log2", 1},
    {OpKind::Log10, "log10", 1},       {OpKind::Floor, "floor", 1},
    {OpKind::Ceil, "ceil", 1},         {OpKind::Round, "round", 1},
    {OpKind::Trunc, "trunc", 1},       {OpKind::Sign, "sign", 1},
    {OpKind::Add, "add", 2},           {OpKind::Sub, "sub", 2},
    {OpKind::Mul, "mul", 2},           {OpKind::Div, "div", 2},
    {OpKind::DivTrunc, "div_trunc", 2}, {OpKind::DivFloor, "div_floor", 2},
    {OpKind::Pow, "pow", 2},           {OpKind::ClampMin, "clamp_min", 2},
    {OpKind::ClampMax, "clamp_max", 2}, {OpKind::Maximum, "maximum", 2},
    {OpKind::Minimum, "minimum", 2},   {OpKind::Eq, "eq", 2},
    {OpKind::Ne, "ne", 2},             {OpKind::Lt, "lt", 2},
    {OpKind::Le, "le", 2},             {OpKind::Gt, "gt", 2},
    {OpKind::Ge, "ge", 2},             {OpKind::LogicalAnd, "logical_and", 2},
    {OpKind::LogicalOr, "logical_or", 2}, {OpKind::Fmod, "fmod", 2},
    {OpKind::Remainder, "remainder", 2}, {OpKind::Atan2, "atan2", 2},
    {OpKind::Fill, "fill", 2},         {OpKind::ExpandAs, "expand_as", 2},
    {OpKind::Where, "where", 3},       {OpKind::Cat, "cat", -1},
    {OpKind::ReduceSum, "reduce_sum", 1}, {OpKind::ReduceMax, "reduce_max", 1},
    {OpKind::ReduceMin, "reduce_min", 1}, {OpKind::CumSum, "cumsum", 1},
    {OpKind::Permute, "permute", 1},
    {OpKind::Unsqueeze, "unsqueeze", 1}, {OpKind::Squeeze, "squeeze", 1},
    {OpKind::Flatten, "flatten", 1},   {OpKind::Reshape, "view", 1},
    {OpKind::Slice, "slice", 1},
    {OpKind::Narrow, "narrow", 1},     {OpKind::Chunk, "chunk", 1},
    {OpKind::Split, "split", 1},       {OpKind::Select, "select", 1},
    {OpKind::Expand, "expand", 1},     {OpKind::Contiguous, "contiguous", 1},
    {OpKind::CatPiece, "cat_piece", 1},
    {OpKind::Opaque, "opaque", -1},
};

const OpInfo& info(OpKind kind) {
  const auto& row = kOps[static_cast<int>(kind)];
  TORCHFUSE_INTERNAL_ASSERT(row.kind == kind, "op table out of order at ", static_cast<int>(kind));
  return row;
}

std::string join_ints(const std::vector<int64_t>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str();
}

// Views' dims with the ints computed at run time as their values: "3, 0, %12, 1".
std::string dims_str(const Node& n) {
  std::ostringstream os;
  for (size_t i = 0; i < n.dims.size(); ++i) {
    const int k = i < n.dim_operands.size() ? n.dim_operands[i] : 0;
    os << (i ? ", " : "");
    if (k > 0 && k < static_cast<int>(n.inputs.size())) os << "%" << n.inputs[k]->id;
    else os << n.dims[i];
  }
  return os.str();
}

std::string value_ref(const Value* v) {
  if (v->constant) return format_scalar_literal(*v->constant);
  if (v->reduced_count_minus) {
    return *v->reduced_count_minus == 0 ? "N" : "max(N - " + format_double(*v->reduced_count_minus) + ", 0)";
  }
  return "%" + std::to_string(v->id);
}

}  // namespace

const char* op_name(OpKind kind) { return info(kind).name; }
int op_arity(OpKind kind) { return info(kind).arity; }

bool is_pointwise(OpKind kind) {
  return kind != OpKind::Opaque && !is_reduction(kind) && !is_view(kind) && !is_scan(kind);
}
bool is_view(OpKind kind) {
  switch (kind) {
    case OpKind::Permute: case OpKind::Unsqueeze: case OpKind::Squeeze: case OpKind::Flatten:
    case OpKind::Reshape: case OpKind::Slice: case OpKind::Narrow: case OpKind::Chunk: case OpKind::Split:
    case OpKind::Select: case OpKind::Expand: case OpKind::Contiguous: case OpKind::CatPiece:
      return true;
    default:
      return false;
  }
}
bool computes_nothing(OpKind kind) { return is_view(kind) || kind == OpKind::ExpandAs; }

bool is_reduction(OpKind kind) {
  return kind == OpKind::ReduceSum || kind == OpKind::ReduceMax || kind == OpKind::ReduceMin;
}
bool is_scan(OpKind kind) { return kind == OpKind::CumSum; }
bool along_dims(OpKind kind) { return is_reduction(kind) || is_scan(kind); }
bool exact_on_16bit_operands(OpKind kind) {
  switch (kind) {
    case OpKind::Neg: case OpKind::Abs: case OpKind::Relu: case OpKind::Maximum: case OpKind::Minimum:
    case OpKind::ClampMin: case OpKind::ClampMax: case OpKind::Where: case OpKind::Cat:
    // Integral values of a 16-bit value's magnitude, and an fmod (a - n * b exactly, below |b|),
    // are 16-bit values too.
    case OpKind::Floor: case OpKind::Ceil: case OpKind::Round: case OpKind::Trunc: case OpKind::Sign:
    case OpKind::Fmod:
      return true;
    default: return false;
  }
}
bool is_comparison(OpKind kind) {
  switch (kind) {
    case OpKind::Eq: case OpKind::Ne: case OpKind::Lt:
    case OpKind::Le: case OpKind::Gt: case OpKind::Ge:
      return true;
    default:
      return false;
  }
}

const char* dtype_short_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return "f32";
    case c10::ScalarType::Half: return "f16";
    case c10::ScalarType::BFloat16: return "bf16";
    case c10::ScalarType::Double: return "f64";
    case c10::ScalarType::Long: return "i64";
    case c10::ScalarType::Int: return "i32";
    case c10::ScalarType::Short: return "i16";
    case c10::ScalarType::Char: return "i8";
    case c10::ScalarType::Byte: return "u8";
    case c10::ScalarType::Bool: return "b8";
    default: return c10::toString(dtype);
  }
}

Type Type::tensor(c10::ScalarType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                  c10::Device device) {
  Type t;
  t.kind = ValueKind::Tensor;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  t.strides = std::move(strides);
  t.device = device;
  return t;
}

Type Type::scalar(c10::ScalarType dtype) {
  Type t;
  t.kind = ValueKind::Scalar;
  t.dtype = dtype;
  return t;
}

Type Type::other() { return Type{}; }

int64_t Type::numel() const {
  int64_t n = 1;
  for (auto s : sizes) n *= s;
  return n;
}

std::string Type::str() const {
  switch (kind) {
    case ValueKind::Other:
      return "other";
    case ValueKind::Scalar:
      return dtype_short_name(dtype);
    case ValueKind::Tensor:
      break;
  }
  std::string s = std::string(dtype_short_name(dtype)) + "[" + join_ints(sizes) + "]";
  if (strides != contiguous_strides(sizes)) s += "{" + join_ints(strides) + "}";
  if (device.is_cuda()) s += "@cuda:" + std::to_string(device.index());
  return s;
}

std::string shape_str(const std::vector<int64_t>& sizes) { return "[" + join_ints(sizes) + "]"; }

bool rows_across_lines(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t block) {
  const auto rank = static_cast<int64_t>(sizes.size());
  if (strides.size() != sizes.size() || block < 1 || block > rank) return false;
  int64_t inner = rank - 1;
  while (inner >= rank - block && sizes[inner] == 1) --inner;
  if (inner < rank - block || strides[inner] == 1) return false;
  for (int64_t d = 0; d < rank - block; ++d)
    if (sizes[d] > 1 && strides[d] == 1) return true;
  return false;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

std::optional<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// ---- Graph ----

Value* Graph::new_value(Type type) {
  value_storage_.push_back(std::make_unique<Value>());
  Value* v = value_storage_.back().get();
  v->id = static_cast<int>(values_.size());
  v->type = std::move(type);
  values_.push_back(v);
  return v;
}

Value* Graph::add_input(Type type, std::string debug_name) {
  Value* v = new_value(std::move(type));
  v->debug_name = std::move(debug_name);
  inputs_.push_back(v);
  return v;
}

Value* Graph::add_scalar_constant(const c10::Scalar& value) {
  c10::ScalarType dtype = value.isBoolean()    ? c10::ScalarType::Bool
                          : value.isIntegral(false) ? c10::ScalarType::Long
                                                    : c10::ScalarType::Double;
  Value* v = new_value(Type::scalar(dtype));
  v->constant = value;
  return v;
}

Value* Graph::add_reduced_count(double offset) {
  Value* v = new_value(Type::scalar(c10::ScalarType::Double));
  v->reduced_count_minus = offset;
  return v;
}

Value* Graph::add_tensor_constant(Type type, std::string debug_name) {
  Value* v = new_value(std::move(type));
  v->is_constant_tensor = true;
  v->debug_name = std::move(debug_name);
  return v;
}

Value* Graph::add_other(std::string debug_name) {
  Value* v = new_value(Type::other());
  v->debug_name = std::move(debug_name);
  return v;
}

Node* Graph::add_node(OpKind kind, std::vector<Value*> inputs, std::vector<Type> output_types) {
  node_storage_.push_back(std::make_unique<Node>());
  Node* n = node_storage_.back().get();
  n->id = static_cast<int>(nodes_.size());
  n->kind = kind;
  n->inputs = std::move(inputs);
  for (Value* in : n->inputs) in->uses.push_back(n);
  for (auto& t : output_types) {
    Value* out = new_value(std::move(t));
    out->producer = n;
    n->outputs.push_back(out);
  }
  nodes_.push_back(n);
  return n;
}

std::vector<Value*> Graph::free_values() const {
  std::vector<Value*> out;
  for (Value* v : values_) {
    if (v->producer) continue;
    if (std::find(inputs_.begin(), inputs_.end(), v) != inputs_.end()) continue;
    out.push_back(v);
  }
  return out;
}

// ---- printer ----

namespace {

// Ops whose result jumps where an operand crosses a bound.
bool is_discontinuous(const Node& n) {
  switch (n.kind) {
    case OpKind::DivTrunc: case OpKind::DivFloor: case OpKind::LogicalNot: case OpKind::LogicalAnd:
    case OpKind::LogicalOr: case OpKind::Floor: case OpKind::Ceil: case OpKind::Round: case OpKind::Trunc:
    case OpKind::Sign: case OpKind::Fmod: case OpKind::Remainder:
      return true;
    // A cast to 16 bits rounds there in the float64 reference too.
    case OpKind::Cast: return !c10::isFloatingType(n.output()->type.dtype) || is_16bit_float(n.output()->type.dtype);
    default: return is_comparison(n.kind);
  }
}

}  // namespace

void mark_discontinuity_feeds(Graph& graph) {
  const auto& nodes = graph.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    for (Value* out : (*it)->outputs) {
      // Opaque users run through ATen, which reads the value as eager stored it.
      out->feeds_discontinuity = out->cast_to_own_dtype || std::any_of(out->uses.begin(), out->uses.end(), [](const Node* u) {
        return u->kind != OpKind::Opaque && (is_discontinuous(*u) || u->output()->feeds_discontinuity);
      });
      out->read_by_selection = std::any_of(out->uses.begin(), out->uses.end(), [](const Node* u) {
        if (u->kind == OpKind::ReduceMax || u->kind == OpKind::ReduceMin) return true;
        return exact_on_16bit_operands(u->kind) && u->output()->read_by_selection;
      });
    }
  }
}

std::string to_string(const Node& node) {
  std::ostringstream os;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    os << (i ? ", " : "") << "%" << node.outputs[i]->id << " : " << node.outputs[i]->type.str();
  }
  os << " = " << (node.kind == OpKind::Opaque ? node.opaque_name : op_name(node.kind));
  std::vector<std::string> attrs;
  if (along_dims(node.kind) || is_view(node.kind) || node.kind == OpKind::Cat) {
    attrs.push_back("dims=[" + dims_str(node) + "]");
    if (node.keepdim) attrs.push_back("keepdim");
  }
  if (node.kind == OpKind::Cast) attrs.push_back(std::string("to=") + dtype_short_name(node.output()->type.dtype));
  if (node.kind != OpKind::Opaque && node.kind != OpKind::Cast && !node.outputs.empty() &&
      node.compute_dtype != node.output()->type.dtype &&
      node.compute_dtype != c10::ScalarType::Undefined) {
    attrs.push_back(std::string("compute=") + dtype_short_name(node.compute_dtype));
  }
  if (node.side_effects) attrs.push_back("side_effects");
  if (!attrs.empty()) {
    os << "[";
    for (size_t i = 0; i < attrs.size(); ++i) os << (i ? ", " : "") << attrs[i];
    os << "]";
  }
  os << "(";
  for (size_t i = 0; i < node.inputs.size(); ++i) os << (i ? ", " : "") << value_ref(node.inputs[i]);
  os << ")";
  return os.str();
}

std::string to_string(const Graph& graph) {
  std::ostringstream os;
  os << "graph(";
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value* v = graph.inputs()[i];
    os << (i ? ", " : "") << "%" << v->id << " : " << v->type.str();
  }
  os << ") {\n";
  for (const Value* v : graph.free_values()) {
    if (v->constant || v->reduced_count_minus || v->uses.empty()) continue;  // printed inline at their uses
    os << "  %" << v->id << " : " << v->type.str() << " = "
       << (v->is_constant_tensor ? "constant_tensor" : "other") << "\n";
  }
  for (const Node* n : graph.nodes()) os << "  " << to_string(*n) << "\n";
  os << "  return (";
  for (size_t i = 0; i < graph.outputs().size(); ++i) os << (i ? ", " : "") << value_ref(graph.outputs()[i]);
  os << ")\n}\n";
  return os.str();
}

// ---- verifier ----

namespace {

void verify_pointwise_types(const Node& n, std::vector<std::string>& problems) {
  const Type& out = n.output()->type;
  if (!out.is_tensor()) {
    problems.push_back(to_string(n) + ": pointwise output is not a tensor");
    return;
  }
  std::vector<int64_t> shape;
  for (const Value* in : n.inputs) {
    if (in->type.kind == ValueKind::Other) {
      problems.push_back(to_string(n) + ": input %" + std::to_string(in->id) + " is untyped");
      continue;
    }
    if (!in->type.is_tensor()) continue;
    auto b = broadcast_shapes(shape, in->type.sizes);
    if (!b) {
      problems.push_back(to_string(n) + ": input shapes do not broadcast");
      return;
    }
    shape = *b;
    if (in->type.device != out.device && !is_host_scalar(in->type, out.device)) {
      problems.push_back(to_string(n) + ": inputs on another device");
    }
  }
  if (shape != out.sizes) problems.push_back(to_string(n) + ": output shape is not the broadcast of its inputs");
  if (is_comparison(n.kind) && out.dtype != c10::ScalarType::Bool) {
    problems.push_back(to_string(n) + ": comparison output must be bool");
  }
}

void verify_reduction_types(const Node& n, std::vector<std::string>& problems) {
  const Type& in = n.inputs.at(0)->type;
  const Type& out = n.output()->type;
  if (!in.is_tensor() || !out.is_tensor()) {
    problems.push_back(to_string(n) + ": reduction of a non-tensor");
    return;
  }
  std::vector<int64_t> expected;
  for (int64_t d = 0; d < in.rank(); ++d) {
    const bool reduced = std::find(n.dims.begin(), n.dims.end(), d) != n.dims.end();
    if (!reduced) expected.push_back(in.sizes[d]);
    else if (n.keepdim) expected.push_back(1);
  }
  for (int64_t d : n.dims) {
    if (d < 0 || d >= std::max<int64_t>(in.rank(), 1)) problems.push_back(to_string(n) + ": dim out of range");
  }
  if (!std::is_sorted(n.dims.begin(), n.dims.end())) problems.push_back(to_string(n) + ": dims not sorted");
  if (expected != out.sizes) problems.push_back(to_string(n) + ": output shape does not match the reduced dims");
}

void verify_scan_types(const Node& n, std::vector<std::string>& problems) {
  const Type& in = n.inputs.at(0)->type;
  const Type& out = n.output()->type;
  if (!in.is_tensor() || !out.is_tensor()) {
    problems.push_back(to_string(n) + ": scan of a non-tensor");
    return;
  }
  if (n.dims.size() != 1 || n.dims[0] < 0 || n.dims[0] >= in.rank()) problems.push_back(to_string(n) + ": scans one dim in range");
  if (out.sizes != in.sizes) problems.push_back(to_string(n) + ": output shape is not the input's");
}

void verify_view_types(const Node& n, std::vector<std::string>& problems) {
  const Type& in = n.inputs.at(0)->type;
  const Type& out = n.output()->type;
  if (!in.is_tensor() || !out.is_tensor()) {
    problems.push_back(to_string(n) + ": view of a non-tensor");
    return;
  }
  if (!n.dim_operands.empty() && n.dim_operands.size() != n.dims.size()) {
    problems.push_back(to_string(n) + ": dim_operands is not parallel to dims");
  }
  for (int k : n.dim_operands) {
    if (k <= 0) continue;
    if (k >= static_cast<int>(n.inputs.size())) {
      problems.push_back(to_string(n) + ": a dim operand index is past its inputs");
      continue;
    }
    const Type& t = n.inputs.at(static_cast<size_t>(k))->type;
    if (!t.is_scalar() || t.dtype != c10::ScalarType::Long) problems.push_back(to_string(n) + ": a dim operand is not an int");
  }
  const auto expected = view_output_sizes(n.kind, n.dims, in.sizes);
  if (!expected) problems.push_back(to_string(n) + ": dims do not fit the input " + shape_str(in.sizes));
  else if (*expected != out.sizes) problems.push_back(to_string(n) + ": output shape is not the view of its input");
  if (in.dtype != out.dtype || in.device != out.device) problems.push_back(to_string(n) + ": a view changes no dtype or device");
}

}  // namespace

std::vector<std::string> verify(const Graph& graph) {
  std::vector<std::string> problems;
  std::set<const Value*> defined;
  for (const Value* v : graph.inputs()) defined.insert(v);
  for (const Value* v : graph.free_values()) defined.insert(v);
  for (const Node* n : graph.nodes()) {
    const int runtime_dims = static_cast<int>(std::count_if(n->dim_operands.begin(), n->dim_operands.end(), [](int k) { return k > 0; }));
    const int arity = op_arity(n->kind) + runtime_dims;
    if (op_arity(n->kind) >= 0 && static_cast<int>(n->inputs.size()) != arity) {
      problems.push_back(to_string(*n) + ": expects " + std::to_string(arity) + " inputs");
    }
    for (const Value* in : n->inputs) {
      if (!defined.count(in)) problems.push_back(to_string(*n) + ": uses %" + std::to_string(in->id) + " before its definition");
      if (std::find(in->uses.begin(), in->uses.end(), n) == in->uses.end()) {
        problems.push_back(to_string(*n) + ": missing from the use list of %" + std::to_string(in->id));
      }
    }
    for (const Value* out : n->outputs) {
      if (out->producer != n) problems.push_back(to_string(*n) + ": output's producer is wrong");
      if (!defined.insert(out).second) problems.push_back(to_string(*n) + ": redefines %" + std::to_string(out->id));
    }
    if (n->kind == OpKind::Opaque) continue;
    if (n->outputs.size() != 1) {
      problems.push_back(to_string(*n) + ": must have one output");
      continue;
    }
    if (is_pointwise(n->kind)) verify_pointwise_types(*n, problems);
    else if (is_view(n->kind)) verify_view_types(*n, problems);
    else if (is_scan(n->kind)) verify_scan_types(*n, problems);
    else verify_reduction_types(*n, problems);
  }
  for (const Value* v : graph.values()) {
    for (const Node* user : v->uses) {
      if (std::find(user->inputs.begin(), user->inputs.end(), v) == user->inputs.end()) {
        problems.push_back("%" + std::to_string(v->id) + " lists a use that does not read it");
      }
    }
  }
  for (const Value* v : graph.outputs()) {
    if (!defined.count(v)) problems.push_back("graph output %" + std::to_string(v->id) + " is undefined");
  }
  return problems;
}

void verify_or_throw(const Graph& graph, const std::string& after_what) {
  const auto problems = verify(graph);
  if (problems.empty()) return;
  std::string msg = "IR verification failed after " + after_what + ":\n";
  for (const auto& p : problems) msg += "  " + p + "\n";
  msg += to_string(graph);
  TORCHFUSE_INTERNAL_ASSERT(false, msg);
}

}  // namespace ir
}  // namespace torchfuse
