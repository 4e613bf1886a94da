// AVX-512F row kernels (vec_math.h declares them): softmax's and layer_norm's passes over one contiguous float
// row, and attention's row max and exp pass. A row of a large tensor comes from memory; softmax_row and
// layer_norm_row fetch the next row while they work through this one, by the schedule row_prefetch() picks.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "ops/vec_avx512.h"
#include "ops/vec_math.h"
#include "support/check.h"

namespace sinter::vec {

// Measured on rows of 4096 floats beside a streaming copy of the same bytes. On the 16-core Xeon host
// (bench/results/rowpass-h200-*.txt and eager-variants-h200-*.txt): with the next row fetched into L1 over
// the middle pass, softmax ran at 54-57% of the copy and layer_norm at 57-64%; fetched into L2 over all three
// passes, 59-68% and 70-96% (the VM's other tenants move every figure by about ten points between runs).
// Software prefetches into L1 each hold one of a core's few line-fill buffers until memory answers, which
// stalls the pass they are spread over. On the Zen 5 development machine (2 threads) it is the other way
// round: softmax 78-80% against 72-73%. So L2 over all passes on Intel CPUs, L1 over the middle pass
// elsewhere; SINTER_ROW_PREFETCH=l1|l2 overrides (read once), to compare on the machine at hand.
RowPrefetch row_prefetch() {
  static const RowPrefetch p = [] {
    const char* v = std::getenv("SINTER_ROW_PREFETCH");
    if (v != nullptr && std::string_view(v) == "l1") return RowPrefetch::kMiddlePassL1;
    if (v != nullptr && std::string_view(v) == "l2") return RowPrefetch::kAllPassesL2;
#if defined(SINTER_VEC_X86)
    if (__builtin_cpu_is("intel")) return RowPrefetch::kAllPassesL2;
#endif
    return RowPrefetch::kMiddlePassL1;
  }();
  return p;
}

#if defined(SINTER_VEC_X86)
namespace {

using namespace avx512;

constexpr int64_t kSumBlock = 2048;  // reduce::kPairwiseBlock: float lane sums per block, blocks in double
constexpr int64_t kPiece = 256;      // elements between two shares of the next row's prefetches

// The next row's lines, issued a share at a time as a kernel's passes over this row advance.
struct NextRow {
  const char* p = nullptr;
  int64_t bytes = 0, done = 0;
  int passes = 1;  // the kernel's passes over its row
  bool l2 = false;
};

NextRow next_row(const char* next, int64_t bytes, int passes) {
  return {next, next == nullptr ? 0 : bytes, 0, passes, row_prefetch() == RowPrefetch::kAllPassesL2};
}

// The share due once pass `pass` has reached element i of n: all passes into L2, or the middle pass into L1.
// Always inlined: a function holding only prefetches is found free of side effects, and its calls dropped.
SINTER_AVX512_INLINE void fetch(NextRow& f, int pass, int64_t i, int64_t n) {
  if (f.p == nullptr) return;
  if (f.l2) {
    const int64_t upto = f.bytes * (pass * n + i) / (f.passes * n);
    for (; f.done < upto; f.done += 64) _mm_prefetch(f.p + f.done, _MM_HINT_T2);
  } else if (pass == f.passes / 2) {
    const int64_t upto = f.bytes * i / n;
    for (; f.done < upto; f.done += 64) _mm_prefetch(f.p + f.done, _MM_HINT_T0);
  }
}

// The largest of x[0..n) as a shift for exp (reduce::lane_max_shift's contract: a NaN need not propagate,
// it makes the sum NaN anyway), and the smallest, which tells exp_pass whether the row needs exp's clamp;
// -inf and inf for n = 0. The min is one vminps per vector in a pass that waits on its loads.
struct RowRange {
  float max, min;
};
SINTER_AVX512_INLINE RowRange range_pass(const float* x, int64_t n, NextRow& f, int pass) {
  const float inf = std::numeric_limits<float>::infinity();
  const __m512 lowest = splat(-inf), highest = splat(inf);
  __m512 hi[4] = {lowest, lowest, lowest, lowest}, lo[4] = {highest, highest, highest, highest};  // 4 chains each
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    if ((i & (kPiece - 1)) == 0) fetch(f, pass, std::min(n, i + kPiece), n);
    for (int j = 0; j < 4; ++j) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * j);
      hi[j] = _mm512_max_ps(v, hi[j]), lo[j] = _mm512_min_ps(v, lo[j]);
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 k = tail_mask(std::min<int64_t>(16, n - i));
    const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
    hi[0] = _mm512_mask_max_ps(hi[0], k, v, hi[0]), lo[0] = _mm512_mask_min_ps(lo[0], k, v, lo[0]);
  }
  fetch(f, pass, n, n);
  return {_mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(hi[0], hi[1]), _mm512_max_ps(hi[2], hi[3]))),
          _mm512_reduce_min_ps(_mm512_min_ps(_mm512_min_ps(lo[0], lo[1]), _mm512_min_ps(lo[2], lo[3])))};
}

