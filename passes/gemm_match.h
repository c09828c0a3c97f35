// The GEMMs that become one cuBLASLt call (torchfuse::gemm_epilogue, runtime/gemm_epilogue_op.h),
// shared by the rewrites that make such calls: rewrite_gemm_epilogues (a GEMM and its epilogue)
// and rewrite_plain_gemms (a GEMM alone).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "passes/graph_rewrites.h"

namespace torchfuse {

// A GEMM's operands as the call takes them.
struct GemmOperands {
  torch::jit::Value* input = nullptr;     // x [..., K]
  torch::jit::Value* weight = nullptr;    // W [N, K]; null when weight_t holds W^T (addmm, matmul)
  torch::jit::Value* weight_t = nullptr;  // M = W^T [K, N]: the call reads aten::t(M)
  torch::jit::Value* bias = nullptr;      // null when there is none
};

// The operands of
//   aten::linear(x, W, b?)   x of rank >= 2, W 2-D
//   aten::addmm(b, x, M)     beta = alpha = 1, b 1-D, x and M 2-D
//   aten::matmul(x, M)       x of rank >= 2, M 2-D;
// nothing for any other node or form (batched matmuls, 1-D operands, unprofiled types).
std::optional<GemmOperands> gemm_operands(const RewriteContext& ctx, torch::jit::Node* gemm);

// Why the call would not compute what the GEMM `gemm` (and the nodes after it, up to `last`, with
// `residual` added) computes, or cuBLASLt could not run it: dtype promotion, operands on two
// devices, dtypes other than f32/f16/bf16. "" when it would.
std::string gemm_call_differs(const RewriteContext& ctx, const GemmOperands& ops, const torch::jit::Value* residual,
                              const torch::jit::Node* gemm, const torch::jit::Node* last);

// Inserts torchfuse::gemm_epilogue(x, W, b?, residual?, activation, ctx.gemm_candidates) at the
// graph's insertion point (aten::t(M) first where the GEMM read W^T) and returns its result, typed as `like`.
// With `parts` (the widths of the column ranges the result is read as) the call takes them as its
// last argument (the op's `parts` overload, runtime/gemm_parts.h).
torch::jit::Value* insert_gemm_call(RewriteContext& ctx, const GemmOperands& ops, torch::jit::Value* residual,
                                    const char* activation, torch::jit::Value* like,
                                    const std::vector<int64_t>& parts = {});

}  // namespace torchfuse
