// TorchScript reductions and normalizations -> IR. Composite ops are decomposed into the
// primitives reduce_sum / reduce_max / reduce_min and pointwise ops, the way eager computes
// them, so that they fuse with their neighbours:
//   mean       = reduce_sum(x) / N
//   var, std   = corrected two passes (below): d = x - mean(x); (sum(d * d) - sum(d)^2 / N) / (N - correction)
//                (never E[x^2] - E[x]^2)
//   softmax    = e / reduce_sum(e) with e = exp(x - reduce_max(x))
//   logsumexp  = log(reduce_sum(exp(x - m))) + m, m = reduce_max(x) with infinities masked to 0
//   layer_norm = (x - mean) * rsqrt(var + eps) * w + b, mean and var by the corrected two passes;  rms_norm = x * rsqrt(mean(x^2) + eps) * w
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <limits>

#include "src/convert_context.h"
#include "src/error.h"

namespace torchfuse {
namespace {

using ir::OpKind;

// Normalized, sorted, de-duplicated dims; an absent or empty list means every dim. Declines
// (nullopt) when the argument is not a constant int or list of ints in range.
std::optional<std::vector<int64_t>> dims_arg(ConvertContext& ctx, size_t index, int64_t rank, bool empty_means_all) {
  std::vector<int64_t> dims;
  auto c = ctx.constant(index);
  if (!c) {
    ctx.decline(ctx.arg_name(index) + " argument is not a constant");
    return std::nullopt;
  }
  if (c->isInt()) {
    dims.push_back(c->toInt());
  } else if (c->isIntList()) {
    for (int64_t d : c->toIntVector()) dims.push_back(d);
  } else if (!c->isNone()) {
    ctx.decline(ctx.arg_str(index) + " is not an int or a list of ints");
    return std::nullopt;
  }
  if (dims.empty() && (c->isNone() || empty_means_all)) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  }
  for (auto& d : dims) {
    const int64_t r = std::max<int64_t>(rank, 1);
    if (d < -r || d >= r) {
      ctx.decline(ctx.arg_name(index) + " " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
      return std::nullopt;
    }
    if (d < 0) d += r;
  }
  if (rank == 0) dims.clear();  // reducing a 0-dim tensor is the identity
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

std::vector<int64_t> all_dims(int64_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  return dims;
}

// A constant bool argument (keepdim, unbiased); declines (nullopt) otherwise.
std::optional<bool> bool_arg(ConvertContext& ctx, size_t index) {
  auto c = ctx.constant(index);
  if (!c || !c->isBool()) {
    ctx.decline(ctx.arg_name(index) + " is not a constant bool");
    return std::nullopt;
  }
  return c->toBool();
}

// (dim, keepdim) arguments at these positions; declines (false) when either cannot be read.
bool dims_and_keepdim(ConvertContext& ctx, size_t dim_index, size_t keepdim_index, int64_t rank, bool empty_means_all,
                      std::optional<std::vector<int64_t>>* dims, bool* keepdim) {
  *dims = dims_arg(ctx, dim_index, rank, empty_means_all);
  if (!*dims) return false;  // declined there
  auto k = bool_arg(ctx, keepdim_index);
  if (!k) return false;  // declined there
  *keepdim = *k;
  return true;
}

std::vector<int64_t> reduced_shape(const std::vector<int64_t>& sizes, const std::vector<int64_t>& dims, bool keepdim) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced) out.push_back(sizes[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}


ir::Value* reduce(ConvertContext& ctx, OpKind kind, ir::Value* x, const std::vector<int64_t>& dims, bool keepdim,
                  c10::ScalarType dtype) {
  auto shape = reduced_shape(x->type.sizes, dims, keepdim);
  auto strides = ir::contiguous_strides(shape);
  ir::Node* n = ctx.emit(kind, {x}, ir::Type::tensor(dtype, shape, strides, x->type.device), dtype);
  n->dims = dims;
  n->keepdim = keepdim;
  return n->output();
}

// The reduction's dims must keep their sizes on every call (layer_norm's normalized_shape):
// the kernel checks them, as eager would.
ir::Value* pinned(ir::Value* reduced) {
  ir::Node* n = reduced->producer;
  for (int64_t d : n->dims) n->pinned_sizes.push_back(n->inputs[0]->type.sizes[d]);
  return reduced;
}

ir::Value* pw(ConvertContext& ctx, OpKind kind, std::vector<ir::Value*> in, c10::ScalarType dtype) {
  return ctx.pointwise(kind, std::move(in), dtype, dtype);
}

ir::Value* literal(ConvertContext& ctx, double v) { return ctx.scalar(c10::Scalar(v)); }

// The input to reduce: a floating or integer tensor the kernels can read, with a typed output.
// Declines (nullptr) otherwise.
ir::Value* reducible_input(ConvertContext& ctx) {
  ir::Value* x = ctx.in(0);
  std::string why;
  if (!x->type.is_tensor()) why = not_a_tensor("input", x->type);
  else if (!is_kernel_dtype(x->type.dtype)) why = not_kernel_dtype("input", x->type.dtype);
  else if (!ctx.out_type().is_tensor()) why = not_a_tensor("output", ctx.out_type());
  else return x;
  ctx.decline(std::move(why));
  return nullptr;
}

// The decompositions of means, variances, norms and softmax divide, take roots or
// exponentials: they are fused for floating `what` ("output", "input") only. Declines otherwise.
bool require_floating(ConvertContext& ctx, const std::string& what, c10::ScalarType dtype) {
  if (is_floating(dtype)) return true;
  return ctx.decline(ctx.op_name() + " with " + what + " dtype " +
                     ir::dtype_short_name(dtype) + ": only floating " + what + "s are fused");
}

bool finish(ConvertContext& ctx, ir::Value* v) {
  TORCHFUSE_INTERNAL_ASSERT(v->type.sizes == ctx.out_type().sizes, "decomposed ", ctx.node()->kind().toQualString(),
                            " has shape ", v->type.str(), ", eager gave ", ctx.out_type().str());
  ctx.bind_output(0, v);
  return true;
}

// sum / mean: (self, dtype) or (self, dim, keepdim, dtype).
bool convert_sum_mean(ConvertContext& ctx, bool mean) {
  ir::Value* x = reducible_input(ctx);
  if (!x) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  std::optional<std::vector<int64_t>> dims;
  bool keepdim = false;
  if (ctx.num_inputs() == 2) {
    dims = all_dims(x->type.rank());
  } else if (ctx.num_inputs() != 4) {
    const std::string op = ctx.op_name();
    return ctx.decline(ctx.op_with_arity() + ": only " + op + "(input, dtype) and " + op +
                       "(input, dim, keepdim, dtype) are fused");
  } else if (!dims_and_keepdim(ctx, 1, 2, x->type.rank(), true, &dims, &keepdim)) {
    return false;  // declined there
  }
  if (mean && !require_floating(ctx, "output", out)) return false;  // declined there
  ir::Value* s = reduce(ctx, OpKind::ReduceSum, x, *dims, keepdim, out);
  if (mean) s = pw(ctx, OpKind::Div, {s, ctx.graph().add_reduced_count(0)}, out);
  return finish(ctx, s);
}

// adaptive_avg_pool2d / adaptive_avg_pool1d (self, output_size) to size 1 everywhere: the mean over
// the pooled (last two or last) dims, kept (a CNN's global pooling; ATen computes that mean too).
bool convert_adaptive_avg_pool(ConvertContext& ctx, int64_t pooled) {
  ir::Value* x = reducible_input(ctx);
  if (!x) return false;  // declined there
  const std::string op = ctx.op_name();
  if (ctx.num_inputs() != 2) return ctx.decline(ctx.op_with_arity() + ": expected (input, output_size)");
  const int64_t rank = x->type.rank();
  if (rank != pooled + 1 && rank != pooled + 2) {
    return ctx.decline(op + " of a rank-" + std::to_string(rank) + " input: expected rank " + std::to_string(pooled + 1) +
                       " or " + std::to_string(pooled + 2));
  }
  const auto sizes = ctx.int_list_arg(1);
  bool ones = sizes && static_cast<int64_t>(sizes->size()) == pooled;
  for (size_t i = 0; ones && i < sizes->size(); ++i) ones = !(*sizes)[i].operand && (*sizes)[i].value == 1;
  if (!ones) return ctx.decline(op + ": only an output_size of constant 1s (global pooling) is fused");
  const auto out = ctx.out_type().dtype;
  if (!require_floating(ctx, "output", out)) return false;  // declined there
  std::vector<int64_t> dims;
  for (int64_t d = rank - pooled; d < rank; ++d) {
    if (x->type.sizes[d] == 0) return ctx.decline(op + " of an empty input " + x->type.str());
    dims.push_back(d);
  }
  ir::Value* s = reduce(ctx, OpKind::ReduceSum, x, dims, true, out);
  return finish(ctx, pw(ctx, OpKind::Div, {s, ctx.graph().add_reduced_count(0)}, out));
}

// amax / amin (self, dim, keepdim); max / min (self): every dim; max.dim / min.dim (self, dim,
// keepdim) when the indices are unused.
bool convert_extremum(ConvertContext& ctx, OpKind kind, bool list_form) {
  // max(a, b) and min(a, b) of two tensors: torch.maximum and torch.minimum.
  if (!list_form && ctx.num_inputs() == 2 && ctx.in(1)->type.is_tensor()) {
    return convert_binary_op(ctx, kind == OpKind::ReduceMax ? OpKind::Maximum : OpKind::Minimum);
  }
  ir::Value* x = reducible_input(ctx);
  if (!x) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  if (ctx.num_inputs() == 1) return finish(ctx, reduce(ctx, kind, x, all_dims(x->type.rank()), false, out));
  const std::string op = ctx.op_name();
  if (ctx.num_inputs() != 3) {
    return ctx.decline(ctx.op_with_arity() + ": only " + op + "(input) and " + op + "(input, dim, keepdim) are fused");
  }
  if (!list_form && ctx.node()->outputs().size() != 2) {
    return ctx.decline(op + " with " + std::to_string(ctx.node()->outputs().size()) +
                       " outputs: expected values and indices");
  }
  if (!list_form && ctx.node()->outputs()[1]->hasUses()) {
    return ctx.decline(op + "(input, dim) with its indices used: only the values are fused");
  }
  auto dims = dims_arg(ctx, 1, x->type.rank(), true);
  if (!dims) return false;  // declined there
  auto keepdim = bool_arg(ctx, 2);
  if (!keepdim) return false;  // declined there
  if (x->type.numel() == 0) return ctx.decline("input " + x->type.str() + " is empty");
  ir::Value* r = reduce(ctx, kind, x, *dims, *keepdim, out);
  if (!list_form) ctx.bind_output(1, ctx.graph().add_other("unused_indices"));
  return finish(ctx, r);
}

// Mean and sum of squared deviations by the corrected two-pass algorithm (Chan, Golub and
// LeVeque): m0 = sum(x) / N, d = x - m0, s = sum(d), q = sum(d * d); mean = m0 + s / N and
// M2 = max(q - s * (s / N), 0). The correction term makes the mean exact where every value of a
// row is equal (m0 is a rounding off; eager's Welford mean is exact, and its layer norm and
// variance exactly 0 there), and keeps M2 at least as accurate as the plain two passes. `pin`:
// the reductions' sizes are pinned (layer_norm's constant normalized_shape). `keepdim` is for
// M2; the mean is made only with keepdim (nullptr otherwise).
struct Moments {
  ir::Value* mean = nullptr;
  ir::Value* m2 = nullptr;
};

Moments corrected_moments(ConvertContext& ctx, ir::Value* x, const std::vector<int64_t>& dims, bool keepdim,
                          c10::ScalarType out, bool pin) {
  auto sum = [&](ir::Value* v, bool keep) {
    ir::Value* r = reduce(ctx, OpKind::ReduceSum, v, dims, keep, out);
    return pin ? pinned(r) : r;
  };
  ir::Value* n = ctx.graph().add_reduced_count(0);
  ir::Value* m0 = pw(ctx, OpKind::Div, {sum(x, true), n}, out);
  ir::Value* d = pw(ctx, OpKind::Sub, {x, m0}, out);
  ir::Value* s = sum(d, keepdim);
  ir::Value* q = sum(pw(ctx, OpKind::Mul, {d, d}, out), keepdim);
  // The correction s * (s / N) is at most q, except where q overflowed (values near 1e30 square
  // to inf): capped at the largest float, so that M2 is inf there as eager's Welford M2 is, not
  // inf - inf. (A cap, not a comparison: a comparison would make the input's producers round
  // to 16 bits, Value::feeds_discontinuity, at a conversion per element.)
  ir::Value* c = pw(ctx, OpKind::Mul, {s, pw(ctx, OpKind::Div, {s, n}, out)}, out);
  ir::Value* capped = pw(ctx, OpKind::ClampMax, {c, literal(ctx, std::numeric_limits<float>::max())}, out);
  Moments m;
  m.m2 = pw(ctx, OpKind::ClampMin, {pw(ctx, OpKind::Sub, {q, capped}, out), literal(ctx, 0.0)}, out);
  if (keepdim) m.mean = pw(ctx, OpKind::Add, {m0, pw(ctx, OpKind::Div, {s, n}, out)}, out);
  return m;
}

// var / std: (self, unbiased) | (self, dim, unbiased, keepdim) | (self, dim, correction, keepdim).
bool convert_var_std(ConvertContext& ctx, bool is_std) {
  ir::Value* x = reducible_input(ctx);
  if (!x) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  if (!require_floating(ctx, "output", out)) return false;  // declined there
  std::optional<std::vector<int64_t>> dims;
  double correction = 1;
  bool keepdim = false;
  if (ctx.num_inputs() == 2) {
    auto unbiased = bool_arg(ctx, 1);
    if (!unbiased) return false;  // declined there
    correction = *unbiased ? 1 : 0;
    dims = all_dims(x->type.rank());
  } else if (ctx.num_inputs() == 4) {
    dims = dims_arg(ctx, 1, x->type.rank(), false);
    if (!dims) return false;  // declined there
    auto c = ctx.constant(2);
    if (!c) return ctx.decline(ctx.arg_name(2) + " is not a constant");
    if (c->isBool()) correction = c->toBool() ? 1 : 0;
    else if (c->isInt()) correction = static_cast<double>(c->toInt());
    else if (!c->isNone()) return ctx.decline(ctx.arg_str(2) + " is not a bool, an int or None");
    auto k = bool_arg(ctx, 3);
    if (!k) return false;  // declined there
    keepdim = *k;
  } else {
    const std::string op = ctx.op_name();
    return ctx.decline(ctx.op_with_arity() + ": only " + op + "(input, unbiased) and " + op +
                       "(input, dim, correction, keepdim) are fused");
  }
  const Moments m = corrected_moments(ctx, x, *dims, keepdim, out, false);
  ir::Value* var = pw(ctx, OpKind::Div, {m.m2, ctx.graph().add_reduced_count(correction)}, out);
  return finish(ctx, is_std ? pw(ctx, OpKind::Sqrt, {var}, out) : var);
}

// max with infinities masked to 0, as eager's logsumexp does before subtracting it.
ir::Value* masked_max(ConvertContext& ctx, ir::Value* x, const std::vector<int64_t>& dims, bool keepdim,
                      c10::ScalarType out) {
  ir::Value* m = reduce(ctx, OpKind::ReduceMax, x, dims, keepdim, out);
  ir::Value* is_inf = ctx.pointwise(OpKind::Eq, {pw(ctx, OpKind::Abs, {m}, out),
                                                 literal(ctx, std::numeric_limits<double>::infinity())},
                                    c10::ScalarType::Bool, out);
  return pw(ctx, OpKind::Where, {is_inf, literal(ctx, 0.0), m}, out);
}

bool convert_logsumexp(ConvertContext& ctx) {
  ir::Value* x = reducible_input(ctx);
  if (!x) return false;  // declined there
  if (ctx.num_inputs() != 3) return ctx.decline(ctx.op_with_arity() + ": only logsumexp(input, dim, keepdim) is fused");
  const auto out = ctx.out_type().dtype;
  if (!require_floating(ctx, "output", out)) return false;  // declined there
  auto dims = dims_arg(ctx, 1, x->type.rank(), true);
  if (!dims) return false;  // declined there
  auto keepdim = bool_arg(ctx, 2);
  if (!keepdim) return false;  // declined there
  ir::Value* mk = masked_max(ctx, x, *dims, true, out);
  ir::Value* e = pw(ctx, OpKind::Exp, {pw(ctx, OpKind::Sub, {x, mk}, out)}, out);
  ir::Value* s = reduce(ctx, OpKind::ReduceSum, e, *dims, *keepdim, out);
  ir::Value* m_out = *keepdim ? mk : masked_max(ctx, x, *dims, false, out);
  return finish(ctx, pw(ctx, OpKind::Add, {pw(ctx, OpKind::Log, {s}, out), m_out}, out));
}

// softmax / log_softmax (self, dim, dtype).
bool convert_softmax(ConvertContext& ctx, bool log) {
  ir::Value* x = reducible_input(ctx);
  if (!x) return false;  // declined there
  if (!ctx.needs_inputs(2)) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  if (!require_floating(ctx, "output", out)) return false;  // declined there
  const std::string op = ctx.op_name();
  if (x->type.rank() == 0) return ctx.decline(op + " of a 0-dim tensor");
  auto dims = dims_arg(ctx, 1, x->type.rank(), false);
  if (!dims) return false;  // declined there
  if (dims->size() != 1) {
    return ctx.decline(op + " over " + std::to_string(dims->size()) + " dims: only one dim is fused");
  }
  ir::Value* m = reduce(ctx, OpKind::ReduceMax, x, *dims, true, out);
  ir::Value* shifted = pw(ctx, OpKind::Sub, {x, m}, out);
  ir::Value* e = pw(ctx, OpKind::Exp, {shifted}, out);
  ir::Value* s = reduce(ctx, OpKind::ReduceSum, e, *dims, true, out);
  if (log) return finish(ctx, pw(ctx, OpKind::Sub, {shifted, pw(ctx, OpKind::Log, {s}, out)}, out));
  return finish(ctx, pw(ctx, OpKind::Div, {e, s}, out));
}

// Is `x` computed from `y` by pointwise ops alone (or `y` itself)? Then, with both of one rank,
// a dim of y that is not size 1 (the guard keeps it so) has x's size on every call: pointwise ops
// broadcast, and a size-1 dim is the only one that may differ.
bool pointwise_from(const ir::Value* x, const ir::Value* y, int budget = 64) {
  if (x == y) return true;
  // (A contiguous() keeps its input's sizes: passes/stage_transposed_rows.h puts one before a
  // norm whose input is transposed.)
  const auto keeps_sizes = [](ir::OpKind k) { return ir::is_pointwise(k) || k == ir::OpKind::Contiguous; };
  if (budget <= 0 || !x->producer || !keeps_sizes(x->producer->kind)) return false;
  for (const ir::Value* in : x->producer->inputs)
    if (in->type.is_tensor() && pointwise_from(in, y, budget - 1)) return true;
  return false;
}

// Is `x` computed from `y` by pointwise ops each reading one tensor that is not 0-dim (casts,
// unary ops, ops with scalars), or `y` itself? Then x has y's sizes on every call, size-1 dims
// included: nothing broadcasts on the way (a decomposed group norm reads its layer norm's sizes
// from the reshaped input, before the cast to float32: passes/decompose_norms.cpp).
bool same_sizes_from(const ir::Value* x, const ir::Value* y, int budget = 64) {
  if (x == y) return true;
  if (budget <= 0 || !x->producer) return false;
  const ir::OpKind k = x->producer->kind;
  if (!ir::is_pointwise(k) && k != ir::OpKind::Contiguous) return false;
  const ir::Value* from = nullptr;
  for (const ir::Value* in : x->producer->inputs) {
    if (!in->type.is_tensor() || in->type.rank() == 0) continue;
    if (from) return false;  // two tensors: one may broadcast the other
    from = in;
  }
  return from && from->type.sizes == x->type.sizes && same_sizes_from(from, y, budget - 1);
}

// The trailing dims of `x` that a normalized_shape computed from sizes names, the way scripted
// models write it: [x.size(-1)], [x.size(-2), x.size(-1)] or x.size(), of x or of a tensor x is
// computed from pointwise. Such a shape matches the input on every call of the specialization.
std::optional<std::vector<int64_t>> trailing_dims_from_sizes(ConvertContext& ctx, ir::Value* x) {
  const torch::jit::Node* list = ctx.node()->input(1)->node();
  const int64_t rank = x->type.rank();
  static const auto size_kind = c10::Symbol::fromQualString("aten::size");
  // Every dim of y that the list reads must be one that always has x's size.
  auto sizes_of_x = [&](const torch::jit::Node* n, const std::vector<int64_t>& dims) {
    if (n->kind() != size_kind) return false;
    const ir::Value* y = ctx.ir_value(n->input(0));
    if (!y || !y->type.is_tensor() || y->type.rank() != rank || !pointwise_from(x, y)) return false;
    if (same_sizes_from(x, y)) return true;
    for (int64_t d : dims)
      if (y->type.sizes[d] == 1 || y->type.sizes[d] != x->type.sizes[d]) return false;
    return true;
  };
  std::vector<int64_t> every;
  for (int64_t d = 0; d < rank; ++d) every.push_back(d);
  auto is_size_of_x = [&](const torch::jit::Node* n) { return n->inputs().size() == 1 && sizes_of_x(n, every); };
  if (is_size_of_x(list)) return rank > 0 ? std::optional<std::vector<int64_t>>(every) : std::nullopt;  // x.size()
  if (list->kind() != c10::prim::ListConstruct || list->inputs().empty()) return std::nullopt;
  const int64_t k = static_cast<int64_t>(list->inputs().size());
  if (k > rank) return std::nullopt;
  std::vector<int64_t> dims;
  for (int64_t j = 0; j < k; ++j) {
    const torch::jit::Node* size = list->input(j)->node();
    if (size->kind() != size_kind || size->inputs().size() != 2) return std::nullopt;
    const auto dim = torch::jit::toIValue(size->input(1));
    if (!dim || !dim->isInt()) return std::nullopt;
    const int64_t d = dim->toInt() < 0 ? dim->toInt() + rank : dim->toInt();
    if (d != rank - k + j || !sizes_of_x(size, {d})) return std::nullopt;
    dims.push_back(d);
  }
  return dims;
}

// The trailing dims a normalized_shape argument names, and whether their sizes are pinned (a
// constant list: every call must have those sizes; a list of x's own sizes: never checked).
// Declines (nullopt) when it is neither, or a constant list that does not match the input's
// trailing sizes.
struct NormalizedDims {
  std::vector<int64_t> dims;
  bool pinned = true;
};

std::optional<NormalizedDims> normalized_dims(ConvertContext& ctx, ir::Value* x) {
  const std::string name = ctx.arg_name(1);
  if (auto dims = trailing_dims_from_sizes(ctx, x)) return NormalizedDims{*dims, false};
  auto shape = ctx.constant(1);
  if (!shape || !shape->isIntList()) {
    ctx.decline(name + " is not a constant list of ints, nor a list of the input's trailing sizes");
    return std::nullopt;
  }
  const auto s = shape->toIntVector();
  const int64_t rank = x->type.rank();
  const bool fits = !s.empty() && static_cast<int64_t>(s.size()) <= rank &&
                    std::equal(s.begin(), s.end(), x->type.sizes.end() - static_cast<int64_t>(s.size()));
  if (!fits) {
    ctx.decline(name + " " + ir::shape_str(s) + " is not the trailing sizes of input " + x->type.str());
    return std::nullopt;
  }
  std::vector<int64_t> dims;
  for (int64_t d = rank - static_cast<int64_t>(s.size()); d < rank; ++d) dims.push_back(d);
  return NormalizedDims{dims, true};
}

// pinned(r) where the normalized shape pins its sizes.
ir::Value* pinned_if(const NormalizedDims& n, ir::Value* reduced) { return n.pinned ? pinned(reduced) : reduced; }

// Optional weight/bias input: nullptr when None; false in *ok (and a decline) when it cannot be
// used.
ir::Value* optional_tensor(ConvertContext& ctx, size_t index, bool* ok) {
  if (index >= ctx.num_inputs() || ctx.is_none(index)) return nullptr;
  ir::Value* v = ctx.in(index);
  if (!v->type.is_tensor()) *ok = ctx.decline(not_a_tensor(ctx.arg_name(index), v->type));
  else if (!is_kernel_dtype(v->type.dtype)) *ok = ctx.decline(not_kernel_dtype(ctx.arg_name(index), v->type.dtype));
  return v;
}

// layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)
bool convert_layer_norm(ConvertContext& ctx) {
  ir::Value* x = reducible_input(ctx);
  if (!x) return false;  // declined there
  if (!ctx.needs_inputs(5)) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  if (!require_floating(ctx, "output", out)) return false;  // declined there
  auto dims = normalized_dims(ctx, x);
  if (!dims) return false;  // declined there
  auto eps = ctx.constant(4);
  if (!eps || !eps->isDouble()) return ctx.decline(ctx.arg_name(4) + " is not a constant float");
  bool ok = true;
  ir::Value* w = optional_tensor(ctx, 2, &ok);
  if (!ok) return false;  // declined there
  ir::Value* b = optional_tensor(ctx, 3, &ok);
  if (!ok) return false;  // declined there
  const Moments m = corrected_moments(ctx, x, dims->dims, true, out, dims->pinned);
  ir::Value* var = pw(ctx, OpKind::Div, {m.m2, ctx.graph().add_reduced_count(0)}, out);
  ir::Value* rstd = pw(ctx, OpKind::Rsqrt, {pw(ctx, OpKind::Add, {var, literal(ctx, eps->toDouble())}, out)}, out);
  ir::Value* y = pw(ctx, OpKind::Mul, {pw(ctx, OpKind::Sub, {x, m.mean}, out), rstd}, out);
  if (w) y = pw(ctx, OpKind::Mul, {y, w}, out);
  if (b) y = pw(ctx, OpKind::Add, {y, b}, out);
  return finish(ctx, y);
}

double dtype_eps(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Half: return 0.0009765625;
    case c10::ScalarType::BFloat16: return 0.0078125;
    case c10::ScalarType::Double: return std::numeric_limits<double>::epsilon();
    default: return std::numeric_limits<float>::epsilon();
  }
}

// rms_norm(input, normalized_shape, weight, eps): computed in opmath, rounded to the input
// dtype, then scaled by the weight.
bool convert_rms_norm(ConvertContext& ctx) {
  ir::Value* x = reducible_input(ctx);
  if (!x) return false;  // declined there
  if (ctx.num_inputs() != 4) {
    return ctx.decline(ctx.op_with_arity() + ": only rms_norm(input, normalized_shape, weight, eps) is fused");
  }
  if (!require_floating(ctx, "input", x->type.dtype)) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  auto dims = normalized_dims(ctx, x);
  if (!dims) return false;  // declined there
  auto eps_arg = ctx.constant(3);
  if (!eps_arg || !(eps_arg->isNone() || eps_arg->isDouble())) {
    return ctx.decline(ctx.arg_name(3) + " is not a constant float or None");
  }
  const double eps = eps_arg->isNone() ? dtype_eps(x->type.dtype) : eps_arg->toDouble();
  bool ok = true;
  ir::Value* w = optional_tensor(ctx, 2, &ok);
  if (!ok) return false;  // declined there
  const auto acc = opmath_type(x->type.dtype);
  ir::Value* ms = pw(ctx, OpKind::Div, {pinned_if(*dims, reduce(ctx, OpKind::ReduceSum, pw(ctx, OpKind::Mul, {x, x}, acc), dims->dims, true, acc)),
                                        ctx.graph().add_reduced_count(0)},
                     acc);
  ir::Value* r = pw(ctx, OpKind::Rsqrt, {pw(ctx, OpKind::Add, {ms, literal(ctx, eps)}, acc)}, acc);
  ir::Value* y = pw(ctx, OpKind::Mul, {x, r}, acc);
  if (acc != x->type.dtype) y = ctx.pointwise(OpKind::Cast, {y}, x->type.dtype, x->type.dtype);
  if (w) y = pw(ctx, OpKind::Mul, {y, w}, out);
  else if (y->type.dtype != out) y = ctx.pointwise(OpKind::Cast, {y}, out, out);
  return finish(ctx, y);
}

bool is_two(const c10::IValue& p) {
  if (p.isNone()) return true;  // the default p is 2
  if (p.isInt()) return p.toInt() == 2;
  if (p.isDouble()) return p.toDouble() == 2.0;
  return false;
}

// norm(self, p) | norm(self, p, dim, keepdim) | linalg_vector_norm(self, ord, dim, keepdim, dtype): p = 2 only.
bool convert_norm(ConvertContext& ctx, bool linalg) {
  ir::Value* x = reducible_input(ctx);
  if (!x) return false;  // declined there
  const auto out = ctx.out_type().dtype;
  if (!require_floating(ctx, "output", out)) return false;  // declined there
  auto p = ctx.constant(1);
  if (!p) return ctx.decline(ctx.arg_name(1) + " is not a constant");
  if (!is_two(*p)) {
    return ctx.decline(ctx.op_name() + " with " + ctx.arg_str(1) + ": only " + ctx.arg_name(1) + "=2 is fused");
  }
  std::optional<std::vector<int64_t>> dims;
  bool keepdim = false;
  if (ctx.num_inputs() == 2 && !linalg) {
    dims = all_dims(x->type.rank());
  } else if (ctx.num_inputs() != (linalg ? 5u : 4u)) {
    return ctx.decline(ctx.op_with_arity() +
                       (linalg ? ": only linalg_vector_norm(input, ord, dim, keepdim, dtype) is fused"
                               : ": only norm(input, p) and norm(input, p, dim, keepdim) are fused"));
  } else if (!dims_and_keepdim(ctx, 2, 3, x->type.rank(), linalg, &dims, &keepdim)) {
    return false;  // declined there
  }
  ir::Value* ss = reduce(ctx, OpKind::ReduceSum, pw(ctx, OpKind::Mul, {x, x}, out), *dims, keepdim, out);
  return finish(ctx, pw(ctx, OpKind::Sqrt, {ss}, out));
}

// cumsum (self, dim, dtype): the running sum along dim, in the output dtype (eager's: the dtype
// argument, else int64 for integral and bool inputs, else the input's), which it also adds in
// (float for 16-bit floats, as every reduction here).
bool convert_cumsum(ConvertContext& ctx) {
  ir::Value* x = reducible_input(ctx);
  if (!x) return false;  // declined there
  if (ctx.num_inputs() != 3) return ctx.decline(ctx.op_with_arity() + ": expected (input, dim, dtype)");
  const int64_t rank = x->type.rank();
  if (rank == 0) return ctx.decline("cumsum of a 0-dim tensor (a copy)");
  const auto dims = dims_arg(ctx, 1, rank, false);
  if (!dims) return false;  // declined there
  if (dims->size() != 1) return ctx.decline("cumsum's dim is not one int");
  const auto out = ctx.out_type().dtype;
  if (!is_kernel_dtype(out) || out == c10::ScalarType::Bool) {
    return ctx.decline(std::string("cumsum with output dtype ") + ir::dtype_short_name(out) + ": not a number type the kernels add in");
  }
  ir::Value* v = x->type.dtype == out ? x : ctx.pointwise(OpKind::Cast, {x}, out, out);
  ir::Node* n = ctx.emit(OpKind::CumSum, {v},
                         ir::Type::tensor(out, x->type.sizes, ir::contiguous_strides(x->type.sizes), x->type.device), out);
  n->dims = *dims;
  return finish(ctx, n->output());
}

}  // namespace

const std::unordered_map<std::string, Converter>& reduction_converters() {
  static const std::unordered_map<std::string, Converter> table = {
      {"aten::sum", [](ConvertContext& c) { return convert_sum_mean(c, false); }},
      {"aten::mean", [](ConvertContext& c) { return convert_sum_mean(c, true); }},
      {"aten::adaptive_avg_pool2d", [](ConvertContext& c) { return convert_adaptive_avg_pool(c, 2); }},
      {"aten::adaptive_avg_pool1d", [](ConvertContext& c) { return convert_adaptive_avg_pool(c, 1); }},
      {"aten::amax", [](ConvertContext& c) { return convert_extremum(c, OpKind::ReduceMax, true); }},
      {"aten::amin", [](ConvertContext& c) { return convert_extremum(c, OpKind::ReduceMin, true); }},
      {"aten::max", [](ConvertContext& c) { return convert_extremum(c, OpKind::ReduceMax, false); }},
      {"aten::min", [](ConvertContext& c) { return convert_extremum(c, OpKind::ReduceMin, false); }},
      {"aten::var", [](ConvertContext& c) { return convert_var_std(c, false); }},
      {"aten::std", [](ConvertContext& c) { return convert_var_std(c, true); }},
      {"aten::logsumexp", convert_logsumexp},
      {"aten::cumsum", convert_cumsum},
      {"aten::softmax", [](ConvertContext& c) { return convert_softmax(c, false); }},
      {"aten::log_softmax", [](ConvertContext& c) { return convert_softmax(c, true); }},
      {"aten::layer_norm", convert_layer_norm},
      {"aten::rms_norm", convert_rms_norm},
      {"aten::norm", [](ConvertContext& c) { return convert_norm(c, false); }},
      {"aten::linalg_vector_norm", [](ConvertContext& c) { return convert_norm(c, true); }},
  };
  return table;
}

}  // namespace torchfuse
