#include "runtime/driver_api.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>

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
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) why = std::string("libcuda has no ") + name;
  return fn != nullptr;
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

void check_cu(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = "unknown error";
  if (const DriverApi* api = driver_api()) api->cuGetErrorString(r, &msg);
  throw Error(std::string("torchfuse: CUDA driver call ") + what + " failed: " + msg + " (code " +
              std::to_string(static_cast<int>(r)) + ")");
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

DeviceState& device_state(int ordinal) {
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
  return *slot;
}

}  // namespace

const DeviceInfo& device_info(int ordinal) { return device_state(ordinal).info; }

void make_context_current(int ordinal) {
  check_cu(require_api().cuCtxSetCurrent(device_state(ordinal).primary), "cuCtxSetCurrent");
}

}  // namespace runtime
}  // namespace torchfuse
