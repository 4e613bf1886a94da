#include "codegen/cpp/kernel_cache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <ctime>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "codegen/cpp/toolchain.h"
#include "support/cache_files.h"
#include "codegen/cpp/compiler_driver.h"
#include "support/sha256.h"
#include "support/subprocess.h"
#include "sinter/error.h"
#include "sinter/compile.h"
#include "support/check.h"
#include "support/log.h"
#include "support/warning.h"

namespace sinter::codegen::cpp {

using support::errno_text;
using support::make_dirs;
using support::make_temp_dir;
using support::read_file;
using support::remove_tree;
using support::sha256_hex;
using support::Sha256;
using support::why_not_private;
using support::write_new_file;

SharedLibrary::SharedLibrary(const std::string& path, std::string cleanup_dir)
    : path_(path), cleanup_dir_(std::move(cleanup_dir)) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = ::dlerror();
    if (!cleanup_dir_.empty()) remove_tree(cleanup_dir_);
    throw Error(fmt::format("sinter: cannot load the compiled kernels {}: {}", path, why ? why : "unknown error"));
  }
}

SharedLibrary::~SharedLibrary() {
  if (handle_) ::dlclose(handle_);
  if (!cleanup_dir_.empty()) remove_tree(cleanup_dir_);
}

void* SharedLibrary::symbol(const std::string& name) const {
  ::dlerror();
  void* p = ::dlsym(handle_, name.c_str());
  SINTER_INTERNAL_ASSERT(p != nullptr, "symbol {} not found in {}", name, path_);
  return p;
}

namespace {

using Clock = std::chrono::steady_clock;

// The process-wide registry of loaded objects and the counters. A key being built is represented by a future, so a
// second thread asking for it waits for the first instead of compiling again.
struct LoadedEntry {
  std::shared_ptr<SharedLibrary> library;
  std::vector<std::string> source_paths;
};
using LoadedFuture = std::shared_future<std::shared_ptr<const LoadedEntry>>;

struct Registry {
  std::mutex mutex;
  std::map<std::string, LoadedFuture> loaded;
  std::atomic<int64_t> compiled{0}, memory_hits{0}, disk_hits{0}, rejected{0}, corrupt{0}, failures{0};
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string home_dir() {
  std::string home = env_or("HOME", "");
  if (!home.empty()) return home;
  if (const passwd* pw = ::getpwuid(::geteuid())) return pw->pw_dir;
  return "/tmp";
}

std::string make_absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[4096];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) + "/" + path : path;
}

// File names keep only characters that need no quoting anywhere.
std::string safe_name(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 64))
    out.push_back((std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_');
  if (out.empty() || out[0] == '.') out.insert(0, "kernel");
  return out;
}

std::string source_file_name(const std::string& name, size_t index, size_t count) {
  return count == 1 ? name + ".cpp" : fmt::format("{}_{}.cpp", name, index);
}

// The manifest of an entry: what the object must hash to, and which sources it was built from.
struct Manifest {
  std::string key, object_sha256;
  size_t object_size = 0;
  std::vector<std::string> sources;
};

std::string format_manifest(const Manifest& m) {
  std::string out = fmt::format("sinter-kernel-cache 1\nkey {}\nobject kernel.so {} {}\n", m.key, m.object_size,
                                m.object_sha256);
  for (const std::string& s : m.sources) out += "source " + s + "\n";
  return out;
}

bool parse_manifest(const std::string& text, Manifest& m) {
  size_t pos = 0;
  bool header = false, object = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) return false;  // a manifest always ends with a newline: this one was cut
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    char hash[65] = {0};
    unsigned long long size = 0;
    if (line == "sinter-kernel-cache 1") header = true;
    else if (line.rfind("key ", 0) == 0) m.key = line.substr(4);
    else if (std::sscanf(line.c_str(), "object kernel.so %llu %64s", &size, hash) == 2)
      m.object_size = size, m.object_sha256 = hash, object = true;
    else if (line.rfind("source ", 0) == 0) m.sources.push_back(line.substr(7));
    else return false;
  }
  return header && object && !m.sources.empty();
}

struct Request {
  const std::vector<std::string>& units;
  std::string name;
  const CompileOptions& options;
  const Toolchain& toolchain;
  std::string key;
};

