// How should a row kernel (softmax, layer_norm over rows of 4096 floats) or a pointwise map (sigmoid) order
// its memory traffic so that the machine's bandwidth, not the compute between loads, sets its pace? Each
// variant below is timed beside a streaming copy of the same bytes (best of several rounds of medians, both),
// on the eager suite's shapes, and printed as a fraction of that copy. Standalone (OpenMP and AVX-512, no
// sinter), so it builds in seconds on the GPU host:
//   g++ -O2 -std=c++20 -march=native -fopenmp -I src bench/rowpass_probe.cpp -o /tmp/rowpass_probe
//   /tmp/rowpass_probe [threads] [name filter: substrings separated by |]
// With -DPROBE_SINTER -I src -I include and libsinter linked, it also times sinter's own ops and row kernels
// (run those with OMP_WAIT_POLICY=passive: OpenMP's threads, polling after the copy's regions, take cores
// from sinter's pool otherwise).
// Prefetch schedules: "next row during pass k" (what sinter's kernels did), or "D bytes ahead spread over
// every pass" with a hint: T0 into L1, T1/T2 into L2, NTA non-temporal.
#include <immintrin.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ops/vec_avx512.h"

#if defined(PROBE_SINTER)  // the library's kernels and ops beside the probe's (built against libsinter, -I src)
#include "ops/vec_math.h"
#include "sinter/sinter.h"
#include "tensor/thread_pool.h"
#endif

