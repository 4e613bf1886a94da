// Derivative rows of the element-wise ops (unary, binary, ternary, in-place writes, copies).
#include <cmath>
#include <numbers>

#include "autograd/derivatives.h"
#include "ops/dispatch.h"
#include "sinter/ops.h"

namespace sinter::autograd {
namespace {

using C = BackwardContext;

Tensor zeros_of(const C& c) { return zeros_like(c.grad()); }
Scalar scalar_arg(const C& c, std::string_view name) { return c.arg(name).scalar(); }

// Where a mask holds, the gradient; elsewhere 0.
Tensor masked(const Tensor& g, const Tensor& keep) { return where(keep, g, 0.0); }

Tensor clamp_mask(const Tensor& x, const Value& lo, const Value& hi) {
  Tensor keep = ones_like(x, kBool);
  if (!lo.is_none()) keep = lo.is_tensor() ? keep & (x >= lo.tensor()) : keep & (x >= lo.scalar());
  if (!hi.is_none()) keep = hi.is_tensor() ? keep & (x <= hi.tensor()) : keep & (x <= hi.scalar());
  return keep;
}

// d/dx of gelu, exact or with the tanh approximation.
Tensor gelu_grad(const Tensor& g, const Tensor& x, const std::string& approximate) {
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / std::numbers::pi), a = 0.044715;
    Tensor inner = k * (x + a * x * x * x);
    Tensor t = tanh(inner);
    Tensor d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * a * x * x);
    return g * d;
  }
  Tensor cdf = 0.5 * (1.0 + erf(x * (1.0 / std::sqrt(2.0))));
  Tensor pdf = exp(-0.5 * x * x) * (1.0 / std::sqrt(2.0 * std::numbers::pi));
  return g * (cdf + x * pdf);
}

// trigamma(x) = d digamma / dx, in sinter ops (so that digamma's gradient traces and differentiates again): for
// x >= 0.5, six steps of trigamma(y) = trigamma(y + 1) + 1 / y^2 and the asymptotic series at y + 6 (error below
// 1e-10); below, the reflection trigamma(x) = pi^2 / sin^2(pi x) - trigamma(1 - x) (inf at the poles 0, -1, ...).
Tensor trigamma_nonneg(Tensor y) {
  Tensor acc = zeros_like(y);
  for (int k = 0; k < 6; ++k) {
    acc = acc + reciprocal(y * y);
    y = y + 1.0;
  }
  Tensor r = reciprocal(y), r2 = r * r;
  // 1/y + 1/(2y^2) + 1/(6y^3) - 1/(30y^5) + 1/(42y^7) - 1/(30y^9)
  Tensor series = r + r2 * (0.5 + r * (1.0 / 6 + r2 * (-1.0 / 30 + r2 * (1.0 / 42 + r2 * (-1.0 / 30)))));
  return acc + series;
}

Tensor trigamma(const Tensor& x) {
  const Tensor low = x < 0.5;
  const Tensor y = where(low, 1.0 - x, x);  // >= 0.5 everywhere
  const Tensor direct = trigamma_nonneg(y);
  const double pi = 3.14159265358979323846;
  const Tensor s = sin(x * pi);
  return where(low, (pi * pi) / (s * s) - direct, direct);
}

// maximum/minimum: the gradient goes to the input that won, split in half on a tie.
void extreme_grads(C& c, bool is_max) {
  Tensor a = c.t("self"), b = c.t("other"), g = c.grad();
  Tensor tie = a == b;
  Tensor half = where(tie, g / 2.0, g);
  c.set("self", where((is_max ? a > b : a < b) | tie, half, zeros_like(g)));
  c.set("other", where((is_max ? b > a : b < a) | tie, half, zeros_like(g)));
}

