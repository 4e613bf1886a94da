// Tests of the binary pointwise ops: float64 references over broadcast operands ([3, 1] with [1, 4], Scalars,
// 0-dim tensors, strided and empty inputs) on every dtype each op supports, PyTorch's promotion table cases,
// Python-style integer division and remainder, and the errors PyTorch raises.
#include <cmath>
#include <functional>

#include "testing.h"

namespace sinter {
namespace {

using ::sinter::testing::kFloatingDTypes;
using ::sinter::testing::kIntegralDTypes;
using Fn2 = std::function<double(double, double)>;
using BinaryOp = std::function<Tensor(const Tensor&, const Tensor&)>;

SymIntList broadcast_of(const Tensor& a, const Tensor& b) {
  size_t n = std::max(a.dim(), b.dim());
  SymIntList out(n, SymInt(1));
  for (size_t i = 0; i < n; ++i) {
    int64_t da = static_cast<int64_t>(i) - static_cast<int64_t>(n - a.dim());
    int64_t db = static_cast<int64_t>(i) - static_cast<int64_t>(n - b.dim());
    int64_t sa = da >= 0 ? a.sizes()[da].hint() : 1, sb = db >= 0 ? b.sizes()[db].hint() : 1;
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

// f over a and b broadcast together, as float64.
Tensor reference(const Tensor& a, const Tensor& b, const Fn2& f) {
  SymIntList sizes = broadcast_of(a, b);
  std::vector<double> x = a.expand(sizes).to_vector<double>(), y = b.expand(sizes).to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) x[i] = f(x[i], y[i]);
  if (sizes.empty()) return from_vector<double>(x, {1}, kFloat64).view({});
  return from_vector<double>(x, sizes, kFloat64);
}

double py_floor_div(double a, double b) { return std::floor(a / b); }
double py_mod(double a, double b) {
  double m = std::fmod(a, b);
  return (m != 0 && (m < 0) != (b < 0)) ? m + b : m;
}

struct BinaryCase {
  const char* name;
  BinaryOp op;
  Fn2 ref;
  bool positive_lhs = false;  // pow
};

std::vector<BinaryCase> floating_cases() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, [](double a, double b) { return a + b; }},
      {"add_alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, 2); },
       [](double a, double b) { return a + 2 * b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; }},
      {"sub_alpha", [](const Tensor& a, const Tensor& b) { return sub(a, b, 0.5); },
       [](double a, double b) { return a - 0.5 * b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; }},
      {"div_trunc", [](const Tensor& a, const Tensor& b) { return div(a, b, std::string("trunc")); },
       [](double a, double b) { return std::trunc(a / b); }},
      {"div_floor", [](const Tensor& a, const Tensor& b) { return div(a, b, std::string("floor")); }, py_floor_div},
      {"floor_divide", [](const Tensor& a, const Tensor& b) { return floor_divide(a, b); }, py_floor_div},
      {"fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); },
       [](double a, double b) { return std::fmod(a, b); }},
      {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }, py_mod},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, true},
      {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); },
       [](double a, double b) { return std::atan2(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }},
      {"hypot", [](const Tensor& a, const Tensor& b) { return hypot(a, b); },
       [](double a, double b) { return std::hypot(a, b); }},
      {"copysign", [](const Tensor& a, const Tensor& b) { return copysign(a, b); },
       [](double a, double b) { return std::copysign(a, b); }},
  };
}

