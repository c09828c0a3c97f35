#include "src/frontend.h"

#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <map>
#include <string>

#include "src/convert_context.h"
#include "src/error.h"
#include "src/graph_constants.h"
#include "src/literal.h"

namespace torchfuse {

// ---- dtype helpers ----

bool is_floating(c10::ScalarType dtype) { return c10::isFloatingType(dtype); }

bool is_kernel_dtype(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: case c10::ScalarType::Half: case c10::ScalarType::BFloat16:
    case c10::ScalarType::Double: case c10::ScalarType::Long: case c10::ScalarType::Int:
    case c10::ScalarType::Short: case c10::ScalarType::Char: case c10::ScalarType::Byte:
    case c10::ScalarType::Bool:
      return true;
    default:
      return false;
  }
}

c10::ScalarType opmath_type(c10::ScalarType dtype) {
  if (dtype == c10::ScalarType::Half || dtype == c10::ScalarType::BFloat16) return c10::ScalarType::Float;
  return dtype;
}

namespace {

c10::ScalarType promote_skip_undefined(c10::ScalarType a, c10::ScalarType b) {
  if (a == c10::ScalarType::Undefined) return b;
  if (b == c10::ScalarType::Undefined) return a;
  return c10::promoteTypes(a, b);
}

// ATen's rule for combining a higher-priority category with a lower one: the lower one only
// matters when it is of a "higher kind" (floating over integral over bool).
c10::ScalarType combine_categories(c10::ScalarType higher, c10::ScalarType lower) {
  if (is_floating(higher)) return higher;
  if (higher == c10::ScalarType::Bool || is_floating(lower)) return promote_skip_undefined(higher, lower);
  if (higher != c10::ScalarType::Undefined) return higher;
  return lower;
}

}  // namespace

c10::ScalarType promote_types_of(const std::vector<const ir::Value*>& operands) {
  // Three priority classes, as in eager: dimensioned tensors, 0-dim tensors, Python scalars
  // (a Python float counts as the default dtype, float32).
  c10::ScalarType dim_result = c10::ScalarType::Undefined;
  c10::ScalarType zero_result = c10::ScalarType::Undefined;
  c10::ScalarType wrapped_result = c10::ScalarType::Undefined;
  for (const ir::Value* v : operands) {
    const ir::Type& t = v->type;
    if (t.is_tensor() && t.rank() > 0) {
      dim_result = promote_skip_undefined(dim_result, t.dtype);
    } else if (t.is_tensor()) {
      zero_result = promote_skip_undefined(zero_result, t.dtype);
    } else if (t.is_scalar()) {
      const c10::ScalarType s = t.dtype == c10::ScalarType::Double ? c10::ScalarType::Float : t.dtype;
      wrapped_result = promote_skip_undefined(wrapped_result, s);
    }
  }
  return combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
}

// ---- decline reasons ----

std::string describe_constant(const c10::IValue& v) {
  if (v.isNone()) return "None";
  if (v.isBool()) return v.toBool() ? "True" : "False";
  if (v.isInt()) return std::to_string(v.toInt());
  if (v.isDouble()) return format_double(v.toDouble());
  if (v.isString()) return "'" + v.toStringRef() + "'";
  if (v.isIntList()) {
    std::string s = "[";
    for (int64_t d : v.toIntVector()) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
    return s + "]";
  }
  return "a " + std::string(v.tagKind());
}

std::string not_kernel_dtype(const std::string& what, c10::ScalarType dtype) {
  return what + " dtype " + ir::dtype_short_name(dtype) + ": fused kernels compute on floating, integer and bool types";
}

std::string not_a_tensor(const std::string& what, const ir::Type& type) {
  if (!type.is_scalar()) return what + " is not a tensor";
  const char* number = type.dtype == c10::ScalarType::Bool ? "a bool" : is_floating(type.dtype) ? "a float" : "an int";
  return what + " is " + number + ", not a tensor";
}

// ---- ConvertContext ----

void ConvertContext::begin(torch::jit::Node* node, int origin) {
  node_ = node;
  origin_ = origin;
  decline_reason_.clear();
}

size_t ConvertContext::num_inputs() const { return node_->inputs().size(); }

bool ConvertContext::decline(std::string why) {
  decline_reason_ = std::move(why);
  return false;
}

