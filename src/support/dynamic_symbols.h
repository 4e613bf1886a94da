// Resolving a library's entry points after dlopen (the CUDA driver, NVRTC): each missing name is appended to a
// comma-separated list, so a caller can say every symbol an old library lacks at once.
#pragma once
#include <dlfcn.h>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace sinter::support {

template <class F>
bool resolve_symbol(void* lib, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

// dlopen of the first of `paths` that opens (RTLD_NOW | RTLD_LOCAL), or null with each path's dlerror appended to
// `tried` ("\n  path: error").
inline void* open_first(const std::vector<std::string>& paths, std::string& tried) {
  for (const std::string& p : paths) {
    if (void* lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* e = dlerror();
    tried += fmt::format("\n  {}: {}", p, e ? e : "unknown error");
  }
  return nullptr;
}

}  // namespace sinter::support
