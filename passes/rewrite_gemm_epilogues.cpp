// GEMM epilogues (see rewrite_gemm_epilogues.h). A GEMM
//   aten::linear(x, W, b?)         x of rank >= 2, W 2-D
//   aten::addmm(b, x, M)           beta = alpha = 1, b 1-D, x and M 2-D (W = M^T)
//   aten::matmul(x, M)             x of rank >= 2, M 2-D (W = M^T)
// whose result has one use, that use being
//   aten::add(gemm, r) / add(r, gemm) with alpha 1 and r of the result's exact shape and dtype,
//   optionally followed by a single-use activation, or
//   aten::relu(gemm) / aten::gelu(gemm, approximate='tanh')
// becomes torchfuse::gemm_epilogue(x, W, b?, r?, activation): act(x @ W^T + b + r), which is
// cuBLASLt's order (the bias and C = r both added before the epilogue's activation).
#include "passes/rewrite_gemm_epilogues.h"

#include <torch/csrc/jit/ir/ir.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/error.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// What the matched pattern computes, as the op's arguments.
struct Match {
  Node* gemm = nullptr;
  Value* input = nullptr;
  Value* weight = nullptr;       // W [N, K]; null when weight_t holds W^T (addmm, matmul)
  Value* weight_t = nullptr;     // M = W^T [K, N]: the rewrite inserts aten::t(M)
  Value* bias = nullptr;         // null when there is none
  Value* residual = nullptr;     // null when there is none
  const char* activation = "none";
  std::vector<Node*> chain;      // the nodes replaced, the GEMM first
};

// The chain's nodes as one line: "aten::linear (%3) + aten::relu (%4)".
std::string describe(const std::vector<Node*>& chain) {
  std::string s;
  for (const Node* n : chain) s += (s.empty() ? "" : " + ") + node_name(n);
  return s;
}

std::optional<c10::IValue> constant(const Value* v) { return torch::jit::toIValue(v); }

// The constant number `v` equals 1 (alpha and beta of add and addmm).
bool is_one(const Value* v) { return constant_number(v) == 1.0; }

// The only user of n's output, or null when it has none or several.
Node* single_user(const Node* n) {
  const auto& uses = n->output()->uses();
  return uses.size() == 1 ? uses[0].user : nullptr;
}

class GemmRewriter {
 public:
  explicit GemmRewriter(RewriteContext& ctx) : ctx_(ctx) {}

  void run() {
    std::vector<Node*> gemms;
    for (Node* n : ctx_.graph.nodes())
      if (is_kind(n, "aten::linear") || is_kind(n, "aten::addmm") || is_kind(n, "aten::matmul")) gemms.push_back(n);
    for (Node* g : gemms) try_gemm(g);
  }

 private:
  RewriteContext& ctx_;
  const ir::Type* tensor_type(const Value* v) const {
    const ir::Type* t = ctx_.type_of(v);
    return t && t->is_tensor() ? t : nullptr;
  }

  // The GEMM's operands; nothing (and no refusal) for forms this pass does not take.
  std::optional<Match> gemm_operands(Node* g) const {
    Match m;
    m.gemm = g;
    m.chain.push_back(g);
    const ir::Type* x = tensor_type(g->input(0));
    if (is_kind(g, "aten::linear")) {
      const ir::Type* w = tensor_type(g->input(1));
      if (!x || !w || x->rank() < 2 || w->rank() != 2) return std::nullopt;
      m.input = g->input(0), m.weight = g->input(1);
      if (!g->input(2)->mustBeNone()) m.bias = g->input(2);
      return m;
    }
    if (is_kind(g, "aten::addmm")) {
      if (g->inputs().size() != 5 || !is_one(g->input(3)) || !is_one(g->input(4))) return std::nullopt;
      const ir::Type* b = tensor_type(g->input(0));
      const ir::Type* a = tensor_type(g->input(1));
      const ir::Type* mt = tensor_type(g->input(2));
      if (!b || !a || !mt || a->rank() != 2 || mt->rank() != 2 || b->rank() != 1 || b->sizes[0] != mt->sizes[1])
        return std::nullopt;
      m.input = g->input(1), m.weight_t = g->input(2), m.bias = g->input(0);
      return m;
    }
    const ir::Type* mt = tensor_type(g->input(1));  // aten::matmul
    if (!x || !mt || x->rank() < 2 || mt->rank() != 2) return std::nullopt;
    m.input = g->input(0), m.weight_t = g->input(1);
    return m;
  }

