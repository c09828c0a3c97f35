// Transposed inputs of row reductions copied by a tiled kernel first (see stage_transposed_rows.h).
//
// Why: a row schedule reads each row with consecutive threads on consecutive columns. Where the
// input is transposed (softmax(x.t(), -1)), consecutive columns are a whole line apart: every load
// fetches a 32-byte sector for 4 bytes of it, and the kernel lives on what L2 catches. Measured on
// an H200 (categories benchmark, softmax of a transposed 4096 x 4096): 135 us in float32 and 123 in
// bfloat16 for one kernel, where reading and writing 64 MB once takes about 32. The tiled copy
// reads and writes coalesced, and the row kernel then streams contiguous rows.
#include "passes/stage_transposed_rows.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/constants.h>

#include "src/ir.h"

namespace torchfuse {
namespace {

using torch::jit::Node;
using torch::jit::Value;

// Where a row op names its reduced dims: the input holding the dim, or the normalized shape
// (layer and RMS norms: its length is the trailing dims' count).
enum class DimsArg { Dim, NormalizedShape };

// Row reductions whose result is written row by row, full size: softmax, log_softmax, the norms.
// (A sum or max of a transposed input writes one value per row; its reads would want a column
// schedule over the input's layout, and a copy first would triple its traffic: not staged.)
const std::unordered_map<std::string, std::pair<size_t, DimsArg>>& row_reductions() {
  static const std::unordered_map<std::string, std::pair<size_t, DimsArg>> table = {
      {"aten::softmax", {1, DimsArg::Dim}},   {"aten::log_softmax", {1, DimsArg::Dim}},
      {"aten::_softmax", {1, DimsArg::Dim}},  {"aten::_log_softmax", {1, DimsArg::Dim}},
      {"aten::layer_norm", {1, DimsArg::NormalizedShape}}, {"aten::rms_norm", {1, DimsArg::NormalizedShape}},
  };
  return table;
}

// How many trailing dims `n` reduces over an input of rank `rank` (rows, leaving at least one
// kept dim), or nullopt where they are not such a block known from the graph (a dim computed at
// run time, a softmax over another dim).
std::optional<int64_t> trailing_rows(const Node* n, int64_t rank) {
  const auto it = row_reductions().find(n->kind().toQualString());
  if (it == row_reductions().end() || n->inputs().size() <= it->second.first) return std::nullopt;
  const Value* arg = n->input(it->second.first);
  int64_t count = -1;
  if (it->second.second == DimsArg::NormalizedShape) {
    // Its length alone matters: a list of sizes built in the graph (x.size(-1)) counts as well.
    if (arg->node()->kind() == c10::prim::ListConstruct) count = static_cast<int64_t>(arg->node()->inputs().size());
    if (const auto iv = torch::jit::toIValue(arg); iv && iv->isIntList()) count = static_cast<int64_t>(iv->toIntList().size());
  } else if (const auto iv = torch::jit::toIValue(arg); iv && iv->isInt() && (iv->toInt() == -1 || iv->toInt() == rank - 1)) {
    count = 1;
  }
  if (count <= 0 || count >= rank) return std::nullopt;
  return count;
}

void stage(RewriteContext& ctx, Node* n, const ir::Type& t) {
  torch::jit::WithInsertPoint point(n);
  Value* in = n->input(0);
  Value* copy = ctx.graph.insert(c10::aten::contiguous, {in});
  copy->setType(in->type());
  ctx.inherit_type(copy, in);
  n->replaceInput(0, copy);
  ctx.applied("row reduction " + node_name(n) + " reads %" + in->debugName() + " " + t.str() + " strides " +
              ir::shape_str(t.strides) + " transposed against its rows -> aten::contiguous first (a tiled copy), "
              "its rows then read contiguous");
}

}  // namespace

void stage_transposed_rows(RewriteContext& ctx) {
  std::vector<std::pair<Node*, ir::Type>> staged;
  for (Node* n : ctx.graph.nodes()) {
    if (!row_reductions().count(n->kind().toQualString()) || n->inputs().empty()) continue;
    const ir::Type* t = ctx.type_of(n->input(0));
    if (!t || !t->is_tensor() || t->rank() < 2 || t->strides.size() != t->sizes.size()) continue;
    const auto rows = trailing_rows(n, t->rank());
    if (!rows || !ir::rows_across_lines(t->sizes, t->strides, *rows)) continue;
    const int64_t bytes = t->numel() * static_cast<int64_t>(c10::elementSize(t->dtype));
    if (bytes < kStageMinBytes) {
      ctx.refused("row reduction " + node_name(n) + " reads %" + n->input(0)->debugName() + " " + t->str() +
                  " transposed against its rows, read as it is: " + std::to_string(bytes) + " bytes, under the " +
                  std::to_string(kStageMinBytes) + " a tiled copy first pays for");
      continue;
    }
    staged.emplace_back(n, *t);
  }
  for (auto& [n, t] : staged) stage(ctx, n, t);
}

}  // namespace torchfuse
