#include "runtime/fused_kernel.h"

#include <c10/core/DeviceGuard.h>

#include "runtime/launchers.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {

std::vector<codegen::OperandShape> profiled_operands(const FusionGroup& g) {
  std::vector<codegen::OperandShape> ops;
  for (const ir::Value* v : g.inputs) {
    codegen::OperandShape s;
    s.is_tensor = v->type.is_tensor();
    s.dtype = v->type.dtype;
    s.sizes = v->type.sizes;
    s.strides = v->type.strides;
    ops.push_back(std::move(s));
  }
  return ops;
}

FusedKernel::FusedKernel(std::shared_ptr<const void> owner, FusionGroup group, LaunchOptions options,
                         std::shared_ptr<CompileCounters> counters)
    : owner_(std::move(owner)), group_(std::move(group)), options_(options), counters_(std::move(counters)) {
  if (group_.schedule != Schedule::Pointwise) analysis_ = codegen::analyze_reduction_group(group_);
}

void FusedKernel::shape_operands(CallInputs& call) const {
  // Per-row inputs without the reduced dims ([R] for a [R, C] domain) take them back as size-1
  // dims, so that they broadcast over the reduced dims, not the trailing ones.
  if (analysis_) {
    for (size_t k = 0; k < group_.inputs.size(); ++k) {
      const ir::Value* v = group_.inputs[k];
      auto& s = call.shapes[k];
      if (!s.is_tensor || !analysis_->is_row(v) || v->type.sizes != analysis_->rd.squeezed_shape() ||
          v->type.sizes == analysis_->rd.keep_shape()) {
        continue;
      }
      for (int64_t d : analysis_->rd.dims) {
        s.sizes.insert(s.sizes.begin() + d, 1);
        s.strides.insert(s.strides.begin() + d, 0);
      }
    }
  }
  call.domain.clear();
  for (const auto& s : call.shapes) {
    if (!s.is_tensor) continue;
    auto b = ir::broadcast_shapes(call.domain, s.sizes);
    TORCHFUSE_CHECK(b.has_value(), "torchfuse: ", group_.kernel_name, " inputs do not broadcast");
    call.domain = *b;
  }
  if (!analysis_) return;
  for (const ir::Node* r : analysis_->reductions) {
    for (size_t i = 0; i < r->pinned_sizes.size(); ++i) {
      const int64_t d = r->dims[i];
      TORCHFUSE_CHECK(d < static_cast<int64_t>(call.domain.size()) && call.domain[d] == r->pinned_sizes[i],
                      "torchfuse: ", group_.kernel_name, ": the input's dim ", d, " has size ",
                      d < static_cast<int64_t>(call.domain.size()) ? call.domain[d] : -1,
                      ", but the normalized shape says ", r->pinned_sizes[i]);
    }
  }
}

codegen::GeneratedKernel FusedKernel::kernel_for_profiled_types(int sm_count) const {
  CallInputs call;
  call.shapes = profiled_operands(group_);
  shape_operands(call);
  return plan_and_generate(group_, analysis(), call, sm_count, /*allow_vector=*/true).kernel;
}

codegen::GeneratedKernel FusedKernel::kernel_for(const std::string& key,
                                                 const std::function<codegen::GeneratedKernel()>& generate) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second;
  auto k = generate();
  kernels_.emplace(key, k);
  return k;
}

std::vector<codegen::GeneratedKernel> FusedKernel::kernels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<codegen::GeneratedKernel> out;
  for (const auto& [key, k] : kernels_) out.push_back(k);
  return out;
}

namespace {

// Inputs from the stack, checked against what the group was compiled for.
CallInputs take_inputs(std::vector<c10::IValue>& stack, const FusionGroup& g) {
  const size_t n = g.inputs.size();
  TORCHFUSE_INTERNAL_ASSERT(stack.size() >= n, "stack holds ", stack.size(), " values, group needs ", n);
  CallInputs call;
  call.values.assign(std::make_move_iterator(stack.end() - n), std::make_move_iterator(stack.end()));
  stack.erase(stack.end() - n, stack.end());
  bool have_device = false;
  for (size_t k = 0; k < n; ++k) {
    const ir::Value* v = g.inputs[k];
    const c10::IValue& iv = call.values[k];
    codegen::OperandShape s;
    if (v->type.is_scalar()) {
      TORCHFUSE_CHECK(iv.isDouble() || iv.isInt() || iv.isBool(), "torchfuse: ", g.kernel_name, " input ", k,
                      " must be a number, got ", iv.tagKind());
      s.is_tensor = false;
      s.dtype = v->type.dtype;
      call.shapes.push_back(s);
      continue;
    }
    TORCHFUSE_CHECK(iv.isTensor(), "torchfuse: ", g.kernel_name, " input ", k, " must be a tensor, got ", iv.tagKind());
    const at::Tensor& t = iv.toTensor();
    TORCHFUSE_CHECK(t.scalar_type() == v->type.dtype, "torchfuse: ", g.kernel_name, " input ", k, " has dtype ",
                    t.scalar_type(), ", compiled for ", v->type.dtype);
    TORCHFUSE_CHECK(t.is_cuda(), "torchfuse: ", g.kernel_name, " input ", k, " is on ", t.device(),
                    ", fused kernels run on CUDA");
    if (!have_device) {
      call.device = t.device();
      have_device = true;
    }
    TORCHFUSE_CHECK(t.device() == call.device, "torchfuse: ", g.kernel_name, " inputs are on different devices: ",
                    call.device, " and ", t.device());
    s.dtype = t.scalar_type();
    s.sizes = t.sizes().vec();
    s.strides = t.strides().vec();
    call.shapes.push_back(std::move(s));
  }
  TORCHFUSE_INTERNAL_ASSERT(have_device, g.kernel_name, " has no tensor input");
  return call;
}

}  // namespace

void FusedKernel::run(std::vector<c10::IValue>& stack) {
  CallInputs call = take_inputs(stack, group_);
  shape_operands(call);
  c10::DeviceGuard guard(call.device);
  std::vector<at::Tensor> outputs = launch_group(*this, call);
  for (auto& t : outputs) stack.emplace_back(std::move(t));
}

}  // namespace runtime
}  // namespace torchfuse