  // Why the op would not compute what the matched nodes compute, or cuBLASLt could not run it
  // ("" when it would).
  std::string semantics_differ(const Match& m, const Node* last) const {
    const ir::Type* gemm = tensor_type(m.gemm->output());
    const ir::Type* out = tensor_type(last->output());
    if (!gemm || !out) return "the result's type was not profiled";
    const c10::ScalarType dt = gemm->dtype;
    const std::pair<const char*, Value*> operands[] = {
        {"the input", m.input}, {"the weight", m.weight ? m.weight : m.weight_t}, {"the bias", m.bias},
        {"the residual", m.residual}};
    for (const auto& [what, v] : operands) {
      if (!v) continue;
      const ir::Type* t = tensor_type(v);
      if (!t) return std::string(what) + "'s type was not profiled";
      if (t->dtype != dt)
        return std::string("dtype promotion: ") + what + " is " + ir::dtype_short_name(t->dtype) + ", the GEMM's result " +
               ir::dtype_short_name(dt);
      if (t->device != out->device) return "operands on two devices (" + t->device.str() + ", " + out->device.str() + ")";
    }
    if (out->dtype != dt)
      return std::string("dtype promotion: the result is ") + ir::dtype_short_name(out->dtype) + ", the GEMM's " +
             ir::dtype_short_name(dt);
    if (dt != c10::ScalarType::Float && dt != c10::ScalarType::Half && dt != c10::ScalarType::BFloat16)
      return std::string("dtype ") + ir::dtype_short_name(dt) + " (cuBLASLt's epilogues take f32, f16 and bf16)";
    if (!out->device.is_cuda() && !out->device.is_cpu()) return "tensors on " + out->device.str();
    return "";
  }

  // Extends the match with an activation `n` (relu, or gelu with approximate='tanh'); false with
  // the reason in *why where n is an activation the epilogue does not compute.
  static bool take_activation(Node* n, Match& m, std::string* why) {
    if (is_kind(n, "aten::relu")) {
      m.activation = "relu";
    } else if (is_kind(n, "aten::gelu")) {
      const std::optional<c10::IValue> approximate =
          n->inputs().size() > 1 ? constant(n->input(1)) : std::optional<c10::IValue>(c10::IValue(std::string("none")));
      if (!approximate || !approximate->isString()) {
        *why = "gelu's approximation is not a constant";
        return false;
      }
      if (approximate->toStringRef() != "tanh") {
        *why = "gelu with approximate='" + approximate->toStringRef() +
               "' (erf): cuBLASLt's GELU epilogue is the tanh approximation";
        return false;
      }
      m.activation = "gelu_tanh";
    } else {
      return false;
    }
    m.chain.push_back(n);
    return true;
  }

  // add(gemm, r) or add(r, gemm), alpha 1, r of the result's exact shape: r becomes the residual.
  bool take_residual(Node* add, Match& m, std::string* why) const {
    if (!is_kind(add, "aten::add") || add->inputs().size() != 3) return false;
    Value* gemm_out = m.gemm->output();
    Value* r = add->input(0) == gemm_out ? add->input(1) : add->input(0);
    const ir::Type* rt = tensor_type(r);
    const ir::Type* gt = tensor_type(gemm_out);
    const ir::Type* out = tensor_type(add->output());
    if (!rt || !gt || !out || r == gemm_out) return false;  // add(gemm, 2.0), add(y, y): no residual
    m.chain.push_back(add);
    if (!is_one(add->input(2))) {
      *why = "add with alpha != 1";
    } else if (rt->sizes != out->sizes || gt->sizes != out->sizes) {
      *why = "the GEMM's result " + gt->str() + " and the residual " + rt->str() + " broadcast to " + out->str() +
             " (the epilogue adds a residual of the GEMM's exact shape)";
    } else {
      m.residual = r;
      return true;
    }
    return false;
  }