struct Loaded {
  std::shared_ptr<SharedLibrary> library;
  std::vector<std::string> sources;
  CompiledObject::From from = CompiledObject::From::kCompiled;
};

void log_refusal(const std::string& what, const std::string& path, const std::string& why) {
  SINTER_LOG(kPerfHints, "kernel cache: refused {} {}: {}; compiling instead", what, path, why);
}

// A cache directory that cannot be used makes every process compile from scratch: the user hears it once,
// without any log setting, with what to do.
void warn_cache_dir(const std::string& path, const std::string& why) {
  warn_once("kernel-cache-dir:" + path,
            fmt::format("kernel cache: not using {}: {}; compiled kernels are not kept between processes (make it a "
                        "directory of yours, mode 0700, or set SINTER_CACHE_DIR to one)",
                        path, why));
}

// Leftovers in a shard: "<key>.tmp-<pid>-XXXXXX" (a build in progress, or of a process killed mid-compile) and
// "<key>.discarded-<pid>-<n>" (an entry moved aside that could not be deleted). One is removed when its process is
// gone (kill(pid, 0) says so) and it has not changed for kDeadAfter, or when it has not changed for kAnyAfter
// whatever its pid says (a pid reused by another process, a pid of another host sharing the cache, a name
// without a pid from an older sinter). A live build writes into its directory, which keeps its mtime fresh, and
// never takes as long as either delay; the delay for a gone pid guards a cache shared by hosts.
constexpr time_t kDeadAfter = 5 * 60, kAnyAfter = 60 * 60;

bool is_stale_leftover(const std::string& name, time_t age) {
  size_t at = name.find(".tmp-");
  size_t skip = 5;
  if (at == std::string::npos) at = name.find(".discarded-"), skip = 11;
  if (at == std::string::npos) return false;
  if (age > kAnyAfter) return true;
  if (age <= kDeadAfter) return false;
  const char* digits = name.c_str() + at + skip;
  char* end = nullptr;
  long pid = std::strtol(digits, &end, 10);
  if (end == digits || *end != '-' || pid <= 0 || pid == ::getpid()) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

void remove_stale_leftovers(const std::string& shard) {
  DIR* d = ::opendir(shard.c_str());
  if (!d) return;
  time_t now = ::time(nullptr);
  std::vector<std::string> stale;
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    struct stat st;
    std::string path = shard + "/" + name;
    if (::lstat(path.c_str(), &st) == 0 && is_stale_leftover(name, now - st.st_mtime)) stale.push_back(path);
  }
  ::closedir(d);
  for (const std::string& path : stale) {
    SINTER_LOG(kPerfHints, "kernel cache: removing {}, left by a process that ended mid-compile", path);
    remove_tree(path);
  }
}

// The first time this process builds into a cache root, every shard's leftovers are swept (a killed compile
// otherwise leaves its build directory for good when no entry of its shard is ever built again). Not on a hit:
// with a few thousand entries, stat-ing each took a warm process start several milliseconds.
void remove_stale_builds_once(const std::string& root) {
  static std::mutex mutex;
  static std::set<std::string> swept;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!swept.insert(root).second) return;
  }
  std::string abi_dir = fmt::format("{}/v{}", root, kAbiVersion);
  if (!why_not_private(abi_dir, true).empty()) return;  // absent, or refused later with a message
  DIR* d = ::opendir(abi_dir.c_str());
  if (!d) return;
  std::vector<std::string> shards;
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() == 2 && std::isxdigit(static_cast<unsigned char>(name[0])) &&
        std::isxdigit(static_cast<unsigned char>(name[1])))
      shards.push_back(abi_dir + "/" + name);
  }
  ::closedir(d);
  for (const std::string& shard : shards)
    if (why_not_private(shard, true).empty()) remove_stale_leftovers(shard);
}

