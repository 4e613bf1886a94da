// Thin float32 products on the CPU: a few rows of A against a linear layer's weight ([N, K], K contiguous), as a
// classifier head or a decoder at batch 1-4 computes them. Each output is a dot product of two contiguous rows,
// streamed with AVX-512 over the pool; a GEMM library packs the whole weight for one row of A.
#pragma once
#include <cstdint>

namespace sinter::blas {

// The most rows of A that gemm_thin takes.
constexpr int64_t kThinRows = 8;

// Whether gemm_thin takes a product of m rows, k deep, whose A has column stride a_cs and whose B ([K, N]) has
// row stride b_rs: a CPU with AVX-512F, m <= kThinRows, K contiguous in A and in the weight. Eager (gemm()) and
// compiled code (the CPU launcher) both ask it before sinter's GEMM, so that they round alike.
bool thin_suits(int64_t m, int64_t k, int64_t a_cs, int64_t b_rs);

// c[i * ldc + j] = alpha * sum_p a[i * lda + p] * w[j * ldw + p] (+ beta * c[i * ldc + j] where beta != 0) for
// i < m <= kThinRows, j < n, p < k. Returns false, having done nothing, on a CPU without AVX-512F or for m out
// of range.
bool gemm_thin(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* w, int64_t ldw,
               float beta, float* c, int64_t ldc);

}  // namespace sinter::blas
