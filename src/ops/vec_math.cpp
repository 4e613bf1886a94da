// AVX-512F kernels for exp, sigmoid, silu and gelu over arrays (vec_math.h says why they exist; the row kernels
// are in vec_rows.cpp).
// Every function that uses AVX-512 intrinsics carries the target attribute itself (no lambdas: they would
// not inherit it), so the rest of the library stays baseline x86-64 and these run only after available().
#include "ops/vec_math.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "ops/pointwise_math.h"
#include "support/check.h"

#include "ops/vec_avx512.h"

namespace sinter::vec {

bool available() {
#if defined(SINTER_VEC_X86)
  static const bool yes = [] {
    if (!__builtin_cpu_supports("avx512f")) return false;
    const char* v = std::getenv("SINTER_VEC_MATH");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return yes;
#else
  return false;
#endif
}

// Which is cheaper per vector depends on the core. Zen 5 (measured, one core, in L1): the divide forms are
// about 15% faster (sigmoid 0.138 against 0.161 ns/element, gelu 0.131 against 0.148). Intel cores with
// AVX-512 run vdivps zmm as 3 uops on ports 0 and 5 plus about 10 cycles of the core's one divider per
// vector, shared by both hyperthreads; vrcp14ps is also 3 uops there, so the reciprocal forms cost 2-3 more
// port uops per vector but leave the divider alone. Counting ports 0 and 5 only, the forms come out within
// about a cycle per vector (sigmoid 19 uops + the divider against 21, gelu 20 + the divider against 23).
// Measured on the 16-core Xeon host (bench/results/eager-h200-16core-2026-11-30-s4.txt, two eager suites
// minutes apart, 2^25 floats, 16 threads): divide 1.855 ms against reciprocal 1.987 ms for sigmoid, 1.650
// against 1.706 ms for gelu. So the divide is the default everywhere; SINTER_VEC_DIVISION=divide|reciprocal
// overrides (read once), to measure both on the machine at hand.
Division division() {
  static const Division d = [] {
    const char* v = std::getenv("SINTER_VEC_DIVISION");
    if (v != nullptr && std::string_view(v) == "reciprocal") return Division::kReciprocal;
    return Division::kDivide;
  }();
  return d;
}

#if defined(SINTER_VEC_X86)
namespace {

using namespace avx512;

// sigmoid through e = exp(-|x|) in (0, 1]: 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0. The divisor stays
// in (1, 2], so the quotient has no special cases (1 + exp(-x) itself would be inf for x < -88.7), and
// results for very negative x keep their relative precision down to the subnormals instead of becoming 0.
// kRcp: 1 / (1 + e) as vrcp14ps (relative error < 2^-14) and one Newton step r + r (1 - d r), which squares
// the error (about 2^-28), then times e for x < 0; else one vdivps (division() says when each pays).
template <bool kRcp>
SINTER_AVX512_INLINE __m512 sigmoid_v(__m512 x) {
  const __m512 neg_abs =
      _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
  const __m512 e = exp_le0_v(neg_abs);
  const __m512 d = _mm512_add_ps(e, splat(1.f));
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  if constexpr (kRcp) {
    const __m512 r0 = _mm512_rcp14_ps(d);
    const __m512 r = _mm512_fmadd_ps(r0, _mm512_fnmadd_ps(d, r0, splat(1.f)), r0);
    return _mm512_mask_mul_ps(r, neg, r, e);
  } else {
    return _mm512_div_ps(_mm512_mask_mov_ps(splat(1.f), neg, e), d);
  }
}

// gelu(x) = h + h erf(x / sqrt2), h = x / 2, with pmath::gelu_erf_f's rational erf(u) = u P(u^2) / Q(u^2),
// rewritten in x: u^2 = x^2 / 2 is folded into the coefficients (powers of two, exact) and 1/sqrt2 into P's,
// which saves the multiply by 1/sqrt2. kRcp: the quotient as vrcp14ps's estimate e0 = xP / Q corrected once by
// its residual, e0 + (xP - Q e0) / Q (the residual times the estimate of 1/Q; Q >= 1 wherever the rational is
// used); else one vdivps. Past the cut (and for the inf / inf that huge x gives) the mask takes sign(x), as
// gelu_erf_f's select does.
struct GeluCoefficients {
  float p[6], q[6];
  constexpr GeluCoefficients() : p(), q() {
    float scale = 1.f;  // 2^-(5 - i) for the coefficient of s^(5 - i)
    for (int i = 5; i >= 0; --i, scale *= 0.5f) {
      p[i] = pmath::kGeluErfP[i] * scale * 0.70710678118654752440f;
      q[i] = pmath::kGeluErfQ[i] * scale;
    }
  }
};
constexpr GeluCoefficients kGelu;

template <bool kRcp>
SINTER_AVX512_INLINE __m512 gelu_v(__m512 x) {
  const __m512 s = _mm512_mul_ps(x, x);
  __m512 p = splat(kGelu.p[0]), q = splat(kGelu.q[0]);
  for (int i = 1; i < 6; ++i) {
    p = _mm512_fmadd_ps(p, s, splat(kGelu.p[i]));
    q = _mm512_fmadd_ps(q, s, splat(kGelu.q[i]));
  }
  const __m512 xp = _mm512_mul_ps(x, p);
  __m512 erf_small;
  if constexpr (kRcp) {
    const __m512 rq = _mm512_rcp14_ps(q);
    const __m512 e0 = _mm512_mul_ps(xp, rq);
    erf_small = _mm512_fmadd_ps(rq, _mm512_fnmadd_ps(q, e0, xp), e0);
  } else {
    erf_small = _mm512_div_ps(xp, q);
  }
  const float cut = pmath::kGeluErfCut * pmath::kGeluErfCut * 2.f;  // on x^2 = 2 u^2
  const __mmask16 small = _mm512_cmp_ps_mask(s, splat(cut), _CMP_LT_OQ);
  // (x & sign bit) | 1.0: +-1 with x's sign, one vpternlogd (0xEA = (A & B) | C).
  const __m512i sign1 = _mm512_ternarylogic_epi32(
      _mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u)), _mm512_castps_si512(splat(1.f)), 0xEA);
  const __m512 erf = _mm512_mask_mov_ps(_mm512_castsi512_ps(sign1), small, erf_small);
  const __m512 h = _mm512_mul_ps(x, splat(0.5f));
  return _mm512_fmadd_ps(h, erf, h);
}

struct Exp {
  SINTER_AVX512_INLINE static __m512 apply(__m512 x) { return exp_v(x); }
};
template <bool kRcp>
struct Sigmoid {
  SINTER_AVX512_INLINE static __m512 apply(__m512 x) { return sigmoid_v<kRcp>(x); }
};
template <bool kRcp>
struct Silu {
  SINTER_AVX512_INLINE static __m512 apply(__m512 x) { return _mm512_mul_ps(x, sigmoid_v<kRcp>(x)); }
};
template <bool kRcp>
struct Gelu {
  SINTER_AVX512_INLINE static __m512 apply(__m512 x) { return gelu_v<kRcp>(x); }
};

// y[i] = Op(x[i]): whole vectors, then one masked vector for the last n % 16 (masked-off lanes are neither
// read nor written, so there is no scalar tail loop and no reading past the arrays).
template <class Op>
SINTER_AVX512_INLINE void map(const float* x, float* y, int64_t n, bool stream) {
  int64_t i = 0;
  if (stream && (reinterpret_cast<uintptr_t>(y) & 63) == 0) {
    for (; i + 16 <= n; i += 16) _mm512_stream_ps(y + i, Op::apply(_mm512_loadu_ps(x + i)));
  } else {
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, Op::apply(_mm512_loadu_ps(x + i)));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, Op::apply(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// 16 bfloat16 values -> float: exact, the bits moved to the high half.
SINTER_AVX512_INLINE __m512 load_bf16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
// 16 floats -> bfloat16, rounded exactly as loops::f32_to_bf16: to nearest even, NaN kept quiet.
SINTER_AVX512_INLINE void store_bf16(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bf16_bits(v)));
}

// The same over bfloat16 arrays, converted in registers. The last n % 16 go through a 16-element copy
// (masked 16-bit loads and stores would need AVX-512BW).
template <class Op>
SINTER_AVX512_INLINE void map_bf16(const uint16_t* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store_bf16(y + i, Op::apply(load_bf16(x + i)));
  if (i < n) {
    alignas(32) uint16_t buf[16] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * 2);
    store_bf16(buf, Op::apply(load_bf16(buf)));
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * 2);
  }
}

