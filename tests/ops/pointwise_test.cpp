// Tests of the unary pointwise ops and activations: every op against a float64 reference computed with std::
// math, on every floating dtype, contiguous, strided and transposed inputs, empty and 0-dim tensors; the dtype
// rules (integers to float32 for floating ops, predicates to bool) and special values (NaN, inf, halves).
#include <cmath>
#include <functional>

#include "testing.h"

namespace sinter {
namespace {

using ::sinter::testing::kFloatingDTypes;
using ::sinter::testing::kIntegralDTypes;
using Fn = std::function<double(double)>;

// A float64 tensor of f applied to each value of x.
Tensor reference(const Tensor& x, const Fn& f) {
  std::vector<double> v = x.to_vector<double>();
  for (double& e : v) e = f(e);
  Tensor r = from_vector<double>(v, x.dim() == 0 ? SymIntList{1} : x.sizes(), kFloat64);
  return x.dim() == 0 ? r.view({}) : r;
}

enum class Domain { kAny, kPositive, kUnit, kAboveOne, kProbability, kNarrow };

Tensor input(Domain d, const SymIntList& sizes, DType dtype, uint64_t seed = 1) {
  switch (d) {
    case Domain::kAny: return testing::random(sizes, dtype, seed);
    case Domain::kPositive: return testing::random_positive(sizes, dtype, 0.1, 4.0, seed);
    case Domain::kUnit: return testing::random_positive(sizes, dtype, -0.9, 0.9, seed);
    case Domain::kAboveOne: return testing::random_positive(sizes, dtype, 1.1, 4.0, seed);
    case Domain::kProbability: return testing::random_positive(sizes, dtype, 0.05, 0.95, seed);
    case Domain::kNarrow: return testing::random_positive(sizes, dtype, -1.2, 1.2, seed);
  }
  return {};
}

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  Fn ref;
  Domain domain = Domain::kAny;
};

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double softplus_ref(double x, double beta, double th) { return x * beta > th ? x : std::log1p(std::exp(x * beta)) / beta; }
double elu_ref(double x, double alpha, double scale, double input_scale) {
  return x > 0 ? x * scale : alpha * scale * std::expm1(x * input_scale);
}
// Recurrence up to x >= 20, then the asymptotic series in Bernoulli numbers (positive x only).
double digamma_ref(double x) {
  double r = 0;
  for (; x < 20; x += 1) r -= 1 / x;
  double z = 1 / (x * x);
  return r + std::log(x) - 0.5 / x - z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z / 132))));
}

