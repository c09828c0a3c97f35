#include "passes/gemm_match.h"

#include <torch/csrc/jit/ir/ir.h>

#include <utility>

#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

const ir::Type* tensor_type(const RewriteContext& ctx, const Value* v) {
  const ir::Type* t = ctx.type_of(v);
  return t && t->is_tensor() ? t : nullptr;
}

// The constant number `v` equals 1 (alpha and beta of addmm).
bool is_one(const Value* v) { return constant_number(v) == 1.0; }

}  // namespace

std::optional<GemmOperands> gemm_operands(const RewriteContext& ctx, Node* g) {
  GemmOperands m;
  const ir::Type* x = tensor_type(ctx, g->input(0));
  if (is_kind(g, "aten::linear")) {
    const ir::Type* w = tensor_type(ctx, g->input(1));
    if (!x || !w || x->rank() < 2 || w->rank() != 2) return std::nullopt;
    m.input = g->input(0), m.weight = g->input(1);
    if (!g->input(2)->mustBeNone()) m.bias = g->input(2);
    return m;
  }
  if (is_kind(g, "aten::addmm")) {
    if (g->inputs().size() != 5 || !is_one(g->input(3)) || !is_one(g->input(4))) return std::nullopt;
    const ir::Type* b = tensor_type(ctx, g->input(0));
    const ir::Type* a = tensor_type(ctx, g->input(1));
    const ir::Type* mt = tensor_type(ctx, g->input(2));
    if (!b || !a || !mt || a->rank() != 2 || mt->rank() != 2 || b->rank() != 1 || b->sizes[0] != mt->sizes[1])
      return std::nullopt;
    m.input = g->input(1), m.weight_t = g->input(2), m.bias = g->input(0);
    return m;
  }
  if (!is_kind(g, "aten::matmul")) return std::nullopt;
  const ir::Type* mt = tensor_type(ctx, g->input(1));
  if (!x || !mt || x->rank() < 2 || mt->rank() != 2) return std::nullopt;
  m.input = g->input(0), m.weight_t = g->input(1);
  return m;
}

std::string gemm_call_differs(const RewriteContext& ctx, const GemmOperands& ops, const Value* residual,
                              const Node* gemm, const Node* last) {
  const ir::Type* result = tensor_type(ctx, gemm->output());
  const ir::Type* out = tensor_type(ctx, last->output());
  if (!result || !out) return "the result's type was not profiled";
  const c10::ScalarType dt = result->dtype;
  const std::pair<const char*, const Value*> operands[] = {{"the input", ops.input},
                                                           {"the weight", ops.weight ? ops.weight : ops.weight_t},
                                                           {"the bias", ops.bias},
                                                           {"the residual", residual}};
  for (const auto& [what, v] : operands) {
    if (!v) continue;
    const ir::Type* t = tensor_type(ctx, v);
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
    return std::string("dtype ") + ir::dtype_short_name(dt) + " (cuBLASLt's GEMMs take f32, f16 and bf16)";
  if (!out->device.is_cuda() && !out->device.is_cpu()) return "tensors on " + out->device.str();
  return "";
}

Value* insert_gemm_call(RewriteContext& ctx, const GemmOperands& ops, Value* residual, const char* activation,
                        Value* like, const std::vector<int64_t>& parts) {
  torch::jit::Graph& graph = ctx.graph;
  Value* weight = ops.weight;
  if (!weight) weight = graph.insert(c10::Symbol::fromQualString("aten::t"), {ops.weight_t});
  Value* none = graph.insertConstant(c10::IValue());
  std::vector<Value*> args{ops.input, weight, ops.bias ? ops.bias : none, residual ? residual : none,
                           graph.insertConstant(std::string(activation)),
                           graph.insertConstant(static_cast<int64_t>(ctx.gemm_candidates))};
  if (!parts.empty()) args.push_back(graph.insertConstant(c10::IValue(parts)));
  Node* op = graph.create(c10::Symbol::fromQualString("torchfuse::gemm_epilogue"), args, 1);
  graph.insertNode(op);
  op->output()->copyMetadata(like);
  // A GEMM reading this result (an MLP's second linear) matches too.
  ctx.inherit_type(op->output(), like);
  return op->output();
}

}  // namespace torchfuse
