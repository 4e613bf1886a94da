// Hand-vectorized AVX-512 kernels for the float32 ops that are compute-bound when auto-vectorized: exp,
// sigmoid, silu, gelu (erf form) in vec_math.cpp, and the row passes of softmax and layer_norm in vec_rows.cpp.
// They use what g++ cannot reach from the scalar templates of pointwise_math.h: vscalefps for 2^n (no selects for overflow or subnormal results), vrcp14ps
// plus one Newton step instead of a divide where that pays, masked loads and stores instead of scalar tails.
// Callers check available() and keep their portable code as the fallback for other CPUs.
#pragma once
#include <cstdint>

namespace sinter::vec {

// Whether the CPU has AVX-512F and SINTER_VEC_MATH is not "0" (read once; "0" selects the portable kernels,
// to compare both on one machine). Every function below requires it.
bool available();

// How sigmoid, silu and gelu divide: one vdivps, or vrcp14ps and a Newton step (more instructions, none on
// the divider). division() is the form in use: the divide (measured faster on Zen 5 and on the Xeon host;
// vec_math.cpp has the numbers) unless SINTER_VEC_DIVISION=reciprocal.
enum class Division { kDivide, kReciprocal };
Division division();

// y[i] = f(x[i]) for i < n: an array kernel, of the signature loops::Loop::run_float takes. x and y may be the
// same array (not partly overlapping). With `stream` and y 64-byte aligned, whole vectors are written with
// streaming stores (loops::kStreamMinBytes says when that pays); the caller then fences (loops::stream_fence).
// Accuracy against the exact function, over the whole float range:
//   exp      about 1 ulp; inf above 88.72, subnormal results rounded once, 0 below -103.97, NaN stays NaN.
//   sigmoid  under 3 ulp relative, also where the result is tiny (e^x / (1 + e^x) for x < 0).
//   silu     x * sigmoid(x).
//   gelu     |error| <= 3e-7 * max(1, |x|), as pmath::gelu_erf_f (the same rational).
void exp(const float* x, float* y, int64_t n, bool stream);
void sigmoid(const float* x, float* y, int64_t n, bool stream);
void silu(const float* x, float* y, int64_t n, bool stream);
void gelu(const float* x, float* y, int64_t n, bool stream);
// The same in a given division form, with ordinary stores (tests and benchmarks compare the forms).
void sigmoid_as(Division d, const float* x, float* y, int64_t n);
void silu_as(Division d, const float* x, float* y, int64_t n);
void gelu_as(Division d, const float* x, float* y, int64_t n);
// The same over bfloat16 arrays (the bits of each value), computed in float and rounded as loops::f32_to_bf16
// rounds: bit for bit the float kernel's result converted, which every other path (float16, strided views,
// buffers) also gives, so an op's result does not depend on the path its operands take.
void exp_bf16(const uint16_t* x, uint16_t* y, int64_t n);
void sigmoid_bf16(const uint16_t* x, uint16_t* y, int64_t n);
void silu_bf16(const uint16_t* x, uint16_t* y, int64_t n);
void gelu_bf16(const uint16_t* x, uint16_t* y, int64_t n);

// Row kernels (vec_rows.cpp): passes over one contiguous float row.
//
// The largest of x[0..n) (-inf for n = 0), NaN if any element is NaN.
float row_max(const float* x, int64_t n);

// The sum of x[0..n) exactly as reduce::lane_sum_leaf<float> adds it (16 lanes, a scalar tail, the lanes folded
// 8, 4, 2, 1 apart, then the tail): the same bits, with 64-byte loads.
float lane_sum(const float* x, int64_t n);

// Softmax's exp pass: y[i] = exp(x[i] - m) (not stored when y is null; y may be x), returning their sum: per
// block of 2048 elements in float lanes, the blocks added in double (as reduce::exp_sum). m is the row's max,
// so x[i] - m <= 0 or NaN. Each exp is within 6e-7 relative of exp(x[i] - m) (vec_avx512.h: exp_row_v, or
// exp_le0_fast_v past |m| = 40); softmax_row's too.
double exp_shift_sum(const float* x, float* y, int64_t n, float m);

// How softmax_row and layer_norm_row fetch the row a caller reads after this one: over their middle pass into
// L1, or spread over all their passes into L2. vec_rows.cpp says which CPUs get which, and why.
enum class RowPrefetch { kMiddlePassL1, kAllPassesL2 };
RowPrefetch row_prefetch();

// softmax of one row: exp(x - s) into buf (n floats, a row buffer in cache), then buf / sum written to y,
// with streaming stores when `stream` (the caller fences, loops::stream_fence). s is the max of 16 sampled
// elements, or the row's max where that fails (vec_rows.cpp says when). Prefetches next_bytes of `next` (may
// be null) by row_prefetch(). buf may be x (a converted row) or y; x is not y.
void softmax_row(const float* x, float* buf, float* y, int64_t n, bool stream, const char* next,
                 int64_t next_bytes);

// layer_norm of one row: y[i] = (x[i] - mean) * rstd * w[i] + b[i], mean and biased variance summed as
// reduce's wide_sum sums (float lanes per block, blocks in double), rstd = 1 / sqrt(var + eps); y written with
// streaming stores when `stream`. Prefetches as softmax_row.
void layer_norm_row(const float* x, float* y, const float* w, const float* b, int64_t n, float eps, bool stream,
                    const char* next, int64_t next_bytes);

}  // namespace sinter::vec