std::vector<UnaryCase> floating_cases() {
  return {
      {"abs", [](const Tensor& x) { return abs(x); }, [](double x) { return std::fabs(x); }},
      {"neg", [](const Tensor& x) { return neg(x); }, [](double x) { return -x; }},
      {"sign", [](const Tensor& x) { return sign(x); }, [](double x) { return double((x > 0) - (x < 0)); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, Domain::kPositive},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, Domain::kPositive},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); }},
      {"exp2", [](const Tensor& x) { return exp2(x); }, [](double x) { return std::exp2(x); }},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](double x) { return std::expm1(x); }},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, Domain::kPositive},
      {"log2", [](const Tensor& x) { return log2(x); }, [](double x) { return std::log2(x); }, Domain::kPositive},
      {"log10", [](const Tensor& x) { return log10(x); }, [](double x) { return std::log10(x); }, Domain::kPositive},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](double x) { return std::log1p(x); }, Domain::kPositive},
      {"sin", [](const Tensor& x) { return sin(x); }, [](double x) { return std::sin(x); }},
      {"cos", [](const Tensor& x) { return cos(x); }, [](double x) { return std::cos(x); }},
      {"tan", [](const Tensor& x) { return tan(x); }, [](double x) { return std::tan(x); }, Domain::kNarrow},
      {"asin", [](const Tensor& x) { return asin(x); }, [](double x) { return std::asin(x); }, Domain::kUnit},
      {"acos", [](const Tensor& x) { return acos(x); }, [](double x) { return std::acos(x); }, Domain::kUnit},
      {"atan", [](const Tensor& x) { return atan(x); }, [](double x) { return std::atan(x); }},
      {"sinh", [](const Tensor& x) { return sinh(x); }, [](double x) { return std::sinh(x); }},
      {"cosh", [](const Tensor& x) { return cosh(x); }, [](double x) { return std::cosh(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); }},
      {"asinh", [](const Tensor& x) { return asinh(x); }, [](double x) { return std::asinh(x); }},
      {"acosh", [](const Tensor& x) { return acosh(x); }, [](double x) { return std::acosh(x); }, Domain::kAboveOne},
      {"atanh", [](const Tensor& x) { return atanh(x); }, [](double x) { return std::atanh(x); }, Domain::kUnit},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, sigmoid_ref},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0; }},
      {"relu6", [](const Tensor& x) { return relu6(x * 4); }, [](double x) { return std::min(std::max(4 * x, 0.0), 6.0); }},
      {"silu", [](const Tensor& x) { return silu(x); }, [](double x) { return x * sigmoid_ref(x); }},
      {"mish", [](const Tensor& x) { return mish(x); }, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }},
      {"erf", [](const Tensor& x) { return erf(x); }, [](double x) { return std::erf(x); }},
      {"erfc", [](const Tensor& x) { return erfc(x); }, [](double x) { return std::erfc(x); }},
      {"floor", [](const Tensor& x) { return floor(x * 3); }, [](double x) { return std::floor(3 * x); }},
      {"ceil", [](const Tensor& x) { return ceil(x * 3); }, [](double x) { return std::ceil(3 * x); }},
      {"round", [](const Tensor& x) { return round(x * 3); }, [](double x) { return std::nearbyint(3 * x); }},
      {"trunc", [](const Tensor& x) { return trunc(x * 3); }, [](double x) { return std::trunc(3 * x); }},
      {"frac", [](const Tensor& x) { return frac(x); }, [](double x) { return x - std::trunc(x); }},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, [](double x) { return 1 / x; }, Domain::kPositive},
      {"square", [](const Tensor& x) { return square(x); }, [](double x) { return x * x; }},
      {"hardsigmoid", [](const Tensor& x) { return hardsigmoid(x * 4); },
       [](double x) { return std::min(std::max(4 * x + 3, 0.0), 6.0) / 6; }},
      {"hardswish", [](const Tensor& x) { return hardswish(x * 4); },
       [](double x) { return 4 * x * std::min(std::max(4 * x + 3, 0.0), 6.0) / 6; }},
      {"selu", [](const Tensor& x) { return selu(x); },
       [](double x) { return elu_ref(x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1); }},
      {"lgamma", [](const Tensor& x) { return lgamma(x); }, [](double x) { return std::lgamma(x); }, Domain::kPositive},
      {"digamma", [](const Tensor& x) { return digamma(x); }, digamma_ref, Domain::kPositive},
      {"gelu", [](const Tensor& x) { return gelu(x); }, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); },
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }, [](double x) { return softplus_ref(x, 1, 20); }},
      {"softplus_beta", [](const Tensor& x) { return softplus(x, 2, 1); }, [](double x) { return softplus_ref(x, 2, 1); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }, [](double x) { return x > 0 ? x : 0.2 * x; }},
      {"elu", [](const Tensor& x) { return elu(x, 1.5); }, [](double x) { return elu_ref(x, 1.5, 1, 1); }},
      {"celu", [](const Tensor& x) { return celu(x, 0.7); }, [](double x) { return elu_ref(x, 0.7, 1, 1 / 0.7); }},
      {"hardtanh", [](const Tensor& x) { return hardtanh(x, -0.5, 0.8); },
       [](double x) { return std::min(std::max(x, -0.5), 0.8); }},
      {"threshold", [](const Tensor& x) { return threshold(x, 0.1, 20); }, [](double x) { return x <= 0.1 ? 20 : x; }},
      {"logit", [](const Tensor& x) { return logit(x); }, [](double x) { return std::log(x / (1 - x)); },
       Domain::kProbability},
      {"logit_eps", [](const Tensor& x) { return logit(x, 0.2); },
       [](double x) {
         double c = std::min(std::max(x, 0.2), 0.8);
         return std::log(c / (1 - c));
       },
       Domain::kProbability},
      {"nan_to_num", [](const Tensor& x) { return nan_to_num(x); }, [](double x) { return x; }},
  };
}

