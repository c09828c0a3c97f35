// TorchScript view ops -> IR views (ir::is_view): permute, transpose, t, unsqueeze, squeeze,
// flatten, and view/reshape. They fuse into pointwise groups as index maps
// (passes/view_steps.h). The specialization's guards pin ranks and which dims are size 1, not
// sizes: a view's sizes are applied per call, constants as they are and ints the graph computes
// (size arithmetic) as each call computes them (ir::Node::dim_operands).
// The helpers every view converter uses (view_input, dim_arg, emit_view) live here too;
// convert_slices.cpp and convert_splits.cpp convert the views that take part of a tensor.
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>

#include "src/convert_context.h"

namespace torchfuse {

using ir::OpKind;

ir::Value* view_input(ConvertContext& ctx) {
  if (!ctx.needs_inputs(1)) return nullptr;
  ir::Value* x = ctx.in(0);
  if (!x->type.is_tensor()) {
    ctx.decline(not_a_tensor("self", x->type));
    return nullptr;
  }
  if (!is_kernel_dtype(x->type.dtype)) {
    ctx.decline(not_kernel_dtype("input", x->type.dtype));
    return nullptr;
  }
  return x;
}

std::optional<int64_t> dim_arg(ConvertContext& ctx, size_t index, int64_t rank) {
  auto c = ctx.constant(index);
  if (!c || !c->isInt()) {
    ctx.decline(ctx.arg_name(index) + " is not a constant int");
    return std::nullopt;
  }
  const int64_t r = std::max<int64_t>(rank, 1);
  int64_t d = c->toInt();
  if (d < -r || d >= r) {
    ctx.decline(ctx.arg_str(index) + " is out of range for rank " + std::to_string(rank));
    return std::nullopt;
  }
  return d < 0 ? d + r : d;
}

namespace {

// The view node, with the ints computed at run time among `dims` as operands after x.
bool emit_view_node(ConvertContext& ctx, ir::Value* x, OpKind kind, std::vector<int64_t> dims,
                    const std::vector<ir::Value*>& runtime, size_t output) {
  const auto sizes = ir::view_output_sizes(kind, dims, x->type.sizes);
  const ir::Type& out = ctx.out_type(output);
  if (!sizes || !out.is_tensor() || out.sizes != *sizes || out.dtype != x->type.dtype || out.device != x->type.device) {
    return ctx.decline(ctx.op_name() + ": the profiled output " + out.str() + " is not the " + ir::op_name(kind) +
                       ir::shape_str(dims) + " of the input " + x->type.str());
  }
  std::vector<ir::Value*> inputs{x};
  std::vector<int> dim_operands;
  for (size_t j = 0; j < runtime.size(); ++j) {
    if (!runtime[j]) continue;
    dim_operands.resize(dims.size(), 0);
    dim_operands[j] = static_cast<int>(inputs.size());
    inputs.push_back(runtime[j]);
  }
  // The profiled strides: where the view stays in ATen, its readers see them.
  ir::Node* n = ctx.emit(kind, std::move(inputs), out, c10::ScalarType::Undefined);
  n->dims = std::move(dims);
  n->dim_operands = std::move(dim_operands);
  ctx.bind_output(output, n->output());
  return true;
}

}  // namespace

bool emit_view(ConvertContext& ctx, ir::Value* x, OpKind kind, std::vector<int64_t> dims, size_t output) {
  return emit_view_node(ctx, x, kind, std::move(dims), {}, output);
}

bool emit_view_args(ConvertContext& ctx, ir::Value* x, OpKind kind, const std::vector<ConvertContext::IntArg>& dims) {
  std::vector<int64_t> values;
  std::vector<ir::Value*> runtime;
  for (const auto& d : dims) {
    values.push_back(d.value);
    runtime.push_back(d.operand);
  }
  return emit_view_node(ctx, x, kind, std::move(values), runtime, 0);
}

namespace {

bool convert_permute(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x || !ctx.needs_inputs(2)) return false;
  auto c = ctx.constant(1);
  if (!c || !c->isIntList()) return ctx.decline(ctx.arg_name(1) + " is not a constant list of ints");
  std::vector<int64_t> dims;
  const int64_t rank = x->type.rank();
  for (int64_t d : c->toIntVector()) {
    if (d < -rank || d >= rank || rank == 0) return ctx.decline(ctx.arg_str(1) + " is not a permutation of rank " + std::to_string(rank));
    dims.push_back(d < 0 ? d + rank : d);
  }
  return emit_view(ctx, x, OpKind::Permute, std::move(dims));
}

bool convert_transpose(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x || !ctx.needs_inputs(3)) return false;
  const int64_t rank = x->type.rank();
  if (rank == 0) return ctx.decline("transpose of a 0-dim tensor");
  auto a = dim_arg(ctx, 1, rank);
  if (!a) return false;
  auto b = dim_arg(ctx, 2, rank);
  if (!b) return false;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  std::swap(dims[*a], dims[*b]);
  return emit_view(ctx, x, OpKind::Permute, std::move(dims));
}

