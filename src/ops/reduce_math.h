// Inner loops shared by the reduction, softmax and normalisation kernels: row reductions with several
// independent accumulators (so g++ vectorizes them without -ffast-math: no single running sum to
// reassociate), pairwise splitting so long float rows stay accurate, NaN-propagating max/min, and an exp that
// vectorizes (std::exp does not).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

// Compute-bound row kernels (the exp in softmax and logsumexp) are compiled twice, for baseline x86-64 and
// for AVX2 + FMA (x86-64-v3), and the loader picks one for the CPU at hand; the library still runs on any
// x86-64. Memory-bound loops gain nothing from wider vectors and are compiled once. Use only on functions of
// one .cpp.
// An AVX-512 clone (x86-64-v4) as well: twice the lanes again and 32 registers for the exp polynomial.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SINTER_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SINTER_CLONES
#endif

namespace sinter::reduce {

// Lanes per row accumulator: 16 floats or doubles is two to four vector registers, enough to hide add
// latency.
inline constexpr int kLanes = 16;
// Rows longer than this are summed as two halves, recursively (pairwise), bounding rounding error by
// O(log n) instead of O(n) for float sums.
inline constexpr int64_t kPairwiseBlock = 2048;

// Integer sums and products wrap on overflow as in PyTorch; going through uint64 keeps that defined in C++.
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
template <class A>
inline A add(A a, A b) {
  if constexpr (std::is_same_v<A, int64_t>)
    return wrap_add(a, b);
  else
    return a + b;
}
template <class A>
inline A mul(A a, A b) {
  if constexpr (std::is_same_v<A, int64_t>)
    return wrap_mul(a, b);
  else
    return a * b;
}

// sum of f(p[i]) for i < n in kLanes accumulators, no pairwise split: the leaf of lane_sum. Always inlined, so
// that callers compiled as wide-vector clones (SINTER_CLONES) get it in their own instruction set.
template <class A, class C, class F>
[[gnu::always_inline]] inline A lane_sum_leaf(const C* p, int64_t n, F&& f) {
  A acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] = add<A>(acc[j], f(p[i + j]));
  A tail = 0;
  for (; i < n; ++i) tail = add<A>(tail, f(p[i]));
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] = add<A>(acc[j], acc[j + w]);
  return add<A>(acc[0], tail);
}

// sum of f(p[i]) for i < n. Exact-integer types skip the pairwise split (no rounding to bound). `leaf`, when
// given, computes a leaf instead (vec::lane_sum: the same sum in AVX-512).
template <class A, class C, class F>
inline A lane_sum(const C* p, int64_t n, F&& f, A (*leaf)(const C*, int64_t) = nullptr) {
  if constexpr (std::is_floating_point_v<A>) {
    if (n > kPairwiseBlock) {
      int64_t half = (n / 2) / kLanes * kLanes;
      return lane_sum<A>(p, half, f, leaf) + lane_sum<A>(p + half, n - half, f, leaf);
    }
  }
  if (leaf != nullptr) return leaf(p, n);
  return lane_sum_leaf<A>(p, n, f);
}

// sum of f(p[i]) for i < n as float blocks of kPairwiseBlock added up in double: as accurate as lane_sum's
// pairwise split, but not recursive, so it inlines into wide-vector clones (lane_sum does not).
template <class C, class F>
[[gnu::always_inline]] inline double block_sum(const C* p, int64_t n, F&& f) {
  double total = 0;
  for (int64_t b = 0; b < n; b += kPairwiseBlock) total += lane_sum_leaf<C>(p + b, std::min(n - b, kPairwiseBlock), f);
  return total;
}

template <class C>
inline bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>)
    return x != x;
  else
    return false;
}

// Max/min that propagate NaN (once a NaN is taken it stays: NaN > x and x > NaN are both false).
template <class C>
inline C max_nan(C acc, C x) {
  return (x > acc || is_nan(x)) ? x : acc;
}
template <class C>
inline C min_nan(C acc, C x) {
  return (x < acc || is_nan(x)) ? x : acc;
}

// c ? a : b through bit masks. g++ will not if-convert a float select whose condition is a float comparison
// (it may trap, with the default -ftrapping-math), which leaves branches in the loop and stops vectorization;
// integer masks have no such restriction.
template <class C>
inline C select(bool c, C a, C b) {
  using U = std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>;
  const U m = U(0) - static_cast<U>(c);
  return std::bit_cast<C>((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & ~m));
}

template <class C>
inline C lowest() {
  if constexpr (std::is_floating_point_v<C>)
    return -std::numeric_limits<C>::infinity();
  else
    return std::numeric_limits<C>::lowest();
}
template <class C>
inline C highest() {
  if constexpr (std::is_floating_point_v<C>)
    return std::numeric_limits<C>::infinity();
  else
    return std::numeric_limits<C>::max();
}

// max (kMax) or min of f(p[i]) over a row, NaN-propagating; `init` for an empty row.
template <bool kMax, class C, class F>
inline C lane_extreme(const C* p, int64_t n, C init, F&& f) {
  C acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = init;
  int64_t i = 0;
  // Kept as a loop (not unrolled into 16 scalar selects, which g++ then fails to vectorize at -O3).
  for (; i + kLanes <= n; i += kLanes)
#pragma GCC unroll 1
    for (int j = 0; j < kLanes; ++j)
      acc[j] = kMax ? max_nan(acc[j], f(p[i + j])) : min_nan(acc[j], f(p[i + j]));
  C r = init;
  for (; i < n; ++i) r = kMax ? max_nan(r, f(p[i])) : min_nan(r, f(p[i]));
  for (int j = 0; j < kLanes; ++j) r = kMax ? max_nan(r, acc[j]) : min_nan(r, acc[j]);
  return r;
}

