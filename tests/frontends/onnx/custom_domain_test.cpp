// Nodes of a custom domain run the registered custom op of the same name (sinter/library.h): domain "testlib",
// op_type "rms_gate" is testlib::rms_gate, its inputs the op's tensors and its attributes the other arguments.
#include <gtest/gtest.h>

#include "ops/custom_ops_testing.h"
#include "frontends/onnx/onnx_writer.h"
#include "sinter/compile.h"
#include "sinter/onnx.h"
#include "testing.h"

namespace sinter {
namespace {
using namespace onnx_writer;

constexpr int kFloat = 1;

// y = Relu(testlib::rms_gate(x, w, eps)) with w an initializer.
std::string gate_model(const std::string& attrs) {
  std::vector<float> w = {0.5f, -1.0f, 2.0f, 1.5f};
  std::string g = domain_node("testlib", {"x", "w"}, {"g"}, "rms_gate", attrs) + node({"g"}, {"y"}, "Relu") +
                  field_bytes(5, float_tensor("w", {4}, w)) + value_info(11, "x", kFloat, {3, 4}) +
                  value_info(12, "y", kFloat, {3, 4});
  return model(g, 17, {{"testlib", 1}});
}

TEST(OnnxCustomDomain, NodeRunsTheRegisteredOp) {
  testing::define_test_ops();
  onnx::Model m = onnx::load_from_bytes(gate_model(attr_float("eps", 0.25f)));
  EXPECT_EQ(m.op_counts().at("testlib::rms_gate"), 1);
  Tensor x = testing::random({3, 4});
  Tensor w = from_vector(std::vector<float>{0.5f, -1.0f, 2.0f, 1.5f}, {4});
  Tensor want = relu(testing::rms_gate_reference(x, w, 0.25));
  int before = testing::rms_gate_kernel_calls;
  EXPECT_CLOSE(m({x})[0], want);
  EXPECT_EQ(testing::rms_gate_kernel_calls, before + 1);
  // Compiled, and as an imported graph that names the op.
  auto fast = compile(m, {.backend = "inductor"});
  EXPECT_CLOSE(fast(std::vector<Tensor>{x})[0], want);
  std::string text = print_graph(m.to_graph());
  EXPECT_NE(text.find("testlib::rms_gate("), std::string::npos) << text;
}

TEST(OnnxCustomDomain, MissingAttributesTakeTheSchemaDefaults) {
  testing::define_test_ops();
  onnx::Model m = onnx::load_from_bytes(gate_model(""));
  Tensor x = testing::random({3, 4});
  Tensor w = from_vector(std::vector<float>{0.5f, -1.0f, 2.0f, 1.5f}, {4});
  EXPECT_CLOSE(m({x})[0], relu(testing::rms_gate_reference(x, w, 1e-6)));
}

TEST(OnnxCustomDomain, BadNodesAreClearErrors) {
  testing::define_test_ops();
  onnx::Model unknown_attr = onnx::load_from_bytes(gate_model(attr_float("epsilon", 0.1f)));
  EXPECT_ERROR(unknown_attr({testing::random({3, 4})}), "attribute 'epsilon'", "testlib::rms_gate");
  onnx::Model wrong_type = onnx::load_from_bytes(gate_model(attr_string("eps", "small")));
  EXPECT_ERROR(wrong_type({testing::random({3, 4})}), "attribute 'eps' (STRING)", "argument 'eps' of type float");
  // An op nobody registered is reported when the model loads, as any unsupported operator.
  std::string g = domain_node("testlib", {"x"}, {"y"}, "not_registered") + value_info(11, "x", kFloat, {2}) +
                  value_info(12, "y", kFloat, {2});
  EXPECT_ERROR(onnx::load_from_bytes(model(g, 17, {{"testlib", 1}})), "unsupported ONNX operators",
               "testlib::not_registered");
}

}  // namespace
}  // namespace sinter
