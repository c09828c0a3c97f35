#include "passes/fold_static_sizes.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "src/graph_constants.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// Dim `d` of `v` (0 <= d < rank), when every call gives it the same size.
class StaticDims {
 public:
  explicit StaticDims(const RewriteContext& ctx) : ctx_(ctx) {}

  std::optional<int64_t> size(const Value* v, int64_t d, int depth = 0) const {
    const int64_t r = rank(v);
    if (r < 0 || d < 0 || d >= r || depth > 64) return std::nullopt;
    const Node* n = v->node();
    const std::string kind = n->kind().toQualString();
    if (n->kind() == c10::prim::Constant) {
      const std::optional<c10::IValue> iv = constant_value(v);
      if (iv && iv->isTensor() && iv->toTensor().defined()) return iv->toTensor().size(d);
      return std::nullopt;
    }
    if (kind == "aten::linear") {
      if (d == r - 1) return size(n->input(1), 0, depth + 1);
      return size(n->input(0), d, depth + 1);
    }
    if (kind == "aten::view" || kind == "aten::reshape") return listed(n->input(1), d, depth);
    if (kind == "aten::transpose") {
      const std::optional<int64_t> a = constant_dim(n->input(1), r), b = constant_dim(n->input(2), r);
      if (!a || !b) return std::nullopt;
      return size(n->input(0), d == *a ? *b : d == *b ? *a : d, depth + 1);
    }
    if (kind == "aten::permute") {
      const std::optional<c10::IValue> dims = constant_value(n->input(1));
      if (!dims || !dims->isIntList()) return std::nullopt;
      const std::vector<int64_t> p = dims->toIntVector();
      if (static_cast<int64_t>(p.size()) != r) return std::nullopt;
      const std::optional<int64_t> from = dim_arg_value(p[d], r);
      return from ? size(n->input(0), *from, depth + 1) : std::nullopt;
    }
    if (kind == "aten::unsqueeze") {
      const std::optional<int64_t> k = constant_dim(n->input(1), r);
      if (!k) return std::nullopt;
      if (d == *k) return 1;
      return size(n->input(0), d > *k ? d - 1 : d, depth + 1);
    }
    if (kind == "aten::contiguous" || kind == "aten::to") return same_shape(n, d, depth);
    if (kind == "aten::slice") {
      const std::optional<int64_t> dim = constant_dim(n->input(1), r);
      if (!dim || *dim == d) return std::nullopt;
      return size(n->input(0), d, depth + 1);
    }
    return std::nullopt;
  }

 private:
  const RewriteContext& ctx_;

  int64_t rank(const Value* v) const {
    const ir::Type* t = ctx_.type_of(v);
    return t && t->is_tensor() ? t->rank() : -1;
  }

  static std::optional<int64_t> dim_arg_value(int64_t d, int64_t r) {
    if (d < 0) d += r;
    if (d < 0 || d >= r) return std::nullopt;
    return d;
  }


  // The result has its input's shape (and the rank the profile saw for both).
  std::optional<int64_t> same_shape(const Node* n, int64_t d, int depth) const {
    if (rank(n->input(0)) != rank(n->output())) return std::nullopt;
    return size(n->input(0), d, depth + 1);
  }

  // Entry d of a view's size list: a constant (not -1), or the size of a dim that is itself static.
  std::optional<int64_t> listed(const Value* list, int64_t d, int depth) const {
    if (const std::optional<c10::IValue> iv = constant_value(list); iv && iv->isIntList()) {
      const std::vector<int64_t> sizes = iv->toIntVector();
      if (d < static_cast<int64_t>(sizes.size()) && sizes[d] >= 0) return sizes[d];
      return std::nullopt;
    }
    const Node* n = list->node();
    if (n->kind() != c10::prim::ListConstruct || d >= static_cast<int64_t>(n->inputs().size())) return std::nullopt;
    const Value* entry = n->input(d);
    if (const std::optional<int64_t> c = constant_int(entry)) return *c >= 0 ? c : std::nullopt;
    const Node* s = entry->node();
    if (s->kind() != c10::aten::size || s->inputs().size() != 2) return std::nullopt;
    const std::optional<int64_t> dim = constant_dim(s->input(1), rank(s->input(0)));
    return dim ? size(s->input(0), *dim, depth + 1) : std::nullopt;
  }
};