TEST(PointwiseBinary, FloatingOpsMatchReferenceWithBroadcasting) {
  for (const BinaryCase& c : floating_cases()) {
    for (DType dtype : kFloatingDTypes) {
      SCOPED_TRACE(::testing::Message() << c.name << " " << dtype_name(dtype));
      // Rounded quotients of half-precision values can land on the other side of an integer.
      const std::string name = c.name;
      const bool rounds = name == "div_trunc" || name == "div_floor" || name == "floor_divide" || name == "fmod" ||
                          name == "remainder";
      const double tol = rounds && dtype != kFloat64 ? 5e-2 : -1;
      Tensor a = c.positive_lhs ? testing::random_positive({3, 1}, dtype) : testing::random({3, 1}, dtype, 1);
      Tensor b = testing::random({1, 4}, dtype, 2);
      Tensor out = c.op(a, b);
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_EQ(out.sizes().hints(), (std::vector<int64_t>{3, 4}));
      EXPECT_CLOSE(out, reference(a, b, c.ref), tol);
      // Larger operands: same rank, a trailing-dim vector, strided views, a 0-dim tensor, an empty tensor.
      Tensor x = c.positive_lhs ? testing::random_positive({40, 70}, dtype) : testing::random({40, 70}, dtype, 3);
      Tensor y = testing::random({40, 70}, dtype, 4), v = testing::random({70}, dtype, 5);
      EXPECT_CLOSE(c.op(x, y), reference(x, y, c.ref), tol);
      EXPECT_CLOSE(c.op(x, v), reference(x, v, c.ref), tol);
      EXPECT_CLOSE(c.op(testing::non_contiguous(x), y.t().contiguous().t()), c.op(x, y), 0);
      EXPECT_CLOSE(c.op(x, v.expand({40, 70})), c.op(x, v), 0);
      EXPECT_CLOSE(c.op(x[3].expand({40, 70}), y), reference(x[3], y, c.ref), tol);
      Tensor s = testing::random({}, dtype, 6);
      EXPECT_CLOSE(c.op(x, s), reference(x, s, c.ref), tol);
      EXPECT_EQ(c.op(zeros({0, 70}, TensorOptions(dtype)), v).sizes().hints(), (std::vector<int64_t>{0, 70}));
    }
  }
}

TEST(PointwiseBinary, LargeBroadcastTakesTheParallelPath) {
  Tensor a = testing::random({700, 1, 130}, kFloat32, 7), b = testing::random({1, 9, 130}, kFloat32, 8);
  EXPECT_CLOSE(a * b + a, reference(a, b, [](double x, double y) { return x * y + x; }));
  Tensor small_rows = testing::random({20000, 3}, kFloat32, 9);
  Tensor r = testing::random({3}, kFloat64, 10);
  EXPECT_CLOSE(small_rows - r, reference(small_rows, r, [](double x, double y) { return x - y; }));
  EXPECT_CLOSE(small_rows.t() * 2.0, reference(small_rows.t(), scalar_tensor(2.0), [](double x, double y) {
                 return x * y;
               }));
}

TEST(PointwiseBinary, ScalarOverloads) {
  for (DType dtype : kFloatingDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = testing::random({5, 6}, dtype, 11);
    Tensor two = scalar_tensor(2.5, kFloat64);
    auto with = [&](double s, const Fn2& f) { return reference(x, scalar_tensor(s, kFloat64), f); };
    EXPECT_CLOSE(x + 2.5, with(2.5, [](double a, double b) { return a + b; }));
    EXPECT_CLOSE(add(x, Scalar(2.5), 2), with(2.5, [](double a, double b) { return a + 2 * b; }));
    EXPECT_CLOSE(x - 1.5, with(1.5, [](double a, double b) { return a - b; }));
    EXPECT_CLOSE(rsub(x, Scalar(1.5), 2), with(1.5, [](double a, double b) { return b - 2 * a; }));
    EXPECT_CLOSE(1.5 - x, with(1.5, [](double a, double b) { return b - a; }));
    EXPECT_CLOSE(x * 1.5, with(1.5, [](double a, double b) { return a * b; }));
    EXPECT_CLOSE(x / 1.5, with(1.5, [](double a, double b) { return a / b; }));
    EXPECT_CLOSE(remainder(x, Scalar(-0.7)), with(-0.7, py_mod), 5e-2);
    EXPECT_CLOSE(fmod(x, Scalar(0.7)), with(0.7, [](double a, double b) { return std::fmod(a, b); }), 5e-2);
    EXPECT_CLOSE(div(x, Scalar(0.3), std::string("floor")), with(0.3, py_floor_div), 5e-2);
    for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.7}) {
      Tensor base = testing::random_positive({5, 6}, dtype, 0.5, 2.0, 12);
      EXPECT_CLOSE(pow(base, Scalar(e)), reference(base, scalar_tensor(e, kFloat64), [](double a, double b) {
                     return std::pow(a, b);
                   }));
    }
    Tensor ex = testing::random({5, 6}, dtype, 13);
    EXPECT_CLOSE(pow(Scalar(2.0), ex), reference(scalar_tensor(2.0, kFloat64), ex, [](double a, double b) {
                   return std::pow(a, b);
                 }));
    EXPECT_TENSOR_EQ(x > 0.5, reference(x, scalar_tensor(0.5, kFloat64), [](double a, double b) { return a > b; }));
    EXPECT_EQ((x + two).dtype(), dtype);  // a 0-dim tensor does not promote a dimensioned one
  }
}

