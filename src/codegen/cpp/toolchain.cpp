#include "codegen/cpp/toolchain.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "support/check.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace sinter::codegen::cpp {
namespace {

#if defined(__x86_64__) || defined(__i386__)

struct X86Feature {
  const char* name;  // as in the feature string and in the -m flag
  int level;         // the x86-64 micro-architecture level that contains it (2, 3 or 4)
  bool present;
};

uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuFeatures detect_x86() {
  unsigned a = 0, b = 0, c1 = 0, d = 0, b7 = 0, c7 = 0, cx = 0;
  __get_cpuid_count(1, 0, &a, &b, &c1, &d);
  __get_cpuid_count(7, 0, &a, &b7, &c7, &d);
  unsigned max_ext = __get_cpuid_max(0x80000000u, nullptr);
  if (max_ext >= 0x80000001u) __get_cpuid_count(0x80000001u, 0, &a, &b, &cx, &d);
  // The OS must save the wide registers too: XCR0 bits 1-2 (SSE/AVX state), 5-7 (AVX-512 opmask/ZMM state).
  bool osxsave = (c1 >> 27) & 1;
  uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  bool os_avx = (xcr0 & 0x6) == 0x6;
  bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
  auto bit = [](unsigned reg, int n) { return ((reg >> n) & 1u) != 0; };
  X86Feature features[] = {
      {"sse3", 2, bit(c1, 0)},           {"ssse3", 2, bit(c1, 9)},
      {"sse4.1", 2, bit(c1, 19)},        {"sse4.2", 2, bit(c1, 20)},
      {"popcnt", 2, bit(c1, 23)},        {"avx", 3, bit(c1, 28) && os_avx},
      {"avx2", 3, bit(b7, 5) && os_avx}, {"bmi", 3, bit(b7, 3)},
      {"bmi2", 3, bit(b7, 8)},           {"f16c", 3, bit(c1, 29) && os_avx},
      {"fma", 3, bit(c1, 12) && os_avx}, {"lzcnt", 3, bit(cx, 5)},
      {"movbe", 3, bit(c1, 22)},         {"avx512f", 4, bit(b7, 16) && os_avx512},
      {"avx512bw", 4, bit(b7, 30) && os_avx512}, {"avx512cd", 4, bit(b7, 28) && os_avx512},
      {"avx512dq", 4, bit(b7, 17) && os_avx512}, {"avx512vl", 4, bit(b7, 31) && os_avx512},
  };
  // The highest level whose features are all present; features above it are listed after it by name.
  int level = 1;
  for (int l = 2; l <= 4; ++l) {
    bool all = true;
    for (const X86Feature& f : features)
      if (f.level == l && !f.present) all = false;
    if (!all) break;
    level = l;
  }
  CpuFeatures out;
  out.description = level == 1 ? "x86-64" : fmt::format("x86-64-v{}", level);
  for (const X86Feature& f : features) {
    if (!f.present) continue;
    out.flags.push_back(std::string("-m") + f.name);
    if (f.level > level) out.description += std::string("+") + f.name;
  }
  auto has = [&](const char* name) {
    for (const X86Feature& f : features)
      if (f.present && std::string_view(f.name) == name) return true;
    return false;
  };
  out.avx2 = has("avx2") && has("fma");
  out.avx512 = out.avx2 && has("avx512f") && has("avx512bw") && has("avx512dq") && has("avx512vl");
  return out;
}

#endif

CpuFeatures detect() {
#if defined(__x86_64__) || defined(__i386__)
  return detect_x86();
#elif defined(__aarch64__)
  return CpuFeatures{"aarch64", {}, false, false};
#else
  return CpuFeatures{"generic", {}, false, false};
#endif
}

bool is_executable_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[4096];
  if (!::getcwd(buf, sizeof buf)) return path;
  return std::string(buf) + "/" + path;
}

// A name without '/' is looked up in PATH, as a shell would; a path is taken as it is.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? absolute(name) : "";
  const char* env = std::getenv("PATH");
  std::string_view path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    size_t colon = path.find(':');
    std::string dir(path.substr(0, colon));
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (is_executable_file(candidate)) return absolute(candidate);
    if (colon == std::string_view::npos) return "";
    path.remove_prefix(colon + 1);
  }
}

Toolchain resolve(const std::string& requested) {
  std::vector<std::string> candidates =
      requested.empty() ? std::vector<std::string>{"g++", "clang++", "c++"} : std::vector<std::string>{requested};
  std::string compiler;
  for (const std::string& c : candidates)
    if (compiler = find_program(c); !compiler.empty()) break;
  if (compiler.empty()) {
    if (!requested.empty())
      SINTER_CHECK(false,
                   "sinter: no C++ compiler: SINTER_CXX={} is not an executable file{}. Set SINTER_CXX to g++, "
                   "clang++ or the absolute path of a C++ compiler (generated CPU kernels are compiled with it)",
                   requested, requested.find('/') == std::string::npos ? " found in PATH" : "");
    SINTER_CHECK(false,
                 "sinter: no C++ compiler found: looked for g++, clang++ and c++ in PATH. Install one (Debian/Ubuntu: "
                 "apt-get install g++) or set SINTER_CXX to the absolute path of a C++ compiler");
  }
  Toolchain tc;
  tc.compiler = compiler;
  const CpuFeatures& cpu = host_cpu_features();
  tc.cpu_features = cpu.description;
  // -fno-semantic-interposition lets a kernel's helpers inline although -fPIC makes them exported. No contraction
  // into FMA: every a * b + c rounds twice, as eager's op-by-op kernels do, so a value computed in two kernels
  // (a LayerNorm's x and x - mean(x)) is the same bits in both; with contraction a one-element LayerNorm gave
  // 8e-6 instead of 0 (found by sinter fuzz). Explicit, so g++ and clang++ agree.
  tc.flags = {"-std=c++17",           "-O3",          "-fPIC",    "-shared", "-pipe", "-fno-math-errno",
              "-fno-trapping-math",   "-ffp-contract=off",         "-fopenmp-simd", "-fno-plt",
              "-fno-semantic-interposition"};
  for (const std::string& f : cpu.flags) tc.flags.push_back(f);
  // 512-bit vectors on AVX-512 hosts: measured on the development machine (AMD EPYC, AVX-512), the prelude's
  // exp/log/tanh/erf loops run 1.8x faster than with 256-bit vectors (tests/codegen/prelude_test, LoopsVectorise);
  // both compilers default to 256 bits under -mavx512f, hence the explicit flag.
  tc.vector_width_floats = vector_width_floats();
  if (cpu.avx512) tc.flags.push_back("-mprefer-vector-width=512");
  return tc;
}

}  // namespace

const CpuFeatures& host_cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

const Toolchain& host_toolchain() {
  // One resolution per SINTER_CXX value: tests (and users) may change the variable within one process.
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Toolchain>> resolved;
  const char* env = std::getenv("SINTER_CXX");
  std::string requested = env ? env : "";
  std::lock_guard<std::mutex> lock(mutex);
  auto it = resolved.find(requested);
  if (it == resolved.end()) it = resolved.emplace(requested, std::make_unique<Toolchain>(resolve(requested))).first;
  return *it->second;
}

int vector_width_floats() {
  const CpuFeatures& cpu = host_cpu_features();
  return cpu.avx512 ? 16 : cpu.avx2 ? 8 : 4;
}

}  // namespace sinter::codegen::cpp