// One pass computing, storing (kStore) and summing exp(x - m), with `exp` mapping 16 lanes of x to their
// exp(x - m). Two accumulators per block, enough: the exp's dozen dependent operations, not the additions, set
// the pace.
template <bool kStore, class Exp>
SINTER_AVX512_INLINE double exp_pass_with(const float* x, float* y, int64_t n, const Exp& exp, NextRow& f, int pass) {
  double total = 0;
  for (int64_t b = 0; b < n; b += kSumBlock) {
    const int64_t block_end = std::min(n, b + kSumBlock);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t pb = b; pb < block_end; pb += kPiece) {
      const int64_t end = std::min(block_end, pb + kPiece);
      fetch(f, pass, end, n);
      int64_t i = pb;
      for (; i + 32 <= end; i += 32) {
        const __m512 e0 = exp(_mm512_loadu_ps(x + i)), e1 = exp(_mm512_loadu_ps(x + i + 16));
        if constexpr (kStore) {
          _mm512_storeu_ps(y + i, e0);
          _mm512_storeu_ps(y + i + 16, e1);
        }
        acc0 = _mm512_add_ps(acc0, e0);
        acc1 = _mm512_add_ps(acc1, e1);
      }
      for (; i < end; i += 16) {
        const __mmask16 k = tail_mask(std::min<int64_t>(16, end - i));
        const __m512 e = exp(_mm512_maskz_loadu_ps(k, x + i));
        if constexpr (kStore) _mm512_mask_storeu_ps(y + i, k, e);
        acc0 = _mm512_mask_add_ps(acc0, k, acc0, e);
      }
    }
    total += static_cast<double>(_mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)));
  }
  return total;
}

// exp_pass_with on exp_row_v where the row's max m allows it (|m| <= 40: one operation fewer per vector, which
// took softmax's compute alone from 1.46-1.53 to 0.98-1.39 ms on the 16-vCPU host,
// bench/results/rowpass-h200-16core-2026-11-30-s7-exp-row.txt), else on exp_le0_fast_v(x - m).
template <bool kClamp>
struct ExpOfRow {
  ExpRow e;
  SINTER_AVX512_INLINE __m512 operator()(__m512 v) const { return exp_row_v<kClamp>(e, v); }
};
struct ExpShifted {
  __m512 m;
  SINTER_AVX512_INLINE __m512 operator()(__m512 v) const { return exp_le0_fast_v(_mm512_sub_ps(v, m)); }
};
// Rows whose min is known to be at least m - 104 skip exp_row_v's clamp (pass -inf for an unknown min): one op
// fewer again, on the host 69% -> 76% of the copy (medians of 6 interleaved rounds, each pair better,
// bench/results/rowpass-h200-16core-2026-11-30-s7-no-clamp.txt).
template <bool kStore>
SINTER_AVX512_INLINE double exp_pass(const float* x, float* y, int64_t n, float m, float row_min, NextRow& f,
                                     int pass) {
  if (!exp_row_fits(m)) return exp_pass_with<kStore>(x, y, n, ExpShifted{splat(m)}, f, pass);
  const ExpRow e = exp_row(m);
  if (row_min >= m - 104.f) return exp_pass_with<kStore>(x, y, n, ExpOfRow<false>{e}, f, pass);
  return exp_pass_with<kStore>(x, y, n, ExpOfRow<true>{e}, f, pass);
}

