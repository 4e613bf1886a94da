// ONNX int16/uint16/uint32/uint64, which sinter's tensors lack: held in int32/int64 by the importer, with results
// reduced to the declared width. Checked against plain C++ arithmetic on the real types, including uint64 values at
// and above 2^63 (negative as int64 bit patterns), eagerly and compiled.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "sinter/compile.h"
#include "sinter/onnx.h"
#include "testing.h"
#include "frontends/onnx/onnx_writer.h"

namespace sinter {
namespace {
using namespace onnx_writer;

constexpr int kTInt16 = 5, kTUInt16 = 4, kTUInt32 = 12, kTUInt64 = 13, kTInt64 = 7, kTFloat = 1;  // ONNX type numbers

std::string attr_str(const std::string& name, const std::string& v) {
  return field_bytes(5, field_bytes(1, name) + field_bytes(4, v) + field_varint(20, 3));
}

// out = op(x[, y]) with x, y, out declared as the given ONNX types, all of shape [n].
onnx::Model op_model(const std::string& op, int xt, int yt, int ot, int64_t n, const std::string& attrs = "",
                     bool binary = true) {
  std::vector<std::string> ins = binary ? std::vector<std::string>{"x", "y"} : std::vector<std::string>{"x"};
  std::string g = node(ins, {"out"}, op, "n0", attrs) + value_info(11, "x", xt, {n});
  if (binary) g += value_info(11, "y", yt, {n});
  g += value_info(12, "out", ot, {n});
  return onnx::load_from_bytes(model(g, 18));
}

Tensor u64(const std::vector<uint64_t>& v) {
  std::vector<int64_t> bits(v.begin(), v.end());  // the bit patterns (modular conversion)
  return from_vector(bits, {static_cast<int64_t>(v.size())});
}
std::vector<uint64_t> as_u64(const Tensor& t) {
  std::vector<int64_t> v = t.to_vector<int64_t>();
  return std::vector<uint64_t>(v.begin(), v.end());
}

// Runs the model eagerly and under aot_eager (and inductor where asked); every run must give `want`.
void expect_runs(const onnx::Model& m, const std::vector<Tensor>& in, const Tensor& want, bool inductor = false) {
  EXPECT_TENSOR_EQ(m(in)[0], want);
  auto fast = compile(m, {.backend = "aot_eager"});
  EXPECT_TENSOR_EQ(fast(in)[0], want);
  if (inductor) {
    auto ind = compile(m, {.backend = "inductor"});
    EXPECT_TENSOR_EQ(ind(in)[0], want);
  }
}

std::vector<uint64_t> edge_u64() {
  std::vector<uint64_t> v = {0, 1, 2, 3, 7, 0xFFFFFFFFull, 0x100000000ull, 0x7FFFFFFFFFFFFFFFull, 0x8000000000000000ull,
                             0x8000000000000001ull, 0xFFFFFFFFFFFFFFFFull, 0xDEADBEEFCAFEF00Dull, 12345678901234567ull};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 19; ++i) v.push_back(rng() >> (rng() % 64));
  return v;
}

TEST(OnnxNarrowInt, DeclaredTypesAreHeldWider) {
  onnx::Model m = op_model("BitwiseNot", kTUInt16, 0, kTUInt16, 3, "", false);
  EXPECT_EQ(m.inputs()[0].dtype, kInt32);
  EXPECT_EQ(m.inputs()[0].onnx_type, kTUInt16);
  EXPECT_NE(m.inputs()[0].str().find("uint16 (held as int32)"), std::string::npos) << m.inputs()[0].str();
  EXPECT_EQ(op_model("BitwiseNot", kTUInt64, 0, kTUInt64, 3, "", false).outputs()[0].dtype, kInt64);
}

TEST(OnnxNarrowInt, TensorFilesOfEachType) {
  // raw_data: little-endian values of the declared width.
  auto raw = [](int type, const std::vector<int64_t>& dims, const void* p, size_t bytes) {
    return tensor_header("t", dims, type) + field_bytes(9, std::string(static_cast<const char*>(p), bytes));
  };
  int16_t i16[3] = {-32768, -1, 32767};
  EXPECT_TENSOR_EQ(onnx::tensor_from_bytes(raw(kTInt16, {3}, i16, 6)), from_vector(std::vector<int32_t>{-32768, -1, 32767}, {3}));
  uint16_t u16[2] = {65535, 1};
  EXPECT_TENSOR_EQ(onnx::tensor_from_bytes(raw(kTUInt16, {2}, u16, 4)), from_vector(std::vector<int32_t>{65535, 1}, {2}));
  uint32_t u32[2] = {0xFFFFFFFFu, 5};
  EXPECT_TENSOR_EQ(onnx::tensor_from_bytes(raw(kTUInt32, {2}, u32, 8)), from_vector(std::vector<int64_t>{0xFFFFFFFFll, 5}, {2}));
  uint64_t big[2] = {0xFFFFFFFFFFFFFFFFull, 0x8000000000000000ull};
  EXPECT_TENSOR_EQ(onnx::tensor_from_bytes(raw(kTUInt64, {2}, big, 16)), u64({big[0], big[1]}));
  // A raw_data length of the wider dtype is wrong for the declared one.
  EXPECT_ERROR(onnx::tensor_from_bytes(raw(kTUInt16, {2}, u32, 8)), "raw_data holds 8 bytes");
  // Typed fields: int32_data for int16/uint16 (varints), uint64_data for uint32/uint64.
  std::string t16 = tensor_header("t", {2}, kTInt16) + field_varint(5, -7) + field_varint(5, 300);
  EXPECT_TENSOR_EQ(onnx::tensor_from_bytes(t16), from_vector(std::vector<int32_t>{-7, 300}, {2}));
  std::string t64 = tensor_header("t", {2}, kTUInt64) + field_varint(11, -1) + field_varint(11, 9);
  EXPECT_TENSOR_EQ(onnx::tensor_from_bytes(t64), u64({0xFFFFFFFFFFFFFFFFull, 9}));
  std::string t32 = tensor_header("t", {1}, kTUInt32) + field_varint(11, 4000000000ll);
  EXPECT_TENSOR_EQ(onnx::tensor_from_bytes(t32), from_vector(std::vector<int64_t>{4000000000ll}, {1}));
  EXPECT_ERROR(onnx::tensor_from_bytes(tensor_header("t", {2}, kTUInt32) + field_varint(11, 1)), "uint64_data holds 1");
}

TEST(OnnxNarrowInt, Uint64ShiftsMatchCxx) {
  std::vector<uint64_t> x = edge_u64(), y;
  for (size_t i = 0; i < x.size(); ++i) y.push_back(i % 3 == 0 ? (i * 7) % 64 : i % 3 == 1 ? i % 33 : 60 + i % 8);
  y[1] = 0xFFFFFFFFFFFFFFFFull;  // an amount far past the width
  y[2] = 64;
  for (bool left : {true, false}) {
    std::vector<uint64_t> want;
    for (size_t i = 0; i < x.size(); ++i) want.push_back(y[i] >= 64 ? 0 : left ? x[i] << y[i] : x[i] >> y[i]);
    onnx::Model m = op_model("BitShift", kTUInt64, kTUInt64, kTUInt64, static_cast<int64_t>(x.size()),
                             attr_str("direction", left ? "LEFT" : "RIGHT"));
    SCOPED_TRACE(left ? "left" : "right");
    expect_runs(m, {u64(x), u64(y)}, u64(want), /*inductor=*/true);
  }
}

TEST(OnnxNarrowInt, SmallUnsignedShiftsWrap) {
  // uint16 in int32 and uint32 in int64: left shifts drop the bits above the width.
  std::vector<int32_t> x16 = {0xFFFF, 0x8001, 1, 3, 0x1234}, y16 = {1, 15, 16, 40, 4};
  std::vector<int32_t> l16, r16;
  for (size_t i = 0; i < x16.size(); ++i) {
    uint16_t a = static_cast<uint16_t>(x16[i]);
    l16.push_back(y16[i] >= 16 ? 0 : static_cast<uint16_t>(a << y16[i]));
    r16.push_back(y16[i] >= 16 ? 0 : a >> y16[i]);
  }
  Tensor xa = from_vector(x16, {5}), ya = from_vector(y16, {5});
  expect_runs(op_model("BitShift", kTUInt16, kTUInt16, kTUInt16, 5, attr_str("direction", "LEFT")), {xa, ya}, from_vector(l16, {5}));
  expect_runs(op_model("BitShift", kTUInt16, kTUInt16, kTUInt16, 5, attr_str("direction", "RIGHT")), {xa, ya}, from_vector(r16, {5}));
  std::vector<int64_t> x32 = {0xFFFFFFFFll, 0x80000001ll, 1, 5}, y32 = {31, 1, 32, 0}, l32;
  for (size_t i = 0; i < x32.size(); ++i)
    l32.push_back(y32[i] >= 32 ? 0 : static_cast<uint32_t>(static_cast<uint32_t>(x32[i]) << y32[i]));
  expect_runs(op_model("BitShift", kTUInt32, kTUInt32, kTUInt32, 4, attr_str("direction", "LEFT")),
              {from_vector(x32, {4}), from_vector(y32, {4})}, from_vector(l32, {4}));
}

TEST(OnnxNarrowInt, Uint64MaxMinModUnsigned) {
  std::vector<uint64_t> a = edge_u64(), b = a;
  std::reverse(b.begin(), b.end());
  b[0] = 0;  // mod by zero gives 0
  std::vector<uint64_t> mx, mn, md;
  for (size_t i = 0; i < a.size(); ++i) {
    mx.push_back(std::max(a[i], b[i]));
    mn.push_back(std::min(a[i], b[i]));
    md.push_back(b[i] == 0 ? 0 : a[i] % b[i]);
  }
  int64_t n = static_cast<int64_t>(a.size());
  expect_runs(op_model("Max", kTUInt64, kTUInt64, kTUInt64, n), {u64(a), u64(b)}, u64(mx));
  expect_runs(op_model("Min", kTUInt64, kTUInt64, kTUInt64, n), {u64(a), u64(b)}, u64(mn));
  expect_runs(op_model("Mod", kTUInt64, kTUInt64, kTUInt64, n), {u64(a), u64(b)}, u64(md), /*inductor=*/true);
}

TEST(OnnxNarrowInt, Uint64OrderingsAreUnsigned) {
  std::vector<uint64_t> a = edge_u64(), b = a;
  std::reverse(b.begin(), b.end());
  int64_t n = static_cast<int64_t>(a.size());
  std::vector<uint8_t> less, ge;
  for (size_t i = 0; i < a.size(); ++i) less.push_back(a[i] < b[i]), ge.push_back(a[i] >= b[i]);
  Tensor want_lt = ne(from_vector(less, {n}), Scalar(0)), want_ge = ne(from_vector(ge, {n}), Scalar(0));
  expect_runs(op_model("Less", kTUInt64, kTUInt64, 9, n), {u64(a), u64(b)}, want_lt);
  expect_runs(op_model("GreaterOrEqual", kTUInt64, kTUInt64, 9, n), {u64(a), u64(b)}, want_ge);
}

TEST(OnnxNarrowInt, NotAndArithmeticWrapToTheDeclaredWidth) {
  Tensor x16 = from_vector(std::vector<int32_t>{0, 1, 0xFFFF, 0x1234}, {4});
  expect_runs(op_model("BitwiseNot", kTUInt16, 0, kTUInt16, 4, "", false), {x16},
              from_vector(std::vector<int32_t>{0xFFFF, 0xFFFE, 0, 0xEDCB}, {4}));
  Tensor x32 = from_vector(std::vector<int64_t>{0, 0xFFFFFFFFll}, {2});
  expect_runs(op_model("BitwiseNot", kTUInt32, 0, kTUInt32, 2, "", false), {x32},
              from_vector(std::vector<int64_t>{0xFFFFFFFFll, 0}, {2}));
  Tensor s16 = from_vector(std::vector<int32_t>{-32768, 5, 32767}, {3});
  expect_runs(op_model("BitwiseNot", kTInt16, 0, kTInt16, 3, "", false), {s16},
              from_vector(std::vector<int32_t>{32767, -6, -32768}, {3}));
  // uint16 65535 + 1 = 0; int16 32767 + 1 = -32768; uint32 0 - 1 = 2^32 - 1.
  expect_runs(op_model("Add", kTUInt16, kTUInt16, kTUInt16, 2),
              {from_vector(std::vector<int32_t>{65535, 7}, {2}), from_vector(std::vector<int32_t>{1, 2}, {2})},
              from_vector(std::vector<int32_t>{0, 9}, {2}));
  expect_runs(op_model("Add", kTInt16, kTInt16, kTInt16, 1), {from_vector(std::vector<int32_t>{32767}, {1}), from_vector(std::vector<int32_t>{1}, {1})},
              from_vector(std::vector<int32_t>{-32768}, {1}));
  expect_runs(op_model("Sub", kTUInt32, kTUInt32, kTUInt32, 1), {from_vector(std::vector<int64_t>{0}, {1}), from_vector(std::vector<int64_t>{1}, {1})},
              from_vector(std::vector<int64_t>{0xFFFFFFFFll}, {1}));
}

TEST(OnnxNarrowInt, CastsToAndFromEmulatedTypes) {
  auto cast_model = [](int from, int to, int64_t n) {
    return op_model("Cast", from, 0, to, n, attr_int("to", to), false);
  };
  // int64 -> uint16 / int16 wrap modulo 2^16; float -> int16 truncates toward zero.
  Tensor i = from_vector(std::vector<int64_t>{70000, -1, 32768}, {3});
  expect_runs(cast_model(kTInt64, kTUInt16, 3), {i}, from_vector(std::vector<int32_t>{70000 - 65536, 65535, 32768}, {3}));
  expect_runs(cast_model(kTInt64, kTInt16, 3), {i}, from_vector(std::vector<int32_t>{70000 - 65536, -1, -32768}, {3}));
  Tensor f = from_vector(std::vector<float>{-2.7f, 3.9f, 100.5f}, {3});
  expect_runs(cast_model(kTFloat, kTInt16, 3), {f}, from_vector(std::vector<int32_t>{-2, 3, 100}, {3}));
  // uint64 -> float converts as unsigned; then the Cast's output type is float (no wrapping downstream).
  Tensor big = u64({0x8000000000000000ull, 3});
  expect_runs(cast_model(kTUInt64, kTFloat, 2), {big}, from_vector(std::vector<float>{9223372036854775808.0f, 3.0f}, {2}));
  // uint32 -> uint64 keeps values; uint16 -> int64 too.
  expect_runs(cast_model(kTUInt32, kTUInt64, 1), {from_vector(std::vector<int64_t>{0xFFFFFFFFll}, {1})},
              from_vector(std::vector<int64_t>{0xFFFFFFFFll}, {1}));
  expect_runs(cast_model(kTUInt16, kTInt64, 1), {from_vector(std::vector<int32_t>{65535}, {1})},
              from_vector(std::vector<int64_t>{65535}, {1}));
}

TEST(OnnxNarrowInt, PowWithUint64Exponent) {
  onnx::Model m = op_model("Pow", kTFloat, kTUInt64, kTFloat, 3);
  Tensor x = from_vector(std::vector<float>{2.f, 1.f, 0.5f}, {3});
  expect_runs(m, {x, u64({3, 0x8000000000000000ull, 2})}, from_vector(std::vector<float>{8.f, 1.f, 0.25f}, {3}));
}

}  // namespace
}  // namespace sinter