void add_unary_rows(std::vector<DerivativeRow>& rows) {
  auto row = [&](OpId op, const char* saves, BackwardFormula f) { rows.push_back({op, saves, f}); };
  row(OpId::abs, "self", [](C& c) { c.set("self", c.grad() * sign(c.t("self"))); });
  row(OpId::neg, "", [](C& c) { c.set("self", -c.grad()); });
  row(OpId::sign, "", [](C& c) { c.set("self", zeros_of(c)); });
  row(OpId::sqrt, "result", [](C& c) { c.set("self", c.grad() / (2.0 * c.result())); });
  row(OpId::rsqrt, "result", [](C& c) { c.set("self", -0.5 * c.grad() * pow(c.result(), 3.0)); });
  row(OpId::exp, "result", [](C& c) { c.set("self", c.grad() * c.result()); });
  row(OpId::exp2, "result", [](C& c) { c.set("self", c.grad() * c.result() * std::numbers::ln2); });
  row(OpId::expm1, "result", [](C& c) { c.set("self", c.grad() * (c.result() + 1.0)); });
  row(OpId::log, "self", [](C& c) { c.set("self", c.grad() / c.t("self")); });
  row(OpId::log2, "self", [](C& c) { c.set("self", c.grad() / (c.t("self") * std::numbers::ln2)); });
  row(OpId::log10, "self", [](C& c) { c.set("self", c.grad() / (c.t("self") * std::numbers::ln10)); });
  row(OpId::log1p, "self", [](C& c) { c.set("self", c.grad() / (c.t("self") + 1.0)); });
  row(OpId::sin, "self", [](C& c) { c.set("self", c.grad() * cos(c.t("self"))); });
  row(OpId::cos, "self", [](C& c) { c.set("self", -c.grad() * sin(c.t("self"))); });
  row(OpId::tan, "result", [](C& c) { c.set("self", c.grad() * (1.0 + c.result() * c.result())); });
  row(OpId::asin, "self", [](C& c) { c.set("self", c.grad() * rsqrt(1.0 - square(c.t("self")))); });
  row(OpId::acos, "self", [](C& c) { c.set("self", -c.grad() * rsqrt(1.0 - square(c.t("self")))); });
  row(OpId::atan, "self", [](C& c) { c.set("self", c.grad() / (1.0 + square(c.t("self")))); });
  row(OpId::sinh, "self", [](C& c) { c.set("self", c.grad() * cosh(c.t("self"))); });
  row(OpId::cosh, "self", [](C& c) { c.set("self", c.grad() * sinh(c.t("self"))); });
  row(OpId::tanh, "result", [](C& c) { c.set("self", c.grad() * (1.0 - c.result() * c.result())); });
  row(OpId::asinh, "self", [](C& c) { c.set("self", c.grad() * rsqrt(square(c.t("self")) + 1.0)); });
  row(OpId::acosh, "self", [](C& c) { c.set("self", c.grad() * rsqrt(square(c.t("self")) - 1.0)); });
  row(OpId::atanh, "self", [](C& c) { c.set("self", c.grad() / (1.0 - square(c.t("self")))); });
  row(OpId::sigmoid, "result", [](C& c) { c.set("self", c.grad() * c.result() * (1.0 - c.result())); });
  row(OpId::relu, "result", [](C& c) { c.set("self", masked(c.grad(), c.result() > 0.0)); });
  row(OpId::silu, "self", [](C& c) {
    Tensor x = c.t("self"), s = sigmoid(x);
    c.set("self", c.grad() * s * (1.0 + x * (1.0 - s)));
  });
  row(OpId::mish, "self", [](C& c) {
    Tensor x = c.t("self"), t = tanh(softplus(x));
    c.set("self", c.grad() * (t + x * sigmoid(x) * (1.0 - t * t)));
  });
  row(OpId::erf, "self", [](C& c) {
    c.set("self", c.grad() * (2.0 / std::sqrt(std::numbers::pi)) * exp(-square(c.t("self"))));
  });
  row(OpId::erfc, "self", [](C& c) {
    c.set("self", c.grad() * (-2.0 / std::sqrt(std::numbers::pi)) * exp(-square(c.t("self"))));
  });
  row(OpId::erfinv, "result", [](C& c) {
    c.set("self", c.grad() * (std::sqrt(std::numbers::pi) / 2.0) * exp(square(c.result())));
  });
  for (OpId op : {OpId::floor, OpId::ceil, OpId::round, OpId::trunc})
    row(op, "", [](C& c) { c.set("self", zeros_of(c)); });
  row(OpId::frac, "", [](C& c) { c.set("self", c.grad()); });
  row(OpId::reciprocal, "result", [](C& c) { c.set("self", -c.grad() * c.result() * c.result()); });
  row(OpId::square, "self", [](C& c) { c.set("self", 2.0 * c.grad() * c.t("self")); });
  row(OpId::hardsigmoid, "self", [](C& c) {
    Tensor x = c.t("self");
    c.set("self", masked(c.grad() / 6.0, (x > -3.0) & (x < 3.0)));
  });
  row(OpId::hardswish, "self", [](C& c) {
    Tensor x = c.t("self"), g = c.grad();
    c.set("self", where(x < -3.0, zeros_like(g), where(x <= 3.0, g * (x / 3.0 + 0.5), g)));
  });
  row(OpId::selu, "result", [](C& c) {
    const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
    Tensor y = c.result();
    c.set("self", c.grad() * where(y > 0.0, full_like(y, scale), y + scale * alpha));
  });
  row(OpId::lgamma, "self", [](C& c) { c.set("self", c.grad() * digamma(c.t("self"))); });
  row(OpId::digamma, "self", [](C& c) { c.set("self", c.grad() * trigamma(c.t("self"))); });
  row(OpId::gelu, "self", [](C& c) {
    c.set("self", gelu_grad(c.grad(), c.t("self"), c.arg("approximate").str_value()));
  });
  row(OpId::softplus, "self", [](C& c) {
    Tensor x = c.t("self");
    const double beta = c.f("beta"), threshold = c.f("threshold");
    c.set("self", where(x * beta > threshold, c.grad(), c.grad() * sigmoid(x * beta)));
  });
  row(OpId::leaky_relu, "self", [](C& c) {
    c.set("self", where(c.t("self") > 0.0, c.grad(), c.grad() * scalar_arg(c, "negative_slope")));
  });
  row(OpId::elu, "self", [](C& c) {
    Tensor x = c.t("self");
    const double alpha = c.f("alpha"), scale = c.f("scale"), in = c.f("input_scale");
    c.set("self", where(x > 0.0, c.grad() * scale, c.grad() * (in * scale * alpha) * exp(x * in)));
  });
  row(OpId::celu, "self", [](C& c) {
    Tensor x = c.t("self");
    const double alpha = c.f("alpha");
    c.set("self", where(x > 0.0, c.grad(), c.grad() * exp(x / alpha)));
  });
  row(OpId::hardtanh, "self", [](C& c) {
    Tensor x = c.t("self");
    c.set("self", masked(c.grad(), (x > scalar_arg(c, "min_val")) & (x < scalar_arg(c, "max_val"))));
  });
  row(OpId::threshold, "self", [](C& c) {
    c.set("self", masked(c.grad(), c.t("self") > scalar_arg(c, "threshold")));
  });
  row(OpId::logit, "self", [](C& c) {
    Tensor x = c.t("self");
    Tensor g = c.grad() / (x * (1.0 - x));
    if (!c.arg("eps").is_none()) {
      const double eps = c.f("eps");
      g = where((x < eps) | (x > 1.0 - eps), zeros_like(g), g);
    }
    c.set("self", g);
  });
  row(OpId::nan_to_num, "self", [](C& c) { c.set("self", masked(c.grad(), isfinite(c.t("self")))); });
}