// The reference is computed from the values the op's input actually holds (rounded to the dtype), and for ops
// whose argument is scaled first (x * 3) from the scaled values rounded the same way.
TEST(PointwiseUnary, EveryFloatingOpMatchesReferenceOnEveryFloatingDType) {
  for (const UnaryCase& c : floating_cases()) {
    for (DType dtype : kFloatingDTypes) {
      SCOPED_TRACE(::testing::Message() << c.name << " " << dtype_name(dtype));
      Tensor x = input(c.domain, {37, 45}, dtype);
      Tensor out = c.op(x);
      EXPECT_EQ(out.dtype(), dtype);
      // Half-precision rounding of a scaled argument can move a value across a floor/threshold boundary.
      double tol = is_floating(dtype) && element_size(dtype) == 2 ? 3e-2 : testing::tolerance(dtype);
      if (std::string(c.name) == "round" || std::string(c.name) == "floor" || std::string(c.name) == "ceil" ||
          std::string(c.name) == "trunc")
        tol = dtype == kFloat64 ? 1e-12 : 0.05;
      EXPECT_CLOSE(out, reference(x, c.ref), tol);
      EXPECT_CLOSE(c.op(testing::non_contiguous(x)), out, 0);
      EXPECT_CLOSE(c.op(x.t()), out.t(), 0);
    }
  }
}

TEST(PointwiseUnary, LargeInputsTakeTheParallelPathWithTheSameResults) {
  Tensor x = testing::random({513, 300}, kFloat32, 3);
  for (const UnaryCase& c : floating_cases()) {
    SCOPED_TRACE(c.name);
    if (c.domain != Domain::kAny) continue;
    EXPECT_CLOSE(c.op(x), reference(x, c.ref), 2e-5);
  }
}