// The directory <root>/v<abi>/<part> when the cache from its root down is private to this user, made where
// missing; "" when it is not (reported, when `report`: counted, logged and said once on stderr).
std::string usable_cache_dir(const std::string& part, bool report) {
  std::string root = make_absolute(kernel_cache_dir());
  if (std::string why = make_dirs(root); !why.empty()) {
    if (report) {
      SINTER_LOG(kPerfHints, "kernel cache: cannot use {}: {}; compiling into a temporary directory", root, why);
      warn_cache_dir(root, why);
    }
    return "";
  }
  auto refuse = [&](const std::string& dir, const std::string& why) {
    if (report) {
      registry().rejected++;
      log_refusal("cache directory", dir, why);
      warn_cache_dir(dir, why);
    }
    return std::string();
  };
  // The root may be a symbolic link the user made (followed); nothing below it is followed.
  if (std::string why = why_not_private(root, true, true); !why.empty()) return refuse(root, why);
  std::string dir = root;
  for (const std::string& name : {fmt::format("v{}", kAbiVersion), part}) {
    dir += "/" + name;
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      std::string why = fmt::format("cannot create {} ({})", dir, errno_text());
      if (report) {
        SINTER_LOG(kPerfHints, "kernel cache: {}", why);
        warn_cache_dir(dir, why);
      }
      return "";
    }
    if (std::string why = why_not_private(dir, true); !why.empty()) return refuse(dir, why);
  }
  return dir;
}

// The directory of an entry's shard (see usable_cache_dir): "" so the caller compiles into a private temporary
// directory.
std::string usable_shard_dir(const std::string& key) { return usable_cache_dir(key.substr(0, 2), true); }

// Moves an unusable entry out of the way (a rename inside our private shard, so it works even when the entry
// belongs to someone else), then deletes what it can.
void discard_entry(const std::string& entry) {
  static std::atomic<int> counter{0};
  std::string aside = fmt::format("{}.discarded-{}-{}", entry, ::getpid(), counter++);
  if (::rename(entry.c_str(), aside.c_str()) == 0) remove_tree(aside);
}

// Loads an entry after checking its ownership, modes and the object's hash. The hash is checked on a read of the
// file and dlopen reads it again; that is safe because every directory from the cache root down is private to
// this user, so nobody else can replace the file in between. Empty when there is no usable entry
// (a refused or corrupt one has been counted, logged and moved aside).
std::shared_ptr<SharedLibrary> load_entry(const std::string& entry, const std::string& key,
                                          std::vector<std::string>& sources) {
  struct stat st;
  if (::lstat(entry.c_str(), &st) != 0) return nullptr;
  for (auto [path, is_dir] : {std::pair{entry, true}, {entry + "/manifest", false}, {entry + "/kernel.so", false}}) {
    if (std::string why = why_not_private(path, is_dir); !why.empty()) {
      registry().rejected++;
      log_refusal("cache entry", path, why);
      discard_entry(entry);
      return nullptr;
    }
  }
  std::string manifest_text, object;
  Manifest m;
  std::string problem;
  if (!read_file(entry + "/manifest", manifest_text) || !parse_manifest(manifest_text, m)) problem = "unreadable manifest";
  else if (m.key != key) problem = "manifest of another key";
  else if (!read_file(entry + "/kernel.so", object)) problem = "unreadable object";
  else if (object.size() != m.object_size) problem = fmt::format("object has {} bytes, expected {} (truncated?)", object.size(), m.object_size);
  else if (sha256_hex(object) != m.object_sha256) problem = "object's SHA-256 does not match its manifest";
  if (problem.empty()) {
    try {
      auto lib = std::make_shared<SharedLibrary>(entry + "/kernel.so");
      for (const std::string& s : m.sources) sources.push_back(entry + "/" + s);
      return lib;
    } catch (const Error& e) {
      problem = e.what();
    }
  }
  registry().corrupt++;
  SINTER_LOG(kPerfHints, "kernel cache: corrupt entry {}: {}; rebuilding it", entry, problem);
  discard_entry(entry);
  return nullptr;
}

