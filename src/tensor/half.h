// float16 and bfloat16 storage types. Arithmetic happens in float: load, compute, round where a buffer is written.
#pragma once
#include <cstdint>
#include <cstring>

namespace sinter {

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }

  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, out;
    if (exp == 0) {
      if (mant == 0) {
        out = sign;
      } else {  // subnormal: renormalise
        int e = -1;
        do {
          ++e;
          mant <<= 1;
        } while ((mant & 0x400) == 0);
        out = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
      }
    } else if (exp == 0x1f) {
      out = sign | 0x7f800000u | mant << 13;
    } else {
      out = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    float f;
    std::memcpy(&f, &out, 4);
    return f;
  }
  // Round to nearest even, with overflow to infinity and gradual underflow.
  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t abs = x & 0x7fffffff;
    if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds past 65504
    if (abs < 0x38800000u) {                                              // subnormal or zero in half
      float a;
      std::memcpy(&a, &abs, 4);
      // 2^-24 is the half subnormal unit; adding 0.5 (as float) makes the FPU round the low bits for us.
      a += 0.5f;
      uint32_t r;
      std::memcpy(&r, &a, 4);
      return static_cast<uint16_t>(sign | (r - 0x3f000000u));
    }
    uint32_t mant_odd = (abs >> 13) & 1;
    abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (abs >> 13));
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }

  static float to_float(uint16_t b) {
    uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
    x += 0x7fff + ((x >> 16) & 1);  // round to nearest even
    return static_cast<uint16_t>(x >> 16);
  }
};

}  // namespace sinter
