// Two kinds of errors:
//  - TORCHFUSE_CHECK(cond, msg...): a user-facing check (bad input, unsupported request).
//    Throws torchfuse::Error with the message.
//  - TORCHFUSE_INTERNAL_ASSERT(cond, msg...): an invariant of torchfuse itself. Failing it is a
//    torchfuse bug; the message says so and names the file and line.
#pragma once

#include <sstream>
#include <string>

#include "torchfuse/torchfuse.h"

namespace torchfuse {
namespace detail {

inline void append_all(std::ostringstream&) {}
template <typename T, typename... Rest>
void append_all(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append_all(os, rest...);
}

template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  append_all(os, args...);
  return os.str();
}

[[noreturn]] void throw_internal(const char* file, int line, const char* cond, const std::string& msg);

}  // namespace detail
}  // namespace torchfuse

#define TORCHFUSE_CHECK(cond, ...)                                   \
  do {                                                               \
    if (!(cond)) {                                                   \
      throw ::torchfuse::Error(::torchfuse::detail::cat(__VA_ARGS__)); \
    }                                                                \
  } while (0)

#define TORCHFUSE_INTERNAL_ASSERT(cond, ...)                                                  \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      ::torchfuse::detail::throw_internal(__FILE__, __LINE__, #cond,                          \
                                          ::torchfuse::detail::cat(__VA_ARGS__));              \
    }                                                                                         \
  } while (0)
