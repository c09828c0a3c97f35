#include "passes/concat_linears.h"

#include <torch/csrc/jit/ir/ir.h>

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>

#include "src/error.h"
#include "src/graph_constants.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// `next` is stored right after `prev` in one buffer (same storage, the next rows or elements).
bool follows(const at::Tensor& prev, const at::Tensor& next) {
  return next.is_contiguous() && prev.is_contiguous() && next.storage().is_alias_of(prev.storage()) &&
         next.storage_offset() == prev.storage_offset() + prev.numel();
}

// Readers that return a view of what they read where they can and a copy where they cannot: a
// slice of the merged result is as good to them as the linear's own result.
bool copies_where_it_must(const Node* n) {
  static const std::unordered_set<std::string> kinds = {"aten::reshape", "aten::flatten", "aten::contiguous"};
  return kinds.count(n->kind().toQualString()) > 0;
}

// An op whose result aliases an input (a view), by its schema.
bool returns_an_alias(const c10::FunctionSchema& schema) {
  for (const c10::Argument& r : schema.returns())
    if (r.alias_info() != nullptr) return true;
  return false;
}

// Every reader of `v` computes a new tensor from it (a list read by cat or stack).
bool only_computed_from(const Value* v) {
  for (const torch::jit::Use& u : v->uses()) {
    const c10::FunctionSchema* schema = u.user->maybeSchema();
    if (!schema || returns_an_alias(*schema)) return false;
  }
  return true;
}

// A tensor's sizes and strides, as the rewrite follows a slice through the views that read it.
struct Layout {
  std::vector<int64_t> sizes, strides;
};

class Concatenator {
 public:
  explicit Concatenator(RewriteContext& ctx) : ctx_(ctx) {}

  void run() {
    for (const std::vector<FrozenLinear>& group : frozen_linears_by_input(ctx_.graph))
      if (group.size() >= 2) merge_runs(group);
  }

 private:
  RewriteContext& ctx_;

  const ir::Type* tensor_type(const Value* v) const {
    const ir::Type* t = ctx_.type_of(v);
    return t && t->is_tensor() ? t : nullptr;
  }

  // Why a slice of the merged result cannot stand in for this linear's result ("" when it can).
  // The slice's rows are `row` elements apart (the merged output features).
  std::string why_apart(const FrozenLinear& l, int64_t row) const {
    const Value* out = l.node->output();
    const ir::Type* t = tensor_type(out);
    if (!t || t->rank() == 0) return "its result's type was not profiled";
    // Measured: Llama's float32 call (H200, 8 x 128 tokens) took 16144 us of GPU time with its
    // q/k/v and gate/up GEMMs merged against 15702 apart; 16-bit GEMMs gained (1289 against 1349).
    // Where GEMMs time their candidates and merged GEMMs time themselves against apart
    // (gemm_autotune), a float32 merge is tried too: the timing keeps apart (and ATen's GEMM)
    // wherever those are faster.
    const bool timed_f32 = t->dtype == c10::ScalarType::Float && ctx_.times_float32_gemms() && ctx_.time_column_parts;
    if (!ir::is_16bit_float(t->dtype) && !timed_f32)
      return std::string("a ") + ir::dtype_short_name(t->dtype) +
             " linear (merged float32 GEMMs ran slower than apart; 16-bit ones faster; under gemm_autotune the "
             "forms are timed)";
    std::vector<int64_t> merged = t->sizes;
    merged.back() = row;
    return why_readers_differ(out, {t->sizes, ir::contiguous_strides(merged)}, 0);
  }

  // Why a reader of `v`, laid out as `layout`, would not take it as it takes the linear's own
  // contiguous result ("" when every reader would). Views are followed with their strides: a
  // view that merges the sliced last dim with another one cannot be made of the slice, where
  // eager's contiguous result allows it (`.unsqueeze(0).view(1, B, T * N)`).
  std::string why_readers_differ(const Value* v, const Layout& layout, int depth) const {
    if (depth > 16) return "its result goes through more than 16 views";
    for (const Value* o : ctx_.graph.outputs())
      if (o == v) return "its result is a graph output (returned as the linear's own tensor)";
    for (const torch::jit::Use& u : v->uses()) {
      const Node* n = u.user;
      if (n->kind() == c10::prim::ListConstruct && only_computed_from(n->output())) continue;  // cat, stack
      const c10::FunctionSchema* schema = n->maybeSchema();
      if (!schema)  // prim::TupleConstruct, prim::ListConstruct...: the tensor itself passed on
        return "its result is returned or collected (" + node_name(n) + ") as the linear's own tensor";
      // An op computing a new tensor reads any layout; so do reshapes, which copy where they must.
      if (!returns_an_alias(*schema) || copies_where_it_must(n)) continue;
      const std::optional<Layout> next = view_layout(n, layout);
      if (!next) return "its result is read by " + node_name(n) + ", which needs the linear's own contiguous result";
      const std::string why = why_readers_differ(n->output(), *next, depth + 1);
      if (!why.empty()) return why;
    }
    return "";
  }

