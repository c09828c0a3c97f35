#include "codegen/device_target.h"

#include <algorithm>

namespace torchfuse {
namespace codegen {

std::optional<int> arch_major(const std::string& arch) {
  if (arch.compare(0, 3, "sm_") != 0) return std::nullopt;
  const std::string digits = arch.substr(3, arch.size() - 3 - (arch.back() == 'a' ? 1 : 0));
  if (digits.size() < 2 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(digits.substr(0, digits.size() - 1));  // the last digit is the minor number
}

DeviceTarget device_target(const DeviceFacts& facts, const Tuning& tuning) {
  DeviceTarget t;
  t.sm_count = facts.sm_count;
  t.max_cluster = facts.cc_major >= 9 && facts.cluster_launch ? std::max(1, tuning.row_cluster) : 1;
  t.bulk_copies = facts.cc_major >= 9 && facts.occupancy_query;
  t.l2_bytes = facts.l2_bytes;
  // (The launch caps the split by the occupancy it reads off the driver.)
  t.cooperative_launch = facts.cooperative_launch && facts.occupancy_query;
  return t;
}

DeviceTarget offline_target(const std::string& arch, const Tuning& tuning) {
  DeviceFacts facts;
  facts.cc_major = arch_major(arch).value_or(0);
  return device_target(facts, tuning);
}

}  // namespace codegen
}  // namespace torchfuse
