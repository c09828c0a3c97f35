// Rewrites of the TorchScript graph before it is converted to torchfuse's IR: patterns that have a
// better kernel than the ops that spell them (attention -> one fused-attention call; a GEMM and
// its epilogue -> one cuBLASLt call). The rewritten nodes are opaque to the fusion passes and run
// through ATen or cuBLASLt; everything around them still fuses.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>

#include "src/frontend.h"
#include "src/logging.h"

namespace torch {
namespace jit {
struct Graph;
struct Node;
struct Value;
}  // namespace jit
}  // namespace torch

namespace torchfuse {

// The heuristic's algorithms a GEMM times under CompileOptions::gemm_autotune.
constexpr int kGemmAutotuneCandidates = 8;

// Tensors a rewrite derives from frozen constants (a weight stored channels-last), made once per
// compiled module: its specializations each rewrite a copy of the graph, whose constants are the
// same tensors, and share what was derived from them. Thread-safe (specializations of one module
// may be planned on several threads).
class DerivedConstants {
 public:
  // `make(source)` the first time `source` is asked for under `tag`; the same tensor after.
  at::Tensor get(const std::string& tag, const at::Tensor& source, const std::function<at::Tensor(const at::Tensor&)>& make);

 private:
  std::mutex mutex_;
  // Keyed by the source's identity, which holding the source keeps from being reused.
  std::map<std::pair<std::string, const void*>, std::pair<at::Tensor, at::Tensor>> made_;
};

struct RewriteOptions {
  bool attention = true;       // CompileOptions::rewrite_attention
  bool gemm_epilogues = true;  // CompileOptions::gemm_epilogues
  bool linear_bias = true;     // CompileOptions::split_linear_bias
  bool conv_bias = true;       // CompileOptions::split_conv_bias
  bool channels_last = true;   // CompileOptions::channels_last_convs
  bool concat_linears = true;  // CompileOptions::concat_linears
  bool plain_gemms = true;     // CompileOptions::cublaslt_gemms
  bool shape_tensors = true;   // CompileOptions::cache_shape_tensors
  bool sink_reshapes = true;   // no CompileOptions switch: it changes which kernels run, never values
  bool stage_transposed_rows = true;  // the same
  bool sink_casts = true;             // the same
  bool broadcast_indices = true;      // the same
  bool fold_static_sizes = true;      // the same
  bool spell_view_likes = true;       // the same
  bool spell_index_ops = true;        // the same
  // No CompileOptions switch either: the ops it writes compute what the norm's kernel does, in
  // float32 (results move within rounding, as another of ATen's kernels would).
  bool decompose_norms = true;
  // The algorithms each torchfuse::gemm_epilogue call times (CompileOptions::gemm_autotune).
  int gemm_candidates = 1;
  // Whether a merged GEMM times itself whole against apart (CompileOptions::concat_linears_autotune,
  // or gemm_autotune).
  bool time_column_parts = false;
  // Whether each torchfuse::attention call times ATen's pick against flash attention
  // (CompileOptions::attention_autotune).
  bool attention_timed = false;
  LogSwitches logs;
  // Shared by every copy of these options (one compiled module's specializations).
  std::shared_ptr<DerivedConstants> derived = std::make_shared<DerivedConstants>();
};

// What the rewrites did: one line per pattern replaced ("attention %12 -> torchfuse::attention
// (scale 0.125, additive mask)") and one per pattern found but left alone, with the reason.
struct RewriteReport {
  std::vector<std::string> applied;
  std::vector<std::string> refused;
  // What the rewritten graph's calls refer to (src/shape_tensors.h registrations): kept as long
  // as the graph may run.
  std::vector<std::shared_ptr<const void>> owned;
};

// What every rewrite sees: the graph, the profiled types of its values (values a rewrite makes
// have none, unless it passes one on with inherit_type; the caller profiles again after a change).
struct RewriteContext {
  torch::jit::Graph& graph;
  LogSwitches logs;
  int gemm_candidates = 1;  // RewriteOptions::gemm_candidates
  bool time_column_parts = false;  // RewriteOptions::time_column_parts
  bool attention_timed = false;  // RewriteOptions::attention_timed
  DerivedConstants* derived = nullptr;  // RewriteOptions::derived
  RewriteReport report;

  // Whether a float32 GEMM may become torchfuse::gemm_epilogue: only where its call times ATen's
  // GEMM among its candidates (untimed, cuBLASLt's float32 picks ran slower than ATen's).
  bool times_float32_gemms() const { return gemm_candidates > 1; }

  // Takes the profile's types while the graph is as profiled.
  RewriteContext(torch::jit::Graph& g, const Profile& p, LogSwitches l);
  // Record (and log under "fusion") a rewrite done or refused.
  void applied(const std::string& what);
  void refused(const std::string& why);
  // The profiled type of a value, or nullptr for values the profile did not see (made since).
  const ir::Type* type_of(const torch::jit::Value* v) const;
  // A value a rewrite made in place of `from`, with its dtype, sizes and device (strides may
  // differ): later matches read it through type_of.
  void inherit_type(const torch::jit::Value* made, const torch::jit::Value* from);
  // A value a rewrite made, with a type of its own (a merged GEMM's result, a new constant).
  void set_type(const torch::jit::Value* made, ir::Type type);

 private:
  // By Value::unique(), which a graph never hands out twice: a rewrite frees values, and a value
  // made later may reuse a freed one's address (the profile's key).
  std::unordered_map<size_t, ir::Type> types_;
};

// What the rewrites read the graph with: a node's kind ("aten::matmul"), and the number a constant
// holds (an int, a float, or a 0-dim tensor: the tracer's scalars).
bool is_kind(const torch::jit::Node* n, const char* qual_name);
// A node as the rewrites' messages name it, by its kind and first output: "aten::linear (%input.12)".
std::string node_name(const torch::jit::Node* n);
std::optional<double> constant_number(const torch::jit::Value* v);
// An elementwise op the converter turns into a fused one (add, mul, where, relu, hardtanh, silu...).
bool is_fusible_pointwise(const torch::jit::Node* n);

// Runs the enabled rewrites in their fixed order (graph_rewrites.cpp says why the order matters).
RewriteReport run_graph_rewrites(torch::jit::Graph& graph, const Profile& profile, const RewriteOptions& options);

}  // namespace torchfuse
