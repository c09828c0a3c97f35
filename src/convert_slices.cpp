// TorchScript views that take part of a tensor or broadcast it -> IR views (ir::is_view):
// slice, select, narrow, expand; expand_as (a pointwise ExpandAs, since its sizes come from a
// tensor per call); contiguous; alias and detach (the identity). Arguments are constants or
// ints the graph computes (x[..., : x.shape[-1] // 2]: size arithmetic, each call's own); the
// runtime computes each call's range from them and that call's sizes (ir::view_range), as
// eager does.
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <limits>

#include "src/convert_context.h"

namespace torchfuse {
namespace {

using ir::OpKind;

constexpr int64_t kNoEnd = std::numeric_limits<int64_t>::max();

// An int argument, constant or computed at run time (size arithmetic: x[..., : x.size(-1) //
// 2] takes each call's own), or `if_none` for a constant None; declines otherwise.
std::optional<ConvertContext::IntArg> int_arg(ConvertContext& ctx, size_t index, std::optional<int64_t> if_none = std::nullopt) {
  if (auto a = ctx.int_arg(index)) return a;
  auto c = ctx.constant(index);
  if (c && c->isNone() && if_none) return ConvertContext::IntArg{*if_none, nullptr};
  ctx.decline(ctx.arg_name(index) + " is neither a constant int nor an int the graph computes");
  return std::nullopt;
}

// A constant int argument (one the kernel plan depends on: a step); declines otherwise.
std::optional<int64_t> constant_int_arg(ConvertContext& ctx, size_t index) {
  auto c = ctx.constant(index);
  if (c && c->isInt()) return c->toInt();
  ctx.decline(ctx.arg_name(index) + " is not a constant int");
  return std::nullopt;
}

// The view's input, of rank 1 at least; declines otherwise.
ir::Value* dimensioned_input(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x) return nullptr;
  if (x->type.rank() == 0) {
    ctx.decline(ctx.op_name() + " of a 0-dim tensor");
    return nullptr;
  }
  return x;
}

// slice(self, dim, start, end, step): x[a:b:s] along dim.
bool convert_slice(ConvertContext& ctx) {
  ir::Value* x = dimensioned_input(ctx);
  if (!x || !ctx.needs_inputs(5)) return false;
  auto dim = dim_arg(ctx, 1, x->type.rank());
  if (!dim) return false;
  auto start = int_arg(ctx, 2, 0);
  if (!start) return false;
  auto end = int_arg(ctx, 3, kNoEnd);
  if (!end) return false;
  auto step = constant_int_arg(ctx, 4);
  if (!step) return false;
  if (*step <= 0) return ctx.decline(ctx.arg_str(4) + ": slice steps must be positive");
  const bool constant = !start->operand && !end->operand;
  if (constant && start->value == 0 && end->value == kNoEnd && *step == 1) {
    ctx.bind_identity(x);  // x[:], whatever the sizes: eager's view has x's sizes and strides
    return true;
  }
  return emit_view_args(ctx, x, OpKind::Slice, {{*dim, nullptr}, *start, *end, {*step, nullptr}});
}

// select(self, dim, index): x[..., i, ...]; the dim goes away.
bool convert_select(ConvertContext& ctx) {
  ir::Value* x = dimensioned_input(ctx);
  if (!x || !ctx.needs_inputs(3)) return false;
  auto dim = dim_arg(ctx, 1, x->type.rank());
  if (!dim) return false;
  auto index = int_arg(ctx, 2);
  if (!index) return false;
  return emit_view_args(ctx, x, OpKind::Select, {{*dim, nullptr}, *index});
}

// narrow(self, dim, start, length): an error where the range leaves the dim (slice clamps).
bool convert_narrow(ConvertContext& ctx) {
  ir::Value* x = dimensioned_input(ctx);
  if (!x || !ctx.needs_inputs(4)) return false;
  auto dim = dim_arg(ctx, 1, x->type.rank());
  if (!dim) return false;
  auto start = int_arg(ctx, 2);
  if (!start) return false;
  auto length = int_arg(ctx, 3);
  if (!length) return false;
  if (length->value < 0) return ctx.decline(ctx.arg_str(3) + ": narrow's length must be non-negative");
  return emit_view_args(ctx, x, OpKind::Narrow, {{*dim, nullptr}, *start, *length});
}

// expand(self, size, implicit): size-1 dims grow (stride 0), -1 keeps a dim, new leading dims;
// sizes constant or computed at run time (x.expand(B, 1, T, T) with B = x.size(0)).
bool convert_expand(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x || !ctx.needs_inputs(2)) return false;
  auto target = ctx.int_list_arg(1);
  if (!target) return ctx.decline(ctx.arg_name(1) + " is neither a constant list of ints nor a list of ints the graph computes");
  const bool keeps_all = static_cast<int64_t>(target->size()) == x->type.rank() &&
                         std::all_of(target->begin(), target->end(), [](const auto& t) { return !t.operand && t.value == -1; });
  if (keeps_all) {
    ctx.bind_identity(x);  // expand(-1, ..., -1): x's sizes, whatever they are
    return true;
  }
  return emit_view_args(ctx, x, OpKind::Expand, *target);
}

