#include "runtime/fallback_graph.h"

#include <functional>
#include <unordered_map>

#include <torch/csrc/jit/ir/ir.h>

#include "runtime/graph_rewrite.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {
namespace {

using ValueMap = std::unordered_map<const torch::jit::Value*, torch::jit::Value*>;

// Copies nodes of the source graph into `graph`, with their inputs looked up in `env`; values
// not there come from cloning their (pure, input-free or constant-fed) producers.
class Cloner {
 public:
  Cloner(torch::jit::Graph& graph, const FusionGroup& g) : graph_(graph), group_(g) {}

  void map(const torch::jit::Value* from, torch::jit::Value* to) { env_[from] = to; }

  void clone(torch::jit::Node* n) {
    torch::jit::Node* copy = graph_.createClone(n, [this](torch::jit::Value* v) { return resolve(v); });
    graph_.insertNode(copy);
    for (size_t i = 0; i < n->outputs().size(); ++i) env_[n->output(i)] = copy->output(i);
  }

  torch::jit::Value* resolve(torch::jit::Value* v) {
    auto it = env_.find(v);
    if (it != env_.end()) return it->second;
    torch::jit::Node* producer = v->node();
    // prim::Constant, and prim::ListConstruct & co. over constants: read-only attributes of
    // the group's ops (dims, dtypes, normalized shapes).
    TORCHFUSE_INTERNAL_ASSERT(producer->kind() != c10::prim::Param && !producer->hasSideEffects() &&
                                  producer->blocks().empty(),
                              group_.kernel_name, " reads %", v->debugName(), " (from ",
                              producer->kind().toQualString(), "), which is neither one of its inputs nor a constant");
    clone(producer);
    return env_.at(v);
  }

 private:
  torch::jit::Graph& graph_;
  const FusionGroup& group_;
  ValueMap env_;
};

torch::jit::Value* source_of(const Conversion& conv, const ir::Value* v, const FusionGroup& g) {
  TORCHFUSE_INTERNAL_ASSERT(v->source_index >= 0, g.kernel_name, ": %", v->id, " has no TorchScript value");
  return conv.source_values.at(v->source_index);
}

}  // namespace

std::shared_ptr<torch::jit::Graph> build_fallback_graph(const Conversion& conv, const FusionGroup& g) {
  auto graph = std::make_shared<torch::jit::Graph>();
  Cloner cloner(*graph, g);
  for (const ir::Value* v : g.inputs) {
    torch::jit::Value* ts = source_of(conv, v, g);
    torch::jit::Value* in = graph->addInput();
    in->copyMetadata(ts);
    cloner.map(ts, in);
  }
  for (torch::jit::Node* n : group_source_nodes(conv, g)) cloner.clone(n);
  for (const ir::Value* v : g.outputs) graph->registerOutput(cloner.resolve(source_of(conv, v, g)));
  return graph;
}

}  // namespace runtime
}  // namespace torchfuse
