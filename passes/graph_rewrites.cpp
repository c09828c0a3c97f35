#include "passes/graph_rewrites.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "passes/broadcast_indices.h"
#include "passes/view_arange_indices.h"
#include "passes/cache_shape_tensors.h"
#include "passes/rewrite_attention.h"
#include "passes/concat_linears.h"
#include "passes/decompose_norms.h"
#include "passes/fold_static_sizes.h"
#include "passes/rewrite_channels_last.h"
#include "passes/rewrite_conv_bias.h"
#include "passes/rewrite_linear_bias.h"
#include "passes/rewrite_plain_gemms.h"
#include "passes/rewrite_gemm_epilogues.h"
#include "passes/sink_casts.h"
#include "passes/spell_index_ops.h"
#include "passes/spell_view_likes.h"
#include "passes/sink_reshapes.h"
#include "passes/stage_transposed_rows.h"
#include "src/convert_context.h"
#include "src/graph_constants.h"

namespace torchfuse {

at::Tensor DerivedConstants::get(const std::string& tag, const at::Tensor& source,
                                 const std::function<at::Tensor(const at::Tensor&)>& make) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto key = std::make_pair(tag, static_cast<const void*>(source.unsafeGetTensorImpl()));
  auto it = made_.find(key);
  if (it == made_.end()) it = made_.emplace(key, std::make_pair(source, make(source))).first;
  return it->second.second;
}

void RewriteContext::applied(const std::string& what) {
  report.applied.push_back(what);
  if (logs.fusion) log_info("rewrite: " + what);
}

void RewriteContext::refused(const std::string& why) {
  report.refused.push_back(why);
  if (logs.fusion) log_info("rewrite refused: " + why);
}

bool is_kind(const torch::jit::Node* n, const char* qual_name) {
  return n->kind() == c10::Symbol::fromQualString(qual_name);
}

std::string node_name(const torch::jit::Node* n) {
  const std::string kind = n->kind().toQualString();
  return n->outputs().empty() ? kind : kind + " (%" + n->outputs()[0]->debugName() + ")";
}

std::optional<double> constant_number(const torch::jit::Value* v) {
  const std::optional<c10::IValue> iv = constant_value(v);
  if (!iv) return std::nullopt;
  if (iv->isDouble()) return iv->toDouble();
  if (iv->isInt()) return static_cast<double>(iv->toInt());
  if (iv->isTensor()) {
    const at::Tensor& t = iv->toTensor();
    if (t.defined() && t.dim() == 0 && !t.is_complex()) return t.item<double>();
  }
  return std::nullopt;
}

bool is_fusible_pointwise(const torch::jit::Node* n) {
  const std::string kind = n->kind().toQualString();
  return pointwise_converters().count(kind) > 0 || activation_converters().count(kind) > 0;
}

namespace {

void collect_types(torch::jit::Block* block, const Profile& profile, std::unordered_map<size_t, ir::Type>& out) {
  auto take = [&](const torch::jit::Value* v) {
    auto it = profile.types.find(v);
    if (it != profile.types.end()) out.emplace(v->unique(), it->second);
  };
  for (const torch::jit::Value* v : block->inputs()) take(v);
  for (torch::jit::Node* n : block->nodes()) {
    for (const torch::jit::Value* v : n->outputs()) take(v);
    for (torch::jit::Block* b : n->blocks()) collect_types(b, profile, out);
  }
}

}  // namespace

RewriteContext::RewriteContext(torch::jit::Graph& g, const Profile& p, LogSwitches l) : graph(g), logs(l) {
  collect_types(g.block(), p, types_);
}

const ir::Type* RewriteContext::type_of(const torch::jit::Value* v) const {
  auto it = types_.find(v->unique());
  return it == types_.end() ? nullptr : &it->second;
}

void RewriteContext::inherit_type(const torch::jit::Value* made, const torch::jit::Value* from) {
  if (const ir::Type* t = type_of(from)) types_[made->unique()] = *t;
}

void RewriteContext::set_type(const torch::jit::Value* made, ir::Type type) { types_[made->unique()] = std::move(type); }