namespace {

constexpr int64_t kRows = 8192, kCols = 4096, kN = kRows * kCols, kRowBytes = kCols * 4;
constexpr int64_t kPiece = 256;  // elements between prefetch steps
constexpr int64_t kPieces = kCols / kPiece;

// n floats from a 2 MB-aligned block (huge pages where the kernel gives them), starting `skew` floats in, so
// that arrays do not share their addresses modulo the page size (as sinter's allocator staggers large blocks).
float* alloc(int64_t n, int64_t skew = 0) {
  n += skew;
  size_t bytes = (static_cast<size_t>(n) * 4 + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  auto* p = static_cast<float*>(std::aligned_alloc(2u << 20, bytes));
  if (!std::getenv("NO_THP")) madvise(p, bytes, MADV_HUGEPAGE);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = 0;
  return p + skew;
}

enum Hint { kT0, kT1, kT2, kNTA };
const char* hint_name(int h) { return h == kT0 ? "T0" : h == kT1 ? "T1" : h == kT2 ? "T2" : "NTA"; }
// Always inlined: a separate function holding only prefetches is found free of side effects and its calls are
// dropped (g++ 12 did so here).
[[gnu::always_inline]] inline void prefetch(const char* p, int hint) {
  switch (hint) {
    case kT0: _mm_prefetch(p, _MM_HINT_T0); break;
    case kT1: _mm_prefetch(p, _MM_HINT_T1); break;
    case kT2: _mm_prefetch(p, _MM_HINT_T2); break;
    default: _mm_prefetch(p, _MM_HINT_NTA); break;
  }
}

// Prefetches a thread's input range [base, base + limit) in order, up to a moving target.
struct Fetcher {
  const char* base;
  int64_t limit, done = 0;
  int hint;
  [[gnu::always_inline]] void to(int64_t target) {
    target = std::min(target, limit);
    for (; done < target; done += 64) prefetch(base + done, hint);
  }
};

inline __m512 splat(float v) { return _mm512_set1_ps(v); }
// e^x for x <= 0, sinter's own (vec_avx512.h: header-only, so the probe still needs no library): exp_le0_v, or
// with EXP5=1 in the environment the cheaper exp_le0_fast_v (two FMAs fewer) that softmax's exp pass uses.
const bool g_exp5 = std::getenv("EXP5") != nullptr;
inline __m512 exp_v(__m512 x) {
  return g_exp5 ? sinter::vec::avx512::exp_le0_fast_v(x) : sinter::vec::avx512::exp_le0_v(x);
}

// The piece functions carry their vector accumulators across pieces: no horizontal reduction per piece.
struct Acc {
  __m512 a, b;
};
inline float hmax(const Acc& c) { return _mm512_reduce_max_ps(_mm512_max_ps(c.a, c.b)); }
inline float hsum(const Acc& c) { return _mm512_reduce_add_ps(_mm512_add_ps(c.a, c.b)); }
inline void piece_max(const float* x, int64_t n, Acc& c) {
  for (int64_t i = 0; i < n; i += 32) {
    c.a = _mm512_max_ps(c.a, _mm512_loadu_ps(x + i));
    c.b = _mm512_max_ps(c.b, _mm512_loadu_ps(x + i + 16));
  }
}
// exp(x - m) summed and stored to y (y may be null). kClampTop: x - m clamped above at 89 too (exp there is inf),
// for a shift m that need not be the max (softmax_provisional).
template <bool kClampTop = false>
inline void piece_exp_sum(const float* x, float* y, int64_t n, __m512 mv, Acc& c) {
  auto shifted = [&](int64_t i) {
    const __m512 v = _mm512_sub_ps(_mm512_loadu_ps(x + i), mv);
    return kClampTop ? _mm512_min_ps(splat(89.f), v) : v;
  };
  for (int64_t i = 0; i < n; i += 32) {
    const __m512 e0 = exp_v(shifted(i)), e1 = exp_v(shifted(i + 16));
    if (y != nullptr) _mm512_storeu_ps(y + i, e0), _mm512_storeu_ps(y + i + 16, e1);
    c.a = _mm512_add_ps(c.a, e0);
    c.b = _mm512_add_ps(c.b, e1);
  }
}
// As piece_exp_sum<false>, with exp_row_v (the row's max folded into its coefficients, one operation fewer);
// kClamp = false where the row's min is known to be >= m - 104 (or the sum is checked afterwards).
template <bool kClamp = true>
inline void piece_exp_row_sum(const float* x, float* y, int64_t n, const sinter::vec::avx512::ExpRow& e, Acc& c) {
  for (int64_t i = 0; i < n; i += 32) {
    const __m512 e0 = sinter::vec::avx512::exp_row_v<kClamp>(e, _mm512_loadu_ps(x + i));
    const __m512 e1 = sinter::vec::avx512::exp_row_v<kClamp>(e, _mm512_loadu_ps(x + i + 16));
    if (y != nullptr) _mm512_storeu_ps(y + i, e0), _mm512_storeu_ps(y + i + 16, e1);
    c.a = _mm512_add_ps(c.a, e0);
    c.b = _mm512_add_ps(c.b, e1);
  }
}
inline void piece_minmax(const float* x, int64_t n, Acc& mx, Acc& mn) {
  for (int64_t i = 0; i < n; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    mx.a = _mm512_max_ps(mx.a, a), mx.b = _mm512_max_ps(mx.b, b);
    mn.a = _mm512_min_ps(mn.a, a), mn.b = _mm512_min_ps(mn.b, b);
  }
}
// The exp pass of softmax_rows and softmax_in_cache: EXPT=1 in the environment picks exp_row_v; EXPT=2 also
// takes the row's min in the max pass (softmax_rows) and drops the clamp where the min allows.
const int g_expt = std::getenv("EXPT") ? std::atoi(std::getenv("EXPT")) : 0;
inline void piece_exp_sum_row(const float* x, float* y, int64_t n, float m, const sinter::vec::avx512::ExpRow& e,
                              Acc& c) {
  if (g_expt) return piece_exp_row_sum(x, y, n, e, c);
  piece_exp_sum(x, y, n, splat(m), c);
}
void piece_stream_scale(float* y, const float* s, int64_t n, float k) {
  for (int64_t i = 0; i < n; i += 16) _mm512_stream_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(s + i), splat(k)));
}
void piece_stream_exp_scale(float* y, const float* x, int64_t n, float m, float k) {
  for (int64_t i = 0; i < n; i += 16)
    _mm512_stream_ps(y + i, _mm512_mul_ps(exp_v(_mm512_sub_ps(_mm512_loadu_ps(x + i), splat(m))), splat(k)));
}
inline void piece_sum(const float* x, int64_t n, Acc& c) {
  for (int64_t i = 0; i < n; i += 32) {
    c.a = _mm512_add_ps(c.a, _mm512_loadu_ps(x + i));
    c.b = _mm512_add_ps(c.b, _mm512_loadu_ps(x + i + 16));
  }
}
inline void piece_sq(const float* x, int64_t n, __m512 mean, Acc& c) {
  for (int64_t i = 0; i < n; i += 32) {
    const __m512 t0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), mean), t1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), mean);
    c.a = _mm512_fmadd_ps(t0, t0, c.a);
    c.b = _mm512_fmadd_ps(t1, t1, c.b);
  }
}
inline void piece_sum_sq(const float* x, int64_t n, __m512 shift, Acc& sum, Acc& sq) {
  for (int64_t i = 0; i < n; i += 32) {
    const __m512 t0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), shift), t1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), shift);
    sum.a = _mm512_add_ps(sum.a, t0), sum.b = _mm512_add_ps(sum.b, t1);
    sq.a = _mm512_fmadd_ps(t0, t0, sq.a), sq.b = _mm512_fmadd_ps(t1, t1, sq.b);
  }
}
void piece_normalize(float* y, const float* x, const float* w, const float* b, int64_t n, float mean, float rstd) {
  for (int64_t i = 0; i < n; i += 16) {
    __m512 t = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), splat(mean)), splat(rstd));
    _mm512_stream_ps(y + i, _mm512_fmadd_ps(t, _mm512_loadu_ps(w + i), _mm512_loadu_ps(b + i)));
  }
}
void piece_sigmoid(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512 e = exp_v(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(v)));  // e^-|x|
    const __m512 one = splat(1.f), d = _mm512_add_ps(one, e);
    const __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    _mm512_stream_ps(y + i, _mm512_div_ps(_mm512_mask_blend_ps(neg, one, e), d));
  }
}

// A schedule: none; kRows: the row `rows` ahead, spread over the passes in `passes` (bit k: pass k; sinter's
// kernels fetched the next row over their middle pass, T0); kAhead: `ahead` bytes in front of the current
// position, spread evenly over every pass of a row (or over the pieces of a pointwise range).
struct Schedule {
  enum Kind { kNone, kRows, kAhead } kind;
  int64_t ahead;
  int hint;
  int rows = 1, passes = 2;
  int weight[3] = {1, 1, 1};  // kRows: each pass's share of the row's prefetches, relative
  std::string str() const {
    if (kind == kNone) return "no prefetch";
    if (kind == kRows)
      return std::string(rows == 1 ? "next row" : "row +" + std::to_string(rows)) + " over passes " +
             (passes & 1 ? "0" : "") + (passes & 2 ? "1" : "") + (passes & 4 ? "2" : "") + ", " + hint_name(hint) +
             (weight[0] == 1 && weight[1] == 1 && weight[2] == 1
                  ? ""
                  : ", weights " + std::to_string(weight[0]) + std::to_string(weight[1]) + std::to_string(weight[2]));
    return std::to_string(ahead / 1024) + "K ahead, " + hint_name(hint);
  }
  // The prefetch target (bytes from the thread's first row) at piece k of pass `pass` of the row at `off`.
  int64_t target(int64_t off, int pass, int64_t k, int npasses) const {
    if (kind == kAhead) return off + ahead + kRowBytes * (pass * kPieces + k + 1) / (npasses * kPieces);
    if (!(passes >> pass & 1)) return -1;
    int before = 0, total = 0;
    for (int p = 0; p < 3; ++p)
      if (passes >> p & 1) before += p < pass ? weight[p] : 0, total += weight[p];
    return off + rows * kRowBytes + kRowBytes * (before * kPieces + weight[pass] * (k + 1)) / (total * kPieces);
  }
  int64_t start() const { return kind == kRows ? rows * kRowBytes : 0; }  // the rows before come on demand
};

