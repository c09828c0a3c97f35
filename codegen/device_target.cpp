#include "codegen/device_target.h"

#include <algorithm>
#include <cstdlib>

namespace torchfuse {
namespace codegen {

DeviceTarget device_target(const DeviceFacts& facts, const Tuning& tuning) {
  DeviceTarget t;
  t.sm_count = facts.sm_count;
  t.max_cluster = facts.cc_major >= 9 && facts.cluster_launch ? std::max(1, tuning.row_cluster) : 1;
  t.bulk_copies = facts.cc_major >= 9 && facts.occupancy_query;
  t.l2_bytes = facts.l2_bytes;
  return t;
}

DeviceTarget offline_target(const std::string& arch, const Tuning& tuning) {
  DeviceFacts facts;
  facts.cc_major = 0;
  if (arch.size() > 4 && arch.compare(0, 3, "sm_") == 0) facts.cc_major = std::atoi(arch.substr(3, arch.size() - 4).c_str());
  return device_target(facts, tuning);
}

}  // namespace codegen
}  // namespace torchfuse
