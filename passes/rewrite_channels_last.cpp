// Convolutions and their elementwise neighbours in channels-last order (see
// rewrite_channels_last.h).
#include "passes/rewrite_channels_last.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <ATen/Functions.h>
#include <c10/core/MemoryFormat.h>
#include <torch/csrc/jit/ir/ir.h>

#include "passes/size_source.h"
#include "src/convert_context.h"
#include "src/graph_constants.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

// A 2-D convolution (not transposed) with a frozen 4-D weight: the weight's layout picks the result's.
bool is_conv2d(const Node* n) {
  const bool plain = is_kind(n, "aten::conv2d");
  const bool general = is_kind(n, "aten::_convolution") || is_kind(n, "aten::convolution");
  if (!plain && !general) return false;
  if (n->inputs().size() < 7 || n->outputs().size() != 1) return false;
  if (general && constant_bool(n->input(6)) != std::optional<bool>(false)) return false;
  const std::optional<at::Tensor> w = constant_tensor(n->input(1));
  return w && w->dim() == 4;
}

// Ops whose values do not depend on their inputs' layout (strides): a channels-last tensor may
// reach them as it is. Their tensor results may be laid out otherwise than eager's too.
bool is_layout_agnostic(const Node* n) {
  static const std::unordered_set<std::string> kinds = {
      "aten::conv2d",      "aten::_convolution",        "aten::convolution",        "aten::max_pool2d",
      "aten::avg_pool2d",  "aten::adaptive_avg_pool2d", "aten::adaptive_max_pool2d", "aten::mean",
      "aten::sum",         "aten::amax",                "aten::amin",               "aten::flatten",
      "aten::reshape",     "aten::permute",             "aten::transpose",          "aten::contiguous",
      "aten::size",        "aten::dim",                 "aten::layer_norm",         "aten::group_norm",
      "aten::batch_norm",  "aten::linear",              "aten::matmul",             "aten::softmax",
      "aten::to",          "aten::dropout",             "aten::slice",              "aten::select",
      "aten::narrow",      "aten::upsample_nearest2d",  "aten::upsample_bilinear2d", "aten::constant_pad_nd"};
  return is_fusible_pointwise(n) || kinds.count(n->kind().toQualString()) > 0;
}

bool is_tensor_value(const Value* v) { return v->type()->kind() == c10::TypeKind::TensorType; }

// Is `n` a permute by the constant `dims`, in the graph's own block?
bool permutes_by(const Node* n, const torch::jit::Block* block, const std::vector<int64_t>& dims) {
  if (!is_kind(n, "aten::permute") || n->inputs().size() != 2 || n->owningBlock() != block) return false;
  const std::optional<c10::IValue> d = constant_value(n->input(1));
  return d && d->isIntList() && d->toIntVector() == dims;
}

// Readers that may as well read a contiguous copy of their input, where one is made anyway.
bool reads_sizes_or_reduces(const Node* n) {
  static const std::unordered_set<std::string> kinds = {"aten::size", "aten::dim",  "aten::mean",
                                                        "aten::sum",  "aten::amax", "aten::amin",
                                                        "aten::adaptive_avg_pool2d"};
  return kinds.count(n->kind().toQualString()) > 0;
}

class ChannelsLast {
 public:
  explicit ChannelsLast(RewriteContext& ctx) : ctx_(ctx), g_(ctx.graph) {}

  void run() {
    std::vector<Node*> convs;
    std::vector<std::pair<std::string, std::vector<Node*>>> stay;  // by reason, in graph order
    for (Node* n : g_.nodes()) {
      if (!is_conv2d(n)) continue;
      const std::string why = why_conv_stays(n);
      if (why.empty()) {
        convs.push_back(n);
        continue;
      }
      auto it = std::find_if(stay.begin(), stay.end(), [&](const auto& s) { return s.first == why; });
      if (it == stay.end()) it = stay.insert(stay.end(), {why, {}});
      it->second.push_back(n);
    }
    for (const auto& [why, nodes] : stay) {
      ctx_.refused("channels-last convolutions: " + std::to_string(nodes.size()) + " convolution(s) stay NCHW, from " +
                   node_name(nodes.front()) + ": " + why);
    }
    if (convs.empty()) return;
    if (const std::string why = why_not_graph(); !why.empty()) {
      ctx_.refused("channels-last convolutions: " + why);
      return;
    }
    for (Node* conv : convs) store_weight_channels_last(conv);
    ctx_.applied("channels-last weights for " + std::to_string(convs.size()) + " convolution(s), from " +
                 node_name(convs.front()));
    std::vector<Node*> order;
    for (Node* n : g_.nodes()) order.push_back(n);
    for (Node* n : order) {
      if (done_.count(n) || !is_fusible_pointwise(n) || !(reads_nhwc_source(n) || reads_only_channels_last(n))) continue;
      rewrite_region(grow_region(n));
    }
    guard_layout_readers();
    read_exits_unpermuted();
  }

