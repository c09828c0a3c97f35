#include "runtime/driver_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "codegen/device_target.h"
#include "runtime/dl_util.h"
#include "src/error.h"

namespace torchfuse {
namespace runtime {
namespace {

struct Loaded {
  DriverApi api{};
  bool ok = false;
  std::string why;
};

template <typename F>
bool bind(void* lib, const char* name, F& fn, std::string& why) {
  return bind_symbol(lib, "libcuda", name, fn, why);
}

// The name cuda.h maps `x` to (cuEventDestroy -> "cuEventDestroy_v2"): what libcuda exports.
#define TORCHFUSE_CU_SYMBOL(x) TORCHFUSE_CU_STRINGIFY(x)
#define TORCHFUSE_CU_STRINGIFY(x) #x

// An optional entry point: the name cuda.h maps to, else the unversioned one, else null.
template <typename F>
void bind_optional(void* lib, const char* mapped, const char* plain, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, mapped));
  if (!fn) fn = reinterpret_cast<F>(dlsym(lib, plain));
}

void bind_events(void* lib, DriverApi& a) {
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuEventCreate), "cuEventCreate", a.cuEventCreate);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuEventRecord), "cuEventRecord", a.cuEventRecord);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuEventQuery), "cuEventQuery", a.cuEventQuery);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuEventSynchronize), "cuEventSynchronize", a.cuEventSynchronize);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuEventElapsedTime), "cuEventElapsedTime", a.cuEventElapsedTime);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuEventDestroy), "cuEventDestroy", a.cuEventDestroy);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuLaunchKernelEx), "cuLaunchKernelEx", a.cuLaunchKernelEx);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuLaunchCooperativeKernel), "cuLaunchCooperativeKernel", a.cuLaunchCooperativeKernel);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuOccupancyMaxActiveBlocksPerMultiprocessor),
                "cuOccupancyMaxActiveBlocksPerMultiprocessor", a.cuOccupancyMaxActiveBlocksPerMultiprocessor);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuStreamCreate), "cuStreamCreate", a.cuStreamCreate);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuStreamDestroy), "cuStreamDestroy", a.cuStreamDestroy);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuMemcpyDtoDAsync), "cuMemcpyDtoDAsync", a.cuMemcpyDtoDAsync);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuCtxGetCurrent), "cuCtxGetCurrent", a.cuCtxGetCurrent);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuStreamWaitValue32), "cuStreamWaitValue32", a.cuStreamWaitValue32);
  bind_optional(lib, TORCHFUSE_CU_SYMBOL(cuMemsetD32Async), "cuMemsetD32Async", a.cuMemsetD32Async);
}

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.why = "no CUDA driver (libcuda.so.1 not found)";
    return l;
  }
  DriverApi& a = l.api;
  const bool bound = bind(lib, "cuInit", a.cuInit, l.why) && bind(lib, "cuDeviceGet", a.cuDeviceGet, l.why) &&
                     bind(lib, "cuDeviceGetCount", a.cuDeviceGetCount, l.why) &&
                     bind(lib, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, l.why) &&
                     bind(lib, "cuDevicePrimaryCtxRetain", a.cuDevicePrimaryCtxRetain, l.why) &&
                     bind(lib, "cuCtxSetCurrent", a.cuCtxSetCurrent, l.why) &&
                     bind(lib, "cuModuleLoadData", a.cuModuleLoadData, l.why) &&
                     bind(lib, "cuModuleGetFunction", a.cuModuleGetFunction, l.why) &&
                     bind(lib, "cuLaunchKernel", a.cuLaunchKernel, l.why) &&
                     bind(lib, "cuGetErrorString", a.cuGetErrorString, l.why) &&
                     bind(lib, "cuFuncSetAttribute", a.cuFuncSetAttribute, l.why);
  if (!bound) return l;
  bind_events(lib, a);
  const CUresult r = a.cuInit(0);
  if (r != CUDA_SUCCESS) {
    l.why = "cuInit failed with code " + std::to_string(static_cast<int>(r));
    return l;
  }
  int count = 0;
  if (a.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    l.why = "the CUDA driver reports no devices";
    return l;
  }
  l.ok = true;
  return l;
}

}  // namespace

