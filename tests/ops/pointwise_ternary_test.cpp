// Tests of where, clamp, lerp, addcmul/addcdiv and masked_fill against float64 references, and of the in-place
// rows: writes through strided views, inputs that overlap self, dtype and shape checks, the version counter.
#include <cmath>
#include <functional>

#include "testing.h"

namespace sinter {
namespace {

using ::sinter::testing::kFloatingDTypes;

// f over the elements of tensors already of one shape (expand them first), as float64.
Tensor reference(const std::vector<Tensor>& ts, const std::function<double(const std::vector<double>&)>& f) {
  std::vector<std::vector<double>> vs;
  for (const Tensor& t : ts) vs.push_back(t.to_vector<double>());
  std::vector<double> out(vs[0].size()), args(ts.size());
  for (size_t i = 0; i < out.size(); ++i) {
    for (size_t k = 0; k < ts.size(); ++k) args[k] = vs[k][i];
    out[i] = f(args);
  }
  return from_vector<double>(out, ts[0].sizes(), kFloat64);
}

TEST(PointwiseTernary, WhereAllOverloads) {
  for (DType dtype : testing::kAllDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor c = testing::random({4, 1, 6}, kBool, 1), a = testing::random({5, 1}, dtype, 2);
    Tensor b = testing::random({4, 5, 6}, dtype, 3);
    Tensor out = where(c, a, b);
    EXPECT_EQ(out.dtype(), dtype);
    SymIntList s = {4, 5, 6};
    EXPECT_TENSOR_EQ(out, reference({c.expand(s), a.expand(s), b}, [](auto& v) { return v[0] ? v[1] : v[2]; }));
    EXPECT_TENSOR_EQ(where(c, a, Scalar(1)), reference({c.expand({4, 5, 6}), a.expand({4, 5, 6})},
                                                       [](auto& v) { return v[0] ? v[1] : 1; }));
  }
  Tensor c = from_vector<bool>({true, false, true});
  Tensor i = from_vector<int64_t>({1, 2, 3});
  EXPECT_EQ(where(c, i, Scalar(1.5)).dtype(), kFloat32);
  EXPECT_TENSOR_EQ(where(c, i, Scalar(1.5)), from_vector<float>({1, 1.5, 3}));
  EXPECT_TENSOR_EQ(where(c, Scalar(-1), i), from_vector<int64_t>({-1, 2, -1}));
  EXPECT_EQ(where(c, Scalar(1), Scalar(0)).dtype(), kInt64);
  EXPECT_EQ(where(c, Scalar(1.0), Scalar(0)).dtype(), kFloat32);
  EXPECT_TENSOR_EQ(where(c, Scalar(1.0), Scalar(0)), from_vector<float>({1, 0, 1}));
  EXPECT_ERROR(where(i, i, i), "where expected condition to be a boolean tensor", "int64");
  EXPECT_ERROR(where(c, i, zeros({2})), "[3]", "[2]");
}

TEST(PointwiseTernary, ClampScalarAndTensorBounds) {
  for (DType dtype : kFloatingDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = testing::random({30, 40}, dtype, 4);
    EXPECT_TENSOR_EQ(clamp(x, Scalar(-0.5), Scalar(0.5)),
                     reference({x}, [](auto& v) { return std::min(std::max(v[0], -0.5), 0.5); }).to(dtype));
    EXPECT_TENSOR_EQ(clamp(x, Scalar(0.25)), reference({x}, [](auto& v) { return std::max(v[0], 0.25); }).to(dtype));
    EXPECT_TENSOR_EQ(clamp(x, std::nullopt, Scalar(0.25)),
                     reference({x}, [](auto& v) { return std::min(v[0], 0.25); }).to(dtype));
    Tensor lo = testing::random({40}, dtype, 5) - 0.5, hi = testing::random({30, 1}, dtype, 6) + 0.5;
    SymIntList s = {30, 40};
    EXPECT_TENSOR_EQ(clamp(x, lo, hi), reference({x, lo.expand(s), hi.expand(s)}, [](auto& v) {
                       return std::min(std::max(v[0], v[1]), v[2]);
                     }));
    EXPECT_TENSOR_EQ(clamp(testing::non_contiguous(x), lo, hi), clamp(x, lo, hi));
  }
  Tensor i = from_vector<int64_t>({-5, 0, 5});
  EXPECT_EQ(clamp(i, Scalar(-1), Scalar(1)).dtype(), kInt64);
  EXPECT_TENSOR_EQ(clamp(i, Scalar(-1), Scalar(1)), from_vector<int64_t>({-1, 0, 1}));
  EXPECT_EQ(clamp(i, Scalar(0.5)).dtype(), kFloat32);  // scalars take part in promotion
  EXPECT_TENSOR_EQ(clamp(i, Scalar(0.5)), from_vector<float>({0.5f, 0.5f, 5.f}));
  Tensor f = from_vector<float>({NAN, -2.f, 2.f});
  EXPECT_TENSOR_EQ(clamp(f, Scalar(1), Scalar(-1)), from_vector<float>({NAN, -1.f, -1.f}));  // min > max: max
  EXPECT_ERROR(clamp(f, std::nullopt, std::nullopt), "At least one of 'min' or 'max' must not be None");
}

TEST(PointwiseTernary, Lerp) {
  for (DType dtype : kFloatingDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor a = testing::random({20, 30}, dtype, 7), b = testing::random({30}, dtype, 8);
    Tensor w = testing::random_positive({20, 1}, dtype, 0.0, 1.0, 9);
    SymIntList s = {20, 30};
    auto f = [](auto& v) { return v[0] + v[2] * (v[1] - v[0]); };
    EXPECT_CLOSE(lerp(a, b, w), reference({a, b.expand(s), w.expand(s)}, f));
    EXPECT_CLOSE(lerp(a, b, Scalar(0.75)), reference({a, b.expand(s), full(s, 0.75, TensorOptions(kFloat64))}, f));
  }
  EXPECT_ERROR(lerp(zeros({2}), zeros({2}, TensorOptions(kFloat64)), Scalar(0.5)), "expected dtype float32 for `end`");
  EXPECT_ERROR(lerp(zeros({2}), zeros({2}), zeros({2}, TensorOptions(kFloat64))), "`weight`");
  EXPECT_ERROR(lerp(zeros({2}, TensorOptions(kInt64)), zeros({2}, TensorOptions(kInt64)), Scalar(1)), "lerp", "int64");
}

TEST(PointwiseTernary, AddcmulAddcdiv) {
  for (DType dtype : kFloatingDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor a = testing::random({10, 12}, dtype, 10), b = testing::random({12}, dtype, 11);
    Tensor c = testing::random_positive({10, 1}, dtype, 0.5, 2.0, 12);
    SymIntList s = {10, 12};
    EXPECT_CLOSE(addcmul(a, b, c, 0.5), reference({a, b.expand(s), c.expand(s)}, [](auto& v) {
                   return v[0] + 0.5 * v[1] * v[2];
                 }));
    EXPECT_CLOSE(addcdiv(a, b, c, -2), reference({a, b.expand(s), c.expand(s)}, [](auto& v) {
                   return v[0] - 2 * v[1] / v[2];
                 }));
  }
  Tensor i = from_vector<int64_t>({1, 2, 3});
  EXPECT_TENSOR_EQ(addcmul(i, i, i, 2), from_vector<int64_t>({3, 10, 21}));
  EXPECT_ERROR(addcdiv(i, i, i), "Integer division with addcdiv is no longer supported");
}

TEST(PointwiseTernary, MaskedFill) {
  for (DType dtype : testing::kAllDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = testing::random({6, 7}, dtype, 13), m = testing::random({7}, kBool, 14);
    Tensor out = masked_fill(x, m, Scalar(1));
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_TENSOR_EQ(out, reference({x, m.expand({6, 7})}, [](auto& v) { return v[1] ? 1 : v[0]; }));
    EXPECT_TENSOR_EQ(masked_fill(x, m, scalar_tensor(0, dtype)),
                     reference({x, m.expand({6, 7})}, [](auto& v) { return v[1] ? 0 : v[0]; }));
  }
  Tensor x = zeros({3});
  EXPECT_EQ(masked_fill(x, ones({2, 3}, TensorOptions(kBool)), Scalar(2)).sizes().hints(), (std::vector<int64_t>{2, 3}));
  EXPECT_ERROR(masked_fill(x, ones({3}), Scalar(1)), "masked_fill_ only supports boolean masks", "float32");
  EXPECT_ERROR(masked_fill(x, ones({3}, TensorOptions(kBool)), ones({1})), "0-dimensional value tensor", "1 dimension");
}

// ---- in place ----

TEST(PointwiseInplace, WritesThroughAViewIntoTheBase) {
  Tensor x = zeros({3, 4});
  Tensor y = x.select(1, 0);  // strided view
  uint64_t version = x.version();
  y.add_(1);
  EXPECT_GT(x.version(), version);
  EXPECT_TENSOR_EQ(x.select(1, 0), ones({3}));
  EXPECT_TENSOR_EQ(x.select(1, 1), zeros({3}));
  Tensor t = x.t();  // transposed self
  t.mul_(from_vector<float>({1, 2, 3}));
  EXPECT_TENSOR_EQ(x, from_vector<float>({1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}, {3, 4}));
}

TEST(PointwiseInplace, EveryInplaceRowMatchesItsFunctionalForm) {
  for (DType dtype : kFloatingDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor base = testing::random({9, 11}, dtype, 15), other = testing::random({11}, dtype, 16);
    Tensor pos = testing::random_positive({11}, dtype, 0.5, 2.0, 17);
    Tensor mask = testing::random({9, 1}, kBool, 18);
    auto check = [&](const char* what, const std::function<void(Tensor&)>& inplace, const Tensor& expected) {
      SCOPED_TRACE(what);
      Tensor x = testing::non_contiguous(base);
      inplace(x);
      EXPECT_TENSOR_EQ(x, expected);
    };
    check("add_", [&](Tensor& x) { x.add_(other, 2); }, add(base, other, 2));
    check("add_s", [&](Tensor& x) { x.add_(1.5); }, base + 1.5);
    check("sub_", [&](Tensor& x) { x.sub_(other); }, base - other);
    check("sub_s", [&](Tensor& x) { x.sub_(0.5, 2); }, sub(base, Scalar(0.5), 2));
    check("mul_", [&](Tensor& x) { x.mul_(other); }, base * other);
    check("mul_s", [&](Tensor& x) { x.mul_(3); }, base * 3);
    check("div_", [&](Tensor& x) { x.div_(pos); }, base / pos);
    check("div_s", [&](Tensor& x) { x.div_(4); }, base / 4);
    check("pow_", [&](Tensor& x) { x.pow_(2); }, pow(base, Scalar(2)));
    check("clamp_", [&](Tensor& x) { x.clamp_(Scalar(-0.5), Scalar(0.5)); }, clamp(base, Scalar(-0.5), Scalar(0.5)));
    check("relu_", [&](Tensor& x) { x.relu_(); }, relu(base));
    check("sigmoid_", [&](Tensor& x) { x.sigmoid_(); }, sigmoid(base));
    check("tanh_", [&](Tensor& x) { x.tanh_(); }, tanh(base));
    check("exp_", [&](Tensor& x) { x.exp_(); }, exp(base));
    check("neg_", [&](Tensor& x) { x.neg_(); }, neg(base));
    check("masked_fill_", [&](Tensor& x) { x.masked_fill_(mask, 7); }, masked_fill(base, mask, Scalar(7)));
    check("zero_", [&](Tensor& x) { x.zero_(); }, zeros_like(base));
    check("fill_", [&](Tensor& x) { x.fill_(2.5); }, full_like(base, 2.5));
    check("+=", [&](Tensor& x) { x += other; }, base + other);
  }
}

TEST(PointwiseInplace, InputsOverlappingSelfAreReadBeforeTheyAreWritten) {
  Tensor v = from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8}, {3, 3});
  Tensor x = v.clone();
  x.add_(x);  // the same elements: fine in place
  EXPECT_TENSOR_EQ(x, v * 2);
  x = v.clone();
  x.add_(x.t());
  EXPECT_TENSOR_EQ(x, v + v.t());
  x = v.clone();
  x.sub_(x[0]);  // a broadcast row of self
  EXPECT_TENSOR_EQ(x, v - v[0]);
  Tensor y = v.clone();
  y.slice(1, 1).add_(y.slice(1, 0, 2));
  EXPECT_TENSOR_EQ(y.slice(1, 1), v.slice(1, 1) + v.slice(1, 0, 2));
  Tensor big = testing::random({300, 300}, kFloat32, 19);
  Tensor b2 = big.clone();
  b2.mul_(b2.t());
  EXPECT_TENSOR_EQ(b2, big * big.t());
}