bool convert_t(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x) return false;
  if (x->type.rank() != 2) return ctx.decline("t of a rank-" + std::to_string(x->type.rank()) + " tensor (only rank 2 is fused)");
  return emit_view(ctx, x, OpKind::Permute, {1, 0});
}

bool convert_unsqueeze(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x || !ctx.needs_inputs(2)) return false;
  auto d = dim_arg(ctx, 1, x->type.rank() + 1);
  if (!d) return false;
  return emit_view(ctx, x, OpKind::Unsqueeze, {*d});
}

bool convert_squeeze(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x) return false;
  const auto& s = x->type.sizes;
  std::vector<int64_t> dims;
  if (ctx.num_inputs() >= 2) {
    auto d = dim_arg(ctx, 1, x->type.rank());
    if (!d) return false;
    // (A dim that is not size 1 is left as is; that may change with the next call's sizes.)
    if (x->type.rank() == 0 || s[*d] != 1) return ctx.decline(ctx.arg_str(1) + " is not a size-1 dim of " + x->type.str());
    dims.push_back(*d);
  } else {
    // The size-1 dims of the profile: the guards (and input_differs, for a group's inputs) pin
    // which dims are size 1.
    for (int64_t d = 0; d < x->type.rank(); ++d)
      if (s[d] == 1) dims.push_back(d);
    if (dims.empty()) return ctx.decline("squeeze of " + x->type.str() + ", which has no size-1 dim");
  }
  return emit_view(ctx, x, OpKind::Squeeze, std::move(dims));
}

bool convert_flatten(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x || !ctx.needs_inputs(3)) return false;
  const int64_t rank = x->type.rank();
  if (rank == 0) return ctx.decline("flatten of a 0-dim tensor");
  auto s = dim_arg(ctx, 1, rank);
  if (!s) return false;
  auto e = dim_arg(ctx, 2, rank);
  if (!e) return false;
  if (*s > *e) return ctx.decline(ctx.arg_str(1) + " is after " + ctx.arg_str(2));
  if (*s == *e) {
    ctx.bind_identity(x);  // eager returns the input itself
    return true;
  }
  return emit_view(ctx, x, OpKind::Flatten, {*s, *e});
}

// view / reshape to sizes given as constants or as ints computed at run time (x.view(B, T, H,
// -1) with B = x.size(0)): each call's sizes are that call's ints. [-1] is a flatten (any
// sizes). Reshape joins a group only where it is a view for the profile's strides (view_paths
// checks; a call whose strides do not allow it runs the group's fallback: eager's view raises
// there, eager's reshape copies).
bool convert_view_reshape(ConvertContext& ctx) {
  ir::Value* x = view_input(ctx);
  if (!x || !ctx.needs_inputs(2)) return false;
  auto target = ctx.int_list_arg(1);
  if (!target) return ctx.decline(ctx.arg_name(1) + " is neither a constant list of ints nor a list of ints the graph computes");
  const bool all_constant = std::all_of(target->begin(), target->end(), [](const auto& d) { return d.operand == nullptr; });
  if (all_constant && target->size() == 1 && target->front().value == -1 && x->type.rank() >= 2) {
    return emit_view(ctx, x, OpKind::Flatten, {0, x->type.rank() - 1});
  }
  if (x->type.rank() == 0 && target->empty()) {
    ctx.bind_identity(x);
    return true;
  }
  return emit_view_args(ctx, x, OpKind::Reshape, *target);
}

}  // namespace

const std::unordered_map<std::string, Converter>& view_converters() {
  static const std::unordered_map<std::string, Converter> table = {
      {"aten::permute", convert_permute},     {"aten::transpose", convert_transpose},
      {"aten::t", convert_t},                 {"aten::unsqueeze", convert_unsqueeze},
      {"aten::squeeze", convert_squeeze},     {"aten::flatten", convert_flatten},
      {"aten::view", convert_view_reshape},   {"aten::reshape", convert_view_reshape},
  };
  return table;
}

}  // namespace torchfuse
