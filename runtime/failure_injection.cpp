#include "runtime/failure_injection.h"

#include <cstdlib>
#include <sstream>

namespace torchfuse {
namespace runtime {
namespace {

constexpr const char* kRuntimePrefix = "runtime:";

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

FailureInjection FailureInjection::parse(const std::string& spec) {
  FailureInjection f;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    Entry e;
    e.pattern = trim(item);
    if (e.pattern.rfind(kRuntimePrefix, 0) == 0) {
      e.runtime_only = true;
      e.pattern = trim(e.pattern.substr(std::string(kRuntimePrefix).size()));
    }
    if (!e.pattern.empty()) f.entries_.push_back(std::move(e));
  }
  return f;
}

std::string FailureInjection::spec_from(const std::string& option) {
  if (!option.empty()) return option;
  const char* env = std::getenv("TORCHFUSE_DEBUG_FAIL_KERNELS");
  return env ? env : "";
}

bool FailureInjection::matches(const std::string& kernel_name, bool runtime_variant) const {
  for (const Entry& e : entries_) {
    if (e.runtime_only && !runtime_variant) continue;
    if (e.pattern == "*" || kernel_name.find(e.pattern) != std::string::npos) return true;
  }
  return false;
}

codegen::GeneratedKernel with_injected_failure(codegen::GeneratedKernel kernel) {
  kernel.source = "#error torchfuse: injected failure (debug_fail_kernels)\n" + kernel.source;
  kernel.id = 0;  // another source: no shared identity
  return kernel;
}

}  // namespace runtime
}  // namespace torchfuse