std::string ConvertContext::arg_name(size_t i) const {
  const c10::FunctionSchema* schema = node_->maybeSchema();
  if (schema && i < schema->arguments().size()) return schema->arguments()[i].name();
  return "argument " + std::to_string(i);
}

std::string ConvertContext::arg_str(size_t i) const {
  auto c = constant(i);
  return c ? arg_name(i) + "=" + describe_constant(*c) : arg_name(i);
}

std::string ConvertContext::op_name() const { return node_->kind().toUnqualString(); }

std::string ConvertContext::op_with_arity() const {
  const size_t n = num_inputs();
  return op_name() + " with " + std::to_string(n) + (n == 1 ? " argument" : " arguments");
}

bool ConvertContext::needs_inputs(size_t n) {
  if (num_inputs() >= n) return true;
  return decline(op_with_arity() + ": expected at least " + std::to_string(n));
}

std::string ConvertContext::runtime_type_argument() const {
  const c10::FunctionSchema* schema = node_->maybeSchema();
  if (!schema) return "";
  for (size_t i = 0; i < schema->arguments().size() && i < node_->inputs().size(); ++i) {
    const std::string& name = schema->arguments()[i].name();
    if (name != "dtype" && name != "device") continue;
    const torch::jit::Value* v = node_->inputs()[i];
    if (torch::jit::toIValue(v)) continue;  // a constant
    const torch::jit::Node* from = v->node();
    const bool read_from_fixed = (from->kind() == c10::prim::dtype || from->kind() == c10::prim::device) &&
                                 !runtime_typed(from->input(0));
    if (!read_from_fixed) return name + " (%" + v->debugName() + ")";
  }
  return "";
}

void ConvertContext::note_output_types() {
  bool varies = !node_->blocks().empty() || !runtime_type_argument().empty();
  for (const torch::jit::Value* v : values_read(node_)) varies = varies || runtime_typed(v);
  if (!varies) return;
  for (const torch::jit::Value* out : node_->outputs()) runtime_typed_.insert(out);
}

ir::Value* ConvertContext::ir_value(const torch::jit::Value* v) const {
  auto it = env_.find(v);
  return it == env_.end() ? nullptr : it->second;
}

ir::Value* ConvertContext::in(size_t i) const {
  auto it = env_.find(node_->inputs().at(i));
  TORCHFUSE_INTERNAL_ASSERT(it != env_.end(), "TorchScript value %", node_->inputs()[i]->debugName(),
                            " has no IR value");
  return it->second;
}

const ir::Type& ConvertContext::out_type(size_t i) const { return type_of(node_->outputs().at(i)); }

const ir::Type& ConvertContext::type_of(const torch::jit::Value* v) const {
  static const ir::Type kOther = ir::Type::other();
  auto it = profile_.types.find(v);
  return it == profile_.types.end() ? kOther : it->second;
}

std::optional<c10::IValue> ConvertContext::constant(size_t i) const {
  if (i >= node_->inputs().size()) return std::nullopt;
  return constant_value(node_->inputs()[i]);
}

namespace {

std::optional<ConvertContext::IntArg> int_of(const torch::jit::Value* v, const Profile& profile, ir::Value* ir_value) {
  if (auto iv = torch::jit::toIValue(v)) {
    if (!iv->isInt()) return std::nullopt;
    return ConvertContext::IntArg{iv->toInt(), nullptr};
  }
  auto it = profile.ints.find(v);
  if (it == profile.ints.end() || !ir_value || !ir_value->type.is_scalar() ||
      ir_value->type.dtype != c10::ScalarType::Long) {
    return std::nullopt;
  }
  return ConvertContext::IntArg{it->second, ir_value};
}

}  // namespace

std::optional<ConvertContext::IntArg> ConvertContext::int_arg(size_t i) const {
  if (i >= node_->inputs().size()) return std::nullopt;
  return int_of(node_->inputs()[i], profile_, ir_value(node_->inputs()[i]));
}

std::optional<std::vector<ConvertContext::IntArg>> ConvertContext::int_list_arg(size_t i) const {
  if (i >= node_->inputs().size()) return std::nullopt;
  const torch::jit::Value* list = node_->inputs()[i];
  std::vector<IntArg> out;
  if (auto iv = torch::jit::toIValue(list)) {
    if (!iv->isIntList()) return std::nullopt;
    for (int64_t d : iv->toIntVector()) out.push_back({d, nullptr});
    return out;
  }
  const torch::jit::Node* make = list->node();
  if (make->kind() != c10::prim::ListConstruct) return std::nullopt;
  for (const torch::jit::Value* e : make->inputs()) {
    auto a = int_of(e, profile_, ir_value(e));
    if (!a) return std::nullopt;
    out.push_back(*a);
  }
  return out;
}

