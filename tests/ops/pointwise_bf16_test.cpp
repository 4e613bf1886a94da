// bfloat16 results of pointwise ops are rounded by the loop engine's vectorised float -> bf16 conversion: it
// must round exactly as BFloat16::from_float (the copy path) does, NaN and infinities included.
#include <cmath>
#include <cstring>
#include <limits>

#include "tensor/half.h"
#include "testing.h"

namespace sinter {
namespace {

std::vector<uint16_t> bits(const Tensor& bf16) {
  Tensor c = bf16.contiguous();
  std::vector<uint16_t> out(static_cast<size_t>(c.numel().hint()));
  std::memcpy(out.data(), c.data_ptr(), out.size() * 2);
  return out;
}

TEST(PointwiseBf16, ResultsRoundLikeTheCopyPath) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> av = {1.0f, 1.00390625f, 1.01171875f, -2.5f, 3e38f, inf, -inf, nan, 0.f, -0.f, 1e-40f};
  std::vector<float> bv = {0.00390625f, 0.001953125f, 0.001953125f, 1e-3f, 3e38f, 1.f, -inf, 1.f, -0.f, -0.f, 0.f};
  Tensor r = testing::random({1000}, kFloat32, 5) * 100;
  std::vector<float> rv = r.to_vector<float>();
  for (size_t i = 0; i + 1 < rv.size(); i += 2) av.push_back(rv[i]), bv.push_back(rv[i + 1]);
  const int64_t n = static_cast<int64_t>(av.size());
  // bf16 operands, computed in float by the loop engine and rounded by its conversion, against the same
  // float results rounded by the copy path.
  Tensor a16 = from_vector(av, {n}).to(kBFloat16), b16 = from_vector(bv, {n}).to(kBFloat16);
  Tensor af = a16.to(kFloat32), bf = b16.to(kFloat32);
  EXPECT_EQ(bits(add(a16, b16)), bits((af + bf).to(kBFloat16)));
  EXPECT_EQ(bits(mul(a16, b16)), bits((af * bf).to(kBFloat16)));
  EXPECT_EQ(bits(exp(a16)), bits(exp(af).to(kBFloat16)));
  EXPECT_EQ(bits(a16 * 1.001), bits((af * 1.001).to(kBFloat16)));
}

// The float result of f on bf16 operands converted to float, rounded by the copy path: what every bf16 path
// (in-place operands, or buffers) must give bit for bit.
template <class F>
void expect_like_float(const Tensor& got, F f, std::initializer_list<Tensor> bf16_args) {
  std::vector<Tensor> f32;
  for (const Tensor& t : bf16_args) f32.push_back(t.to(kFloat32));
  Tensor want = f(f32).to(kBFloat16);
  ASSERT_EQ(got.dtype(), kBFloat16);
  EXPECT_EQ(bits(got), bits(want));
}

// All-contiguous bf16 operands take the loop's direct path (converted in registers, no float buffers); odd
// sizes leave tails shorter than a chunk and views start off the vector alignment.
TEST(PointwiseBf16, DirectPathTailsOffsetsAndThreads) {
  for (int threads : {1, 0}) {
    set_num_threads(threads);
    for (int64_t n : {1, 7, 255, 256, 257, 1000, 70001}) {
      Tensor sa = (testing::random({n + 3}, kFloat32, 11) * 50).to(kBFloat16);
      Tensor b = (testing::random({n}, kFloat32, 12) * 50).to(kBFloat16);
      Tensor c = testing::random_positive({n}, kFloat32).to(kBFloat16);
      Tensor a = sa.narrow(0, 3, n);  // 6 bytes into its storage
      expect_like_float(add(a, b), [](auto v) { return v[0] + v[1]; }, {a, b});
      expect_like_float(sub(a, b, 0.5), [](auto v) { return sub(v[0], v[1], 0.5); }, {a, b});
      expect_like_float(div(a, c), [](auto v) { return v[0] / v[1]; }, {a, c});
      expect_like_float(sigmoid(a), [](auto v) { return sigmoid(v[0]); }, {a});
      expect_like_float(gelu(a), [](auto v) { return gelu(v[0]); }, {a});
      expect_like_float(lerp(a, b, c), [](auto v) { return lerp(v[0], v[1], v[2]); }, {a, b, c});
      expect_like_float(addcmul(a, b, c, 0.25), [](auto v) { return addcmul(v[0], v[1], v[2], 0.25); }, {a, b, c});
    }
  }
  set_num_threads(0);
}

TEST(PointwiseBf16, InPlaceAndMixedOperands) {
  const int64_t n = 1031;
  Tensor a = (testing::random({n}, kFloat32, 21) * 10).to(kBFloat16);
  Tensor b = (testing::random({n}, kFloat32, 22) * 10).to(kBFloat16);
  Tensor want = (a.to(kFloat32) + b.to(kFloat32)).to(kBFloat16);
  Tensor x = a.clone();
  x.add_(b);  // output is an input: each element read before it is written
  EXPECT_EQ(bits(x), bits(want));
  Tensor y = a.clone();
  y.add_(y);
  EXPECT_EQ(bits(y), bits((a.to(kFloat32) * 2).to(kBFloat16)));
  // Not all-bf16-contiguous: a float32 operand, a broadcast row, a transposed view, a strided output. These go
  // through the float buffers and must agree with the same rounding.
  Tensor f = testing::random({n}, kFloat32, 23);
  Tensor mixed = add(a, f);
  ASSERT_EQ(mixed.dtype(), kFloat32);
  EXPECT_TENSOR_EQ(mixed, a.to(kFloat32) + f);
  Tensor m = (testing::random({33, 31}, kFloat32, 24) * 10).to(kBFloat16);
  Tensor row = (testing::random({31}, kFloat32, 25) * 10).to(kBFloat16);
  expect_like_float(add(m, row), [](auto v) { return v[0] + v[1]; }, {m, row});
  expect_like_float(mul(m.t(), m.t()), [](auto v) { return v[0] * v[0]; }, {m.t()});
  Tensor big = zeros({n, 2}, TensorOptions(kBFloat16));
  Tensor col = big.select(1, 1);
  col.copy_(a);
  col.add_(b);
  EXPECT_EQ(bits(col), bits(want));
  EXPECT_EQ(bits(big.select(1, 0)), std::vector<uint16_t>(static_cast<size_t>(n), 0));
}

// Round-to-nearest-even ties, values that round up to infinity, NaN (kept quiet) and signed zeros on the
// direct path, against BFloat16::from_float.
TEST(PointwiseBf16, DirectPathRoundingTiesAndSpecials) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // a + b lands exactly half-way between two bf16 values (ties to even both ways), above the largest finite
  // bf16 (rounds to inf), or on NaN/inf/zero.
  std::vector<float> av = {1.0f, 1.0078125f, -1.0f, 3.3895314e38f, 3.38e38f, nan, inf, -inf, inf, -0.f, 0.f};
  std::vector<float> bv = {0.00390625f, 0.00390625f, -0.00390625f, 3.0e36f, 1e30f, 1.f, 1.f, 1.f, -inf, -0.f, -0.f};
  const int64_t n = static_cast<int64_t>(av.size());
  Tensor a16 = from_vector(av, {n}).to(kBFloat16), b16 = from_vector(bv, {n}).to(kBFloat16);
  Tensor got = add(a16, b16);
  std::vector<float> av16 = a16.to(kFloat32).to_vector<float>(), bv16 = b16.to(kFloat32).to_vector<float>();
  std::vector<uint16_t> g = bits(got);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t want = BFloat16::from_float(av16[i] + bv16[i]);
    if (std::isnan(av16[i] + bv16[i]))
      EXPECT_TRUE((g[i] & 0x7f80) == 0x7f80 && (g[i] & 0x7f) != 0 && (g[i] & 0x40)) << i;
    else
      EXPECT_EQ(g[i], want) << i << ": " << av16[i] << " + " << bv16[i];
  }
  EXPECT_EQ(g[0], 0x3f80);  // 1 + 2^-8: a tie, rounds to even (1.0)
  EXPECT_EQ(g[1], 0x3f82);  // 1.0078125 + 2^-8: a tie, rounds to even (up)
}

}  // namespace
}  // namespace sinter