  // The layout a view (transpose, permute, unsqueeze, slice, select, expand, view; `to`, which
  // returns its input or a contiguous copy) makes of `in`; nothing for any other view, or a view
  // these strides cannot express.
  std::optional<Layout> view_layout(const Node* n, const Layout& in) const {
    const int64_t r = static_cast<int64_t>(in.sizes.size());
    Layout out = in;
    if (n->kind() == c10::aten::to || n->kind() == c10::aten::detach) return out;
    const ir::Type* result = tensor_type(n->output());
    if (n->kind() == c10::aten::slice) {
      const std::optional<int64_t> d = constant_dim(n->input(1), r);
      const std::optional<c10::IValue> step = constant_value(n->input(4));
      if (!d || !step || !step->isInt() || !result || result->rank() != r) return std::nullopt;
      out.sizes = result->sizes;
      out.strides[*d] *= step->toInt();
      return out;
    }
    if (n->kind() == c10::aten::select) {
      const std::optional<int64_t> d = constant_dim(n->input(1), r);
      if (!d) return std::nullopt;
      out.sizes.erase(out.sizes.begin() + *d);
      out.strides.erase(out.strides.begin() + *d);
      return out;
    }
    if (n->kind() == c10::aten::expand) {
      if (!result || result->rank() < r) return std::nullopt;
      const int64_t lead = result->rank() - r;
      out.sizes = result->sizes;
      out.strides.assign(result->rank(), 0);
      for (int64_t d = 0; d < r; ++d)
        out.strides[lead + d] = in.sizes[d] == result->sizes[lead + d] ? in.strides[d] : 0;
      return out;
    }
    if (n->kind() == c10::aten::transpose) {
      const std::optional<int64_t> a = constant_dim(n->input(1), r), b = constant_dim(n->input(2), r);
      if (!a || !b) return std::nullopt;
      std::swap(out.sizes[*a], out.sizes[*b]);
      std::swap(out.strides[*a], out.strides[*b]);
      return out;
    }
    if (n->kind() == c10::aten::permute) {
      const std::optional<c10::IValue> dims = constant_value(n->input(1));
      if (!dims || !dims->isIntList() || static_cast<int64_t>(dims->toIntVector().size()) != r) return std::nullopt;
      const std::vector<int64_t> p = dims->toIntVector();
      for (int64_t d = 0; d < r; ++d) {
        const int64_t from = p[d] < 0 ? p[d] + r : p[d];
        if (from < 0 || from >= r) return std::nullopt;
        out.sizes[d] = in.sizes[from];
        out.strides[d] = in.strides[from];
      }
      return out;
    }
    if (n->kind() == c10::aten::unsqueeze) {
      const std::optional<int64_t> k = constant_dim(n->input(1), r + 1);
      if (!k) return std::nullopt;
      out.sizes.insert(out.sizes.begin() + *k, 1);
      out.strides.insert(out.strides.begin() + *k, *k < r ? in.sizes[*k] * in.strides[*k] : 1);
      return out;
    }
    if (n->kind() == c10::aten::view) {
      const ir::Type* t = tensor_type(n->output());
      if (!t) return std::nullopt;
      const c10::optional<std::vector<int64_t>> strides = at::detail::computeStride(in.sizes, in.strides, t->sizes);
      if (!strides) return std::nullopt;
      return Layout{t->sizes, *strides};
    }
    return std::nullopt;
  }

  // The linears that can merge, split into runs stored one after another; each run of two or more
  // becomes one GEMM.
  void merge_runs(const std::vector<FrozenLinear>& group) {
    // The slices' row stride, taken as the whole group's features: a run of some of them has
    // fewer, which makes no view legal that this one refuses (both exceed each slice's own width).
    int64_t row = 0;
    for (const FrozenLinear& l : group) row += l.weight.size(0);
    std::vector<FrozenLinear> run;
    auto flush = [&] {
      if (run.size() >= 2) merge(run);
      run.clear();
    };
    for (const FrozenLinear& l : group) {
      const std::string why = why_apart(l, row);
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

  static bool stored_after(const FrozenLinear& prev, const FrozenLinear& next) {
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

  void merge(const std::vector<FrozenLinear>& run) {
    Node* first = run.front().node;
    const ir::Type* first_out = tensor_type(first->output());
    TORCHFUSE_INTERNAL_ASSERT(first_out != nullptr, "why_apart checked the linear's type");
    std::vector<at::Tensor> weights, biases;
    for (const FrozenLinear& l : run) {
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
    for (const FrozenLinear& l : run) {
      const int64_t end = start + l.weight.size(0);
      Value* slice = ctx_.graph.insert(c10::aten::slice, {merged, last, start, end, 1});
      slice->copyMetadata(l.node->output());
      ctx_.inherit_type(slice, l.node->output());
      l.node->output()->replaceAllUsesWith(slice);
      names += (names.empty() ? "" : ", ") + node_name(l.node);
      start = end;
    }
    for (const FrozenLinear& l : run) {
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
