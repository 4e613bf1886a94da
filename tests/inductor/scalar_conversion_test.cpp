// A floating scalar written into a bool or integer tensor by compiled code (fill_, full, masked_fill, where
// and clamp with scalars, scalar arithmetic) is converted as eager converts it: bool is `value != 0` (-0.5
// and NaN are true), integers truncate toward zero through int64 (NaN gives 0, values beyond int64 saturate)
// and wrap to the dtype's width.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "inductor/inductor_ops_cases.h"
#include "testing.h"

namespace sinter {
namespace {

using inductor_ops::Case;
using inductor_ops::Inputs;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::vector<double> kAwkward = {-0.5, 0.5, -0.0, 2.7, -2.7, 300.7, -1.5, 1e30, -1e30, kNaN};

TEST(ScalarConversion, EagerFillOfBoolIsNonzero) {
  Tensor b = zeros({3}, TensorOptions(kBool));
  b.fill_(-0.5);
  EXPECT_EQ(b.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  b.fill_(kNaN);
  EXPECT_EQ(b.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  b.fill_(0.0);
  EXPECT_EQ(b.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
}

TEST(ScalarConversion, FillOfBoolWithAFractionIsTrueWhenCompiled) {
  auto f = [](const Tensor& t) {
    Tensor b = gt(t, t);
    b.fill_(-0.5);
    return b;
  };
  Tensor x = testing::random({3});
  Tensor got = compile(f)(x);
  EXPECT_EQ(got.dtype(), kBool);
  EXPECT_EQ(got.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
}

TEST(ScalarConversion, FillFullAndMaskedFillOfEveryNonFloatingDtype) {
  std::vector<Case> cases;
  for (DType dt : {kBool, kInt8, kUInt8, kInt32, kInt64}) {
    for (double v : kAwkward) {
      const std::string tag = fmt::format("{} {}", dtype_name(dt), v);
      cases.push_back({"fill_ " + tag, [dt, v](const Inputs& i) {
                         Tensor t = abs(i[0]).to(dt);
                         t.fill_(v);
                         return t;
                       }});
      cases.push_back({"full " + tag, [dt, v](const Inputs&) { return full({4}, v, TensorOptions(dt)); }});
      cases.push_back({"full_like + 0 " + tag, [dt, v](const Inputs& i) {
                         Tensor t = full_like(i[0], v, dt);
                         return dt == kBool ? logical_or(t, t) : t + 0;
                       }});
      cases.push_back({"masked_fill " + tag,
                       [dt, v](const Inputs& i) { return masked_fill(abs(i[0]).to(dt), gt(i[0], 0), v); }});
      cases.push_back({"masked_fill_ " + tag, [dt, v](const Inputs& i) {
                         Tensor t = abs(i[0]).to(dt);
                         t.masked_fill_(lt(i[0], 0), v);
                         return t;
                       }});
    }
  }
  inductor_ops::check_cases(cases, {testing::random({4}, kFloat32, 3) * 5});
}

// (Integer tensors are made from |x|: a negative float converted to uint8 is a different question, that of
// tensor conversions, which these tests leave alone.)
// Scalars meeting integer and bool tensors through promotion: where/clamp/comparisons with floating scalars
// compute in the promoted (floating) type; integer scalars wrap to the tensor's width as eager's do.
TEST(ScalarConversion, ScalarsInWhereClampAndArithmetic) {
  std::vector<Case> cases;
  for (DType dt : {kInt8, kUInt8, kInt32, kInt64}) {
    const std::string n(dtype_name(dt));
    cases.push_back(
        {"where int, 2.5 " + n, [dt](const Inputs& i) { return where(gt(i[0], 0), abs(i[0]).to(dt), 2.5); }});
    cases.push_back(
        {"where -1.5, int " + n, [dt](const Inputs& i) { return where(gt(i[0], 0), -1.5, abs(i[0]).to(dt)); }});
    cases.push_back(
        {"clamp int, -2.5, 3.5 " + n, [dt](const Inputs& i) { return clamp(abs(i[0]).to(dt), -2.5, 3.5); }});
    cases.push_back({"clamp int, 1, 3 " + n, [dt](const Inputs& i) { return clamp(abs(i[0]).to(dt), 1, 3); }});
    cases.push_back({"int + 300 " + n, [dt](const Inputs& i) { return abs(i[0]).to(dt) + 300; }});
    cases.push_back({"int * 2.5 " + n, [dt](const Inputs& i) { return abs(i[0]).to(dt) * 2.5; }});
    cases.push_back({"eq int, 2.5 " + n, [dt](const Inputs& i) { return eq(abs(i[0]).to(dt), 2.5); }});
    cases.push_back({"ge int, -0.5 " + n, [dt](const Inputs& i) { return ge(abs(i[0]).to(dt), -0.5); }});
  }
  cases.push_back(
      {"where bool, -0.5", [](const Inputs& i) { return where(gt(i[0], 0), gt(i[0], 1), -0.5); }});
  cases.push_back({"bool * -0.5", [](const Inputs& i) { return gt(i[0], 0) * -0.5; }});
  cases.push_back(
      {"bool masked_fill 0.25", [](const Inputs& i) { return masked_fill(gt(i[0], 1), lt(i[0], 0), 0.25); }});
  cases.push_back(
      {"bool masked_fill 0.0", [](const Inputs& i) { return masked_fill(gt(i[0], -9), lt(i[0], 0), 0.0); }});
  inductor_ops::check_cases(cases, {testing::random({6}, kFloat32, 4) * 5});
}

}  // namespace
}  // namespace sinter
