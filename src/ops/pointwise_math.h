// Scalar math for the pointwise kernels, templated on the compute type. float has branch-free versions of
// exp/tanh/sigmoid/erf that g++ vectorizes (glibc's expf is a call per element); the rest follows PyTorch's
// CPU kernels formula for formula, so results agree (Python-style remainder, floor division, integer pow).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace sinter::pmath {

template <class T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T>;

// Branch-free choice. A ternary placed after real work makes g++ sink that work into a branch, which the
// vectorizer then refuses (it may not speculate IEEE operations); a bit mask keeps the loop straight.
inline float select(bool c, float a, float b) {
  int32_t ai, bi;
  std::memcpy(&ai, &a, 4);
  std::memcpy(&bi, &b, 4);
  int32_t m = -static_cast<int32_t>(c);
  int32_t r = (ai & m) | (bi & ~m);
  float out;
  std::memcpy(&out, &r, 4);
  return out;
}
inline double select(bool c, double a, double b) {
  int64_t ai, bi;
  std::memcpy(&ai, &a, 8);
  std::memcpy(&bi, &b, 8);
  int64_t m = -static_cast<int64_t>(c);
  int64_t r = (ai & m) | (bi & ~m);
  double out;
  std::memcpy(&out, &r, 8);
  return out;
}
inline int64_t select(bool c, int64_t a, int64_t b) {
  int64_t m = -static_cast<int64_t>(c);
  return (a & m) | (b & ~m);
}
inline bool select(bool c, bool a, bool b) { return (c & a) | (!c & b); }

// exp(x) for float (Cephes' polynomial, about 1 ulp), branch-free; 2^n is applied as two factors so that
// results near overflow and in the subnormal range are right.
inline float exp_f(float x) {
  float t = x * 1.44269504088896341f + 12582912.f;  // round(x / ln 2) lands in t's low mantissa bits
  float n = t - 12582912.f;
  int32_t tb;
  std::memcpy(&tb, &t, 4);
  int32_t ni = tb - 0x4B400000;
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * r * r + r + 1.f;
  int32_t h = ni >> 1;
  int32_t e1 = (h + 127) << 23, e2 = (ni - h + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &e1, 4);
  std::memcpy(&s2, &e2, 4);
  float y = p * s1 * s2;
  y = select(x > 88.72283935f, std::numeric_limits<float>::infinity(), y);
  return select(x < -104.f, 0.f, y);
}
template <class T>
inline T exp_(T x) {
  if constexpr (std::is_same_v<T, float>) return exp_f(x);
  else return std::exp(x);
}

template <class T>
inline T sigmoid_(T x) {
  return T(1) / (T(1) + exp_(-x));
}

// tanh: Cephes' odd polynomial for |x| < 0.625, else 1 - 2 / (exp(2|x|) + 1) with x's sign.
inline float tanh_f(float x) {
  float a = std::fabs(x);
  float big = 1.f - 2.f / (exp_f(2.f * a) + 1.f);
  big = std::copysign(big, x);
  float z = x * x;
  float small = ((((-5.70498872745E-3f * z + 2.06390887954E-2f) * z - 5.37397155531E-2f) * z + 1.33314422036E-1f) * z -
                 3.33332819422E-1f) * z * x + x;
  return select(a < 0.625f, small, big);
}
template <class T>
inline T tanh_(T x) {
  if constexpr (std::is_same_v<T, float>) return tanh_f(x);
  else return std::tanh(x);
}

// erf for float: Cephes' polynomial below 1 (good relative accuracy near 0), Abramowitz-Stegun 7.1.26 above
// (absolute error 1.5e-7, the form PyTorch's vectorized erf uses).
inline float erf_f(float x) {
  float a = std::fabs(x);
  float z = x * x;
  float small = ((((((7.853861353153693E-5f * z - 8.010193625184903E-4f) * z + 5.188327685732524E-3f) * z -
                    2.685381193529856E-2f) * z + 1.128358514861418E-1f) * z - 3.761262582423300E-1f) * z +
                 1.128379165726710E+0f) * x;
  float t = 1.f / (0.3275911f * a + 1.f);
  float r = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t + 0.254829592f) * t;
  float big = std::copysign(1.f - r * exp_f(-z), x);
  return select(a < 1.f, small, big);
}
template <class T>
inline T erf_(T x) {
  if constexpr (std::is_same_v<T, float>) return erf_f(x);
  else return std::erf(x);
}

