// Sequence operators resolved at import: every form of SplitToSequence, positions (negative, default, out of
// range), ConcatFromSequence's cat and stack, SequenceLength as a constant, and what stays unsupported.
#include <gtest/gtest.h>

#include "sinter/compile.h"
#include "sinter/onnx.h"
#include "testing.h"
#include "frontends/onnx/onnx_writer.h"

namespace sinter {
namespace {
using namespace onnx_writer;

constexpr int kFloat = 1, kInt64 = 7;

std::string one_input_model(const std::string& nodes, const std::vector<int64_t>& x_dims, const std::string& out,
                            int out_type = kFloat) {
  return model(nodes + value_info(11, "x", kFloat, x_dims) + value_info(12, out, out_type, {}), 13);
}
std::string i64(const std::string& name, std::vector<int64_t> v, std::vector<int64_t> dims = {}) {
  return field_bytes(5, int64_tensor(name, dims, v));
}

Tensor x_2x5() { return testing::random({2, 5}, kFloat32, 3); }

TEST(OnnxSequence, SplitToSequenceForms) {
  Tensor x = x_2x5();
  // No split: pieces of 1 along axis 1, squeezed with keepdims=0; the last one is [2].
  std::string g = node({"x"}, {"s"}, "SplitToSequence", "", attr_int("axis", 1) + attr_int("keepdims", 0)) +
                  node({"s", "p"}, {"y"}, "SequenceAt") + i64("p", {-1});
  EXPECT_TENSOR_EQ(onnx::load_from_bytes(one_input_model(g, {2, 5}, "y"))({x})[0], select(x, 1, 4));
  // keepdims=1 (the default): [2, 1].
  g = node({"x"}, {"s"}, "SplitToSequence", "", attr_int("axis", 1)) + node({"s", "p"}, {"y"}, "SequenceAt") +
      i64("p", {3});
  EXPECT_TENSOR_EQ(onnx::load_from_bytes(one_input_model(g, {2, 5}, "y"))({x})[0], narrow(x, 1, 3, 1));
  // A scalar split of 2: [2, 2], [2, 2], [2, 1]; keepdims is ignored when a split is given.
  g = node({"x", "k"}, {"s"}, "SplitToSequence", "", attr_int("axis", -1) + attr_int("keepdims", 0)) +
      node({"s", "p"}, {"y"}, "SequenceAt") + node({"s"}, {"n"}, "SequenceLength") + i64("k", {2}) + i64("p", {2});
  std::string m = model(g + value_info(11, "x", kFloat, {2, 5}) + value_info(12, "y", kFloat, {}) +
                            value_info(12, "n", kInt64, {}), 13);
  std::vector<Tensor> outs = onnx::load_from_bytes(m)({x});
  EXPECT_TENSOR_EQ(outs[0], narrow(x, 1, 4, 1));
  EXPECT_EQ(outs[1].to_vector<int64_t>(), std::vector<int64_t>{3});
  // A 1-D split [1, 4].
  g = node({"x", "k"}, {"s"}, "SplitToSequence", "", attr_int("axis", 1)) + node({"s", "p"}, {"y"}, "SequenceAt") +
      i64("k", {1, 4}, {2}) + i64("p", {1});
  EXPECT_TENSOR_EQ(onnx::load_from_bytes(one_input_model(g, {2, 5}, "y"))({x})[0], narrow(x, 1, 1, 4));
  g = node({"x", "k"}, {"s"}, "SplitToSequence", "split0", attr_int("axis", 1)) +
      node({"s", "p"}, {"y"}, "SequenceAt") + i64("k", {1, 3}, {2}) + i64("p", {1});
  EXPECT_ERROR(onnx::load_from_bytes(one_input_model(g, {2, 5}, "y"))({x}), "split0", "sum to 4", "5 elements");
}

TEST(OnnxSequence, InsertEraseAtWithPositions) {
  // [a, b, c] -> insert x at -1 -> [a, b, x, c] -> erase 0 -> [b, x, c] -> erase (last) -> [b, x] -> append a.
  Tensor a = full({2}, 1.0), b = full({2}, 2.0), c = full({2}, 3.0);
  std::string g = node({"a", "b", "c"}, {"s0"}, "SequenceConstruct") + node({"s0", "x", "m1"}, {"s1"}, "SequenceInsert") +
                  node({"s1", "zero"}, {"s2"}, "SequenceErase") + node({"s2"}, {"s3"}, "SequenceErase") +
                  node({"s3", "a"}, {"s4"}, "SequenceInsert") +
                  node({"s4"}, {"y"}, "ConcatFromSequence", "", attr_int("axis", 0)) +
                  node({"s4"}, {"st"}, "ConcatFromSequence", "", attr_int("axis", -1) + attr_int("new_axis", 1)) +
                  node({"s4"}, {"n"}, "SequenceLength") + i64("m1", {-1}) + i64("zero", {0});
  for (const char* in : {"a", "b", "c", "x"}) g += value_info(11, in, kFloat, {2});
  g += value_info(12, "y", kFloat, {}) + value_info(12, "st", kFloat, {}) + value_info(12, "n", kInt64, {});
  onnx::Model m = onnx::load_from_bytes(model(g, 13));
  Tensor x = full({2}, 9.0);
  auto fast = compile(m, {.backend = "aot_eager"});
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> outs = run == 0 ? m({a, b, c, x}) : fast(std::vector<Tensor>{a, b, c, x});
    EXPECT_TENSOR_EQ(outs[0], from_vector(std::vector<float>{2, 2, 9, 9, 1, 1}, {6}));
    EXPECT_TENSOR_EQ(outs[1], from_vector(std::vector<float>{2, 9, 1, 2, 9, 1}, {2, 3}));
    EXPECT_EQ(outs[2].to_vector<int64_t>(), std::vector<int64_t>{3});
  }
}

TEST(OnnxSequence, EmptySequenceAndRanges) {
  std::string g = node({}, {"e"}, "SequenceEmpty") + node({"e", "x", "zero"}, {"s"}, "SequenceInsert") +
                  node({"s", "two"}, {"y"}, "SequenceAt", "at0") + i64("zero", {0}) + i64("two", {2});
  EXPECT_ERROR(onnx::load_from_bytes(one_input_model(g, {2}, "y"))({full({2}, 1.0)}), "at0", "position 2",
               "[-1, 0]");
  g = node({}, {"e"}, "SequenceEmpty") + node({"e"}, {"y"}, "ConcatFromSequence", "cat0", attr_int("axis", 0)) +
      node({"x"}, {"unused"}, "Identity");
  EXPECT_ERROR(onnx::load_from_bytes(one_input_model(g, {2}, "y"))({full({2}, 1.0)}), "cat0", "empty sequence");
}

TEST(OnnxSequence, ComputedSplitSizesAreReadOnTheHost) {
  // The split sizes come from a graph input: read on the host (a graph break under compile), the length is 3.
  std::string g = node({"x", "k"}, {"s"}, "SplitToSequence") + node({"s"}, {"n"}, "SequenceLength") +
                  node({"s", "one"}, {"y"}, "SequenceAt") + i64("one", {1}) + value_info(11, "x", kFloat, {-1}) +
                  value_info(11, "k", kInt64, {3}) + value_info(12, "n", kInt64, {}) + value_info(12, "y", kFloat, {});
  onnx::Model m = onnx::load_from_bytes(model(g, 13));
  Tensor x = from_vector(std::vector<float>{1, 2, 3, 4, 5}, {5});
  Tensor k = from_vector(std::vector<int64_t>{1, 3, 1}, {3});
  auto fast = compile(m, {.backend = "aot_eager"});
  std::vector<Tensor> outs = fast(std::vector<Tensor>{x, k});
  EXPECT_EQ(outs[0].to_vector<int64_t>(), std::vector<int64_t>{3});
  EXPECT_TENSOR_EQ(outs[1], from_vector(std::vector<float>{2, 3, 4}, {3}));
}

TEST(OnnxSequence, SequencesLeavingTheGraphAreUnsupported) {
  // A sequence graph output is rejected at load; a sequence given to a tensor operator when it runs.
  std::string g = node({"x"}, {"s"}, "SplitToSequence") + value_info(11, "x", kFloat, {2}) +
                  field_bytes(12, field_bytes(1, "s") + field_bytes(2, field_bytes(4, field_bytes(1, field_bytes(1, field_varint(1, kFloat))))));
  EXPECT_THROW(onnx::load_from_bytes(model(g, 13)), onnx::UnsupportedError);
  g = node({"x"}, {"s"}, "SplitToSequence") + node({"s", "x"}, {"y"}, "Add", "add0");
  onnx::Model m = onnx::load_from_bytes(one_input_model(g, {2}, "y"));
  try {
    m({full({2}, 1.0)});
    ADD_FAILURE() << "did not throw";
  } catch (const onnx::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("add0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is a sequence"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sinter
