// Gradient checks of the element-wise rows: every unary, binary and ternary op, with broadcasting, size-1 and
// non-contiguous inputs (gradcheck lays every input out both ways).
#include "autograd/gradcheck.h"

namespace sinter::testing {
namespace {

using V = const std::vector<Tensor>&;

GradSample unary(OpId op, Tensor (*f)(const Tensor&, Loc), Tensor x) {
  return {op, op_def(op).schema.full_name(), [f](V in) { return f(in[0], Loc::current()); }, {x}, false};
}

}  // namespace

std::vector<GradSample> pointwise_samples() {
  std::vector<GradSample> s;
  const SymIntList shape{3, 4};
  Tensor a = away_from_zero(shape, 1), b = away_from_zero({4}, 2), col = away_from_zero({3, 1}, 3);
  Tensor pos = positive(shape, 4), unit = away_from_zero(shape, 5) * 0.7, big = positive(shape, 6, 1.2, 3.0);
  Tensor frac01 = positive(shape, 7, 0.1, 0.9);
  auto u = [&](OpId op, Tensor (*f)(const Tensor&, Loc), const Tensor& x) { s.push_back(unary(op, f, x)); };
  u(OpId::abs, sinter::abs, a);
  u(OpId::neg, sinter::neg, a);
  u(OpId::sign, sinter::sign, a);
  u(OpId::sqrt, sinter::sqrt, pos);
  u(OpId::rsqrt, sinter::rsqrt, pos);
  u(OpId::exp, sinter::exp, a);
  u(OpId::exp2, sinter::exp2, a);
  u(OpId::expm1, sinter::expm1, a);
  u(OpId::log, sinter::log, pos);
  u(OpId::log2, sinter::log2, pos);
  u(OpId::log10, sinter::log10, pos);
  u(OpId::log1p, sinter::log1p, pos);
  u(OpId::sin, sinter::sin, a);
  u(OpId::cos, sinter::cos, a);
  u(OpId::tan, sinter::tan, unit);
  u(OpId::asin, sinter::asin, unit);
  u(OpId::acos, sinter::acos, unit);
  u(OpId::atan, sinter::atan, a);
  u(OpId::sinh, sinter::sinh, a);
  u(OpId::cosh, sinter::cosh, a);
  u(OpId::tanh, sinter::tanh, a);
  u(OpId::asinh, sinter::asinh, a);
  u(OpId::acosh, sinter::acosh, big);
  u(OpId::atanh, sinter::atanh, unit);
  u(OpId::sigmoid, sinter::sigmoid, a);
  u(OpId::relu, sinter::relu, a);
  u(OpId::silu, sinter::silu, a);
  u(OpId::mish, sinter::mish, a);
  u(OpId::erf, sinter::erf, a);
  u(OpId::erfc, sinter::erfc, a);
  u(OpId::erfinv, sinter::erfinv, unit);
  u(OpId::floor, sinter::floor, a * 3.0 + 0.5);
  u(OpId::ceil, sinter::ceil, a * 3.0 + 0.5);
  u(OpId::round, sinter::round, a * 3.0 + 0.25);
  u(OpId::trunc, sinter::trunc, a * 3.0 + 0.5);
  u(OpId::frac, sinter::frac, a * 3.0 + 0.5);
  u(OpId::reciprocal, sinter::reciprocal, a);
  u(OpId::square, sinter::square, a);
  u(OpId::hardsigmoid, sinter::hardsigmoid, a * 4.0);
  u(OpId::hardswish, sinter::hardswish, a * 4.0);
  u(OpId::selu, sinter::selu, a);
  u(OpId::lgamma, sinter::lgamma, pos);
  u(OpId::digamma, sinter::digamma, pos);
  s[5].second_order = s[12].second_order = s[20].second_order = true;  // exp, sin, tanh twice
  s.push_back({OpId::gelu, "gelu", [](V in) { return gelu(in[0]); }, {a}, true});
  // digamma's derivative below 0.5 goes through the reflection formula (negative, non-integer inputs).
  s.push_back({OpId::digamma, "digamma of small and negative inputs", [](V in) { return digamma(in[0]); },
               {tensor({-2.7, -1.3, -0.4, 0.1, 0.45, 0.55, 3.2, 12.0}, kFloat64)}, true});
  s.push_back({OpId::gelu, "gelu tanh", [](V in) { return gelu(in[0], "tanh"); }, {a}});
  s.push_back({OpId::softplus, "softplus", [](V in) { return softplus(in[0], 2, 1); }, {a}});
  s.push_back({OpId::leaky_relu, "leaky_relu", [](V in) { return leaky_relu(in[0], 0.2); }, {a}});
  s.push_back({OpId::elu, "elu", [](V in) { return elu(in[0], 1.5, 1.2, 0.8); }, {a}});
  s.push_back({OpId::celu, "celu", [](V in) { return celu(in[0], 0.7); }, {a}});
  s.push_back({OpId::hardtanh, "hardtanh", [](V in) { return hardtanh(in[0], -0.5, 0.5); }, {a}});
  s.push_back({OpId::threshold, "threshold", [](V in) { return threshold(in[0], 0.1, 3.0); }, {a}});
  s.push_back({OpId::logit, "logit", [](V in) { return logit(in[0]); }, {frac01}});
  s.push_back({OpId::logit, "logit eps", [](V in) { return logit(in[0], 0.3); }, {frac01}});
  s.push_back({OpId::nan_to_num, "nan_to_num", [](V in) { return nan_to_num(in[0]); }, {a}});
  // Binary, broadcast both ways.
  s.push_back({OpId::add_Tensor, "add broadcast", [](V in) { return add(in[0], in[1], 2.5); }, {a, b}});
  s.push_back({OpId::add_Scalar, "add scalar", [](V in) { return add(in[0], Scalar(2.0)); }, {a}});
  s.push_back({OpId::sub_Tensor, "sub broadcast", [](V in) { return sub(in[0], in[1], 0.5); }, {col, a}});
  s.push_back({OpId::sub_Scalar, "sub scalar", [](V in) { return sub(in[0], Scalar(2.0)); }, {a}});
  s.push_back({OpId::rsub_Scalar, "rsub", [](V in) { return rsub(in[0], 2.0, 3.0); }, {a}});
  s.push_back({OpId::mul_Tensor, "mul", [](V in) { return in[0] * in[1]; }, {a, col}, true});
  s.push_back({OpId::mul_Scalar, "mul scalar", [](V in) { return mul(in[0], Scalar(3.0)); }, {a}});
  s.push_back({OpId::div_Tensor, "div", [](V in) { return in[0] / in[1]; }, {a, b}, true});
  s.push_back({OpId::div_Scalar, "div scalar", [](V in) { return div(in[0], Scalar(3.0)); }, {a}});
  s.push_back({OpId::div_Tensor_mode, "div trunc", [](V in) { return div(in[0], in[1], "trunc"); }, {a * 3.0 + 0.1, b}});
  s.push_back({OpId::div_Tensor_mode, "div none", [](V in) { return div(in[0], in[1], std::nullopt); }, {a, b}});
  s.push_back({OpId::div_Scalar_mode, "div scalar floor", [](V in) { return div(in[0], 0.7, "floor"); }, {a * 3.0 + 0.1}});
  s.push_back({OpId::pow_Tensor_Scalar, "pow scalar", [](V in) { return pow(in[0], 2.5); }, {pos}, true});
  s.push_back({OpId::pow_Tensor_Tensor, "pow tensor", [](V in) { return pow(in[0], in[1]); }, {pos, b}});
  s.push_back({OpId::pow_Scalar, "pow base", [](V in) { return pow(Scalar(1.7), in[0]); }, {a}});
  s.push_back({OpId::atan2, "atan2", [](V in) { return atan2(in[0], in[1]); }, {a, b}});
  s.push_back({OpId::maximum, "maximum", [](V in) { return maximum(in[0], in[1]); }, {a, b}});
  s.push_back({OpId::minimum, "minimum", [](V in) { return minimum(in[0], in[1]); }, {a, col}});
  s.push_back({OpId::hypot, "hypot", [](V in) { return hypot(in[0], in[1]); }, {a, b}});
  s.push_back({OpId::copysign, "copysign", [](V in) { return copysign(in[0], in[1]); }, {a, b}});
  s.push_back({OpId::fmod_Tensor, "fmod", [](V in) { return fmod(in[0], in[1]); }, {a * 3.0 + 0.05, b}});
  s.push_back({OpId::fmod_Scalar, "fmod scalar", [](V in) { return fmod(in[0], Scalar(0.7)); }, {a * 3.0 + 0.05}});
  s.push_back({OpId::remainder_Tensor, "remainder", [](V in) { return remainder(in[0], in[1]); }, {a * 3.0 + 0.05, b}});
  s.push_back({OpId::remainder_Scalar, "remainder scalar", [](V in) { return remainder(in[0], Scalar(0.7)); },
               {a * 3.0 + 0.05}});
  // Ternary.
  Tensor mask = a > 0.0;
  s.push_back({OpId::where_self, "where", [](V in) { return where(in[0], in[1], in[2]); }, {mask, a, b}});
  s.push_back({OpId::where_ScalarOther, "where scalar other", [](V in) { return where(in[0], in[1], 2.0); }, {mask, col}});
  s.push_back({OpId::where_ScalarSelf, "where scalar self", [](V in) { return where(in[0], 2.0, in[1]); }, {mask, b}});
  s.push_back({OpId::clamp, "clamp", [](V in) { return clamp(in[0], -0.5, 0.6); }, {a}});
  s.push_back({OpId::clamp, "clamp min only", [](V in) { return clamp(in[0], -0.5); }, {a}});
  s.push_back({OpId::clamp_Tensor, "clamp tensor", [](V in) { return clamp(in[0], in[1], in[2]); },
               {a, b * 0.1 - 0.6, col * 0.1 + 0.6}});
  s.push_back({OpId::lerp_Scalar, "lerp scalar", [](V in) { return lerp(in[0], in[1], 0.3); }, {a, b}});
  s.push_back({OpId::lerp_Tensor, "lerp tensor", [](V in) { return lerp(in[0], in[1], in[2]); }, {a, b, col}});
  s.push_back({OpId::addcmul, "addcmul", [](V in) { return addcmul(in[0], in[1], in[2], 0.5); }, {a, b, col}});
  s.push_back({OpId::addcdiv, "addcdiv", [](V in) { return addcdiv(in[0], in[1], in[2], 0.5); }, {a, b, col}});
  s.push_back({OpId::masked_fill_Scalar, "masked_fill", [](V in) { return masked_fill(in[0], in[1], 2.0); }, {a, mask}});
  s.push_back({OpId::masked_fill_Tensor, "masked_fill tensor",
               [](V in) { return masked_fill(in[0], in[1], in[2]); }, {a, mask, away_from_zero({}, 9)}});
  // Writes and copies (the in-place ops differentiate through a clone of a leaf).
  s.push_back({OpId::fill__Scalar, "fill_", [](V in) { Tensor t = in[0] * 1.0; t.fill_(2.0); return t * in[0]; }, {a}});
  s.push_back({OpId::zero_, "zero_", [](V in) { Tensor t = in[0] * 1.0; t.zero_(); return t + in[0]; }, {a}});
  s.push_back({OpId::copy_, "copy_ broadcast", [](V in) { Tensor t = in[0] * 2.0; t.copy_(in[1]); return t * in[0]; },
               {a, b}});
  // float32 rounds a step of 1e-6 to a few ulps: the finite differences take a wider one.
  s.push_back({OpId::to_copy, "to float32 and back", [](V in) { return in[0].to(kFloat32).to(kFloat64) * in[0]; }, {a},
               false, 1e-3});
  s.push_back({OpId::clone, "clone", [](V in) { return in[0].clone() * in[0]; }, {a}});
  s.push_back({OpId::uniform_, "uniform_", [](V in) { Tensor t = in[0] * 1.0; t.uniform_(); return t * 0.0 + in[0]; },
               {a}});
  s.push_back({OpId::normal_, "normal_", [](V in) { Tensor t = in[0] * 1.0; t.normal_(); return t * 0.0 + in[0]; },
               {a}});
  s.push_back({OpId::bernoulli_p, "bernoulli", [](V in) { return bernoulli(in[0], 0.5) * 0.0 + in[0]; }, {frac01}});
  s.push_back({OpId::mul_Tensor, "mul_ in place", [](V in) { Tensor t = in[0] * 1.0; t.mul_(in[1]); return t; }, {a, b}});
  s.push_back({OpId::sin, "sin_ in place", [](V in) { Tensor t = in[0] * 1.0; t.sin_(); return t; }, {a}});
  return s;
}

namespace {

TEST(PointwiseGrad, EverySample) {
  check_samples(pointwise_samples());
}

}  // namespace
}  // namespace sinter::testing
