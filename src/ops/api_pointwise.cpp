// The public pointwise functions of ops.h: each packs its arguments in its row's schema order and dispatches.
// The few without a row of their own (relu6, clamp_min/clamp_max, where(condition)) are written over rows,
// as PyTorch's CompositeImplicit ops are.
#include "ops/dispatch.h"
#include "sinter/ops.h"

namespace sinter {

namespace {

// A `Tensor?` argument: an undefined tensor means None.
Value opt(const Tensor& t) { return t.defined() ? Value(t) : Value(); }

}  // namespace

// ---- unary ----
#define SINTER_DEFINE_UNARY(_, name) \
  Tensor name(const Tensor& self, Loc loc) { return dispatch1(OpId::name, {self}, loc); }
SINTER_UNARY_OPS(_, SINTER_DEFINE_UNARY)
#undef SINTER_DEFINE_UNARY

// relu6(x) -> hardtanh(x, 0, 6), as torch.nn.functional.relu6.
Tensor relu6(const Tensor& self, Loc loc) { return hardtanh(self, 0, 6, loc); }

Tensor gelu(const Tensor& self, const std::string& approximate, Loc loc) {
  return dispatch1(OpId::gelu, {self, approximate}, loc);
}
Tensor softplus(const Tensor& self, const Scalar& beta, const Scalar& threshold, Loc loc) {
  return dispatch1(OpId::softplus, {self, beta, threshold}, loc);
}
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope, Loc loc) {
  return dispatch1(OpId::leaky_relu, {self, negative_slope}, loc);
}
Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale, Loc loc) {
  return dispatch1(OpId::elu, {self, alpha, scale, input_scale}, loc);
}
Tensor celu(const Tensor& self, const Scalar& alpha, Loc loc) {
  return dispatch1(OpId::celu, {self, alpha}, loc);
}
Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val, Loc loc) {
  return dispatch1(OpId::hardtanh, {self, min_val, max_val}, loc);
}
Tensor threshold(const Tensor& self, const Scalar& threshold, const Scalar& value, Loc loc) {
  return dispatch1(OpId::threshold, {self, threshold, value}, loc);
}
Tensor logit(const Tensor& self, std::optional<double> eps, Loc loc) {
  return dispatch1(OpId::logit, {self, eps}, loc);
}
Tensor nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf, Loc loc) {
  return dispatch1(OpId::nan_to_num, {self, nan, posinf, neginf}, loc);
}

// ---- binary ----
Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha, Loc loc) {
  return dispatch1(OpId::add_Tensor, {self, other, alpha}, loc);
}
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha, Loc loc) {
  return dispatch1(OpId::add_Scalar, {self, other, alpha}, loc);
}
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha, Loc loc) {
  return dispatch1(OpId::sub_Tensor, {self, other, alpha}, loc);
}
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha, Loc loc) {
  return dispatch1(OpId::sub_Scalar, {self, other, alpha}, loc);
}
Tensor rsub(const Tensor& self, const Scalar& other, const Scalar& alpha, Loc loc) {
  return dispatch1(OpId::rsub_Scalar, {self, other, alpha}, loc);
}

#define SINTER_DEFINE_BINARY(_, name)                             \
  Tensor name(const Tensor& self, const Tensor& other, Loc loc) { \
    return dispatch1(OpId::name##_Tensor, {self, other}, loc);    \
  }                                                               \
  Tensor name(const Tensor& self, const Scalar& other, Loc loc) { \
    return dispatch1(OpId::name##_Scalar, {self, other}, loc);    \
  }
SINTER_BINARY_TS_OPS(_, SINTER_DEFINE_BINARY)
#undef SINTER_DEFINE_BINARY

Tensor div(const Tensor& self, const Tensor& other, const std::optional<std::string>& rounding_mode,
           Loc loc) {
  return dispatch1(OpId::div_Tensor_mode, {self, other, rounding_mode}, loc);
}
Tensor div(const Tensor& self, const Scalar& other, const std::optional<std::string>& rounding_mode,
           Loc loc) {
  return dispatch1(OpId::div_Scalar_mode, {self, other, rounding_mode}, loc);
}
Tensor pow(const Tensor& self, const Tensor& exponent, Loc loc) {
  return dispatch1(OpId::pow_Tensor_Tensor, {self, exponent}, loc);
}
Tensor pow(const Tensor& self, const Scalar& exponent, Loc loc) {
  return dispatch1(OpId::pow_Tensor_Scalar, {self, exponent}, loc);
}
Tensor pow(const Scalar& self, const Tensor& exponent, Loc loc) {
  return dispatch1(OpId::pow_Scalar, {self, exponent}, loc);
}

#define SINTER_DEFINE_BINARY_T(_, name)                           \
  Tensor name(const Tensor& self, const Tensor& other, Loc loc) { \
    return dispatch1(OpId::name, {self, other}, loc);             \
  }
SINTER_BINARY_T_NAMES(SINTER_DEFINE_BINARY_T, _)
#undef SINTER_DEFINE_BINARY_T

// ---- ternary ----
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other, Loc loc) {
  return dispatch1(OpId::where_self, {condition, self, other}, loc);
}
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other, Loc loc) {
  return dispatch1(OpId::where_ScalarOther, {condition, self, other}, loc);
}
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other, Loc loc) {
  return dispatch1(OpId::where_ScalarSelf, {condition, self, other}, loc);
}
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other, Loc loc) {
  return dispatch1(OpId::where_Scalar, {condition, self, other}, loc);
}
// where(condition) -> nonzero(condition).unbind(1), as PyTorch's nonzero_numpy; a 0-dim condition counts as
// 1-D.
std::vector<Tensor> where(const Tensor& condition, Loc loc) {
  Tensor c = condition.dim() == 0 ? unsqueeze(condition, 0, loc) : condition;
  return unbind(nonzero(c, loc), 1, loc);
}

Tensor clamp(const Tensor& self, const OptScalar& min, const OptScalar& max, Loc loc) {
  return dispatch1(OpId::clamp, {self, min, max}, loc);
}
Tensor clamp(const Tensor& self, const Tensor& min, const Tensor& max, Loc loc) {
  return dispatch1(OpId::clamp_Tensor, {self, opt(min), opt(max)}, loc);
}
// clamp_min(x, m) -> clamp(x, m, None); clamp_max(x, m) -> clamp(x, None, m).
Tensor clamp_min(const Tensor& self, const Scalar& min, Loc loc) {
  return clamp(self, min, std::nullopt, loc);
}
Tensor clamp_max(const Tensor& self, const Scalar& max, Loc loc) {
  return clamp(self, std::nullopt, max, loc);
}

Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight, Loc loc) {
  return dispatch1(OpId::lerp_Scalar, {self, end, weight}, loc);
}
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight, Loc loc) {
  return dispatch1(OpId::lerp_Tensor, {self, end, weight}, loc);
}
Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value,
               Loc loc) {
  return dispatch1(OpId::addcmul, {self, tensor1, tensor2, value}, loc);
}
Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value,
               Loc loc) {
  return dispatch1(OpId::addcdiv, {self, tensor1, tensor2, value}, loc);
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value, Loc loc) {
  return dispatch1(OpId::masked_fill_Scalar, {self, mask, value}, loc);
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value, Loc loc) {
  return dispatch1(OpId::masked_fill_Tensor, {self, mask, value}, loc);
}

}  // namespace sinter
