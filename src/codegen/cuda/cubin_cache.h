// The on-disk cache of compiled CUDA kernels: one file per kernel under <kernel_cache_dir()>/cuda/<arch>/, named
// by the SHA-256 of what produced it (source, architecture, options, NVRTC's version) and holding the SHA-256 of
// the cubin before the cubin itself, checked before the bytes are handed to the driver. The same rules as the
// CPU cache: every directory on the way is private to this user (else nothing is cached, and the log says why),
// no symbolic link is followed, and a file is written under a temporary name and renamed into place.
#pragma once
#include <optional>
#include <string>

namespace sinter::codegen::cuda {

// The cached cubin for `key` (a hex digest), or nothing when absent or refused.
std::optional<std::string> load_cubin(const std::string& arch, const std::string& key);
// Stores `cubin` for `key`; failures only log (the next process compiles again).
void store_cubin(const std::string& arch, const std::string& key, const std::string& cubin);

// One kernel's cubin for `arch`: its source after the unit header (cuda_codegen.h), from this cache (keyed by the
// source, architecture, NVRTC's options and version), else compiled by NVRTC and stored. `compiled` says which.
// NVRTC's options beyond compile_cuda's own: -fmad=false (each a * b + c rounds as in eager).
std::string cubin_for(const std::string& kernel_source, const std::string& name, const std::string& arch,
                      bool& compiled);

// SINTER_CUDA_SIM_NVRTC=1: the simulator also has NVRTC compile every kernel for sm_90, so that a test run
// without a GPU still checks that the source is valid CUDA (the test suite sets it where the toolkit is).
bool nvrtc_check_in_simulation();

}  // namespace sinter::codegen::cuda