TEST(PointwiseUnary, EmptyAndZeroDimInputs) {
  Tensor e = zeros({0, 3});
  EXPECT_EQ(exp(e).sizes().hints(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(sigmoid(zeros({2, 0}, TensorOptions(kBFloat16))).dtype(), kBFloat16);
  Tensor s = scalar_tensor(0.5);
  Tensor r = exp(s);
  EXPECT_EQ(r.dim(), 0);
  EXPECT_NEAR(r.item<double>(), std::exp(0.5), 1e-6);
  EXPECT_NEAR(gelu(scalar_tensor(1.0, kFloat64)).item<double>(), 0.5 * (1 + std::erf(1 / std::sqrt(2.0))), 1e-15);
}

TEST(PointwiseUnary, FloatingOpsOfIntegersAndBoolGiveFloat32) {
  for (DType dtype : {kInt64, kInt32, kInt8, kUInt8, kBool}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = testing::random({4, 5}, dtype);
    Tensor y = exp(x);
    EXPECT_EQ(y.dtype(), kFloat32);
    EXPECT_CLOSE(y, reference(x, [](double v) { return std::exp(v); }), 1e-5);
    EXPECT_EQ(sigmoid(x).dtype(), kFloat32);
    EXPECT_EQ(sqrt(abs(x.to(kInt64))).dtype(), kFloat32);
    EXPECT_EQ(reciprocal(x).dtype(), kFloat32);
    EXPECT_EQ(isnan(x).dtype(), kBool);
  }
}

TEST(PointwiseUnary, IntegerOpsKeepTheDType) {
  for (DType dtype : kIntegralDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = testing::random({6, 7}, dtype, 5);
    auto wrap = [&](double v) {  // what the dtype holds after a wrapping int64 result
      int64_t i = static_cast<int64_t>(v);
      if (dtype == kInt8) return double(static_cast<int8_t>(i));
      if (dtype == kUInt8) return double(static_cast<uint8_t>(i));
      if (dtype == kInt32) return double(static_cast<int32_t>(i));
      return double(i);
    };
    EXPECT_EQ(abs(x).dtype(), dtype);
    EXPECT_TENSOR_EQ(abs(x), reference(x, [&](double v) { return wrap(std::fabs(v)); }));
    EXPECT_TENSOR_EQ(neg(x), reference(x, [&](double v) { return wrap(-v); }));
    EXPECT_TENSOR_EQ(sign(x), reference(x, [&](double v) { return wrap((v > 0) - (v < 0)); }));
    EXPECT_TENSOR_EQ(square(x), reference(x, [&](double v) { return wrap(v * v); }));
    EXPECT_TENSOR_EQ(relu(x), reference(x, [&](double v) { return v > 0 ? v : 0; }));
    EXPECT_TENSOR_EQ(floor(x), x);
    EXPECT_TENSOR_EQ(round(x), x);
    EXPECT_TENSOR_EQ(bitwise_not(x), reference(x, [&](double v) { return wrap(~static_cast<int64_t>(v)); }));
    EXPECT_TENSOR_EQ(logical_not(x), reference(x, [&](double v) { return v == 0; }));
    EXPECT_TENSOR_EQ(signbit(x), reference(x, [&](double v) { return v < 0; }));
    EXPECT_TENSOR_EQ(isfinite(x), reference(x, [&](double) { return 1; }));
    EXPECT_TENSOR_EQ(nan_to_num(x), x);
  }
}

TEST(PointwiseUnary, BoolRules) {
  Tensor b = from_vector<bool>({true, false, true});
  EXPECT_EQ(square(b).dtype(), kInt64);
  EXPECT_TENSOR_EQ(square(b), from_vector<int64_t>({1, 0, 1}));
  EXPECT_TENSOR_EQ(bitwise_not(b), from_vector<bool>({false, true, false}));
  EXPECT_TENSOR_EQ(logical_not(b), from_vector<bool>({false, true, false}));
  EXPECT_TENSOR_EQ(sign(b), b);
  EXPECT_ERROR(neg(b), "Negation, the `-` operator, on a bool tensor is not supported");
  EXPECT_ERROR(abs(b), "abs", "bool");
  EXPECT_ERROR(relu(b), "relu", "bool");
}

TEST(PointwiseUnary, SpecialValues) {
  const double nan = NAN, inf = INFINITY;
  Tensor x = from_vector<double>({nan, inf, -inf, -0.0, 2.5, -2.5, 0.5, 1.5});
  EXPECT_TENSOR_EQ(isnan(x), from_vector<bool>({true, false, false, false, false, false, false, false}));
  EXPECT_TENSOR_EQ(isinf(x), from_vector<bool>({false, true, true, false, false, false, false, false}));
  EXPECT_TENSOR_EQ(isfinite(x), from_vector<bool>({false, false, false, true, true, true, true, true}));
  EXPECT_TENSOR_EQ(signbit(x), from_vector<bool>({false, false, true, true, false, true, false, false}));
  EXPECT_TENSOR_EQ(round(x), from_vector<double>({nan, inf, -inf, 0, 2, -2, 0, 2}));  // half to even
  EXPECT_TENSOR_EQ(sign(x), from_vector<double>({0, 1, -1, 0, 1, -1, 1, 1}));
  EXPECT_TENSOR_EQ(relu(x), from_vector<double>({nan, inf, 0, -0.0, 2.5, 0, 0.5, 1.5}));
  for (DType dtype : kFloatingDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor y = x.to(dtype);
    double big = dtype == kFloat32 ? 3.4028234663852886e38 : dtype == kFloat64 ? 1.7976931348623157e308
                 : dtype == kFloat16 ? 65504.0 : 3.3895313892515355e38;
    EXPECT_TENSOR_EQ(nan_to_num(y).to(kFloat64), from_vector<double>({0, big, -big, 0, 2.5, -2.5, 0.5, 1.5}));
    EXPECT_TENSOR_EQ(nan_to_num(y, 1.0, 2.0, -3.0), from_vector<double>({1, 2, -3, 0, 2.5, -2.5, 0.5, 1.5}));
    EXPECT_TENSOR_EQ(exp(from_vector<double>({-inf, inf, nan}).to(dtype)), from_vector<double>({0, inf, nan}));
    EXPECT_TENSOR_EQ(sigmoid(from_vector<double>({-inf, inf, nan}).to(dtype)), from_vector<double>({0, 1, nan}));
    EXPECT_TENSOR_EQ(tanh(from_vector<double>({-inf, inf, nan, -0.0}).to(dtype)),
                     from_vector<double>({-1, 1, nan, 0}));
  }
  // exp in float32 keeps working near overflow and in the subnormal range.
  Tensor e = exp(from_vector<float>({88.5f, 88.8f, -100.f, -90.f, -110.f}));
  std::vector<float> got = e.to_vector<float>();
  EXPECT_NEAR(got[0] / std::exp(88.5), 1, 1e-6);
  EXPECT_TRUE(std::isinf(got[1]));
  EXPECT_NEAR(got[2] / std::exp(-100.0), 1, 0.05);  // a subnormal: few digits
  EXPECT_NEAR(got[3] / std::exp(-90.0), 1, 1e-5);
  EXPECT_EQ(got[4], 0.f);
}

// float32 exp/tanh/sigmoid/erf are polynomial kernels of ours, not libm's: check them over their whole range.
TEST(PointwiseUnary, Float32PolynomialKernelsAreAccurateAcrossTheirRange) {
  auto sweep = [](double lo, double hi) {
    std::vector<float> v;
    for (int i = 0; i <= 20000; ++i) v.push_back(static_cast<float>(lo + (hi - lo) * i / 20000));
    return from_vector<float>(v);
  };
  auto worst = [](const Tensor& got, const Tensor& x, const Fn& f, bool relative) {
    std::vector<double> g = got.to_vector<double>(), xv = x.to_vector<double>();
    double w = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      double r = f(xv[i]), e = std::fabs(g[i] - r);
      w = std::max(w, relative ? e / std::max(std::fabs(r), 1e-37) : e);
    }
    return w;
  };
  Tensor x = sweep(-87, 88.5);
  EXPECT_LE(worst(exp(x), x, [](double v) { return std::exp(v); }, true), 3e-7);
  x = sweep(-12, 12);
  EXPECT_LE(worst(tanh(x), x, [](double v) { return std::tanh(v); }, true), 3e-7);
  EXPECT_LE(worst(sigmoid(x), x, sigmoid_ref, true), 5e-7);
  EXPECT_LE(worst(erf(x), x, [](double v) { return std::erf(v); }, false), 2e-7);
  x = sweep(-0.9, 0.9);
  EXPECT_LE(worst(erf(x), x, [](double v) { return std::erf(v); }, true), 3e-7);
}

TEST(PointwiseUnary, ErfinvIsAccurateToDoublePrecision) {
  std::vector<double> ys = {-0.999999999, -0.99, -0.7, -0.3, -1e-8, 0, 1e-10, 0.2, 0.5, 0.9, 0.9999, 0.99999999999};
  Tensor out = erfinv(from_vector<double>(ys));
  std::vector<double> x = out.to_vector<double>();
  for (size_t i = 0; i < ys.size(); ++i) {
    double y = ys[i], a = std::fabs(y);
    // The residual relative to what is left of y: erf(x) - y near 0, erfc(|x|) - (1 - |y|) in the tails.
    double rel = a < 0.5 ? std::fabs(std::erf(x[i]) - y) / std::max(a, 1e-300)
                         : std::fabs(std::erfc(std::fabs(x[i])) - (1 - a)) / (1 - a);
    EXPECT_LE(rel, 1e-12) << y;
  }
  EXPECT_TENSOR_EQ(erfinv(from_vector<double>({1, -1, 1.5, NAN})), from_vector<double>({INFINITY, -INFINITY, NAN, NAN}));
}

TEST(PointwiseUnary, DigammaAndLgammaSpecialValues) {
  Tensor x = from_vector<double>({1, 0.5, 10, -0.5, -2, 0, 1e-8, 30});
  std::vector<double> d = digamma(x).to_vector<double>();
  EXPECT_NEAR(d[0], -0.5772156649015329, 1e-14);
  EXPECT_NEAR(d[1], -1.9635100260214235, 1e-14);
  EXPECT_NEAR(d[2], 2.251752589066721, 1e-14);
  EXPECT_NEAR(d[3], 0.03648997397857652, 1e-13);
  EXPECT_TRUE(std::isnan(d[4]));
  EXPECT_TRUE(std::isinf(d[5]) && d[5] < 0);
  EXPECT_NEAR(d[6], -1e8 - 0.5772156649015329, 1e-6);
  EXPECT_NEAR(d[7], 3.38443813268552, 1e-12);
  std::vector<double> l = lgamma(x).to_vector<double>();
  EXPECT_NEAR(l[1], std::log(std::sqrt(M_PI)), 1e-14);
  EXPECT_TRUE(std::isinf(l[4]));
}

TEST(PointwiseUnary, ChannelsLastInputGivesChannelsLastOutput) {
  Tensor x = testing::random({2, 3, 4, 5}).contiguous(kChannelsLast);
  Tensor y = relu(x);
  EXPECT_TRUE(y.is_contiguous(kChannelsLast));
  EXPECT_CLOSE(y, reference(x, [](double v) { return v > 0 ? v : 0; }), 0);
  Tensor t = testing::random({5, 6}).t();
  EXPECT_EQ(exp(t).strides().hints(), t.strides().hints());
}

// Fresh outputs are laid out as PyTorch's TensorIterator lays them out: the dims ordered by the operands'
// strides, the first operand that tells two dims apart deciding, dense or not (sinter fuzz, seed 112 case 2851:
// an in-place op on a strided input made eager and compiled strides differ after a permute).
TEST(PointwiseLayout, OutputsFollowTheOperandsDimensionOrder) {
  Tensor x = testing::random({4, 2, 2}).slice(0, 0, std::nullopt, 2);  // strides [8, 2, 1], not dense
  Tensor p = x.permute({2, 1, 0});                                       // strides [1, 2, 8]
  using V = std::vector<int64_t>;
  EXPECT_EQ(relu(x).strides().hints(), (V{4, 2, 1}));
  EXPECT_EQ(exp(p).strides().hints(), (V{1, 2, 4}));
  EXPECT_EQ(logical_or(p, x).strides().hints(), (V{1, 2, 4}));
  EXPECT_EQ(add(x, p).strides().hints(), (V{4, 2, 1}));
  EXPECT_EQ(mul(p, 2.0).strides().hints(), (V{1, 2, 4}));
  // A broadcast operand decides nothing along its broadcast dims.
  Tensor t = testing::random({3, 4}).t();  // [4, 3], strides [1, 4]
  EXPECT_EQ(add(testing::random({3}), t).strides().hints(), (V{1, 4}));
  EXPECT_EQ(add(t, testing::random({4, 1})).strides().hints(), (V{1, 4}));
  // Mixed channels-last and contiguous operands: the first decides.
  Tensor cl = testing::random({2, 3, 4, 5}).contiguous(kChannelsLast), c = testing::random({2, 3, 4, 5});
  EXPECT_TRUE(add(cl, c).is_contiguous(kChannelsLast));
  EXPECT_TRUE(add(c, cl).is_contiguous());
  // Values are unaffected by the layout.
  EXPECT_CLOSE(logical_or(p, x), logical_or(p.contiguous(), x.contiguous()), 0);
}

TEST(PointwiseUnary, Errors) {
  Tensor i = from_vector<int64_t>({1, 2});
  EXPECT_ERROR(silu(i), "silu", "int64");
  EXPECT_ERROR(gelu(i), "gelu", "int64");
  EXPECT_ERROR(frac(i), "frac", "int64");
  EXPECT_ERROR(bitwise_not(from_vector<float>({1.f})), "bitwise_not", "float32");
  EXPECT_ERROR(gelu(from_vector<float>({1.f}), "fast"), "approximate", "fast");
  EXPECT_ERROR(celu(from_vector<float>({1.f}), 0.0), "alpha cannot be 0");
}

}  // namespace
}  // namespace sinter