struct Buffers {
  float *x, *y, *w, *b;
  float* x2;  // add's second input
};

// A thread's rows [rb, re) under schedule s: step(r, pass, k) issues the prefetches due before piece k of pass
// `pass` (of `passes`) over row r.
struct RowSteps {
  const Schedule& s;
  int64_t rb;
  int passes;
  Fetcher f;
  RowSteps(const Buffers& d, int64_t first, int64_t end, const Schedule& sched, int npasses)
      : s(sched), rb(first), passes(npasses),
        f{reinterpret_cast<const char*>(d.x + first * kCols), (end - first) * kRowBytes, sched.start(), sched.hint} {}
  [[gnu::always_inline]] void operator()(int64_t r, int pass, int64_t k) {
    if (s.kind != Schedule::kNone) f.to(s.target((r - rb) * kRowBytes, pass, k, passes));
  }
};

// Rows [rb, re) of softmax. `online`: one pass for max and sum (rescaling), one for exp * 1/sum.
void softmax_rows(const Buffers& d, int64_t rb, int64_t re, const Schedule& s, bool online, float* buf) {
  const int passes = online ? 2 : 3;
  RowSteps step(d, rb, re, s, passes);
  for (int64_t r = rb; r < re; ++r) {
    const float* x = d.x + r * kCols;
    float* y = d.y + r * kCols;
    const Acc zero{_mm512_setzero_ps(), _mm512_setzero_ps()};
    if (online) {
      // Per piece: its max; the running sum rescaled when the max grows (rarely after the first pieces).
      float m = -INFINITY;
      Acc sum = zero;
      for (int64_t k = 0; k < kPieces; ++k) {
        step(r, 0, k);
        Acc pm{splat(-INFINITY), splat(-INFINITY)};
        piece_max(x + k * kPiece, kPiece, pm);
        const float p = hmax(pm);
        if (p > m) {
          const __m512 scale = splat(std::exp(m - p));
          sum.a = _mm512_mul_ps(sum.a, scale), sum.b = _mm512_mul_ps(sum.b, scale), m = p;
        }
        piece_exp_sum(x + k * kPiece, nullptr, kPiece, splat(m), sum);
      }
      const float inv = 1.f / hsum(sum);
      for (int64_t k = 0; k < kPieces; ++k) {
        step(r, 1, k);
        piece_stream_exp_scale(y + k * kPiece, x + k * kPiece, kPiece, m, inv);
      }
      continue;
    }
    Acc mx{splat(-INFINITY), splat(-INFINITY)}, mn{splat(INFINITY), splat(INFINITY)}, sum = zero;
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 0, k);
      if (g_expt == 2) piece_minmax(x + k * kPiece, kPiece, mx, mn);
      else piece_max(x + k * kPiece, kPiece, mx);
    }
    const float m = hmax(mx);
    const sinter::vec::avx512::ExpRow e = sinter::vec::avx512::exp_row(m);
    // EXPT=3: no clamp and no min; a row whose sum is not finite (an element below about -2.3e38, -inf, NaN)
    // takes the exp pass again with the clamp.
    const bool no_clamp = g_expt == 3 || (g_expt == 2 && _mm512_reduce_min_ps(_mm512_min_ps(mn.a, mn.b)) >= m - 104.f);
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 1, k);
      if (no_clamp) piece_exp_row_sum<false>(x + k * kPiece, buf + k * kPiece, kPiece, e, sum);
      else piece_exp_sum_row(x + k * kPiece, buf + k * kPiece, kPiece, m, e, sum);
    }
    if (g_expt == 3 && !std::isfinite(hsum(sum))) {
      sum = zero;
      piece_exp_sum_row(x, buf, kCols, m, e, sum);
    }
    const float inv = 1.f / hsum(sum);
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 2, k);
      piece_stream_scale(y + k * kPiece, buf + k * kPiece, kPiece, inv);
    }
  }
}

// Rows [rb, re) of softmax in two passes per row, the first row's max aside: the exp pass over row r (in cache),
// then one pass that streams row r's output out and takes row r+1's max, so that reads and writes go to memory
// together, as in a copy, and the exp pass waits for neither. The schedule's pass 0 is the exp pass.
void softmax_fused(const Buffers& d, int64_t rb, int64_t re, const Schedule& s, float* buf) {
  RowSteps step(d, rb, re, s, 2);
  Acc mx{splat(-INFINITY), splat(-INFINITY)};
  if (rb < re) piece_max(d.x + rb * kCols, kCols, mx);
  for (int64_t r = rb; r < re; ++r) {
    const float* x = d.x + r * kCols;
    const float m = hmax(mx);
    const sinter::vec::avx512::ExpRow e = sinter::vec::avx512::exp_row(m);
    Acc sum{_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 0, k);
      piece_exp_sum_row(x + k * kPiece, buf + k * kPiece, kPiece, m, e, sum);
    }
    const __m512 inv = splat(1.f / hsum(sum));
    float* y = d.y + r * kCols;
    const float* xn = r + 1 < re ? x + kCols : x;  // the last row takes its own max again, unused
    mx = {splat(-INFINITY), splat(-INFINITY)};
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 1, k);
      for (int64_t i = k * kPiece; i < (k + 1) * kPiece; i += 32) {
        _mm512_stream_ps(y + i, _mm512_mul_ps(_mm512_load_ps(buf + i), inv));
        _mm512_stream_ps(y + i + 16, _mm512_mul_ps(_mm512_load_ps(buf + i + 16), inv));
        mx.a = _mm512_max_ps(mx.a, _mm512_loadu_ps(xn + i));
        mx.b = _mm512_max_ps(mx.b, _mm512_loadu_ps(xn + i + 16));
      }
    }
  }
}