// Compiles into a fresh private directory under `parent` and, when `publish_as` is given, publishes the result
// there with one rename.
Loaded build(const Request& req, const std::string& parent, const std::string& publish_as) {
  // The pid in the name lets a later process tell a killed build from a running one (remove_stale_leftovers).
  std::string dir = make_temp_dir(parent, fmt::format("{}-{}-", publish_as.empty() ? "sinter-build" : req.key + ".tmp",
                                                      ::getpid()));
  SINTER_CHECK(!dir.empty(), "sinter: cannot create a build directory in {} ({})", parent, errno_text());
  Loaded out;
  std::vector<std::string> names;
  for (size_t i = 0; i < req.units.size(); ++i) {
    names.push_back(source_file_name(req.name, i, req.units.size()));
    out.sources.push_back(dir + "/" + names.back());
    if (std::string why = write_new_file(out.sources.back(), req.units[i]); !why.empty()) {
      remove_tree(dir);
      throw Error("sinter: " + why);
    }
  }
  BuildRequest br{&req.toolchain, req.options.extra_flags, dir, out.sources, dir + "/kernel.so", req.name};
  try {
    build_shared_object(br);
  } catch (const Error& e) {
    registry().failures++;
    if (publish_as.empty()) throw;  // the private build directory stays, with the source the message names
    // Keep the failed build as "<key>.failed" (one per key, so repeated failures do not pile up).
    std::string kept = publish_as + ".failed";
    remove_tree(kept);
    if (::rename(dir.c_str(), kept.c_str()) != 0) throw;
    std::string message = e.what();
    for (size_t at = message.find(dir); at != std::string::npos; at = message.find(dir, at + kept.size()))
      message.replace(at, dir.size(), kept);
    if (dynamic_cast<const CompilerError*>(&e)) throw CompilerError(message);  // keeps its kind (compile.h)
    throw Error(message);
  }
  registry().compiled++;
  std::string object;
  SINTER_CHECK(read_file(br.output, object), "sinter: cannot read the compiled object {}", br.output);
  ::chmod(br.output.c_str(), 0700);  // the umask may have left it group-writable
  Manifest m{req.key, sha256_hex(object), object.size(), names};
  if (std::string why = write_new_file(dir + "/manifest", format_manifest(m)); !why.empty()) throw Error("sinter: " + why);
  if (!publish_as.empty() && ::rename(dir.c_str(), publish_as.c_str()) == 0) {
    for (std::string& s : out.sources) s = publish_as + "/" + s.substr(dir.size() + 1);
    out.library = std::make_shared<SharedLibrary>(publish_as + "/kernel.so");
    return out;
  }
  // Not published (private build, or another process published the same key first): this copy is loaded and
  // deleted when the library is closed.
  out.library = std::make_shared<SharedLibrary>(br.output, dir);
  return out;
}

std::string private_build_parent() {
  std::string tmp = env_or("TMPDIR", "/tmp");
  return tmp;
}

Loaded find_or_build(const Request& req) {
  std::string shard = usable_shard_dir(req.key);
  if (shard.empty()) return build(req, private_build_parent(), "");
  std::string entry = shard + "/" + req.key;
  Loaded out;
  if ((out.library = load_entry(entry, req.key, out.sources))) {
    registry().disk_hits++;
    out.from = CompiledObject::From::kDisk;
    return out;
  }
  // A miss builds, which takes far longer than the sweep; a hit (a warm process start) never waits for it.
  remove_stale_builds_once(make_absolute(kernel_cache_dir()));
  remove_stale_leftovers(shard);
  return build(req, shard, entry);
}

// Copies of the sources for reading: into options.debug_dir as kernels.cpp (kernels_<i>.cpp) when the caller
// gives one (the inductor's per-graph SINTER_DEBUG_DIR folder), else into SINTER_DEBUG_DIR itself as
// <name>_<key>.cpp. `paths` then names the copies.
void write_debug_copies(const Request& req, std::vector<std::string>& paths) {
  std::string dir = req.options.debug_dir;
  std::string stem = "kernels";
  if (dir.empty()) {
    const char* debug = std::getenv("SINTER_DEBUG_DIR");
    if (!debug || !*debug) return;
    dir = make_absolute(debug);
    stem = req.name + "_" + req.key.substr(0, 10);
    if (std::string why = make_dirs(dir); !why.empty()) {
      warn_once("debug-dir:" + dir, fmt::format("SINTER_DEBUG_DIR: {}; nothing is written there", why));
      return;
    }
  }
  paths.resize(req.units.size());
  for (size_t i = 0; i < req.units.size(); ++i) {
    std::string path = fmt::format("{}/{}", dir, source_file_name(stem, i, req.units.size()));
    ::unlink(path.c_str());
    if (std::string why = write_new_file(path, req.units[i], 0644); why.empty()) paths[i] = path;
    else warn_once("debug-dir:" + dir, fmt::format("SINTER_DEBUG_DIR: {}", why));
  }
}

}  // namespace