bool ConvertContext::is_none(size_t i) const {
  auto c = constant(i);
  return c && c->isNone();
}

ir::Node* ConvertContext::emit(ir::OpKind kind, std::vector<ir::Value*> inputs, ir::Type out,
                               c10::ScalarType compute_dtype) {
  ir::Node* n = graph_.add_node(kind, std::move(inputs), {std::move(out)});
  n->compute_dtype = compute_dtype;
  n->origin = origin_;
  n->origin_op = node_->kind().toUnqualString();
  return n;
}

ir::Value* ConvertContext::pointwise(ir::OpKind kind, std::vector<ir::Value*> inputs,
                                     c10::ScalarType out_dtype, c10::ScalarType compute_dtype) {
  std::vector<int64_t> shape;
  c10::Device device(c10::DeviceType::CPU);
  for (ir::Value* v : inputs) {
    if (!v->type.is_tensor()) continue;
    auto b = ir::broadcast_shapes(shape, v->type.sizes);
    TORCHFUSE_INTERNAL_ASSERT(b.has_value(), "operands of ", ir::op_name(kind), " do not broadcast");
    shape = *b;
    // A 0-dim CPU tensor beside GPU tensors is a number for the kernel: the GPU tensors decide.
    if (device.is_cpu() || !v->type.device.is_cpu()) device = v->type.device;
  }
  // Only host scalars (a CPU 0-dim tensor cast to the common dtype of a GPU op): the node computes
  // where the op it belongs to does.
  const ir::Type& op_out = out_type();
  if (device.is_cpu() && op_out.is_tensor() && !op_out.device.is_cpu()) {
    bool all_host = true;
    for (ir::Value* v : inputs)
      if (v->type.is_tensor() && !ir::is_host_scalar(v->type, op_out.device)) all_host = false;
    if (all_host) device = op_out.device;
  }
  auto strides = ir::contiguous_strides(shape);
  return emit(kind, std::move(inputs), ir::Type::tensor(out_dtype, shape, strides, device), compute_dtype)->output();
}

void ConvertContext::bind_identity(ir::Value* input) {
  bind_output(0, input);
  identities_.push_back(node_);
}

void ConvertContext::bind_output(size_t i, ir::Value* v) {
  ir::Value*& slot = env_[node_->outputs().at(i)];
  slot = v;
  if (v->producer && ir::is_16bit_float(v->type.dtype)) v->eager_rounds = true;
  const ir::Type& eager = out_type(i);
  if (v->producer && eager.is_tensor() && eager.sizes == v->type.sizes) v->eager_strides = eager.strides;
}

// ---- conversion ----

