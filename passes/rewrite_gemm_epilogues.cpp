// GEMM epilogues (see rewrite_gemm_epilogues.h). A GEMM gemm_operands takes (linear, addmm,
// matmul with a 2-D weight: passes/gemm_match.h) whose result has one use, that use being
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

#include "passes/gemm_match.h"
#include "src/error.h"
#include "src/ir.h"
#include "src/graph_constants.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// What the matched pattern computes, as the op's arguments.
struct Match {
  Node* gemm = nullptr;
  GemmOperands ops;
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

std::optional<c10::IValue> constant(const Value* v) { return constant_value(v); }

// The constant number `v` equals 1 (add's alpha).
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
    const std::optional<GemmOperands> ops = gemm_operands(ctx_, g);
    if (!ops) return;
    Match m;
    m.gemm = g;
    m.ops = *ops;
    m.chain.push_back(g);
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
    if (why.empty()) why = gemm_call_differs(ctx_, m.ops, m.residual, m.gemm, m.chain.back());
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

  // Inserts the op where the chain's last node is, moves that node's uses to it and removes the chain.
  void replace(const Match& m) {
    Node* last = m.chain.back();
    torch::jit::WithInsertPoint point(last);
    Value* out = insert_gemm_call(ctx_, m.ops, m.residual, m.activation, last->output());
    last->output()->replaceAllUsesWith(out);
    std::string what = describe(m.chain) + " -> torchfuse::gemm_epilogue (" + (m.ops.bias ? "bias" : "no bias") +
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
