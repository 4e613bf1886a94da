// The micro-kernels of sinter's float32 GEMM (src/ops/sgemm.cpp): one MR x NR tile of C over kc steps, with
// AVX-512 or AVX2 FMAs in target-attributed templates, chosen at run time by what the CPU has.
#pragma once
#include <cstdint>
#include <vector>

namespace sinter::blas {

// c[MR x NR] (row stride ldc) = (accumulate ? c : 0) + A @ B over kc steps, where A's row i at step p is
// a[i * a_rs + p * a_ps] and B's NR values of step p start at b + p * b_ps. The packed form (fn) ignores the
// strides: A panels of MR values per step, B panels of NR, both 64-byte aligned. The strided form (direct)
// reads A and B where they lie, for operands used once, whose packing would cost more than it saves.
using MicroFn = void (*)(int64_t kc, const float* a, int64_t a_rs, int64_t a_ps, const float* b, int64_t b_ps,
                         float* c, int64_t ldc, bool accumulate);

struct Micro {
  int mr = 0, nr = 0;
  const char* name = "";
  MicroFn fn = nullptr;
  MicroFn direct = nullptr;  // null: operands are always packed
  int max_n = 0;             // nonzero: picked only for products at most this many columns wide
};

// The micro-kernels this CPU runs, in order of preference (empty without AVX2 or AVX-512F); fixed per process.
const std::vector<Micro>& micros();
// The bfloat16 micro-kernels (AVX512-BF16; empty without it): A and B are products' operands rounded to bfloat16,
// packed as pairs of k steps per 32-bit word (to_bf16_pairs), kc (even) counting k steps; C is float32. Their
// direct form reads A's words where they lie (a bfloat16 copy of a row-major A, to_bf16_row) and B packed.
const std::vector<Micro>& micros_bf16();
// Rounds the kc x w floats at src (row q at src + q * w) to bfloat16 and stores them as ceil(kc / 2) rows of w
// words, word (q, j) holding rows 2q (low half) and 2q + 1 (high half, zero past kc) of column j.
void to_bf16_pairs(const float* src, int64_t kc, int64_t w, float* dst);
// n floats rounded to bfloat16, in order (pairs of them are the words the direct bfloat16 form reads).
void to_bf16_row(const float* src, int64_t n, uint16_t* dst);
// Two floats rounded to bfloat16 (to nearest even) in one word, `lo` in the low half.
uint32_t bf16_pair(float lo, float hi);
// The first of micros(), or an empty Micro (fn null) when there is none.
const Micro& micro();

}  // namespace sinter::blas