// Rows [rb, re) of softmax in two passes: exp(x - s) with a provisional shift s, the largest of 16 elements
// spread over the row, stored and summed; then the scaling pass. Softmax does not depend on the shift; s only
// has to keep the exps finite, and s <= max(x) keeps the largest of them >= 1. A row whose sum is not finite (an
// element more than 88 above s, a NaN, s infinite) is redone in three passes with its true max.
void softmax_provisional(const Buffers& d, int64_t rb, int64_t re, const Schedule& s, float* buf) {
  RowSteps step(d, rb, re, s, 3);  // passes 0 and 1 of the schedule
  const Acc zero{_mm512_setzero_ps(), _mm512_setzero_ps()};
  const __m512i sample = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(static_cast<int>(kCols / 16)));
  for (int64_t r = rb; r < re; ++r) {
    const float* x = d.x + r * kCols;
    float* y = d.y + r * kCols;
    const float shift = _mm512_reduce_max_ps(_mm512_i32gather_ps(sample, x, 4));
    Acc sum = zero;
    const __m512 mv = splat(shift);
    // With EXPT set: exp_row_v without its clamp on the shift (redone below where the sum is not finite).
    const bool row_exp = g_expt != 0 && sinter::vec::avx512::exp_row_fits(shift);
    const sinter::vec::avx512::ExpRow e = sinter::vec::avx512::exp_row(row_exp ? shift : 0.f);
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 0, k);
      if (row_exp) piece_exp_row_sum<false>(x + k * kPiece, buf + k * kPiece, kPiece, e, sum);
      else piece_exp_sum<true>(x + k * kPiece, buf + k * kPiece, kPiece, mv, sum);
    }
    float total = hsum(sum);
    if (!std::isfinite(total)) {
      Acc mx{splat(-INFINITY), splat(-INFINITY)};
      piece_max(x, kCols, mx);
      sum = zero;
      piece_exp_sum(x, buf, kCols, splat(hmax(mx)), sum);
      total = hsum(sum);
    }
    const float inv = 1.f / total;
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 1, k);
      piece_stream_scale(y + k * kPiece, buf + k * kPiece, kPiece, inv);
    }
  }
}

// Softmax's compute alone: as many rows as [rb, re), all read from one row of x that stays in cache and
// written with ordinary stores to a row buffer, so no pass waits for memory. With `read_mem`, the rows are read
// from x (next row over all passes into L2, as the library); with `write_mem`, the output streams to y. Each
// alone says which side of the traffic fails to overlap the compute.
void softmax_in_cache(const Buffers& d, int64_t rb, int64_t re, float* buf, float* out, bool read_mem = false,
                      bool write_mem = false) {
  const Schedule l2{Schedule::kRows, 0, kT2, 1, 7};
  RowSteps step(d, rb, re, l2, 3);
  for (int64_t r = rb; r < re; ++r) {
    const float* x = d.x + (read_mem ? r : rb) * kCols;
    Acc mx{splat(-INFINITY), splat(-INFINITY)}, sum{_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t k = 0; k < kPieces; ++k) {
      if (read_mem) step(r, 0, k);
      piece_max(x + k * kPiece, kPiece, mx);
    }
    const float m = hmax(mx);
    const sinter::vec::avx512::ExpRow e = sinter::vec::avx512::exp_row(m);
    for (int64_t k = 0; k < kPieces; ++k) {
      if (read_mem) step(r, 1, k);
      piece_exp_sum_row(x + k * kPiece, buf + k * kPiece, kPiece, m, e, sum);
    }
    const float inv = 1.f / hsum(sum);
    if (write_mem) {
      for (int64_t k = 0; k < kPieces; ++k) {
        if (read_mem) step(r, 2, k);
        piece_stream_scale(d.y + r * kCols + k * kPiece, buf + k * kPiece, kPiece, inv);
      }
      continue;
    }
    const __m512 kv = splat(inv);
    for (int64_t i = 0; i < kCols; i += 16) _mm512_store_ps(out + i, _mm512_mul_ps(_mm512_load_ps(buf + i), kv));
  }
}

// Rows [rb, re) of softmax, each row's output written while the next row is read: its scaling pass is spread
// over the next row's max pass (`wa` of the kPieces output pieces) and exp pass (the rest), so that the output
// streams out all the time, not in one burst per row; the last row's is written after. bufs: two row buffers.
void softmax_lagged(const Buffers& d, int64_t rb, int64_t re, const Schedule& s, int64_t wa, float* bufs) {
  RowSteps step(d, rb, re, s, 3);  // the schedule's passes 0 and 1; 2 never comes
  float *cur = bufs, *prev = bufs + kCols, *prev_y = nullptr;
  float prev_inv = 0;
  int64_t written = 0;
  auto write_to = [&](int64_t upto) {
    for (; written < upto; ++written)
      piece_stream_scale(prev_y + written * kPiece, prev + written * kPiece, kPiece, prev_inv);
  };
  const Acc zero{_mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t r = rb; r < re; ++r) {
    const float* x = d.x + r * kCols;
    Acc mx{splat(-INFINITY), splat(-INFINITY)}, sum = zero;
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 0, k);
      piece_max(x + k * kPiece, kPiece, mx);
      if (prev_y != nullptr) write_to((k + 1) * wa / kPieces);
    }
    const __m512 mv = splat(hmax(mx));
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 1, k);
      piece_exp_sum(x + k * kPiece, cur + k * kPiece, kPiece, mv, sum);
      if (prev_y != nullptr) write_to(wa + (k + 1) * (kPieces - wa) / kPieces);
    }
    std::swap(cur, prev);
    prev_inv = 1.f / hsum(sum), prev_y = d.y + r * kCols, written = 0;
  }
  if (prev_y != nullptr) write_to(kPieces);
}

