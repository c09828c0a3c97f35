// Where a compiled module's knobs come from: the defaults, then $TORCHFUSE_TUNE (read once per
// process), then CompileOptions::tune. The result is a value each module keeps and hands down;
// below the runtime nothing reads a global.
#pragma once

#include <string>

#include "codegen/tuning.h"

namespace torchfuse {
namespace runtime {

// The defaults with $TORCHFUSE_TUNE applied (or what a ScopedTuning set). A malformed
// $TORCHFUSE_TUNE is an Error.
codegen::Tuning process_tuning();
// process_tuning() with a module's own overrides (CompileOptions::tune) applied.
codegen::Tuning resolve_tuning(const std::string& module_spec);

// Tests: replaces process_tuning() while alive, for modules compiled meanwhile (not
// thread-safe: no concurrent compiles).
class ScopedTuning {
 public:
  explicit ScopedTuning(const codegen::Tuning& t);
  ~ScopedTuning();
  ScopedTuning(const ScopedTuning&) = delete;
  ScopedTuning& operator=(const ScopedTuning&) = delete;

 private:
  codegen::Tuning saved_;
};

}  // namespace runtime
}  // namespace torchfuse