// gelu(x) = x * Phi(x) = h + h * erf(x / sqrt2), h = x / 2, for float. erf(u) is a rational u * P(u^2) / Q(u^2)
// of degrees 5 and 5 fitted (least squares reweighted to near-minimax) on [0, 3.92], where it is within 2e-8 of
// erf; past 3.92 erf(u) is 1 in float, so the rational (which would overflow) is replaced by sign(u). No exp and
// one division: about 20 vector operations, half of the erfc form this replaced, which gelu needs because it
// is compute-bound otherwise. Accuracy: |error| <= 3e-7 * max(1, |x|). For x below about -3 the result is the
// difference of two nearly equal numbers, so there its error is absolute, not relative (as in PyTorch's
// vectorized kernel); -inf gives NaN (-inf + inf) as 0.5 * x * (1 + erf) does, and x <= -5.6 gives exactly 0.
// The rational's coefficients, highest degree first (also used by vec::gelu, which replaces the division).
inline constexpr float kGeluErfP[6] = {2.034429569114371e-06f, 2.8743845172807606e-04f, 3.8678148551769703e-03f,
                                       5.305889642633448e-02f, 1.9275615132321688e-01f, 1.1283790235593694f};
inline constexpr float kGeluErfQ[6] = {3.806528838750517e-05f, 1.1879337256731834e-03f, 1.5171329200923796e-02f,
                                       1.1508084917055227e-01f, 5.041573692087985e-01f, 1.f};
inline constexpr float kGeluErfCut = 3.92f;  // |u| from which erf(u) is +-1 in float
inline float gelu_erf_f(float x) {
  const float u = x * 0.70710678118654752440f;
  const float s = u * u;
  const float* P = kGeluErfP;
  const float* Q = kGeluErfQ;
  const float p = ((((P[0] * s + P[1]) * s + P[2]) * s + P[3]) * s + P[4]) * s + P[5];
  const float q = ((((Q[0] * s + Q[1]) * s + Q[2]) * s + Q[3]) * s + Q[4]) * s + Q[5];
  const float e = select(std::fabs(u) < kGeluErfCut, u * (p / q), std::copysign(1.f, u));
  const float h = 0.5f * x;
  return h + h * e;
}

// Wrapping integer arithmetic: int64 overflow is undefined in C++ and wraps in PyTorch.
inline int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
inline int64_t wrap_sub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
inline int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }

template <class T>
inline T add_(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return wrap_add(a, b);
  else if constexpr (std::is_same_v<T, bool>) return a || b;
  else return a + b;
}
template <class T>
inline T sub_(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return wrap_sub(a, b);
  else return a - b;
}
template <class T>
inline T mul_(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>) return wrap_mul(a, b);
  else if constexpr (std::is_same_v<T, bool>) return a && b;
  else return a * b;
}

// Integer division and remainder: the divisor was checked for zero before the loop ran. b == -1 is split off
// because INT64_MIN / -1 traps on x86.
inline int64_t div_trunc_int(int64_t a, int64_t b) { return b == -1 ? wrap_sub(0, a) : a / b; }
inline int64_t fmod_int(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }
inline int64_t div_floor_int(int64_t a, int64_t b) {
  if (b == -1) return wrap_sub(0, a);
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
inline int64_t remainder_int(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// PyTorch's div_floor_floating.
template <class T>
inline T div_floor_float(T a, T b) {
  if (b == 0) return a / b;
  T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
  if (div == 0) return std::copysign(T(0), a / b);
  T floordiv = std::floor(div);
  if (div - floordiv > T(0.5)) floordiv += T(1);
  return floordiv;
}
// Python's %: the sign of the divisor.
template <class T>
inline T remainder_float(T a, T b) {
  T mod = std::fmod(a, b);
  if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
  return mod;
}
// Integer power by squaring (wrapping); negative exponents give 0 except for bases 1 and -1, as PyTorch's powi.
inline int64_t pow_int(int64_t a, int64_t b) {
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b % 2) ? -1 : 1;
    return 0;
  }
  int64_t result = 1;
  while (b) {
    if (b & 1) result = wrap_mul(result, a);
    b /= 2;
    a = wrap_mul(a, a);
  }
  return result;
}

// NaN-propagating max/min (torch.maximum/minimum, clamp), written with select so that loops vectorize.
template <class T>
inline T max_nan(T a, T b) {
  if constexpr (kIsFloat<T>) return select((a != a) | (b != b), a + b, select(a > b, a, b));
  else return select(a > b, a, b);
}
template <class T>
inline T min_nan(T a, T b) {
  if constexpr (kIsFloat<T>) return select((a != a) | (b != b), a + b, select(a < b, a, b));
  else return select(a < b, a, b);
}

double erfinv(double y);   // pointwise_math.cpp
double digamma(double x);  // pointwise_math.cpp
double lgamma(double x);   // thread-safe (lgamma_r): std::lgamma writes the global signgam

}  // namespace sinter::pmath
