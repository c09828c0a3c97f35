#include "runtime/launch_util.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/version.h>

#include "runtime/driver_api.h"
#include "runtime/failure_injection.h"
#include "runtime/hot_path_clock.h"
#include "runtime/launch_record.h"
#include "runtime/programmatic_launch.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {

void ParamPacker::scalar(const c10::IValue& v) {
  if (v.isTensor()) {  // a 0-dim CPU tensor (ir::is_host_scalar): its value, read on the host
    const at::Tensor& t = v.toTensor();
    if (t.is_floating_point()) f64(t.item<double>());
    else i64(t.item<int64_t>());
    return;
  }
  if (v.isDouble()) f64(v.toDouble());
  else if (v.isBool()) i64(v.toBool() ? 1 : 0);
  else i64(v.toInt());
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

OnDevice::OnDevice(const c10::Device& device) {
  if (device.is_cuda() && c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getDevice() == device) return;
  guard_.reset_device(device);
}

CUstream current_stream(const c10::Device& device) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  return static_cast<CUstream>(impl.getStream(device).native_handle());
#else
  (void)device;
  throw Error("torchfuse: this LibTorch build cannot hand out CUDA streams (LibTorch >= 2.3 with CUDA is needed)");
#endif
}

CUfunction load_function(const codegen::GeneratedKernel& kernel, const std::string& entry, int device,
                         CompileCounters* counters) {
  try {
    return KernelCache::global().function(kernel, device, counters, entry);
  } catch (const Error& e) {
    // NVRTC and module load errors: nothing was launched.
    throw KernelFailure(e.what(), kernel.source);
  }
}

namespace {

// What an injected launch fault (debug_fail_kernels "launch:") makes the driver call answer: a
// launch error of the kernel's own configuration, after which the context is still usable.
constexpr CUresult kInjectedLaunchError = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;

// Kernels may use more than 48 KB of shared memory (static and dynamic) only after asking for it.
// Asked once per function for the most it has needed so far (not on every launch).
void allow_shared_bytes(CUfunction fn, int64_t shared_bytes, const codegen::GeneratedKernel& kernel) {
  if (shared_bytes == 0) return;
  static std::mutex mutex;
  static auto* allowed = new std::map<CUfunction, int64_t>();  // never destroyed, as stream_counters' buffers
  std::lock_guard<std::mutex> lock(mutex);
  int64_t& most = (*allowed)[fn];
  if (shared_bytes <= most) return;
  const CUresult r = driver_api()->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                      static_cast<int>(shared_bytes));
  if (r != CUDA_SUCCESS && !poisons_context(r)) {
    throw KernelFailure(cu_error_message(r, "cuFuncSetAttribute") + " (" + kernel.name + ", " +
                            std::to_string(shared_bytes) + " bytes of shared memory)",
                        kernel.source);
  }
  check_cu(r, "cuFuncSetAttribute");
  most = shared_bytes;
}

}  // namespace

int resident_blocks(const codegen::GeneratedKernel& kernel, const c10::Device& device, int block, int64_t shared_bytes,
                    CompileCounters* counters) {
  const DriverApi* api = driver_api();
  TORCHFUSE_INTERNAL_ASSERT(api && api->cuOccupancyMaxActiveBlocksPerMultiprocessor,
                            "occupancy query without cuOccupancyMaxActiveBlocksPerMultiprocessor");
  CUfunction fn = load_function(kernel, kernel.name, device.index(), counters);
  // The answer depends only on the function (one per device), the block and the shared memory:
  // asked once for each, not on every launch of a split column kernel.
  static std::mutex mutex;
  static auto* known = new std::map<std::tuple<CUfunction, int, int64_t>, int>();  // never destroyed
  const auto key = std::make_tuple(fn, block, shared_bytes);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = known->find(key);
    if (it != known->end()) return it->second;
  }
  make_context_current(device.index());
  allow_shared_bytes(fn, shared_bytes, kernel);
  int blocks = 0;
  check_cu(api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, block, static_cast<size_t>(shared_bytes)),
           "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  blocks = std::max(1, blocks);
  std::lock_guard<std::mutex> lock(mutex);
  known->emplace(key, blocks);
  return blocks;
}

