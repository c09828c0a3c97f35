// Batch, group and instance norms as the ops they compute (see decompose_norms.h).
//
// Why: ATen runs each norm as one kernel and whatever follows it (ReLU, SiLU, a residual add) as
// more; spelled as pointwise ops and a layer norm, torchfuse's converters and fusion passes put
// the norm and its neighbours into one kernel, and the layer norm's row schedules (split rows for
// a UNet's few long groups) serve the group statistics. Numbers follow ATen's CUDA kernels: every
// step in float32 registers and one rounding to the input's dtype at the end.
#include "passes/decompose_norms.h"

#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include "src/graph_constants.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// The input and its profiled type, or why the norm stays as it is ("" when it can go).
std::string input_refusal(const ir::Type* t) {
  if (!t || !t->is_tensor()) return "its input was not profiled as a tensor";
  const c10::ScalarType d = t->dtype;
  if (d != c10::ScalarType::Float && d != c10::ScalarType::Half && d != c10::ScalarType::BFloat16) {
    return std::string("input dtype ") + ir::dtype_short_name(d) + ": only f32, f16 and bf16 norms are decomposed";
  }
  if (t->rank() < 2) return "input of rank " + std::to_string(t->rank()) + ": a norm needs a channel dim";
  return "";
}

// What one norm call reads: the tensors are nullptr where the argument is None.
struct NormArgs {
  Value* x = nullptr;
  Value* weight = nullptr;
  Value* bias = nullptr;
  Value* running_mean = nullptr;
  Value* running_var = nullptr;
  double eps = 0;
};

class Decomposer {
 public:
  explicit Decomposer(RewriteContext& ctx) : ctx_(ctx), g_(ctx.graph) {}

  void run() {
    std::vector<Node*> norms;
    for (Node* n : g_.nodes()) {
      if (is_kind(n, "aten::batch_norm") || is_kind(n, "aten::group_norm") || is_kind(n, "aten::instance_norm"))
        norms.push_back(n);
    }
    for (Node* n : norms) decompose(n);
  }

 private:
  void decompose(Node* n) {
    const std::string why = refusal(n);
    if (!why.empty()) {
      ctx_.refused(node_name(n) + " stays one ATen op: " + why);
      return;
    }
    torch::jit::WithInsertPoint point(n);
    const std::string name = node_name(n);
    const NormArgs a = args(n);
    const ir::Type t = *ctx_.type_of(n->input(0));
    Value* out = nullptr;
    std::string how;
    if (is_kind(n, "aten::group_norm")) {
      const int64_t groups = constant_value(n->input(1))->toInt();
      out = grouped(a, t, groups);
      how = "reshaped to [N, " + std::to_string(groups) + ", C/" + std::to_string(groups) +
            ", HW], layer_norm over its last two dims, affine per channel";
    } else if (uses_input_stats(n)) {
      out = grouped(a, t, std::nullopt);
      how = "reshaped to [N, C, 1, HW], layer_norm over its last two dims, affine per channel";
    } else {
      out = per_channel_affine(a, t);
      how = "((x - mean) * rsqrt(var + eps)) * w + b per channel, in float32";
    }
    ctx_.inherit_type(out, n->output());
    n->output()->replaceAllUsesWith(out);
    n->destroy();
    ctx_.applied(name + " " + t.str() + " -> " + how);
  }