void add_binary_rows(std::vector<DerivativeRow>& rows) {
  auto row = [&](OpId op, const char* saves, BackwardFormula f) { rows.push_back({op, saves, f}); };
  row(OpId::add_Tensor, "", [](C& c) {
    c.set("self", c.grad());
    c.set("other", c.grad() * scalar_arg(c, "alpha"));
  });
  row(OpId::add_Scalar, "", [](C& c) { c.set("self", c.grad()); });
  row(OpId::sub_Tensor, "", [](C& c) {
    c.set("self", c.grad());
    c.set("other", -c.grad() * scalar_arg(c, "alpha"));
  });
  row(OpId::sub_Scalar, "", [](C& c) { c.set("self", c.grad()); });
  row(OpId::rsub_Scalar, "", [](C& c) { c.set("self", -c.grad() * scalar_arg(c, "alpha")); });
  row(OpId::mul_Tensor, "self, other", [](C& c) {
    if (c.needs("self")) c.set("self", c.grad() * c.t("other"));
    if (c.needs("other")) c.set("other", c.grad() * c.t("self"));
  });
  row(OpId::mul_Scalar, "", [](C& c) { c.set("self", c.grad() * scalar_arg(c, "other")); });
  row(OpId::div_Tensor, "self, other", [](C& c) {
    Tensor other = c.t("other");
    if (c.needs("self")) c.set("self", c.grad() / other);
    if (c.needs("other")) c.set("other", -c.grad() * c.t("self") / (other * other));
  });
  row(OpId::div_Scalar, "", [](C& c) { c.set("self", c.grad() / scalar_arg(c, "other")); });
  row(OpId::div_Tensor_mode, "self, other", [](C& c) {
    if (!c.arg("rounding_mode").is_none()) {
      c.set("self", zeros_of(c));
      c.set("other", zeros_like(c.t("other")));
      return;
    }
    Tensor other = c.t("other");
    if (c.needs("self")) c.set("self", c.grad() / other);
    if (c.needs("other")) c.set("other", -c.grad() * c.t("self") / (other * other));
  });
  row(OpId::div_Scalar_mode, "", [](C& c) {
    c.set("self", c.arg("rounding_mode").is_none() ? c.grad() / scalar_arg(c, "other") : zeros_of(c));
  });
  row(OpId::pow_Tensor_Scalar, "self", [](C& c) {
    const Scalar e = scalar_arg(c, "exponent");
    if (e.to_double() == 0) return c.set("self", zeros_of(c));
    c.set("self", c.grad() * e * pow(c.t("self"), Scalar(e.to_double() - 1)));
  });
  row(OpId::pow_Tensor_Tensor, "self, exponent, result", [](C& c) {
    Tensor x = c.t("self"), e = c.t("exponent");
    if (c.needs("self"))
      c.set("self", where(e == 0.0, zeros_like(c.grad()), c.grad() * e * pow(x, e - 1.0)));
    if (c.needs("exponent"))
      c.set("exponent", where((x == 0.0) & (e >= 0.0), zeros_like(c.grad()), c.grad() * c.result() * log(x)));
  });
  row(OpId::pow_Scalar, "result", [](C& c) {
    const double base = c.f("self");
    Tensor g = base == 0 ? zeros_of(c) : c.grad() * c.result() * std::log(base);
    c.set("exponent", g);
  });
  row(OpId::atan2, "self, other", [](C& c) {
    Tensor y = c.t("self"), x = c.t("other"), r = y * y + x * x;
    c.set("self", c.grad() * x / r);
    c.set("other", -c.grad() * y / r);
  });
  row(OpId::maximum, "self, other", [](C& c) { extreme_grads(c, true); });
  row(OpId::minimum, "self, other", [](C& c) { extreme_grads(c, false); });
  row(OpId::hypot, "self, other, result", [](C& c) {
    c.set("self", c.grad() * c.t("self") / c.result());
    c.set("other", c.grad() * c.t("other") / c.result());
  });
  row(OpId::copysign, "self, result", [](C& c) {
    Tensor x = c.t("self");
    Tensor ratio = where(x == 0.0, zeros_like(x), c.result() / x);
    c.set("self", c.grad() * ratio);
    c.set("other", zeros_like(c.grad()));
  });
  row(OpId::fmod_Tensor, "self, other", [](C& c) {
    c.set("self", c.grad());
    if (c.needs("other")) c.set("other", -c.grad() * trunc(c.t("self") / c.t("other")));
  });
  row(OpId::fmod_Scalar, "", [](C& c) { c.set("self", c.grad()); });
  row(OpId::remainder_Tensor, "self, other", [](C& c) {
    c.set("self", c.grad());
    if (c.needs("other")) c.set("other", -c.grad() * floor(c.t("self") / c.t("other")));
  });
  row(OpId::remainder_Scalar, "", [](C& c) { c.set("self", c.grad()); });
}

