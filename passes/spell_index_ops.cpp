// triu / tril, argmax / argmin (max / min with indices), repeat and repeat_interleave as ops the
// converters fuse (see spell_index_ops.h).
#include "passes/spell_index_ops.h"

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

// The entries of an int list argument when every one is a constant, else nullopt.
std::optional<std::vector<int64_t>> constant_ints(const Value* list) {
  if (const std::optional<c10::IValue> iv = constant_value(list)) {
    if (!iv->isIntList()) return std::nullopt;
    return iv->toIntVector();
  }
  if (list->node()->kind() != c10::prim::ListConstruct) return std::nullopt;
  std::vector<int64_t> out;
  for (const Value* v : list->node()->inputs()) {
    const std::optional<int64_t> i = constant_int(v);
    if (!i) return std::nullopt;
    out.push_back(*i);
  }
  return out;
}

class Speller {
 public:
  explicit Speller(RewriteContext& ctx) : ctx_(ctx), g_(ctx.graph) {}

  void run() {
    std::vector<Node*> order;
    for (Node* n : g_.nodes()) order.push_back(n);
    for (Node* n : order) {
      if (is_kind(n, "aten::triu")) triangle(n, true);
      else if (is_kind(n, "aten::tril")) triangle(n, false);
      else if (is_kind(n, "aten::argmax")) arg_extremum(n, true);
      else if (is_kind(n, "aten::argmin")) arg_extremum(n, false);
      else if (is_kind(n, "aten::max")) extremum_with_indices(n, true);
      else if (is_kind(n, "aten::min")) extremum_with_indices(n, false);
      else if (is_kind(n, "aten::repeat")) repeat(n);
      else if (is_kind(n, "aten::repeat_interleave")) repeat_interleave(n);
    }
  }

 private:
  RewriteContext& ctx_;
  torch::jit::Graph& g_;

  // The profiled tensor type of `v`, or nullptr.
  const ir::Type* tensor_type(const Value* v) const {
    const ir::Type* t = ctx_.type_of(v);
    return t && t->is_tensor() ? t : nullptr;
  }

  void refuse(const Node* n, const std::string& why) { ctx_.refused(node_name(n) + " stays one ATen op: " + why); }

  Value* int_list(const std::vector<Value*>& items) {
    return g_.insertNode(g_.createList(c10::IntType::get(), items))->output();
  }
  Value* size(Value* x, int64_t d) { return g_.insert(c10::aten::size, {size_source(ctx_, x, d), d}); }

  // The number of elements of x (profiled as t), from its sizes: a size read of a reshape of x
  // made here would make the kernel write the reshape out.
  Value* numel(Value* x, const ir::Type& t) {
    Value* n = g_.insertConstant(int64_t{1});
    for (int64_t d = 0; d < t.rank(); ++d) n = g_.insert(c10::aten::mul, {n, size(x, d)});
    return n;
  }

  // A value made here, typed as the profile would see it (cache_shape_tensors takes only typed
  // tensors into its cut).
  Value* typed(Value* v, c10::ScalarType dtype, const std::vector<int64_t>& sizes, c10::Device device) {
    ctx_.set_type(v, ir::Type::tensor(dtype, sizes, ir::contiguous_strides(sizes), device));
    return v;
  }

  // arange(n) of `dtype` on `device` (a constant: a specialization's devices are guarded), n
  // profiled as `length`: the indices depend on sizes alone.
  Value* arange(Value* n, int64_t length, c10::Device device, c10::ScalarType dtype = c10::ScalarType::Long) {
    Value* made = g_.insert(c10::aten::arange, {n},
                            {torch::jit::NamedValue("dtype", static_cast<int64_t>(dtype)),
                             torch::jit::NamedValue("device", g_.insertConstant(device))});
    return typed(made, dtype, {length}, device);
  }

  // Each element's index along a dim of n elements (profiled as `length`) that is dim d of a
  // rank-`rank` tensor: an int32 arange(n) (half the bytes of int64 for the kernel to read; a dim
  // of at most kMaxIndexLength) shaped [n, 1, ..., 1], which broadcasts against it.
  Value* index_along(Value* n, int64_t length, int64_t d, int64_t rank, c10::Device device) {
    const c10::ScalarType i32 = c10::ScalarType::Int;
    Value* idx = arange(n, length, device, i32);
    if (d == rank - 1) return idx;
    std::vector<int64_t> shape(static_cast<size_t>(rank - d), 1);
    shape[0] = -1;
    std::vector<int64_t> sizes = shape;
    sizes[0] = length;
    return typed(g_.insert(c10::aten::view, {idx, shape}), i32, sizes, device);
  }

