// Plain GEMMs as cuBLASLt calls (see rewrite_plain_gemms.h). The call computes what ATen's linear
// computes (the same cuBLASLt heuristic's first choice for these shapes, bias epilogue included);
// on CPU tensors and where cuBLASLt declines it runs at::linear.
#include "passes/rewrite_plain_gemms.h"

#include <torch/csrc/jit/ir/ir.h>

#include <string>
#include <vector>

#include "passes/gemm_match.h"
#include "src/error.h"
#include "src/ir.h"

namespace torchfuse {

void rewrite_plain_gemms(RewriteContext& ctx) {
  std::vector<torch::jit::Node*> gemms;
  for (torch::jit::Node* n : ctx.graph.nodes())
    if (is_kind(n, "aten::linear") || is_kind(n, "aten::addmm") || is_kind(n, "aten::matmul")) gemms.push_back(n);
  for (torch::jit::Node* g : gemms) {
    const std::optional<GemmOperands> ops = gemm_operands(ctx, g);
    if (!ops) continue;  // batched and vector products stay ATen's, as they are not this call's form
    // Float32 (and float64) GEMMs are left to ATen without a word: measured, cuBLASLt's heuristic
    // picked float32 kernels that made Llama's float32 call 1.18x slower on the GPU than ATen's
    // GEMMs (H200, 8 x 128 tokens: 18597 against 15701 us).
    const ir::Type* result = ctx.type_of(g->output());
    if (!result || !result->is_tensor() || !ir::is_16bit_float(result->dtype)) continue;
    const std::string why = gemm_call_differs(ctx, *ops, nullptr, g, g);
    if (!why.empty()) {
      ctx.refused("GEMM " + node_name(g) + " left to ATen: " + why);
      continue;
    }
    torch::jit::WithInsertPoint point(g);
    torch::jit::Value* out = insert_gemm_call(ctx, *ops, nullptr, "none", g->output());
    g->output()->replaceAllUsesWith(out);
    const std::string what = node_name(g) + " -> torchfuse::gemm_epilogue (" + (ops->bias ? "bias" : "no bias") +
                             ", no epilogue)";
    TORCHFUSE_INTERNAL_ASSERT(!g->hasUses(), "a replaced GEMM's result still has a use");
    g->destroy();
    ctx.applied(what);
  }
}

}  // namespace torchfuse
