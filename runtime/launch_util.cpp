#include "runtime/launch_util.h"

#include <limits>

#include <ATen/ATen.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/version.h>

#include "runtime/driver_api.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {

void ParamPacker::scalar(const c10::IValue& v) {
  if (v.isDouble()) f64(v.toDouble());
  else if (v.isBool()) i64(v.toBool() ? 1 : 0);
  else i64(v.toInt());
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

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

}  // namespace

void launch(const codegen::GeneratedKernel& kernel, const std::string& entry, const c10::Device& device,
            int64_t blocks_x, int64_t blocks_y, int block, ParamPacker& params, CompileCounters* counters) {
  TORCHFUSE_INTERNAL_ASSERT(blocks_x >= 1 && blocks_x <= std::numeric_limits<int32_t>::max() && blocks_y >= 1 &&
                                blocks_y <= 65535,
                            "grid ", blocks_x, " x ", blocks_y, " for ", entry);
  CUfunction fn = KernelCache::global().function(kernel, device.index(), counters, entry);
  void* args[] = {params.data()};
  make_context_current(device.index());
  check_cu(driver_api()->cuLaunchKernel(fn, static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y), 1,
                                        static_cast<unsigned>(block), 1, 1, 0,
                                        static_cast<CUstream>(current_stream(device)), args, nullptr),
           "cuLaunchKernel");
}

at::Tensor new_output(const std::vector<int64_t>& sizes, c10::ScalarType dtype, const c10::Device& device, bool poison) {
  at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(dtype).device(device));
  if (!poison) return t;
  if (c10::isFloatingType(dtype)) t.fill_(std::numeric_limits<double>::quiet_NaN());
  else if (dtype == c10::ScalarType::Bool) t.fill_(true);
  else t.fill_(-123);
  return t;
}

}  // namespace runtime
}  // namespace torchfuse