// expand_as(self, other): x broadcast to other's sizes, which only the call knows: a pointwise
// ExpandAs that reads other for its shape.
bool convert_expand_as(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x || !ctx.needs_inputs(2)) return false;
  ir::Value* like = ctx.in(1);
  if (!like->type.is_tensor()) return ctx.decline(not_a_tensor("other", like->type));
  if (!is_kernel_dtype(like->type.dtype)) return ctx.decline(not_kernel_dtype("other", like->type.dtype));
  // (Eager reads only other's sizes, wherever it lives; the kernel takes it as an operand.)
  if (like->type.device != x->type.device) return ctx.decline("other is on " + like->type.device.str() + ", self on " + x->type.device.str());
  const ir::Type& out = ctx.out_type();
  if (!out.is_tensor() || out.sizes != like->type.sizes || out.dtype != x->type.dtype) {
    return ctx.decline("the profiled output " + out.str() + " is not self " + x->type.str() + " in the sizes of other " +
                       like->type.str());
  }
  if (!pointwise_output_matches(ctx, {x, like})) return false;
  ctx.bind_output(0, ctx.pointwise(OpKind::ExpandAs, {x, like}, x->type.dtype, x->type.dtype));
  return true;
}

// contiguous(self, memory_format): the same elements; a fused group writes its outputs
// contiguous, so only the default memory format converts.
bool convert_contiguous(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x) return false;
  if (ctx.num_inputs() >= 2) {
    auto c = ctx.constant(1);
    const bool plain = c && (c->isNone() || (c->isInt() && c->toInt() == static_cast<int64_t>(c10::MemoryFormat::Contiguous)));
    if (!plain) return ctx.decline(ctx.arg_str(1) + ": only torch.contiguous_format is fused (fused outputs are row-major)");
  }
  return emit_view(ctx, x, OpKind::Contiguous, {});
}

// alias, detach: the input itself (compile() is for inference: no autograd to detach from).
bool convert_identity_view(ConvertContext& ctx) {
  if (!ctx.needs_inputs(1)) return false;
  ir::Value* x = ctx.in(0);
  if (!x->type.is_tensor()) return ctx.decline(not_a_tensor("self", x->type));
  ctx.bind_identity(x);
  return true;
}

}  // namespace

const std::unordered_map<std::string, Converter>& slice_converters() {
  static const std::unordered_map<std::string, Converter> table = {
      {"aten::slice", convert_slice},         {"aten::select", convert_select},
      {"aten::narrow", convert_narrow},       {"aten::expand", convert_expand},
      {"aten::expand_as", convert_expand_as}, {"aten::contiguous", convert_contiguous},
      {"aten::alias", convert_identity_view}, {"aten::detach", convert_identity_view},
  };
  return table;
}

}  // namespace torchfuse
