#include "codegen/expr.h"

#include "codegen/cuda_types.h"
#include "src/error.h"
#include "src/literal.h"

namespace torchfuse {
namespace codegen {
namespace {

using ir::OpKind;

bool is_float(c10::ScalarType t) { return t == c10::ScalarType::Float; }
bool is_floating_reg(c10::ScalarType t) { return t == c10::ScalarType::Float || t == c10::ScalarType::Double; }

// A libm call: expf for float, exp for double.
std::string math(const char* name, c10::ScalarType t, const std::string& a) {
  return std::string(name) + (is_float(t) ? "f(" : "(") + a + ")";
}

std::string one(c10::ScalarType t) { return literal(c10::Scalar(1.0), t); }

// Integer exponents with exact, cheaper forms (as ATen's pow_tensor_scalar special-cases).
std::optional<std::string> pow_special(const std::string& a, const ir::Value* exponent, c10::ScalarType t) {
  if (!exponent->constant || !is_floating_reg(t)) return std::nullopt;
  const double e = exponent->constant->toDouble();
  if (e == 1.0) return a;
  if (e == 2.0) return "(" + a + " * " + a + ")";
  if (e == 3.0) return "(" + a + " * " + a + " * " + a + ")";
  if (e == 0.5) return math("sqrt", t, a);
  if (e == -0.5) return math("rsqrt", t, a);
  if (e == -1.0) return "(" + one(t) + " / " + a + ")";
  if (e == -2.0) return "(" + one(t) + " / (" + a + " * " + a + "))";
  return std::nullopt;
}

// An integer base to a constant exponent >= 0 (the converter checks), wrapping on overflow as
// eager's square-and-multiply does.
std::optional<std::string> pow_integral(const std::string& a, const ir::Value* exponent, c10::ScalarType t) {
  if (is_floating_reg(t)) return std::nullopt;
  TORCHFUSE_INTERNAL_ASSERT(exponent->constant && exponent->constant->isIntegral(false) && exponent->constant->toLong() >= 0,
                            "integer pow needs a constant exponent >= 0");
  return "tf_powi(" + a + ", " + std::to_string(exponent->constant->toLong()) + "LL)";
}

std::string unary_expr(OpKind kind, c10::ScalarType t, const std::string& a) {
  const bool fl = is_floating_reg(t);
  switch (kind) {
    case OpKind::Neg: return "(-" + a + ")";
    case OpKind::Abs:
      if (fl) return std::string(is_float(t) ? "fabsf(" : "fabs(") + a + ")";
      return "(" + a + " < 0 ? -" + a + " : " + a + ")";
    case OpKind::Exp: return math("exp", t, a);
    case OpKind::Log: return math("log", t, a);
    case OpKind::Sqrt: return math("sqrt", t, a);
    case OpKind::Rsqrt: return math("rsqrt", t, a);
    case OpKind::Tanh: return math("tanh", t, a);
    case OpKind::Erf: return math("erf", t, a);
    case OpKind::Sigmoid: return "tf_sigmoid(" + a + ")";
    case OpKind::Relu: return "(" + a + " < " + literal(c10::Scalar(0), t) + " ? " + literal(c10::Scalar(0), t) + " : " + a + ")";
    case OpKind::Gelu: return "tf_gelu(" + a + ")";
    case OpKind::GeluTanh: return "tf_gelu_tanh(" + a + ")";
    case OpKind::Silu: return "tf_silu(" + a + ")";
    case OpKind::Reciprocal: return "(" + one(t) + " / " + a + ")";
    case OpKind::LogicalNot: return "(!" + a + ")";
    case OpKind::Cast: return a;
    case OpKind::Sin: return math("sin", t, a);
    case OpKind::Cos: return math("cos", t, a);
    case OpKind::Log1p: return math("log1p", t, a);
    case OpKind::Expm1: return math("expm1", t, a);
    case OpKind::Exp2: return math("exp2", t, a);
    case OpKind::Log2: return math("log2", t, a);
    case OpKind::Log10: return math("log10", t, a);
    // Integers and bools round to themselves (eager copies them).
    case OpKind::Floor: return fl ? math("floor", t, a) : a;
    case OpKind::Ceil: return fl ? math("ceil", t, a) : a;
    case OpKind::Trunc: return fl ? math("trunc", t, a) : a;
    // Half to even, as eager's nearbyint in the default rounding mode.
    case OpKind::Round: return fl ? math("rint", t, a) : a;
    case OpKind::Sign: return "tf_sign(" + a + ")";
    default: break;
  }
  TORCHFUSE_INTERNAL_ASSERT(false, "not a unary op: ", ir::op_name(kind));
}

std::string binary_expr(OpKind kind, c10::ScalarType t, const std::string& a, const std::string& b) {
  switch (kind) {
    case OpKind::Add: return "(" + a + " + " + b + ")";
    case OpKind::Sub: return "(" + a + " - " + b + ")";
    case OpKind::Mul: return "(" + a + " * " + b + ")";
    case OpKind::Div: return "(" + a + " / " + b + ")";
    case OpKind::DivTrunc: return math("trunc", t, "(" + a + " / " + b + ")");
    case OpKind::DivFloor: return "tf_div_floor(" + a + ", " + b + ")";
    case OpKind::Pow: return std::string(is_float(t) ? "powf(" : "pow(") + a + ", " + b + ")";
    // NaN in `a` passes through: the comparison is false.
    case OpKind::ClampMin: return "(" + a + " < " + b + " ? " + b + " : " + a + ")";
    case OpKind::ClampMax: return "(" + a + " > " + b + " ? " + b + " : " + a + ")";
    case OpKind::Maximum: return "tf_maximum(" + a + ", " + b + ")";
    case OpKind::Minimum: return "tf_minimum(" + a + ", " + b + ")";
    case OpKind::Eq: return "(" + a + " == " + b + ")";
    case OpKind::Ne: return "(" + a + " != " + b + ")";
    case OpKind::Lt: return "(" + a + " < " + b + ")";
    case OpKind::Le: return "(" + a + " <= " + b + ")";
    case OpKind::Gt: return "(" + a + " > " + b + ")";
    case OpKind::Ge: return "(" + a + " >= " + b + ")";
    case OpKind::LogicalAnd: return "(" + a + " && " + b + ")";
    case OpKind::LogicalOr: return "(" + a + " || " + b + ")";
    // Integer divisors are nonzero constants (the converter checks).
    case OpKind::Fmod: return is_floating_reg(t) ? std::string(is_float(t) ? "fmodf(" : "fmod(") + a + ", " + b + ")"
                                                 : "(" + a + " % " + b + ")";
    case OpKind::Remainder: return "tf_remainder(" + a + ", " + b + ")";
    case OpKind::Atan2: return std::string(is_float(t) ? "atan2f(" : "atan2(") + a + ", " + b + ")";
    default: break;
  }
  TORCHFUSE_INTERNAL_ASSERT(false, "not a binary op: ", ir::op_name(kind));
}

// The dtype the op's result has before it is converted to the output's register type.
c10::ScalarType result_dtype(const ir::Node& n, c10::ScalarType compute) {
  if (ir::is_comparison(n.kind) || n.kind == OpKind::LogicalNot || n.kind == OpKind::LogicalAnd ||
      n.kind == OpKind::LogicalOr) {
    return c10::ScalarType::Bool;
  }
  return compute;
}

// "%7 = add(%5, 0.5)": the IR statement without types, so the source does not depend on sizes.
std::string ir_comment(const ir::Node& n) {
  std::string s = "%" + std::to_string(n.output()->id) + " = " + ir::op_name(n.kind);
  if (n.kind == OpKind::Cast) s += std::string("[to=") + ir::dtype_short_name(n.output()->type.dtype) + "]";
  s += "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ir::Value* v = n.inputs[i];
    s += (i ? ", " : "") + (v->constant            ? format_scalar_literal(*v->constant)
                            : v->reduced_count_minus ? std::string("N")
                                                     : "%" + std::to_string(v->id));
  }
  return s + ")";
}

std::string round_to(c10::ScalarType t, const std::string& float_expr) {
  return std::string(t == c10::kHalf ? "tf_round_half(" : "tf_round_bf16(") + float_expr + ")";
}

// Ops whose result stays within fp16's range when their operands are fp16 values.
bool bounded_on_half_operands(OpKind kind) {
  switch (kind) {
    case OpKind::Sigmoid: case OpKind::Tanh: case OpKind::Erf: case OpKind::Log: case OpKind::Sqrt:
    case OpKind::Rsqrt: case OpKind::Silu: case OpKind::Gelu: case OpKind::GeluTanh: case OpKind::Sin:
    case OpKind::Cos: case OpKind::Log1p: case OpKind::Log2: case OpKind::Log10: case OpKind::Atan2:
    case OpKind::Remainder:
      return true;
    default: return false;
  }
}


}  // namespace

std::string eager_rounded(const ir::Value* v, const std::string& float_expr, bool may_overflow, Rounding rounding) {
  if (!v->eager_rounds || !ir::is_16bit_float(v->type.dtype)) return float_expr;
  if (v->feeds_discontinuity || v->read_by_selection || rounding == Rounding::Always) {
    return round_to(v->type.dtype, float_expr);
  }
  if (v->type.dtype == c10::kHalf && may_overflow) return "tf_half_range(" + float_expr + ")";
  return float_expr;
}

std::string operand(const ir::Value* v, c10::ScalarType as, const ValueNames& names) {
  if (v->constant) return literal(*v->constant, as);
  if (v->reduced_count_minus) {
    auto it = names.find(nullptr);  // the schedule's expression for N
    TORCHFUSE_INTERNAL_ASSERT(it != names.end(), "N is used outside a reduction schedule");
    const double off = *v->reduced_count_minus;
    const std::string n = off == 0 ? it->second : "fmax(" + it->second + " - " + format_double(off) + ", 0.0)";
    return convert(n, c10::ScalarType::Double, as);
  }
  auto it = names.find(v);
  TORCHFUSE_INTERNAL_ASSERT(it != names.end(), "no register holds %", v->id);
  return convert(it->second, v->type.dtype, as);
}

namespace {

// exp(x - m) where m is the max of x over a reduced dim (or that max with infinities masked to
// 0, as logsumexp does): the argument is <= 0 wherever the max is finite, where one ex2.approx
// of a prescaled argument is accurate to a few float ulps of the result's scale.
bool exp_of_shifted_max(const ir::Node& n) {
  if (n.kind != OpKind::Exp) return false;
  const ir::Node* sub = n.inputs[0]->producer;
  if (!sub || sub->kind != OpKind::Sub) return false;
  const ir::Value* m = sub->inputs[1];
  if (m->producer && m->producer->kind == OpKind::Where && m->producer->inputs[1]->constant) m = m->producer->inputs[2];
  const ir::Node* r = m->producer;
  return r && r->kind == OpKind::ReduceMax && r->inputs[0] == sub->inputs[0];
}

// Fast math (docs/architecture.md): exp, sigmoid and SiLU whose results eager rounds to 16 bits
// take the ex2.approx / rcp.approx forms (relative error below 2^-17).
std::optional<std::string> fast_unary(const ir::Node& n, c10::ScalarType out, const std::string& a) {
  if (!ir::is_16bit_float(out)) return std::nullopt;
  switch (n.kind) {
    case OpKind::Exp: return "tf_exp_fast(" + a + ")";
    case OpKind::Sigmoid: return "tf_sigmoid_fast(" + a + ")";
    case OpKind::Silu: return "tf_silu_fast(" + a + ")";
    default: return std::nullopt;
  }
}

// 1 + tanh(u) and 1 + erf(u) (either operand order), for any float dtype: the two forms of GELU
// write them so. 1 + tanh(u) is 2 / (1 + exp(-2u)), an ex2 and a reciprocal instead of tanhf;
// 1 + erf(u) is erfc(-u) from one ex2 (tf_one_plus_erf; a shorter polynomial where eager rounds
// the sum to 16 bits). The tanh or erf stays emitted for its other uses (NVRTC drops it where
// there are none).
std::optional<std::string> one_plus(const ir::Node& n, c10::ScalarType out, const ValueNames& names) {
  if (n.kind != OpKind::Add) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    const ir::Value* t = n.inputs[i];
    const ir::Value* c = n.inputs[1 - i];
    if (!c->constant || c->constant->toDouble() != 1.0) continue;
    if (!t->producer) continue;
    const char* helper = t->producer->kind == OpKind::Tanh ? "tf_one_plus_tanh("
                         : t->producer->kind == OpKind::Erf ? (ir::is_16bit_float(out) ? "tf_one_plus_erf_16(" : "tf_one_plus_erf(")
                                                            : nullptr;
    if (!helper) continue;
    const ir::Value* u = t->producer->inputs[0];
    if (!u->constant && !names.count(u)) continue;  // u not in a register here (a later pass)
    return helper + operand(u, c10::ScalarType::Float, names) + ")";
  }
  return std::nullopt;
}

// aten::gelu, exact and tanh-approximated, through the same 1 + erf and 1 + tanh forms.
std::optional<std::string> fast_gelu(const ir::Node& n, c10::ScalarType out, const std::string& a) {
  if (n.kind == OpKind::Gelu) return std::string(ir::is_16bit_float(out) ? "tf_gelu_fast_16(" : "tf_gelu_fast(") + a + ")";
  if (n.kind == OpKind::GeluTanh) return "tf_gelu_tanh_fast(" + a + ")";
  return std::nullopt;
}

// A value that a reduction reads and another op reads too must be one value for both: x -
// mean(x) over one element is exactly 0, as in eager. Where the value's expression ends in a
// multiply, the compiler may contract each use into an fma of its own (`x * k - mean` became
// fma(x, k, -mean), which kept the product's rounding error, then scaled by 1 / sqrt(eps): fuzz
// seed 11, program 4475, layer_norm over a size-1 dim of hardsigmoid's x * (1 / 6); seed 54,
// program 471, the same of gelu's x * 0.5 * (1 + erf)).
bool shared_with_a_reduction(const ir::Node& n) {
  bool reduced = false, other = false;
  for (const ir::Node* u : n.output()->uses) (ir::is_reduction(u->kind) ? reduced : other) = true;
  return reduced && other;
}

// Kinds whose float expression cannot end in a multiply (its last operation an add, a sub, a
// select, a comparison, a rounding or a correctly rounded division or square root): no use of
// theirs can be contracted with the operation that made them.
bool ends_in_no_product(OpKind k) {
  switch (k) {
    case OpKind::Add: case OpKind::Sub: case OpKind::Neg: case OpKind::Abs: case OpKind::Relu:
    case OpKind::Maximum: case OpKind::Minimum: case OpKind::ClampMin: case OpKind::ClampMax:
    case OpKind::Where: case OpKind::Cast: case OpKind::Fill: case OpKind::Floor: case OpKind::Ceil:
    case OpKind::Round: case OpKind::Trunc: case OpKind::Sign: case OpKind::Sqrt: case OpKind::DivTrunc:
    case OpKind::DivFloor: case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le:
    case OpKind::Gt: case OpKind::Ge: case OpKind::LogicalAnd: case OpKind::LogicalOr: case OpKind::LogicalNot:
      return true;
    default:
      return false;
  }
}

// An expression that is one call whose result the compiler cannot contract: a multiply with an
// explicit rounding, or an approximation ending in an asm instruction (ex2.approx, rcp.approx).
bool ends_opaque(const std::string& expr) {
  static const char* const calls[] = {"__fmul_rn(", "tf_exp_shifted(", "tf_exp_fast(", "tf_sigmoid_fast("};
  for (const char* c : calls) {
    const std::string prefix(c);
    if (expr.rfind(prefix, 0) != 0 || expr.back() != ')') continue;
    int depth = 0;
    for (size_t i = prefix.size() - 1; i < expr.size(); ++i) {
      depth += expr[i] == '(' ? 1 : expr[i] == ')' ? -1 : 0;
      if (depth == 0) return i + 1 == expr.size();
    }
  }
  return false;
}

}  // namespace

