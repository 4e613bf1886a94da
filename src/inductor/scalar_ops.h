// The scalar ops of loop bodies and the reduce ops of reduction nodes: one enum each, from one X-macro each, so
// every printer (C++ now, CUDA next) is a switch that the compiler checks for coverage (-Wswitch).
//
// SINTER_SCALAR_OPS(X) calls X(name, arity, transcendental) once per op. `name` is the enumerator and the text
// the loop IR dump prints; `arity` is checked when a node is built; `transcendental` marks ops that call a
// costly math function (the kernel planner keeps such per-element values instead of computing them twice).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace sinter::inductor {

#define SINTER_SCALAR_OPS(X)                                                                                     \
  /* conversions: an implicit cast between compute types, and rounding through a half type */                  \
  X(cast, 1, false) X(round_f16, 1, false) X(round_bf16, 1, false)                                              \
  /* arithmetic */                                                                                              \
  X(add, 2, false) X(sub, 2, false) X(mul, 2, false) X(div, 2, false) X(div_trunc, 2, false)                     \
  X(div_floor, 2, false) X(fmod, 2, false) X(remainder, 2, false) X(pow, 2, true) X(atan2, 2, false)             \
  X(hypot, 2, false) X(copysign, 2, false) X(maximum, 2, false) X(minimum, 2, false) X(clamp_lo, 2, false)       \
  X(clamp_hi, 2, false)                                                                                         \
  /* comparisons and logic (bool results) */                                                                    \
  X(eq, 2, false) X(ne, 2, false) X(lt, 2, false) X(le, 2, false) X(gt, 2, false) X(ge, 2, false)                \
  X(logical_and, 2, false) X(logical_or, 2, false) X(logical_xor, 2, false) X(logical_not, 1, false)             \
  X(bitwise_and, 2, false) X(bitwise_or, 2, false) X(bitwise_xor, 2, false) X(bitwise_not, 1, false)             \
  X(where, 3, false) X(isnan, 1, false) X(isinf, 1, false) X(isfinite, 1, false) X(signbit, 1, false)            \
  /* unary arithmetic and rounding */                                                                           \
  X(neg, 1, false) X(abs, 1, false) X(sign, 1, false) X(relu, 1, false) X(reciprocal, 1, false)                  \
  X(floor, 1, false) X(ceil, 1, false) X(round, 1, false) X(trunc, 1, false) X(frac, 1, false)                   \
  X(sqrt, 1, false) X(rsqrt, 1, false)                                                                          \
  /* math functions */                                                                                          \
  X(exp, 1, true) X(exp2, 1, true) X(expm1, 1, true) X(log, 1, true) X(log2, 1, true) X(log10, 1, true)          \
  X(log1p, 1, true) X(sin, 1, true) X(cos, 1, true) X(tan, 1, true) X(asin, 1, true) X(acos, 1, true)            \
  X(atan, 1, true) X(sinh, 1, true) X(cosh, 1, true) X(tanh, 1, true) X(asinh, 1, true) X(acosh, 1, true)        \
  X(atanh, 1, true) X(sigmoid, 1, true) X(erf, 1, true) X(erfc, 1, true)                                         \
  /* lowering's stand-in for a value not known yet (never reaches a printer) */                                 \
  X(pending, 0, false)

enum class SOp : uint8_t {
#define SINTER_SCALAR_OP_ENUM(name, arity, transcendental) name,
  SINTER_SCALAR_OPS(SINTER_SCALAR_OP_ENUM)
#undef SINTER_SCALAR_OP_ENUM
};

std::string_view scalar_op_name(SOp op);
int scalar_op_arity(SOp op);
bool is_transcendental(SOp op);
// The scalar op spelled `name` ("exp", "bitwise_and"), if there is one.
std::optional<SOp> scalar_op_named(std::string_view name);

#define SINTER_REDUCE_OPS(X) X(sum) X(mean) X(prod) X(amax) X(amin)

enum class ReduceOp : uint8_t {
#define SINTER_REDUCE_OP_ENUM(name) name,
  SINTER_REDUCE_OPS(SINTER_REDUCE_OP_ENUM)
#undef SINTER_REDUCE_OP_ENUM
};

std::string_view reduce_op_name(ReduceOp op);

}  // namespace sinter::inductor
