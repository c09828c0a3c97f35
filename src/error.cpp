#include "src/error.h"

namespace torchfuse {
namespace detail {

void throw_internal(const char* file, int line, const char* cond, const std::string& msg) {
  throw Error(cat("torchfuse internal error (this is a torchfuse bug, please report it) at ", file,
                  ":", line, ": expected ", cond, (msg.empty() ? "" : ": "), msg));
}

}  // namespace detail
}  // namespace torchfuse
