#include "runtime/failure_injection.h"

#include <cstdlib>
#include <sstream>

#include "src/error.h"

namespace torchfuse {
namespace runtime {
namespace {

constexpr const char* kRuntimePrefix = "runtime:";
constexpr const char* kNvrtcMark = "#error torchfuse: injected failure (debug_fail_kernels)";
constexpr const char* kLoadMark = "// torchfuse: injected fault: load (debug_fail_kernels)";
constexpr const char* kLaunchMark = "// torchfuse: injected fault: launch (debug_fail_kernels)";

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

const char* mark_of(Fault kind) {
  switch (kind) {
    case Fault::Nvrtc: return kNvrtcMark;
    case Fault::Load: return kLoadMark;
    case Fault::Launch: return kLaunchMark;
    case Fault::Oom:
    case Fault::Wrong: break;
  }
  return nullptr;
}

bool parse_kind(const std::string& name, Fault* kind) {
  for (Fault k : {Fault::Nvrtc, Fault::Load, Fault::Launch, Fault::Oom, Fault::Wrong}) {
    if (name == fault_name(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

}  // namespace

const char* fault_name(Fault fault) {
  switch (fault) {
    case Fault::Nvrtc: return "nvrtc";
    case Fault::Load: return "load";
    case Fault::Launch: return "launch";
    case Fault::Oom: return "oom";
    case Fault::Wrong: return "wrong";
  }
  return "?";
}

FailureInjection FailureInjection::parse(const std::string& spec) {
  FailureInjection f;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;  // "a,,b" and a trailing comma
    const auto bad = [&](const std::string& why) {
      return Error("torchfuse: debug_fail_kernels entry '" + item + "': " + why +
                   " (entries: [nvrtc|load|launch|oom[#count]|wrong:][runtime:]<kernel name substring or *>)");
    };
    Entry e;
    std::string rest = item;
    const auto colon = rest.find(':');
    if (colon != std::string::npos && rest.compare(0, colon + 1, kRuntimePrefix) != 0) {
      std::string head = trim(rest.substr(0, colon));
      rest = trim(rest.substr(colon + 1));
      const auto hash = head.find('#');
      std::string count;
      if (hash != std::string::npos) {
        count = trim(head.substr(hash + 1));
        head = trim(head.substr(0, hash));
      }
      if (!parse_kind(head, &e.kind)) throw bad("unknown fault kind '" + head + "'");
      if (hash != std::string::npos) {
        if (e.kind != Fault::Oom) throw bad("only oom faults take a count (the others fall back for good)");
        char* end = nullptr;
        const long long n = std::strtoll(count.c_str(), &end, 10);
        if (count.empty() || *end != '\0' || n < 1) throw bad("the count must be a whole number of at least 1");
        e.remaining = std::make_shared<std::atomic<int64_t>>(n);
      }
    }
    if (rest.rfind(kRuntimePrefix, 0) == 0) {
      if (e.kind == Fault::Oom || e.kind == Fault::Wrong) {
        throw bad(std::string(fault_name(e.kind)) + " faults happen at run time only; runtime: does not apply");
      }
      e.runtime_only = true;
      rest = trim(rest.substr(std::string(kRuntimePrefix).size()));
    }
    if (rest.empty()) throw bad("no kernel named (* names every kernel)");
    e.pattern = rest;
    f.entries_.push_back(std::move(e));
  }
  return f;
}

std::string FailureInjection::spec_from(const std::string& option) {
  if (!option.empty()) return option;
  const char* env = std::getenv("TORCHFUSE_DEBUG_FAIL_KERNELS");
  return env ? env : "";
}

bool FailureInjection::names(const Entry& e, const std::string& kernel_name) {
  return e.pattern == "*" || kernel_name.find(e.pattern) != std::string::npos;
}

bool FailureInjection::matches(Fault kind, const std::string& kernel_name, bool runtime_variant) const {
  for (const Entry& e : entries_) {
    if (e.kind != kind || (e.runtime_only && !runtime_variant)) continue;
    if (names(e, kernel_name)) return true;
  }
  return false;
}

codegen::GeneratedKernel FailureInjection::apply(codegen::GeneratedKernel kernel, bool runtime_variant) const {
  // Launch, then load, then NVRTC: the mark of the earliest failure ends up first.
  for (Fault kind : {Fault::Launch, Fault::Load, Fault::Nvrtc}) {
    if (matches(kind, kernel.name, runtime_variant)) kernel = with_injected_fault(std::move(kernel), kind);
  }
  return kernel;
}

bool FailureInjection::take_oom(const std::string& kernel_name) const {
  for (const Entry& e : entries_) {
    if (e.kind != Fault::Oom || !names(e, kernel_name)) continue;
    if (!e.remaining) return true;
    // Uses up one fault, never below zero, when several threads call at once.
    int64_t left = e.remaining->load();
    while (left > 0 && !e.remaining->compare_exchange_weak(left, left - 1)) {
    }
    if (left > 0) return true;
  }
  return false;
}

codegen::GeneratedKernel with_injected_failure(codegen::GeneratedKernel kernel) {
  return with_injected_fault(std::move(kernel), Fault::Nvrtc);
}

codegen::GeneratedKernel with_injected_fault(codegen::GeneratedKernel kernel, Fault kind) {
  const char* mark = mark_of(kind);
  TORCHFUSE_INTERNAL_ASSERT(mark != nullptr, fault_name(kind), " faults do not mark the source");
  kernel.source = std::string(mark) + "\n" + kernel.source;
  kernel.id = 0;  // another source: no shared identity
  return kernel;
}

bool has_injected_fault(const codegen::GeneratedKernel& kernel, Fault kind) {
  const char* mark = mark_of(kind);
  if (!mark) return false;
  // The marks are the source's first lines; a generated kernel starts with a comment of its own.
  const std::string& s = kernel.source;
  for (size_t pos = 0; pos < s.size();) {
    const size_t end = s.find('\n', pos);
    const size_t len = (end == std::string::npos ? s.size() : end) - pos;
    const bool is_mark = s.compare(pos, len, kNvrtcMark) == 0 || s.compare(pos, len, kLoadMark) == 0 ||
                         s.compare(pos, len, kLaunchMark) == 0;
    if (!is_mark) return false;
    if (s.compare(pos, len, mark) == 0) return true;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return false;
}

}  // namespace runtime
}  // namespace torchfuse
