// Thin float32 products on the CPU: a few rows of A against a linear layer's weight ([N, K], K contiguous), as a
// classifier head or a decoder at batch 1-4 computes them. Each output is a dot product of two contiguous rows,
// streamed with AVX-512 over the pool; a GEMM library packs the whole weight for one row of A.
#pragma once
#include <cstdint>

namespace sinter::blas {

// The most rows of A that gemm_thin takes: those below the 4 of sgemm_suits (sgemm.h), so that eager and
// compiled code, which both leave the thinner products to gemm(), round them alike.
constexpr int64_t kThinRows = 3;

// c[i * ldc + j] = alpha * sum_p a[i * lda + p] * w[j * ldw + p] (+ beta * c[i * ldc + j] where beta != 0) for
// i < m <= kThinRows, j < n, p < k. Returns false, having done nothing, on a CPU without AVX-512F or for m out
// of range.
bool gemm_thin(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* w, int64_t ldw,
               float beta, float* c, int64_t ldc);

}  // namespace sinter::blas
