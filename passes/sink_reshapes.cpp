// Reshapes that copy moved past the pointwise ops reading them (see sink_reshapes.h).
#include "passes/sink_reshapes.h"

#include <string>
#include <unordered_set>
#include <vector>

#include <ATen/TensorUtils.h>
#include <torch/csrc/jit/ir/ir.h>

#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// Elementwise ops whose first input is the chain's value and whose other tensor inputs, if any,
// are read element for element (the same shape) or are 0-dim.
bool is_pointwise(const Node* n) {
  static const std::unordered_set<std::string> kinds = {
      "aten::add",  "aten::sub",     "aten::mul",  "aten::div",  "aten::maximum", "aten::minimum", "aten::relu",
      "aten::gelu", "aten::sigmoid", "aten::tanh", "aten::silu", "aten::neg",     "aten::exp",     "aten::abs"};
  return kinds.count(n->kind().toQualString()) > 0 && n->outputs().size() == 1;
}

bool is_tensor_value(const Value* v) { return v->type()->kind() == c10::TypeKind::TensorType; }

// Is `v` a row op's result (a reduction, softmax, a norm), directly or through pointwise ops and
// casts? Fused, it comes from a reduction group, which views do not join (legality.cpp).
bool after_row_op(const Value* v, int depth = 0) {
  static const std::unordered_set<std::string> rows = {
      "aten::softmax", "aten::log_softmax", "aten::_softmax", "aten::_log_softmax", "aten::layer_norm",
      "aten::rms_norm", "aten::sum",        "aten::mean",     "aten::amax",         "aten::amin",
      "aten::var",     "aten::std",         "aten::logsumexp", "aten::norm",        "aten::linalg_vector_norm"};
  const Node* n = v->node();
  if (rows.count(n->kind().toQualString())) return true;
  const bool passes_through = is_pointwise(n) || is_kind(n, "aten::to") || is_kind(n, "aten::type_as");
  if (!passes_through || depth >= 16) return false;
  for (const Value* in : n->inputs())
    if (is_tensor_value(in) && after_row_op(in, depth + 1)) return true;
  return false;
}

// Does a tensor of `t`'s sizes and strides take the sizes `to` without a copy?
bool views_as(const ir::Type& t, const std::vector<int64_t>& to) {
  return at::detail::computeStride(t.sizes, t.strides, to).has_value();
}

// Why `n`, reading the chain's value `v` (now of sizes `out`), cannot compute in the reshape
// input's sizes `in` ("" where it can).
std::string why_op_stays(const RewriteContext& ctx, const Node* n, const Value* v, const std::vector<int64_t>& out,
                         const std::vector<int64_t>& in) {
  if (!is_pointwise(n)) return node_name(n) + " is not a pointwise op";
  if (n->input(0) != v) return node_name(n) + " reads it other than as its first input";
  const ir::Type* result = ctx.type_of(n->output());
  if (!result || !result->is_tensor() || result->sizes != out) return node_name(n) + "'s result is broadcast wider";
  for (size_t i = 1; i < n->inputs().size(); ++i) {
    const Value* x = n->input(i);
    if (x == v) return node_name(n) + " reads it twice";
    if (!is_tensor_value(x)) continue;
    const ir::Type* t = ctx.type_of(x);
    if (!t || !t->is_tensor()) return node_name(n) + ": operand %" + x->debugName() + " was not profiled";
    if (t->sizes.empty()) continue;
    if (t->sizes != out) return node_name(n) + ": operand %" + x->debugName() + " " + t->str() + " is broadcast";
    if (!views_as(*t, in)) return node_name(n) + ": operand %" + x->debugName() + " would copy too";
  }
  return "";
}

// Does `n` write a tensor (an in-place op, an out= argument) or have other side effects?
bool writes(const Node* n) {
  if (n->hasSideEffects()) return true;
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (!schema) return !n->kind().is_prim() && !n->kind().is_aten();  // an unknown op: assume so
  for (const c10::Argument& a : schema->arguments())
    if (a.alias_info() && a.alias_info()->isWrite()) return true;
  return false;
}

// Why the reshape cannot move to `first` (its reader): moved, the reader would read the reshape's
// input where the reshape stood, so nothing between them may write (x.mul_() after the copy).
std::string why_not_to(const Node* reshape, const Node* first) {
  if (first->owningBlock() != reshape->owningBlock()) return node_name(first) + " is in another block";
  for (const Node* n = reshape->next(); n != first; n = n->next()) {
    if (writes(n)) return node_name(n) + " writes a tensor between the reshape and its reader";
  }
  return "";
}

// The reshape's pointwise chain: each op reads the previous value (the reshape's output first) as
// its only reader, up to the last op, whose result may be read anywhere.
std::vector<Node*> chain_of(const RewriteContext& ctx, Node* reshape, const std::vector<int64_t>& out,
                            const std::vector<int64_t>& in, std::string& why) {
  std::vector<Node*> chain;
  Value* v = reshape->output();
  while (v->uses().size() == 1) {
    Node* user = v->uses()[0].user;
    std::string stays = why_op_stays(ctx, user, v, out, in);
    if (stays.empty()) stays = why_not_to(v->node(), user);
    if (!stays.empty()) {
      if (chain.empty()) why = stays;
      break;
    }
    chain.push_back(user);
    v = user->output();
  }
  if (chain.empty() && why.empty()) why = "its result is read by " + std::to_string(v->uses().size()) + " ops";
  return chain;
}