// The largest of p[0..n) for a shift that only has to keep exp() in range (softmax, logsumexp): NaNs need not
// propagate here, because a NaN input makes the sum of exps NaN anyway. So `a < x ? x : a`, which g++ turns
// into one vector max (it is exactly maxps: a NaN x leaves a), over 64 independent lanes (four AVX-512
// registers, so the max latency is hidden): 0.12 -> 0.02 ns/element against lane_extreme's NaN-propagating
// compare-and-blend. `init` for an empty row.
template <class C>
inline C lane_max_shift(const C* p, int64_t n, C init) {
  constexpr int kWide = 64;
  C acc[kWide];
  for (int j = 0; j < kWide; ++j) acc[j] = init;
  int64_t i = 0;
  for (; i + kWide <= n; i += kWide)
    for (int j = 0; j < kWide; ++j) acc[j] = acc[j] < p[i + j] ? p[i + j] : acc[j];
  C r = init;
  for (; i < n; ++i) r = r < p[i] ? p[i] : r;
  for (int j = 0; j < kWide; ++j) r = r < acc[j] ? acc[j] : r;
  return r;
}

// exp(x) for float in a form g++ vectorizes: Cody-Waite range reduction x = k ln2 + r and Cephes' degree-6
// polynomial for exp(r) (about 1 ulp). Results below 2^-125 (x < -86.5) flush to 0: no denormals, which only
// matters for values that vanish against any sum they join. exp(-inf) is 0, exp(+inf) inf, NaN stays NaN: the
// two selects at the end replace whatever the reduction made of inputs out of range.
inline float exp_fast(float x) {
  // Adding 1.5 * 2^23 rounds to an integer in the low mantissa bits (no SSE4.1 floor needed).
  const float t = x * 1.44269504088896341f + 12582912.0f;
  const uint32_t k = std::bit_cast<uint32_t>(t) - 0x4B400000u;
  const float kf = t - 12582912.0f;
  const float r = x - kf * 0.693359375f + kf * 2.12194440e-4f;
  float y = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) * r +
             1.6666665459e-1f) *
                r +
            5.0000001201e-1f;
  y = y * (r * r) + r + 1.0f;
  // 2^k as 2^(k-1) * 2, so k = 128 (x just below the overflow threshold) still has a finite scale.
  const float res = y * std::bit_cast<float>((k + 126u) << 23) * 2.0f;
  return select(x > 88.72283f, std::numeric_limits<float>::infinity(), select(x < -86.5f, 0.0f, res));
}
inline double exp_fast(double x) { return std::exp(x); }

// The sum of exp(x[i] - m), also written to y when kStore (y may be x). Per block of kPairwiseBlock: the exps
// are written out by a plain loop (which g++ vectorizes; one loop computing and summing did not vectorize well:
// the lane sums lived on the stack and every step waited on a store and a load), then summed in lanes from L1;
// block sums add up in double, so long rows stay accurate. Always inlined, so that it is compiled as part of
// each caller's wide-vector clones (left to itself g++ stopped inlining it once there were three clones).
template <bool kStore, class C>
[[gnu::always_inline]] inline double exp_sum(const C* x, C* y, int64_t n, C m) {
  C scratch[kStore ? 1 : kPairwiseBlock];
  double total = 0;
  for (int64_t b = 0; b < n; b += kPairwiseBlock) {
    const int64_t len = std::min(n - b, kPairwiseBlock);
    const C* in = x + b;
    C* out = kStore ? y + b : scratch;
    for (int64_t i = 0; i < len; ++i) out[i] = exp_fast(in[i] - m);
    total += lane_sum_leaf<C>(out, len, [](C v) { return v; });
  }
  return total;
}

// out[i] = f(p[i]) for i < n, in pieces, each preceded by prefetches of its share of `next` (next_bytes
// bytes, the row a caller reads after this one; may be null). Rows of a few KB cross pages, where hardware
// prefetchers stop, so without this the next row's first pass waits on memory with nothing else to do; spread
// over a pass that computes from cache, its loads overlap that work. Results are those of map_row.
template <class In, class Out, class F>
[[gnu::always_inline]] inline void map_row_prefetch(const In* p, Out* out, int64_t n, const char* next,
                                                    int64_t next_bytes, F&& f) {
  constexpr int64_t kPiece = 256;
  int64_t fetched = 0;
  for (int64_t b = 0; b < n; b += kPiece) {
    const int64_t len = std::min(kPiece, n - b);
    if (next != nullptr) {
      const int64_t upto = next_bytes * (b + len) / n;
      for (; fetched < upto; fetched += 64) __builtin_prefetch(next + fetched);
    }
    for (int64_t i = 0; i < len; ++i) out[b + i] = f(p[b + i]);
  }
}

// out[i] = f(p[i]); out may be p.
template <class In, class Out, class F>
inline void map_row(const In* p, Out* out, int64_t n, F&& f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(p[i]);
}

}  // namespace sinter::reduce
