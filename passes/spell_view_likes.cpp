// unflatten, view_as and reshape_as as view / reshape with size lists (see spell_view_likes.h).
#include "passes/spell_view_likes.h"

#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "passes/size_source.h"
#include "src/graph_constants.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// The rank of a tensor the profile saw, or nullopt.
std::optional<int64_t> profiled_rank(const RewriteContext& ctx, const Value* v) {
  const ir::Type* t = ctx.type_of(v);
  if (!t || !t->is_tensor()) return std::nullopt;
  return t->rank();
}

// x.size(d) for d in [from, to), each read from its size_source, inserted before the current
// insert point.
std::vector<Value*> sizes_of(const RewriteContext& ctx, torch::jit::Graph& g, Value* x, int64_t from, int64_t to) {
  std::vector<Value*> out;
  for (int64_t d = from; d < to; ++d) out.push_back(g.insert(c10::aten::size, {size_source(ctx, x, d), d}));
  return out;
}

// The entries of an int list argument: constants for a constant list, a ListConstruct's inputs
// otherwise; nullopt for a list made another way.
std::optional<std::vector<Value*>> list_entries(torch::jit::Graph& g, Value* list) {
  if (const std::optional<c10::IValue> iv = constant_value(list)) {
    if (!iv->isIntList()) return std::nullopt;
    std::vector<Value*> out;
    for (int64_t s : iv->toIntVector()) out.push_back(g.insertConstant(s));
    return out;
  }
  if (list->node()->kind() != c10::prim::ListConstruct) return std::nullopt;
  const auto in = list->node()->inputs();
  return std::vector<Value*>(in.begin(), in.end());
}

class Speller {
 public:
  explicit Speller(RewriteContext& ctx) : ctx_(ctx), g_(ctx.graph) {}

  void run() {
    std::vector<Node*> order;
    for (Node* n : g_.nodes()) order.push_back(n);
    for (Node* n : order) {
      if (is_kind(n, "aten::unflatten")) unflatten(n);
      else if (is_kind(n, "aten::view_as")) sized_like(n, c10::aten::view);
      else if (is_kind(n, "aten::reshape_as")) sized_like(n, c10::aten::reshape);
    }
  }

 private:
  RewriteContext& ctx_;
  torch::jit::Graph& g_;

  // x.unflatten(dim, sizes) (the int overload: three inputs, the dim a constant int).
  void unflatten(Node* n) {
    if (n->inputs().size() != 3) return;
    const std::optional<int64_t> rank = profiled_rank(ctx_, n->input(0));
    const std::optional<c10::IValue> dim = constant_value(n->input(1));
    if (!rank || !dim || !dim->isInt()) return;
    int64_t d = dim->toInt();
    if (d < 0) d += *rank;
    if (d < 0 || d >= *rank) return;  // eager raises: left to it
    torch::jit::WithInsertPoint point(n);
    std::optional<std::vector<Value*>> middle = list_entries(g_, n->input(2));
    if (!middle) return;
    resolve_inferred(*middle, n->input(0), d);
    std::vector<Value*> entries = sizes_of(ctx_, g_, n->input(0), 0, d);
    entries.insert(entries.end(), middle->begin(), middle->end());
    const std::vector<Value*> after = sizes_of(ctx_, g_, n->input(0), d + 1, *rank);
    entries.insert(entries.end(), after.begin(), after.end());
    replace(n, c10::aten::view, entries, "dim " + std::to_string(d) + " of a rank-" + std::to_string(*rank) + " tensor");
  }

  // unflatten infers a -1 from size(d) alone, where view infers it from the element count, which
  // leaves it ambiguous when another dim is 0 (unflatten(-4, [2, -1]) of [128, 5, 64, 0]). With
  // the other entries constants whose product p is not 0, the -1 becomes size(d) // p, read per
  // call; otherwise it stays. (A size(d) that p does not divide: view raises as unflatten does,
  // but for a tensor of no elements, which eager's unflatten refuses and the view takes.)
  void resolve_inferred(std::vector<Value*>& middle, Value* x, int64_t d) {
    int64_t product = 1;
    Value** inferred = nullptr;
    for (Value*& v : middle) {
      const std::optional<c10::IValue> iv = constant_value(v);
      if (!iv || !iv->isInt()) return;
      if (iv->toInt() == -1 && inferred == nullptr) inferred = &v;
      else product *= iv->toInt();
    }
    if (inferred == nullptr || product <= 0) return;
    Value* size = sizes_of(ctx_, g_, x, d, d + 1).front();
    *inferred = g_.insert(c10::aten::floordiv, {size, product});
  }

  // x.view_as(y) / x.reshape_as(y): y's sizes, each read from y per call.
  void sized_like(Node* n, c10::Symbol kind) {
    if (n->inputs().size() != 2) return;
    const std::optional<int64_t> rank = profiled_rank(ctx_, n->input(1));
    if (!rank) return;
    torch::jit::WithInsertPoint point(n);
    replace(n, kind, sizes_of(ctx_, g_, n->input(1), 0, *rank), "the other tensor's " + std::to_string(*rank) + " sizes");
  }

  void replace(Node* n, c10::Symbol kind, const std::vector<Value*>& entries, const std::string& what) {
    Value* list = g_.insertNode(g_.createList(c10::IntType::get(), entries))->output();
    Value* made = g_.insert(kind, {n->input(0), list});
    made->setType(n->output()->type());
    ctx_.inherit_type(made, n->output());
    n->output()->replaceAllUsesWith(made);
    ctx_.applied(node_name(n) + " -> " + kind.toQualString() + " with " + what);
    n->destroy();
  }
};

}  // namespace

void spell_view_likes(RewriteContext& ctx) { Speller(ctx).run(); }

}  // namespace torchfuse