// The sizes of `like` (of rank `rank`), read at run time, as an int list.
Value* sizes_of(torch::jit::Graph& graph, Value* like, int64_t rank) {
  std::vector<Value*> sizes;
  for (int64_t d = 0; d < rank; ++d) sizes.push_back(graph.insert(c10::aten::size, {like, d}));
  return graph.insertNode(graph.createList(c10::IntType::get(), sizes))->output();
}

// For a view of a row op's result: a size list that `source` has on every call, read from as far
// up the ops that keep its shape (a row op's epilogue, a decomposed group norm) as they go: the
// list of the view or reshape that made it, or the sizes of the first value with its shape. Sizes read from `source` itself make
// the moved chain depend on it through `size`, and the fusion passes cannot put the chain in its
// group (a cycle); sizes of a value inside the group would make the group write it out.
Value* source_sizes_list(torch::jit::Graph& graph, const RewriteContext& ctx, Value* source, int64_t rank) {
  static const std::unordered_set<std::string> keep_shape = {"aten::to",         "aten::type_as",  "aten::layer_norm",
                                                             "aten::rms_norm",   "aten::softmax",  "aten::log_softmax",
                                                             "aten::_softmax",   "aten::_log_softmax"};
  const std::vector<int64_t> want = ctx.type_of(source)->sizes;
  auto same_shape = [&](const Value* v) {
    const ir::Type* t = is_tensor_value(v) ? ctx.type_of(v) : nullptr;
    return t && t->is_tensor() && t->sizes == want;
  };
  Value* v = source;
  for (int depth = 0; depth < 32; ++depth) {
    Node* n = v->node();
    if ((is_kind(n, "aten::view") || is_kind(n, "aten::reshape")) && n->inputs().size() == 2 &&
        n->owningBlock() == source->node()->owningBlock()) {
      return n->input(1);
    }
    Value* next = nullptr;
    if (keep_shape.count(n->kind().toQualString()) && same_shape(n->input(0))) next = n->input(0);
    for (size_t i = 0; !next && is_pointwise(n) && i < n->inputs().size(); ++i)
      if (same_shape(n->input(i))) next = n->input(i);
    if (!next) break;
    v = next;
  }
  return sizes_of(graph, v, rank);
}

// `views`: the reshape copies nothing (it moves because it follows a row op).
void sink(RewriteContext& ctx, Node* reshape, const std::vector<Node*>& chain, bool views) {
  torch::jit::Graph& graph = ctx.graph;
  Value* source = reshape->input(0);
  const int64_t rank = static_cast<int64_t>(ctx.type_of(source)->sizes.size());
  Value* source_sizes = nullptr;  // made before the first op that needs it, which the others follow
  for (Node* op : chain) {
    torch::jit::WithInsertPoint point(op);
    for (size_t i = 1; i < op->inputs().size(); ++i) {
      Value* x = op->input(i);
      if (!is_tensor_value(x) || ctx.type_of(x)->sizes.empty()) continue;
      if (!source_sizes) source_sizes = views ? source_sizes_list(graph, ctx, source, rank) : sizes_of(graph, source, rank);
      op->replaceInput(i, graph.insert(c10::aten::reshape, {x, source_sizes}));
    }
  }
  chain.front()->replaceInput(0, source);
  Node* last = chain.back();
  torch::jit::WithInsertPoint after(last->next());
  Value* back = graph.insert(c10::aten::reshape, {last->output(), reshape->input(1)});
  back->setType(last->output()->type());
  last->output()->replaceAllUsesAfterNodeWith(back->node(), back);
  const std::string why = views ? "(a row op's result: views do not join its group)" : "(its strides do not merge)";
  ctx.applied("reshape " + node_name(reshape) + " of %" + source->debugName() + " " + why + " moved after " +
              std::to_string(chain.size()) + " pointwise op(s), to " + node_name(last) + "'s result");
}

}  // namespace

void sink_reshapes(RewriteContext& ctx) {
  std::vector<Node*> reshapes;
  for (Node* n : ctx.graph.nodes())
    if ((is_kind(n, "aten::reshape") || is_kind(n, "aten::view")) && n->inputs().size() == 2) reshapes.push_back(n);
  for (Node* n : reshapes) {
    const ir::Type* in = ctx.type_of(n->input(0));
    const ir::Type* out = ctx.type_of(n->output());
    if (!in || !out || !in->is_tensor() || !out->is_tensor() || in->numel() == 0) continue;
    // A view fuses as one, but for one of a row op's result.
    const bool views = views_as(*in, out->sizes);
    if (views && !after_row_op(n->input(0))) continue;
    if (!views && is_kind(n, "aten::view")) continue;  // eager raises; the call's own check says so
    std::string why;
    const std::vector<Node*> chain = chain_of(ctx, n, out->sizes, in->sizes, why);
    if (chain.empty()) {
      // (A view of a row op's result read by a GEMM or another row op loses nothing: no refusal.)
      const bool lost = !views || (n->output()->uses().size() == 1 && is_pointwise(n->output()->uses()[0].user));
      if (lost) {
        ctx.refused("reshape " + node_name(n) + (views ? " of a row op's result stays before its readers: "
                                                       : " copies and stays before its readers: ") + why);
      }
      continue;
    }
    sink(ctx, n, chain, views);
  }
}

}  // namespace torchfuse
