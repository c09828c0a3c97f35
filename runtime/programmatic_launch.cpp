#include "runtime/programmatic_launch.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace torchfuse {
namespace runtime {
namespace {

std::atomic<bool>& switch_state() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("TORCHFUSE_PDL");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }()};
  return on;
}

std::atomic<bool> extended{false};

}  // namespace

void set_extended_launch(bool on) { extended.store(on, std::memory_order_relaxed); }

bool extended_launch_switched_on() { return extended.load(std::memory_order_relaxed); }

void set_programmatic_launch(bool on) { switch_state().store(on, std::memory_order_relaxed); }

bool programmatic_launch_switched_on() { return switch_state().load(std::memory_order_relaxed); }

bool programmatic_launch(int device) {
  if (!programmatic_launch_switched_on()) return false;
  const DriverApi* api = driver_api();
  return api != nullptr && api->cuLaunchKernelEx != nullptr && device_info(device).cc_major >= 9;
}

CUresult launch_function(CUfunction fn, unsigned grid_x, unsigned grid_y, unsigned block, unsigned shared_bytes,
                         CUstream stream, void** args, bool programmatic) {
  const DriverApi* api = driver_api();
  const bool ex = programmatic || (extended_launch_switched_on() && api->cuLaunchKernelEx != nullptr);
  if (!ex) return api->cuLaunchKernel(fn, grid_x, grid_y, 1, block, 1, 1, shared_bytes, stream, args, nullptr);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid_x;
  config.gridDimY = grid_y;
  config.gridDimZ = 1;
  config.blockDimX = block;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = shared_bytes;
  config.hStream = stream;
  config.attrs = programmatic ? &attr : nullptr;
  config.numAttrs = programmatic ? 1 : 0;
  return api->cuLaunchKernelEx(&config, fn, args, nullptr);
}

}  // namespace runtime
}  // namespace torchfuse