const DriverApi* driver_api(std::string* why) {
  static const Loaded loaded = load();
  if (why) *why = loaded.why;
  return loaded.ok ? &loaded.api : nullptr;
}

bool DriverApi::has_events() const {
  return cuEventCreate && cuEventRecord && cuEventQuery && cuEventSynchronize && cuEventElapsedTime && cuEventDestroy;
}

std::string cu_error_message(CUresult r, const char* what) {
  const char* msg = "unknown error";
  if (const DriverApi* api = driver_api()) api->cuGetErrorString(r, &msg);
  return std::string("torchfuse: CUDA driver call ") + what + " failed: " + (msg ? msg : "unknown error") +
         " (code " + std::to_string(static_cast<int>(r)) + ")";
}

void check_cu(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw Error(cu_error_message(r, what));
}

bool capture_error(CUresult r) {
  switch (r) {
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_MERGE:
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
    case CUDA_ERROR_CAPTURED_EVENT:
      return true;
    default:
      return false;
  }
}

bool poisons_context(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

namespace {

const DriverApi& require_api() {
  std::string why;
  const DriverApi* api = driver_api(&why);
  TORCHFUSE_CHECK(api != nullptr, "torchfuse: the CUDA driver is not usable: ", why);
  return *api;
}

struct DeviceState {
  DeviceInfo info;
  CUcontext primary = nullptr;
};

// Read on every launch: a device's state, once made, is found without the lock (never destroyed).
constexpr int kFastOrdinals = 64;
std::array<std::atomic<DeviceState*>, kFastOrdinals> known_states{};

DeviceState& device_state(int ordinal) {
  const bool fast = ordinal >= 0 && ordinal < kFastOrdinals;
  if (fast) {
    if (DeviceState* known = known_states[ordinal].load(std::memory_order_acquire)) return *known;
  }
  static std::mutex mu;
  static std::map<int, std::unique_ptr<DeviceState>> states;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = states[ordinal];
  if (slot) return *slot;
  const DriverApi& api = require_api();
  auto s = std::make_unique<DeviceState>();
  CUdevice dev;
  check_cu(api.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  s->info.ordinal = ordinal;
  check_cu(api.cuDeviceGetAttribute(&s->info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
           "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  check_cu(api.cuDeviceGetAttribute(&s->info.l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev), "cuDeviceGetAttribute(L2)");
  check_cu(api.cuDeviceGetAttribute(&s->info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
           "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  check_cu(api.cuDeviceGetAttribute(&s->info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
           "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  check_cu(api.cuDevicePrimaryCtxRetain(&s->primary, dev), "cuDevicePrimaryCtxRetain");
  slot = std::move(s);
  if (fast) known_states[ordinal].store(slot.get(), std::memory_order_release);
  return *slot;
}

}  // namespace

const DeviceInfo& device_info(int ordinal) { return device_state(ordinal).info; }

codegen::DeviceTarget target_of(const DeviceInfo& info, const codegen::Tuning& tuning) {
  codegen::DeviceFacts facts;
  facts.cc_major = info.cc_major;
  facts.sm_count = info.sm_count;
  facts.l2_bytes = info.l2_bytes;
  facts.cluster_launch = require_api().cuLaunchKernelEx != nullptr;
  facts.occupancy_query = require_api().cuOccupancyMaxActiveBlocksPerMultiprocessor != nullptr;
  facts.cooperative_launch = require_api().cuLaunchCooperativeKernel != nullptr;
  return codegen::device_target(facts, tuning);
}

void make_context_current(int ordinal) {
  const DriverApi& api = require_api();
  const CUcontext primary = device_state(ordinal).primary;
  CUcontext current = nullptr;
  if (api.cuCtxGetCurrent && api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == primary) return;
  check_cu(api.cuCtxSetCurrent(primary), "cuCtxSetCurrent");
}

}  // namespace runtime
}  // namespace torchfuse