  void try_gemm(Node* g) {
    std::optional<Match> found = gemm_operands(g);
    if (!found) return;
    Match& m = *found;
    Node* user = single_user(g);
    if (!user) {
      refuse_if_epilogue(g);
      return;
    }
    std::string why;
    if (take_residual(user, m, &why)) {
      // An activation after the residual add is part of the same epilogue: act(gemm + b + r).
      if (Node* next = single_user(user)) {
        std::string act_why;
        if (!take_activation(next, m, &act_why) && !act_why.empty())
          ctx_.refused(describe(m.chain) + " + " + node_name(next) + ": the activation stays in ATen: " + act_why);
      }
    } else if (why.empty() && !take_activation(user, m, &why) && why.empty()) {
      return;  // no epilogue to take
    }
    if (why.empty()) why = semantics_differ(m, m.chain.back());
    // A residual add alone saves no pass over memory: the add joins the fused kernel of what reads
    // it (the next norm) at the cost of one more operand there, and cuBLASLt with C measured
    // slower than the plain GEMM (Llama bf16, 8 x 512 tokens, H100: 6707 against 6532 us of GPU
    // time per call). With an activation after it the epilogue saves the activation's pass.
    if (why.empty() && m.residual && std::string(m.activation) == "none")
      why = "a residual add without an activation: the add joins the fused kernel that reads it";
    if (!why.empty()) {
      if (m.chain.size() == 1) m.chain.push_back(user);
      ctx_.refused("GEMM epilogue " + describe(m.chain) + " left alone: " + why);
      return;
    }
    replace(m);
  }

  // A GEMM whose result feeds an epilogue op and something else: say why it stays.
  void refuse_if_epilogue(Node* g) {
    for (const torch::jit::Use& u : g->output()->uses()) {
      if (is_kind(u.user, "aten::add") || is_kind(u.user, "aten::relu") || is_kind(u.user, "aten::gelu")) {
        ctx_.refused("GEMM epilogue " + node_name(g) + " + " + node_name(u.user) + " left alone: the GEMM's result has " +
                     std::to_string(g->output()->uses().size()) + " uses");
        return;
      }
    }
  }

  Value* none() { return ctx_.graph.insertConstant(c10::IValue()); }

  // Inserts the op where the chain's last node is, moves that node's uses to it and removes the chain.
  void replace(const Match& m) {
    torch::jit::Graph& graph = ctx_.graph;
    Node* last = m.chain.back();
    torch::jit::WithInsertPoint point(last);
    Value* weight = m.weight;
    if (!weight) weight = graph.insert(c10::Symbol::fromQualString("aten::t"), {m.weight_t});
    Node* op = graph.create(c10::Symbol::fromQualString("torchfuse::gemm_epilogue"),
                            {m.input, weight, m.bias ? m.bias : none(), m.residual ? m.residual : none(),
                             graph.insertConstant(std::string(m.activation))},
                            1);
    graph.insertNode(op);
    op->output()->copyMetadata(last->output());
    // A GEMM reading this result (an MLP's second linear) matches too.
    ctx_.inherit_type(op->output(), last->output());
    last->output()->replaceAllUsesWith(op->output());
    std::string what = describe(m.chain) + " -> torchfuse::gemm_epilogue (" + (m.bias ? "bias" : "no bias") +
                       (m.residual ? ", residual" : "") + ", activation " + m.activation + ")";
    for (auto it = m.chain.rbegin(); it != m.chain.rend(); ++it) {
      TORCHFUSE_INTERNAL_ASSERT(!(*it)->hasUses(), "a replaced node's result still has a use");
      (*it)->destroy();
    }
    ctx_.applied(what);
  }
};

}  // namespace

void rewrite_gemm_epilogues(RewriteContext& ctx) { GemmRewriter(ctx).run(); }

}  // namespace torchfuse
