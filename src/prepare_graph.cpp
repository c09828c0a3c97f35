#include "src/prepare_graph.h"

#include <functional>

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/lower_tuples.h>
#include <torch/csrc/jit/passes/remove_mutation.h>

#include "src/error.h"
#include "src/sibling_weights.h"

namespace torchfuse {

void prepare_graph(const std::shared_ptr<torch::jit::Graph>& graph_ptr) {
  torch::jit::Graph& graph = *graph_ptr;
  torch::jit::Inline(graph);
  // As freeze() does for modules: inlined Python helpers keep their branches on constant flags
  // (F.silu's `if inplace:`), and scripted functions build reduction dims with
  // prim::ListConstruct; both fold to what the converter reads (the branch taken, int[] constants).
  std::shared_ptr<torch::jit::Graph> mutable_ptr = graph_ptr;  // the pass takes a non-const reference
  torch::jit::ConstantPropagation(mutable_ptr);
  // x.max(dim=1)[0] builds a tuple and indexes it: take the value straight from the op.
  torch::jit::LowerSimpleTuples(graph_ptr);
  // Traced models write their own intermediates in place (a ResNet block's `hidden += residual`
  // before its ReLU, an `inplace=True` activation): where alias analysis proves no other reader
  // sees the write, the op becomes its functional form, which fuses. Writes to inputs, to values
  // that alias others, and to frozen parameters (module state a later call would see) stay.
  const std::function<bool(torch::jit::Node*)> not_on_constants = [](torch::jit::Node* n) {
    return n->inputs().empty() || n->input(0)->node()->kind() != c10::prim::Constant;
  };
  torch::jit::RemoveTensorMutation(mutable_ptr, not_on_constants);
  // compile() is for inference: frozen parameters become constants that do not require grad.
  for (torch::jit::Node* n : graph.nodes()) {
    if (n->kind() != c10::prim::Constant || !n->hasAttribute(c10::attr::value)) continue;
    if (n->kindOf(c10::attr::value) != torch::jit::AttributeKind::t) continue;
    n->t_(c10::attr::value, n->t(c10::attr::value).detach());
  }
  torch::jit::EliminateDeadCode(graph.block());
}

std::shared_ptr<torch::jit::Graph> prepare_module_graph(const torch::jit::Module& module) {
  torch::jit::Module copy = module.clone();
  // Modules defined in C++ (Module::define) may lack the attribute eval() and freeze() read.
  if (!copy.hasattr("training")) copy.register_attribute("training", c10::BoolType::get(), false);
  copy.eval();
  torch::jit::Module frozen = torch::jit::freeze(copy);
  auto graph = frozen.get_method("forward").graph()->copy();
  prepare_graph(graph);
  // The clone's weights are torchfuse's own: sibling linears may share one buffer.
  store_sibling_weights_together(*graph);
  TORCHFUSE_CHECK(!graph->inputs().empty(), "torchfuse: forward has no self input");
  TORCHFUSE_CHECK(!graph->inputs()[0]->hasUses(),
                  "torchfuse: forward still uses self after freezing (attributes it mutates cannot be frozen)");
  graph->eraseInput(0);
  return graph;
}


bool writes_to_inputs_or_constants(const std::shared_ptr<torch::jit::Graph>& graph) {
  torch::jit::AliasDb db(graph);
  std::vector<torch::jit::Value*> watched(graph->inputs().begin(), graph->inputs().end());
  for (torch::jit::Node* n : graph->nodes())
    if (n->kind() == c10::prim::Constant) watched.push_back(n->output());
  const torch::jit::ValueSet watched_set(watched.begin(), watched.end());
  for (torch::jit::Node* n : graph->nodes()) {
    if (db.writesToAlias(n, watched_set)) return true;
    // writesToAlias looks at the watched values themselves, not at what they hold: xs[0].add_(1)
    // on a list (tuple, dict) input writes an element of it. Such a write counts too.
    const c10::FunctionSchema* schema = n->maybeSchema();
    if (!schema || !schema->is_mutable()) continue;
    for (size_t i = 0; i < schema->arguments().size() && i < n->inputs().size(); ++i) {
      const auto* alias = schema->arguments()[i].alias_info();
      if (alias && alias->isWrite() && db.mayContainAlias(n->input(i), watched)) return true;
    }
  }
  return false;
}

}  // namespace torchfuse
