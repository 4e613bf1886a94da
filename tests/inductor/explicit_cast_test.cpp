// Explicit dtype conversions inside fused kernels: a conversion the program asks for (`to`, `_to_copy`, an ONNX
// Cast, the conversion of an in-place op's value to its destination's dtype) is always performed, even where no
// buffer of that dtype is written: float16/bfloat16 round to nearest even (overflow to inf, NaN stays NaN),
// float -> integer truncates toward zero (NaN and out-of-range values as eager's conversion defines them),
// anything -> bool is `!= 0`. Only the rounding of half arithmetic may be skipped inside a kernel.
//
// Every pair (A, B) of the nine dtypes goes through x.to(A).to(B) from a float64 and a float32 source holding
// special values, once stored as B and once converted on to float64 inside the same kernel, compiled under the
// inductor and compared with eager bit for bit (any NaN matches any NaN: PyTorch defines no NaN payloads).
// PyTorch leaves float -> integer undefined for NaN and out-of-range values; sinter's eager conversion defines
// them (NaN -> 0, beyond +-9.2e18 saturated to int64, then wrapped to the width), and compiled code must agree.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "sinter/compile.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

const std::vector<DType> kDTypes = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64,
                                    kInt32,   kInt8,    kUInt8,   kBool};

// Special values: NaN, +-inf, -0.0, the largest half (65504) and its rounding edges (65519 rounds to it, 65520
// to inf), 1e5 (inf in half), ties (2.5, -2.5, 0.5), 0.1 (inexact everywhere), bf16 ties, integer edges, and
// large integers (beyond int32, beyond 2^53, beyond int64).
std::vector<double> special_values() {
  const double inf = std::numeric_limits<double>::infinity();
  return {std::nan(""), inf, -inf, -0.0, 0.0, 65504, 65519, 65520, -65520, 1e5, 2.5, -2.5, 0.5, -0.5, 0.1,
          -0.1, 1.00390625, 1.01171875, 127.5, 128, -129, 255.5, 256, 257, -1, 3e9, -3e9, 2147483648.0,
          9007199254740993.0, 1e19, -1e19, 1e-8, 6e-8, 1e-40, 1.5, 3.4e38};
}

// The 64 bits of a float64 element, with every NaN the same.
std::vector<uint64_t> bits(const Tensor& t) {
  std::vector<double> v = t.to(kFloat64).contiguous().to_vector<double>();
  std::vector<uint64_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) v[i] = std::numeric_limits<double>::quiet_NaN();
    std::memcpy(&b[i], &v[i], 8);
  }
  return b;
}

void expect_bitwise(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.sizes().hints(), want.sizes().hints()) << what;
  std::vector<uint64_t> g = bits(got), w = bits(want);
  std::vector<double> gv = got.to(kFloat64).to_vector<double>(), wv = want.to(kFloat64).to_vector<double>();
  std::vector<double> in = special_values();
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_EQ(g[i], w[i]) << what << ": input " << in[i] << " gives " << gv[i] << " compiled, " << wv[i]
                          << " eager";
}

// All 81 chains from one source, each stored as B and also converted to float64 inside the kernel.
std::vector<Tensor> all_chains(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (DType a : kDTypes)
    for (DType b : kDTypes) {
      Tensor y = in[0].to(a).to(b);
      out.push_back(y);
      out.push_back(y.to(kFloat64));
    }
  return out;
}

void check_all_pairs(DType source) {
  Tensor x = from_vector<double>(special_values(), {static_cast<int64_t>(special_values().size())}).to(source);
  std::vector<Tensor> want = all_chains({x});
  auto fn = [](const std::vector<Tensor>& in) { return all_chains(in); };
  std::vector<Tensor> got = compile(fn, {.backend = "inductor"})(std::vector<Tensor>{x});
  ASSERT_EQ(got.size(), want.size());
  size_t k = 0;
  for (DType a : kDTypes)
    for (DType b : kDTypes) {
      std::string what = fmt::format("{} -> {} -> {}", dtype_name(source), dtype_name(a), dtype_name(b));
      expect_bitwise(got[k], want[k], what + " (stored)");
      expect_bitwise(got[k + 1], want[k + 1], what + " -> f64 (in the kernel)");
      k += 2;
    }
}

TEST(ExplicitCast, EveryDtypePairFromFloat64MatchesEagerBitwise) { check_all_pairs(kFloat64); }
TEST(ExplicitCast, EveryDtypePairFromFloat32MatchesEagerBitwise) { check_all_pairs(kFloat32); }

