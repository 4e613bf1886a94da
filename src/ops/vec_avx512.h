// The AVX-512F building blocks shared by vec_math.cpp (pointwise maps), vec_rows.cpp (row kernels) and the
// AVX-512 conv and thin-GEMM kernels: the target macros, exp, and tail masks. Internal to src/ops: every function
// here carries the avx512f target itself, and runs only after the caller checked the CPU for AVX-512F.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
// g++ 12 warns about the deliberately undefined pass-through operand inside unmasked intrinsics
// (_mm512_max_ps, _mm512_rcp14_ps, _mm512_reduce_add_ps, ...): a false positive of its headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#define SINTER_VEC_X86 1
#define SINTER_AVX512 __attribute__((target("avx512f")))
#define SINTER_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline
#endif

#if defined(SINTER_VEC_X86)
namespace sinter::vec::avx512 {

SINTER_AVX512_INLINE __m512 splat(float v) { return _mm512_set1_ps(v); }

// 16 floats rounded to bfloat16 exactly as loops::f32_to_bf16 (to nearest even, NaN kept quiet): each lane's
// 16 bits in its low half.
SINTER_AVX512_INLINE __m512i bf16_bits(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i hi = _mm512_srli_epi32(x, 16);
  const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
}

// exp(x) for x in [-104, 89] or NaN (callers clamp). x = n ln2 + r with n = round(x log2e), |r| <= ln2/2:
// the rounding is the 1.5 * 2^23 trick inside one FMA (one uop, where vroundscaleps is two on Intel cores),
// ln2 in two pieces so that r is exact to about 2^-24 relative (x - n * ln2_hi is exact under FMA). exp(r) is
// a degree-6 polynomial 1 + r + c2 r^2 + ... + c6 r^6 with c2..c6 fitted for minimax relative error on
// [-ln2/2, ln2/2] (3e-9, far below float's rounding). vscalefps multiplies by 2^n with one rounding: it
// gives inf past the top of the range and correctly rounded subnormals or 0 at the bottom, with no selects.
SINTER_AVX512_INLINE __m512 exp_round_n(__m512 x) {  // round(x log2e), exp_core's and exp_le0_fast_v's n
  const __m512 magic = splat(12582912.f);
  return _mm512_sub_ps(_mm512_fmadd_ps(x, splat(1.44269504088896341f), magic), magic);
}
SINTER_AVX512_INLINE __m512 exp_core(__m512 x) {
  const __m512 n = exp_round_n(x);
  __m512 r = _mm512_fnmadd_ps(n, splat(0.693147182464599609375f), x);
  r = _mm512_fnmadd_ps(n, splat(-1.904654299957768e-09f), r);
  __m512 p = splat(1.381453942e-03f);
  p = _mm512_fmadd_ps(p, r, splat(8.368745446e-03f));
  p = _mm512_fmadd_ps(p, r, splat(4.166838899e-02f));
  p = _mm512_fmadd_ps(p, r, splat(1.666652113e-01f));
  p = _mm512_fmadd_ps(p, r, splat(4.999999404e-01f));
  p = _mm512_fmadd_ps(p, r, splat(1.f));
  p = _mm512_fmadd_ps(p, r, splat(1.f));
  return _mm512_scalef_ps(p, n);
}

// The clamps keep exp_core's reduction finite (inf - inf would be NaN); results there are already 0 or inf.
// vmaxps/vminps return their second operand when either is NaN, so x goes second: NaN passes through.
SINTER_AVX512_INLINE __m512 exp_v(__m512 x) {
  return exp_core(_mm512_min_ps(splat(89.f), _mm512_max_ps(splat(-104.f), x)));
}
// exp(x) for x <= 0 or NaN: only the lower clamp.
SINTER_AVX512_INLINE __m512 exp_le0_v(__m512 x) { return exp_core(_mm512_max_ps(splat(-104.f), x)); }

// exp(x) for x <= 0 or NaN, two FMAs cheaper than exp_le0_v, for softmax's exp pass: that pass can set the
// kernel's pace (on the 16-vCPU host softmax's compute alone took 110-132% of a copy's time,
// bench/results/rowpass-h200-16core-2026-11-30-s6-pool-and-compute.txt; on the development machine this exp cut
// it from 2.34-2.41 to 2.07-2.09 ms). ln2 in one piece and a degree-5 polynomial fitted as exp_core's: within
// 2.2e-7 relative for x >= -20 and 4e-7 down to the subnormal results (ln2's rounding adds |n| * 1.9e-9),
// where exp_core stays within 1.5 ulps.
SINTER_AVX512_INLINE __m512 exp_le0_fast_v(__m512 x) {
  x = _mm512_max_ps(splat(-104.f), x);
  const __m512 n = exp_round_n(x);
  const __m512 r = _mm512_fnmadd_ps(n, splat(0.693147182464599609375f), x);
  __m512 p = _mm512_fmadd_ps(splat(8.3125040542e-03f), r, splat(4.1890337789e-02f));
  p = _mm512_fmadd_ps(p, r, splat(1.6667115380e-01f));
  p = _mm512_fmadd_ps(p, r, splat(4.9999230258e-01f));
  p = _mm512_fmadd_ps(p, r, splat(1.f));
  p = _mm512_fmadd_ps(p, r, splat(1.f));
  return _mm512_scalef_ps(p, n);
}

// exp(x - m) for the x of a row whose largest element is m, one operation fewer than exp_le0_fast_v(x - m): no
// subtraction, as x itself is reduced. x = (k/32) ln2 + r with k = round(32 x log2e), |r| <= ln2/64 (one FMA on
// a magic number whose last bit is 1/32 leaves k/32 in its value and k mod 32 in its low five bits);
// 2^(k/32) = 2^floor(k/32) * T[k mod 32] from a 32-entry table held in two registers (one vpermt2ps); exp(r) a
// degree-2 polynomial (relative minimax 5.3e-8 on that range) whose coefficients carry the factor exp(-m),
// rounded once per row; vscalefps applies 2^floor(k/32). So: clamp, FMA, subtract, FNMA, two FMAs, permute,
// multiply, scalef. Valid for finite |m| <= 40 (exp_row_fits): exp(-m) is then a normal float, and every x kept
// (m - 104 <= x <= m) has |k/32| < 2^17 for the magic number. A sweep of every 97th float from m - 104 to m, for
// 33 values of m: within 3.9e-7 relative for x >= m - 20, 5.6e-7 down to float's smallest normal (ln2's
// rounding adds |k/32| * 1.9e-9, the coefficients' 6e-8 is a factor common to the row). PyTorch's softmax uses
// an exp within 20 ulps (1.2e-6), exp_u20.
struct ExpRow {
  __m512 lo, c0, c1, c2, tlo, thi;
};
inline bool exp_row_fits(float m) { return m >= -40.f && m <= 40.f; }
alignas(64) inline constexpr float kExp2Fractions[32] = {  // 2^(j/32), correctly rounded
    0x1.000000p+0f, 0x1.059b0ep+0f, 0x1.0b5586p+0f, 0x1.11301ep+0f, 0x1.172b84p+0f, 0x1.1d4874p+0f, 0x1.2387a6p+0f,
    0x1.29e9e0p+0f, 0x1.306fe0p+0f, 0x1.371a74p+0f, 0x1.3dea64p+0f, 0x1.44e086p+0f, 0x1.4bfdaep+0f, 0x1.5342b6p+0f,
    0x1.5ab07ep+0f, 0x1.6247ecp+0f, 0x1.6a09e6p+0f, 0x1.71f75ep+0f, 0x1.7a1148p+0f, 0x1.82589ap+0f, 0x1.8ace54p+0f,
    0x1.93737cp+0f, 0x1.9c4918p+0f, 0x1.a5503cp+0f, 0x1.ae89fap+0f, 0x1.b7f770p+0f, 0x1.c199bep+0f, 0x1.cb720ep+0f,
    0x1.d5818ep+0f, 0x1.dfc974p+0f, 0x1.ea4afap+0f, 0x1.f50766p+0f};
SINTER_AVX512_INLINE ExpRow exp_row(float m) {
  const double s = std::exp(-static_cast<double>(m));
  return {splat(m - 104.f), splat(static_cast<float>(1.0000000004299567 * s)),
          splat(static_cast<float>(1.0000146621172925 * s)), splat(static_cast<float>(0.4999963344456748 * s)),
          _mm512_load_ps(kExp2Fractions), _mm512_load_ps(kExp2Fractions + 16)};
}
// kClamp = false: for rows whose every x is >= m - 104 or NaN (the caller knows the row's min), one op fewer.
template <bool kClamp = true>
SINTER_AVX512_INLINE __m512 exp_row_v(const ExpRow& e, __m512 x) {
  const __m512 magic = splat(393216.f);  // 1.5 * 2^18: its last bit is 2^-5
  const __m512 c = kClamp ? _mm512_max_ps(e.lo, x) : x;  // NaN passes (second operand)
  const __m512 s = _mm512_fmadd_ps(c, splat(1.44269504088896341f), magic);
  const __m512 k = _mm512_sub_ps(s, magic);  // k/32
  const __m512 r = _mm512_fnmadd_ps(k, splat(0.693147182464599609375f), c);
  const __m512 p = _mm512_fmadd_ps(_mm512_fmadd_ps(e.c2, r, e.c1), r, e.c0);
  const __m512 t = _mm512_permutex2var_ps(e.tlo, _mm512_castps_si512(s), e.thi);
  return _mm512_scalef_ps(_mm512_mul_ps(t, p), k);
}

SINTER_AVX512_INLINE __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
// The first min(n, 16) lanes: a full vector, or the tail of a loop in steps of 16.
SINTER_AVX512_INLINE __mmask16 first_lanes(int64_t n) { return n >= 16 ? __mmask16(0xffff) : tail_mask(n); }

}  // namespace sinter::vec::avx512
#endif