TEST(PointwiseBinary, IntegerOpsFollowPython) {
  for (DType dtype : kIntegralDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor a = testing::random({8, 9}, dtype, 21), b0 = testing::random({9}, dtype, 22);
    Tensor b = where(b0 == 0, Scalar(3), b0);  // no zero divisors
    auto wrap = [&](int64_t v) {
      if (dtype == kInt8) return double(static_cast<int8_t>(v));
      if (dtype == kUInt8) return double(static_cast<uint8_t>(v));
      if (dtype == kInt32) return double(static_cast<int32_t>(v));
      return double(v);
    };
    auto ints = [&](std::function<int64_t(int64_t, int64_t)> f) {
      return [=](double x, double y) { return wrap(f(static_cast<int64_t>(x), static_cast<int64_t>(y))); };
    };
    EXPECT_EQ((a + b).dtype(), dtype);
    EXPECT_TENSOR_EQ(a + b, reference(a, b, ints([](int64_t x, int64_t y) { return x + y; })));
    EXPECT_TENSOR_EQ(add(a, b, 3), reference(a, b, ints([](int64_t x, int64_t y) { return x + 3 * y; })));
    EXPECT_TENSOR_EQ(a - b, reference(a, b, ints([](int64_t x, int64_t y) { return x - y; })));
    EXPECT_TENSOR_EQ(a * b, reference(a, b, ints([](int64_t x, int64_t y) { return x * y; })));
    EXPECT_TENSOR_EQ(floor_divide(a, b),
                     reference(a, b, ints([](int64_t x, int64_t y) { return int64_t(std::floor(double(x) / y)); })));
    EXPECT_TENSOR_EQ(div(a, b, std::string("trunc")), reference(a, b, ints([](int64_t x, int64_t y) { return x / y; })));
    EXPECT_TENSOR_EQ(remainder(a, b), reference(a, b, ints([](int64_t x, int64_t y) {
                       return int64_t(py_mod(double(x), double(y)));
                     })));
    EXPECT_TENSOR_EQ(fmod(a, b), reference(a, b, ints([](int64_t x, int64_t y) { return x % y; })));
    EXPECT_TENSOR_EQ(bitwise_and(a, b), reference(a, b, ints([](int64_t x, int64_t y) { return x & y; })));
    EXPECT_TENSOR_EQ(bitwise_or(a, b), reference(a, b, ints([](int64_t x, int64_t y) { return x | y; })));
    EXPECT_TENSOR_EQ(bitwise_xor(a, Scalar(5)), reference(a, scalar_tensor(5, kInt64), ints([](int64_t x, int64_t y) {
                       return x ^ y;
                     })));
    EXPECT_TENSOR_EQ(maximum(a, b), reference(a, b, [](double x, double y) { return std::max(x, y); }));
    EXPECT_TENSOR_EQ(minimum(a, b), reference(a, b, [](double x, double y) { return std::min(x, y); }));
    EXPECT_TENSOR_EQ(pow(a, Scalar(3)), reference(a, scalar_tensor(3, kInt64), ints([](int64_t x, int64_t) {
                       return x * x * x;
                     })));
    Tensor d = a / b;  // true division
    EXPECT_EQ(d.dtype(), kFloat32);
    EXPECT_CLOSE(d, reference(a, b, [](double x, double y) { return x / y; }));
    EXPECT_TENSOR_EQ(a < b, reference(a, b, [](double x, double y) { return x < y; }));
    EXPECT_TENSOR_EQ(a == b, reference(a, b, [](double x, double y) { return x == y; }));
    EXPECT_TENSOR_EQ(a <= b, reference(a, b, [](double x, double y) { return x <= y; }));
    EXPECT_TENSOR_EQ(le(a, b), a <= b);
    EXPECT_TENSOR_EQ(le(a, Scalar(2.5)), reference(a, scalar_tensor(2.5), [](double x, double y) { return x <= y; }));
    EXPECT_TENSOR_EQ(a >= 2.5, reference(a, scalar_tensor(2.5), [](double x, double y) { return x >= y; }));
    EXPECT_EQ(atan2(a, b).dtype(), kFloat32);
    EXPECT_CLOSE(atan2(a, b), reference(a, b, [](double x, double y) { return std::atan2(x, y); }));
  }
}