void launch(const codegen::GeneratedKernel& kernel, const std::string& entry, const c10::Device& device,
            int64_t blocks_x, int64_t blocks_y, int block, ParamPacker& params, CompileCounters* counters,
            int64_t shared_bytes) {
  TORCHFUSE_INTERNAL_ASSERT(blocks_x >= 1 && blocks_x <= std::numeric_limits<int32_t>::max() && blocks_y >= 1 &&
                                blocks_y <= 65535,
                            "grid ", blocks_x, " x ", blocks_y, " for ", entry);
  CUfunction fn = load_function(kernel, entry, device.index(), counters);
  void* args[] = {params.data()};
  make_context_current(device.index());
  allow_shared_bytes(fn, shared_bytes, kernel);
  const bool injected = has_injected_fault(kernel, Fault::Launch);
  const CUstream stream = current_stream(device);
  const bool programmatic = kernel.grid_dependency && programmatic_launch(device.index());
  HotPathClock::mark(HotPhase::pack);
  const CUresult r = injected ? kInjectedLaunchError
                              : launch_function(fn, static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y),
                                                static_cast<unsigned>(block), static_cast<unsigned>(shared_bytes),
                                                stream, args, programmatic);
  HotPathClock::mark(HotPhase::launch);
  if (r == CUDA_SUCCESS) {
    if (LaunchRecorder* recorder = LaunchRecorder::current()) {
      recorder->launched(fn, static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y), static_cast<unsigned>(block),
                         static_cast<unsigned>(shared_bytes), static_cast<const int64_t*>(params.data()), params.size(),
                         params.pointer_words().data(), params.pointer_words().size(), kernel.grid_dependency);
    }
    return;
  }
  // A launch-configuration error is the kernel's own; a fault reported here comes from an
  // earlier kernel and has poisoned the context.
  const char* what = injected       ? "cuLaunchKernel (injected by debug_fail_kernels)"
                     : programmatic ? "cuLaunchKernelEx (programmatic dependent launch)"
                     : extended_launch_switched_on() ? "cuLaunchKernelEx"
                                                     : "cuLaunchKernel";
  if (capture_error(r)) throw Error(cu_error_message(r, what) + " (" + entry + ", while capturing a CUDA graph)");
  if (!poisons_context(r)) throw KernelFailure(cu_error_message(r, what) + " (" + entry + ")", kernel.source);
  check_cu(r, what);
}

namespace {
thread_local CounterArena* capture_arena = nullptr;
}  // namespace

ScopedCounterArena::ScopedCounterArena(CounterArena* arena) : saved_(capture_arena) { capture_arena = arena; }
ScopedCounterArena::~ScopedCounterArena() { capture_arena = saved_; }

void* stream_counters(const c10::Device& device, int64_t n) {
  if (capture_arena) {
    std::vector<at::Tensor>& buffers = capture_arena->buffers;
    if (buffers.empty() || buffers.back().numel() < n)  // zeroed by a memset node of the graph
      buffers.push_back(at::zeros({std::max<int64_t>(n, 1024)}, at::TensorOptions().dtype(at::kInt).device(device)));
    return buffers.back().data_ptr();
  }
  // Never destroyed: freeing CUDA memory after the runtime's own teardown at exit is unsafe.
  static std::mutex mutex;
  static auto* buffers = new std::map<std::pair<int, CUstream>, at::Tensor>();
  const std::pair<int, CUstream> key{device.index(), current_stream(device)};
  std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& t = (*buffers)[key];
  if (!t.defined() || t.numel() < n) {
    // The old buffer, if any, goes back to the caching allocator in stream order: kernels already
    // queued on this stream finish with it before anything reuses it.
    const int64_t size = std::max<int64_t>(n, t.defined() ? 2 * t.numel() : 1024);
    t = at::zeros({size}, at::TensorOptions().dtype(at::kInt).device(device));
  }
  return t.data_ptr();
}

