// Unary pointwise ops and activations: their dtype rules (PyTorch's categories: "floating" ops turn integers into
// float32, abs/neg keep integers, predicates give bool, activations want floating tensors) and their kernels, one
// functor per op computed in float (for float32/float16/bfloat16), double, int64 or bool.
#include <cfloat>
#include <cmath>

#include "ops/pointwise_common.h"
#include "ops/pointwise_math.h"
#include "ops/vec_math.h"

namespace sinter::pointwise {
namespace {

using pmath::select;

enum class Category { kFloat, kSame, kSameNoBool, kFloatOnly, kPredicate, kIntegral, kSquare };

Category category(OpId op) {
  switch (op) {
    case OpId::sign:
    case OpId::nan_to_num: return Category::kSame;
    case OpId::abs:
    case OpId::neg:
    case OpId::relu:
    case OpId::floor:
    case OpId::ceil:
    case OpId::round:
    case OpId::trunc:
    case OpId::hardtanh:
    case OpId::threshold: return Category::kSameNoBool;
    case OpId::frac:
    case OpId::silu:
    case OpId::mish:
    case OpId::hardsigmoid:
    case OpId::hardswish:
    case OpId::selu:
    case OpId::gelu:
    case OpId::softplus:
    case OpId::leaky_relu:
    case OpId::elu:
    case OpId::celu: return Category::kFloatOnly;
    case OpId::isnan:
    case OpId::isinf:
    case OpId::isfinite:
    case OpId::signbit:
    case OpId::logical_not: return Category::kPredicate;
    case OpId::bitwise_not: return Category::kIntegral;
    case OpId::square: return Category::kSquare;
    default: return Category::kFloat;  // sqrt, exp, log, sin, sigmoid, erf, reciprocal, lgamma, logit, ...
  }
}

DType unary_dtype(OpId op, DType in) {
  switch (category(op)) {
    case Category::kFloat: return is_floating(in) ? in : kFloat32;
    case Category::kSame: return in;
    case Category::kSameNoBool:
      SINTER_CHECK(!(op == OpId::neg && in == kBool),
                   "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                   "mask, use the `~` or `logical_not()` operator instead.");
      if (in == kBool) unsupported_dtype(op, in);
      return in;
    case Category::kFloatOnly:
      if (!is_floating(in)) unsupported_dtype(op, in, "floating tensors");
      return in;
    case Category::kPredicate: return kBool;
    case Category::kIntegral:
      if (is_floating(in)) unsupported_dtype(op, in, "integer or bool tensors");
      return in;
    case Category::kSquare: return in == kBool ? kInt64 : in;
  }
  return in;
}

ShapeResult unary_shape(OpId op, const Args& args) {
  const Tensor& self = args[0].tensor();
  if (op == OpId::gelu) {
    const std::string& a = args[1].str_value();
    SINTER_CHECK(a == "none" || a == "tanh", "approximate argument must be either none or tanh, got '{}'", a);
  }
  if (op == OpId::celu) SINTER_CHECK(args[1].scalar().to_double() != 0, "ZeroDivisionError: alpha cannot be 0 for CELU");
  return output_meta(args, {0}, self.sizes(), unary_dtype(op, self.dtype()));
}

// The largest finite value of a floating dtype (nan_to_num's default for +inf).
double dtype_max(DType d) {
  switch (d) {
    case kFloat64: return DBL_MAX;
    case kFloat16: return 65504.0;
    case kBFloat16: return 3.3895313892515355e38;
    default: return FLT_MAX;
  }
}

// Activations shared by elu, celu and selu: x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale.
template <class T>
T elu(T v, T neg_coef, T pos_coef, T input_scale) {
  return v <= T(0) ? std::expm1(v * input_scale) * neg_coef : v * pos_coef;
}

// The hand-vectorized kernels of an op (vec_math.h), float and bfloat16, or false where there are none: the
// ops whose auto-vectorized functors are compute-bound (an exp, a divide) on large inputs.
bool vec_kernels(OpId op, const Args& args, loops::Loop::FloatArrayFn& f32, loops::Loop::Bf16ArrayFn& bf16) {
  switch (op) {
    case OpId::exp: f32 = &vec::exp, bf16 = &vec::exp_bf16; return true;
    case OpId::sigmoid: f32 = &vec::sigmoid, bf16 = &vec::sigmoid_bf16; return true;
    case OpId::silu: f32 = &vec::silu, bf16 = &vec::silu_bf16; return true;
    case OpId::gelu:
      if (args[1].str_value() != "none") return false;
      f32 = &vec::gelu, bf16 = &vec::gelu_bf16;
      return true;
    default: return false;
  }
}

void unary_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& out = outs[0];
  Tensor x = loops::unalias_input(out, args[0].tensor());
  const DType dt = unary_dtype(op, x.dtype());
  loops::Loop loop(out);
  loop.input(x);
  // f(v) in the output's compute type: floating only, any numeric (not bool), or every compute type.
  auto floating = [&](auto f) { loops::visit_compute_floating(dt, [&]<class C>() { loop.run<C, C>(f); }); };
  auto numeric = [&](auto f) {
    SINTER_INTERNAL_ASSERT(dt != kBool, "numeric op on bool");
    loops::visit_compute(dt, [&]<class C>() {
      if constexpr (!std::is_same_v<C, bool>) loop.run<C, C>(f);
    });
  };
  auto predicate = [&](auto f) { loops::visit_compute(x.dtype(), [&]<class C>() { loop.run<bool, C>(f); }); };
  auto scalar = [&](int i) { return args[i].scalar().to_double(); };

  // Hand-vectorized kernels on CPUs with AVX-512, for every op computed in float (float32, float16, bfloat16
  // and integer inputs, any layout: the loop converts and gathers into float buffers where it must), so that
  // an op gives the same float results whatever path its operands take.
  loops::Loop::FloatArrayFn vf32;
  loops::Loop::Bf16ArrayFn vbf16;
  if (is_floating(dt) && dt != kFloat64 && vec::available() && vec_kernels(op, args, vf32, vbf16))
    return loop.run_float(vf32, vbf16);

  switch (op) {
    case OpId::abs:
      return numeric([](auto v) -> decltype(v) {
        if constexpr (std::is_integral_v<decltype(v)>) return v < 0 ? pmath::wrap_sub(0, v) : v;
        else return std::fabs(v);
      });
    case OpId::neg:
      return numeric([](auto v) -> decltype(v) {
        if constexpr (std::is_integral_v<decltype(v)>) return pmath::wrap_sub(0, v);
        else return -v;
      });
    case OpId::sign:
      if (dt == kBool) return loop.run<bool, bool>([](bool v) { return v; });
      return numeric([](auto v) -> decltype(v) {
        using T = decltype(v);
        return static_cast<T>(T(0) < v) - static_cast<T>(v < T(0));
      });
    case OpId::sqrt: return floating([](auto v) { return std::sqrt(v); });
    case OpId::rsqrt: return floating([](auto v) { return decltype(v)(1) / std::sqrt(v); });
    case OpId::exp: return floating([](auto v) { return pmath::exp_(v); });
    case OpId::exp2: return floating([](auto v) { return std::exp2(v); });
    case OpId::expm1: return floating([](auto v) { return std::expm1(v); });
    case OpId::log: return floating([](auto v) { return std::log(v); });
    case OpId::log2: return floating([](auto v) { return std::log2(v); });
    case OpId::log10: return floating([](auto v) { return std::log10(v); });
    case OpId::log1p: return floating([](auto v) { return std::log1p(v); });
    case OpId::sin: return floating([](auto v) { return std::sin(v); });
    case OpId::cos: return floating([](auto v) { return std::cos(v); });
    case OpId::tan: return floating([](auto v) { return std::tan(v); });
    case OpId::asin: return floating([](auto v) { return std::asin(v); });
    case OpId::acos: return floating([](auto v) { return std::acos(v); });
    case OpId::atan: return floating([](auto v) { return std::atan(v); });
    case OpId::sinh: return floating([](auto v) { return std::sinh(v); });
    case OpId::cosh: return floating([](auto v) { return std::cosh(v); });
    case OpId::tanh: return floating([](auto v) { return pmath::tanh_(v); });
    case OpId::asinh: return floating([](auto v) { return std::asinh(v); });
    case OpId::acosh: return floating([](auto v) { return std::acosh(v); });
    case OpId::atanh: return floating([](auto v) { return std::atanh(v); });
    case OpId::sigmoid: return floating([](auto v) { return pmath::sigmoid_(v); });
    case OpId::relu:
      return numeric([](auto v) -> decltype(v) { return v < decltype(v)(0) ? decltype(v)(0) : v; });
    case OpId::silu: return floating([](auto v) { return v / (decltype(v)(1) + pmath::exp_(-v)); });
    case OpId::mish: return floating([](auto v) { return v * pmath::tanh_(std::log1p(pmath::exp_(v))); });
    case OpId::erf: return floating([](auto v) { return pmath::erf_(v); });
    case OpId::erfc: return floating([](auto v) { return std::erfc(v); });
    case OpId::erfinv: return floating([](auto v) { return static_cast<decltype(v)>(pmath::erfinv(v)); });
    case OpId::lgamma: return floating([](auto v) { return static_cast<decltype(v)>(pmath::lgamma(v)); });
    case OpId::digamma: return floating([](auto v) { return static_cast<decltype(v)>(pmath::digamma(v)); });
    // Integers round to themselves (PyTorch returns a copy).
    case OpId::floor:
      return numeric([](auto v) -> decltype(v) {
        if constexpr (pmath::kIsFloat<decltype(v)>) return std::floor(v);
        else return v;
      });
    case OpId::ceil:
      return numeric([](auto v) -> decltype(v) {
        if constexpr (pmath::kIsFloat<decltype(v)>) return std::ceil(v);
        else return v;
      });
    case OpId::trunc:
      return numeric([](auto v) -> decltype(v) {
        if constexpr (pmath::kIsFloat<decltype(v)>) return std::trunc(v);
        else return v;
      });
    case OpId::round:  // half to even: nearbyint under the default rounding mode
      return numeric([](auto v) -> decltype(v) {
        if constexpr (pmath::kIsFloat<decltype(v)>) return std::nearbyint(v);
        else return v;
      });
    case OpId::frac: return floating([](auto v) { return v - std::trunc(v); });
    case OpId::reciprocal: return floating([](auto v) { return decltype(v)(1) / v; });
    case OpId::square: return numeric([](auto v) { return pmath::mul_(v, v); });
    case OpId::logical_not: return loop.run<bool, bool>([](bool v) { return !v; });
    case OpId::bitwise_not:
      if (dt == kBool) return loop.run<bool, bool>([](bool v) { return !v; });
      return loop.run<int64_t, int64_t>([](int64_t v) { return ~v; });
    case OpId::isnan:
      return predicate([](auto v) {
        if constexpr (pmath::kIsFloat<decltype(v)>) return v != v;
        else return false;
      });
    case OpId::isinf:
      return predicate([](auto v) {
        if constexpr (pmath::kIsFloat<decltype(v)>) return std::fabs(v) == std::numeric_limits<decltype(v)>::infinity();
        else return false;
      });
    case OpId::isfinite:
      return predicate([](auto v) {
        if constexpr (pmath::kIsFloat<decltype(v)>) return v - v == 0;
        else return true;
      });
    case OpId::signbit:
      return predicate([](auto v) {
        if constexpr (pmath::kIsFloat<decltype(v)>) return std::signbit(v);
        else if constexpr (std::is_same_v<decltype(v), bool>) return false;
        else return v < 0;
      });
    case OpId::hardsigmoid:
      return floating([](auto v) {
        using T = decltype(v);
        return std::min(std::max(v + T(3), T(0)), T(6)) / T(6);
      });
    case OpId::hardswish:
      return floating([](auto v) {
        using T = decltype(v);
        return v * std::min(std::max(v + T(3), T(0)), T(6)) / T(6);
      });
    case OpId::selu: {
      const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
      return floating([=](auto v) {
        using T = decltype(v);
        return elu(v, T(alpha * scale), T(scale), T(1));
      });
    }
    case OpId::gelu:
      if (args[1].str_value() == "tanh") {
        return floating([](auto v) {
          using T = decltype(v);
          const T beta = T(0.7978845608028654), kappa = T(0.044715);  // sqrt(2 / pi)
          return T(0.5) * v * (T(1) + pmath::tanh_(beta * (v + kappa * v * v * v)));
        });
      }
      return floating([](auto v) {
        using T = decltype(v);
        if constexpr (std::is_same_v<T, float>) return pmath::gelu_erf_f(v);
        else return T(0.5) * v * (T(1) + pmath::erf_(v * T(0.70710678118654752440)));
      });
    case OpId::softplus: {
      const double beta = scalar(1), threshold = scalar(2);
      return floating([=](auto v) {
        using T = decltype(v);
        return v * T(beta) > T(threshold) ? v : std::log1p(pmath::exp_(v * T(beta))) / T(beta);
      });
    }
    case OpId::leaky_relu: {
      const double slope = scalar(1);
      return floating([=](auto v) { return select(v > decltype(v)(0), v, v * decltype(v)(slope)); });
    }
    case OpId::elu: {
      const double alpha = scalar(1), scale = scalar(2), input_scale = scalar(3);
      return floating([=](auto v) {
        using T = decltype(v);
        return elu(v, T(alpha * scale), T(scale), T(input_scale));
      });
    }
    case OpId::celu: {
      const double alpha = scalar(1);
      return floating([=](auto v) {
        using T = decltype(v);
        return elu(v, T(alpha), T(1), T(1.0 / alpha));
      });
    }
    case OpId::hardtanh: {
      const Scalar lo = args[1].scalar(), hi = args[2].scalar();
      return numeric([=](auto v) {
        using T = decltype(v);
        return pmath::min_nan(pmath::max_nan(v, cast_to<T>(lo.to_double())), cast_to<T>(hi.to_double()));
      });
    }
    case OpId::threshold: {
      const double th = scalar(1), value = scalar(2);
      return numeric([=](auto v) {
        using T = decltype(v);
        return v <= cast_to<T>(th) ? cast_to<T>(value) : v;
      });
    }
    case OpId::logit: {
      if (args[1].is_none()) return floating([](auto v) { return std::log(v / (decltype(v)(1) - v)); });
      const double eps = args[1].to_double();
      return floating([=](auto v) {
        using T = decltype(v);
        const T lo = T(eps), hi = T(1) - T(eps);
        T c = v < lo ? lo : (v > hi ? hi : v);
        return std::log(c / (T(1) - c));
      });
    }
    case OpId::nan_to_num: {
      if (!is_floating(dt)) return loops::visit_compute(dt, [&]<class C>() { loop.run<C, C>([](C v) { return v; }); });
      const double nan = args[1].is_none() ? 0.0 : args[1].to_double();
      const double posinf = args[2].is_none() ? dtype_max(dt) : args[2].to_double();
      const double neginf = args[3].is_none() ? -dtype_max(dt) : args[3].to_double();
      return floating([=](auto v) {
        using T = decltype(v);
        const T inf = std::numeric_limits<T>::infinity();
        return v != v ? T(nan) : (v == inf ? T(posinf) : (v == -inf ? T(neginf) : v));
      });
    }
    default: break;
  }
  SINTER_INTERNAL_ASSERT(false, "{} is not a unary pointwise op", op_name(op));
}

}  // namespace

void register_pointwise_unary(OpTable& t) {
#define SINTER_SET_UNARY(X, name) t.set(OpId::name, unary_shape, unary_kernel);
  SINTER_UNARY_OPS(unused, SINTER_SET_UNARY)
#undef SINTER_SET_UNARY
  for (OpId op : {OpId::gelu, OpId::softplus, OpId::leaky_relu, OpId::elu, OpId::celu, OpId::hardtanh,
                  OpId::threshold, OpId::logit, OpId::nan_to_num})
    t.set(op, unary_shape, unary_kernel);
#define SINTER_SET_UNARY_INPLACE(X, name) t.set(OpId::name##_, inplace_shape, inplace_kernel);
  SINTER_UNARY_INPLACE_NAMES(SINTER_SET_UNARY_INPLACE, _)
#undef SINTER_SET_UNARY_INPLACE
}

}  // namespace sinter::pointwise
