#include "passes/concat_linears.h"

#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <ATen/ATen.h>

#include "src/error.h"
#include "src/graph_constants.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

struct Linear {
  Node* node;
  at::Tensor weight;
  std::optional<at::Tensor> bias;
};

// `next` is stored right after `prev` in one buffer (same storage, the next rows or elements).
bool follows(const at::Tensor& prev, const at::Tensor& next) {
  return next.is_contiguous() && prev.is_contiguous() && next.storage().is_alias_of(prev.storage()) &&
         next.storage_offset() == prev.storage_offset() + prev.numel();
}

// Readers that take a slice of the merged result as they took the linear's own result.
bool layout_free_reader(const Node* n) {
  static const std::unordered_set<std::string> kinds = {
      "aten::add",  "aten::sub",       "aten::mul",     "aten::div",       "aten::gelu", "aten::relu",
      "aten::silu", "aten::sigmoid",   "aten::tanh",    "aten::to",        "aten::size", "aten::reshape",
      "aten::transpose", "aten::permute", "aten::unsqueeze"};
  return kinds.count(n->kind().toQualString()) > 0;
}

class Concatenator {
 public:
  explicit Concatenator(RewriteContext& ctx) : ctx_(ctx) {}

  void run() {
    std::map<size_t, std::vector<Linear>> by_input;
    std::vector<size_t> order;
    for (Node* n : ctx_.graph.nodes()) {
      std::optional<Linear> l = linear(n);
      if (!l) continue;
      auto& group = by_input[n->input(0)->unique()];
      if (group.empty()) order.push_back(n->input(0)->unique());
      group.push_back(*l);
    }
    for (size_t key : order) {
      std::vector<Linear>& group = by_input[key];
      if (group.size() >= 2) merge_runs(group);
    }
  }

 private:
  RewriteContext& ctx_;

  const ir::Type* tensor_type(const Value* v) const {
    const ir::Type* t = ctx_.type_of(v);
    return t && t->is_tensor() ? t : nullptr;
  }

  std::optional<Linear> linear(Node* n) const {
    if (n->kind() != c10::aten::linear || n->inputs().size() != 3) return std::nullopt;
    const std::optional<at::Tensor> w = constant_tensor(n->input(1));
    if (!w || !w->defined() || w->dim() != 2) return std::nullopt;
    Linear l{n, *w, std::nullopt};
    if (n->input(2)->mustBeNone()) return l;
    const std::optional<at::Tensor> b = constant_tensor(n->input(2));
    if (!b || !b->defined()) return std::nullopt;
    l.bias = *b;
    return l;
  }

  // Why a slice of the merged result cannot stand in for this linear's result ("" when it can).
  std::string why_apart(const Linear& l) const {
    const Value* out = l.node->output();
    const ir::Type* t = tensor_type(out);
    if (!t) return "its result's type was not profiled";
    // Measured: Llama's float32 call (H200, 8 x 128 tokens) took 16144 us of GPU time with its
    // q/k/v and gate/up GEMMs merged against 15702 apart; 16-bit GEMMs gained (1289 against 1349).
    if (!ir::is_16bit_float(t->dtype))
      return std::string("a ") + ir::dtype_short_name(t->dtype) +
             " linear (merged float32 GEMMs ran slower than apart; 16-bit ones faster)";
    for (const Value* o : ctx_.graph.outputs())
      if (o == out) return "its result is a graph output (returned as the linear's own tensor)";
    for (const torch::jit::Use& u : out->uses()) {
      if (u.user->kind() == c10::prim::TupleConstruct || u.user->kind() == c10::prim::ListConstruct)
        return "its result is returned or collected (" + node_name(u.user) + ") as the linear's own tensor";
      if (layout_free_reader(u.user)) continue;
      if (u.user->kind() == c10::aten::view && view_splits_last_dim(*t, u.user)) continue;
      return "its result is read by " + node_name(u.user) + ", which needs the linear's own contiguous result";
    }
    return "";
  }

  // A view that keeps the leading dims and splits the last one: a slice of the last dim takes it.
  bool view_splits_last_dim(const ir::Type& in, const Node* view) const {
    const ir::Type* out = tensor_type(view->output());
    const int64_t r = in.rank();
    if (!out || out->rank() < r || r == 0) return false;
    int64_t trailing = 1;
    for (int64_t d = 0; d < out->rank(); ++d) {
      if (d < r - 1 && out->sizes[d] != in.sizes[d]) return false;
      if (d >= r - 1) trailing *= out->sizes[d];
    }
    return trailing == in.sizes[r - 1];
  }

