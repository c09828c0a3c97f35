// Entry points of a library opened with dlopen (the driver API, cuBLASLt).
#pragma once

#include <dlfcn.h>

#include <string>

namespace torchfuse {
namespace runtime {

// Binds `fn` to `library`'s symbol `name`; when it is missing, `why` names both.
template <typename F>
bool bind_symbol(void* lib, const char* library, const char* name, F& fn, std::string& why) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) why = std::string(library) + " has no " + name;
  return fn != nullptr;
}

}  // namespace runtime
}  // namespace torchfuse
