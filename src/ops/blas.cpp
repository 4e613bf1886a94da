// GEMM wrappers: float32 products on sinter's own GEMM (ops/sgemm.h) where the CPU has its micro-kernels,
// otherwise OpenBLAS (sgemm/dgemm, sgemv/dgemv for vector shapes), and a plain integer GEMM. OpenBLAS is
// switched to one thread once; parallelism comes from splitting C over sinter's pool, so a GEMM issued from
// several user threads, or from inside a parallel kernel, never oversubscribes the cores.
#include "ops/blas.h"

#include <cblas.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <mutex>
#include <type_traits>
#include <vector>

#include "ops/gemm_thin.h"
#include "ops/sgemm.h"
#include "sinter/cuda.h"
#include "sinter/precision.h"
#include "support/check.h"
#include "tensor/thread_pool.h"

namespace sinter {
namespace {

enum class Precision : int { kHighest, kHigh, kMedium };
std::atomic<Precision>& matmul_precision() {
  static std::atomic<Precision> precision{Precision::kHighest};
  return precision;
}

}  // namespace

void set_float32_matmul_precision(std::string_view precision) {
  Precision p = precision == "highest" ? Precision::kHighest
                : precision == "high"  ? Precision::kHigh
                : precision == "medium"
                    ? Precision::kMedium
                    : throw Error(fmt::format("set_float32_matmul_precision: '{}' is not one of highest, high, medium",
                                              precision));
  matmul_precision() = p;
  cuda::set_matmul_allow_tf32(p != Precision::kHighest);
}

std::string get_float32_matmul_precision() {
  switch (matmul_precision().load()) {
    case Precision::kMedium: return "medium";
    case Precision::kHigh: return "high";
    default: return cuda::matmul_allow_tf32() ? "high" : "highest";  // as torch, after allow_tf32 = true
  }
}

}  // namespace sinter

namespace sinter::blas {
namespace {

void ensure_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// Below this many flops a GEMM runs on the calling thread: waking the pool costs more than it saves.
constexpr double kMinParallelFlops = 1 << 21;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The BLAS description of a rows x cols operand: transposed or not, and its leading dimension. Strides of
// size-1 dims never matter, so they are chosen to make the layout valid.
bool layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool& trans, int64_t& ld) {
  trans = false;
  if (rows <= 1 && cols <= 1) {
    ld = 1;
    return true;
  }
  if (rows <= 1) {
    if (cs == 1) return ld = cols, true;
    if (cs >= 1) return trans = true, ld = cs, true;
    return false;
  }
  if (cols <= 1) {
    if (rs == 1) return trans = true, ld = rows, true;
    if (rs >= 1) return ld = rs, true;
    return false;
  }
  if (cs == 1 && rs >= cols) return ld = rs, true;
  if (rs == 1 && cs >= rows) return trans = true, ld = cs, true;
  return false;
}

void check_blas_int(int64_t v) {
  SINTER_CHECK(v <= INT_MAX, "a matrix dimension or stride of {} is too large for BLAS (at most {})", v,
               INT_MAX);
}

CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }

void call_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float* a,
               int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void call_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha, const double* a,
               int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void call_gemv(CBLAS_TRANSPOSE t, int rows, int cols, float alpha, const float* a, int lda, const float* x,
               int incx, float beta, float* y, int incy) {
  cblas_sgemv(CblasRowMajor, t, rows, cols, alpha, a, lda, x, incx, beta, y, incy);
}
void call_gemv(CBLAS_TRANSPOSE t, int rows, int cols, double alpha, const double* a, int lda, const double* x,
               int incx, double beta, double* y, int incy) {
  cblas_dgemv(CblasRowMajor, t, rows, cols, alpha, a, lda, x, incx, beta, y, incy);
}