namespace {

struct Rewrite {
  const char* name;
  bool RewriteOptions::*enabled;
  void (*run)(RewriteContext&);
};

// Order matters: attention goes first after the sizes are folded. Its two matmuls would otherwise be GEMMs that
// rewrite_gemm_epilogues could claim (the scores' scaling as an epilogue), and the fused
// attention kernel saves far more than an epilogue does.
const Rewrite kRewrites[] = {
    // Before the sizes are folded: the size reads it writes fold too, where they are static.
    {"spell_view_likes", &RewriteOptions::spell_view_likes, spell_view_likes},
    // The same for the sizes its aranges and merged repeats read; its index aranges end in the
    // shape-tensor cut (cache_shape_tensors, last).
    {"spell_index_ops", &RewriteOptions::spell_index_ops, spell_index_ops},
    // First of the rest: the rewrites after it see the sizes it folds as constants.
    {"fold_static_sizes", &RewriteOptions::fold_static_sizes, fold_static_sizes},
    // Next: the norms' ops are what every later rewrite and the converters read. After the sizes
    // are folded: a group norm's layer_norm reads its normalized sizes as x.size() entries (a
    // folded entry would make the list neither constant nor sizes, and the converter decline).
    {"decompose_norms", &RewriteOptions::decompose_norms, decompose_norms},
    {"rewrite_attention", &RewriteOptions::attention, rewrite_attention},
    {"rewrite_gemm_epilogues", &RewriteOptions::gemm_epilogues, rewrite_gemm_epilogues},
    // After the epilogues: a linear whose activation cuBLASLt computes keeps its bias there.
    {"rewrite_linear_bias", &RewriteOptions::linear_bias, rewrite_linear_bias},
    // Convolutions are no GEMMs the rewrites above claim; their bias joins the readers' kernel.
    {"rewrite_conv_bias", &RewriteOptions::conv_bias, rewrite_conv_bias},
    // After it: the biases it moves out are elementwise ops of the regions this one lays out NHWC.
    {"rewrite_channels_last", &RewriteOptions::channels_last, rewrite_channels_last},
    // After both: linears they left (no epilogue, a float32 bias moved out) that read one input
    // become one GEMM.
    {"concat_linears", &RewriteOptions::concat_linears, concat_linears},
    // What is left of the GEMMs runs as one cuBLASLt call each (the merged ones included).
    {"rewrite_plain_gemms", &RewriteOptions::plain_gemms, rewrite_plain_gemms},
    // After the rewrites that match layouts around GEMMs and attention (a reshape read by a
    // linear or an attention call stays where it is).
    {"sink_reshapes", &RewriteOptions::sink_reshapes, sink_reshapes},
    {"sink_casts", &RewriteOptions::sink_casts, sink_casts},
    // After sink_reshapes, whose moved reshapes can leave a reduction reading a transposed value.
    {"stage_transposed_rows", &RewriteOptions::stage_transposed_rows, stage_transposed_rows},
    // Indices that are aranges make views before any index is broadcast (both under the
    // broadcast_indices switch: neither changes a value).
    {"view_arange_indices", &RewriteOptions::broadcast_indices, view_arange_indices},
    // Before cache_shape_tensors, which takes the broadcast indices into its cut with the
    // indices they are made from.
    {"broadcast_indices", &RewriteOptions::broadcast_indices, broadcast_indices},
    // Last: the attention rewrite's prepared masks join the shape tensors they are made from
    // (and get their causal check there).
    {"cache_shape_tensors", &RewriteOptions::shape_tensors, cache_shape_tensors},
};

}  // namespace

RewriteReport run_graph_rewrites(torch::jit::Graph& graph, const Profile& profile, const RewriteOptions& options) {
  RewriteContext ctx(graph, profile, options.logs);
  ctx.gemm_candidates = options.gemm_candidates;
  ctx.time_column_parts = options.time_column_parts;
  ctx.attention_timed = options.attention_timed;
  ctx.derived = options.derived.get();
  for (const Rewrite& r : kRewrites) {
    if (!(options.*r.enabled)) continue;
    const size_t before = ctx.report.applied.size();
    r.run(ctx);
    if (ctx.report.applied.size() == before) continue;
    torch::jit::EliminateDeadCode(graph.block());
    if (options.logs.passes) log_info(std::string("graph after ") + r.name + ":\n" + graph.toString());
  }
  return std::move(ctx.report);
}

}  // namespace torchfuse