  // "" when `n` can be decomposed, else why not.
  std::string refusal(const Node* n) const {
    const size_t arity = is_kind(n, "aten::group_norm") ? 6 : 9;
    if (n->inputs().size() != arity || n->outputs().size() != 1) return "an unexpected overload";
    const std::string input = input_refusal(ctx_.type_of(n->input(0)));
    if (!input.empty()) return input;
    const size_t eps_index = is_kind(n, "aten::group_norm") ? 4 : 7;
    if (!constant_number(n->input(eps_index))) return "eps is not a constant";
    for (size_t i : param_indices(n)) {
      if (is_none_constant(n->input(i))) continue;
      const ir::Type* p = ctx_.type_of(n->input(i));
      if (!p || !p->is_tensor() || p->rank() != 1) return "a parameter that is not a profiled 1-d tensor";
      if (!c10::isFloatingType(p->dtype)) return "a parameter of a non-floating dtype";
      if (p->device != ctx_.type_of(n->input(0))->device) return "a parameter on another device than the input";
    }
    if (is_kind(n, "aten::group_norm")) {
      const std::optional<c10::IValue> groups = constant_value(n->input(1));
      if (!groups || !groups->isInt() || groups->toInt() <= 0) return "num_groups is not a positive constant";
      return "";
    }
    const std::optional<bool> stats = constant_bool(n->input(5));
    if (!stats) return std::string(is_kind(n, "aten::batch_norm") ? "training" : "use_input_stats") + " is not a constant";
    const bool running = !is_none_constant(n->input(3)) || !is_none_constant(n->input(4));
    if (is_kind(n, "aten::batch_norm")) {
      if (*stats) return "training mode (batch statistics; running ones, where given, updated)";
      if (is_none_constant(n->input(3)) || is_none_constant(n->input(4))) return "inference without running statistics";
      return "";
    }
    if (*stats && running) return "input statistics with running ones, which it updates";
    if (!*stats && (is_none_constant(n->input(3)) || is_none_constant(n->input(4)))) {
      return "no input statistics and no running ones";
    }
    return "";
  }

  // The indices of the per-channel tensor arguments.
  static std::vector<size_t> param_indices(const Node* n) {
    if (is_kind(n, "aten::group_norm")) return {2, 3};
    return {1, 2, 3, 4};
  }

  static bool uses_input_stats(const Node* n) {
    return is_kind(n, "aten::instance_norm") && *constant_bool(n->input(5));
  }

  static NormArgs args(const Node* n) {
    auto opt = [&](size_t i) { return is_none_constant(n->input(i)) ? nullptr : n->input(i); };
    NormArgs a;
    a.x = n->input(0);
    if (is_kind(n, "aten::group_norm")) {
      a.weight = opt(2);
      a.bias = opt(3);
      a.eps = *constant_number(n->input(4));
      return a;
    }
    a.weight = opt(1);
    a.bias = opt(2);
    a.running_mean = opt(3);
    a.running_var = opt(4);
    a.eps = *constant_number(n->input(7));
    return a;
  }

  Value* int_list(const std::vector<Value*>& items) {
    return g_.insertNode(g_.createList(c10::IntType::get(), items))->output();
  }

  Value* float32(Value* v) { return g_.insert(c10::aten::to, {v, static_cast<int64_t>(c10::ScalarType::Float)}); }

  // A per-channel parameter (1-d) in float32 as `shape`; with `invstd`, rsqrt(p + eps) (a running
  // variance). A constant parameter becomes a new constant; another one, the ops that make it.
  Value* channel_param(Value* p, const std::vector<int64_t>& shape, bool invstd, double eps) {
    if (const std::optional<at::Tensor> c = constant_tensor(p)) {
      at::Tensor f = c->to(at::kFloat);
      if (invstd) f = at::rsqrt(f + eps);
      return g_.insertConstant(f.reshape(shape).contiguous());
    }
    // Reshaped first: the reshape of the parameter stays an ATen view, and its cast (and rsqrt)
    // join the norm's kernel (a cast read through a view would be a kernel of its own: views do
    // not enter reduction groups).
    Value* f = float32(g_.insert(c10::aten::reshape, {p, shape}));
    if (invstd) f = g_.insert(c10::aten::rsqrt, {g_.insert(c10::aten::add, {f, eps})});
    return f;
  }

  // y * w + b, each where given.
  Value* affine(Value* y, Value* w, Value* b) {
    if (w) y = g_.insert(c10::aten::mul, {y, w});
    if (b) y = g_.insert(c10::aten::add, {y, b});
    return y;
  }

  // Back to the input's dtype where it is 16-bit.
  Value* narrowed(Value* y, const ir::Type& t) {
    if (!ir::is_16bit_float(t.dtype)) return y;
    return g_.insert(c10::aten::to, {y, static_cast<int64_t>(t.dtype)});
  }

