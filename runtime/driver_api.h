// The CUDA driver API, loaded lazily with dlopen("libcuda.so.1") on first use, so that
// torchfuse loads and its CPU paths run on machines without a GPU driver.
#pragma once

#include <string>

#include <cuda.h>

namespace torchfuse {
namespace runtime {

struct DriverApi {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
};

// The loaded API, or nullptr when no driver is installed or cuInit fails (reason in *why).
const DriverApi* driver_api(std::string* why = nullptr);
// Throws torchfuse::Error naming `what` and the driver's message when r is not CUDA_SUCCESS.
void check_cu(CUresult r, const char* what);

// Per-device facts, cached.
struct DeviceInfo {
  int ordinal = 0;
  int sm_count = 0;
  int l2_bytes = 0;
  int cc_major = 0;
  int cc_minor = 0;
  std::string arch() const { return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor); }
};
const DeviceInfo& device_info(int ordinal);
// Makes the device's primary context (the one PyTorch uses) current on this thread.
void make_context_current(int ordinal);

}  // namespace runtime
}  // namespace torchfuse