// The sum of x[i] (or of (x[i] - mean)^2) as reduce's wide_sum adds it: float lanes over blocks of kSumBlock
// (64 lanes in four registers, folded in the same tree), a scalar tail per block, the blocks added in double.
template <bool kSquares>
SINTER_AVX512_INLINE double lane_sum_pass(const float* x, int64_t n, float mean, NextRow& f, int pass) {
  const __m512 mv = splat(mean);
  double total = 0;
  for (int64_t b = 0; b < n; b += kSumBlock) {
    const int64_t len = std::min(n - b, kSumBlock);
    const float* p = x + b;
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 64 <= len; i += 64) {
      if ((i & (kPiece - 1)) == 0) fetch(f, pass, std::min(n, b + i + kPiece), n);
      for (int j = 0; j < 4; ++j) {
        const __m512 v = _mm512_loadu_ps(p + i + 16 * j);
        if constexpr (kSquares) {
          const __m512 d = _mm512_sub_ps(v, mv);
          a[j] = _mm512_fmadd_ps(d, d, a[j]);
        } else {
          a[j] = _mm512_add_ps(a[j], v);
        }
      }
    }
    float tail = 0;
    for (; i < len; ++i) tail += kSquares ? (p[i] - mean) * (p[i] - mean) : p[i];
    const __m512 folded = _mm512_add_ps(_mm512_add_ps(a[0], a[2]), _mm512_add_ps(a[1], a[3]));
    total += static_cast<double>(_mm512_reduce_add_ps(folded) + tail);
  }
  fetch(f, pass, n, n);
  return total;
}

// y[i] = op(i) for i < n, where op(i, k) gives the 16 lanes from i under mask k. With `stream`, ordinary
// masked stores up to y's first 64-byte boundary, streaming stores for whole vectors from there.
template <class Op>
SINTER_AVX512_INLINE void write_pass(float* y, int64_t n, bool stream, const Op& op, NextRow& f, int pass) {
  int64_t i = 0;
  if (stream) {
    const int64_t head = std::min<int64_t>(n, static_cast<int64_t>(((0 - reinterpret_cast<uintptr_t>(y)) & 63) / 4));
    if (head > 0) _mm512_mask_storeu_ps(y, tail_mask(head), op(0, tail_mask(head)));
    for (i = head; i + 16 <= n; i += 16) {
      if (((i - head) & (kPiece - 1)) == 0) fetch(f, pass, std::min(n, i + kPiece), n);
      _mm512_stream_ps(y + i, op(i, static_cast<__mmask16>(0xffff)));
    }
  } else {
    for (; i + 16 <= n; i += 16) {
      if ((i & (kPiece - 1)) == 0) fetch(f, pass, std::min(n, i + kPiece), n);
      _mm512_storeu_ps(y + i, op(i, static_cast<__mmask16>(0xffff)));
    }
  }
  if (i < n) _mm512_mask_storeu_ps(y + i, tail_mask(n - i), op(i, tail_mask(n - i)));
  fetch(f, pass, n, n);
}

struct Scale {
  const float* s;
  __m512 k;
  SINTER_AVX512_INLINE __m512 operator()(int64_t i, __mmask16 m) const {
    return _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + i), k);
  }
};

struct Affine {  // (x - mean) * rstd * w + b
  const float *x, *w, *b;
  __m512 mean, rstd;
  SINTER_AVX512_INLINE __m512 operator()(int64_t i, __mmask16 m) const {
    const __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mean), rstd);
    return _mm512_fmadd_ps(t, _mm512_maskz_loadu_ps(m, w + i), _mm512_maskz_loadu_ps(m, b + i));
  }
};

}  // namespace

SINTER_AVX512 float row_max(const float* x, int64_t n) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;  // four chains hide vmaxps's latency
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16), c = _mm512_loadu_ps(x + i + 32),
                 d = _mm512_loadu_ps(x + i + 48);
    nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(c, d, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, a), m1 = _mm512_max_ps(m1, b), m2 = _mm512_max_ps(m2, c), m3 = _mm512_max_ps(m3, d);
  }
  for (; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? static_cast<__mmask16>(0xffff) : tail_mask(n - i);
    const __m512 a = _mm512_mask_loadu_ps(lowest, k, x + i);
    nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, a);
  }
  if (nan) return std::numeric_limits<float>::quiet_NaN();
  return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
}

SINTER_AVX512 float lane_sum(const float* x, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_add_ps(acc, _mm512_loadu_ps(x + i));
  float tail = 0;
  for (; i < n; ++i) tail += x[i];
  return _mm512_reduce_add_ps(acc) + tail;  // lanes folded 8, 4, 2, 1 apart: lane_sum_leaf's tree
}