  void replace(Node* n, size_t output, Value* made) {
    made->setType(n->output(output)->type());
    ctx_.inherit_type(made, n->output(output));
    n->output(output)->replaceAllUsesWith(made);
  }

  // triu(x, k): keeps the elements with col - row >= k; tril(x, k): col - row <= k.
  void triangle(Node* n, bool upper) {
    if (n->inputs().size() != 2 || n->outputs().size() != 1) return;
    const ir::Type* t = tensor_type(n->input(0));
    if (!t || t->rank() < 2) return;  // not profiled, or eager raises
    if (c10::isComplexType(t->dtype)) return refuse(n, "input dtype " + std::string(c10::toString(t->dtype)));
    const std::optional<int64_t> k = constant_int(n->input(1));
    if (!k) return refuse(n, "its diagonal is not a constant int");
    torch::jit::WithInsertPoint point(n);
    Value* x = n->input(0);
    const int64_t r = t->rank();
    const int64_t nr = t->sizes[static_cast<size_t>(r - 2)], nc = t->sizes[static_cast<size_t>(r - 1)];
    const c10::ScalarType i64 = c10::ScalarType::Long;
    Value* rows = typed(g_.insert(c10::aten::unsqueeze, {arange(size(x, r - 2), nr, t->device), 1}), i64, {nr, 1}, t->device);
    // [rows, cols]: col - row
    Value* offset = typed(g_.insert(c10::aten::sub, {arange(size(x, r - 1), nc, t->device), rows}), i64, {nr, nc}, t->device);
    Value* drop = typed(g_.insert(upper ? c10::aten::lt : c10::aten::gt, {offset, *k}), c10::ScalarType::Bool, {nr, nc},
                        t->device);
    // (An int 0 for every dtype: the schema's Scalar takes no bool, and 0 fills a bool tensor with False.)
    replace(n, 0, g_.insert(c10::aten::masked_fill, {x, drop, int64_t{0}}));
    ctx_.applied(node_name(n) + " -> masked_fill with a mask of aranges (col - row " + (upper ? "< " : "> ") +
                 std::to_string(*k) + ")");
    n->destroy();
  }

  // Why argmax / argmin cannot be spelled for input type t, or "".
  static std::string arg_refusal(const ir::Type& t) {
    if (t.dtype == c10::ScalarType::Bool || c10::isComplexType(t.dtype)) {
      return "input dtype " + std::string(c10::toString(t.dtype));
    }
    if (t.rank() == 0) return "a 0-dim input";
    return "";
  }