std::string kernel_cache_dir() {
  if (const char* dir = std::getenv("SINTER_CACHE_DIR"); dir && *dir) return dir;
  std::string xdg = env_or("XDG_CACHE_HOME", "");
  return (xdg.empty() ? home_dir() + "/.cache" : xdg) + "/sinter";
}

namespace {

std::string run_version(const std::string& compiler) {
  support::ProcessOutput version = support::run_and_capture({compiler, "--version"});
  SINTER_CHECK(support::exited_ok(version.status),
               "sinter: the C++ compiler {} (chosen by SINTER_CXX, default g++) failed to run `--version` ({}): {}",
               compiler, support::describe_wait_status(version.status), version.output.substr(0, 400));
  return version.output.substr(0, version.output.find('\n'));
}

// The first line of `compiler --version` (part of every key). Running the compiler cost a warm process start 2-3
// ms, so the line is also kept in the cache directory (v<abi>/compilers/), under the compiler file's identity on
// disk: its path, device, inode, size and modification time, as ccache's default compiler check. A compiler
// upgraded in place gets a new line; a wrapper script whose target changes does not (set SINTER_CXX to the
// compiler itself, or clear the cache).
struct VersionMemo {
  std::mutex mutex;
  std::map<std::string, std::string> known;  // identity -> version, for this process
};
VersionMemo& version_memo() {
  static VersionMemo* m = new VersionMemo();  // never destroyed, like the registry
  return *m;
}

}  // namespace

