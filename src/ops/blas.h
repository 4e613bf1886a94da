// GEMM for the eager kernels: the one place that calls OpenBLAS. OpenBLAS runs single-threaded and these
// wrappers split the work over sinter's thread pool (by batch, then by row or column blocks), so OpenBLAS
// threads never compete with the pool and calls from several user threads at once are safe.
#pragma once
#include <cstdint>

namespace sinter::blas {

// One batched product C_b = alpha * A_b @ B_b + beta * C_b for b in [0, batch).
// A_b is m x k with element (i, j) at a[a_off[b] + i * a_rs + j * a_cs] (a_off null: offset 0 for every b);
// likewise B_b (k x n). C_b is m x n at c[b * c_bs + i * c_rs + j] (unit column stride).
// beta == 0 ignores C's old contents (NaN included), as BLAS does.
template <class T>
struct Gemm {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const T* a = nullptr;
  const int64_t* a_off = nullptr;
  int64_t a_rs = 0, a_cs = 0;
  const T* b = nullptr;
  const int64_t* b_off = nullptr;
  int64_t b_rs = 0, b_cs = 0;
  T* c = nullptr;
  int64_t c_bs = 0, c_rs = 0;
  T alpha = 1, beta = 0;
  // float: the operands hold bfloat16 values (a bfloat16 product computed in float32), so bfloat16 products are
  // exact and are taken wherever they pay (sgemm_bf16_pays) and alpha is 1, whatever the matmul precision.
  bool bf16_values = false;
};

// Whether a rows x cols operand with these strides can be handed to BLAS without a copy (one of the two
// strides is 1 and the other is a valid leading dimension). float/double operands must pass this; callers
// copy otherwise.
bool blas_compatible(int64_t rows, int64_t cols, int64_t rs, int64_t cs);
// The same test, also giving the BLAS form: transposed or not, and the leading dimension.
bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool& trans, int64_t& ld);

// Whether gemm() runs this product on OpenBLAS's own threads (one large product: its threads share packed
// panels) rather than as independent blocks over the pool.
bool prefers_threaded_gemm(int64_t batch, int64_t m, int64_t n, int64_t k);

// Whether float32 products round their operands to bfloat16 (set_float32_matmul_precision("medium") on a CPU
// whose AVX512-BF16 dot products beat its float32 FMAs, sgemm_bf16_pays): gemm() and the compiled GEMMs ask it
// on every call.
bool matmul_bf16();

// Parallel over the pool. float and double call sgemm/dgemm; int64 runs a plain blocked loop (any strides).
void gemm(const Gemm<float>& g);
void gemm(const Gemm<double>& g);
void gemm(const Gemm<int64_t>& g);

// Single-threaded, for kernels that already run inside a parallel region (conv per image, attention per
// block). Row-major: C (m x n, row stride ldc) = alpha * op(A) @ op(B) + beta * C.
void gemm_serial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm_serial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

}  // namespace sinter::blas
