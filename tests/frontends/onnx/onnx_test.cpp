// ONNX import: models written here byte by byte (a tiny protobuf writer), the C++ API through compile(), the
// errors a malformed or hostile file gives, and external data confinement.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "sinter/compile.h"
#include "sinter/onnx.h"
#include "testing.h"
#include "frontends/onnx/onnx_writer.h"

namespace sinter {
namespace {
namespace fs = std::filesystem;
using namespace onnx_writer;

// y = Relu(x + b) with b an initializer, x: float[batch, 3].
std::string add_relu_model(const std::string& b_tensor) {
  std::string g = node({"x", "b"}, {"s"}, "Add", "add0") + node({"s"}, {"y"}, "Relu", "relu0") +
                  field_bytes(5, b_tensor) + value_info(11, "x", 1, {-1, 3}, {"batch", ""}) +
                  value_info(12, "y", 1, {-1, 3}, {"batch", ""});
  return model(g, 17);
}

TEST(OnnxImport, RunsEagerAndCompiled) {
  onnx::Model m = onnx::load_from_bytes(add_relu_model(float_tensor("b", {3}, {1.f, -2.f, 0.5f})));
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].dim_params[0], "batch");
  EXPECT_EQ(m.parameters().size(), 1u);
  Tensor x = from_vector(std::vector<float>{1, 1, 1, -3, 4, 0}, {2, 3});
  Tensor want = from_vector(std::vector<float>{2, 0, 1.5f, 0, 2, 0.5f}, {2, 3});
  EXPECT_TENSOR_EQ(m({x})[0], want);
  auto fast = compile(m, {.backend = "aot_eager"});
  EXPECT_TENSOR_EQ(fast(std::vector<Tensor>{x})[0], want);
  EXPECT_TENSOR_EQ(fast(std::vector<Tensor>{x})[0], want);
  EXPECT_EQ(fast.stats().compiles, 1);
}

TEST(OnnxImport, ToGraphHasSymbolicBatch) {
  onnx::Model m = onnx::load_from_bytes(add_relu_model(float_tensor("b", {3}, {1.f, -2.f, 0.5f})));
  Graph g = m.to_graph();
  EXPECT_EQ(g.num_inputs(), 2);  // x, then the initializer b
  EXPECT_TRUE(g.inputs()[0].sizes()[0].is_symbolic());
  std::string text = g.str();
  EXPECT_NE(text.find("relu"), std::string::npos) << text;
  Tensor x = from_vector(std::vector<float>{1, 1, 1, -3, 4, 0, 5, 5, 5}, {3, 3});
  EXPECT_TENSOR_EQ(interpret(g, {x, m.parameters()[0].second})[0], m({x})[0]);
  Graph frozen = m.to_graph(/*freeze=*/true);
  EXPECT_EQ(frozen.num_inputs(), 1);
}

TEST(OnnxImport, ShapeArithmeticFolds) {
  // y = Reshape(x, Concat(Gather(Shape(x), 0), [-1])): the shape subgraph runs on the host, so capture sees one
  // reshape and no graph break.
  std::string g = node({"x"}, {"shp"}, "Shape") + node({"shp", "zero"}, {"n"}, "Gather", "", attr_int("axis", 0)) +
                  node({"n", "minus1"}, {"target"}, "Concat", "", attr_int("axis", 0)) +
                  node({"x", "target"}, {"y"}, "Reshape") + field_bytes(5, int64_tensor("zero", {1}, {0})) +
                  field_bytes(5, int64_tensor("minus1", {1}, {-1})) + value_info(11, "x", 1, {2, 3, 4}) +
                  value_info(12, "y", 1, {});
  onnx::Model m = onnx::load_from_bytes(model(g, 13));
  Tensor x = arange(Scalar(24), TensorOptions(kFloat32)).reshape({2, 3, 4});
  auto fast = compile(m, {.backend = "aot_eager", .fullgraph = true});
  Tensor y = fast(std::vector<Tensor>{x})[0];
  EXPECT_EQ(y.sizes().hints(), (std::vector<int64_t>{2, 12}));
}

TEST(OnnxImport, UnsupportedOperatorsAreListedBeforeRunning) {
  std::string g = node({"x"}, {"a"}, "FancyOp", "f1") + node({"a"}, {"b"}, "FancyOp", "f2") +
                  node({"b"}, {"y"}, "Other", "o1") + value_info(11, "x", 1, {2}) + value_info(12, "y", 1, {2});
  try {
    onnx::load_from_bytes(model(g, 17));
    FAIL() << "no error";
  } catch (const onnx::UnsupportedError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("FancyOp (2 nodes: f1, f2)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Other (1 node: o1)"), std::string::npos) << msg;
  }
}

