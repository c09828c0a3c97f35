// Float32 linear bias moved to the fused kernel after the GEMM (see rewrite_linear_bias.h).
//
// Why: with a bias, ATen's linear runs cuBLASLt's bias epilogue, whose heuristic picks slower
// float32 kernels for some shapes than the plain GEMM gets. Measured on an H100 (PyTorch 2.11,
// CUDA events, median): [4096, 3072] x [3072, 768] 513.6 us with the bias against 422.6 without,
// [1576, 3072] x [3072, 768] 257.5 against 185.1, [1576, 768] x [768, 768] 68.9 against 57.9, and
// no shape slower without it; BERT-base's float32 call (8 x 512 tokens) spent 16.7 ms in its
// linears' GEMMs where torch.compile's bias-free ones took 15.8. The bias add costs nothing where
// the result goes to a fused kernel anyway (a residual add and norm, an activation), so only such
// linears change; a result read by anything else (views into attention heads) keeps its bias in
// the GEMM, where the add would be a kernel of its own. 16-bit GEMMs keep theirs: their
// bias-epilogue kernels ran as fast as the plain ones in the same models.
#include "passes/rewrite_linear_bias.h"

#include <string>
#include <unordered_set>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// Elementwise ops the fusion passes take, which the bias add can join.
bool is_pointwise_reader(const Node* n) {
  static const std::unordered_set<std::string> kinds = {"aten::add",  "aten::sub",  "aten::mul",
                                                         "aten::div",  "aten::gelu", "aten::relu",
                                                         "aten::silu", "aten::sigmoid", "aten::tanh"};
  return kinds.count(n->kind().toQualString()) > 0;
}

// Why the bias stays in the GEMM ("" where it moves).
std::string why_bias_stays(const RewriteContext& ctx, const Node* linear) {
  const ir::Type* x = ctx.type_of(linear->input(0));
  const ir::Type* w = ctx.type_of(linear->input(1));
  const ir::Type* b = ctx.type_of(linear->input(2));
  const ir::Type* out = ctx.type_of(linear->output());
  if (!x || !w || !b || !out || !x->is_tensor() || !w->is_tensor() || !b->is_tensor() || !out->is_tensor())
    return "its operands' types were not profiled";
  if (x->dtype != out->dtype || w->dtype != out->dtype || b->dtype != out->dtype) return "its operands' dtypes differ";
  if (w->rank() != 2 || b->rank() != 1 || x->rank() < 2) return "not a 2-D weight and 1-D bias";
  const auto& uses = linear->output()->uses();
  if (uses.empty()) return "its result is not read";
  for (const torch::jit::Use& u : uses) {
    if (!is_pointwise_reader(u.user))
      return "its result is read by " + node_name(u.user) + ", where the bias add would be a kernel of its own";
  }
  return "";
}

bool is_float32_biased_linear(const RewriteContext& ctx, const Node* n) {
  if (!is_kind(n, "aten::linear") || n->inputs().size() != 3 || n->input(2)->mustBeNone()) return false;
  const ir::Type* out = ctx.type_of(n->output());
  return out && out->is_tensor() && out->dtype == c10::ScalarType::Float;
}

void split(RewriteContext& ctx, Node* linear) {
  torch::jit::Graph& graph = ctx.graph;
  torch::jit::WithInsertPoint point(linear);
  Value* bias = linear->input(2);
  Value* product = graph.insert(c10::aten::linear, {linear->input(0), linear->input(1), graph.insertConstant(c10::IValue())});
  Value* sum = graph.insert(c10::aten::add, {product, bias});
  product->setType(linear->output()->type());
  sum->copyMetadata(linear->output());
  ctx.inherit_type(product, linear->output());
  ctx.inherit_type(sum, linear->output());
  ctx.applied("linear bias " + node_name(linear) + " -> aten::linear without bias + aten::add (%" +
              bias->debugName() + "), fused with its readers");
  linear->output()->replaceAllUsesWith(sum);
  linear->destroy();
}

}  // namespace

void rewrite_linear_bias(RewriteContext& ctx) {
  std::vector<Node*> linears;
  for (Node* n : ctx.graph.nodes())
    if (is_float32_biased_linear(ctx, n)) linears.push_back(n);
  for (Node* n : linears) {
    const std::string why = why_bias_stays(ctx, n);
    if (why.empty()) {
      split(ctx, n);
    } else {
      ctx.refused("linear bias " + node_name(n) + " stays in the GEMM: " + why);
    }
  }
}

}  // namespace torchfuse
