// The CUDA driver API, loaded lazily with dlopen("libcuda.so.1") on first use, so that
// torchfuse loads and its CPU paths run on machines without a GPU driver.
#pragma once

#include <string>

#include <cuda.h>

#include "codegen/device_target.h"

namespace torchfuse {
namespace runtime {

struct DriverApi {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  // Read before each launch: the context is set only when another one is current.
  decltype(&::cuCtxGetCurrent) cuCtxGetCurrent;
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void**, void**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuFuncSetAttribute)(CUfunction, CUfunction_attribute, int);
  // CUDA events, for CompileOptions::profile_kernels. Null when the driver lacks them (then
  // profiling is unavailable, everything else still works). decltype follows cuda.h, which may
  // map a name to a versioned entry point (cuEventElapsedTime -> cuEventElapsedTime_v2).
  decltype(&::cuEventCreate) cuEventCreate;
  decltype(&::cuEventRecord) cuEventRecord;
  decltype(&::cuEventQuery) cuEventQuery;
  decltype(&::cuEventSynchronize) cuEventSynchronize;
  decltype(&::cuEventElapsedTime) cuEventElapsedTime;
  decltype(&::cuEventDestroy) cuEventDestroy;
  bool has_events() const;
  // Launches with attributes (thread-block clusters); null on drivers before CUDA 12, where no
  // schedule asks for clusters (target_of gives a max_cluster of 1).
  decltype(&::cuLaunchKernelEx) cuLaunchKernelEx;
  // Grids whose blocks are all resident at once (split column passes wait for each other).
  decltype(&::cuLaunchCooperativeKernel) cuLaunchCooperativeKernel;
  // Blocks of a kernel resident per multiprocessor (staged rows size their grid by it).
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) cuOccupancyMaxActiveBlocksPerMultiprocessor;
  // Streams of torchfuse's own (CUDA graph captures, runtime/cuda_graphs.h); null when missing.
  decltype(&::cuStreamCreate) cuStreamCreate;
  decltype(&::cuStreamDestroy) cuStreamDestroy;
  // Copies into and out of CUDA graphs' static buffers (cheaper on the host than ATen's copy_).
  decltype(&::cuMemcpyDtoDAsync) cuMemcpyDtoDAsync;
  // Holding a stream until its queue is filled (timing GEMM candidates, runtime/gemm_autotune.h);
  // null when missing (then candidates are timed without the hold).
  decltype(&::cuStreamWaitValue32) cuStreamWaitValue32;
  decltype(&::cuMemsetD32Async) cuMemsetD32Async;
};

// The loaded API, or nullptr when no driver is installed or cuInit fails (reason in *why).
const DriverApi* driver_api(std::string* why = nullptr);
// Throws torchfuse::Error naming `what` and the driver's message when r is not CUDA_SUCCESS.
void check_cu(CUresult r, const char* what);
// "torchfuse: CUDA driver call <what> failed: <message> (code N)": what check_cu throws.
std::string cu_error_message(CUresult r, const char* what);
// Errors after which the CUDA context is unusable (an illegal address, a trap, a kernel fault
// reported by a later call): nothing can run on the device any more, ATen included.
bool poisons_context(CUresult r);
// Errors of a CUDA graph capture in progress (runtime/graph_capture.h): the capture fails, not
// the kernel that was being launched.
bool capture_error(CUresult r);

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
// What the kernel planner needs to know of the device (codegen::device_target): clusters of up
// to Tuning::row_cluster blocks on compute capability 9.0 and newer with a driver that launches
// them, bulk copies there with a driver that answers occupancy queries (staged rows size their
// grid by them), the multiprocessors and the L2 size.
codegen::DeviceTarget target_of(const DeviceInfo& info, const codegen::Tuning& tuning);
// Makes the device's primary context (the one PyTorch uses) current on this thread.
void make_context_current(int ordinal);

}  // namespace runtime
}  // namespace torchfuse