std::string compiler_version(const std::string& compiler) {
  struct stat st;
  if (::stat(compiler.c_str(), &st) != 0) return run_version(compiler);  // fails with the compiler's own error
  const std::string id = fmt::format("{}\n{} {} {} {}.{:09}", compiler, st.st_dev, st.st_ino, st.st_size,
                                     st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  VersionMemo& memo = version_memo();
  std::lock_guard<std::mutex> lock(memo.mutex);
  if (auto it = memo.known.find(id); it != memo.known.end()) return it->second;
  // The build reports a refused cache directory; here it only means asking the compiler.
  const std::string dir = usable_cache_dir("compilers", false);
  const bool usable = !dir.empty();
  const std::string path = dir + "/" + sha256_hex(id);
  std::string stored, version;
  if (usable && why_not_private(path, false).empty() && read_file(path, stored) && stored.rfind(id + "\n", 0) == 0) {
    version = stored.substr(id.size() + 1);
  } else {
    version = run_version(compiler);
    if (usable) {  // written aside and renamed, so a reader never sees half a file
      static std::atomic<int> counter{0};
      std::string tmp = fmt::format("{}.tmp-{}-{}", path, ::getpid(), counter++);
      if (write_new_file(tmp, id + "\n" + version).empty() && ::rename(tmp.c_str(), path.c_str()) != 0)
        ::unlink(tmp.c_str());
    }
  }
  memo.known.emplace(id, version);
  return version;
}

std::string kernel_cache_key(const std::vector<std::string>& units, const CompileOptions& options) {
  const Toolchain& tc = host_toolchain();
  Sha256 h;
  // Every field is length-prefixed so no two different inputs serialise to the same bytes.
  auto field = [&](std::string_view s) {
    h.update(fmt::format("{}:", s.size()));
    h.update(s);
  };
  field(fmt::format("sinter-kernel abi={}", kAbiVersion));
  field(tc.compiler);
  field(compiler_version(tc.compiler));
  field(tc.cpu_features);
  for (const std::string& f : tc.flags) field(f);
  field("extra");
  for (const std::string& f : options.extra_flags) field(f);
  field(fmt::format("units={}", units.size()));
  for (const std::string& u : units) field(u);
  return h.hex_digest();
}

std::string units_digest(const std::vector<std::string>& units) {
  Sha256 h;
  for (const std::string& u : units) {
    h.update(fmt::format("{}:", u.size()));
    h.update(u);
  }
  return h.hex_digest();
}

namespace {

// An artifact's object for these units (CompileOptions::prebuilt): the artifact's manifest checked its hash.
CompiledObject load_prebuilt(const std::vector<std::string>& units, const std::string& name,
                             const CompileOptions& options, Clock::time_point start) {
  const std::string path = fmt::format("{}/{}.so", options.object_dir, units_digest(units));
  SINTER_CHECK(::access(path.c_str(), R_OK) == 0,
               "aot: the artifact has no kernel object for {} ({} is missing): it was saved by another build of "
               "sinter, or for another target", name, path);
  CompiledObject result;
  result.library = std::make_shared<SharedLibrary>(path);
  result.key = units_digest(units);
  result.from = CompiledObject::From::kDisk;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

// Copies the object just built or found into the artifact's directory (CompileOptions::object_dir).
void keep_object(const std::vector<std::string>& units, const CompiledObject& object, const CompileOptions& options) {
  const std::string to = fmt::format("{}/{}.so", options.object_dir, units_digest(units));
  std::ifstream in(object.library->path(), std::ios::binary);
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  out << in.rdbuf();
  SINTER_CHECK(in.good() || in.eof(), "aot: cannot read the kernel object {}", object.library->path());
  SINTER_CHECK(out.good(), "aot: cannot write {}", to);
}

}  // namespace

CompiledObject compile_and_load(const std::vector<std::string>& units, const std::string& name,
                                const CompileOptions& options) {
  auto start = Clock::now();
  SINTER_INTERNAL_ASSERT(!units.empty(), "compile_and_load of {} without translation units", name);
  if (options.prebuilt) return load_prebuilt(units, name, options, start);
  if (!options.object_dir.empty()) {
    CompileOptions plain = options;
    plain.object_dir.clear();
    CompiledObject object = compile_and_load(units, name, plain);
    keep_object(units, object, options);
    return object;
  }
  Request req{units, safe_name(name), options, host_toolchain(), kernel_cache_key(units, options)};
  Registry& r = registry();
  CompiledObject result;
  result.key = req.key;
  std::promise<std::shared_ptr<const LoadedEntry>> promise;
  LoadedFuture waiting;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.loaded.find(req.key);
    if (it != r.loaded.end()) waiting = it->second;
    else r.loaded.emplace(req.key, promise.get_future().share());
  }
  if (waiting.valid()) {
    // Loaded already, or being built by another thread: the same SharedLibrary either way.
    std::shared_ptr<const LoadedEntry> entry = waiting.get();
    r.memory_hits++;
    result.library = entry->library;
    result.source_paths = entry->source_paths;
    result.from = CompiledObject::From::kMemory;
    if (!options.debug_dir.empty()) write_debug_copies(req, result.source_paths);
  } else {
    Loaded loaded;
    try {
      loaded = find_or_build(req);
    } catch (...) {
      promise.set_exception(std::current_exception());
      std::lock_guard<std::mutex> lock(r.mutex);
      r.loaded.erase(req.key);  // a later call tries again
      throw;
    }
    result.library = loaded.library;
    result.from = loaded.from;
    result.source_paths = loaded.sources;
    write_debug_copies(req, result.source_paths);
    promise.set_value(std::make_shared<const LoadedEntry>(LoadedEntry{result.library, result.source_paths}));
    if (log_enabled(LogChannel::kOutputCode)) {
      for (size_t i = 0; i < units.size(); ++i)
        log_message(LogChannel::kOutputCode,
                    fmt::format("{} unit {}/{} ({}, key {}) at {}:\n{}", req.name, i + 1, units.size(),
                                loaded.from == CompiledObject::From::kDisk ? "from the disk cache" : "compiled",
                                req.key.substr(0, 16), result.source_paths[i], units[i]));
    }
  }
  result.source_path = result.source_paths.empty() ? "" : result.source_paths.front();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

KernelCacheStats kernel_cache_stats() {
  Registry& r = registry();
  return {r.compiled.load(), r.memory_hits.load(), r.disk_hits.load(),
          r.rejected.load(), r.corrupt.load(),     r.failures.load()};
}

void clear_memory_cache() {
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.loaded.clear();
  }
  VersionMemo& memo = version_memo();
  std::lock_guard<std::mutex> lock(memo.mutex);
  memo.known.clear();
}

}  // namespace sinter::codegen::cpp
