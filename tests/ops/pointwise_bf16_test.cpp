// bfloat16 results of pointwise ops are rounded by the loop engine's vectorised float -> bf16 conversion: it
// must round exactly as BFloat16::from_float (the copy path) does, NaN and infinities included.
#include <cmath>
#include <cstring>
#include <limits>

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

}  // namespace
}  // namespace sinter