// Scalar arithmetic the interpreter runs on sizes: folded once its operands are constants.
bool is_size_arithmetic(const Node* n) {
  static const std::unordered_set<std::string> kinds = {
      "prim::NumToTensor", "aten::Int",  "aten::Float", "aten::floor_divide", "aten::floordiv", "aten::div",
      "aten::mul",         "aten::add",  "aten::sub",   "aten::remainder",    "aten::neg",      "aten::ScalarImplicit"};
  if (!kinds.count(n->kind().toQualString()) || n->outputs().size() != 1) return false;
  // Only on numbers and 0-dim tensors made from them (NumToTensor): never on real tensors.
  for (const Value* v : n->inputs()) {
    const std::optional<c10::IValue> iv = constant_value(v);
    if (!iv) return false;
    if (iv->isTensor() && iv->toTensor().dim() != 0) return false;
  }
  return true;
}

}  // namespace

namespace {

// A number read back from a 0-dim constant tensor (aten::Int, aten::Float, aten::ScalarImplicit
// of a folded NumToTensor / floor_divide). The interpreter's constant evaluation is not relied on
// for these: LibTorch 2.11 left `aten::Int` of such a constant unfolded where 1.13 folded it.
std::optional<c10::IValue> number_of_constant_tensor(const Node* n) {
  if (n->inputs().size() != 1) return std::nullopt;
  const std::optional<c10::IValue> iv = constant_value(n->input(0));
  if (!iv || !iv->isTensor() || iv->toTensor().dim() != 0) return std::nullopt;
  const at::Scalar value = iv->toTensor().item();
  if (n->kind() == c10::aten::Int) return c10::IValue(value.toLong());
  if (n->kind() == c10::aten::Float) return c10::IValue(value.toDouble());
  if (n->kind() == c10::aten::ScalarImplicit) return c10::IValue(value);
  return std::nullopt;
}

struct Folded {
  std::vector<std::string> sizes;  // "aten::size (%s) = 8"
  int arithmetic = 0;              // size arithmetic nodes folded
};

// One round: the sizes found static and the arithmetic on them, replaced by constants; the
// nodes left without uses are destroyed.
Folded fold_round(RewriteContext& ctx) {
  const StaticDims dims(ctx);
  std::vector<Node*> sizes;
  for (Node* n : ctx.graph.nodes())
    if (n->kind() == c10::aten::size && n->inputs().size() == 2) sizes.push_back(n);
  Folded folded;
  std::vector<Node*> dead;
  for (Node* n : sizes) {
    const ir::Type* t = ctx.type_of(n->input(0));
    const std::optional<int64_t> d = constant_int(n->input(1));
    if (!t || !t->is_tensor() || !d) continue;
    const int64_t dim = *d < 0 ? *d + t->rank() : *d;
    const std::optional<int64_t> size = dims.size(n->input(0), dim);
    if (!size) continue;
    torch::jit::WithInsertPoint point(n);
    n->output()->replaceAllUsesWith(ctx.graph.insertConstant(*size));
    folded.sizes.push_back(node_name(n) + " = " + std::to_string(*size));
    dead.push_back(n);
  }
  // The arithmetic on them, in graph order (each node's operands are folded before it).
  std::vector<Node*> arithmetic;
  for (Node* n : ctx.graph.nodes())
    if (is_size_arithmetic(n)) arithmetic.push_back(n);
  for (Node* n : arithmetic) {
    if (!is_size_arithmetic(n)) continue;  // an operand was not folded
    std::optional<c10::IValue> value = number_of_constant_tensor(n);
    if (!value) {
      const c10::optional<torch::jit::Stack> out = torch::jit::runNodeIfInputsAreConstant(n);
      if (!out || out->size() != 1) continue;
      value = (*out)[0];
    }
    torch::jit::WithInsertPoint point(n);
    n->output()->replaceAllUsesWith(ctx.graph.insertConstant(*value));
    dead.push_back(n);
    ++folded.arithmetic;
  }
  for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
    if (!(*it)->hasUses()) (*it)->destroy();
  }
  return folded;
}

}  // namespace

void fold_static_sizes(RewriteContext& ctx) {
  // Rounds until none folds: a folded size can make a view's size list constant, and with it the
  // sizes of what the view makes (`y.view(B, T, 2, y.size(-1) // 2)`).
  std::vector<std::string> folded;
  for (int round = 0; round < 8; ++round) {
    const Folded more = fold_round(ctx);
    if (more.sizes.empty() && more.arithmetic == 0) break;
    folded.insert(folded.end(), more.sizes.begin(), more.sizes.end());
  }
  if (folded.empty()) return;
  ctx.applied("static sizes folded (" + std::to_string(folded.size()) + "): " + folded.front() +
              (folded.size() > 1 ? ", ..." : ""));
}

}  // namespace torchfuse
