#include "runtime/process_tuning.h"

#include <cstdlib>

namespace torchfuse {
namespace runtime {
namespace {

codegen::Tuning& process_knobs() {
  static codegen::Tuning t = [] {
    const char* env = std::getenv("TORCHFUSE_TUNE");
    return codegen::parse_tuning(env ? env : "");
  }();
  return t;
}

}  // namespace

codegen::Tuning process_tuning() { return process_knobs(); }

codegen::Tuning resolve_tuning(const std::string& module_spec) {
  return codegen::parse_tuning(module_spec, process_knobs(), "CompileOptions::tune");
}

ScopedTuning::ScopedTuning(const codegen::Tuning& t) : saved_(process_knobs()) { process_knobs() = t; }
ScopedTuning::~ScopedTuning() { process_knobs() = saved_; }

}  // namespace runtime
}  // namespace torchfuse