// r17: x.to(f16).to(f32) rounds (2.7 -> 2.69921875) and overflows (1e5 -> inf) although only f32 is stored.
TEST(ExplicitCast, HalfRoundTripInsideAKernelRoundsAndOverflows) {
  Tensor x = from_vector<float>({2.7f, -1.3f, 0.1f, 100000.f, 65519.f, 65520.f}, {6});
  auto f = [](const Tensor& t) { return t.to(kFloat16).to(kFloat32); };
  Tensor got = compile(f)(x);
  std::vector<float> v = got.to_vector<float>();
  EXPECT_EQ(v[0], 2.69921875f);
  EXPECT_TRUE(std::isinf(v[3]) && v[3] > 0);
  EXPECT_EQ(v[4], 65504.f);
  EXPECT_TRUE(std::isinf(v[5]));
  EXPECT_TENSOR_EQ(got, f(x));
  auto g = [](const Tensor& t) { return t.to(kBFloat16).to(kFloat32) - t; };  // the rounding error, not 0
  EXPECT_TENSOR_EQ(compile(g)(x), g(x));
  EXPECT_NE(compile(g)(x).abs().sum().item<double>(), 0.0);
}

// r17: a comparison against the converted value sees the rounded value.
TEST(ExplicitCast, ComparisonWithAHalfConversionSeesTheRoundedValue) {
  Tensor x = from_vector<float>({2.7f, -1.3f, 0.5f, 100000.f}, {4});
  auto g = [](const Tensor& t) { return where(eq(t.to(kFloat16), t), t, t + 1); };
  Tensor got = compile(g)(x);
  EXPECT_TENSOR_EQ(got, g(x));
  EXPECT_EQ(got.to_vector<float>()[2], 0.5f);  // exact in half: kept
  EXPECT_EQ(got.to_vector<float>()[0], 3.7f);  // not exact: + 1
}

// r17: x / x.to(int32) divides by the truncated integer (0 for +-0.5: -inf and inf).
TEST(ExplicitCast, DivisionByAnIntegerConversionTruncatesFirst) {
  Tensor y = from_vector<float>({-0.5f, 0.5f, 2.5f, -7.9f}, {4});
  auto h = [](const Tensor& t) { return t / t.to(kInt32); };
  Tensor got = compile(h)(y);
  EXPECT_TENSOR_EQ(got, h(y));
  std::vector<float> v = got.to_vector<float>();
  EXPECT_TRUE(std::isinf(v[0]) && v[0] < 0);
  EXPECT_TRUE(std::isinf(v[1]) && v[1] > 0);
  EXPECT_EQ(v[2], 1.25f);
  // Integer conversions of NaN, -0.0 and a bool conversion inside one kernel.
  Tensor z = from_vector<float>({std::nanf(""), -0.0f, 0.25f, -3.75f}, {4});
  auto k = [](const Tensor& t) { return t.to(kInt64).to(kFloat32) + t.to(kBool).to(kFloat32) * 10; };
  EXPECT_TENSOR_EQ(compile(k)(z), k(z));
  EXPECT_EQ(compile(k)(z).to_vector<float>()[0], 10.f);  // NaN -> int 0; NaN != 0 -> true
}

// r20: y.sub_(t.to(bf16)) leaves the bf16 rounding error in the mutated input, as eager does.
TEST(ExplicitCast, MutatedInputKeepsItsBFloat16RoundTrip) {
  auto f = [](const Tensor& t) {
    Tensor y = t;
    y.sub_(t.to(kBFloat16));
    return softmax(t, 0);
  };
  manual_seed(1);
  Tensor a = randn({16});
  Tensor b = a.clone();
  Tensor ra = f(a);
  Tensor rb = compile(f)(b);
  EXPECT_TENSOR_EQ(b, a);
  EXPECT_NE(a.abs().sum().item<double>(), 0.0);
  EXPECT_CLOSE(rb, ra);
}

// A float16 destination of an in-place op rounds the value it is given (the functional form converts it).
TEST(ExplicitCast, InPlaceIntoAHalfTensorRoundsLikeEager) {
  auto f = [](const Tensor& h, const Tensor& x) {
    Tensor y = h.clone();
    y.copy_(x * 3);
    return y.to(kFloat32) - x * 3;
  };
  Tensor h = zeros({5}, TensorOptions(kFloat16));
  Tensor x = from_vector<float>({0.1f, 1e5f, -2.7f, 3.3f, 7.77f}, {5});
  EXPECT_TENSOR_EQ(compile(f)(h, x), f(h, x));
}

}  // namespace
}  // namespace sinter
