#include "codegen/cuda/nvrtc.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <sstream>
#include <string_view>

#include "sinter/compile.h"
#include "sinter/error.h"
#include "support/dynamic_symbols.h"

namespace sinter::codegen::cuda {

namespace nvrtc {
namespace {

struct Loaded {
  Api api;
  bool ok = false;
  std::string from;
  std::string reason;
};

// Where to look, in order; empty entries (unset variables) are skipped.
std::vector<std::string> candidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("SINTER_NVRTC"); env != nullptr && *env != '\0') paths.push_back(env);
#ifdef SINTER_NVRTC_PATH
  paths.push_back(SINTER_NVRTC_PATH);
#endif
  const char* names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  for (const char* n : names) paths.push_back(n);
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
    dirs.push_back(std::string(home) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  for (const std::string& d : dirs)
    for (const char* n : names) paths.push_back(d + n);
  return paths;
}

using support::resolve_symbol;

Loaded& loaded() {
  // Process-wide and immutable once built: the library is loaded at most once (a magic static is thread-safe).
  static Loaded* state = [] {
    auto* s = new Loaded();
    std::string tried;
    void* lib = nullptr;
    for (const std::string& path : candidates()) {
      lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) {
        s->from = path;
        break;
      }
      const char* e = dlerror();
      tried += fmt::format("\n  {}: {}", path, e ? e : "unknown error");
    }
    if (lib == nullptr) {
      s->reason = "NVRTC could not be loaded (set SINTER_NVRTC to the path of libnvrtc.so); tried:" + tried;
      return s;
    }
    Api& a = s->api;
    std::string missing;
    resolve_symbol(lib, "nvrtcVersion", a.nvrtcVersion, missing);
    resolve_symbol(lib, "nvrtcCreateProgram", a.nvrtcCreateProgram, missing);
    resolve_symbol(lib, "nvrtcCompileProgram", a.nvrtcCompileProgram, missing);
    resolve_symbol(lib, "nvrtcGetProgramLogSize", a.nvrtcGetProgramLogSize, missing);
    resolve_symbol(lib, "nvrtcGetProgramLog", a.nvrtcGetProgramLog, missing);
    resolve_symbol(lib, "nvrtcGetCUBINSize", a.nvrtcGetCUBINSize, missing);
    resolve_symbol(lib, "nvrtcGetCUBIN", a.nvrtcGetCUBIN, missing);
    resolve_symbol(lib, "nvrtcGetPTXSize", a.nvrtcGetPTXSize, missing);
    resolve_symbol(lib, "nvrtcGetPTX", a.nvrtcGetPTX, missing);
    resolve_symbol(lib, "nvrtcDestroyProgram", a.nvrtcDestroyProgram, missing);
    resolve_symbol(lib, "nvrtcGetErrorString", a.nvrtcGetErrorString, missing);
    if (!missing.empty()) {
      s->reason = fmt::format("NVRTC in {} lacks {} (too old a toolkit)", s->from, missing);
      return s;
    }
    s->ok = true;
    return s;
  }();
  return *state;
}

}  // namespace

const Api* api() { return loaded().ok ? &loaded().api : nullptr; }
const std::string& loaded_from() { return loaded().from; }

}  // namespace nvrtc

bool nvrtc_available() { return nvrtc::api() != nullptr; }

std::string nvrtc_unavailable_reason() { return nvrtc_available() ? std::string() : nvrtc::loaded().reason; }

int nvrtc_version() {
  const nvrtc::Api* a = nvrtc::api();
  int major = 0, minor = 0;
  if (a == nullptr || a->nvrtcVersion(&major, &minor) != nvrtc::kSuccess) return 0;
  return major * 1000 + minor * 10;
}

namespace {

// The first `limit` lines of `log`, and how many were left out.
std::string head_of(const std::string& log, int limit) {
  std::istringstream in(log);
  std::string line, out;
  int n = 0;
  while (std::getline(in, line)) {
    if (n++ < limit) out += line.empty() ? "\n" : "  " + line + "\n";
  }
  if (n > limit) out += fmt::format("  ... ({} more lines)\n", n - limit);
  return out;
}

// Destroys the program on every path out of compile_cuda.
struct Program {
  const nvrtc::Api& api;
  nvrtc::nvrtcProgram prog = nullptr;
  ~Program() {
    if (prog != nullptr) api.nvrtcDestroyProgram(&prog);
  }
};

}  // namespace

NvrtcResult compile_cuda(const std::string& source, const std::string& name, const std::string& arch,
                         const std::vector<std::string>& options) {
  const nvrtc::Api* a = nvrtc::api();
  if (a == nullptr)
    throw Error(fmt::format("cannot compile CUDA kernel {} for {}: {}", name, arch, nvrtc_unavailable_reason()));
  auto fail = [&](nvrtc::nvrtcResult r, const char* call, const std::string& log) {
    std::string msg = fmt::format("NVRTC failed to compile CUDA kernel {} for {}: {}: {}", name, arch, call,
                                  a->nvrtcGetErrorString(r));
    if (!log.empty()) msg += "\n" + head_of(log, 40);
    // Source NVRTC rejects is a fault of sinter's generator (as CompilerError is for the host compiler), so the
    // graph may fall back to aot_eager; a failing API call is not.
    if (std::string_view(call) == "nvrtcCompileProgram") throw CompilerError(msg);
    throw Error(msg);
  };
  Program p{*a};
  if (auto r = a->nvrtcCreateProgram(&p.prog, source.c_str(), name.c_str(), 0, nullptr, nullptr); r != nvrtc::kSuccess)
    fail(r, "nvrtcCreateProgram", "");
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "-default-device", "-std=c++17"};
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  nvrtc::nvrtcResult compiled = a->nvrtcCompileProgram(p.prog, static_cast<int>(argv.size()), argv.data());
  NvrtcResult out;
  size_t size = 0;
  if (a->nvrtcGetProgramLogSize(p.prog, &size) == nvrtc::kSuccess && size > 1) {
    out.log.resize(size);
    if (a->nvrtcGetProgramLog(p.prog, out.log.data()) != nvrtc::kSuccess) out.log.clear();
    out.log.resize(out.log.empty() ? 0 : size - 1);  // the log ends in a NUL
  }
  if (compiled != nvrtc::kSuccess) fail(compiled, "nvrtcCompileProgram", out.log);
  // A real arch ("sm_90") yields an ELF; a virtual one ("compute_90") only PTX.
  if (arch.rfind("sm_", 0) == 0) {
    if (auto r = a->nvrtcGetCUBINSize(p.prog, &size); r != nvrtc::kSuccess) fail(r, "nvrtcGetCUBINSize", out.log);
    out.cubin.resize(size);
    if (auto r = a->nvrtcGetCUBIN(p.prog, out.cubin.data()); r != nvrtc::kSuccess) fail(r, "nvrtcGetCUBIN", out.log);
  } else {
    if (auto r = a->nvrtcGetPTXSize(p.prog, &size); r != nvrtc::kSuccess) fail(r, "nvrtcGetPTXSize", out.log);
    out.ptx.resize(size);
    if (auto r = a->nvrtcGetPTX(p.prog, out.ptx.data()); r != nvrtc::kSuccess) fail(r, "nvrtcGetPTX", out.log);
    if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  return out;
}

}  // namespace sinter::codegen::cuda