// bf16: a float32 product sinter's GEMM takes rounds its operands to bfloat16 (matmul_bf16()).
template <class T>
void serial(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
            int64_t ldb, T beta, T* c, int64_t ldc, bool bf16 = false) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // C = beta * C; BLAS implementations differ on k == 0, so do it here
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (sgemm_suits(m, n, k)) {
      TiledGemm g;
      g.m = m, g.n = n, g.k = k, g.alpha = alpha, g.beta = beta;
      g.a = a, g.a_rs = ta ? 1 : lda, g.a_cs = ta ? lda : 1;
      g.b = b, g.b_rs = tb ? 1 : ldb, g.b_cs = tb ? ldb : 1;
      g.c = c, g.c_rs = ldc;
      g.bf16 = bf16;
      sgemm_tiled(g);
      return;
    }
  }
  for (int64_t v : {m, n, k, lda, ldb, ldc}) check_blas_int(v);
  ensure_single_threaded();
  if (n == 1) {  // matrix-vector: y (column of C, stride ldc) = op(A) x, x = B's only column
    int incx = tb ? 1 : static_cast<int>(ldb);
    if (ta)  // A stored k x m
      call_gemv(CblasTrans, k, m, alpha, a, lda, b, incx, beta, c, ldc);
    else
      call_gemv(CblasNoTrans, m, k, alpha, a, lda, b, incx, beta, c, ldc);
    return;
  }
  if (m == 1) {  // row-vector times matrix: C's row = op(B)^T a
    int incx = ta ? static_cast<int>(lda) : 1;
    if (tb)  // B stored n x k: y = Bs x
      call_gemv(CblasNoTrans, n, k, alpha, b, ldb, a, incx, beta, c, 1);
    else  // B stored k x n: y = Bs^T x
      call_gemv(CblasTrans, k, n, alpha, b, ldb, a, incx, beta, c, 1);
    return;
  }
  call_gemm(tr(ta), tr(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// How a batched GEMM is cut into tasks: each batch item into `splits` blocks of rows (or columns) of C.
struct Split {
  int64_t splits = 1, block = 0;
  bool rows = true;
};

Split plan(int64_t batch, int64_t m, int64_t n, int64_t k) {
  Split s;
  s.block = m;
  int threads = get_num_threads();
  double flops = 2.0 * static_cast<double>(batch) * m * n * std::max<int64_t>(k, 1);
  if (threads <= 1 || in_parallel_region() || flops < kMinParallelFlops || batch >= threads) return s;
  int64_t want = ceil_div(threads, batch);
  // Cutting rows makes every task pack all of B, cutting columns all of A: cut the larger side, in blocks
  // that keep the micro-kernel's tiles whole.
  s.rows = m >= n;
  int64_t extent = s.rows ? m : n;
  s.block = std::max<int64_t>(16, ceil_div(ceil_div(extent, want), 16) * 16);
  s.splits = ceil_div(extent, s.block);
  if (s.splits <= 1) s.block = extent, s.splits = 1;
  return s;
}

// One big double-precision GEMM at a time may run on OpenBLAS's own threads: for a single large product its
// threads share the packed panels, which beat independent tiles by 15-30% on the 16-core machine. The thread
// count goes back to 1 right after, so eager kernels that call OpenBLAS inside the pool stay serial. (float32
// products run on sinter's own GEMM over the pool where the CPU has its micro-kernels.)
std::mutex& threaded_gemm_mutex() {
  static std::mutex m;
  return m;
}

template <class T>
bool gemm_threaded(const Gemm<T>& g, bool ta, int64_t lda, bool tb, int64_t ldb) {
  int threads = get_num_threads();
  if (!prefers_threaded_gemm(g.batch, g.m, g.n, g.k) || threads <= 1) return false;
  std::unique_lock<std::mutex> lock(threaded_gemm_mutex(), std::try_to_lock);
  if (!lock.owns_lock()) return false;  // another thread runs one: split over the pool instead
  ensure_single_threaded();
  openblas_set_num_threads(threads);
  serial<T>(ta, tb, g.m, g.n, g.k, g.alpha, g.a + (g.a_off ? g.a_off[0] : 0), lda,
            g.b + (g.b_off ? g.b_off[0] : 0), ldb, g.beta, g.c, g.c_rs);
  openblas_set_num_threads(1);
  return true;
}

template <class T>
void gemm_float(const Gemm<T>& g) {
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0) return;
  bool ta = false, tb = false;
  int64_t lda = 1, ldb = 1;
  if (g.k <= 0) {  // nothing to multiply: C = beta * C (the operands' strides do not matter)
    for (int64_t bi = 0; bi < g.batch; ++bi)
      serial<T>(false, false, g.m, g.n, 0, g.alpha, nullptr, 1, nullptr, 1, g.beta, g.c + bi * g.c_bs,
                g.c_rs);
    return;
  }
  SINTER_INTERNAL_ASSERT(
      layout(g.m, g.k, g.a_rs, g.a_cs, ta, lda) && layout(g.k, g.n, g.b_rs, g.b_cs, tb, ldb),
      "gemm operand is not BLAS-compatible");
  const bool exact_bf16 = g.bf16_values && g.alpha == T(1) && sgemm_bf16_pays();
  const bool bf16 = std::is_same_v<T, float> && (matmul_bf16() || exact_bf16);
  if constexpr (std::is_same_v<T, float>) {
    // A few rows against a linear layer's weight (K contiguous in both): dot products, no packing.
    if (g.batch == 1 && thin_suits(g.m, g.k, g.a_cs, g.b_rs) &&
        gemm_thin(g.m, g.n, g.k, g.alpha, g.a + (g.a_off ? g.a_off[0] : 0), g.a_rs, g.b + (g.b_off ? g.b_off[0] : 0),
                  g.b_cs, g.beta, g.c, g.c_rs))
      return;
    // One float32 product: sinter's own GEMM cuts it over the pool itself (serial() hands it over).
    if (g.batch == 1 && sgemm_suits(g.m, g.n, g.k)) {
      serial<T>(ta, tb, g.m, g.n, g.k, g.alpha, g.a + (g.a_off ? g.a_off[0] : 0), lda,
                g.b + (g.b_off ? g.b_off[0] : 0), ldb, g.beta, g.c, g.c_rs, bf16);
      return;
    }
  }
  if (gemm_threaded(g, ta, lda, tb, ldb)) return;
  Split s = plan(g.batch, g.m, g.n, g.k);
  int64_t tasks = g.batch * s.splits;
  parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t bi = t / s.splits, part = t % s.splits;
      const T* a = g.a + (g.a_off ? g.a_off[bi] : 0);
      const T* b = g.b + (g.b_off ? g.b_off[bi] : 0);
      T* c = g.c + bi * g.c_bs;
      int64_t m = g.m, n = g.n;
      if (s.splits > 1 && s.rows) {
        int64_t r0 = part * s.block;
        m = std::min(s.block, g.m - r0);
        a += r0 * g.a_rs;
        c += r0 * g.c_rs;
      } else if (s.splits > 1) {
        int64_t c0 = part * s.block;
        n = std::min(s.block, g.n - c0);
        b += c0 * g.b_cs;
        c += c0;
      }
      serial<T>(ta, tb, m, n, g.k, g.alpha, a, lda, b, ldb, g.beta, c, g.c_rs, bf16);
    }
  });
}

}  // namespace

