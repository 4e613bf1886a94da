// ONNX integer types that sinter's tensors lack (int16, uint16, uint32, uint64), emulated in wider dtypes (see
// importer.h). Everything here is built from sinter's ops, so it runs eagerly, folds on the host and is captured
// like any other import. uint64 arithmetic stays inside int64 without signed overflow: values are split into
// 32-bit halves where a product could pass 2^63.
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "frontends/onnx/importer.h"
#include "support/check.h"

namespace sinter::onnx {
namespace {

constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kLow32 = 0xFFFFFFFFll;

Scalar i64(int64_t v) { return Scalar(v); }

template <class Src, class Dst>
void widen(const void* src, uint64_t n, void* dst) {
  const char* s = static_cast<const char*>(src);
  Dst* d = static_cast<Dst*>(dst);
  for (uint64_t i = 0; i < n; ++i) {
    Src v;
    std::memcpy(&v, s + i * sizeof(Src), sizeof(Src));  // raw data need not be aligned
    d[i] = static_cast<Dst>(v);                        // uint64 -> int64 keeps the bit pattern (C++20)
  }
}

// 2^s for int64 amounts 0 <= s <= 62.
Tensor pow2(const Tensor& s) { return pow(i64(2), s); }

}  // namespace

bool emulated_type(int32_t t) {
  return t == proto::kDtInt16 || t == proto::kDtUInt16 || t == proto::kDtUInt32 || t == proto::kDtUInt64;
}

int onnx_type_bits(int32_t t) {
  switch (t) {
    case proto::kDtInt8: case proto::kDtUInt8: return 8;
    case proto::kDtInt16: case proto::kDtUInt16: return 16;
    case proto::kDtInt32: case proto::kDtUInt32: return 32;
    case proto::kDtInt64: case proto::kDtUInt64: return 64;
    case proto::kDtBool: return 1;
    default: return 0;
  }
}

bool onnx_type_unsigned(int32_t t) {
  return t == proto::kDtUInt8 || t == proto::kDtUInt16 || t == proto::kDtUInt32 || t == proto::kDtUInt64;
}

void widen_raw(int32_t t, const void* src, uint64_t n, void* dst) {
  switch (t) {
    case proto::kDtInt16: widen<int16_t, int32_t>(src, n, dst); break;
    case proto::kDtUInt16: widen<uint16_t, int32_t>(src, n, dst); break;
    case proto::kDtUInt32: widen<uint32_t, int64_t>(src, n, dst); break;
    case proto::kDtUInt64: widen<uint64_t, int64_t>(src, n, dst); break;
    default: SINTER_INTERNAL_ASSERT(false, "widen_raw: ONNX type {} is not emulated", t);
  }
}

Tensor wrap_to_type(const Tensor& t, int32_t type) {
  DType d = to_dtype(type, "wrap_to_type");
  if (!is_integral(t.dtype(), false) || type == proto::kDtUInt64 || type == proto::kDtInt64) return cast_to(t, d);
  Tensor w = cast_to(t, kInt64);
  switch (type) {
    case proto::kDtUInt16: w = bitwise_and(w, i64(0xFFFF)); break;
    case proto::kDtInt16: w = sub(bitwise_xor(bitwise_and(w, i64(0xFFFF)), i64(0x8000)), i64(0x8000)); break;
    case proto::kDtUInt32: w = bitwise_and(w, i64(kLow32)); break;
    case proto::kDtInt32: w = sub(bitwise_xor(bitwise_and(w, i64(kLow32)), i64(0x80000000ll)), i64(0x80000000ll)); break;
    case proto::kDtUInt8: w = bitwise_and(w, i64(0xFF)); break;
    case proto::kDtInt8: w = sub(bitwise_xor(bitwise_and(w, i64(0xFF)), i64(0x80)), i64(0x80)); break;
    default: break;
  }
  return cast_to(w, d);
}

// Flipping the sign bit maps unsigned order onto signed order.
Tensor uint64_lt(const Tensor& a, const Tensor& b) {
  return lt(bitwise_xor(cast_to(a, kInt64), i64(kMin64)), bitwise_xor(cast_to(b, kInt64), i64(kMin64)));
}

Tensor uint64_max(const Tensor& a, const Tensor& b, bool max) {
  Tensor a_lt_b = uint64_lt(a, b);
  return max ? where(a_lt_b, b, a) : where(a_lt_b, a, b);
}

// a mod b for unsigned 64-bit values held as int64:
//  - b >= 2^63 (negative here): a < b gives a, else a - b (a < 2^64 < 2b, and a - b fits);
//  - b < 2^63 and a >= 2^63: a = (a - 2^63) + 2^63, so a mod b = (r1 + r2) mod b with r1 = (a & max) mod b and
//    r2 = 2^63 mod b = ((2^63 - 1) mod b + 1) mod b; the sum is formed without passing 2^63;
//  - both below 2^63: the signed remainder.
Tensor uint64_mod(const Tensor& a_in, const Tensor& b_in) {
  Tensor a = cast_to(a_in, kInt64), b = cast_to(b_in, kInt64);
  Tensor b_pos = gt(b, i64(0));
  Tensor bs = where(b_pos, b, i64(1));  // a safe divisor for the branches that do not use it
  Tensor small = remainder(bitwise_and(a, i64(kMax64)), bs);
  Tensor r2 = remainder(add(remainder(full_like(bs, i64(kMax64)), bs), i64(1)), bs);
  Tensor room = sub(bs, r2);
  Tensor high = where(ge(small, room), sub(small, room), add(small, r2));
  Tensor r_pos = where(lt(a, i64(0)), high, small);
  Tensor r_big = where(uint64_lt(a, b), a, sub(a, b));
  Tensor r = where(b_pos, r_pos, r_big);
  return where(eq(b, i64(0)), i64(0), r);
}

Tensor uint64_to_floating(const Tensor& t, DType d) {
  Tensor x = cast_to(t, kInt64);
  // Values at or above 2^63 are negative here: convert the low 63 bits and add 2^63 in float64.
  Tensor lowf = cast_to(bitwise_and(x, i64(kMax64)), kFloat64);
  Tensor f = where(lt(x, i64(0)), add(lowf, Scalar(9223372036854775808.0)), lowf);
  return cast_to(f, d);
}

Tensor small_uint_shift(const Tensor& x_in, const Tensor& y_in, int bits, bool left) {
  SINTER_INTERNAL_ASSERT(bits >= 1 && bits <= 32, "small_uint_shift: {} bits", bits);
  Tensor x = cast_to(x_in, kInt64), y = cast_to(y_in, kInt64);
  Tensor out_of_range = logical_or(lt(y, i64(0)), ge(y, i64(bits)));
  // x < 2^32 and s < 32: x * 2^s < 2^63, no overflow.
  Tensor f = pow2(clamp(y, Scalar(int64_t{0}), Scalar(int64_t{bits - 1})));
  int64_t mask = bits == 32 ? kLow32 : (int64_t{1} << bits) - 1;
  Tensor r = left ? bitwise_and(mul(x, f), i64(mask)) : floor_divide(x, f);
  return cast_to(where(out_of_range, i64(0), r), x_in.dtype());
}

// Shifts of 64-bit patterns through their 32-bit halves (each in [0, 2^32) in an int64), so no product passes
// 2^63. floor_divide by 2^32 is an arithmetic shift, exact on the bit pattern; the mask then takes the high half.
Tensor uint64_shift(const Tensor& x_in, const Tensor& y_in, bool left) {
  Tensor x = cast_to(x_in, kInt64), y = cast_to(y_in, kInt64);
  Tensor lo = bitwise_and(x, i64(kLow32));
  Tensor hi = bitwise_and(floor_divide(x, i64(int64_t{1} << 32)), i64(kLow32));
  Tensor valid = logical_and(ge(y, i64(0)), lt(y, i64(64)));
  Tensor s = clamp(y, Scalar(int64_t{0}), Scalar(int64_t{63}));
  Tensor big = ge(s, i64(32));
  Tensor s1 = where(big, sub(s, i64(32)), s);  // 0..31
  Tensor p = pow2(s1), q = pow2(add(neg(s1), i64(32)));  // 2^s1, 2^(32 - s1) <= 2^32
  Tensor nhi, nlo;
  if (left) {
    Tensor lo_up = bitwise_and(mul(lo, p), i64(kLow32));
    Tensor hi_small = bitwise_or(bitwise_and(mul(hi, p), i64(kLow32)), floor_divide(lo, q));
    nhi = where(big, lo_up, hi_small);
    nlo = where(big, i64(0), lo_up);
  } else {
    Tensor hi_down = floor_divide(hi, p);
    Tensor carried = mul(bitwise_and(hi, sub(p, i64(1))), q);  // the bits of hi that move into lo, < 2^32
    nlo = where(big, hi_down, bitwise_or(floor_divide(lo, p), carried));
    nhi = where(big, i64(0), hi_down);
  }
  Tensor r = bitwise_or(mul(bitwise_and(nhi, i64(0x7FFFFFFF)), i64(int64_t{1} << 32)), nlo);
  r = where(ge(nhi, i64(0x80000000ll)), bitwise_or(r, i64(kMin64)), r);
  return where(valid, r, i64(0));
}

}  // namespace sinter::onnx
