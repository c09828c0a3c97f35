// What planning needs to know of the device a kernel is for. One builder, for a device the
// runtime queried and for the offline target explain() and the logs assume (no GPU needed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "codegen/tuning.h"

namespace torchfuse {
namespace codegen {

struct DeviceTarget {
  int sm_count = 132;
  int max_cluster = 1;         // the largest thread-block cluster row schedules may use (1: none)
  bool bulk_copies = false;    // sm_90+ bulk copies: rows may be staged in shared memory
  int64_t l2_bytes = 50 << 20;  // looped rows size their blocks per multiprocessor by it
  bool cooperative_launch = false;  // every block of a grid resident at once: split column passes
};

// The facts a target is made of (from the driver, or assumed offline).
struct DeviceFacts {
  int cc_major = 9;
  int sm_count = 132;
  int64_t l2_bytes = 50 << 20;
  bool cluster_launch = true;    // the driver has cuLaunchKernelEx
  bool occupancy_query = true;   // the driver has cuOccupancyMaxActiveBlocksPerMultiprocessor
  bool cooperative_launch = true;  // the driver has cuLaunchCooperativeKernel
};

// The compute capability's major number of a real architecture name ("sm_80" -> 8, "sm_90a" -> 9,
// "sm_100" -> 10), or nullopt when `arch` is not one.
std::optional<int> arch_major(const std::string& arch);
// Clusters (up to tuning.row_cluster blocks) and bulk copies from sm_90 on.
DeviceTarget device_target(const DeviceFacts& facts, const Tuning& tuning);
// An H100-class part (132 multiprocessors, 50 MB of L2) of architecture `arch` ("sm_90", "sm_80";
// a name arch_major does not take plans as for a part without clusters or bulk copies).
DeviceTarget offline_target(const std::string& arch, const Tuning& tuning);

}  // namespace codegen
}  // namespace torchfuse
