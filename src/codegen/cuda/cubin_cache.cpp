#include "codegen/cuda/cubin_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "codegen/cpp/kernel_cache.h"
#include "codegen/cuda/cuda_codegen.h"
#include "codegen/cuda/nvrtc.h"
#include "support/cache_files.h"
#include "support/log.h"
#include "support/sha256.h"

namespace sinter::codegen::cuda {

namespace {

// The directory of `arch`'s entries when it is private from the cache root down, else "" (logged).
std::string cache_dir(const std::string& arch) {
  std::string root = cpp::kernel_cache_dir();
  std::string dir = root + "/cuda/" + arch;
  if (std::string why = support::make_dirs(dir); !why.empty()) {
    SINTER_LOG(kPerfHints, "cuda kernel cache: cannot use {}: {}", dir, why);
    return "";
  }
  for (const std::string& d : {root, root + "/cuda", dir}) {
    if (std::string why = support::why_not_private(d, true, d == root); !why.empty()) {
      SINTER_LOG(kPerfHints, "cuda kernel cache: refused {}: {}", d, why);
      return "";
    }
  }
  return dir;
}

}  // namespace

std::optional<std::string> load_cubin(const std::string& arch, const std::string& key) {
  std::string dir = cache_dir(arch);
  if (dir.empty()) return std::nullopt;
  std::string path = fmt::format("{}/{}.cubin", dir, key);
  if (!support::why_not_private(path, false).empty()) return std::nullopt;  // absent, or not ours
  std::string data;
  if (!support::read_file(path, data) || data.size() < 65 || data[64] != '\n') return std::nullopt;
  std::string cubin = data.substr(65);
  if (support::sha256_hex(cubin) != data.substr(0, 64)) {
    SINTER_LOG(kPerfHints, "cuda kernel cache: {} does not match its digest; compiling instead", path);
    return std::nullopt;
  }
  return cubin;
}

void store_cubin(const std::string& arch, const std::string& key, const std::string& cubin) {
  std::string dir = cache_dir(arch);
  if (dir.empty()) return;
  std::string path = fmt::format("{}/{}.cubin", dir, key);
  std::string tmp = fmt::format("{}.tmp-{}-{}", path, ::getpid(), static_cast<const void*>(&cubin));
  if (std::string why = support::write_new_file(tmp, support::sha256_hex(cubin) + "\n" + cubin); !why.empty()) {
    SINTER_LOG(kPerfHints, "cuda kernel cache: cannot write {}: {}", tmp, why);
    return;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    SINTER_LOG(kPerfHints, "cuda kernel cache: cannot rename {}: {}", tmp, support::errno_text());
    support::remove_tree(tmp);
  }
}

std::string cubin_for(const std::string& kernel_source, const std::string& name, const std::string& arch,
                      bool& compiled) {
  static const std::vector<std::string> options = {"-fmad=false"};
  std::string src = unit_header() + kernel_source;
  std::string key_text = fmt::format("{}\n{}\n{}\n", arch, nvrtc_version(), src);
  for (const std::string& o : options) key_text += o + "\n";
  std::string key = support::sha256_hex(key_text);
  compiled = false;
  if (auto hit = load_cubin(arch, key)) return std::move(*hit);
  std::string cubin = compile_cuda(src, name, arch, options).cubin;
  store_cubin(arch, key, cubin);
  compiled = true;
  return cubin;
}

bool nvrtc_check_in_simulation() {
  const char* v = std::getenv("SINTER_CUDA_SIM_NVRTC");
  return v != nullptr && std::string_view(v) == "1";
}

}  // namespace sinter::codegen::cuda
