// ai.onnx.preview.training::Gradient (on sinter's autograd) against central finite differences of the same graph
// (float64), with broadcasting, zs held fixed, values fed that differ from the graph's, under eager and the
// inductor, and the error for an operator whose derivative sinter does not have.
#include <gtest/gtest.h>

#include <cmath>

#include "sinter/compile.h"
#include "sinter/onnx.h"
#include "testing.h"
#include "frontends/onnx/onnx_writer.h"

namespace sinter {
namespace {
using namespace onnx_writer;

constexpr int kDouble = 11;
const char* kTraining = "ai.onnx.preview.training";

struct Input {
  std::string name;
  std::vector<int64_t> dims;
  bool positive = false;  // values in [0.5, 2) (for Log, Sqrt, Pow's base)
};

struct Case {
  std::string nodes;  // the forward graph, node(...) strings, and initializers (field 5)
  std::vector<Input> inputs;
  std::string y;
  std::vector<std::string> xs, zs;  // names of graph inputs
  int64_t opset = 13;
};

// The forward graph, outputting y only.
std::string forward_model(const Case& c) {
  std::string g = c.nodes;
  for (const Input& in : c.inputs) g += value_info(11, in.name, kDouble, in.dims);
  g += value_info(12, c.y, kDouble, {});
  return model(g, c.opset);
}
// The same with Gradient(xs, zs -> dy/dxs), fed the graph inputs named in xs and zs.
std::string gradient_model(const Case& c) {
  std::string g = c.nodes;
  std::vector<std::string> ins = c.xs, outs;
  ins.insert(ins.end(), c.zs.begin(), c.zs.end());
  for (const std::string& x : c.xs) outs.push_back("d_" + x);
  std::string attrs = attr_strings("xs", c.xs) + attr_string("y", c.y);
  if (!c.zs.empty()) attrs += attr_strings("zs", c.zs);
  g += domain_node(kTraining, ins, outs, "Gradient", attrs);
  for (const Input& in : c.inputs) g += value_info(11, in.name, kDouble, in.dims);
  g += value_info(12, c.y, kDouble, {});
  for (const std::string& o : outs) g += value_info(12, o, kDouble, {});
  return model(g, c.opset, {{kTraining, 1}});
}

std::vector<Tensor> inputs_of(const Case& c) {
  std::vector<Tensor> v;
  uint64_t seed = 1;
  for (const Input& in : c.inputs) {
    SymIntList sizes(in.dims.begin(), in.dims.end());
    v.push_back(in.positive ? testing::random_positive(sizes, kFloat64, 0.5, 2.0, seed++)
                            : testing::random(sizes, kFloat64, seed++));
  }
  return v;
}

// dy/d(input k) by central differences of sum(y).
Tensor finite_difference(const onnx::Model& fwd, const std::vector<Tensor>& inputs, size_t k) {
  const double eps = 1e-6;
  std::vector<double> base = inputs[k].to_vector<double>(), grad(base.size());
  for (size_t i = 0; i < base.size(); ++i) {
    double f[2];
    for (int side = 0; side < 2; ++side) {
      std::vector<double> v = base;
      v[i] += side == 0 ? eps : -eps;
      std::vector<Tensor> in = inputs;
      in[k] = from_vector(v, inputs[k].sizes());
      f[side] = sum(fwd(in)[0]).to_vector<double>()[0];
    }
    grad[i] = (f[0] - f[1]) / (2 * eps);
  }
  return from_vector(grad, inputs[k].sizes());
}

void check_against_finite_differences(const Case& c, const std::string& backend = "eager") {
  onnx::Model fwd = onnx::load_from_bytes(forward_model(c));
  onnx::Model grad = onnx::load_from_bytes(gradient_model(c));
  std::vector<Tensor> inputs = inputs_of(c);
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> run = grad;
  if (backend != "eager") run = compile(grad, {.backend = backend});
  std::vector<Tensor> outs = run(inputs);
  ASSERT_EQ(outs.size(), 1 + c.xs.size());
  EXPECT_CLOSE(outs[0], fwd(inputs)[0], 1e-12);
  for (size_t i = 0; i < c.xs.size(); ++i) {
    size_t k = 0;
    while (c.inputs[k].name != c.xs[i]) ++k;
    SCOPED_TRACE("d" + c.y + "/d" + c.xs[i]);
    EXPECT_EQ(outs[1 + i].sizes().hints(), inputs[k].sizes().hints());
    EXPECT_CLOSE(outs[1 + i], finite_difference(fwd, inputs, k), 1e-6);
  }
}

TEST(OnnxGradient, ArithmeticWithBroadcasting) {
  // y = ReduceSum((a * b + a) / (b - n) - neg(n), axes=[1], keepdims=0) with n = neg(c): b [3] and c [2, 1]
  // broadcast against a [2, 3]; b and c are positive, so b - n >= 1.
  Case c;
  c.nodes = node({"a", "b"}, {"ab"}, "Mul") + node({"ab", "a"}, {"s"}, "Add") + node({"c"}, {"n"}, "Neg") +
            node({"b", "n"}, {"bn"}, "Sub") + node({"s", "bn"}, {"q"}, "Div") + node({"n"}, {"nn"}, "Neg") +
            node({"q", "nn"}, {"r"}, "Sub") + node({"r", "axes"}, {"y"}, "ReduceSum", "", attr_int("keepdims", 0)) +
            field_bytes(5, int64_tensor("axes", {1}, {1}));
  c.inputs = {{"a", {2, 3}}, {"b", {3}, true}, {"c", {2, 1}, true}};
  c.y = "y";
  c.xs = {"a", "b", "c"};
  check_against_finite_differences(c);
}

TEST(OnnxGradient, UnaryMathAndActivations) {
  // y = ReduceMean(exp(tanh(a)) + log(p) * sqrt(p) + sigmoid(relu(a)) + abs(a) + pow(p, a) + pow(a, 2)), all axes.
  Case c;
  c.nodes = node({"a"}, {"t"}, "Tanh") + node({"t"}, {"e"}, "Exp") + node({"p"}, {"l"}, "Log") +
            node({"p"}, {"sq"}, "Sqrt") + node({"l", "sq"}, {"ls"}, "Mul") + node({"a"}, {"r"}, "Relu") +
            node({"r"}, {"sg"}, "Sigmoid") + node({"a"}, {"ab"}, "Abs") + node({"p", "a"}, {"pw"}, "Pow") +
            node({"a", "two"}, {"a2"}, "Pow") + node({"e", "ls", "sg", "ab"}, {"s4"}, "Sum") +
            node({"s4", "pw"}, {"s5"}, "Add") + node({"s5", "a2"}, {"s6"}, "Add") +
            node({"s6"}, {"y"}, "ReduceMean", "", attr_int("keepdims", 1)) + field_bytes(5, double_tensor("two", {}, {2.0}));
  c.inputs = {{"a", {3, 4}}, {"p", {3, 4}, true}};
  c.y = "y";
  c.xs = {"a", "p"};
  check_against_finite_differences(c);
}

TEST(OnnxGradient, MatMulGemmAndShapes) {
  // Batched MatMul with a broadcast operand, a 1-D MatMul, Gemm with transposes and a broadcast C, Transpose,
  // Reshape, Flatten, Squeeze/Unsqueeze, Mean, ReduceSumSquare.
  Case c;
  c.nodes = node({"a", "w"}, {"m"}, "MatMul") +                                              // [2,3,4] x [4,5]
            node({"m"}, {"mt"}, "Transpose", "", attr_ints("perm", {2, 0, 1})) +            // [5,2,3]
            node({"mt", "shape"}, {"mr"}, "Reshape") +                                        // [5,6]
            node({"mr", "g", "cb"}, {"gm"}, "Gemm", "",
                 attr_int("transB", 1) + attr_float("alpha", 0.5f) + attr_float("beta", 2.0f)) +  // [5,6]x[6,6]^T
            node({"gm", "v"}, {"mv"}, "MatMul") +                                              // [5,6] x [6] -> [5]
            node({"mv", "ax0"}, {"mu"}, "Unsqueeze") + node({"mu", "ax0"}, {"ms"}, "Squeeze") +
            node({"ms", "mv"}, {"mm"}, "Mean") + node({"a"}, {"af"}, "Flatten", "", attr_int("axis", 1)) +
            node({"af"}, {"ss"}, "ReduceSumSquare", "", attr_int("keepdims", 0)) +  // [2]
            node({"mm"}, {"t1"}, "ReduceSum", "", attr_int("keepdims", 1)) + node({"t1", "ss"}, {"y"}, "Add") +
            field_bytes(5, int64_tensor("shape", {2}, {5, 6})) + field_bytes(5, int64_tensor("ax0", {1}, {0}));
  c.inputs = {{"a", {2, 3, 4}}, {"w", {4, 5}}, {"g", {6, 6}}, {"cb", {6}}, {"v", {6}}};
  c.y = "y";
  c.xs = {"a", "w", "g", "cb", "v"};
  check_against_finite_differences(c);
}

TEST(OnnxGradient, ZsAreHeldFixedAndCompiledMatchesEager) {
  // y = Sum(MatMul(x, w) * z): z is fixed (no output), only dx and dw come out; compiled under aot_eager.
  Case c;
  c.nodes = node({"x", "w"}, {"h"}, "MatMul") + node({"h", "z"}, {"hz"}, "Mul") +
            node({"hz"}, {"y"}, "ReduceSum", "", attr_int("keepdims", 0));
  c.inputs = {{"x", {3, 2}}, {"w", {2, 4}}, {"z", {3, 4}}};
  c.y = "y";
  c.xs = {"x", "w"};
  c.zs = {"z"};
  check_against_finite_differences(c, "aot_eager");
}

TEST(OnnxGradient, EvaluatesAtTheValuesFed) {
  // Gradient(xs=[a], y=c) fed the value 3 while the graph's own a is 1: dc/da of c = a * a is 6.
  std::string g = node({"a", "a"}, {"c"}, "Mul") + node({"a", "k"}, {"a3"}, "Add") +
                  domain_node(kTraining, {"a3"}, {"da"}, "Gradient", attr_strings("xs", {"a"}) + attr_string("y", "c")) +
                  field_bytes(5, double_tensor("k", {}, {2.0})) + value_info(11, "a", kDouble, {}) +
                  value_info(12, "c", kDouble, {}) + value_info(12, "da", kDouble, {});
  onnx::Model m = onnx::load_from_bytes(model(g, 13, {{kTraining, 1}}));
  std::vector<Tensor> outs = m({scalar_tensor(1.0, kFloat64)});
  EXPECT_EQ(outs[0].to_vector<double>()[0], 1.0);
  EXPECT_EQ(outs[1].to_vector<double>()[0], 6.0);
}

TEST(OnnxGradient, UnconnectedXGetsZeros) {
  Case c;
  c.nodes = node({"a"}, {"y"}, "Exp");
  c.inputs = {{"a", {2}}, {"b", {3}}};
  c.y = "y";
  c.xs = {"a", "b"};
  onnx::Model m = onnx::load_from_bytes(gradient_model(c));
  std::vector<Tensor> outs = m(inputs_of(c));
  EXPECT_TENSOR_EQ(outs[2], zeros({3}, TensorOptions(kFloat64)));
}

// Operators the old rule list did not have, now differentiated through the derivative table.
TEST(OnnxGradient, SoftmaxLayerNormalizationAndTheRest) {
  Case c;
  c.nodes = node({"a"}, {"s"}, "Softmax", "", attr_int("axis", -1)) + node({"s", "w"}, {"p"}, "Mul") +
            node({"p"}, {"h"}, "Erf") + node({"h", "w"}, {"y"}, "Max");
  c.inputs = {{"a", {3, 4}}, {"w", {4}}};
  c.y = "y";
  c.xs = {"a", "w"};
  check_against_finite_differences(c);
  check_against_finite_differences(c, "inductor");
}

// Gradient runs on sinter's autograd: every operator the derivative table covers is differentiated (Floor's
// derivative is zero, as PyTorch's), and one it does not is an Error naming the op.
TEST(OnnxGradient, OperatorWithoutDerivativeIsNamed) {
  Case f;
  f.nodes = node({"a"}, {"f"}, "Floor", "floor0") + node({"f"}, {"y"}, "Exp");
  f.inputs = {{"a", {2}}};
  f.y = "y";
  f.xs = {"a"};
  onnx::Model mf = onnx::load_from_bytes(gradient_model(f));
  EXPECT_TENSOR_EQ(mf(inputs_of(f))[1], zeros({2}, TensorOptions(kFloat64)));
  Case c;
  c.nodes = node({"a"}, {"d"}, "Einsum", "diag0", attr_string("equation", "ii->i")) + node({"d"}, {"y"}, "Exp");
  c.inputs = {{"a", {2, 2}}};
  c.y = "y";
  c.xs = {"a"};
  onnx::Model m = onnx::load_from_bytes(gradient_model(c));
  EXPECT_ERROR(m(inputs_of(c)), "Gradient", "einsum", "repeated subscript");
  // Integer values computed from x (Shape) carry no derivative and are fine on the way.
  Case s;
  s.nodes = node({"a"}, {"shp"}, "Shape") + node({"shp"}, {"z"}, "Cast", "", attr_int("to", kDouble)) + node({"a", "z"}, {"y"}, "Add");
  s.inputs = {{"a", {2}}};
  s.y = "y";
  s.xs = {"a"};
  onnx::Model ms = onnx::load_from_bytes(gradient_model(s));
  EXPECT_TENSOR_EQ(ms(inputs_of(s))[1], ones({2}, TensorOptions(kFloat64)));
}

}  // namespace
}  // namespace sinter