// Rows [rb, re) of layer_norm (weight and bias). `one_pass`: sum and sum of squares (shifted by x[0]) in one
// pass, then the affine pass; else mean, variance, affine.
void layer_norm_rows(const Buffers& d, int64_t rb, int64_t re, const Schedule& s, bool one_pass) {
  const int passes = one_pass ? 2 : 3;
  RowSteps step(d, rb, re, s, passes);
  for (int64_t r = rb; r < re; ++r) {
    const float* x = d.x + r * kCols;
    float* y = d.y + r * kCols;
    const Acc zero{_mm512_setzero_ps(), _mm512_setzero_ps()};
    float mean, var;
    if (one_pass) {
      Acc sum = zero, sq = zero;
      const float shift = x[0];
      for (int64_t k = 0; k < kPieces; ++k) {
        step(r, 0, k);
        piece_sum_sq(x + k * kPiece, kPiece, splat(shift), sum, sq);
      }
      const float ms = hsum(sum) / kCols;
      mean = shift + ms;
      var = std::max(0.f, hsum(sq) / kCols - ms * ms);
    } else {
      Acc sum = zero, sq = zero;
      for (int64_t k = 0; k < kPieces; ++k) {
        step(r, 0, k);
        piece_sum(x + k * kPiece, kPiece, sum);
      }
      mean = hsum(sum) / kCols;
      for (int64_t k = 0; k < kPieces; ++k) {
        step(r, 1, k);
        piece_sq(x + k * kPiece, kPiece, splat(mean), sq);
      }
      var = hsum(sq) / kCols;
    }
    const float rstd = 1.f / std::sqrt(var + 1e-5f);
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, passes - 1, k);
      piece_normalize(y + k * kPiece, x + k * kPiece, d.w + k * kPiece, d.b + k * kPiece, kPiece, mean, rstd);
    }
  }
}

// Rows [rb, re) of layer_norm with each row's affine pass spread over the next row's two stats passes (`wa` of
// the kPieces output pieces in the first), as softmax_lagged.
void layer_norm_lagged(const Buffers& d, int64_t rb, int64_t re, const Schedule& s, int64_t wa) {
  RowSteps step(d, rb, re, s, 3);
  const float* px = nullptr;
  float* py = nullptr;
  float pmean = 0, prstd = 0;
  int64_t written = 0;
  auto write_to = [&](int64_t upto) {
    for (; written < upto; ++written)
      piece_normalize(py + written * kPiece, px + written * kPiece, d.w + written * kPiece, d.b + written * kPiece,
                      kPiece, pmean, prstd);
  };
  const Acc zero{_mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t r = rb; r < re; ++r) {
    const float* x = d.x + r * kCols;
    Acc sum = zero, sq = zero;
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 0, k);
      piece_sum(x + k * kPiece, kPiece, sum);
      if (py != nullptr) write_to((k + 1) * wa / kPieces);
    }
    const float mean = hsum(sum) / kCols;
    for (int64_t k = 0; k < kPieces; ++k) {
      step(r, 1, k);
      piece_sq(x + k * kPiece, kPiece, splat(mean), sq);
      if (py != nullptr) write_to(wa + (k + 1) * (kPieces - wa) / kPieces);
    }
    px = x, py = d.y + r * kCols, pmean = mean, prstd = 1.f / std::sqrt(hsum(sq) / kCols + 1e-5f), written = 0;
  }
  if (py != nullptr) write_to(kPieces);
}

void sigmoid_range(const Buffers& d, int64_t b, int64_t e, const Schedule& s) {
  Fetcher f{reinterpret_cast<const char*>(d.x + b), (e - b) * 4, 0, s.hint};
  for (int64_t i = b; i < e; i += kPiece) {
    if (s.kind == Schedule::kAhead) f.to((i - b + kPiece) * 4 + s.ahead);
    piece_sigmoid(d.y + i, d.x + i, std::min(kPiece, e - i));
  }
}