template <class Op>
SINTER_AVX512 void map_avx512(const float* x, float* y, int64_t n, bool stream) {
  map<Op>(x, y, n, stream);
}
template <class Op>
SINTER_AVX512 void map_bf16_avx512(const uint16_t* x, uint16_t* y, int64_t n) {
  map_bf16<Op>(x, y, n);
}

// The Op<kRcp> kernel for a division form.
template <template <bool> class Op>
void map_for_division(Division d, const float* x, float* y, int64_t n, bool stream) {
  if (d == Division::kReciprocal)
    map_avx512<Op<true>>(x, y, n, stream);
  else
    map_avx512<Op<false>>(x, y, n, stream);
}
template <template <bool> class Op>
void map_bf16_for_division(const uint16_t* x, uint16_t* y, int64_t n) {
  if (division() == Division::kReciprocal)
    map_bf16_avx512<Op<true>>(x, y, n);
  else
    map_bf16_avx512<Op<false>>(x, y, n);
}

}  // namespace

void exp(const float* x, float* y, int64_t n, bool stream) { map_avx512<Exp>(x, y, n, stream); }
void sigmoid(const float* x, float* y, int64_t n, bool stream) {
  map_for_division<Sigmoid>(division(), x, y, n, stream);
}
void silu(const float* x, float* y, int64_t n, bool stream) { map_for_division<Silu>(division(), x, y, n, stream); }
void gelu(const float* x, float* y, int64_t n, bool stream) { map_for_division<Gelu>(division(), x, y, n, stream); }
void sigmoid_as(Division d, const float* x, float* y, int64_t n) { map_for_division<Sigmoid>(d, x, y, n, false); }
void silu_as(Division d, const float* x, float* y, int64_t n) { map_for_division<Silu>(d, x, y, n, false); }
void gelu_as(Division d, const float* x, float* y, int64_t n) { map_for_division<Gelu>(d, x, y, n, false); }
void exp_bf16(const uint16_t* x, uint16_t* y, int64_t n) { map_bf16_avx512<Exp>(x, y, n); }
void sigmoid_bf16(const uint16_t* x, uint16_t* y, int64_t n) { map_bf16_for_division<Sigmoid>(x, y, n); }
void silu_bf16(const uint16_t* x, uint16_t* y, int64_t n) { map_bf16_for_division<Silu>(x, y, n); }
void gelu_bf16(const uint16_t* x, uint16_t* y, int64_t n) { map_bf16_for_division<Gelu>(x, y, n); }