SINTER_AVX512 double exp_shift_sum(const float* x, float* y, int64_t n, float m) {
  NextRow none;
  const float unknown = -std::numeric_limits<float>::infinity();
  if (y != nullptr) return exp_pass<true>(x, y, n, m, unknown, none, 0);
  return exp_pass<false>(x, y, n, m, unknown, none, 0);
}

// The largest of 16 elements spread over x[0..n), a shift for softmax's exps that takes no pass of its own;
// NaN when one of them is -inf (a masked row: softmax_row then takes its max pass, which knows the row's min).
SINTER_AVX512_INLINE float sampled_shift(const float* x, int64_t n) {
  float m = x[0];
  for (int64_t j = 0; j < 16; ++j) {
    const float v = x[j * (n / 16)];
    if (v == -std::numeric_limits<float>::infinity()) return std::numeric_limits<float>::quiet_NaN();
    m = std::max(m, v);
  }
  return m;
}

// Two passes where they suffice: exp(x - s) with s = sampled_shift() stored and summed, then the scaling. Softmax
// does not depend on the shift; s <= max(x) keeps the largest exp >= 1, so the sum cannot underflow. exp_row_v
// without its clamp gives exp(x - s) to 6e-7, or 0 far below s, for every x above -8e17 (at |s| <= 40; farther
// down its polynomial overflows). An element beyond that, NaN, or more than 88 above s makes the sum inf or
// NaN (-inf gives 0 or NaN), and such a row (rare: s lies within the row's spread) is redone with the max pass.
// On the host the two passes took 5-17% less time (median 10%) than three in each of 12 interleaved pairs, 64% ->
// 72% of the copy (bench/results/rowpass-h200-16core-2026-11-30-s7-two-pass.txt). Not when buf is x: the redo
// needs x.
SINTER_AVX512 void softmax_row(const float* x, float* buf, float* y, int64_t n, bool stream, const char* next,
                               int64_t next_bytes) {
  if (n >= 256 && buf != x) {
    const float s = sampled_shift(x, n);
    if (exp_row_fits(s)) {  // false for NaN
      NextRow f = next_row(next, next_bytes, 2);
      const double sum = exp_pass_with<true>(x, buf, n, ExpOfRow<false>{exp_row(s)}, f, 0);
      if (std::isfinite(sum)) return write_pass(y, n, stream, Scale{buf, splat(static_cast<float>(1.0 / sum))}, f, 1);
      next = nullptr;  // fetched already
    }
  }
  NextRow f = next_row(next, next_bytes, 3);
  const RowRange range = range_pass(x, n, f, 0);
  const float inv = static_cast<float>(1.0 / exp_pass<true>(x, buf, n, range.max, range.min, f, 1));
  write_pass(y, n, stream, Scale{buf, splat(inv)}, f, 2);
}

SINTER_AVX512 void layer_norm_row(const float* x, float* y, const float* w, const float* b, int64_t n, float eps,
                                  bool stream, const char* next, int64_t next_bytes) {
  NextRow f = next_row(next, next_bytes, 3);
  const float mean = static_cast<float>(lane_sum_pass<false>(x, n, 0.f, f, 0) / static_cast<double>(n));
  const float var = static_cast<float>(lane_sum_pass<true>(x, n, mean, f, 1) / static_cast<double>(n));
  const float rstd = 1.f / std::sqrt(var + eps);
  write_pass(y, n, stream, Affine{x, w, b, splat(mean), splat(rstd)}, f, 2);
}

#else  // not x86-64: available() is false, so nothing below runs.

float row_max(const float*, int64_t) { SINTER_INTERNAL_ASSERT(false, "vec::row_max without AVX-512"); }
float lane_sum(const float*, int64_t) { SINTER_INTERNAL_ASSERT(false, "vec::lane_sum without AVX-512"); }
double exp_shift_sum(const float*, float*, int64_t, float) {
  SINTER_INTERNAL_ASSERT(false, "vec::exp_shift_sum without AVX-512");
}
void softmax_row(const float*, float*, float*, int64_t, bool, const char*, int64_t) {
  SINTER_INTERNAL_ASSERT(false, "vec::softmax_row without AVX-512");
}
void layer_norm_row(const float*, float*, const float*, const float*, int64_t, float, bool, const char*, int64_t) {
  SINTER_INTERNAL_ASSERT(false, "vec::layer_norm_row without AVX-512");
}

#endif

}  // namespace sinter::vec