// y = x + x2 over [b, e): both inputs fetched `ahead` bytes in front under a kAhead schedule.
void add_range(const Buffers& d, int64_t b, int64_t e, const Schedule& s) {
  Fetcher f{reinterpret_cast<const char*>(d.x + b), (e - b) * 4, 0, s.hint};
  Fetcher f2{reinterpret_cast<const char*>(d.x2 + b), (e - b) * 4, 0, s.hint};
  for (int64_t i = b; i < e; i += kPiece) {
    if (s.kind == Schedule::kAhead) f.to((i - b + kPiece) * 4 + s.ahead), f2.to((i - b + kPiece) * 4 + s.ahead);
    const int64_t n = std::min(kPiece, e - i);
    for (int64_t j = i; j < i + n; j += 16)
      _mm512_stream_ps(d.y + j, _mm512_add_ps(_mm512_loadu_ps(d.x + j), _mm512_loadu_ps(d.x2 + j)));
  }
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double median_ms(const std::function<void()>& fn, int runs) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> t(runs);
  for (double& v : t) {
    const double t0 = now_ms();
    fn();
    v = now_ms() - t0;
  }
  std::nth_element(t.begin(), t.begin() + runs / 2, t.end());
  return t[runs / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : omp_get_max_threads();
  const std::string filter = argc > 2 ? argv[2] : "";
  omp_set_num_threads(threads);
  // Y_SKEW: the output's start in floats past its 2 MB boundary (the input's is 0): how far apart the two
  // streams sit modulo 4 KiB, where a load can be held up by an older store to the same low 12 address bits.
  const int64_t y_skew = std::getenv("Y_SKEW") ? std::atol(std::getenv("Y_SKEW")) : 16 * 37;
  // X2_SKEW: add's second input's start past its 2 MB boundary, in floats (sinter's allocator puts large blocks
  // at page offsets 0 and 2048 bytes, alternately).
  const int64_t x2_skew = std::getenv("X2_SKEW") ? std::atol(std::getenv("X2_SKEW")) : 512;
  Buffers d{alloc(kN), alloc(kN, y_skew), alloc(kCols, 16 * 11), alloc(kCols, 16 * 23), nullptr};
  if (filter.find("add") != std::string::npos) {
    d.x2 = alloc(kN, x2_skew);
    for (int64_t i = 0; i < kN; ++i) d.x2[i] = 1.f;
  }
  for (int64_t i = 0; i < kN; ++i) d.x[i] = static_cast<float>((i * 2654435761u) % 1000) / 250.f - 2.f;
  for (int64_t i = 0; i < kCols; ++i) d.w[i] = 1.f + i * 1e-4f, d.b[i] = i * 1e-3f;

  auto rows_parallel = [&](const std::function<void(int64_t, int64_t, float*)>& body) {
#pragma omp parallel
    {
      alignas(64) static thread_local float buf[kCols];
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t per = (kRows + nt - 1) / nt, rb = std::min<int64_t>(kRows, t * per),
                    re = std::min<int64_t>(kRows, rb + per);
      body(rb, re, buf);
      _mm_sfence();
    }
  };
  auto elems_parallel = [&](const std::function<void(int64_t, int64_t)>& body) {
#pragma omp parallel
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t per = (kN / nt + kPiece - 1) / kPiece * kPiece, b = std::min<int64_t>(kN, t * per),
                    e = std::min<int64_t>(kN, b + per);
      body(b, e);
      _mm_sfence();
    }
  };
  auto copy = [&] {
    elems_parallel([&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i += 16) _mm512_stream_ps(d.y + i, _mm512_load_ps(d.x + i));
    });
  };
  auto read_sum = [&] {
    elems_parallel([&](int64_t b, int64_t e) {
      Acc c{_mm512_setzero_ps(), _mm512_setzero_ps()};
      piece_sum(d.x + b, (e - b) / 32 * 32, c);
      volatile float s = hsum(c);
      (void)s;
    });
  };

  std::vector<Schedule> schedules = {{Schedule::kNone, 0, kT0}};
  for (int h : {kT0, kT2})
    for (int passes : {2, 6, 7}) schedules.push_back({Schedule::kRows, 0, h, 1, passes});
  for (int h : {kT0, kT2}) schedules.push_back({Schedule::kRows, 0, h, 2, 7});
  // Fetched earlier: within the first pass, or the first two, and up to three rows ahead (into L2).
  for (int h : {kT1, kT2})
    for (int rows : {1, 2, 3})
      for (int passes : {1, 3, 7})
        if (!(h == kT2 && passes == 7 && rows <= 2)) schedules.push_back({Schedule::kRows, 0, h, rows, passes});
  for (int64_t ahead : {4096, 16384, 32768, 65536})
    for (int h : {kT0, kT1, kT2, kNTA}) schedules.push_back({Schedule::kAhead, ahead, h});
  std::vector<Schedule> flat = {{Schedule::kNone, 0, kT0}};
  for (int64_t ahead : {1024, 4096, 16384})
    for (int h : {kT0, kT2}) flat.push_back({Schedule::kAhead, ahead, h});

  struct Variant {
    std::string name;
    std::function<void()> fn;
    double bytes = 2.0 * kN * 4;  // moved, for the GB/s and the ratio to the copy (which moves 2 kN floats)
  };
  std::vector<Variant> variants;
  variants.push_back({"read_sum (bytes = input only, x2 for the ratio)", read_sum});
  for (const Schedule& s : schedules) {
    variants.push_back({"softmax 3-pass, " + s.str(), [&, s] {
                          rows_parallel([&](int64_t rb, int64_t re, float* buf) { softmax_rows(d, rb, re, s, false, buf); });
                        }});
  }
  for (int w1 : {2, 4, 8}) {
    Schedule s{Schedule::kRows, 0, kT2, 1, 7};
    s.weight[1] = w1;
    variants.push_back({"softmax 3-pass, " + s.str(), [&, s] {
                          rows_parallel([&](int64_t rb, int64_t re, float* buf) { softmax_rows(d, rb, re, s, false, buf); });
                        }});
  }
  // The fused pass reads row r+1 itself: fetch row r+1 (rows 1) or also r+2 (rows 2) ahead of it.
  for (const Schedule& s : {Schedule{Schedule::kNone, 0, kT0}, Schedule{Schedule::kRows, 0, kT2, 1, 1},
                            Schedule{Schedule::kRows, 0, kT2, 2, 3}, Schedule{Schedule::kRows, 0, kT2, 2, 1},
                            Schedule{Schedule::kRows, 0, kT0, 1, 1}})
    variants.push_back({"softmax fused max/scale, " + s.str(), [&, s] {
                          rows_parallel([&](int64_t rb, int64_t re, float* buf) { softmax_fused(d, rb, re, s, buf); });
                        }});
  for (const Schedule& s : {Schedule{Schedule::kNone, 0, kT0}, Schedule{Schedule::kRows, 0, kT2, 1, 3},
                            Schedule{Schedule::kRows, 0, kT0, 1, 1}, Schedule{Schedule::kRows, 0, kT0, 1, 2}}) {
    variants.push_back({"softmax 2-pass provisional shift, " + s.str(), [&, s] {
                          rows_parallel([&](int64_t rb, int64_t re, float* buf) { softmax_provisional(d, rb, re, s, buf); });
                        }});
  }
  variants.push_back({"softmax in cache (compute alone)", [&] {
                        rows_parallel([&](int64_t rb, int64_t re, float* buf) {
                          alignas(64) static thread_local float out[kCols + 512];
                          softmax_in_cache(d, rb, re, buf, out + 512);
                        });
                      }});
  for (int mode : {1, 2})
    variants.push_back({mode == 1 ? "softmax reading memory, writing cache" : "softmax reading cache, streaming out", [&, mode] {
                          rows_parallel([&](int64_t rb, int64_t re, float* buf) {
                            alignas(64) static thread_local float out[kCols + 512];
                            softmax_in_cache(d, rb, re, buf, out + 512, mode == 1, mode == 2);
                          });
                        }});
  for (const Schedule& s : {Schedule{Schedule::kNone, 0, kT0}, Schedule{Schedule::kRows, 0, kT2, 1, 3},
                            Schedule{Schedule::kRows, 0, kT0, 1, 2}, Schedule{Schedule::kRows, 0, kT2, 2, 3},
                            Schedule{Schedule::kAhead, 16384, kT2}})
    for (int64_t wa : {0, 4, 8, 12, 16}) {
      variants.push_back({"softmax lagged " + std::to_string(wa) + "/16, " + s.str(), [&, s, wa] {
                            rows_parallel([&](int64_t rb, int64_t re, float*) {
                              alignas(64) static thread_local float bufs[2 * kCols + 512];
                              softmax_lagged(d, rb, re, s, wa, bufs + 512);  // half a page off the rows
                            });
                          }});
    }
  for (const Schedule& s : schedules) {
    if (s.kind == Schedule::kRows && s.passes == 6) continue;  // two passes: 6 is pass 1 only
    variants.push_back({"softmax online, " + s.str(), [&, s] {
                          rows_parallel([&](int64_t rb, int64_t re, float* buf) { softmax_rows(d, rb, re, s, true, buf); });
                        }});
  }
  for (const Schedule& s : schedules) {
    variants.push_back({"layer_norm 3-pass, " + s.str(), [&, s] {
                          rows_parallel([&](int64_t rb, int64_t re, float*) { layer_norm_rows(d, rb, re, s, false); });
                        }});
  }
  for (const Schedule& s : schedules) {
    if (s.kind == Schedule::kRows && s.passes == 6) continue;
    variants.push_back({"layer_norm 1-pass stats, " + s.str(), [&, s] {
                          rows_parallel([&](int64_t rb, int64_t re, float*) { layer_norm_rows(d, rb, re, s, true); });
                        }});
  }
  for (const Schedule& s : {Schedule{Schedule::kNone, 0, kT0}, Schedule{Schedule::kRows, 0, kT2, 1, 3},
                            Schedule{Schedule::kRows, 0, kT0, 1, 2}})
    for (int64_t wa : {4, 8, 12}) {
      variants.push_back({"layer_norm lagged " + std::to_string(wa) + "/16, " + s.str(), [&, s, wa] {
                            rows_parallel([&](int64_t rb, int64_t re, float*) { layer_norm_lagged(d, rb, re, s, wa); });
                          }});
    }
  for (const Schedule& s : flat)
    variants.push_back({"sigmoid, " + s.str(), [&, s] { elems_parallel([&](int64_t b, int64_t e) { sigmoid_range(d, b, e, s); }); }});
  for (const Schedule& s : flat)  // only with "add" in the filter (its second input is allocated then)
    variants.push_back({"add, " + s.str(), [&, s] { elems_parallel([&](int64_t b, int64_t e) { add_range(d, b, e, s); }); },
                        3.0 * kN * 4});

