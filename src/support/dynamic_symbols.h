// Resolving a library's entry points after dlopen (the CUDA driver, NVRTC): each missing name is appended to a
// comma-separated list, so a caller can say every symbol an old library lacks at once.
#pragma once
#include <dlfcn.h>

#include <string>

namespace sinter::support {

template <class F>
bool resolve_symbol(void* lib, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

}  // namespace sinter::support
