// The kernel cache: turns generated C++ translation units into a loaded shared object, once. In memory first
// (same key -> same SharedLibrary), then on disk under SINTER_CACHE_DIR, else compiled by the host toolchain
// (one compiler process per unit, in parallel) and stored. Loading a cached object is running code, so the disk
// cache is private to the user by construction: directories are created 0700; an entry that is not owned by the
// user or that others can write is refused (counted in `rejected`, logged on perf_hints) and rebuilt; every
// object's SHA-256 is checked before dlopen (a mismatch is counted in `corrupt`, logged, rebuilt); writes go to a
// temporary directory beside the entry and are published by one rename(), so concurrent processes never see a
// half-written entry. The compiler runs without a shell (posix_spawn with an argv array).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sinter::codegen::cpp {

// Bump when the calling convention between generated code and the runtime changes: old entries stop matching.
inline constexpr int kAbiVersion = 2;  // 2: sn_kargs gained the error flag

class SharedLibrary {  // a dlopen'ed object; dlclose on destruction
 public:
  // dlopen(path, RTLD_NOW | RTLD_LOCAL); throws sinter::Error with dlerror() on failure. `cleanup_dir`, when not
  // empty, is a private build directory removed when the library is closed.
  explicit SharedLibrary(const std::string& path, std::string cleanup_dir = "");
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  void* symbol(const std::string& name) const;  // throws InternalError when missing
  const std::string& path() const { return path_; }

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string cleanup_dir_;
};

struct CompiledObject {
  std::shared_ptr<SharedLibrary> library;
  std::string key;                        // hex SHA-256 of sources + toolchain + flags + cpu features + ABI
  std::string source_path;                // the first unit's source on disk (SINTER_DEBUG_DIR copy when set)
  std::vector<std::string> source_paths;  // every unit's source, in order
  enum class From { kCompiled, kMemory, kDisk } from = From::kCompiled;
  double seconds = 0;                     // wall time of compile_and_load
};

struct CompileOptions {
  std::vector<std::string> extra_flags;  // appended to the toolchain's flags (part of the key)
  // Where copies of the sources go, as kernels.cpp (not part of the key). Empty: SINTER_DEBUG_DIR when set.
  std::string debug_dir;
  // Ahead-of-time artifacts: a directory of objects named <units_digest(units)>.so. Unless `prebuilt`, the object
  // is built (or found) as usual and copied there; with `prebuilt`, it is loaded from there and nothing is
  // compiled: no toolchain is asked (the loading machine may have no compiler), and a missing object is an Error.
  std::string object_dir;
  bool prebuilt = false;
};

// `units`: complete translation units. The caller puts prelude() (codegen/cpp/prelude.h) at the top of each unit
// that needs it; nothing is prepended here. Units are compiled in parallel (one compiler process each, up to the
// core count) and linked, with libm, into one shared object. `name` is a readable prefix for files ("graph_3").
// Throws sinter::Error with the compiler's message and the kept source's path when compilation fails.
CompiledObject compile_and_load(const std::vector<std::string>& units, const std::string& name,
                                const CompileOptions& options = {});

// The SHA-256 of the units alone (what names an object in CompileOptions::object_dir).
std::string units_digest(const std::vector<std::string>& units);

// The key compile_and_load would use (for tests and explain).
std::string kernel_cache_key(const std::vector<std::string>& units, const CompileOptions& options = {});

// The first line of `compiler --version`, part of every key: run once per compiler file (its path, device, inode,
// size and modification time) and then read from the cache directory's v<abi>/compilers/ (or, where that is not
// usable, run once per process). Throws sinter::Error when the compiler fails to run.
std::string compiler_version(const std::string& compiler);

// The cache root: SINTER_CACHE_DIR, else $XDG_CACHE_HOME/sinter, else ~/.cache/sinter (read on every call).
std::string kernel_cache_dir();

struct KernelCacheStats {
  int64_t compiled = 0;      // objects built by the compiler
  int64_t memory_hits = 0;   // served from this process's loaded objects
  int64_t disk_hits = 0;     // loaded from the disk cache after the hash check
  int64_t rejected = 0;      // cache directories or entries refused (owner or permissions)
  int64_t corrupt = 0;       // entries whose object failed the hash check (truncated, modified) or was unreadable
  int64_t failures = 0;      // compilations that failed
};
KernelCacheStats kernel_cache_stats();  // process-wide counters (thread-safe)
void clear_memory_cache();              // tests: forget loaded objects (not the disk)

}  // namespace sinter::codegen::cpp
