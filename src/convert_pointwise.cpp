// TorchScript pointwise ops -> IR. Composite forms are decomposed so that every IR node is a
// primitive: add/sub with alpha become a multiply and an add, clamp becomes clamp_min/clamp_max.
#include <cmath>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/csrc/jit/ir/ir.h>

#include "src/convert_context.h"
#include "src/error.h"

namespace torchfuse {
namespace {

using ir::OpKind;

// A Python number or a tensor on which a kernel can compute.
bool is_operand(const ir::Value* v) {
  if (v->type.is_scalar()) return true;
  return v->type.is_tensor() && is_kernel_dtype(v->type.dtype);
}

// The output is a tensor whose shape is the broadcast of the operands, all on one device.
// Declines (and returns false) otherwise.
bool output_matches(ConvertContext& ctx, const std::vector<ir::Value*>& operands) {
  const ir::Type& out = ctx.out_type();
  if (!out.is_tensor()) return ctx.decline(not_a_tensor("output", out));
  std::vector<int64_t> shape;
  bool any_tensor = false;
  for (const ir::Value* v : operands) {
    if (!is_operand(v)) {
      return ctx.decline(v->type.is_tensor() ? not_kernel_dtype("operand", v->type.dtype)
                                             : "an operand is neither a tensor nor a number");
    }
    if (!v->type.is_tensor()) continue;
    if (v->type.device != out.device && !ir::is_host_scalar(v->type, out.device)) {
      return ctx.decline("operand on " + v->type.device.str() + ", output on " + out.device.str());
    }
    auto b = ir::broadcast_shapes(shape, v->type.sizes);
    if (!b) {
      return ctx.decline("operand shapes " + ir::shape_str(shape) + " and " + ir::shape_str(v->type.sizes) +
                         " do not broadcast");
    }
    shape = *b;
    any_tensor = true;
  }
  if (!any_tensor) return ctx.decline("no operand is a tensor");
  if (shape != out.sizes) {
    return ctx.decline("output shape " + ir::shape_str(out.sizes) + " is not the operands' broadcast shape " +
                       ir::shape_str(shape));
  }
  return true;
}

std::vector<const ir::Value*> as_const(const std::vector<ir::Value*>& v) { return {v.begin(), v.end()}; }

// A tensor operand of another dtype than a 16-bit common dtype, converted to it first: eager's
// kernels load every operand as the common dtype (a f32 0-dim tensor in a bf16 product, a fp16
// value in a bf16 sum round to bf16). Python numbers stay as they are (eager computes with them
// in float, its opmath type).
ir::Value* to_common(ConvertContext& ctx, ir::Value* v, c10::ScalarType common) {
  if (!v->type.is_tensor() || v->type.dtype == common || !ir::is_16bit_float(common) || v->type.dtype == c10::ScalarType::Bool) {
    return v;
  }
  return ctx.pointwise(OpKind::Cast, {v}, common, common);
}

// A Python number compared with, clamped to or selected beside a 16-bit tensor is rounded to
// that dtype first, as eager's comparison, clamp and where kernels convert it (x > 0.1 on bf16
// compares with bf16(0.1) = 0.10009765625).
ir::Value* literal_as(ConvertContext& ctx, ir::Value* v, c10::ScalarType common) {
  if (!v->constant || !v->constant->isFloatingPoint() || !ir::is_16bit_float(common)) return v;
  const float f = static_cast<float>(v->constant->toDouble());
  const float rounded = common == c10::ScalarType::Half ? static_cast<float>(c10::Half(f)) : static_cast<float>(c10::BFloat16(f));
  return ctx.scalar(static_cast<double>(rounded));
}

bool convert_unary(ConvertContext& ctx, OpKind kind) {
  ir::Value* x = ctx.in(0);
  if (!output_matches(ctx, {x})) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  const auto compute = kind == OpKind::LogicalNot ? x->type.dtype : out;
  ctx.bind_output(0, ctx.pointwise(kind, {x}, out, compute));
  return true;
}

// The scaled second operand of add/sub/rsub: b * alpha (alpha a constant number).
std::optional<ir::Value*> scaled_by_alpha(ConvertContext& ctx, ir::Value* b, size_t alpha_index,
                                          c10::ScalarType out_dtype, bool* ok) {
  *ok = true;
  if (alpha_index >= ctx.num_inputs()) return b;
  auto alpha = ctx.constant(alpha_index);
  if (!alpha || !(alpha->isInt() || alpha->isDouble())) {
    *ok = false;
    return std::nullopt;
  }
  const bool unit = alpha->isInt() ? alpha->toInt() == 1 : alpha->toDouble() == 1.0;
  if (unit) return b;
  if (b->constant) {
    // Fold constant * alpha, keeping Python's int-ness when both are ints.
    if (b->constant->isIntegral(false) && alpha->isInt()) return ctx.scalar(b->constant->toLong() * alpha->toInt());
    return ctx.scalar(b->constant->toDouble() * alpha->toScalar().toDouble());
  }
  if (!b->type.is_tensor()) {
    *ok = false;
    return std::nullopt;
  }
  return ctx.pointwise(OpKind::Mul, {b, ctx.scalar(alpha->toScalar())}, out_dtype, out_dtype);
}

bool convert_add_sub(ConvertContext& ctx, OpKind kind, bool reversed) {
  if (!ctx.needs_inputs(2)) return false;  // declined there
  ir::Value* a = ctx.in(reversed ? 1 : 0);
  ir::Value* b = ctx.in(reversed ? 0 : 1);
  if (!output_matches(ctx, {a, b})) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  auto alpha = ctx.constant(2);
  if (ctx.num_inputs() > 2 && (!alpha || !(alpha->isInt() || alpha->isDouble()))) {
    return ctx.decline(ctx.arg_name(2) + " is not a constant number");
  }
  if (!b->type.is_tensor() && !b->constant && ctx.num_inputs() > 2) {
    const bool unit = alpha->isInt() ? alpha->toInt() == 1 : alpha->toDouble() == 1.0;
    // A runtime scalar times alpha: leave it to ATen.
    if (!unit) return ctx.decline(ctx.arg_str(2) + " scales a number known only at run time");
  }
  bool ok = true;
  auto scaled = scaled_by_alpha(ctx, to_common(ctx, b, out), 2, out, &ok);
  TORCHFUSE_INTERNAL_ASSERT(ok && scaled, "alpha was checked above");
  ctx.bind_output(0, ctx.pointwise(kind, {to_common(ctx, a, out), *scaled}, out, out));
  return true;
}

bool convert_binary(ConvertContext& ctx, OpKind kind) {
  if (!ctx.needs_inputs(2)) return false;  // declined there
  ir::Value* a = ctx.in(0);
  ir::Value* b = ctx.in(1);
  if (!output_matches(ctx, {a, b})) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  c10::ScalarType compute = out;
  if (ir::is_comparison(kind)) compute = promote_types_of(as_const({a, b}));
  if (kind == OpKind::LogicalAnd || kind == OpKind::LogicalOr) compute = c10::ScalarType::Bool;
  const bool integral = !is_floating(compute) && compute != c10::ScalarType::Bool;
  // Integer powers and integer rounding divisions have edge cases (negative exponents, division
  // by zero) where a kernel would not match eager: only a tensor to a constant power >= 0 (exact
  // in integers, wrapping as eager's) is fused.
  if (integral && kind == OpKind::Pow) {
    const bool constant_power = a->type.is_tensor() && b->constant && b->constant->isIntegral(false) && b->constant->toLong() >= 0;
    if (!constant_power) {
      return ctx.decline(std::string("pow on ") + ir::dtype_short_name(compute) +
                         ": only integer tensors to a constant power >= 0 are fused");
    }
  }
  // Integer fmod and remainder divide: by a nonzero constant only (a zero divisor is an error on
  // the CPU and undefined in CUDA kernels).
  if ((kind == OpKind::Fmod || kind == OpKind::Remainder) && !is_floating(compute)) {
    if (compute == c10::ScalarType::Bool) return ctx.decline(ctx.op_name() + " on bools is left to ATen");
    if (!b->constant || !b->constant->isIntegral(false) || b->constant->toLong() == 0) {
      return ctx.decline(ctx.op_name() + " on " + ir::dtype_short_name(compute) +
                         ": only integer division by a nonzero constant is fused");
    }
  }
  if (integral && (kind == OpKind::DivTrunc || kind == OpKind::DivFloor)) {
    return ctx.decline("div with " + ctx.arg_str(2) + " on " + ir::dtype_short_name(compute) +
                       ": integer division is left to ATen");
  }
  if (kind != OpKind::LogicalAnd && kind != OpKind::LogicalOr) {
    a = to_common(ctx, a, compute);
    b = to_common(ctx, b, compute);
  }
  // Comparisons, and fmod and remainder (gpu_kernel_with_scalars converts a Python number to the
  // common dtype), see a number beside a 16-bit tensor rounded to its dtype.
  if (ir::is_comparison(kind) || kind == OpKind::Fmod || kind == OpKind::Remainder) {
    a = literal_as(ctx, a, compute);
    b = literal_as(ctx, b, compute);
  }
  ctx.bind_output(0, ctx.pointwise(kind, {a, b}, out, compute));
  return true;
}

bool convert_div(ConvertContext& ctx) {
  if (ctx.num_inputs() < 3 || ctx.is_none(2)) return convert_binary(ctx, OpKind::Div);
  auto mode = ctx.constant(2);
  if (!mode || !mode->isString()) return ctx.decline(ctx.arg_name(2) + " is not a constant string");
  const std::string m = mode->toStringRef();
  if (m == "trunc") return convert_binary(ctx, OpKind::DivTrunc);
  if (m == "floor") return convert_binary(ctx, OpKind::DivFloor);
  return ctx.decline(ctx.arg_str(2) + " is not a rounding mode");
}

bool convert_clamp(ConvertContext& ctx, bool has_min, bool has_max) {
  ir::Value* x = ctx.in(0);
  std::vector<ir::Value*> operands = {x};
  ir::Value* lo = nullptr;
  ir::Value* hi = nullptr;
  size_t next = 1;
  if (has_min) {
    if (!ctx.needs_inputs(next + 1)) return false;  // declined there
    if (!ctx.is_none(next)) lo = ctx.in(next);
    ++next;
  }
  if (has_max) {
    if (!ctx.needs_inputs(next + 1)) return false;  // declined there
    if (!ctx.is_none(next)) hi = ctx.in(next);
  }
  if (!lo && !hi) return ctx.decline("min and max are both None");
  if (lo) operands.push_back(lo);
  if (hi) operands.push_back(hi);
  if (!output_matches(ctx, operands)) return false;  // declined there
  ctx.bind_output(0, clamp_between(ctx, x, lo, hi, ctx.out_type().dtype));
  return true;
}

bool convert_where(ConvertContext& ctx) {
  if (ctx.num_inputs() != 3) return ctx.decline(ctx.op_with_arity() + ": only where(condition, input, other) is fused");
  ir::Value* c = ctx.in(0);
  if (!c->type.is_tensor() || c->type.dtype != c10::ScalarType::Bool) {
    return ctx.decline("condition is " + c->type.str() + ", not a bool tensor");
  }
  if (!output_matches(ctx, {c, ctx.in(1), ctx.in(2)})) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  auto branch = [&](size_t i) { return literal_as(ctx, to_common(ctx, ctx.in(i), out), out); };
  ctx.bind_output(0, ctx.pointwise(OpKind::Where, {c, branch(1), branch(2)}, out, out));
  return true;
}

bool convert_gelu(ConvertContext& ctx) {
  OpKind kind = OpKind::Gelu;
  if (ctx.num_inputs() > 1) {
    auto approx = ctx.constant(1);
    if (!approx || !approx->isString()) return ctx.decline(ctx.arg_name(1) + " is not a constant string");
    if (approx->toStringRef() == "tanh") kind = OpKind::GeluTanh;
    else if (approx->toStringRef() != "none") return ctx.decline(ctx.arg_str(1) + " is not a gelu mode");
  }
  return convert_unary(ctx, kind);
}

// Does this to() return a new tensor even where nothing changes (_to_copy, copy=True)? nullopt
// when copy is not a constant.
std::optional<bool> always_copies(ConvertContext& ctx) {
  const torch::jit::Node* n = ctx.node();
  if (n->kind() == c10::Symbol::fromQualString("aten::_to_copy")) return true;
  const auto* schema = n->maybeSchema();
  const auto index = schema ? schema->argumentIndexWithName("copy") : c10::nullopt;
  if (!index) return false;  // type_as
  const auto c = ctx.constant(*index);
  if (!c || !c->isBool()) return std::nullopt;
  return c->toBool();
}

// aten::to, type_as, _to_copy: a dtype change on the same device is a cast; no change is the
// identity (eager returns the input itself), or a copy where the op must return a new tensor.
bool convert_cast(ConvertContext& ctx) {
  ir::Value* x = ctx.in(0);
  const ir::Type& out = ctx.out_type();
  if (!x->type.is_tensor()) return ctx.decline(not_a_tensor("input", x->type));
  if (!out.is_tensor()) return ctx.decline(not_a_tensor("output", out));
  if (x->type.device != out.device) {
    return ctx.decline("moves from " + x->type.device.str() + " to " + out.device.str() +
                       ": only dtype casts are fused");
  }
  if (x->type.sizes != out.sizes) {
    return ctx.decline("input shape " + ir::shape_str(x->type.sizes) + " differs from output shape " +
                       ir::shape_str(out.sizes));
  }
  if (!is_kernel_dtype(x->type.dtype)) return ctx.decline(not_kernel_dtype("input", x->type.dtype));
  if (!is_kernel_dtype(out.dtype)) return ctx.decline(not_kernel_dtype("output", out.dtype));
  const auto copies = always_copies(ctx);
  if (!copies) return ctx.decline("copy is not a constant bool");
  // type_as(other), to(other): the dtype comes from `other`.
  const torch::jit::Node* n = ctx.node();
  const auto* schema = n->maybeSchema();
  const auto other = schema ? schema->argumentIndexWithName("other") : c10::nullopt;
  if (other && ctx.runtime_typed(n->input(*other))) {
    return ctx.decline("the dtype of %" + n->input(*other)->debugName() +
                       " is only known at run time: it can change between calls");
  }
  if (x->type.dtype == out.dtype && !*copies) {
    // Deleting the node is right only while its input keeps the profiled dtype.
    if (ctx.runtime_typed(n->input(0))) {
      return ctx.decline("its input %" + n->input(0)->debugName() +
                         " has a dtype only known at run time (control flow or a run-time dtype argument computes it): "
                         "whether to() changes it can differ between calls");
    }
    if (ir::is_16bit_float(x->type.dtype)) x->cast_to_own_dtype = true;
    ctx.bind_identity(x);
    return true;
  }
  // (A cast to the same dtype is a copy: the result never aliases its input.)
  ctx.bind_output(0, ctx.pointwise(OpKind::Cast, {x}, out.dtype, out.dtype));
  return true;
}

// dropout in eval mode (train=False) is the identity.
bool convert_dropout(ConvertContext& ctx) {
  auto train = ctx.constant(2);
  if (!train || !train->isBool()) return ctx.decline(ctx.arg_name(2) + " is not a constant bool");
  if (train->toBool()) return ctx.decline(ctx.arg_str(2) + ": only dropout in eval mode is fused");
  ir::Value* x = ctx.in(0);
  if (!x->type.is_tensor()) return ctx.decline(not_a_tensor("input", x->type));
  ctx.bind_identity(x);
  return true;
}

bool convert_square(ConvertContext& ctx) {
  ir::Value* x = ctx.in(0);
  if (!output_matches(ctx, {x})) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  ctx.bind_output(0, ctx.pointwise(OpKind::Mul, {x, x}, out, out));
  return true;
}

// round(x) and round(x, decimals=d): nearbyint(x * 10^d) / 10^d in the op's math type, as
// ATen's round_decimals (d < 0: nearbyint(x / 10^-d) * 10^-d).
bool convert_round(ConvertContext& ctx) {
  if (ctx.num_inputs() < 2) return convert_unary(ctx, OpKind::Round);
  auto decimals = ctx.constant(1);
  if (!decimals || !decimals->isInt()) return ctx.decline(ctx.arg_name(1) + " is not a constant int");
  const int64_t d = decimals->toInt();
  if (d == 0) return convert_unary(ctx, OpKind::Round);
  ir::Value* x = ctx.in(0);
  if (!output_matches(ctx, {x})) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  if (!is_floating(out)) return ctx.decline(ctx.arg_str(1) + " on " + ir::dtype_short_name(out) + " is left to ATen");
  if (d > 30 || d < -30) return ctx.decline(ctx.arg_str(1) + ": 10^|decimals| is not exact enough; left to ATen");
  // std::pow(10, |d|) as ATen takes it: a double, converted to the math type.
  double p = std::pow(10.0, static_cast<double>(d < 0 ? -d : d));
  if (opmath_type(out) == c10::ScalarType::Float) p = static_cast<float>(p);
  const OpKind scale = d > 0 ? OpKind::Mul : OpKind::Div;
  const OpKind unscale = d > 0 ? OpKind::Div : OpKind::Mul;
  ir::Value* r = ctx.pointwise(OpKind::Round, {ctx.pointwise(scale, {x, ctx.scalar(p)}, out, out)}, out, out);
  ctx.bind_output(0, ctx.pointwise(unscale, {r, ctx.scalar(p)}, out, out));
  return true;
}

// &, | (__and__, bitwise_and, __or__, bitwise_or) on bools are logical and / or (Hugging Face's
// mask construction joins its conditions with them); on integers they work on bits: left to ATen.
bool convert_bool_bitwise(ConvertContext& ctx, OpKind kind) {
  if (!ctx.needs_inputs(2)) return false;  // declined there
  for (size_t i = 0; i < 2; ++i) {
    if (ctx.in(i)->type.dtype == c10::ScalarType::Bool) continue;
    return ctx.decline(ctx.arg_name(i) + " is " + ctx.in(i)->type.str() + ": only bools are fused (bits of integers are left to ATen)");
  }
  return convert_binary(ctx, kind);
}

// logical_xor(a, b): bool(a) != bool(b).
bool convert_logical_xor(ConvertContext& ctx) {
  if (!ctx.needs_inputs(2)) return false;  // declined there
  ir::Value* a = ctx.in(0);
  ir::Value* b = ctx.in(1);
  if (!output_matches(ctx, {a, b})) return false;  // declined there
  if (ctx.out_type().dtype != c10::ScalarType::Bool) return ctx.decline("output is not bool");
  ctx.bind_output(0, ctx.pointwise(OpKind::Ne, {a, b}, c10::ScalarType::Bool, c10::ScalarType::Bool));
  return true;
}

// masked_fill(x, mask, value): where(mask, value, x), the value (a number or a 0-dim tensor)
// converted to x's dtype as eager's fill converts it.
bool convert_masked_fill(ConvertContext& ctx) {
  if (!ctx.needs_inputs(3)) return false;  // declined there
  ir::Value* x = ctx.in(0);
  ir::Value* mask = ctx.in(1);
  ir::Value* value = ctx.in(2);
  if (!mask->type.is_tensor() || mask->type.dtype != c10::ScalarType::Bool) {
    return ctx.decline("mask is " + mask->type.str() + ", not a bool tensor");
  }
  if (!x->type.is_tensor()) return ctx.decline(not_a_tensor("input", x->type));
  if (value->type.is_tensor() && value->type.rank() != 0) return ctx.decline("value is not a 0-dim tensor");
  if (!output_matches(ctx, {x, mask, value})) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  if (out != x->type.dtype || ctx.out_type().sizes != x->type.sizes) {
    return ctx.decline("output " + ctx.out_type().str() + " is not of the input's dtype and shape");
  }
  ir::Value* fill = nullptr;
  if (value->type.is_tensor()) {
    fill = to_common(ctx, value, out);
  } else if (value->constant) {
    fill = literal_as(ctx, value, out);
  } else {
    fill = ctx.pointwise(OpKind::Fill, {x, value}, out, out);  // a run-time number: rounded there
  }
  ctx.bind_output(0, ctx.pointwise(OpKind::Where, {mask, fill, x}, out, out));
  return true;
}

// zeros_like, ones_like, full_like: the number broadcast to the input's shape, in the output's
// dtype (a Fill node: absorbed into a group, nothing allocated for it). `value_index` < 0: the
// number is `fixed`.
bool convert_fill_like(ConvertContext& ctx, int value_index, double fixed) {
  ir::Value* x = ctx.in(0);
  if (!x->type.is_tensor()) return ctx.decline(not_a_tensor("input", x->type));
  ir::Value* value = nullptr;
  if (value_index >= 0) {
    if (!ctx.needs_inputs(static_cast<size_t>(value_index) + 1)) return false;  // declined there
    value = ctx.in(static_cast<size_t>(value_index));
    if (!value->type.is_scalar()) return ctx.decline(ctx.arg_name(static_cast<size_t>(value_index)) + " is not a number");
  } else {
    value = ctx.scalar(c10::Scalar(static_cast<int64_t>(fixed)));
  }
  if (!output_matches(ctx, {x})) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  ctx.bind_output(0, ctx.pointwise(OpKind::Fill, {x, value}, out, out));
  return true;
}

#define TF_UNARY(name, kind) {name, [](ConvertContext& c) { return convert_unary(c, kind); }}
#define TF_BINARY(name, kind) {name, [](ConvertContext& c) { return convert_binary(c, kind); }}

}  // namespace

const std::unordered_map<std::string, Converter>& pointwise_converters() {
  static const std::unordered_map<std::string, Converter> table = {
      TF_UNARY("aten::neg", OpKind::Neg),
      TF_UNARY("aten::abs", OpKind::Abs),
      TF_UNARY("aten::exp", OpKind::Exp),
      TF_UNARY("aten::log", OpKind::Log),
      TF_UNARY("aten::sqrt", OpKind::Sqrt),
      TF_UNARY("aten::rsqrt", OpKind::Rsqrt),
      TF_UNARY("aten::tanh", OpKind::Tanh),
      TF_UNARY("aten::sigmoid", OpKind::Sigmoid),
      TF_UNARY("aten::erf", OpKind::Erf),
      TF_UNARY("aten::relu", OpKind::Relu),
      TF_UNARY("aten::silu", OpKind::Silu),
      TF_UNARY("aten::reciprocal", OpKind::Reciprocal),
      TF_UNARY("aten::logical_not", OpKind::LogicalNot),
      {"aten::gelu", convert_gelu},
      {"aten::add", [](ConvertContext& c) { return convert_add_sub(c, OpKind::Add, false); }},
      {"aten::sub", [](ConvertContext& c) { return convert_add_sub(c, OpKind::Sub, false); }},
      {"aten::rsub", [](ConvertContext& c) { return convert_add_sub(c, OpKind::Sub, true); }},
      TF_BINARY("aten::mul", OpKind::Mul),
      {"aten::div", convert_div},
      TF_BINARY("aten::true_divide", OpKind::Div),
      TF_BINARY("aten::pow", OpKind::Pow),
      TF_BINARY("aten::maximum", OpKind::Maximum),
      TF_BINARY("aten::minimum", OpKind::Minimum),
      TF_BINARY("aten::eq", OpKind::Eq),
      TF_BINARY("aten::ne", OpKind::Ne),
      TF_BINARY("aten::lt", OpKind::Lt),
      TF_BINARY("aten::le", OpKind::Le),
      TF_BINARY("aten::gt", OpKind::Gt),
      TF_BINARY("aten::ge", OpKind::Ge),
      TF_BINARY("aten::logical_and", OpKind::LogicalAnd),
      TF_BINARY("aten::logical_or", OpKind::LogicalOr),
      {"aten::__and__", [](ConvertContext& c) { return convert_bool_bitwise(c, OpKind::LogicalAnd); }},
      {"aten::bitwise_and", [](ConvertContext& c) { return convert_bool_bitwise(c, OpKind::LogicalAnd); }},
      {"aten::__or__", [](ConvertContext& c) { return convert_bool_bitwise(c, OpKind::LogicalOr); }},
      {"aten::bitwise_or", [](ConvertContext& c) { return convert_bool_bitwise(c, OpKind::LogicalOr); }},
      {"aten::clamp", [](ConvertContext& c) { return convert_clamp(c, true, true); }},
      {"aten::clip", [](ConvertContext& c) { return convert_clamp(c, true, true); }},
      {"aten::clamp_min", [](ConvertContext& c) { return convert_clamp(c, true, false); }},
      {"aten::clamp_max", [](ConvertContext& c) { return convert_clamp(c, false, true); }},
      {"aten::where", convert_where},
      {"aten::to", convert_cast},
      {"aten::type_as", convert_cast},
      {"aten::_to_copy", convert_cast},
      {"aten::dropout", convert_dropout},
      {"aten::square", convert_square},
      TF_UNARY("aten::sin", OpKind::Sin),
      TF_UNARY("aten::cos", OpKind::Cos),
      TF_UNARY("aten::log1p", OpKind::Log1p),
      TF_UNARY("aten::expm1", OpKind::Expm1),
      TF_UNARY("aten::exp2", OpKind::Exp2),
      TF_UNARY("aten::log2", OpKind::Log2),
      TF_UNARY("aten::log10", OpKind::Log10),
      TF_UNARY("aten::floor", OpKind::Floor),
      TF_UNARY("aten::ceil", OpKind::Ceil),
      TF_UNARY("aten::trunc", OpKind::Trunc),
      TF_UNARY("aten::fix", OpKind::Trunc),
      TF_UNARY("aten::sign", OpKind::Sign),
      {"aten::round", convert_round},
      TF_BINARY("aten::fmod", OpKind::Fmod),
      TF_BINARY("aten::remainder", OpKind::Remainder),
      TF_BINARY("aten::atan2", OpKind::Atan2),
      {"aten::logical_xor", convert_logical_xor},
      {"aten::masked_fill", convert_masked_fill},
      {"aten::zeros_like", [](ConvertContext& c) { return convert_fill_like(c, -1, 0.0); }},
      {"aten::ones_like", [](ConvertContext& c) { return convert_fill_like(c, -1, 1.0); }},
      {"aten::full_like", [](ConvertContext& c) { return convert_fill_like(c, 1, 0.0); }},
  };
  return table;
}

bool pointwise_output_matches(ConvertContext& ctx, const std::vector<ir::Value*>& operands) {
  return output_matches(ctx, operands);
}
ir::Value* to_common_dtype(ConvertContext& ctx, ir::Value* v, c10::ScalarType common) { return to_common(ctx, v, common); }
ir::Value* literal_as_dtype(ConvertContext& ctx, ir::Value* v, c10::ScalarType common) { return literal_as(ctx, v, common); }
bool convert_binary_op(ConvertContext& ctx, ir::OpKind kind) { return convert_binary(ctx, kind); }

ir::Value* clamp_between(ConvertContext& ctx, ir::Value* x, ir::Value* lo, ir::Value* hi, c10::ScalarType out) {
  ir::Value* v = to_common(ctx, x, out);
  if (lo) v = ctx.pointwise(OpKind::ClampMin, {v, literal_as(ctx, to_common(ctx, lo, out), out)}, out, out);
  if (hi) v = ctx.pointwise(OpKind::ClampMax, {v, literal_as(ctx, to_common(ctx, hi, out), out)}, out, out);
  return v;
}

}  // namespace torchfuse
