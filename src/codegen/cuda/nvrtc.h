// NVRTC, CUDA's run-time compiler, loaded with dlopen on first use: sinter compiles its generated CUDA C++ kernels
// in-process to cubin without a link-time dependency on the toolkit, so one library serves machines with and
// without it. Declares the few entry points sinter calls with NVRTC's C ABI (nvrtc.h).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace sinter::codegen::cuda {

namespace nvrtc {
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
inline constexpr nvrtcResult kSuccess = 0;

struct Api {
  nvrtcResult (*nvrtcVersion)(int*, int*) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*) = nullptr;
  const char* (*nvrtcGetErrorString)(nvrtcResult) = nullptr;
};

// The loaded library, or null when none could be loaded (nvrtc_unavailable_reason() says why). Searched once per
// process: $SINTER_NVRTC (a path), the library CMake found (SINTER_NVRTC_PATH), libnvrtc.so.13, .so.12, .so,
// then $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
const Api* api();
// The path or name the library was loaded from.
const std::string& loaded_from();
}  // namespace nvrtc

bool nvrtc_available();
std::string nvrtc_unavailable_reason();  // empty when available
int nvrtc_version();                     // major * 1000 + minor * 10 (13000 for 13.0); 0 when unavailable

struct NvrtcResult {
  std::string cubin;  // the ELF image for a real arch ("sm_90"); empty for a virtual one ("compute_90")
  std::string ptx;    // the PTX for a virtual arch; empty for a real one
  std::string log;    // NVRTC's log (warnings), possibly empty
};

// Compiles `source` (named `name` in messages and in NVRTC's log) for `arch` with "-default-device" and
// "-std=c++17" and no fast math, then `options` (e.g. "-lineinfo"). The source may include nothing: NVRTC's
// built-ins (math functions, warp intrinsics, atomics, vector types) need no header. Throws sinter::Error naming
// `name`, the arch, NVRTC's error string and the first 40 lines of the log when it fails or NVRTC is unavailable.
NvrtcResult compile_cuda(const std::string& source, const std::string& name, const std::string& arch,
                         const std::vector<std::string>& options = {});

}  // namespace sinter::codegen::cuda