void launch_clustered(const codegen::GeneratedKernel& kernel, const c10::Device& device, int64_t blocks_x, int cluster,
                      int block, ParamPacker& params, CompileCounters* counters) {
  TORCHFUSE_INTERNAL_ASSERT(cluster >= 1 && blocks_x >= cluster && blocks_x % cluster == 0 &&
                                blocks_x <= std::numeric_limits<int32_t>::max(),
                            "grid ", blocks_x, " in clusters of ", cluster, " for ", kernel.name);
  const DriverApi* api = driver_api();
  TORCHFUSE_INTERNAL_ASSERT(api && api->cuLaunchKernelEx, "cluster launch without cuLaunchKernelEx");
  CUfunction fn = load_function(kernel, kernel.name, device.index(), counters);
  void* args[] = {params.data()};
  make_context_current(device.index());
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = static_cast<unsigned>(cluster);
  attr.value.clusterDim.y = 1;
  attr.value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(blocks_x);
  config.gridDimY = 1;
  config.gridDimZ = 1;
  config.blockDimX = static_cast<unsigned>(block);
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = 0;
  config.hStream = current_stream(device);
  config.attrs = &attr;
  config.numAttrs = 1;
  if (LaunchRecorder* recorder = LaunchRecorder::current()) recorder->refuse();
  const bool injected = has_injected_fault(kernel, Fault::Launch);
  const CUresult r = injected ? kInjectedLaunchError : api->cuLaunchKernelEx(&config, fn, args, nullptr);
  if (r == CUDA_SUCCESS) return;
  const char* what = injected ? "cuLaunchKernelEx (injected by debug_fail_kernels)" : "cuLaunchKernelEx";
  if (capture_error(r)) throw Error(cu_error_message(r, what) + " (" + kernel.name + ", while capturing a CUDA graph)");
  if (!poisons_context(r)) throw KernelFailure(cu_error_message(r, what) + " (" + kernel.name + ")", kernel.source);
  check_cu(r, what);
}

void launch_cooperative(const codegen::GeneratedKernel& kernel, const c10::Device& device, int64_t blocks_x,
                        int64_t blocks_y, int block, ParamPacker& params, CompileCounters* counters) {
  TORCHFUSE_INTERNAL_ASSERT(blocks_x >= 1 && blocks_x <= std::numeric_limits<int32_t>::max() && blocks_y >= 1 &&
                                blocks_y <= 65535,
                            "cooperative grid ", blocks_x, " x ", blocks_y, " for ", kernel.name);
  const DriverApi* api = driver_api();
  TORCHFUSE_INTERNAL_ASSERT(api && api->cuLaunchCooperativeKernel, "cooperative launch without cuLaunchCooperativeKernel");
  CUfunction fn = load_function(kernel, kernel.name, device.index(), counters);
  void* args[] = {params.data()};
  make_context_current(device.index());
  if (LaunchRecorder* recorder = LaunchRecorder::current()) recorder->refuse();
  const bool injected = has_injected_fault(kernel, Fault::Launch);
  const CUresult r = injected ? kInjectedLaunchError
                              : api->cuLaunchCooperativeKernel(fn, static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y),
                                                               1, static_cast<unsigned>(block), 1, 1, 0,
                                                               current_stream(device), args);
  if (r == CUDA_SUCCESS) return;
  const char* what = injected ? "cuLaunchCooperativeKernel (injected by debug_fail_kernels)" : "cuLaunchCooperativeKernel";
  if (capture_error(r)) throw Error(cu_error_message(r, what) + " (" + kernel.name + ", while capturing a CUDA graph)");
  if (!poisons_context(r)) throw KernelFailure(cu_error_message(r, what) + " (" + kernel.name + ")", kernel.source);
  check_cu(r, what);
}

at::Tensor new_output(const std::vector<int64_t>& sizes, c10::ScalarType dtype, const c10::Device& device, bool poison) {
  at::Tensor t;
  if (device.is_cuda()) {
    // From the caching allocator directly: at::empty's dispatch costs about a microsecond, a
    // sizeable part of a launch-bound call. The allocator serves the current device and stream.
    const OnDevice on_device(device);
    t = at::detail::empty_generic(sizes, c10::GetAllocator(c10::DeviceType::CUDA),
                                  c10::DispatchKeySet(c10::DispatchKey::CUDA), dtype, {});
  } else {
    t = at::empty(sizes, at::TensorOptions().dtype(dtype).device(device));
  }
  if (!poison) return t;
  if (c10::isFloatingType(dtype)) t.fill_(std::numeric_limits<double>::quiet_NaN());
  else if (dtype == c10::ScalarType::Bool) t.fill_(true);
  else t.fill_(-123);
  return t;
}

}  // namespace runtime
}  // namespace torchfuse