void add_ternary_rows(std::vector<DerivativeRow>& rows) {
  auto row = [&](OpId op, const char* saves, BackwardFormula f) { rows.push_back({op, saves, f}); };
  row(OpId::where_self, "condition", [](C& c) {
    Tensor cond = c.t("condition"), g = c.grad();
    c.set("self", where(cond, g, 0.0));
    c.set("other", where(cond, 0.0, g));
  });
  row(OpId::where_ScalarOther, "condition", [](C& c) { c.set("self", where(c.t("condition"), c.grad(), 0.0)); });
  row(OpId::where_ScalarSelf, "condition", [](C& c) { c.set("other", where(c.t("condition"), 0.0, c.grad())); });
  row(OpId::clamp, "self", [](C& c) {
    c.set("self", masked(c.grad(), clamp_mask(c.t("self"), c.arg("min"), c.arg("max"))));
  });
  row(OpId::clamp_Tensor, "self, min, max", [](C& c) {
    Tensor x = c.t("self"), lo = c.t("min"), hi = c.t("max"), g = c.grad();
    Value vlo = lo.defined() ? Value(lo) : Value(), vhi = hi.defined() ? Value(hi) : Value();
    c.set("self", masked(g, clamp_mask(x, vlo, vhi)));
    if (lo.defined() && c.needs("min")) c.set("min", masked(g, x < lo));
    if (hi.defined() && c.needs("max")) c.set("max", masked(g, x > hi));
  });
  row(OpId::lerp_Scalar, "", [](C& c) {
    const double w = c.f("weight");
    c.set("self", c.grad() * (1.0 - w));
    c.set("end", c.grad() * w);
  });
  row(OpId::lerp_Tensor, "self, end, weight", [](C& c) {
    Tensor w = c.t("weight");
    c.set("self", c.grad() * (1.0 - w));
    c.set("end", c.grad() * w);
    if (c.needs("weight")) c.set("weight", c.grad() * (c.t("end") - c.t("self")));
  });
  row(OpId::addcmul, "tensor1, tensor2", [](C& c) {
    const Scalar v = scalar_arg(c, "value");
    c.set("self", c.grad());
    if (c.needs("tensor1")) c.set("tensor1", c.grad() * c.t("tensor2") * v);
    if (c.needs("tensor2")) c.set("tensor2", c.grad() * c.t("tensor1") * v);
  });
  row(OpId::addcdiv, "tensor1, tensor2", [](C& c) {
    const Scalar v = scalar_arg(c, "value");
    Tensor t2 = c.t("tensor2");
    c.set("self", c.grad());
    if (c.needs("tensor1")) c.set("tensor1", c.grad() * v / t2);
    if (c.needs("tensor2")) c.set("tensor2", -c.grad() * v * c.t("tensor1") / (t2 * t2));
  });
  row(OpId::masked_fill_Scalar, "mask", [](C& c) { c.set("self", masked_fill(c.grad(), c.t("mask"), 0.0)); });
  row(OpId::masked_fill_Tensor, "mask", [](C& c) {
    Tensor mask = c.t("mask"), g = c.grad();
    c.set("self", masked_fill(g, mask, 0.0));
    if (c.needs("value")) c.set("value", sum(where(mask, g, 0.0)));
  });
}

