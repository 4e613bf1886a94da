// Decompositions of the activation functions into pointwise primitives. Each computes in the dtype the eager
// kernel computes in (float32 for float16/bfloat16) and rounds once at the end, so results match eager to
// float rounding; the lowering fuses the whole chain into one loop body anyway.
#include <cmath>

#include "passes/decompositions/builder.h"

namespace sinter::passes::decomp {
namespace {

using Result = std::optional<std::vector<Tensor>>;

// f(x) on x converted to its compute dtype, rounded back to `out` (the node's dtype).
template <class F>
Result compute(Builder& b, const Tensor& x, DType out, F f) {
  Tensor c = b.to(x, compute_dtype(x.dtype()));
  return std::vector<Tensor>{b.to(f(c), out)};
}

const Tensor& self(const Node& n) { return n.args[0].tensor(); }
double scalar_arg(const Node& n, int i) { return n.args[i].scalar().to_double(); }

// elu family: x > 0 ? x * pos : expm1(x * input_scale) * neg
Tensor elu_body(Builder& b, const Tensor& x, double neg, double pos, double input_scale) {
  Tensor scaled = input_scale == 1 ? x : b.mul(x, input_scale);
  Tensor negative = b.mul(b.unary(OpId::expm1, scaled), neg);
  Tensor positive = pos == 1 ? x : b.mul(x, pos);
  return b.where(b.op(OpId::le_Scalar, {x, 0}), negative, positive);
}

}  // namespace

// gelu(x) -> 0.5 * x * (1 + erf(x / sqrt(2)))
// gelu(x, approximate='tanh') -> 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
Result gelu(Builder& b, const Node& n) {
  bool tanh_form = n.args[1].str_value() == "tanh";
  return compute(b, self(n), n.meta().dtype, [&](const Tensor& x) {
    Tensor inner;
    if (tanh_form) {
      Tensor cube = b.mul(b.mul(x, x), x);
      inner = b.unary(OpId::tanh, b.mul(b.add(x, b.mul(cube, 0.044715)), 0.7978845608028654));
    } else {
      inner = b.unary(OpId::erf, b.mul(x, 0.70710678118654752440));
    }
    return b.mul(b.mul(x, b.add(inner, 1)), 0.5);
  });
}

// silu(x) -> x * sigmoid(x)
Result silu(Builder& b, const Node& n) {
  return compute(b, self(n), n.meta().dtype, [&](const Tensor& x) { return b.mul(x, b.unary(OpId::sigmoid, x)); });
}

// mish(x) -> x * tanh(log1p(exp(x)))
Result mish(Builder& b, const Node& n) {
  return compute(b, self(n), n.meta().dtype, [&](const Tensor& x) {
    return b.mul(x, b.unary(OpId::tanh, b.unary(OpId::log1p, b.unary(OpId::exp, x))));
  });
}

// softplus(x, beta, threshold) -> x * beta > threshold ? x : log1p(exp(x * beta)) / beta
Result softplus(Builder& b, const Node& n) {
  double beta = scalar_arg(n, 1), threshold = scalar_arg(n, 2);
  return compute(b, self(n), n.meta().dtype, [&](const Tensor& x) {
    Tensor xb = beta == 1 ? x : b.mul(x, beta);
    Tensor soft = b.unary(OpId::log1p, b.unary(OpId::exp, xb));
    if (beta != 1) soft = b.div(soft, beta);
    return b.where(b.op(OpId::gt_Scalar, {xb, threshold}), x, soft);
  });
}

// hardsigmoid(x) -> clamp(x + 3, 0, 6) / 6
Result hardsigmoid(Builder& b, const Node& n) {
  return compute(b, self(n), n.meta().dtype,
                 [&](const Tensor& x) { return b.div(b.clamp(b.add(x, 3), Scalar(0), Scalar(6)), 6); });
}

// hardswish(x) -> x * clamp(x + 3, 0, 6) / 6
Result hardswish(Builder& b, const Node& n) {
  return compute(b, self(n), n.meta().dtype, [&](const Tensor& x) {
    return b.div(b.mul(x, b.clamp(b.add(x, 3), Scalar(0), Scalar(6))), 6);
  });
}

// leaky_relu(x, slope) -> x > 0 ? x : x * slope
Result leaky_relu(Builder& b, const Node& n) {
  Value slope = n.args[1];
  return compute(b, self(n), n.meta().dtype, [&](const Tensor& x) {
    return b.where(b.op(OpId::gt_Scalar, {x, 0}), x, b.op(OpId::mul_Scalar, {x, slope}));
  });
}

// elu(x, alpha, scale, input_scale) -> x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale
Result elu(Builder& b, const Node& n) {
  double alpha = scalar_arg(n, 1), scale = scalar_arg(n, 2), input_scale = scalar_arg(n, 3);
  return compute(b, self(n), n.meta().dtype,
                 [&](const Tensor& x) { return elu_body(b, x, alpha * scale, scale, input_scale); });
}

// celu(x, alpha) -> x > 0 ? x : expm1(x / alpha) * alpha
Result celu(Builder& b, const Node& n) {
  double alpha = scalar_arg(n, 1);
  return compute(b, self(n), n.meta().dtype,
                 [&](const Tensor& x) { return elu_body(b, x, alpha, 1, 1.0 / alpha); });
}

// selu(x) -> scale * (x > 0 ? x : alpha * expm1(x)), with SELU's fixed alpha and scale
Result selu(Builder& b, const Node& n) {
  const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  return compute(b, self(n), n.meta().dtype,
                 [&](const Tensor& x) { return elu_body(b, x, alpha * scale, scale, 1); });
}

// hardtanh(x, lo, hi) -> clamp(x, lo, hi); integer tensors keep their dtype (the bounds truncate, as eager)
Result hardtanh(Builder& b, const Node& n) {
  const Tensor& x = self(n);
  Scalar lo = n.args[1].scalar(), hi = n.args[2].scalar();
  if (!is_floating(x.dtype())) {
    lo = Scalar(static_cast<int64_t>(lo.to_double()));
    hi = Scalar(static_cast<int64_t>(hi.to_double()));
  }
  return compute(b, x, n.meta().dtype, [&](const Tensor& c) { return b.clamp(c, lo, hi); });
}

// logit(x) -> log(x / (1 - x)); logit(x, eps) -> the same of clamp(x, eps, 1 - eps). Integers become float32.
Result logit(Builder& b, const Node& n) {
  DType out = n.meta().dtype;
  Tensor x = b.to(self(n), compute_dtype(out));
  std::optional<double> eps;
  if (!n.args[1].is_none()) eps = n.args[1].to_double();
  return compute(b, x, out, [&](const Tensor& v) {
    Tensor c = eps ? b.clamp(v, Scalar(*eps), Scalar(1.0 - *eps)) : v;
    return b.unary(OpId::log, b.div(c, b.rsub(c, 1)));
  });
}

}  // namespace sinter::passes::decomp
