// The pointwise ops that share one signature, named once: ops.h declares a free function for each, tensor.h a
// method (and an in-place method for those that have one), and the op table (src/ops/op_list.h) a row.
// Each list takes a macro M and an extra argument X passed through to it: M(X, name).
#pragma once

// Unary ops with an in-place form (x.sin_()): name(Tensor self) -> Tensor and name_(Tensor(a!) self).
#define SINTER_UNARY_INPLACE_NAMES(M, X)                                                                        \
  M(X, abs) M(X, neg) M(X, sign) M(X, sqrt) M(X, rsqrt) M(X, exp) M(X, exp2) M(X, expm1) M(X, log) M(X, log2)    \
  M(X, log10) M(X, log1p) M(X, sin) M(X, cos) M(X, tan) M(X, asin) M(X, acos) M(X, atan) M(X, sinh) M(X, cosh)  \
  M(X, tanh) M(X, asinh) M(X, acosh) M(X, atanh) M(X, sigmoid) M(X, relu) M(X, silu) M(X, mish) M(X, erf)       \
  M(X, erfc) M(X, erfinv) M(X, floor) M(X, ceil) M(X, round) M(X, trunc) M(X, frac) M(X, reciprocal)            \
  M(X, square) M(X, logical_not) M(X, bitwise_not) M(X, hardsigmoid) M(X, hardswish) M(X, selu) M(X, lgamma)   \
  M(X, digamma)

// Unary predicates (a bool result, so no in-place form).
#define SINTER_UNARY_PREDICATE_NAMES(M, X) M(X, isnan) M(X, isinf) M(X, isfinite) M(X, signbit)

#define SINTER_UNARY_NAMES(M, X) SINTER_UNARY_INPLACE_NAMES(M, X) SINTER_UNARY_PREDICATE_NAMES(M, X)

// Binary ops with a Tensor and a Scalar overload: name.Tensor(self, other) and name.Scalar(self, other).
#define SINTER_BINARY_TS_NAMES(M, X)                                                                          \
  M(X, mul) M(X, div) M(X, fmod) M(X, remainder) M(X, eq) M(X, ne) M(X, lt) M(X, le) M(X, gt) M(X, ge)        \
  M(X, bitwise_and) M(X, bitwise_or) M(X, bitwise_xor) M(X, floor_divide)

// Binary ops of two tensors only.
#define SINTER_BINARY_T_NAMES(M, X)                                                                           \
  M(X, atan2) M(X, maximum) M(X, minimum) M(X, logical_and) M(X, logical_or) M(X, logical_xor) M(X, hypot)    \
  M(X, copysign)
