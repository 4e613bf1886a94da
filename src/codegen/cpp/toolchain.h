// The host C++ toolchain that compiles generated kernels: which compiler (SINTER_CXX: g++, clang++ or a path),
// its version, the host's CPU features resolved to explicit -m flags (never -march=native, so the cache key
// says exactly what the code was built for), and the optimisation flags.
#pragma once
#include <string>
#include <vector>

namespace sinter::codegen::cpp {

struct Toolchain {
  std::string compiler;            // absolute path, e.g. "/usr/bin/g++"
  std::string cpu_features;        // e.g. "x86-64-v4+avx512bf16" (a level, then features beyond it)
  std::vector<std::string> flags;  // compile+link flags: -O3 -fPIC -shared ... plus the -m flags of cpu_features
                                   // and -mprefer-vector-width=512 on AVX-512 hosts
  int vector_width_floats = 4;     // floats per vector the compiler is told to prefer
};

// The toolchain chosen by SINTER_CXX (default: g++, then clang++, then c++ from PATH). Resolved once per value of
// SINTER_CXX and then reused (thread-safe); throws sinter::Error naming SINTER_CXX when no compiler is found.
const Toolchain& host_toolchain();

// Floats per vector the generated code is compiled for: 16 with AVX-512 (512-bit vectors are preferred there,
// see toolchain.cpp), 8 with AVX2+FMA, 4 otherwise (SSE, NEON).
int vector_width_floats();

// Host CPU features, resolved with cpuid: the level name and the flags (exposed for tests and `sinter explain`).
struct CpuFeatures {
  std::string description;        // "x86-64-v3+avx512f..." or the architecture name elsewhere
  std::vector<std::string> flags;  // "-mavx2", "-mfma", ...
  bool avx512 = false;             // AVX-512 F/BW/DQ/VL usable (CPU and OS)
  bool avx2 = false;               // AVX2 + FMA usable
};
const CpuFeatures& host_cpu_features();

}  // namespace sinter::codegen::cpp