  // The linears that can merge, split into runs stored one after another; each run of two or more
  // becomes one GEMM.
  void merge_runs(const std::vector<Linear>& group) {
    std::vector<Linear> run;
    auto flush = [&] {
      if (run.size() >= 2) merge(run);
      run.clear();
    };
    for (const Linear& l : group) {
      const std::string why = why_apart(l);
      if (!why.empty()) {
        ctx_.refused("linear " + node_name(l.node) + " left apart from the linears of its input: " + why);
        flush();
        continue;
      }
      if (!run.empty() && !stored_after(run.back(), l)) {
        if (run.size() == 1)
          ctx_.refused("linears " + node_name(run.back().node) + " and " + node_name(l.node) +
                       " of one input left apart: their weights are not stored together (only a compiled "
                       "module's or exported program's own weights are)");
        flush();
      }
      run.push_back(l);
    }
    flush();
  }

  static bool stored_after(const Linear& prev, const Linear& next) {
    if (prev.bias.has_value() != next.bias.has_value()) return false;
    if (next.weight.scalar_type() != prev.weight.scalar_type() || next.weight.size(1) != prev.weight.size(1))
      return false;
    if (!follows(prev.weight, next.weight)) return false;
    return !prev.bias || follows(*prev.bias, *next.bias);
  }

  // The buffer `parts` lie in, from the first part's start to the last part's end.
  static at::Tensor whole(const std::vector<at::Tensor>& parts) {
    int64_t rows = 0;
    for (const at::Tensor& p : parts) rows += p.size(0);
    std::vector<int64_t> sizes = parts.front().sizes().vec();
    sizes[0] = rows;
    return parts.front().as_strided(sizes, ir::contiguous_strides(sizes), parts.front().storage_offset());
  }

  Value* constant(const at::Tensor& t) {
    Value* v = ctx_.graph.insertConstant(t);
    ctx_.set_type(v, ir::Type::tensor(t.scalar_type(), t.sizes().vec(), t.strides().vec(), t.device()));
    return v;
  }

  void merge(const std::vector<Linear>& run) {
    Node* first = run.front().node;
    const ir::Type* first_out = tensor_type(first->output());
    TORCHFUSE_INTERNAL_ASSERT(first_out != nullptr, "why_apart checked the linear's type");
    std::vector<at::Tensor> weights, biases;
    for (const Linear& l : run) {
      weights.push_back(l.weight);
      if (l.bias) biases.push_back(*l.bias);
    }
    torch::jit::WithInsertPoint point(first);
    const at::Tensor w = whole(weights);
    Value* bias = biases.empty() ? ctx_.graph.insertConstant(c10::IValue()) : constant(whole(biases));
    Value* merged = ctx_.graph.insert(c10::aten::linear, {first->input(0), constant(w), bias});
    std::vector<int64_t> sizes = first_out->sizes;
    sizes.back() = w.size(0);
    ctx_.set_type(merged, ir::Type::tensor(first_out->dtype, sizes, ir::contiguous_strides(sizes), first_out->device));
    const int64_t last = static_cast<int64_t>(sizes.size()) - 1;
    int64_t start = 0;
    std::string names;
    for (const Linear& l : run) {
      const int64_t end = start + l.weight.size(0);
      Value* slice = ctx_.graph.insert(c10::aten::slice, {merged, last, start, end, 1});
      slice->copyMetadata(l.node->output());
      ctx_.inherit_type(slice, l.node->output());
      l.node->output()->replaceAllUsesWith(slice);
      names += (names.empty() ? "" : ", ") + node_name(l.node);
      start = end;
    }
    for (const Linear& l : run) {
      TORCHFUSE_INTERNAL_ASSERT(!l.node->hasUses(), "a merged linear's result still has a use");
      l.node->destroy();
    }
    ctx_.applied("linears " + names + " -> one aten::linear with " + std::to_string(w.size(0)) +
                 " output features, each result a slice of its last dim");
  }
};

}  // namespace

void concat_linears(RewriteContext& ctx) { Concatenator(ctx).run(); }

}  // namespace torchfuse
