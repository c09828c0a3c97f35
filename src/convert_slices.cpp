// TorchScript views that take part of a tensor or broadcast it -> IR views (ir::is_view):
// slice, select, narrow, expand; expand_as (a pointwise ExpandAs, since its sizes come from a
// tensor per call); contiguous; alias and detach (the identity). Only constant arguments
// convert: the IR's views carry their arguments as constants, and the runtime computes each
// call's range from them and that call's sizes (ir::view_range), as eager does. An argument
// computed at run time (x[..., : x.shape[-1] // 2]) stays in ATen with its reason.
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <limits>

#include "src/convert_context.h"

namespace torchfuse {
namespace {

using ir::OpKind;

constexpr int64_t kNoEnd = std::numeric_limits<int64_t>::max();

// "start is not a constant int (an int computed at run time: size arithmetic is not fused yet)".
std::string not_constant_int(ConvertContext& ctx, size_t index) {
  return ctx.arg_name(index) + " is not a constant int (an int computed at run time: size arithmetic is not fused yet)";
}

// A constant int argument, or `if_none` for a constant None; declines otherwise.
std::optional<int64_t> int_arg(ConvertContext& ctx, size_t index, std::optional<int64_t> if_none = std::nullopt) {
  auto c = ctx.constant(index);
  if (c && c->isInt()) return c->toInt();
  if (c && c->isNone() && if_none) return if_none;
  ctx.decline(not_constant_int(ctx, index));
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
  auto step = int_arg(ctx, 4);
  if (!step) return false;
  if (*step <= 0) return ctx.decline(ctx.arg_str(4) + ": slice steps must be positive");
  if (*start == 0 && *end == kNoEnd && *step == 1) {
    ctx.bind_identity(x);  // x[:], whatever the sizes: eager's view has x's sizes and strides
    return true;
  }
  return emit_view(ctx, x, OpKind::Slice, {*dim, *start, *end, *step});
}

// select(self, dim, index): x[..., i, ...]; the dim goes away.
bool convert_select(ConvertContext& ctx) {
  ir::Value* x = dimensioned_input(ctx);
  if (!x || !ctx.needs_inputs(3)) return false;
  auto dim = dim_arg(ctx, 1, x->type.rank());
  if (!dim) return false;
  auto index = int_arg(ctx, 2);
  if (!index) return false;
  return emit_view(ctx, x, OpKind::Select, {*dim, *index});
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
  if (*length < 0) return ctx.decline(ctx.arg_str(3) + ": narrow's length must be non-negative");
  return emit_view(ctx, x, OpKind::Narrow, {*dim, *start, *length});
}

// expand(self, size, implicit): size-1 dims grow (stride 0), -1 keeps a dim, new leading dims.
bool convert_expand(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x || !ctx.needs_inputs(2)) return false;
  auto c = ctx.constant(1);
  if (!c || !c->isIntList()) {
    return ctx.decline(ctx.arg_name(1) + " is not a constant list of ints (sizes computed at run time are not fused yet)");
  }
  std::vector<int64_t> target = c->toIntVector();
  const bool keeps_all = static_cast<int64_t>(target.size()) == x->type.rank() &&
                         std::all_of(target.begin(), target.end(), [](int64_t t) { return t == -1; });
  if (keeps_all) {
    ctx.bind_identity(x);  // expand(-1, ..., -1): x's sizes, whatever they are
    return true;
  }
  return emit_view(ctx, x, OpKind::Expand, std::move(target));
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