bool matmul_bf16() { return matmul_precision() == Precision::kMedium && sgemm_bf16_pays(); }

bool prefers_threaded_gemm(int64_t batch, int64_t m, int64_t n, int64_t k) {
  double flops = 2.0 * static_cast<double>(m) * n * k;
  return batch == 1 && m >= 32 && n >= 32 && flops >= (1 << 26) && !in_parallel_region();
}

bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool& trans, int64_t& ld) {
  return layout(rows, cols, rs, cs, trans, ld);
}

bool blas_compatible(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  bool trans;
  int64_t ld;
  return layout(rows, cols, rs, cs, trans, ld);
}

void gemm(const Gemm<float>& g) { gemm_float(g); }
void gemm(const Gemm<double>& g) { gemm_float(g); }

// Integer GEMM: wraps around on overflow as PyTorch's does (computed in uint64, where wrapping is defined).
void gemm(const Gemm<int64_t>& g) {
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0) return;
  int64_t row_block = 16;
  int64_t blocks = ceil_div(g.m, row_block);
  int64_t grain =
      std::max<int64_t>(1, 65536 / std::max<int64_t>(1, row_block * g.n * std::max<int64_t>(g.k, 1)));
  parallel_for(0, g.batch * blocks, grain, [&](int64_t begin, int64_t end) {
    std::vector<uint64_t> acc(g.n);
    for (int64_t t = begin; t < end; ++t) {
      int64_t bi = t / blocks, i0 = (t % blocks) * row_block, i1 = std::min(g.m, i0 + row_block);
      const int64_t* a = g.a + (g.a_off ? g.a_off[bi] : 0);
      const int64_t* b = g.b + (g.b_off ? g.b_off[bi] : 0);
      int64_t* c = g.c + bi * g.c_bs;
      for (int64_t i = i0; i < i1; ++i) {
        std::fill(acc.begin(), acc.end(), 0);
        for (int64_t p = 0; p < g.k; ++p) {
          uint64_t av = static_cast<uint64_t>(a[i * g.a_rs + p * g.a_cs]);
          if (av == 0) continue;
          const int64_t* brow = b + p * g.b_rs;
          if (g.b_cs == 1) {
            for (int64_t j = 0; j < g.n; ++j) acc[j] += av * static_cast<uint64_t>(brow[j]);
          } else {
            for (int64_t j = 0; j < g.n; ++j) acc[j] += av * static_cast<uint64_t>(brow[j * g.b_cs]);
          }
        }
        int64_t* crow = c + i * g.c_rs;
        uint64_t alpha = static_cast<uint64_t>(g.alpha), beta = static_cast<uint64_t>(g.beta);
        for (int64_t j = 0; j < g.n; ++j) {
          uint64_t v = alpha * acc[j];
          if (beta != 0) v += beta * static_cast<uint64_t>(crow[j]);
          crow[j] = static_cast<int64_t>(v);
        }
      }
    }
  });
}

void gemm_serial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  serial<float>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm_serial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  serial<double>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace sinter::blas