#if defined(PROBE_SINTER)
  // Where the time goes between a kernel here and the same op in sinter: the op itself (its output from sinter's
  // allocator), sinter's row kernel on these buffers and OpenMP threads, and this file's kernel on sinter's pool.
  sinter::set_num_threads(threads);
  sinter::Tensor xt = sinter::from_blob(d.x, {kRows, kCols}), xf = xt.view({kN});
  {
    sinter::Tensor probe_out = sinter::sigmoid(xf);
    std::printf("sinter's output for sigmoid starts %ld bytes past the input modulo 4096\n",
                static_cast<long>((reinterpret_cast<uintptr_t>(probe_out.data_ptr()) - reinterpret_cast<uintptr_t>(d.x)) & 4095));
  }
  variants.push_back({"sinter op: sigmoid", [&] { (void)sinter::sigmoid(xf); }});
  variants.push_back({"sinter op: softmax", [&] { (void)sinter::softmax(xt, -1); }});
  if (d.x2 != nullptr) {
    static sinter::Tensor x2f = sinter::from_blob(d.x2, {kN});
    variants.push_back({"sinter op: add", [&] { (void)sinter::add(xf, x2f); }, 3.0 * kN * 4});
  }
  variants.push_back({"sinter op: layer_norm", [&] { (void)sinter::layer_norm(xt, {kCols}); }});
  variants.push_back({"sinter vec::sigmoid on OpenMP", [&] {
                        elems_parallel([&](int64_t b, int64_t e) { sinter::vec::sigmoid(d.x + b, d.y + b, e - b, true); });
                      }});
  variants.push_back({"sinter vec::softmax_row on OpenMP", [&] {
                        rows_parallel([&](int64_t rb, int64_t re, float* buf) {
                          for (int64_t r = rb; r < re; ++r)
                            sinter::vec::softmax_row(d.x + r * kCols, buf, d.y + r * kCols, kCols, true,
                                                     r + 1 < re ? reinterpret_cast<const char*>(d.x + (r + 1) * kCols) : nullptr,
                                                     kRowBytes);
                        });
                      }});
  variants.push_back({"sinter vec::layer_norm_row on OpenMP", [&] {
                        rows_parallel([&](int64_t rb, int64_t re, float*) {
                          for (int64_t r = rb; r < re; ++r)
                            sinter::vec::layer_norm_row(d.x + r * kCols, d.y + r * kCols, d.w, d.b, kCols, 1e-5f, true,
                                                        r + 1 < re ? reinterpret_cast<const char*>(d.x + (r + 1) * kCols) : nullptr,
                                                        kRowBytes);
                        });
                      }});
  const Schedule none{Schedule::kNone, 0, kT0}, l2{Schedule::kRows, 0, kT2, 1, 7};
  variants.push_back({"probe sigmoid on sinter's pool", [&] {
                        sinter::parallel_for(0, kN / kPiece, 1, [&](int64_t b, int64_t e) {
                          sigmoid_range(d, b * kPiece, e * kPiece, none);
                          _mm_sfence();
                        });
                      }});
  variants.push_back({"probe softmax (L2, all passes) on sinter's pool", [&] {
                        sinter::parallel_for(0, kRows, 1, [&](int64_t rb, int64_t re) {
                          alignas(64) static thread_local float buf[kCols];
                          softmax_rows(d, rb, re, l2, false, buf);
                          _mm_sfence();
                        });
                      }});