void add_write_rows(std::vector<DerivativeRow>& rows) {
  auto row = [&](OpId op, const char* saves, BackwardFormula f) { rows.push_back({op, saves, f}); };
  for (OpId op : {OpId::fill__Scalar, OpId::zero_, OpId::uniform_, OpId::normal_})
    row(op, "", [](C& c) { c.set("self", zeros_of(c)); });
  row(OpId::copy_, "", [](C& c) {
    c.set("self", zeros_of(c));
    c.set("src", c.grad());
  });
  row(OpId::to_copy, "", [](C& c) { c.set("self", c.grad().to(c.meta("self").device)); });
  row(OpId::clone, "", [](C& c) { c.set("self", c.grad()); });
  row(OpId::bernoulli_p, "", [](C& c) { c.set("self", zeros_of(c)); });
  row(OpId::as_strided_scatter, "", [](C& c) {
    Tensor g = c.grad().contiguous();
    const SymIntList& size = c.arg("size").int_list();
    const SymIntList& stride = c.arg("stride").int_list();
    std::optional<SymInt> offset;
    if (!c.arg("storage_offset").is_none()) offset = c.arg("storage_offset").sym_int();
    if (c.needs("src")) c.set("src", as_strided(g, size, stride, offset).clone());
    if (c.needs("self")) {
      const GradMeta& m = c.meta("src");
      Tensor hole = zeros(m.sizes, TensorOptions(g.dtype(), g.device()));
      c.set("self", dispatch1(OpId::as_strided_scatter, {g, hole, size, stride, Value(offset)}, Loc::current()));
    }
  });
}

}  // namespace

void add_pointwise_rows(std::vector<DerivativeRow>& rows) {
  add_unary_rows(rows);
  add_binary_rows(rows);
  add_ternary_rows(rows);
  add_write_rows(rows);
}

}  // namespace sinter::autograd