 private:
  RewriteContext& ctx_;
  torch::jit::Graph& g_;
  std::unordered_set<Value*> nhwc_sources_;  // convolution results and region results
  std::unordered_set<const Node*> done_;           // nodes already in a region
  std::unordered_map<const Value*, Value*> nhwc_weights_;  // a weight -> its NHWC copy
  // Region results whose eager value was channels-last too: a graph output takes them as they are.
  std::unordered_set<const Value*> eager_channels_last_;
  // A region's result as its readers outside see it, permute(contiguous(twin), [0, 3, 1, 2]) ->
  // the twin, computed over [N, H, W, C].
  std::unordered_map<const Value*, Value*> exits_;
  int regions_ = 0;

  // Why a convolution keeps NCHW ("" where it goes NHWC). Float32 on CUDA: handed NHWC tensors,
  // cuDNN picks TF32 tensor-core kernels (PyTorch allows TF32 for cuDNN by default), which eager's
  // NCHW call did not pick: on an H200 a 3x3 convolution's results then differed from float64 by
  // 0.007 where eager's differed by 1.3e-5. 16-bit convolutions run on tensor cores either way.
  std::string why_conv_stays(const Node* conv) const {
    const ir::Type* out = tensor_type(conv->output());
    if (!out) return "its result's type was not profiled";
    const c10::ScalarType t = out->dtype;
    if (t == c10::ScalarType::Half || t == c10::ScalarType::BFloat16) return "";
    if (t == c10::ScalarType::Float && !out->device.is_cuda()) return "";
    if (t == c10::ScalarType::Float)
      return "a float32 convolution on CUDA (cuDNN would run it NHWC in TF32, where eager's NCHW call ran float32)";
    return std::string("its dtype is ") + c10::toString(t) + " (only float16, bfloat16, and float32 off CUDA go NHWC)";
  }

  // Graphs where eager's layout could show: raw-storage reads.
  std::string why_not_graph() {
    for (Node* n : g_.nodes())
      if (is_kind(n, "aten::as_strided")) return "the graph reads raw storage (" + node_name(n) + ")";
    return "";
  }

  // One NHWC copy per weight (convolutions and specializations sharing a weight share it), made at
  // the graph's start.
  void store_weight_channels_last(Node* conv) {
    Value* old = conv->input(1);
    auto it = nhwc_weights_.find(old);
    if (it == nhwc_weights_.end()) {
      const auto to_nhwc = [](const at::Tensor& w) {
        at::Tensor nhwc = at::empty_strided(w.sizes(), c10::get_channels_last_strides_2d(w.sizes()), w.options());
        return nhwc.copy_(w);
      };
      const at::Tensor w = *constant_tensor(old);
      const at::Tensor nhwc = ctx_.derived ? ctx_.derived->get("nhwc", w, to_nhwc) : to_nhwc(w);
      torch::jit::WithInsertPoint point(g_.block()->nodes().front());
      it = nhwc_weights_.emplace(old, g_.insertConstant(nhwc)).first;
    }
    conv->replaceInput(1, it->second);
    nhwc_sources_.insert(conv->output());
    // (Eager's result was channels-last too where eager's input was: a graph output takes it as it is.)
    if (const ir::Type* eager = tensor_type(conv->output()); eager && channels_last_strided(*eager))
      eager_channels_last_.insert(conv->output());
  }

  bool reads_nhwc_source(Node* n) const {
    for (Value* v : n->inputs())
      if (nhwc_sources_.count(v)) return true;
    return false;
  }

  // Profiled channels-last strides of [N, C, H, W] sizes (dims of size 1 take any stride), and not
  // also contiguous ones (C or H * W of 1).
  static bool channels_last_strided(const ir::Type& t) {
    if (t.rank() != 4 || t.strides.size() != 4 || t.numel() == 0) return false;
    const std::vector<int64_t> cl = c10::get_channels_last_strides_2d(t.sizes);
    const std::vector<int64_t> dense = ir::contiguous_strides(t.sizes);
    bool is_cl = true, is_dense = true;
    for (size_t d = 0; d < 4; ++d) {
      if (t.sizes[d] == 1) continue;
      is_cl = is_cl && t.strides[d] == cl[d];
      is_dense = is_dense && t.strides[d] == dense[d];
    }
    return is_cl && !is_dense;
  }