#else  // not x86-64: available() is false, so nothing below runs.

void exp(const float*, float*, int64_t, bool) { SINTER_INTERNAL_ASSERT(false, "vec::exp without AVX-512"); }
void sigmoid(const float*, float*, int64_t, bool) { SINTER_INTERNAL_ASSERT(false, "vec::sigmoid without AVX-512"); }
void silu(const float*, float*, int64_t, bool) { SINTER_INTERNAL_ASSERT(false, "vec::silu without AVX-512"); }
void gelu(const float*, float*, int64_t, bool) { SINTER_INTERNAL_ASSERT(false, "vec::gelu without AVX-512"); }
void exp_bf16(const uint16_t*, uint16_t*, int64_t) { SINTER_INTERNAL_ASSERT(false, "vec::exp_bf16 without AVX-512"); }
void sigmoid_bf16(const uint16_t*, uint16_t*, int64_t) {
  SINTER_INTERNAL_ASSERT(false, "vec::sigmoid_bf16 without AVX-512");
}
void silu_bf16(const uint16_t*, uint16_t*, int64_t) { SINTER_INTERNAL_ASSERT(false, "vec::silu_bf16 without AVX-512"); }
void sigmoid_as(Division, const float*, float*, int64_t) {
  SINTER_INTERNAL_ASSERT(false, "vec::sigmoid_as without AVX-512");
}
void silu_as(Division, const float*, float*, int64_t) { SINTER_INTERNAL_ASSERT(false, "vec::silu_as without AVX-512"); }
void gelu_as(Division, const float*, float*, int64_t) { SINTER_INTERNAL_ASSERT(false, "vec::gelu_as without AVX-512"); }
void gelu_bf16(const uint16_t*, uint16_t*, int64_t) { SINTER_INTERNAL_ASSERT(false, "vec::gelu_bf16 without AVX-512"); }

#endif

}  // namespace sinter::vec
