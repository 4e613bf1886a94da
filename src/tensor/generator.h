// The counter-based random generator shared by eager kernels and (later) generated code: Philox 4x32-10.
// A draw of n numbers at state (seed, offset) gives element i the output of philox(key = seed, counter = offset + i),
// and advances offset by n, so any element can be recomputed from the state alone, in any order or thread.
#pragma once
#include <cstdint>
#include <mutex>

namespace sinter {

struct Philox4x32 {
  uint32_t out[4];
  // One block: counter (c0..c3) = (counter, counter_hi) under key (k0, k1), ten rounds. The generator's draws
  // leave counter_hi 0; it is there for Random123's published test vectors (factory_test.cpp).
  static Philox4x32 compute(uint64_t counter, uint64_t key, uint64_t counter_hi = 0) {
    uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
    uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
    uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
    for (int r = 0; r < 10; ++r) {
      uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0, p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
      uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0, n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(p1);
      c3 = static_cast<uint32_t>(p0);
      c0 = n0;
      c2 = n2;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    return {{c0, c1, c2, c3}};
  }
};

// Uniform in [0, 1) from 24 random bits (exactly representable in float32).
inline float philox_uniform(uint64_t seed, uint64_t index) {
  return static_cast<float>(Philox4x32::compute(index, seed).out[0] >> 8) * (1.0f / 16777216.0f);
}
// Uniform in [0, 1) with 53 bits, for float64 tensors.
inline double philox_uniform_double(uint64_t seed, uint64_t index) {
  Philox4x32 p = Philox4x32::compute(index, seed);
  uint64_t bits = (static_cast<uint64_t>(p.out[0]) << 21) ^ (p.out[1] >> 11);
  return static_cast<double>(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}
// Standard normal by Box-Muller over two of the block's words.
double philox_normal(uint64_t seed, uint64_t index);

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : seed_(seed) {}
  // Reserves n numbers: returns the offset of the first and advances the state.
  uint64_t reserve(uint64_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t first = offset_;
    offset_ += n;
    return first;
  }
  uint64_t seed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return seed_;
  }
  uint64_t offset() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return offset_;
  }
  void set_state(uint64_t seed, uint64_t offset) {
    std::lock_guard<std::mutex> lock(mutex_);
    seed_ = seed;
    offset_ = offset;
  }

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The process-wide default generator (one of the registries listed in docs/ARCHITECTURE.md, section 9).
Generator& default_generator();

}  // namespace sinter
