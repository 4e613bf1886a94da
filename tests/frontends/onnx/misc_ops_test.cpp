// Operators composed from sinter's ops: Det (pivoting, singular and batched matrices, against cofactor
// expansion), QuantizeLinear's rounding and saturation, DequantizeLinear per axis, and both under compile().
#include <gtest/gtest.h>

#include <random>

#include "sinter/compile.h"
#include "sinter/onnx.h"
#include "testing.h"
#include "frontends/onnx/onnx_writer.h"

namespace sinter {
namespace {
using namespace onnx_writer;

constexpr int kFloat = 1, kUInt8 = 2, kInt8 = 3, kDouble = 11;

// det by cofactor expansion along the first row (the reference; fine for n <= 5).
double cofactor_det(const std::vector<double>& m, int n) {
  if (n == 1) return m[0];
  double d = 0;
  for (int j = 0; j < n; ++j) {
    std::vector<double> minor;
    for (int r = 1; r < n; ++r)
      for (int c = 0; c < n; ++c)
        if (c != j) minor.push_back(m[r * n + c]);
    d += (j % 2 ? -1 : 1) * m[j] * cofactor_det(minor, n - 1);
  }
  return d;
}

TEST(OnnxMiscOps, DetMatchesCofactorExpansion) {
  std::string g = node({"a"}, {"d"}, "Det") + value_info(11, "a", kDouble, {3, 4, 4}) + value_info(12, "d", kDouble, {});
  onnx::Model m = onnx::load_from_bytes(model(g, 13));
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  std::vector<double> v(3 * 16);
  for (double& x : v) x = nd(rng);
  // Matrix 1 needs pivoting (a zero in the corner); matrix 2 is singular (two equal rows).
  v[16] = 0;
  for (int c = 0; c < 4; ++c) v[32 + 3 * 4 + c] = v[32 + 1 * 4 + c];
  Tensor a = from_vector(v, {3, 4, 4});
  auto fast = compile(m, {.backend = "aot_eager"});
  for (const Tensor& d : {m({a})[0], fast(std::vector<Tensor>{a})[0]}) {
    ASSERT_EQ(d.sizes().hints(), (std::vector<int64_t>{3}));
    std::vector<double> got = d.to_vector<double>();
    for (int b = 0; b < 3; ++b) {
      std::vector<double> mb(v.begin() + 16 * b, v.begin() + 16 * (b + 1));
      EXPECT_NEAR(got[b], cofactor_det(mb, 4), 1e-12) << "matrix " << b;
    }
    EXPECT_EQ(got[2], 0.0);
  }
}

TEST(OnnxMiscOps, QuantizeRoundsHalfToEvenAndSaturates) {
  std::string g = node({"x", "s", "z"}, {"y"}, "QuantizeLinear") + field_bytes(5, float_tensor("s", {}, {0.5f})) +
                  field_bytes(5, tensor_header("z", {}, kInt8) + field_bytes(9, std::string(1, '\x02'))) +
                  value_info(11, "x", kFloat, {6}) + value_info(12, "y", kInt8, {});
  onnx::Model m = onnx::load_from_bytes(model(g, 13));
  // x / 0.5 = 0.5, 1.5, -2.5, 2.75, 1000, -1000 -> rint 0, 2, -2, 3 (+2), then saturated to [-128, 127].
  Tensor x = from_vector(std::vector<float>{0.25f, 0.75f, -1.25f, 1.375f, 500.f, -500.f}, {6});
  Tensor want = from_vector(std::vector<int8_t>{2, 4, 0, 5, 127, -128}, {6});
  EXPECT_TENSOR_EQ(m({x})[0], want);
  auto fast = compile(m, {.backend = "aot_eager"});
  EXPECT_TENSOR_EQ(fast(std::vector<Tensor>{x})[0], want);
}

TEST(OnnxMiscOps, DequantizePerAxis) {
  // x uint8 [2, 3], per-axis (axis 1) scales and zero points.
  std::string zp(3, '\0');
  zp[0] = 1, zp[1] = 2, zp[2] = 3;
  std::string g = node({"x", "s", "z"}, {"y"}, "DequantizeLinear", "", attr_int("axis", 1)) +
                  field_bytes(5, float_tensor("s", {3}, {1.f, 0.5f, 2.f})) +
                  field_bytes(5, tensor_header("z", {3}, kUInt8) + field_bytes(9, zp)) +
                  value_info(11, "x", kUInt8, {2, 3}) + value_info(12, "y", kFloat, {});
  onnx::Model m = onnx::load_from_bytes(model(g, 13));
  Tensor x = from_vector(std::vector<uint8_t>{1, 2, 3, 11, 12, 13}, {2, 3});
  EXPECT_TENSOR_EQ(m({x})[0], from_vector(std::vector<float>{0, 0, 0, 10, 5, 20}, {2, 3}));
}

}  // namespace
}  // namespace sinter
