// Transposed inputs of row reductions copied by a tiled kernel first (see stage_transposed_rows.h).
//
// Why: a row schedule reads each row with consecutive threads on consecutive columns. Where the
// input is transposed (softmax(x.t(), -1)), consecutive columns are a whole line apart: every load
// fetches a 32-byte sector for 4 bytes of it, and the kernel lives on what L2 catches. Measured on
// an H200 (categories benchmark, softmax of a transposed 4096 x 4096): 135 us in float32 and 123 in
// bfloat16 for one kernel, where reading and writing 64 MB once takes about 32. The tiled copy
// reads and writes coalesced, and the row kernel then streams contiguous rows.
#include "passes/stage_transposed_rows.h"

#include <algorithm>
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

// The reduced dims of `n` over an input of rank `rank`, each in [0, rank), or nullopt where they
// are not known from the graph (a dim computed at run time).
std::optional<std::vector<int64_t>> reduced_dims(const Node* n, int64_t rank) {
  const auto it = row_reductions().find(n->kind().toQualString());
  if (it == row_reductions().end() || n->inputs().size() <= it->second.first) return std::nullopt;
  const Value* arg = n->input(it->second.first);
  std::vector<int64_t> dims;
  if (it->second.second == DimsArg::NormalizedShape) {
    // Its length alone matters: a list of sizes built in the graph (x.size(-1)) counts as well.
    int64_t count = -1;
    if (arg->node()->kind() == c10::prim::ListConstruct) count = static_cast<int64_t>(arg->node()->inputs().size());
    if (const auto iv = torch::jit::toIValue(arg); iv && iv->isIntList()) count = static_cast<int64_t>(iv->toIntList().size());
    if (count <= 0 || count > rank) return std::nullopt;
    for (int64_t d = rank - count; d < rank; ++d) dims.push_back(d);
    return dims;
  }
  const auto iv = torch::jit::toIValue(arg);
  if (!iv || !iv->isInt()) return std::nullopt;
  const int64_t d = iv->toInt();
  if (d < -rank || d >= rank) return std::nullopt;
  dims.push_back(d < 0 ? d + rank : d);
  return dims;
}

// The dims form the trailing block of dims (in any order), leaving at least one kept dim.
bool trailing_block(std::vector<int64_t> dims, int64_t rank) {
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  const auto count = static_cast<int64_t>(dims.size());
  if (count >= rank) return false;
  for (int64_t i = 0; i < count; ++i)
    if (dims[i] != rank - count + i) return false;
  return true;
}

std::string strides_str(const std::vector<int64_t>& strides) {
  std::string s = "[";
  for (size_t i = 0; i < strides.size(); ++i) s += (i ? ", " : "") + std::to_string(strides[i]);
  return s + "]";
}

void stage(RewriteContext& ctx, Node* n, const ir::Type& t) {
  torch::jit::WithInsertPoint point(n);
  Value* in = n->input(0);
  Value* copy = ctx.graph.insert(c10::aten::contiguous, {in});
  copy->setType(in->type());
  ctx.inherit_type(copy, in);
  n->replaceInput(0, copy);
  ctx.applied("row reduction " + node_name(n) + " reads %" + in->debugName() + " " + t.str() + " strides " +
              strides_str(t.strides) + " transposed against its rows -> aten::contiguous first (a tiled copy), "
              "its rows then read contiguous");
}

}  // namespace

void stage_transposed_rows(RewriteContext& ctx) {
  std::vector<std::pair<Node*, ir::Type>> staged;
  for (Node* n : ctx.graph.nodes()) {
    if (!row_reductions().count(n->kind().toQualString()) || n->inputs().empty()) continue;
    const ir::Type* t = ctx.type_of(n->input(0));
    if (!t || !t->is_tensor() || t->rank() < 2 || t->strides.size() != t->sizes.size()) continue;
    const auto dims = reduced_dims(n, t->rank());
    if (!dims || !trailing_block(*dims, t->rank())) continue;
    if (!ir::rows_across_lines(t->sizes, t->strides, static_cast<int64_t>(dims->size()))) continue;
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