TEST(OnnxImport, MalformedFilesGiveErrors) {
  std::string good = add_relu_model(float_tensor("b", {3}, {1.f, -2.f, 0.5f}));
  EXPECT_ERROR(onnx::load_from_bytes(good.substr(0, good.size() / 2)), "invalid ONNX");
  EXPECT_ERROR(onnx::load_from_bytes(""), "no graph");
  // A length prefix claiming far more bytes than the file has.
  EXPECT_ERROR(onnx::load_from_bytes(std::string("\x3a\xff\xff\xff\xff\x0f", 6)), "past the end");
  // Raw data that does not match the dims.
  EXPECT_ERROR(onnx::load_from_bytes(add_relu_model(float_tensor("b", {4}, {1.f, 2.f, 3.f}))), "raw_data");
  // Dims whose product overflows.
  EXPECT_ERROR(onnx::load_from_bytes(add_relu_model(float_tensor("b", {1ll << 40, 1ll << 40}, {}))), "dims");
  EXPECT_ERROR(onnx::load_from_bytes(add_relu_model(float_tensor("b", {-1}, {}))), "negative");
}

TEST(OnnxImport, WrongInputsGiveErrors) {
  onnx::Model m = onnx::load_from_bytes(add_relu_model(float_tensor("b", {3}, {1.f, -2.f, 0.5f})));
  EXPECT_ERROR(m({}), "takes 1 inputs");
  EXPECT_ERROR(m({zeros({2, 3}, TensorOptions(kInt64))}), "must be float32");
}

class OnnxExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("sinter_onnx_ext_{}", ::getpid());
    fs::create_directories(dir_ / "model");
    std::vector<float> b{1.f, -2.f, 0.5f};
    std::ofstream(dir_ / "model" / "w.bin", std::ios::binary).write(reinterpret_cast<const char*>(b.data()), 12);
    std::ofstream(dir_ / "secret.bin", std::ios::binary).write(reinterpret_cast<const char*>(b.data()), 12);
    fs::create_symlink(dir_ / "secret.bin", dir_ / "model" / "link.bin");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& location) {
    std::string path = (dir_ / "model" / "m.onnx").string();
    std::ofstream(path, std::ios::binary) << add_relu_model(external_tensor("b", {3}, location));
    return path;
  }
  fs::path dir_;
};

TEST_F(OnnxExternalData, LoadsInsideTheFolder) {
  onnx::Model m = onnx::load(write("w.bin"));
  Tensor x = zeros({1, 3});
  EXPECT_TENSOR_EQ(m({x})[0], from_vector(std::vector<float>{1, 0, 0.5f}, {1, 3}));
}

TEST_F(OnnxExternalData, RefusesPathsThatLeaveTheFolder) {
  EXPECT_ERROR(onnx::load(write("../secret.bin")), "leaves the model's folder");
  EXPECT_ERROR(onnx::load(write((dir_ / "secret.bin").string())), "absolute");
  EXPECT_ERROR(onnx::load(write("link.bin")), "outside the model's folder");
  EXPECT_ERROR(onnx::load(write("missing.bin")), "cannot be opened");
  EXPECT_ERROR(onnx::load_from_bytes(add_relu_model(external_tensor("b", {3}, "w.bin"))), "not allowed");
}

TEST(OnnxImport, TensorFilesRoundTrip) {
  Tensor t = onnx::tensor_from_bytes(int64_tensor("t", {2, 2}, {1, -2, 3, 4}));
  EXPECT_TENSOR_EQ(t, from_vector(std::vector<int64_t>{1, -2, 3, 4}, {2, 2}));
}

// Cast float -> bfloat16 truncates (ONNX's reference keeps the top 16 bits of the float32), eager and fused.
TEST(OnnxImport, CastToBFloat16Truncates) {
  std::vector<float> xs{0.f, -0.f, 1.f, -1.f, 0.47892547f, -0.81910545f, 3.3895314e38f, 3.4028235e38f,
                        1e-40f, -3e-39f, 1.17549435e-38f, 0.99999994f, 255.9f, 65535.f};
  uint32_t state = 12345;
  for (int i = 0; i < 2000; ++i) {  // random bit patterns over every exponent, NaN/inf excluded
    state = state * 1664525u + 1013904223u;
    float f;
    uint32_t bits = state;
    std::memcpy(&f, &bits, 4);
    if (std::isfinite(f)) xs.push_back(f);
  }
  int64_t n = static_cast<int64_t>(xs.size());
  std::vector<float> want;
  for (float f : xs) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits &= 0xffff0000u;
    float t;
    std::memcpy(&t, &bits, 4);
    want.push_back(t);
  }
  std::string g = node({"x"}, {"y"}, "Cast", "", attr_int("to", 16)) + value_info(11, "x", 1, {n}) + value_info(12, "y", 16, {n});
  onnx::Model m = onnx::load_from_bytes(model(g, 13));
  Tensor x = from_vector(xs, {n});
  Tensor expected = from_vector(want, {n});
  EXPECT_TENSOR_EQ(m({x})[0].to(kFloat32), expected);
  auto fast = compile(m, {.backend = "inductor"});
  EXPECT_TENSOR_EQ(fast(std::vector<Tensor>{x})[0].to(kFloat32), expected);
}

TEST(OnnxImport, ImplementsAtLeast120Operators) { EXPECT_GE(onnx::supported_ops().size(), 120u); }

}  // namespace
}  // namespace sinter
