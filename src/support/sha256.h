// SHA-256 (FIPS 180-4), used by the kernel cache for its keys and to check each cached shared object before it is
// loaded. A small own implementation so the cache needs no crypto library.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sinter::support {

class Sha256 {
 public:
  // Uses the x86 SHA extensions where the CPU has them (about five times the speed), unless told not to (tests
  // compare the two).
  explicit Sha256(bool use_sha_extensions = true);
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest as 64 lowercase hex characters; the object must not be updated afterwards.
  std::string hex_digest();

 private:
  void compress(const uint8_t* blocks, size_t count);  // `count` 64-byte blocks
  void compress_one(const uint8_t* block);             // without the extensions
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
  bool extensions_ = false;
};

std::string sha256_hex(std::string_view data);

}  // namespace sinter::support