  // The dim `d` of a rank-`rank` tensor normalized, or nullopt where eager raises.
  static std::optional<int64_t> normalized_dim(int64_t d, int64_t rank) {
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) return std::nullopt;
    return d;
  }

  // Dim `dim` of t normalized, where an index along it is worth spelling; else nullopt, refused
  // with the reason unless eager raises (out of range, or nothing to pick). The kernel reads an
  // int32 arange as long as the dim beside it, which stays in L2 while it is short.
  std::optional<int64_t> index_dim(const Node* n, const ir::Type& t, int64_t dim) {
    const std::optional<int64_t> d = normalized_dim(dim, t.rank());
    if (!d || t.sizes[static_cast<size_t>(*d)] == 0) return std::nullopt;
    const int64_t length = t.sizes[static_cast<size_t>(*d)];
    if (length <= kMaxIndexLength) return d;
    refuse(n, "the reduced dim has " + std::to_string(length) + " elements, above " + std::to_string(kMaxIndexLength) +
                  ": the index arange read beside them would cost more than the op");
    return std::nullopt;
  }
  static constexpr int64_t kMaxIndexLength = 262144;

  // amax(x, [d], keepdim) or amin.
  Value* extremum(Value* x, int64_t d, bool keepdim, bool largest) {
    return g_.insert(largest ? c10::aten::amax : c10::aten::amin, {x, std::vector<int64_t>{d}, keepdim});
  }

  // The first index along d of the extremum m (keepdim form) of x: NaN counts as the extremum
  // (eager's rule; m is NaN exactly where x has one, and x != x finds it). `n`: x.size(d),
  // profiled as `length`.
  Value* first_index_of(Value* x, Value* m, Value* n, int64_t length, int64_t d, int64_t rank, bool keepdim,
                        const ir::Type& t) {
    Value* hit = g_.insert(c10::aten::eq, {x, m});
    if (c10::isFloatingType(t.dtype)) hit = g_.insert(c10::aten::logical_or, {hit, g_.insert(c10::aten::ne, {x, x})});
    // (An int32 index and an int Python number: the where stays int32, as does its amin.)
    Value* candidate = g_.insert(c10::aten::where, {hit, index_along(n, length, d, rank, t.device), n});
    Value* first = g_.insert(c10::aten::amin, {candidate, std::vector<int64_t>{d}, keepdim});
    return g_.insert(c10::aten::to, {first, static_cast<int64_t>(c10::ScalarType::Long)});
  }

  // argmax(x, dim=None, keepdim=False) / argmin.
  void arg_extremum(Node* n, bool largest) {
    if (n->inputs().size() != 3 || n->outputs().size() != 1) return;
    const ir::Type* t = tensor_type(n->input(0));
    if (!t) return;
    const std::string why = arg_refusal(*t);
    if (!why.empty()) return refuse(n, why);
    const std::optional<bool> keepdim = constant_bool(n->input(2));
    if (!keepdim) return refuse(n, "keepdim is not a constant bool");
    const bool every_dim = is_none_constant(n->input(1));
    if (every_dim && *keepdim) return refuse(n, "dim=None with keepdim=True");
    // (The flattened input would be a view inside the reduction group, which does not fuse.)
    if (every_dim && t->rank() > 1) return refuse(n, "dim=None over a rank-" + std::to_string(t->rank()) + " input");
    // (dim=None on a 1-d input: dim 0.)
    const std::optional<int64_t> dim = every_dim ? std::optional<int64_t>(0) : constant_int(n->input(1));
    if (!dim) return refuse(n, "dim is not a constant int");
    const std::optional<int64_t> d = index_dim(n, *t, *dim);
    if (!d) return;
    torch::jit::WithInsertPoint point(n);
    Value* x = n->input(0);
    const int64_t rank = t->rank();
    Value* m = extremum(x, *d, true, largest);
    replace(n, 0, first_index_of(x, m, size(x, *d), t->sizes[static_cast<size_t>(*d)], *d, rank, *keepdim, *t));
    ctx_.applied(node_name(n) + " -> the first index of its " + (largest ? "amax" : "amin") +
                 (every_dim ? " over every element" : " along dim " + std::to_string(*d)));
    n->destroy();
  }

  // max(x, dim, keepdim) / min with the indices used (the values alone the converter fuses).
  void extremum_with_indices(Node* n, bool largest) {
    if (n->inputs().size() != 3 || n->outputs().size() != 2 || !n->output(1)->hasUses()) return;
    const ir::Type* t = tensor_type(n->input(0));
    if (!t || !n->input(1)->type()->cast<c10::IntType>()) return;  // not the dim overload
    const std::string why = arg_refusal(*t);
    if (!why.empty()) return refuse(n, why);
    const std::optional<int64_t> dim = constant_int(n->input(1));
    const std::optional<bool> keepdim = constant_bool(n->input(2));
    if (!dim || !keepdim) return refuse(n, "dim or keepdim is not a constant");
    const std::optional<int64_t> d = index_dim(n, *t, *dim);
    if (!d) return;
    torch::jit::WithInsertPoint point(n);
    Value* x = n->input(0);
    Value* m = extremum(x, *d, true, largest);
    replace(n, 1, first_index_of(x, m, size(x, *d), t->sizes[static_cast<size_t>(*d)], *d, t->rank(), *keepdim, *t));
    // Without keepdim the values are a reduction of their own (the same row's loop computes both):
    // a squeeze of m would be a view, which a reduction group's epilogue does not take.
    replace(n, 0, *keepdim ? m : extremum(x, *d, false, largest));
    ctx_.applied(node_name(n) + " -> its " + (largest ? "amax" : "amin") + " and the first index of it along dim " +
                 std::to_string(*d));
    n->destroy();
  }

  // y expanded by `expand` (-1 keeps a dim) and merged to `sizes`, as a new tensor.
  Value* expanded_copy(Value* y, const std::vector<int64_t>& expand, const std::vector<Value*>& sizes) {
    y = g_.insert(c10::aten::expand, {y, expand});
    y = g_.insert(c10::aten::reshape, {y, int_list(sizes)});
    return g_.insert(c10::aten::contiguous, {y});
  }

  // x.repeat(r_0, ..., r_{m-1}), m >= rank: new leading dims of r_i, and each dim j of x tiled
  // r_{lead + j} times (an outer dim of that size before it, merged).
  void repeat(Node* n) {
    if (n->inputs().size() != 2 || n->outputs().size() != 1) return;
    const ir::Type* t = tensor_type(n->input(0));
    if (!t) return;
    const std::optional<std::vector<int64_t>> r = constant_ints(n->input(1));
    if (!r) return refuse(n, "its repeats are not constant ints");
    const int64_t rank = t->rank();
    const int64_t lead = static_cast<int64_t>(r->size()) - rank;
    if (lead < 0) return;  // eager raises
    bool any = lead > 0;
    for (int64_t k : *r) {
      if (k < 1) return refuse(n, "a repeat of " + std::to_string(k));
      any = any || k > 1;
    }
    if (!any) return refuse(n, "every repeat is 1 (a copy)");
    torch::jit::WithInsertPoint point(n);
    Value* x = n->input(0);
    Value* y = x;
    std::vector<int64_t> expand(r->begin(), r->begin() + lead);
    std::vector<Value*> sizes;
    for (int64_t k = 0; k < lead; ++k) sizes.push_back(g_.insertConstant((*r)[static_cast<size_t>(k)]));
    int64_t inserted = 0;
    for (int64_t j = 0; j < rank; ++j) {
      const int64_t k = (*r)[static_cast<size_t>(lead + j)];
      Value* s = size(x, j);
      if (k == 1) {
        expand.push_back(-1);
        sizes.push_back(s);
        continue;
      }
      y = g_.insert(c10::aten::unsqueeze, {y, j + inserted++});
      expand.push_back(k);
      expand.push_back(-1);
      sizes.push_back(g_.insert(c10::aten::mul, {s, k}));
    }
    replace(n, 0, expanded_copy(y, expand, sizes));
    ctx_.applied(node_name(n) + " -> unsqueeze, expand and reshape (repeats " + ir::shape_str(*r) + ")");
    n->destroy();
  }

  // repeat_interleave(x, r, dim) with an int r: each element of dim d r times in a row.
  void repeat_interleave(Node* n) {
    if (n->inputs().size() < 3 || n->outputs().size() != 1 || !n->input(1)->type()->cast<c10::IntType>()) return;
    const ir::Type* t = tensor_type(n->input(0));
    if (!t) return;
    // (output_size is a promise eager may check; the spelled ops would not.)
    if (n->inputs().size() > 3 && !is_none_constant(n->input(3))) return refuse(n, "output_size is given");
    const std::optional<int64_t> r = constant_int(n->input(1));
    if (!r) return refuse(n, "its repeats are not a constant int");
    if (*r < 2) return refuse(n, "a repeat of " + std::to_string(*r));
    const bool every_dim = is_none_constant(n->input(2));
    std::optional<int64_t> d = every_dim ? std::optional<int64_t>(0) : constant_int(n->input(2));
    if (!d) return refuse(n, "dim is not a constant int");
    if (!every_dim) d = normalized_dim(*d, std::max<int64_t>(t->rank(), 1));
    if (!d || (!every_dim && t->rank() == 0)) return;  // eager raises, or nothing to spell
    torch::jit::WithInsertPoint point(n);
    Value* x = n->input(0);
    int64_t rank = t->rank();
    std::vector<Value*> sizes;
    if (every_dim) {
      sizes.push_back(g_.insert(c10::aten::mul, {numel(x, *t), *r}));
      x = g_.insert(c10::aten::reshape, {x, std::vector<int64_t>{-1}});
      rank = 1;
    } else {
      for (int64_t j = 0; j < rank; ++j) {
        Value* s = size(x, j);
        sizes.push_back(j == *d ? g_.insert(c10::aten::mul, {s, *r}) : s);
      }
    }
    std::vector<int64_t> expand(static_cast<size_t>(rank + 1), -1);
    expand[static_cast<size_t>(*d + 1)] = *r;
    Value* y = g_.insert(c10::aten::unsqueeze, {x, *d + 1});
    replace(n, 0, expanded_copy(y, expand, sizes));
    ctx_.applied(node_name(n) + " -> unsqueeze, expand and reshape (" + std::to_string(*r) + " times along dim " +
                 std::to_string(*d) + (every_dim ? " of the flattened input)" : ")"));
    n->destroy();
  }
};

}  // namespace

void spell_index_ops(RewriteContext& ctx) { Speller(ctx).run(); }

}  // namespace torchfuse
