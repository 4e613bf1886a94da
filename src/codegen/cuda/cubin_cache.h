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

}  // namespace sinter::codegen::cuda
