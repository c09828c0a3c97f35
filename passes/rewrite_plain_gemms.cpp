// Plain GEMMs as cuBLASLt calls (see rewrite_plain_gemms.h). The call computes what ATen's linear
// computes (the same cuBLASLt heuristic's first choice for these shapes, bias epilogue included);
// on CPU tensors and where cuBLASLt declines it runs at::linear.
#include "passes/rewrite_plain_gemms.h"

#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "passes/gemm_match.h"
#include "src/error.h"
#include "src/graph_constants.h"
#include "src/ir.h"

namespace torchfuse {
namespace {

// The widths of the column ranges the GEMM's result is read as: every reader a slice of its last
// dim with constant bounds and step 1, the ranges tiling it (a merged linear's results,
// passes/concat_linears.cpp). Empty otherwise, and with fewer than two ranges.
std::vector<int64_t> column_parts(const RewriteContext& ctx, const torch::jit::Node* g) {
  const ir::Type* t = ctx.type_of(g->output());
  if (!t || !t->is_tensor() || t->sizes.empty()) return {};
  const int64_t rank = static_cast<int64_t>(t->sizes.size()), n = t->sizes.back();
  std::set<std::pair<int64_t, int64_t>> ranges;
  for (const torch::jit::Use& u : g->output()->uses()) {
    const torch::jit::Node* s = u.user;
    if (!is_kind(s, "aten::slice") || u.offset != 0 || s->inputs().size() != 5) return {};
    std::optional<c10::IValue> dim = constant_value(s->input(1)), start = constant_value(s->input(2)),
                               end = constant_value(s->input(3)), step = constant_value(s->input(4));
    if (!dim || !dim->isInt() || !start || !start->isInt() || !end || !end->isInt() || !step || !step->isInt())
      return {};
    if ((dim->toInt() + rank) % rank != rank - 1 || step->toInt() != 1) return {};
    const int64_t a = start->toInt(), b = std::min(end->toInt(), n);
    if (a < 0 || a >= b) return {};
    ranges.emplace(a, b);
  }
  std::vector<int64_t> parts;
  int64_t next = 0;
  for (const auto& [a, b] : ranges) {
    if (a != next) return {};  // a gap or an overlap
    parts.push_back(b - a);
    next = b;
  }
  if (next != n || parts.size() < 2) return {};
  return parts;
}

}  // namespace

void rewrite_plain_gemms(RewriteContext& ctx) {
  std::vector<torch::jit::Node*> gemms;
  for (torch::jit::Node* n : ctx.graph.nodes())
    if (is_kind(n, "aten::linear") || is_kind(n, "aten::addmm") || is_kind(n, "aten::matmul")) gemms.push_back(n);
  for (torch::jit::Node* g : gemms) {
    const std::optional<GemmOperands> ops = gemm_operands(ctx, g);
    if (!ops) continue;  // batched and vector products stay ATen's, as they are not this call's form
    // Untimed, float32 (and float64) GEMMs are left to ATen without a word: measured, cuBLASLt's
    // heuristic picked float32 kernels that made Llama's float32 call 1.18x slower on the GPU than
    // ATen's GEMMs (H200, 8 x 128 tokens: 18597 against 15701 us). Timed (gemm_autotune), a
    // float32 call times ATen's GEMM as its candidate 0 beside cuBLASLt's, and keeps ATen's
    // unless one of cuBLASLt's beats it (runtime/gemm_epilogue_op.h).
    const ir::Type* result = ctx.type_of(g->output());
    if (!result || !result->is_tensor()) continue;
    const bool timed_f32 = result->dtype == c10::ScalarType::Float && ctx.times_float32_gemms();
    if (!ir::is_16bit_float(result->dtype) && !timed_f32) continue;
    const std::string why = gemm_call_differs(ctx, *ops, nullptr, g, g);
    if (!why.empty()) {
      ctx.refused("GEMM " + node_name(g) + " left to ATen: " + why);
      continue;
    }
    // A result read as column ranges (a merged linear's) lets the call time one GEMM per range
    // against the whole (runtime/gemm_parts.h; CompileOptions::concat_linears_autotune).
    const std::vector<int64_t> parts = ctx.time_column_parts ? column_parts(ctx, g) : std::vector<int64_t>{};
    torch::jit::WithInsertPoint point(g);
    torch::jit::Value* out = insert_gemm_call(ctx, *ops, nullptr, "none", g->output(), parts);
    g->output()->replaceAllUsesWith(out);
    std::string what = node_name(g) + " -> torchfuse::gemm_epilogue (" + (ops->bias ? "bias" : "no bias") +
                       ", no epilogue";
    if (!parts.empty()) what += ", parts " + c10::str(c10::IntArrayRef(parts)) + " timed against the whole";
    if (timed_f32) what += ", float32: timed against ATen's GEMM";
    what += ")";
    TORCHFUSE_INTERNAL_ASSERT(!g->hasUses(), "a replaced GEMM's result still has a use");
    g->destroy();
    ctx.applied(what);
  }
}

}  // namespace torchfuse
