#include "runtime/fused_kernel.h"

#include <cstring>
#include <limits>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/version.h>

#include "codegen/pointwise.h"
#include "runtime/driver_api.h"
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

std::vector<c10::ScalarType> output_dtypes(const FusionGroup& g) {
  std::vector<c10::ScalarType> out;
  for (const ir::Value* v : g.outputs) out.push_back(v->type.dtype);
  return out;
}

FusedKernel::FusedKernel(std::shared_ptr<const void> owner, FusionGroup group, LaunchOptions options,
                         std::shared_ptr<CompileCounters> counters)
    : owner_(std::move(owner)), group_(std::move(group)), options_(options), counters_(std::move(counters)) {}

codegen::GeneratedKernel FusedKernel::kernel_for_profiled_types() const {
  auto layout = codegen::plan_pointwise_layout(group_.domain, profiled_operands(group_), output_dtypes(group_),
                                               kMaxGridThreads);
  return codegen::generate_pointwise(group_, layout);
}

codegen::GeneratedKernel FusedKernel::kernel_for(const codegen::PointwiseLayout& layout) {
  const std::string key = layout.key();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second;
  auto k = codegen::generate_pointwise(group_, layout);
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

void* current_stream(const c10::Device& device) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  return impl.getStream(device).native_handle();
#else
  (void)device;
  throw Error("torchfuse: this LibTorch build cannot hand out CUDA streams (LibTorch >= 2.3 with CUDA is needed)");
#endif
}

// Inputs from the stack, checked against what the group was compiled for.
std::vector<c10::IValue> take_inputs(std::vector<c10::IValue>& stack, const FusionGroup& g, c10::Device* device) {
  const size_t n = g.inputs.size();
  TORCHFUSE_INTERNAL_ASSERT(stack.size() >= n, "stack holds ", stack.size(), " values, group needs ", n);
  std::vector<c10::IValue> in(std::make_move_iterator(stack.end() - n), std::make_move_iterator(stack.end()));
  stack.erase(stack.end() - n, stack.end());
  bool have_device = false;
  for (size_t k = 0; k < n; ++k) {
    const ir::Value* v = g.inputs[k];
    if (v->type.is_scalar()) {
      TORCHFUSE_CHECK(in[k].isScalar(), "torchfuse: ", g.kernel_name, " input ", k, " must be a number, got ",
                      in[k].tagKind());
      continue;
    }
    TORCHFUSE_CHECK(in[k].isTensor(), "torchfuse: ", g.kernel_name, " input ", k, " must be a tensor, got ",
                    in[k].tagKind());
    const at::Tensor& t = in[k].toTensor();
    TORCHFUSE_CHECK(t.scalar_type() == v->type.dtype, "torchfuse: ", g.kernel_name, " input ", k, " has dtype ",
                    t.scalar_type(), ", compiled for ", v->type.dtype);
    TORCHFUSE_CHECK(t.is_cuda(), "torchfuse: ", g.kernel_name, " input ", k, " is on ", t.device(),
                    ", fused kernels run on CUDA");
    if (!have_device) {
      *device = t.device();
      have_device = true;
    }
    TORCHFUSE_CHECK(t.device() == *device, "torchfuse: ", g.kernel_name, " inputs are on different devices: ",
                    *device, " and ", t.device());
  }
  TORCHFUSE_INTERNAL_ASSERT(have_device, g.kernel_name, " has no tensor input");
  return in;
}

// Kernel arguments packed as the generated params struct lays them out (8 bytes each).
class ParamPacker {
 public:
  void i64(int64_t v) { words_.push_back(v); }
  void f64(double v) {
    int64_t w;
    std::memcpy(&w, &v, sizeof w);
    words_.push_back(w);
  }
  void ptr(const void* p) { words_.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(p))); }
  void* data() { return words_.data(); }

 private:
  std::vector<int64_t> words_;
};

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The vector path needs whole vectors per row and 16-byte-aligned vector accesses.
bool vector_ok(const codegen::PointwiseLayout& l, const std::vector<c10::IValue>& in,
               const std::vector<at::Tensor>& out) {
  if (l.vec <= 1 || l.sizes.back() % l.vec != 0) return false;
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const auto& op = l.inputs[k];
    if (op.access != codegen::Access::Linear && op.access != codegen::Access::InnerContig) continue;
    const at::Tensor& t = in[k].toTensor();
    if (!aligned(t.data_ptr(), l.vec * t.element_size())) return false;
    for (size_t d = 0; d + 1 < op.strides.size(); ++d)
      if (op.strides[d] % l.vec != 0) return false;
  }
  for (const auto& t : out)
    if (!aligned(t.data_ptr(), l.vec * t.element_size())) return false;
  return true;
}

}  // namespace