void emit_pointwise(SourceBuilder& b, const ir::Node& n, ValueNames& names, bool fast_math, const ValueNames* reciprocals,
                    bool per_row) {
  if (ir::is_view(n.kind) || n.kind == OpKind::ExpandAs) {
    // Inputs are read through their views (FusionGroup::input_views): the value in the input's
    // register already is the one at the view's element. ExpandAs is its first input broadcast
    // (its second gives the domain its sizes). A view that begins an input's path already names
    // that input's register (FusionGroup::input_binds).
    if (!names.count(n.output())) names[n.output()] = names.at(n.inputs.at(0));
    return;
  }
  TORCHFUSE_INTERNAL_ASSERT(ir::is_pointwise(n.kind), "emit_pointwise on ", ir::op_name(n.kind));
  const c10::ScalarType out = n.output()->type.dtype;
  c10::ScalarType compute = register_dtype(n.compute_dtype == c10::ScalarType::Undefined ? out : n.compute_dtype);
  if (n.kind == OpKind::LogicalNot) compute = c10::ScalarType::Bool;
  std::string expr;
  if (n.kind == OpKind::Where) {
    expr = "(" + operand(n.inputs[0], c10::ScalarType::Bool, names) + " ? " +
           operand(n.inputs[1], compute, names) + " : " + operand(n.inputs[2], compute, names) + ")";
  } else if (n.kind == OpKind::Fill) {
    // The number as the output dtype stores it (a 16-bit fill rounds it, as eager's fill does).
    expr = ir::is_16bit_float(out) ? round_to(out, operand(n.inputs[1], c10::ScalarType::Float, names))
                                   : operand(n.inputs[1], compute, names);
  } else if (n.kind == OpKind::Cast && (out == c10::kHalf || out == c10::kBFloat16) &&
             n.inputs[0]->type.dtype != out) {
    // An explicit cast rounds to the narrower type, as eager does, even though the value stays
    // in a float register.
    expr = round_to(out, operand(n.inputs[0], c10::ScalarType::Float, names));
  } else if (compute == c10::ScalarType::Float && exp_of_shifted_max(n)) {
    expr = "tf_exp_shifted(" + operand(n.inputs[0], compute, names) + ")";
  } else if (auto fast = compute == c10::ScalarType::Float && fast_math ? one_plus(n, out, names) : std::nullopt) {
    expr = *fast;
  } else if (n.inputs.size() == 1) {
    const std::string a = operand(n.inputs[0], compute, names);
    std::optional<std::string> fast;
    if (compute == c10::ScalarType::Float && fast_math) {
      fast = fast_gelu(n, out, a);
      if (!fast) fast = fast_unary(n, out, a);
    }
    expr = fast ? *fast : unary_expr(n.kind, compute, a);
  } else {
    // A comparison sees 16-bit operands as eager does, rounded to their dtype: an eager-stored
    // value that reaches one is rounded where it is made (Value::feeds_discontinuity; found by
    // the fuzzer: torch.where(t > 0.1, t, y) picked the other branch). A composite's own float
    // intermediates compare unrounded, as in eager's kernel.
    const std::string a = operand(n.inputs[0], compute, names);
    std::optional<std::string> special;
    if (n.kind == OpKind::Pow) special = pow_special(a, n.inputs[1], compute);
    if (n.kind == OpKind::Pow && !special) special = pow_integral(a, n.inputs[1], compute);
    const std::string b_expr = operand(n.inputs[1], compute, names);
    if (n.kind == OpKind::DivTrunc && (out == c10::kHalf || out == c10::kBFloat16)) {
      // Eager rounds the quotient to the output dtype before truncating it.
      special = "truncf(" + round_to(out, a + " / " + b_expr) + ")";
    }
    if (n.kind == OpKind::Div && compute == c10::ScalarType::Float && reciprocals && reciprocals->count(n.inputs[1])) {
      // The reciprocal is 0 where 1 / v would not be exact enough (v zero, denormal, infinite or
      // NaN): those rows divide.
      const std::string& r = reciprocals->at(n.inputs[1]);
      special = "(" + r + " != 0.0f ? " + a + " * " + r + " : " + a + " / " + b_expr + ")";
    }
    if (!special && n.kind == OpKind::Div && compute == c10::ScalarType::Float && n.inputs[1]->reduced_count_minus) {
      // A division by the reduced count (a mean, a variance) multiplies by its reciprocal, as
      // ATen's mean does (MeanOps: the sum times 1 / N). 1 / N is the same in every thread and
      // row, computed once off the row's critical path: an IEEE division after each team
      // reduction cost H200 0.13 us of a 1.9 us layer norm over 128 rows of 768, 0.7 of 6.4
      // over 4096 rows (docs/performance.md).
      special = "(" + a + " * (1.0f / " + b_expr + "))";
    }
    if (!special && n.kind == OpKind::Mul && compute == c10::ScalarType::Float && shared_with_a_reduction(n)) {
      special = "__fmul_rn(" + a + ", " + b_expr + ")";
    }
    expr = special ? *special : binary_expr(n.kind, compute, a, b_expr);
  }
  if (compute == c10::ScalarType::Float && !ends_in_no_product(n.kind) && !ends_opaque(expr) && shared_with_a_reduction(n)) {
    expr = "tf_round_here(" + expr + ")";
  }
  const std::string name = b.fresh("t");
  expr = convert(expr, result_dtype(n, compute), out);
  // Casts, truncating divisions and fills to 16 bits round above already.
  const bool rounded = (n.kind == OpKind::Cast || n.kind == OpKind::DivTrunc || n.kind == OpKind::Fill) && ir::is_16bit_float(out);
  if (!rounded && !ir::exact_on_16bit_operands(n.kind)) {
    expr = eager_rounded(n.output(), expr, !bounded_on_half_operands(n.kind), per_row ? Rounding::Always : Rounding::WhereItDecides);
  }
  b.line(register_type(out) + " " + name + " = " + expr + ";  // " + ir_comment(n));
  names[n.output()] = name;
}

}  // namespace codegen
}  // namespace torchfuse