  // Every 4-D tensor `n` reads (constants aside) is laid out channels-last already, though no
  // convolution of this pass made it so: a layer norm's [N, H, W, C] result permuted back
  // (ConvNeXt's channels-first norm, and its first blocks' residual adds). Computed over [N, C,
  // H, W], the op would write NCHW, and the convolution reading it would copy it back to NHWC.
  bool reads_only_channels_last(Node* n) const {
    bool any = false;
    for (Value* v : n->inputs()) {
      if (!is_tensor_value(v) || constant_tensor(v)) continue;
      const ir::Type* t = tensor_type(v);
      if (!t || t->rank() != 4) continue;
      if (!nhwc_sources_.count(v) && !channels_last_strided(*t)) return false;
      any = true;
    }
    return any;
  }

  const ir::Type* tensor_type(const Value* v) const {
    const ir::Type* t = ctx_.type_of(v);
    return t && t->is_tensor() ? t : nullptr;
  }

  // May `n` join a region over `domain` ([N, C, H, W])? Its result has those sizes and each tensor
  // input broadcasts to them.
  bool fits(const Node* n, const std::vector<int64_t>& domain) const {
    if (n->owningBlock() != g_.block() || n->outputs().size() != 1) return false;
    const ir::Type* out = tensor_type(n->output());
    if (!out || out->sizes != domain || !is_floating(out->dtype)) return false;
    for (const Value* v : n->inputs()) {
      if (!is_tensor_value(v)) continue;
      const std::optional<std::vector<int64_t>> sizes = sizes_of(v);
      if (!sizes || sizes->size() > 4) return false;
      const int64_t rank = static_cast<int64_t>(sizes->size());
      if (rank < 4 && rank > 0 && !constant_tensor(v)) return false;
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t s = (*sizes)[rank - 1 - d];
        if (s != 1 && s != domain[3 - d]) return false;
      }
    }
    return true;
  }

  // A tensor's sizes: profiled, or a constant's own.
  std::optional<std::vector<int64_t>> sizes_of(const Value* v) const {
    if (const ir::Type* t = tensor_type(v)) return t->sizes;
    if (const std::optional<at::Tensor> c = constant_tensor(v)) return c->sizes().vec();
    return std::nullopt;
  }

  // `seed` and the elementwise ops reading it, transitively, over the same sizes: in graph order.
  std::vector<Node*> grow_region(Node* seed) {
    std::vector<Node*> members;
    const ir::Type* t = tensor_type(seed->output());
    if (!t || t->rank() != 4 || !fits(seed, t->sizes)) {
      done_.insert(seed);
      return members;
    }
    const std::vector<int64_t> domain = t->sizes;
    std::vector<Node*> stack = {seed};
    std::unordered_set<Node*> in_region = {seed};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      members.push_back(n);
      for (const torch::jit::Use& u : n->output()->uses()) {
        Node* r = u.user;
        if (in_region.count(r) || done_.count(r) || !is_fusible_pointwise(r) || !fits(r, domain)) continue;
        in_region.insert(r);
        stack.push_back(r);
      }
    }
    for (Node* n : members) done_.insert(n);
    std::sort(members.begin(), members.end(), [](const Node* a, const Node* b) { return a->isBefore(b); });
    return members;
  }

  Value* permute(Value* v, const std::vector<int64_t>& dims) {
    Value* p = g_.insert(c10::aten::permute, {v, dims});
    if (const ir::Type* t = tensor_type(v)) {
      std::vector<int64_t> sizes, strides;
      for (int64_t d : dims) {
        sizes.push_back(t->sizes[d]);
        strides.push_back(t->strides.size() == t->sizes.size() ? t->strides[d] : 0);
      }
      ctx_.set_type(p, ir::Type::tensor(t->dtype, sizes, strides, t->device));
    }
    return p;
  }

  // A region's operand as the region reads it, in [N, H, W, C] order.
  Value* operand_nhwc(Value* v, std::unordered_map<const Value*, Value*>& permuted) {
    if (!is_tensor_value(v)) return v;
    const std::optional<std::vector<int64_t>> sizes = sizes_of(v);
    if (!sizes || sizes->empty()) return v;
    if (auto it = permuted.find(v); it != permuted.end()) return it->second;
    // An earlier region's result, or a tensor permuted to [N, C, H, W] (ConvNeXt's scaled branch):
    // the [N, H, W, C] value itself, the same elements, with no views between (a view between a
    // group's ops and a norm reading their result keeps them out of the norm's kernel).
    if (Value* nhwc = unpermuted(v)) return nhwc;
    Value* made = nullptr;
    if (sizes->size() == 4) {
      made = permute(v, kToNhwc);
    } else {
      // A per-channel constant ([C, 1, 1], a bias): the same values laid out [1, 1, 1, C].
      at::Tensor c = *constant_tensor(v);
      std::vector<int64_t> full(static_cast<size_t>(4 - c.dim()), 1);
      full.insert(full.end(), c.sizes().begin(), c.sizes().end());
      c = c.reshape(full).permute(kToNhwc).contiguous();
      made = g_.insertConstant(c);
      const std::vector<int64_t> nhwc_sizes = c.sizes().vec();
      ctx_.set_type(made, ir::Type::tensor(c.scalar_type(), nhwc_sizes, ir::contiguous_strides(nhwc_sizes), c.device()));
    }
    permuted.emplace(v, made);
    return made;
  }

  // `v` as [N, H, W, C] without a view: a region's twin for its result, x for permute(x, [0, 3,
  // 1, 2]) (nullptr otherwise).
  Value* unpermuted(const Value* v) const {
    if (auto it = exits_.find(v); it != exits_.end()) return it->second;
    return permutes_by(v->node(), g_.block(), kToNchw) ? v->node()->input(0) : nullptr;
  }

  void rewrite_region(const std::vector<Node*>& members) {
    if (members.empty()) return;
    const std::unordered_set<const Node*> member_set(members.begin(), members.end());
    std::unordered_map<const Value*, Value*> permuted;  // an outside operand -> its NHWC view
    std::unordered_map<const Value*, Value*> inside;    // a member's result -> its NHWC twin
    std::vector<std::pair<Node*, Value*>> twins;
    for (Node* n : members) {
      torch::jit::WithInsertPoint point(n);
      Node* twin = g_.insertNode(g_.createClone(n, [&](Value* v) {
        if (auto it = inside.find(v); it != inside.end()) return it->second;
        return operand_nhwc(v, permuted);
      }));
      const ir::Type* t = tensor_type(n->output());
      const std::vector<int64_t> sizes = {t->sizes[0], t->sizes[2], t->sizes[3], t->sizes[1]};
      twin->output()->setType(n->output()->type());
      ctx_.set_type(twin->output(), ir::Type::tensor(t->dtype, sizes, ir::contiguous_strides(sizes), t->device));
      inside.emplace(n->output(), twin->output());
      twins.emplace_back(n, twin->output());
    }
    for (auto& [n, twin] : twins) {
      bool read_outside = false;  // (a graph output is read by the return node)
      for (const torch::jit::Use& u : n->output()->uses()) read_outside = read_outside || !member_set.count(u.user);
      if (!read_outside) continue;
      torch::jit::WithInsertPoint point(n);
      Value* dense = g_.insert(c10::aten::contiguous, {twin});
      ctx_.set_type(dense, *ctx_.type_of(twin));
      Value* back = permute(dense, kToNchw);
      if (const ir::Type* eager = tensor_type(n->output()); eager && channels_last_strided(*eager)) {
        eager_channels_last_.insert(back);
      }
      back->copyMetadata(n->output());
      n->output()->replaceAllUsesWith(back);
      nhwc_sources_.insert(back);
      exits_.emplace(back, twin);
    }
    for (auto it = members.rbegin(); it != members.rend(); ++it) (*it)->destroy();
    ++regions_;
    ctx_.applied("channels-last region " + std::to_string(regions_) + ": " + std::to_string(members.size()) +
                 " elementwise op(s) over [N, H, W, C]");
  }

  // `r` hands its inputs to the caller as they are: the graph's return, or a tuple, list or dict
  // it returns (transformers' outputs are dicts).
  bool returned(const Node* r) const {
    if (r == g_.return_node()) return true;
    const bool packs = r->kind() == c10::prim::TupleConstruct || r->kind() == c10::prim::ListConstruct ||
                       r->kind() == c10::prim::DictConstruct;
    if (!packs || r->owningBlock() != g_.block()) return false;
    const auto uses = r->output()->uses();
    return !uses.empty() && std::all_of(uses.begin(), uses.end(), [&](const torch::jit::Use& u) { return u.user == g_.return_node(); });
  }

  // Every value whose layout may now differ from eager's reaches layout-dependent readers only
  // through contiguous() (eager's layout there: results of NCHW convolutions are contiguous), made
  // once per value, right after it.
  void guard_layout_readers() {
    std::vector<Value*> stack(nhwc_sources_.begin(), nhwc_sources_.end());
    std::sort(stack.begin(), stack.end(), [](const Value* a, const Value* b) { return a->unique() < b->unique(); });
    std::unordered_set<const Value*> seen(stack.begin(), stack.end());
    int guarded = 0;
    while (!stack.empty()) {
      Value* v = stack.back();
      stack.pop_back();
      const std::vector<torch::jit::Use> uses = v->uses();
      Value* dense = nullptr;
      for (const torch::jit::Use& u : uses) {
        Node* r = u.user;
        if (r->owningBlock() == g_.block() && r->kind() != c10::prim::Return && is_layout_agnostic(r)) {
          for (Value* out : r->outputs())
            if (is_tensor_value(out) && seen.insert(out).second) stack.push_back(out);
          continue;
        }
        // A graph output laid out as eager laid it out (channels-last strides on [N, C, H, W]).
        if (eager_channels_last_.count(v) && returned(r)) continue;
        if (!dense) {
          torch::jit::WithInsertPoint point(v->node()->next());
          dense = g_.insert(c10::aten::contiguous, {v});
          if (const ir::Type* t = ctx_.type_of(v)) ctx_.set_type(dense, *t);
        }
        r->replaceInput(u.offset, dense);
        ++guarded;
      }
      // Sizes read from the contiguous copy too: the group that writes it then has one output
      // (a size read of v would make v an output of its own, in another index domain). So do
      // reductions (a pooler's mean of the returned last hidden state): the same values, and v's
      // group may then write only the copy.
      if (!dense) continue;
      for (const torch::jit::Use& u : uses)
        if (reads_sizes_or_reduces(u.user)) u.user->replaceInput(u.offset, dense);
    }
    if (guarded > 0)
      ctx_.applied("channels-last: " + std::to_string(guarded) + " layout-dependent read(s) through contiguous()");
  }

  // A region result permuted back to [N, H, W, C] (ConvNeXt's channels-first norm reading a
  // stage's last block) is the region's twin: readers whose values do not depend on layout read
  // the twin itself. Through the two permutes and the contiguous() between, the twin's ops could
  // not join the norm's kernel (no views inside reduction groups).
  void read_exits_unpermuted() {
    int folded = 0;
    std::vector<std::pair<const Value*, Value*>> exits(exits_.begin(), exits_.end());
    std::sort(exits.begin(), exits.end(), [](const auto& a, const auto& b) { return a.first->unique() < b.first->unique(); });
    for (const auto& [back, twin] : exits) {
      const std::vector<torch::jit::Use> back_uses = back->uses();
      for (const torch::jit::Use& u : back_uses) {
        Node* p = u.user;
        if (!permutes_by(p, g_.block(), kToNhwc) || p->input(0) != back) continue;
        const std::vector<torch::jit::Use> readers = p->output()->uses();
        for (const torch::jit::Use& r : readers) {
          if (r.user->kind() == c10::prim::Return || r.user->owningBlock() != g_.block() || !is_layout_agnostic(r.user)) continue;
          if (is_kind(r.user, "aten::dim")) continue;
          if (is_kind(r.user, "aten::size")) {
            // The same [N, H, W, C] sizes, read where the twin's group need not write it out
            // (a norm's [x.size(-1)] then still names its input's trailing size).
            const std::optional<c10::IValue> d = r.user->inputs().size() == 2 ? constant_value(r.user->input(1)) : std::nullopt;
            if (!d || !d->isInt()) continue;
            r.user->replaceInput(r.offset, size_source(ctx_, twin, d->toInt() < 0 ? d->toInt() + 4 : d->toInt()));
            continue;
          }
          r.user->replaceInput(r.offset, twin);
          ++folded;
        }
      }
    }
    if (folded > 0)
      ctx_.applied("channels-last: " + std::to_string(folded) + " read(s) of a region's result permuted to [N, H, W, C] read it as computed");
  }
};

}  // namespace

void rewrite_channels_last(RewriteContext& ctx) { ChannelsLast(ctx).run(); }

}  // namespace torchfuse