namespace {

// Is `v` defined inside node `n` (by a node of its blocks, or as a block parameter)?
bool defined_inside(const torch::jit::Value* v, const torch::jit::Node* n) {
  for (const torch::jit::Node* d = v->node(); d; d = d->owningBlock() ? d->owningBlock()->owningNode() : nullptr) {
    if (d == n) return true;
  }
  return false;
}

void free_values(torch::jit::Block* b, torch::jit::Node* n, std::vector<torch::jit::Value*>& out) {
  auto add = [&](torch::jit::Value* v) {
    if (!defined_inside(v, n) && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  for (torch::jit::Node* inner : b->nodes()) {
    for (torch::jit::Value* v : inner->inputs()) add(v);
    for (torch::jit::Block* nested : inner->blocks()) free_values(nested, n, out);
  }
  for (torch::jit::Value* v : b->return_node()->inputs()) add(v);
}

}  // namespace

std::vector<torch::jit::Value*> values_read(torch::jit::Node* n) {
  std::vector<torch::jit::Value*> out(n->inputs().begin(), n->inputs().end());
  for (torch::jit::Block* b : n->blocks()) free_values(b, n, out);
  return out;
}

c10::IValue graph_result(std::vector<c10::IValue>& stack) {
  if (stack.size() == 1) return stack[0];
  if (stack.empty()) return c10::IValue();
  return c10::ivalue::Tuple::create(std::vector<c10::IValue>(stack.begin(), stack.end()));
}

namespace {

ir::Value* convert_constant(ir::Graph& g, torch::jit::Node* n, const Profile& profile) {
  auto iv = torch::jit::toIValue(n->output());
  if (iv && (iv->isDouble() || iv->isInt() || iv->isBool())) return g.add_scalar_constant(iv->toScalar());
  if (iv && iv->isTensor() && iv->toTensor().defined()) {
    return g.add_tensor_constant(type_of_ivalue(*iv), n->output()->debugName());
  }
  (void)profile;
  return g.add_other(n->output()->debugName());
}

void convert_opaque(ir::Graph& g, torch::jit::Node* n, int origin, const Profile& profile,
                    std::unordered_map<const torch::jit::Value*, ir::Value*>& env) {
  // Values its blocks read count as its inputs: a group computing one of them must output it.
  std::vector<ir::Value*> inputs;
  for (torch::jit::Value* in : values_read(n)) inputs.push_back(env.at(in));
  std::vector<ir::Type> outs;
  for (torch::jit::Value* out : n->outputs()) {
    auto it = profile.types.find(out);
    outs.push_back(it == profile.types.end() ? ir::Type::other() : it->second);
  }
  ir::Node* node = g.add_node(ir::OpKind::Opaque, std::move(inputs), std::move(outs));
  node->opaque_name = n->kind().toQualString();
  node->origin = origin;
  node->origin_op = n->kind().toUnqualString();
  // Ops that write memory or have side effects pin the order around them.
  node->side_effects = n->hasSideEffects() || !n->blocks().empty() ||
                       (n->maybeSchema() && n->maybeSchema()->is_mutable());
  for (size_t i = 0; i < n->outputs().size(); ++i) env[n->outputs()[i]] = node->outputs[i];
}

// The converter for the node's kind, or nullptr: most ops have none and simply stay in ATen,
// which is no decline to report.
Converter converter_for(const torch::jit::Node* n) {
  const std::string kind = n->kind().toQualString();
  for (const auto* table : {&pointwise_converters(), &activation_converters(), &reduction_converters(),
                            &view_converters(), &slice_converters(), &split_converters(), &cat_converters()}) {
    auto it = table->find(kind);
    if (it != table->end()) return it->second;
  }
  return nullptr;
}

// Why an op a user may expect to fuse has no converter; "" for the rest (GEMMs, convolutions,
// attention: ATen's or cuBLASLt's by design).
std::string unfused_op_reason(const torch::jit::Node* n) {
  static const std::map<std::string, std::string> reasons = {
      {"aten::cumprod", "a prefix product along a dim: the scan schedule adds (cumsum) only"},
      {"aten::logcumsumexp", "a prefix reduction along a dim: the scan schedule adds (cumsum) only"},
      {"aten::cummax", "a prefix reduction along a dim: the scan schedule adds (cumsum) only"},
      {"aten::cummin", "a prefix reduction along a dim: the scan schedule adds (cumsum) only"},
      {"aten::sort", "sorting is no elementwise op or reduction"},
      {"aten::topk", "a selection of k elements is no elementwise op or reduction"},
  };
  auto it = reasons.find(n->kind().toQualString());
  return it == reasons.end() ? "" : it->second;
}

// Runs the converter on the node ctx has begun; false when it declines (ctx says why).
bool try_convert(ConvertContext& ctx, Converter convert) {
  // The profiled output type would be baked into the kernel (x.to(d), x.sum(dtype=d) for an int
  // input d): the next call may ask for another.
  const std::string runtime_arg = ctx.runtime_type_argument();
  if (!runtime_arg.empty()) return ctx.decline(runtime_arg + " is only known at run time: it can change between calls");
  // Converters handle tensors the kernels can compute on, on one device, and nothing else.
  for (torch::jit::Value* out : ctx.node()->outputs()) {
    const ir::Type& t = ctx.out_type(out->offset());
    if (t.is_tensor() && !is_kernel_dtype(t.dtype)) return ctx.decline(not_kernel_dtype("output", t.dtype));
  }
  return convert(ctx);
}

// "aten::norm (%5) stays in ATen: norm with p=3: only p=2 is fused".
std::string declined_entry(const torch::jit::Node* n, const std::string& reason) {
  std::string entry = n->kind().toQualString();
  if (!n->outputs().empty()) entry += " (%" + n->outputs()[0]->debugName() + ")";
  // Every converter states its reason; the fallback only keeps a forgotten one visible.
  return entry + " stays in ATen: " + (reason.empty() ? "the converter declined (no reason given)" : reason);
}

// Does a block of `n` (an if or loop body) hold an op torchfuse converts?
bool blocks_hold_fusible_ops(const torch::jit::Node* n) {
  for (const torch::jit::Block* b : n->blocks()) {
    for (const torch::jit::Node* inner : b->nodes()) {
      if (converter_for(inner) || blocks_hold_fusible_ops(inner)) return true;
    }
  }
  return false;
}

// Does the node compute a tensor (or split one into a list of tensors: chunk, unbind)?
bool computes_a_tensor(const torch::jit::Node* n, const Profile& profile) {
  for (const torch::jit::Value* out : n->outputs()) {
    auto it = profile.types.find(out);
    if (it != profile.types.end() && it->second.is_tensor()) return true;
  }
  const bool splits_a_tensor = n->outputs().size() == 1 && !n->inputs().empty() &&
                               n->output()->type()->isSubtypeOf(*c10::ListType::ofTensors()) &&
                               n->input(0)->type()->isSubtypeOf(*c10::TensorType::get());
  return splits_a_tensor;
}

}  // namespace

Conversion convert_to_ir(torch::jit::Graph& graph, const Profile& profile) {
  Conversion conv;
  conv.graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *conv.graph;
  std::unordered_map<const torch::jit::Value*, ir::Value*> env;
  auto record_source = [&](torch::jit::Value* ts, ir::Value* v) {
    if (v->source_index >= 0) return;
    v->source_index = static_cast<int>(conv.source_values.size());
    conv.source_values.push_back(ts);
  };

  for (torch::jit::Value* in : graph.inputs()) {
    auto it = profile.types.find(in);
    ir::Value* v = g.add_input(it == profile.types.end() ? ir::Type::other() : it->second, in->debugName());
    env[in] = v;
    record_source(in, v);
  }
  ConvertContext ctx(g, profile, env);
  for (torch::jit::Node* n : graph.nodes()) {
    const int origin = static_cast<int>(conv.source_nodes.size());
    conv.source_nodes.push_back(n);
    if (n->kind() == c10::prim::Constant) {
      env[n->output()] = convert_constant(g, n, profile);
      record_source(n->output(), env[n->output()]);
      continue;
    }
    ctx.begin(n, origin);
    const Converter convert = converter_for(n);
    if (ctx.pieces_for(n)) {
      // A ListUnpack's pieces are fusion units of their own: each after the first takes another
      // origin, which stands for the same TorchScript node.
      emit_pieces(ctx, [&](size_t i) {
        if (i == 0) return origin;
        conv.source_nodes.push_back(n);
        return static_cast<int>(conv.source_nodes.size()) - 1;
      });
    } else if (n->kind() == c10::prim::ListConstruct && convert_cat_list(ctx)) {
      // The list of a cat or stack that converts: no IR node (convert_cat.cpp).
    } else if (!convert || !try_convert(ctx, convert)) {
      // (Arithmetic on Python numbers, size arithmetic, computes no tensor to fuse: not listed.)
      if (convert && computes_a_tensor(n, profile)) conv.declined.push_back(declined_entry(n, ctx.decline_reason()));
      const std::string unfused = convert ? "" : unfused_op_reason(n);
      if (!unfused.empty() && computes_a_tensor(n, profile)) conv.declined.push_back(declined_entry(n, unfused));
      if (blocks_hold_fusible_ops(n)) {
        conv.declined.push_back(declined_entry(
            n, "control flow: the ops in its blocks run through ATen (torchfuse fuses the graph's top-level ops)"));
      }
      convert_opaque(g, n, origin, profile, env);
    }
    ctx.note_output_types();
    for (torch::jit::Value* out : n->outputs()) {
      TORCHFUSE_INTERNAL_ASSERT(env.count(out), "converter for ", n->kind().toQualString(),
                                " left output ", out->debugName(), " unbound");
      record_source(out, env[out]);
    }
  }
  for (torch::jit::Value* out : graph.outputs()) g.add_output(env.at(out));
  ir::mark_discontinuity_feeds(g);
  for (torch::jit::Node* n : ctx.identities()) {
    n->output()->replaceAllUsesWith(n->input(0));
    n->destroy();
  }
  return conv;
}

}  // namespace torchfuse
