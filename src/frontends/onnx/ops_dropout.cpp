// Dropout. Inference (or ratio 0) passes the input through with an all-true mask. Training mode draws a mask:
// with a `seed` attribute the draw is deterministic and follows ONNX's reference implementation, which seeds
// numpy's legacy RandomState (MT19937) with the seed and keeps an element when uniform(0, 1) >= ratio; that
// makes seeded models reproducible across runtimes that follow the reference. Without a seed the mask comes from
// sinter's own generator (a fresh mask per call, as ONNX allows).
#include <fmt/format.h>

#include <array>
#include <cstdint>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

// MT19937 as numpy's legacy RandomState seeds it from one 32-bit integer (the classic init_genrand), and its
// 53-bit doubles (two draws: 27 + 26 bits), as random_sample/uniform produce them.
class Mt19937 {
 public:
  explicit Mt19937(uint32_t seed) {
    state_[0] = seed;
    for (uint32_t i = 1; i < kN; ++i) state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + i;
    pos_ = kN;
  }
  uint32_t next() {
    if (pos_ >= kN) twist();
    uint32_t y = state_[pos_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }
  double next_double() {
    uint32_t a = next() >> 5, b = next() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

 private:
  static constexpr uint32_t kN = 624, kM = 397;
  void twist() {
    for (uint32_t i = 0; i < kN; ++i) {
      uint32_t y = (state_[i] & 0x80000000u) | (state_[(i + 1) % kN] & 0x7fffffffu);
      state_[i] = state_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    pos_ = 0;
  }
  std::array<uint32_t, kN> state_{};
  uint32_t pos_ = 0;
};

std::vector<Tensor> dropout_onnx(NodeCtx& c) {
  const Tensor& x = c.in(0);
  bool training;
  double ratio;
  if (c.opset() < 7) {
    training = c.attr_int("is_test", 0) == 0;
    ratio = c.attr_float("ratio", 0.5);
  } else if (c.opset() < 12) {
    training = false;  // opsets 7-11 are inference-only (ratio is used only in training)
    ratio = c.attr_float("ratio", 0.5);
  } else {
    training = c.has(2) && c.int_at(2) != 0;
    ratio = c.has(1) ? c.double_at(1) : 0.5;
  }
  if (!training || ratio == 0.0) return {x, ones_like(x, kBool)};
  if (!(ratio > 0.0 && ratio < 1.0)) c.fail(fmt::format("ratio must be in [0, 1), it is {}", ratio));
  Tensor mask;
  if (c.has_attr("seed")) {
    int64_t seed = c.attr_int("seed", 0);
    if (seed < 0 || seed > 0xffffffffLL) c.fail(fmt::format("seed {} is outside [0, 2^32)", seed));
    int64_t n = x.numel().hint();
    constexpr int64_t kMaxHostMask = int64_t{1} << 28;  // a hostile size must not allocate unbounded memory
    if (n > kMaxHostMask) c.unsupported(fmt::format("a seeded Dropout mask of {} elements", n));
    Mt19937 gen(static_cast<uint32_t>(seed));
    std::vector<uint8_t> keep(static_cast<size_t>(n));
    for (auto& k : keep) k = gen.next_double() >= ratio;
    mask = c.here(on_host([&] { return to_copy(from_vector(keep, x.sizes(), kUInt8), kBool); }));
  } else {
    mask = ge(rand_like(x, kFloat32), Scalar(ratio));
  }
  Tensor y = mul(mul(x, mask), Scalar(1.0 / (1.0 - ratio)));
  return {cast_to(y, x.dtype()), mask};
}

}  // namespace

void register_dropout_ops(OpTable& t) { t["Dropout"] = {dropout_onnx, /*random=*/true}; }

}  // namespace sinter::onnx
