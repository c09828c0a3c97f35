// aten::cat and aten::stack of a list that prim::ListConstruct builds in the graph's top level,
// used by that one op: the list becomes no IR node (an Other value), and the op becomes one
// CatPiece view per tensor (the tensor laid into its range of the cat's dim, in the output's
// index space) and a Cat that reads them (ir.h). stack(xs, d) is cat of each x unsqueezed at d.
// The list is converted when its ListConstruct is reached, where the op's converter would decline
// (convert_cat_list runs the same checks): an op in ATen must read the tensors through an IR
// node (the Opaque ListConstruct), so that groups computing them output them.
#include <torch/csrc/jit/ir/ir.h>

#include "src/convert_context.h"
#include "src/error.h"

namespace torchfuse {
namespace {

using ir::OpKind;

bool is_cat_op(const torch::jit::Node* n) { return n->kind() == c10::aten::cat || n->kind() == c10::aten::stack; }

// How the op concatenates, when it converts.
struct CatSpec {
  bool stack = false;
  int64_t dim = 0;                  // of the output
  std::vector<ir::Value*> tensors;  // the list's elements
};

std::string tensor_ref(const torch::jit::Value* v) { return "%" + v->debugName(); }

// The op `cat` (aten::cat or aten::stack) reading the list that `list` (a prim::ListConstruct)
// builds, with the list's elements converted to `tensors`: its spec, or why it stays in ATen.
std::optional<CatSpec> check_cat(ConvertContext& ctx, const torch::jit::Node* cat, const torch::jit::Node* list,
                                 std::string& why) {
  const std::string op = cat->kind().toUnqualString();
  if (cat->inputs().size() != 2) {
    why = op + " with " + std::to_string(cat->inputs().size()) + " arguments";
    return std::nullopt;
  }
  if (list->kind() != c10::prim::ListConstruct) {
    why = "its list is not built by prim::ListConstruct in the graph (it comes from " +
          std::string(list->kind().toQualString()) + ")";
    return std::nullopt;
  }
  if (list->owningBlock() != cat->owningBlock() || list->output()->uses().size() != 1) {
    why = "its list " + tensor_ref(list->output()) + " is also read elsewhere";
    return std::nullopt;
  }
  const auto dim_arg = torch::jit::toIValue(cat->input(1));
  if (!dim_arg || !dim_arg->isInt()) {
    why = "dim is not a constant int";
    return std::nullopt;
  }
  CatSpec spec;
  spec.stack = cat->kind() == c10::aten::stack;
  const size_t n = list->inputs().size();
  if (n < 2) {
    why = op + " of " + std::to_string(n) + " tensor" + (n == 1 ? " (a copy)" : "s") + ": only 2 or more are fused";
    return std::nullopt;
  }
  const ir::Type& out = ctx.type_of(cat->output());
  if (!out.is_tensor() || !is_kernel_dtype(out.dtype)) {
    why = "its output " + out.str() + " is not a tensor of a kernel dtype";
    return std::nullopt;
  }
  for (size_t j = 0; j < n; ++j) {
    ir::Value* x = ctx.ir_value(list->input(j));
    const std::string name = "tensor " + std::to_string(j) + " (" + tensor_ref(list->input(j)) + ")";
    if (!x || !x->type.is_tensor()) {
      why = name + " is not a tensor";
      return std::nullopt;
    }
    if (!is_kernel_dtype(x->type.dtype)) {
      why = not_kernel_dtype(name, x->type.dtype);
      return std::nullopt;
    }
    if (x->type.device != out.device) {
      why = name + " is on " + x->type.device.str() + ", the output on " + out.device.str();
      return std::nullopt;
    }
    if (x->type.rank() == 0 || x->type.numel() == 0) {
      why = name + " " + x->type.str() + " has no elements or no dims (0-element and 0-dim tensors are not fused)";
      return std::nullopt;
    }
    spec.tensors.push_back(x);
  }
  const int64_t rank = out.rank();
  int64_t dim = dim_arg->toInt();
  if (dim < -rank || dim >= rank) {
    why = "dim " + std::to_string(dim) + " is out of range";
    return std::nullopt;
  }
  spec.dim = dim < 0 ? dim + rank : dim;
  // The output must be the tensors (unsqueezed for stack) laid end to end along the dim.
  int64_t total = 0;
  for (size_t j = 0; j < n; ++j) {
    std::vector<int64_t> s = spec.tensors[j]->type.sizes;
    if (spec.stack) s.insert(s.begin() + std::min<int64_t>(spec.dim, static_cast<int64_t>(s.size())), 1);
    std::vector<int64_t> expect = out.sizes;
    if (static_cast<int64_t>(s.size()) != rank) {
      why = "tensor " + std::to_string(j) + " " + spec.tensors[j]->type.str() + " has another rank than the output " + out.str();
      return std::nullopt;
    }
    expect[spec.dim] = s[spec.dim];
    if (s != expect) {
      why = "tensor " + std::to_string(j) + " " + spec.tensors[j]->type.str() + " does not fit the output " + out.str() +
            " (tensors that broadcast are not fused)";
      return std::nullopt;
    }
    total += s[spec.dim];
  }
  if (total != out.sizes[spec.dim]) {
    why = "the profiled output " + out.str() + " is not the tensors laid end to end";
    return std::nullopt;
  }
  return spec;
}

// The one op reading the list the node ctx has begun (a prim::ListConstruct), if it is a cat or stack.
const torch::jit::Node* cat_reading_list(const torch::jit::Node* list) {
  if (list->outputs().size() != 1 || list->output()->uses().size() != 1) return nullptr;
  const torch::jit::Use& u = list->output()->uses()[0];
  return u.offset == 0 && is_cat_op(u.user) ? u.user : nullptr;
}

ir::Type contiguous_type(c10::ScalarType dtype, std::vector<int64_t> sizes, const c10::Device& device) {
  std::vector<int64_t> strides = ir::contiguous_strides(sizes);
  return ir::Type::tensor(dtype, std::move(sizes), std::move(strides), device);
}

// cat(tensors, dim) / stack(tensors, dim), whose list convert_cat_list converted.
bool convert_cat(ConvertContext& ctx) {
  const torch::jit::Node* node = ctx.node();
  const torch::jit::Node* list = node->inputs().empty() ? nullptr : node->input(0)->node();
  if (!list || !ctx.cat_list_converted(list)) {
    std::string why = "its list is not built by prim::ListConstruct in the graph";
    if (list) check_cat(ctx, node, list, why);
    if (list && list->kind() == c10::prim::ListConstruct && cat_reading_list(list) != node)
      why = "its list " + tensor_ref(list->output()) + " is also read elsewhere";
    return ctx.decline(why);
  }
  std::string why;
  const auto spec = check_cat(ctx, node, list, why);
  TORCHFUSE_INTERNAL_ASSERT(spec.has_value(), "cat list converted, but the cat declines: ", why);
  const ir::Type& out = ctx.out_type();
  const int64_t d = spec->dim;
  std::vector<ir::Value*> pieces;
  int64_t offset = 0;
  for (size_t j = 0; j < spec->tensors.size(); ++j) {
    ir::Value* x = spec->tensors[j];
    if (spec->stack) {
      std::vector<int64_t> s = x->type.sizes;
      s.insert(s.begin() + d, 1);
      ir::Node* u = ctx.emit(OpKind::Unsqueeze, {x}, contiguous_type(x->type.dtype, s, x->type.device),
                             c10::ScalarType::Undefined);
      u->dims = {d};
      x = u->output();
    }
    const int64_t size = x->type.sizes[d];
    ir::Node* p = ctx.emit(OpKind::CatPiece, {x}, contiguous_type(x->type.dtype, out.sizes, x->type.device),
                           c10::ScalarType::Undefined);
    p->dims = {d, static_cast<int64_t>(j), offset, out.sizes[d]};
    offset += size;
    pieces.push_back(p->output());
  }
  ir::Node* c = ctx.emit(OpKind::Cat, pieces, out, out.dtype);
  c->dims = {d};
  ctx.bind_output(0, c->output());
  return true;
}

}  // namespace

bool convert_cat_list(ConvertContext& ctx) {
  const torch::jit::Node* list = ctx.node();
  const torch::jit::Node* cat = cat_reading_list(list);
  if (!cat || list->owningBlock() != cat->owningBlock()) return false;
  std::string why;
  if (!check_cat(ctx, cat, list, why)) return false;
  ctx.mark_cat_list(list);
  ctx.bind_output(0, ctx.graph().add_other());
  return true;
}

const std::unordered_map<std::string, Converter>& cat_converters() {
  static const std::unordered_map<std::string, Converter> table = {
      {"aten::cat", convert_cat},
      {"aten::stack", convert_cat},
  };
  return table;
}

}  // namespace torchfuse
