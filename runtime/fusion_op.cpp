#include "runtime/fusion_op.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/custom_operator.h>

#include "src/error.h"
#include "src/id_registry.h"

namespace torchfuse {
namespace runtime {
namespace {

IdRegistry<FusedKernel>& registry() {
  static auto* r = new IdRegistry<FusedKernel>();  // outlives static teardown of compiled modules
  return *r;
}

std::shared_ptr<FusedKernel> lookup(int64_t id) {
  std::shared_ptr<FusedKernel> kernel = registry().find(id);
  TORCHFUSE_INTERNAL_ASSERT(kernel, "no fused kernel with id ", id);
  return kernel;
}

thread_local std::exception_ptr last_op_error;

// Called once per node when TorchScript builds the code that runs the graph.
torch::jit::Operation create_operation(const torch::jit::Node* node) {
  std::shared_ptr<FusedKernel> kernel = lookup(node->i(kernel_id_attr()));
  return [kernel](torch::jit::Stack& stack) {
    try {
      kernel->run(stack);
    } catch (const Error&) {
      last_op_error = std::current_exception();
      throw;
    }
  };
}

}  // namespace

c10::Symbol fusion_group_symbol() {
  static const c10::Symbol s = c10::Symbol::fromQualString("torchfuse::FusionGroup");
  return s;
}

c10::Symbol kernel_id_attr() {
  static const c10::Symbol s = c10::Symbol::attr("kernel_id");
  return s;
}

std::exception_ptr take_fusion_op_error() {
  std::exception_ptr e = last_op_error;
  last_op_error = nullptr;
  return e;
}

void register_fusion_op() {
  static torch::jit::RegisterOperators reg({torch::jit::Operator(
      fusion_group_symbol(), create_operation, c10::AliasAnalysisKind::CONSERVATIVE)});
}

int64_t register_kernel(std::shared_ptr<FusedKernel> kernel) { return registry().add(std::move(kernel)); }

void unregister_kernel(int64_t id) { registry().remove(id); }

}  // namespace runtime
}  // namespace torchfuse
