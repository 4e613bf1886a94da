// The importer refuses invalid graphs as onnx.checker does, with a message naming the node and the problem:
// duplicate value names, inputs used before they are defined, input/output counts outside the op's schema,
// unknown or mistyped attributes, opsets out of range, untyped graph inputs, negative dims. Valid models built
// the same way still load and run.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontends/onnx/onnx_writer.h"
#include "frontends/onnx/schema.h"
#include "sinter/onnx.h"
#include "testing.h"

namespace sinter {
namespace {
using namespace onnx_writer;

// A graph from its parts: nodes (node() results), inputs and outputs (value_info() results), more fields.
std::string graph(const std::string& nodes, const std::string& inputs, const std::string& outputs,
                  const std::string& more = "") {
  return nodes + field_bytes(2, "g") + inputs + outputs + more;
}
std::string in_x() { return value_info(11, "x", 1, {2, 3}); }
std::string out_y() { return value_info(12, "y", 1, {2, 3}); }
std::string relu_model(int64_t opset = 17) {
  return model(graph(node({"x"}, {"y"}, "Relu", "relu0"), in_x(), out_y()), opset);
}

#define EXPECT_INVALID(bytes, ...) EXPECT_ERROR(onnx::load_from_bytes(bytes), "invalid ONNX model", __VA_ARGS__)

TEST(OnnxValidate, ValidModelsStillLoad) {
  onnx::Model m = onnx::load_from_bytes(relu_model());
  Tensor x = from_vector(std::vector<float>{-1, 2, -3, 4, -5, 6}, {2, 3});
  EXPECT_TENSOR_EQ(m({x})[0], from_vector(std::vector<float>{0, 2, 0, 4, 0, 6}, {2, 3}));
  // Omitted optional inputs and outputs, an initializer, a symbolic dim, a graph output that is an input.
  std::string g = graph(node({"x", "", "hi"}, {"c"}, "Clip", "clip0") + node({"c"}, {"y", ""}, "Dropout", "drop0"),
                        value_info(11, "x", 1, {-1, 3}, {"batch", ""}),
                        value_info(12, "y", 1, {-1, 3}, {"batch", ""}) + value_info(12, "x", 1, {-1, 3}),
                        field_bytes(5, float_tensor("hi", {}, {1.5f})));
  onnx::Model m2 = onnx::load_from_bytes(model(g, 17));
  std::vector<Tensor> outs = m2({x});
  EXPECT_TENSOR_EQ(outs[0], from_vector(std::vector<float>{-1, 1.5f, -3, 1.5f, -5, 1.5f}, {2, 3}));
  EXPECT_TENSOR_EQ(outs[1], x);
  // Every opset in the supported range.
  for (int64_t opset : {int64_t{14}, onnx::kMaxSupportedOpset}) EXPECT_NO_THROW(onnx::load_from_bytes(relu_model(opset)));
}

TEST(OnnxValidate, DuplicateNodeOutputNamesTheNode) {
  std::string g = graph(node({"x"}, {"y"}, "Relu", "relu0") + node({"x"}, {"y"}, "Neg", "neg1"), in_x(), out_y());
  EXPECT_INVALID(model(g, 17), "node 1 'neg1' (Neg)", "output 0 'y' is already defined");
  // An output may not redefine a graph input either.
  std::string g2 = graph(node({"x"}, {"x"}, "Relu"), in_x(), value_info(12, "x", 1, {2, 3}));
  EXPECT_INVALID(model(g2, 17), "node 0 (Relu)", "output 0 'x' is already defined");
}

TEST(OnnxValidate, DuplicateGraphOutputsAndInputs) {
  std::string g = graph(node({"x"}, {"y"}, "Relu", "relu0"), in_x(), out_y() + out_y());
  EXPECT_INVALID(model(g, 17), "the main graph", "graph output 'y' is listed twice");
  std::string g2 = graph(node({"x"}, {"y"}, "Relu", "relu0"), in_x() + in_x(), out_y());
  EXPECT_INVALID(model(g2, 17), "graph input 'x' is declared twice");
  std::string g3 = graph(node({"x"}, {"y"}, "Relu", "relu0"), in_x(), value_info(12, "z", 1, {2, 3}));
  EXPECT_INVALID(model(g3, 17), "graph output 'z' is not produced by any node");
}

TEST(OnnxValidate, InputUsedBeforeItIsDefined) {
  std::string g = graph(node({"t"}, {"y"}, "Relu", "relu1") + node({"x"}, {"t"}, "Neg", "neg0"), in_x(), out_y());
  EXPECT_INVALID(model(g, 17), "node 0 'relu1' (Relu)", "input 0 't' is not a graph input",
                 "topological order");
}

TEST(OnnxValidate, InputAndOutputCountsAgainstTheSchema) {
  std::string many = graph(node({"x", "x"}, {"y"}, "Relu", "relu0"), in_x(), out_y());
  EXPECT_INVALID(model(many, 17), "node 0 'relu0' (Relu)", "has 2 inputs; Relu of opset 17 (version 14) takes 1");
  std::string few = graph(node({"x"}, {"y"}, "Add", "add0"), in_x(), out_y());
  EXPECT_INVALID(model(few, 17), "node 0 'add0' (Add)", "has 1 input; Add of opset 17 (version 14) takes 2");
  std::string outs = graph(node({"x"}, {"y", "z"}, "Relu", "relu0"), in_x(), out_y());
  EXPECT_INVALID(model(outs, 17), "node 0 'relu0' (Relu)", "has 2 outputs", "gives 1");
  std::string none = graph(node({}, {"y"}, "Concat", "cat0", attr_int("axis", 0)), in_x(), out_y());
  EXPECT_INVALID(model(none, 17), "node 0 'cat0' (Concat)", "has 0 inputs", "takes 1 or more");
  std::string empty = graph(node({"", "x"}, {"y"}, "Add", "add0"), in_x(), out_y());
  EXPECT_INVALID(model(empty, 17), "node 0 'add0' (Add)", "input 0 is required by Add", "but empty");
}

TEST(OnnxValidate, AttributesAgainstTheSchema) {
  std::string unknown = graph(node({"x"}, {"y"}, "Relu", "relu0", attr_int("alpha", 1)), in_x(), out_y());
  EXPECT_INVALID(model(unknown, 17), "node 0 'relu0' (Relu)", "unknown attribute 'alpha'", "has none");
  std::string mistyped = graph(node({"x"}, {"y"}, "LeakyRelu", "lr0", attr_int("alpha", 1)), in_x(), out_y());
  EXPECT_INVALID(model(mistyped, 17), "node 0 'lr0' (LeakyRelu)", "attribute 'alpha' is INT", "wants FLOAT");
  std::string missing = graph(node({"x"}, {"y"}, "Cast", "cast0"), in_x(), out_y());
  EXPECT_INVALID(model(missing, 17), "node 0 'cast0' (Cast)", "required attribute 'to'", "is missing");
  std::string twice =
      graph(node({"x"}, {"y"}, "LeakyRelu", "lr0", attr_float("alpha", 1) + attr_float("alpha", 2)), in_x(), out_y());
  EXPECT_INVALID(model(twice, 17), "node 0 'lr0' (LeakyRelu)", "attribute 'alpha' is given twice");
}

TEST(OnnxValidate, OpsetOutOfTheSupportedRange) {
  EXPECT_INVALID(relu_model(1000), "imports opset 1000 of the default domain",
                 fmt::format("sinter supports opsets 1 to {}", onnx::kMaxSupportedOpset));
  EXPECT_INVALID(relu_model(onnx::kMaxSupportedOpset + 1), "imports opset");
  EXPECT_INVALID(relu_model(0), "imports opset 0");
  // An operator newer than the model's opset.
  std::string g = graph(node({"x"}, {"y"}, "Gelu", "gelu0"), in_x(), out_y());
  EXPECT_INVALID(model(g, 17), "node 0 'gelu0' (Gelu)", "Gelu does not exist in opset 17", "starts at opset 20");
}

TEST(OnnxValidate, GraphInputsAndOutputsAreTyped) {
  std::string untyped = field_bytes(11, field_bytes(1, "x"));  // a ValueInfoProto with a name only
  EXPECT_INVALID(model(graph(node({"x"}, {"y"}, "Relu", "relu0"), untyped, out_y()), 17), "graph input 'x' has no type");
  std::string no_elem = field_bytes(11, field_bytes(1, "x") + field_bytes(2, field_bytes(1, "")));
  EXPECT_INVALID(model(graph(node({"x"}, {"y"}, "Relu", "relu0"), no_elem, out_y()), 17),
                 "graph input 'x' is a tensor without an element type");
  std::string untyped_out = field_bytes(12, field_bytes(1, "y"));
  EXPECT_INVALID(model(graph(node({"x"}, {"y"}, "Relu", "relu0"), in_x(), untyped_out), 17),
                 "graph output 'y' has no type");
}

TEST(OnnxValidate, NegativeDimIsInvalid) {
  // value_info() writes -1 as an unknown dim; a dim_value of -5 is written by hand.
  std::string shape = field_bytes(1, field_varint(1, 2)) + field_bytes(1, field_varint(1, -5));
  std::string tt = field_varint(1, 1) + field_bytes(2, shape);
  std::string x = field_bytes(11, field_bytes(1, "x") + field_bytes(2, field_bytes(1, tt)));
  EXPECT_INVALID(model(graph(node({"x"}, {"y"}, "Relu", "relu0"), x, out_y()), 17),
                 "graph input 'x' has dim 1 of -5", "a size >= 0 or a symbolic name");
}

TEST(OnnxValidate, SubgraphsSeeOuterValuesAndAreChecked) {
  // If(cond) with branches that read the outer x; the else branch defines a value twice.
  std::string then_g = graph(node({"x"}, {"t"}, "Relu", "then_relu"), "", value_info(12, "t", 1, {2, 3}));
  std::string good_else = graph(node({"x"}, {"e"}, "Neg", "else_neg"), "", value_info(12, "e", 1, {2, 3}));
  auto if_model = [&](const std::string& else_g) {
    std::string attrs = field_bytes(5, field_bytes(1, "then_branch") + field_bytes(6, then_g) + field_varint(20, 5)) +
                        field_bytes(5, field_bytes(1, "else_branch") + field_bytes(6, else_g) + field_varint(20, 5));
    return model(graph(node({"c"}, {"y"}, "If", "if0", attrs), in_x() + value_info(11, "c", 9, {}), out_y()), 17);
  };
  onnx::Model m = onnx::load_from_bytes(if_model(good_else));
  Tensor x = from_vector(std::vector<float>{-1, 2, -3, 4, -5, 6}, {2, 3});
  EXPECT_TENSOR_EQ(m({x, scalar_tensor(Scalar(false), kBool)})[0], neg(x));
  std::string bad_else =
      graph(node({"x"}, {"e"}, "Neg", "else_neg") + node({"x"}, {"e"}, "Relu", "else_relu"), "", value_info(12, "e", 1, {2, 3}));
  EXPECT_INVALID(if_model(bad_else), "node 0 'if0' (If): attribute 'else_branch': node 1 'else_relu' (Relu)",
                 "output 0 'e' is already defined");
}

}  // namespace
}  // namespace sinter