TEST(PointwiseInplace, DTypesAndShapes) {
  Tensor i32 = from_vector<int32_t>({1, 2, 3});
  i32.add_(from_vector<int64_t>({10, 20, 30}));
  EXPECT_EQ(i32.dtype(), kInt32);
  EXPECT_TENSOR_EQ(i32, from_vector<int32_t>({11, 22, 33}));
  Tensor f = from_vector<float>({1, 2, 3});
  f.add_(from_vector<int64_t>({1, 1, 1}));
  EXPECT_TENSOR_EQ(f, from_vector<float>({2, 3, 4}));
  Tensor h = from_vector<float>({1, 2, 3}).to(kBFloat16);
  h.mul_(1.5);
  EXPECT_EQ(h.dtype(), kBFloat16);
  EXPECT_TENSOR_EQ(h, from_vector<float>({1.5, 3, 4.5}));
  Tensor l = from_vector<int64_t>({1, 2});
  EXPECT_ERROR(l.add_(1.5), "result type float32 can't be cast to the desired output type int64");
  EXPECT_ERROR(l.div_(2), "can't be cast to the desired output type int64");
  EXPECT_ERROR(l.sigmoid_(), "can't be cast");
  EXPECT_ERROR(l.clamp_(Scalar(0.5)), "can't be cast");
  EXPECT_ERROR(zeros({3}).add_(zeros({2, 3})), "output with shape [3] doesn't match the broadcast shape [2, 3]");
  EXPECT_ERROR(zeros({1}).expand({4}).add_(1), "more than one element of the written-to tensor");
  EXPECT_ERROR(zeros({2}, TensorOptions(kBool)).neg_(), "bool");
  Tensor e = zeros({0, 4});
  e.add_(ones({4}));
  EXPECT_EQ(e.numel(), 0);
}

}  // namespace
}  // namespace sinter
