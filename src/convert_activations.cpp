// TorchScript activations -> IR: leaky_relu, elu (selu, celu), softplus, hardtanh (relu6),
// hardsigmoid, hardswish and mish, decomposed into primitive pointwise ops that compute what
// ATen's CUDA kernels compute, in the same math type (float for fp16/bf16), with the kernels'
// constants (ActivationEluKernel.cu, ActivationSoftplusKernel.cu, ...).
#include "src/convert_context.h"

namespace torchfuse {
namespace {

using ir::OpKind;

// The constant number argument i (a Python float or int), or nullopt after declining.
std::optional<double> number_arg(ConvertContext& ctx, size_t i) {
  if (!ctx.needs_inputs(i + 1)) return std::nullopt;  // declined there
  auto c = ctx.constant(i);
  if (!c || !(c->isDouble() || c->isInt())) {
    ctx.decline(ctx.arg_name(i) + " is not a constant number");
    return std::nullopt;
  }
  return c->toScalar().toDouble();
}

// A number as the kernel's math type holds it (Scalar::to<opmath_t>()): float for every
// dtype but double.
double as_opmath(double v, c10::ScalarType out) {
  return opmath_type(out) == c10::ScalarType::Double ? v : static_cast<double>(static_cast<float>(v));
}

// The input of a floating activation; nullptr after declining.
ir::Value* floating_input(ConvertContext& ctx) {
  ir::Value* x = ctx.in(0);
  if (!pointwise_output_matches(ctx, {x})) return nullptr;  // declined there
  const auto out = ctx.out_type().dtype;
  if (!is_floating(out) || x->type.dtype != out) {
    ctx.decline(ctx.op_name() + " on " + ir::dtype_short_name(x->type.dtype) + " is left to ATen");
    return nullptr;
  }
  return x;
}

// A value the kernel's select returns, as eager stores it: rounded to 16 bits where a
// discontinuity reads the select (where() passes its branches through unrounded).
ir::Value* stored_branch(ir::Value* v) {
  if (v->producer && ir::is_16bit_float(v->type.dtype)) v->eager_rounds = true;
  return v;
}

ir::Value* times(ConvertContext& ctx, ir::Value* x, double c, c10::ScalarType out) {
  return c == 1.0 ? x : ctx.pointwise(OpKind::Mul, {x, ctx.scalar(c)}, out, out);
}

ir::Value* greater_than(ConvertContext& ctx, ir::Value* x, double c, c10::ScalarType out) {
  return ctx.pointwise(OpKind::Gt, {x, ctx.scalar(c)}, c10::ScalarType::Bool, out);
}

// leaky_relu: x > 0 ? x : x * negative_slope.
bool convert_leaky_relu(ConvertContext& ctx) {
  ir::Value* x = floating_input(ctx);
  if (!x) return false;  // declined there
  double slope = 0.01;
  if (ctx.num_inputs() > 1) {
    auto s = number_arg(ctx, 1);
    if (!s) return false;  // declined there
    slope = *s;
  }
  const auto out = ctx.out_type().dtype;
  ir::Value* neg = stored_branch(ctx.pointwise(OpKind::Mul, {x, ctx.scalar(as_opmath(slope, out))}, out, out));
  ctx.bind_output(0, ctx.pointwise(OpKind::Where, {greater_than(ctx, x, 0.0, out), x, neg}, out, out));
  return true;
}

// ELU as ATen's elu_kernel: x > 0 ? x * scale : expm1(x * input_scale) * (alpha * scale), the
// product alpha * scale taken in the math type.
bool elu(ConvertContext& ctx, ir::Value* x, double alpha, double scale, double input_scale) {
  const auto out = ctx.out_type().dtype;
  const double negcoef = opmath_type(out) == c10::ScalarType::Double
                             ? alpha * scale
                             : static_cast<double>(static_cast<float>(alpha) * static_cast<float>(scale));
  ir::Value* pos = stored_branch(times(ctx, x, as_opmath(scale, out), out));
  ir::Value* e = ctx.pointwise(OpKind::Expm1, {times(ctx, x, as_opmath(input_scale, out), out)}, out, out);
  ir::Value* neg = stored_branch(ctx.pointwise(OpKind::Mul, {e, ctx.scalar(negcoef)}, out, out));
  ctx.bind_output(0, ctx.pointwise(OpKind::Where, {greater_than(ctx, x, 0.0, out), pos, neg}, out, out));
  return true;
}

bool convert_elu(ConvertContext& ctx) {
  ir::Value* x = floating_input(ctx);
  if (!x) return false;  // declined there
  double args[3] = {1.0, 1.0, 1.0};  // alpha, scale, input_scale
  for (size_t i = 1; i < ctx.num_inputs() && i <= 3; ++i) {
    auto v = number_arg(ctx, i);
    if (!v) return false;  // declined there
    args[i - 1] = *v;
  }
  return elu(ctx, x, args[0], args[1], args[2]);
}

// selu: elu with ATen's constants.
bool convert_selu(ConvertContext& ctx) {
  ir::Value* x = floating_input(ctx);
  if (!x) return false;  // declined there
  return elu(ctx, x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0);
}

// celu(x, alpha): elu(x, alpha, 1, 1 / alpha), as ATen composes it.
bool convert_celu(ConvertContext& ctx) {
  ir::Value* x = floating_input(ctx);
  if (!x) return false;  // declined there
  double alpha = 1.0;
  if (ctx.num_inputs() > 1) {
    auto a = number_arg(ctx, 1);
    if (!a) return false;  // declined there
    alpha = *a;
  }
  if (alpha == 0.0) return ctx.decline("alpha=0 is an error in eager");
  return elu(ctx, x, alpha, 1.0, 1.0 / alpha);
}

// softplus as ATen's kernel: x * beta > threshold ? x : log1p(exp(x * beta)) / beta.
bool convert_softplus(ConvertContext& ctx) {
  ir::Value* x = floating_input(ctx);
  if (!x) return false;  // declined there
  double beta = 1.0, threshold = 20.0;
  if (ctx.num_inputs() > 1) {
    auto b = number_arg(ctx, 1);
    if (!b) return false;  // declined there
    beta = *b;
  }
  if (ctx.num_inputs() > 2) {
    auto t = number_arg(ctx, 2);
    if (!t) return false;  // declined there
    threshold = *t;
  }
  const auto out = ctx.out_type().dtype;
  beta = as_opmath(beta, out);
  ir::Value* bx = times(ctx, x, beta, out);
  ir::Value* above = greater_than(ctx, bx, as_opmath(threshold, out), out);
  ir::Value* sp = ctx.pointwise(OpKind::Log1p, {ctx.pointwise(OpKind::Exp, {bx}, out, out)}, out, out);
  if (beta != 1.0) sp = ctx.pointwise(OpKind::Div, {sp, ctx.scalar(beta)}, out, out);
  ctx.bind_output(0, ctx.pointwise(OpKind::Where, {above, x, stored_branch(sp)}, out, out));
  return true;
}

// hardtanh(x, min_val, max_val) and relu6(x) = hardtanh(x, 0, 6): a clamp, as ATen implements
// them (its integer bounds truncated, as toLong() does).
bool convert_hardtanh(ConvertContext& ctx, std::optional<double> lo, std::optional<double> hi) {
  ir::Value* x = ctx.in(0);
  if (!pointwise_output_matches(ctx, {x})) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  if (out == c10::ScalarType::Bool || x->type.dtype != out) {
    return ctx.decline(ctx.op_name() + " on " + ir::dtype_short_name(x->type.dtype) + " is left to ATen");
  }
  if (!lo) {
    auto v = number_arg(ctx, 1);
    if (!v) return false;  // declined there
    lo = *v;
  }
  if (!hi) {
    auto v = number_arg(ctx, 2);
    if (!v) return false;  // declined there
    hi = *v;
  }
  if (out == c10::ScalarType::Byte && (*lo < 0 || *hi < 0)) return ctx.decline("negative bounds on u8 are an error in eager");
  auto bound = [&](double b) {
    return is_floating(out) ? ctx.scalar(b) : ctx.scalar(c10::Scalar(static_cast<int64_t>(b)));
  };
  ctx.bind_output(0, clamp_between(ctx, x, bound(*lo), bound(*hi), out));
  return true;
}

// min(max(x + 3, 0), 6), hardsigmoid's and hardswish's shared part.
ir::Value* relu6_of_x_plus_3(ConvertContext& ctx, ir::Value* x, c10::ScalarType out) {
  ir::Value* v = ctx.pointwise(OpKind::Add, {x, ctx.scalar(3.0)}, out, out);
  v = ctx.pointwise(OpKind::ClampMin, {v, ctx.scalar(0.0)}, out, out);
  return ctx.pointwise(OpKind::ClampMax, {v, ctx.scalar(6.0)}, out, out);
}

// ATen's one_sixth: 1.0f / 6.0f in every dtype (double too).
constexpr double kOneSixth = static_cast<double>(1.0f / 6.0f);

// hardsigmoid: min(max(x + 3, 0), 6) * (1/6).
bool convert_hardsigmoid(ConvertContext& ctx) {
  ir::Value* x = floating_input(ctx);
  if (!x) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  ctx.bind_output(0, ctx.pointwise(OpKind::Mul, {relu6_of_x_plus_3(ctx, x, out), ctx.scalar(kOneSixth)}, out, out));
  return true;
}

// hardswish: x * min(max(x + 3, 0), 6) * (1/6).
bool convert_hardswish(ConvertContext& ctx) {
  ir::Value* x = floating_input(ctx);
  if (!x) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  ir::Value* v = ctx.pointwise(OpKind::Mul, {x, relu6_of_x_plus_3(ctx, x, out)}, out, out);
  ctx.bind_output(0, ctx.pointwise(OpKind::Mul, {v, ctx.scalar(kOneSixth)}, out, out));
  return true;
}

// mish: x * tanh(log1p(exp(x))).
bool convert_mish(ConvertContext& ctx) {
  ir::Value* x = floating_input(ctx);
  if (!x) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  ir::Value* sp = ctx.pointwise(OpKind::Log1p, {ctx.pointwise(OpKind::Exp, {x}, out, out)}, out, out);
  ctx.bind_output(0, ctx.pointwise(OpKind::Mul, {x, ctx.pointwise(OpKind::Tanh, {sp}, out, out)}, out, out));
  return true;
}

}  // namespace

const std::unordered_map<std::string, Converter>& activation_converters() {
  static const std::unordered_map<std::string, Converter> table = {
      {"aten::leaky_relu", convert_leaky_relu},
      {"aten::elu", convert_elu},
      {"aten::selu", convert_selu},
      {"aten::celu", convert_celu},
      {"aten::softplus", convert_softplus},
      {"aten::hardtanh", [](ConvertContext& c) { return convert_hardtanh(c, std::nullopt, std::nullopt); }},
      {"aten::relu6", [](ConvertContext& c) { return convert_hardtanh(c, 0.0, 6.0); }},
      {"aten::hardsigmoid", convert_hardsigmoid},
      {"aten::hardswish", convert_hardswish},
      {"aten::mish", convert_mish},
  };
  return table;
}

}  // namespace torchfuse
