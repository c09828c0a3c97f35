// Index tensors broadcast and made contiguous in the graph (see broadcast_indices.h).
#include "passes/broadcast_indices.h"

#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// The strides of `t` expanded to `shape` (right-aligned; a broadcast dim reads stride 0).
std::vector<int64_t> expanded_strides(const ir::Type& t, const std::vector<int64_t>& shape) {
  std::vector<int64_t> out(shape.size(), 0);
  const size_t lead = shape.size() - t.sizes.size();
  for (size_t d = 0; d < t.sizes.size(); ++d) out[lead + d] = t.sizes[d] == 1 ? 0 : t.strides[d];
  return out;
}

// Why the index tensors of `index` stay as they are ("" where they are broadcast in the graph).
std::string why_indices_stay(const RewriteContext& ctx, const Node* index, std::vector<size_t>* defined) {
  const ir::Type* self = ctx.type_of(index->input(0));
  if (!self || !self->is_tensor()) return "its input's type was not profiled";
  const Node* list = index->input(1)->node();
  if (list->kind() != c10::prim::ListConstruct) return "its indices are not a list built in the graph";
  std::vector<const ir::Type*> types;
  for (size_t i = 0; i < list->inputs().size(); ++i) {
    const Value* v = list->input(i);
    if (v->type()->kind() != c10::TypeKind::TensorType) continue;  // None: a dim taken whole
    const ir::Type* t = ctx.type_of(v);
    if (!t || !t->is_tensor() || t->strides.size() != t->sizes.size()) return "an index's type was not profiled";
    if (t->dtype == c10::ScalarType::Bool || t->dtype == c10::ScalarType::Byte) return "a boolean index";
    defined->push_back(i);
    types.push_back(t);
  }
  if (types.size() < 2) return "fewer than two index tensors";
  std::vector<int64_t> shape;
  for (const ir::Type* t : types) {
    const auto b = ir::broadcast_shapes(shape, t->sizes);
    if (!b) return "its indices do not broadcast";
    shape = *b;
  }
  const auto first = expanded_strides(*types[0], shape);
  for (const ir::Type* t : types)
    if (expanded_strides(*t, shape) != first) return "";
  return "its indices' strides agree (ATen copies nothing)";
}

void broadcast(RewriteContext& ctx, Node* index, const std::vector<size_t>& defined) {
  torch::jit::Graph& g = ctx.graph;
  Node* list = index->input(1)->node();
  torch::jit::WithInsertPoint point(index);
  std::vector<Value*> tensors;
  for (size_t i : defined) tensors.push_back(list->input(i));
  Value* packed = g.insertNode(g.createList(c10::TensorType::get(), tensors))->output();
  Value* broadcast = g.insert(c10::aten::broadcast_tensors, {packed});
  Node* unpack = g.insertNode(g.createListUnpack(broadcast, tensors.size()));
  std::vector<Value*> items(list->inputs().begin(), list->inputs().end());
  for (size_t j = 0; j < defined.size(); ++j) items[defined[j]] = g.insert(c10::aten::contiguous, {unpack->output(j)});
  Node* made = g.insertNode(g.createList(c10::OptionalType::create(c10::TensorType::get()), items));
  index->replaceInput(1, made->output());
  ctx.applied("indices of " + node_name(index) + " broadcast and made contiguous in the graph (ATen would copy each "
              "on every call): computed where the indices are");
}

}  // namespace

void broadcast_indices(RewriteContext& ctx) {
  std::vector<std::pair<Node*, std::vector<size_t>>> found;
  for (Node* n : ctx.graph.nodes()) {
    if (!is_kind(n, "aten::index") || n->inputs().size() != 2) continue;
    const ir::Type* self = ctx.type_of(n->input(0));
    if (!self || !self->is_tensor() || !self->device.is_cuda()) continue;  // ATen's copies are CUDA's
    std::vector<size_t> defined;
    const std::string why = why_indices_stay(ctx, n, &defined);
    if (why.empty()) {
      found.emplace_back(n, std::move(defined));
    } else if (why != "fewer than two index tensors") {
      ctx.refused("indices of " + node_name(n) + " stay as given: " + why);
    }
  }
  for (auto& [n, defined] : found) broadcast(ctx, n, defined);
}

}  // namespace torchfuse