  // batch_norm in inference, instance_norm on running statistics: ATen's elementwise formula.
  Value* per_channel_affine(const NormArgs& a, const ir::Type& t) {
    std::vector<int64_t> shape(static_cast<size_t>(t.rank() - 1), 1);
    shape[0] = -1;
    Value* mean = channel_param(a.running_mean, shape, false, 0);
    Value* invstd = channel_param(a.running_var, shape, true, a.eps);
    Value* y = g_.insert(c10::aten::mul, {g_.insert(c10::aten::sub, {a.x, mean}), invstd});
    Value* w = a.weight ? channel_param(a.weight, shape, false, 0) : nullptr;
    Value* b = a.bias ? channel_param(a.bias, shape, false, 0) : nullptr;
    return narrowed(affine(y, w, b), t);
  }

  // group_norm with `groups` groups, or instance_norm on input statistics (nullopt: a group per
  // channel). The sizes come from x on every call (no -1: an empty batch reshapes too).
  Value* grouped(const NormArgs& a, const ir::Type& t, std::optional<int64_t> groups) {
    Value* channels = g_.insert(c10::aten::size, {a.x, 1});
    Value* g = groups ? g_.insertConstant(*groups) : channels;
    Value* per_group = groups ? g_.insert(c10::Symbol::fromQualString("aten::floordiv"), {channels, g})
                              : g_.insertConstant(int64_t{1});
    Value* spatial = g_.insertConstant(int64_t{1});
    for (int64_t d = 2; d < t.rank(); ++d) {
      Value* s = g_.insert(c10::aten::size, {a.x, d});
      spatial = d == 2 ? s : g_.insert(c10::aten::mul, {spatial, s});
    }
    Value* shape = int_list({g_.insert(c10::aten::size, {a.x, 0}), g, per_group, spatial});
    // The values in the grouped shape are typed as profiled: sink_reshapes moves the view back to
    // x's sizes past the pointwise ops reading it (so that they join the norm's kernel), and
    // reshapes their other operands by `shape`.
    const int64_t per = groups ? t.sizes[1] / *groups : 1;
    std::vector<int64_t> grouped_sizes = {t.sizes[0], groups ? *groups : t.sizes[1], per, 1};
    for (int64_t d = 2; d < t.rank(); ++d) grouped_sizes[3] *= t.sizes[d];
    auto typed = [&](Value* v, c10::ScalarType dtype) {
      ctx_.set_type(v, ir::Type::tensor(dtype, grouped_sizes, ir::contiguous_strides(grouped_sizes), t.device));
      return v;
    };
    const c10::ScalarType f32 = c10::ScalarType::Float;
    Value* reshaped = typed(g_.insert(c10::aten::reshape, {a.x, shape}), t.dtype);
    Value* xg = typed(float32(reshaped), f32);
    // The normalized sizes read from the reshape, not from its float32 copy: a size read of the
    // copy would make the kernel write the copy out.
    Value* dims = int_list({g_.insert(c10::aten::size, {reshaped, 2}), g_.insert(c10::aten::size, {reshaped, 3})});
    Value* none = g_.insertConstant(c10::IValue());
    Value* y = typed(g_.insert(c10::aten::layer_norm, {xg, dims, none, none, a.eps, false}), f32);
    // The parameters as [G, C/G, 1] (-1: what the parameter's length gives).
    const std::vector<int64_t> param_shape = groups ? std::vector<int64_t>{*groups, -1, 1} : std::vector<int64_t>{-1, 1, 1};
    Value* w = a.weight ? channel_param(a.weight, param_shape, false, 0) : nullptr;
    Value* b = a.bias ? channel_param(a.bias, param_shape, false, 0) : nullptr;
    if (w) y = typed(g_.insert(c10::aten::mul, {y, w}), f32);
    if (b) y = typed(g_.insert(c10::aten::add, {y, b}), f32);
    Value* out = typed(narrowed(y, t), t.dtype);
    std::vector<Value*> sizes;
    for (int64_t d = 0; d < t.rank(); ++d) sizes.push_back(g_.insert(c10::aten::size, {a.x, d}));
    return g_.insert(c10::aten::view, {out, int_list(sizes)});
  }

  RewriteContext& ctx_;
  torch::jit::Graph& g_;
};
}  // namespace

void decompose_norms(RewriteContext& ctx) { Decomposer(ctx).run(); }

}  // namespace torchfuse