#endif

  const double copy_bytes = 2.0 * kN * 4;
  std::printf("rowpass_probe: %d threads, rows %ld x %ld f32, output %ld floats past the input modulo 2 MB; each "
              "line: best of 3 rounds of medians, beside a streaming copy of the same bytes\n", threads,
              static_cast<long>(kRows), static_cast<long>(kCols), static_cast<long>(y_skew));
  std::printf("%-52s %9s %9s %9s %7s\n", "variant", "ms", "copy ms", "GB/s", "vs copy");
  for (const Variant& v : variants) {
    bool wanted = filter.empty();  // the filter: substrings separated by '|', any of which selects a variant
    for (size_t at = 0; !wanted && at <= filter.size();) {
      const size_t bar = std::min(filter.find('|', at), filter.size());
      wanted = v.name.find(filter.substr(at, bar - at)) != std::string::npos;
      at = bar + 1;
    }
    if (!wanted) continue;
    double ms = INFINITY, cms = INFINITY;
    for (int round = 0; round < 3; ++round) {
      cms = std::min(cms, median_ms(copy, 15));
      ms = std::min(ms, median_ms(v.fn, 15));
    }
    std::printf("%-52s %9.3f %9.3f %9.1f %6.0f%%\n", v.name.c_str(), ms, cms, v.bytes / (ms * 1e6),
                100 * (v.bytes / ms) / (copy_bytes / cms));
    std::fflush(stdout);
  }
#if defined(PROBE_SINTER)
  // With "timeline" in the filter: when each thread's share of softmax's rows starts and ends, from the region's
  // start, on OpenMP's threads and on sinter's pool: medians over 30 runs of the last share's start, the first
  // and the last share's end, and the whole region (is a pool slower to start its threads, or in its shares?).
  if (filter.find("timeline") != std::string::npos) {
    using Rows = std::function<void(int64_t, int64_t)>;
    auto timeline = [&](const char* name, const std::function<void(const Rows&)>& region) {
      std::vector<double> last_start, first_end, last_end, whole;
      for (int run = 0; run < 33; ++run) {
        std::vector<double> starts(static_cast<size_t>(threads) * 64, -1), ends(starts.size(), -1);
        std::atomic<int> next{0};
        const double t0 = now_ms();
        region([&](int64_t rb, int64_t re) {
          const double s = now_ms() - t0;
          alignas(64) static thread_local float buf[kCols];
          softmax_rows(d, rb, re, l2, false, buf);
          _mm_sfence();
          const size_t i = static_cast<size_t>(next++);
          if (i < starts.size()) starts[i] = s, ends[i] = now_ms() - t0;
        });
        const double w = now_ms() - t0;
        if (run < 3) continue;
        const size_t n = std::min(starts.size(), static_cast<size_t>(next.load()));
        last_start.push_back(*std::max_element(starts.begin(), starts.begin() + n));
        first_end.push_back(*std::min_element(ends.begin(), ends.begin() + n));
        last_end.push_back(*std::max_element(ends.begin(), ends.begin() + n));
        whole.push_back(w);
      }
      auto med = [](std::vector<double> v) {
        std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
        return v[v.size() / 2];
      };
      std::printf("timeline %-32s last start %.3f  first end %.3f  last end %.3f  region %.3f ms\n", name,
                  med(last_start), med(first_end), med(last_end), med(whole));
    };
    for (int round = 0; round < 2; ++round) {
      timeline("softmax rows on OpenMP", [&](const Rows& body) {
        rows_parallel([&](int64_t rb, int64_t re, float*) { body(rb, re); });
      });
      timeline("softmax rows on sinter's pool", [&](const Rows& body) {
        sinter::parallel_for(0, kRows, 1, [&](int64_t rb, int64_t re) { body(rb, re); });
      });
    }
  }
#endif
  return 0;
}