TEST(PointwiseBinary, IntegerEdgeCases) {
  Tensor a = from_vector<int64_t>({7, -7, 7, -7, INT64_MIN, 5});
  Tensor b = from_vector<int64_t>({2, 2, -2, -2, -1, -1});
  EXPECT_EQ(floor_divide(a, b).to_vector<int64_t>(), (std::vector<int64_t>{3, -4, -4, 3, INT64_MIN, -5}));
  EXPECT_EQ(div(a, b, std::string("trunc")).to_vector<int64_t>(), (std::vector<int64_t>{3, -3, -3, 3, INT64_MIN, -5}));
  EXPECT_EQ(remainder(a, b).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, -1, -1, 0, 0}));
  EXPECT_EQ(fmod(a, b).to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 1, -1, 0, 0}));
  // Negative integer exponents of tensors: 0 except for bases 1 and -1, as PyTorch.
  Tensor base = from_vector<int64_t>({1, -1, -1, 2, 0, 3}), e = from_vector<int64_t>({-1, -3, -2, -2, 2, 0});
  EXPECT_EQ(pow(base, e).to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 1, 0, 0, 1}));
  EXPECT_EQ(pow(Scalar(2), from_vector<int64_t>({0, 1, 10})).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 1024}));
  // Overflow wraps as in PyTorch.
  EXPECT_EQ((from_vector<int64_t>({INT64_MAX}) + 1).to_vector<int64_t>(), (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ((from_vector<int8_t>({120}) + 10).to_vector<int64_t>(), (std::vector<int64_t>{-126}));
  EXPECT_EQ((from_vector<uint8_t>({3}) - 5).to_vector<int64_t>(), (std::vector<int64_t>{254}));
}

TEST(PointwiseBinary, FloatingSpecialValues) {
  const double inf = INFINITY, nan = NAN;
  Tensor a = from_vector<double>({1, -1, 0, nan, 2, 5.5});
  Tensor z = zeros({6}, TensorOptions(kFloat64));
  EXPECT_TENSOR_EQ(a / z, from_vector<double>({inf, -inf, nan, nan, inf, inf}));
  EXPECT_TENSOR_EQ(floor_divide(a, z), from_vector<double>({inf, -inf, nan, nan, inf, inf}));
  EXPECT_TENSOR_EQ(remainder(a, z), from_vector<double>({nan, nan, nan, nan, nan, nan}));
  Tensor b = from_vector<double>({nan, 0, 1, 1, -inf, 2});
  EXPECT_TENSOR_EQ(maximum(a, b), from_vector<double>({nan, 0, 1, nan, 2, 5.5}));
  EXPECT_TENSOR_EQ(minimum(a, b), from_vector<double>({nan, -1, 0, nan, -inf, 2}));
  EXPECT_TENSOR_EQ(a == b, from_vector<bool>({false, false, false, false, false, false}));
  EXPECT_TENSOR_EQ(a != b, from_vector<bool>({true, true, true, true, true, true}));
  EXPECT_TENSOR_EQ(remainder(from_vector<double>({-3, 3, -0.5}), Scalar(2)), from_vector<double>({1, 1, 1.5}));
  EXPECT_TENSOR_EQ(div(from_vector<double>({-3, 3, -0.5}), Scalar(2), std::string("floor")),
                   from_vector<double>({-2, 1, -1}));
}

TEST(PointwiseBinary, BoolOps) {
  Tensor t = from_vector<bool>({true, true, false, false}), f = from_vector<bool>({true, false, true, false});
  EXPECT_EQ((t + f).dtype(), kBool);
  EXPECT_TENSOR_EQ(t + f, from_vector<bool>({true, true, true, false}));
  EXPECT_TENSOR_EQ(t * f, from_vector<bool>({true, false, false, false}));
  EXPECT_TENSOR_EQ(t & f, from_vector<bool>({true, false, false, false}));
  EXPECT_TENSOR_EQ(t | f, from_vector<bool>({true, true, true, false}));
  EXPECT_TENSOR_EQ(t ^ f, from_vector<bool>({false, true, true, false}));
  EXPECT_TENSOR_EQ(maximum(t, f), from_vector<bool>({true, true, true, false}));
  EXPECT_EQ((t + 1).dtype(), kInt64);
  EXPECT_TENSOR_EQ(t + 1, from_vector<int64_t>({2, 2, 1, 1}));
  Tensor x = from_vector<float>({0.f, 2.f, NAN, 0.f});
  EXPECT_TENSOR_EQ(logical_and(x, t), from_vector<bool>({false, true, false, false}));
  EXPECT_TENSOR_EQ(logical_or(x, f), from_vector<bool>({true, true, true, false}));
  EXPECT_TENSOR_EQ(logical_xor(x, from_vector<int64_t>({0, 0, 3, 4})), from_vector<bool>({false, true, false, true}));
}

TEST(PointwiseBinary, TypePromotionTable) {
  Tensor i64 = from_vector<int64_t>({1, 2}), i32 = from_vector<int32_t>({1, 2}), i8 = from_vector<int8_t>({1, 2});
  Tensor f32 = from_vector<float>({1, 2}), bf16 = f32.to(kBFloat16), f16 = f32.to(kFloat16);
  EXPECT_EQ((i64 + 1.5).dtype(), kFloat32);
  EXPECT_TENSOR_EQ(i64 + 1.5, from_vector<float>({2.5f, 3.5f}));
  EXPECT_EQ((bf16 * 1.5).dtype(), kBFloat16);
  EXPECT_EQ((i32 + i64).dtype(), kInt64);
  EXPECT_EQ((i32 + scalar_tensor(5, kInt64)).dtype(), kInt32);
  EXPECT_EQ((scalar_tensor(2.0, kFloat64) + f32).dtype(), kFloat32);
  EXPECT_EQ((f16 + scalar_tensor(2.0, kFloat32)).dtype(), kFloat16);
  EXPECT_EQ((i64 + scalar_tensor(2.0, kFloat64)).dtype(), kFloat64);  // a 0-dim float beats dimensioned ints
  EXPECT_EQ((f32 + f32.to(kFloat64)).dtype(), kFloat64);
  EXPECT_EQ((f16 + bf16).dtype(), kFloat32);
  EXPECT_EQ((i8 * 2).dtype(), kInt8);
  EXPECT_EQ((i8 / i8).dtype(), kFloat32);
  EXPECT_EQ(floor_divide(i8, i8).dtype(), kInt8);
  EXPECT_EQ((i64 < 1.5).dtype(), kBool);
  EXPECT_TENSOR_EQ(i64 < 1.5, from_vector<bool>({true, false}));
  EXPECT_EQ(pow(i64, Scalar(0.5)).dtype(), kFloat32);
  EXPECT_EQ(pow(Scalar(2.0), i64).dtype(), kFloat32);
  EXPECT_EQ(copysign(i64, i32).dtype(), kFloat32);
  // bfloat16 times a weak scalar is computed in float and rounded once.
  Tensor x = from_vector<float>({1.1f, 3.3f}).to(kBFloat16);
  std::vector<double> xv = x.to_vector<double>();
  EXPECT_TENSOR_EQ(x * 1.1, from_vector<double>({xv[0] * 1.1, xv[1] * 1.1}).to(kFloat32).to(kBFloat16));
}

TEST(PointwiseBinary, Errors) {
  Tensor f = from_vector<float>({1, 2}), i = from_vector<int64_t>({1, 0}), b = from_vector<bool>({true, false});
  EXPECT_ERROR(bitwise_and(f, f), "bitwise_and", "float32");
  EXPECT_ERROR(bitwise_or(i, Scalar(1.5)), "bitwise_or", "float32");
  EXPECT_ERROR(zeros({2, 3}) + zeros({4}), "[2, 3]", "[4]");
  EXPECT_ERROR(b - b, "Subtraction, the `-` operator, with two bool tensors is not supported");
  EXPECT_ERROR(b - 1, "Subtraction, the `-` operator, with a bool tensor is not supported");
  EXPECT_ERROR(add(i, i, 1.5), "alpha must not be a floating point number");
  EXPECT_ERROR(add(f, f, true), "Boolean alpha only supported for Boolean results");
  EXPECT_ERROR(floor_divide(i, i), "ZeroDivisionError");
  EXPECT_ERROR(remainder(i, Scalar(0)), "ZeroDivisionError");
  EXPECT_ERROR(fmod(i, from_vector<bool>({true, false})), "ZeroDivisionError");
  EXPECT_ERROR(div(i, i, std::string("trunc")), "ZeroDivisionError");
  EXPECT_ERROR(pow(i, Scalar(-1)), "Integers to negative integer powers are not allowed.");
  EXPECT_ERROR(div(f, f, std::string("round")), "rounding_mode", "round");
  EXPECT_ERROR(hypot(i, i), "hypot", "int64");
  EXPECT_ERROR(pow(b, b), "pow", "bool");
  EXPECT_ERROR(remainder(b, b), "remainder", "bool");
  // True division of integers by zero is fine: it is floating.
  EXPECT_TENSOR_EQ(i / i, from_vector<float>({1.f, NAN}));
}

}  // namespace
}  // namespace sinter