void FusedKernel::run(std::vector<c10::IValue>& stack) {
  c10::Device device(c10::DeviceType::CUDA, 0);
  std::vector<c10::IValue> in = take_inputs(stack, group_, &device);

  std::vector<codegen::OperandShape> shapes;
  std::vector<int64_t> domain;
  for (const auto& iv : in) {
    codegen::OperandShape s;
    s.is_tensor = iv.isTensor();
    if (s.is_tensor) {
      const at::Tensor& t = iv.toTensor();
      s.dtype = t.scalar_type();
      s.sizes = t.sizes().vec();
      s.strides = t.strides().vec();
      auto b = ir::broadcast_shapes(domain, s.sizes);
      TORCHFUSE_CHECK(b.has_value(), "torchfuse: ", group_.kernel_name, " inputs do not broadcast");
      domain = *b;
    } else {
      s.dtype = iv.isDouble() ? c10::ScalarType::Double : iv.isBool() ? c10::ScalarType::Bool : c10::ScalarType::Long;
    }
    shapes.push_back(std::move(s));
  }
  const auto layout = codegen::plan_pointwise_layout(domain, shapes, output_dtypes(group_), kMaxGridThreads);

  c10::DeviceGuard guard(device);
  std::vector<at::Tensor> outputs;
  for (const ir::Value* v : group_.outputs) {
    at::Tensor t = at::empty(domain, at::TensorOptions().dtype(v->type.dtype).device(device));
    if (options_.poison_outputs) {
      if (c10::isFloatingType(v->type.dtype)) t.fill_(std::numeric_limits<double>::quiet_NaN());
      else if (v->type.dtype == c10::ScalarType::Bool) t.fill_(true);
      else t.fill_(-123);
    }
    outputs.push_back(std::move(t));
  }

  const int64_t numel = layout.numel();
  if (numel > 0) {
    const codegen::GeneratedKernel kernel = kernel_for(layout);
    CUfunction fn = KernelCache::global().function(kernel, device.index(), counters_.get());
    const bool vec_ok = vector_ok(layout, in, outputs);

    ParamPacker p;
    p.i64(numel);
    p.i64(vec_ok ? 1 : 0);
    for (int64_t s : layout.sizes) p.i64(s);
    for (size_t k = 0; k < layout.inputs.size(); ++k) {
      const auto& op = layout.inputs[k];
      if (op.access == codegen::Access::Scalar) {
        if (in[k].isDouble()) p.f64(in[k].toDouble());
        else p.i64(in[k].isBool() ? (in[k].toBool() ? 1 : 0) : in[k].toInt());
        continue;
      }
      p.ptr(in[k].toTensor().data_ptr());
      if (op.access == codegen::Access::InnerContig || op.access == codegen::Access::InnerBroadcast ||
          op.access == codegen::Access::Strided) {
        for (int64_t s : op.strides) p.i64(s);
      }
    }
    for (const auto& t : outputs) p.ptr(t.data_ptr());

    const DeviceInfo& info = device_info(device.index());
    const int64_t per_thread = vec_ok ? layout.vec : 1;
    const int64_t work = (numel + per_thread - 1) / per_thread;
    const int64_t max_blocks = std::min<int64_t>(int64_t{info.sm_count} * (2048 / kernel.block_size),
                                                 kMaxGridThreads / kernel.block_size);
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>((work + kernel.block_size - 1) / kernel.block_size, max_blocks));
    void* args[] = {p.data()};
    make_context_current(device.index());
    check_cu(driver_api()->cuLaunchKernel(fn, static_cast<unsigned>(blocks), 1, 1, kernel.block_size, 1, 1, 0,
                                          static_cast<CUstream>(current_stream(device)), args, nullptr),
             "cuLaunchKernel");
    ++launches_;
  }
  for (auto& t : outputs) stack.emplace_back(std::move(t));
}

}  // namespace runtime
}  // namespace torchfuse
