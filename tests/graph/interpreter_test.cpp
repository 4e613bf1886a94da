// The interpreter: a graph run on real inputs gives what the same ops give eagerly; inputs are checked against
// the graph's input metas, and symbolic sizes take their values from the inputs.
#include "ops/op_table.h"
#include "sinter/graph.h"
#include "symbolic/shape_env.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

using testing::meta;

TEST(GraphInterpreter, MlpMatchesEager) {
  Graph g = parse_graph(
      "graph(%x: f32[4, 16], %w1: f32[32, 16], %b1: f32[32], %w2: f32[16, 32]):\n"
      "  %4 = linear(%x, %w1, %b1)  # f32[4, 32]\n"
      "  %5 = gelu(%4, approximate='tanh')  # f32[4, 32]\n"
      "  %6 = linear(%5, %w2)  # f32[4, 16]\n"
      "  %7 = add.Tensor(%x, %6)  # f32[4, 16]\n"
      "  %8 = sum.dim_IntList(%7, [1], True)  # f32[4, 1]\n"
      "  %9, %10 = max.dim(%7, 1)  # f32[4], i64[4]\n"
      "  return (%7, %8, %9, %10)\n");
  Tensor x = random({4, 16}, kFloat32, 1), w1 = random({32, 16}, kFloat32, 2), b1 = random({32}, kFloat32, 3);
  Tensor w2 = random({16, 32}, kFloat32, 4);
  std::vector<Tensor> out = interpret(g, {x, w1, b1, w2});
  ASSERT_EQ(out.size(), 4u);
  Tensor y = x + linear(gelu(linear(x, w1, b1), "tanh"), w2);
  EXPECT_TENSOR_EQ(out[0], y);
  EXPECT_TENSOR_EQ(out[1], sum(y, {1}, true));
  auto [values, indices] = max(y, 1);
  EXPECT_TENSOR_EQ(out[2], values);
  EXPECT_TENSOR_EQ(out[3], indices);
  EXPECT_EQ(out[3].dtype(), kInt64);
}

TEST(GraphInterpreter, ViewsSplitsAndCopies) {
  Graph g = parse_graph(
      "graph(%x: f32[8, 4]):\n"
      "  %1, %2, %3 = split.Tensor(%x, 3)  # f32[3, 4], f32[3, 4]+12, f32[2, 4]+24\n"
      "  %4 = transpose.int(%2, 0, 1)  # f32[4, 3]{1, 4}+12\n"
      "  %5 = clone(%4)  # f32[4, 3]{1, 4}\n"
      "  %6 = _to_copy(%3, dtype=f64)  # f64[2, 4]\n"
      "  %7 = cat([%1, %3])  # f32[5, 4]\n"
      "  %8 = select.int(%x, 0, -1)  # f32[4]+28\n"
      "  return (%4, %5, %6, %7, %8)\n");
  Tensor x = random({8, 4}, kFloat32, 5);
  std::vector<Tensor> out = interpret(g, {x});
  EXPECT_TENSOR_EQ(out[0], x.narrow(0, 3, 3).t());
  EXPECT_TRUE(out[0].storage() == x.storage());  // a view of the input, as in eager
  EXPECT_TENSOR_EQ(out[1], x.narrow(0, 3, 3).t());
  EXPECT_FALSE(out[1].storage() == x.storage());
  EXPECT_TENSOR_EQ(out[2], x.narrow(0, 6, 2).to(kFloat64));
  EXPECT_TENSOR_EQ(out[3], cat({x.narrow(0, 0, 3), x.narrow(0, 6, 2)}));
  EXPECT_TENSOR_EQ(out[4], x[7]);
}

TEST(GraphInterpreter, InPlaceOpsWriteTheirInputAsEagerDoes) {
  Graph g = parse_graph(
      "graph(%x: f32[2, 3]):\n"
      "  %1 = mul.Scalar(%x, 2)  # f32[2, 3]\n"
      "  %2 = add_.Scalar(%x, 1)  # f32[2, 3]\n"
      "  %3 = fill_.Scalar(%1, 0.5)  # f32[2, 3]\n"
      "  return (%2, %3)\n");
  Tensor x = random({2, 3}, kFloat32, 6);
  Tensor expected = x + 1;
  uint64_t version = x.version();
  std::vector<Tensor> out = interpret(g, {x});
  EXPECT_TENSOR_EQ(x, expected);
  EXPECT_TRUE(out[0].is_same(x));
  EXPECT_GT(x.version(), version);
  EXPECT_TENSOR_EQ(out[1], full({2, 3}, 0.5));
}

TEST(GraphInterpreter, ConstantsAndFactories) {
  Tensor w = from_vector<float>({1, 2, 3});
  Graph g = parse_graph(
      "graph(%x: f32[2, 3]):\n"
      "  %w = constant()  # f32[3]\n"
      "  %2 = mul.Tensor(%x, %w)  # f32[2, 3]\n"
      "  %3 = ones([2, 3], dtype=i64)  # i64[2, 3]\n"
      "  %4 = add.Tensor(%2, %3, alpha=3)  # f32[2, 3]\n"
      "  return (%4)\n",
      {.constants = {{"w", w}}});
  Tensor x = random({2, 3}, kFloat32, 7);
  EXPECT_TENSOR_EQ(interpret(g, {x})[0], x * w + 3);
}

TEST(GraphInterpreter, SymbolicSizesFollowTheInputs) {
  Graph g = parse_graph(
      "graph(%x: f32[s0, 6], %y: f32[s1, s0]):\n"
      "  %2 = view(%x, [2*s0, 3])  # f32[2*s0, 3]\n"
      "  %3 = slice.Tensor(%2, 0, 1, s0 + 1)  # f32[s0, 3]+3\n"
      "  %4 = sum.dim_IntList(%y, [0])  # f32[s0]\n"
      "  %5 = unsqueeze(%4, 1)  # f32[s0, 1]\n"
      "  %6 = mul.Tensor(%3, %5)  # f32[s0, 3]\n"
      "  return (%6)\n");
  for (int64_t n : {2, 5, 9}) {
    Tensor x = random({n, 6}, kFloat32, 8), y = random({3, n}, kFloat32, 9);
    Tensor expected = x.view({2 * n, 3}).slice(0, 1, n + 1) * sum(y, {0}).unsqueeze(1);
    std::vector<Tensor> out = interpret(g, {x, y});
    EXPECT_EQ(out[0].sizes().hints(), (std::vector<int64_t>{n, 3}));
    EXPECT_TENSOR_EQ(out[0], expected);
  }
}

TEST(GraphInterpreter, ChecksInputsAgainstTheGraph) {
  Graph g = parse_graph(
      "graph(%x: f32[s0, 3], %y: f32[s0], %z: i64[2*s0]):\n"
      "  %3 = neg(%x)  # f32[s0, 3]\n"
      "  return (%3)\n");
  Tensor x = random({4, 3}), y = random({4}), z = zeros({8}, TensorOptions(kInt64));
  interpret(g, {x, y, z});
  EXPECT_ERROR(interpret(g, {x, y}), "interpret: the graph takes 3 inputs, got 2");
  EXPECT_ERROR(interpret(g, {x.to(kFloat64), y, z}), "input 'x' (#0) must be float32, got float64");
  EXPECT_ERROR(interpret(g, {random({4, 3, 1}), y, z}), "input 'x' (#0) must have 2 dims (f32[s0, 3]), got 3 dims");
  EXPECT_ERROR(interpret(g, {random({4, 2}), y, z}), "input 'x' (#0) dim 1 must be 3, got 2");
  EXPECT_ERROR(interpret(g, {x, random({5}), z}), "input 'y' (#1) dim 0 is s0, which is 4 (from input 'x' dim 0), but got 5");
  EXPECT_ERROR(interpret(g, {x, y, zeros({7}, TensorOptions(kInt64))}), "input 'z' (#2) dim 0 is 2*s0 = 8, but got 7");
  EXPECT_ERROR(interpret(g, {Tensor(), y, z}), "input 'x' (#0) is an undefined tensor");
}

TEST(GraphInterpreter, ManyUsesOfOneValueSurviveUntilTheLast) {
  // A value read by the first and the last op must outlive everything between (and unused values are dropped).
  Graph g;
  Tensor x = g.add_input("x", meta({5}));
  Tensor a = g.add_op1(OpId::exp, {x});
  Tensor cur = g.add_op1(OpId::mul_Tensor, {a, x});
  for (int i = 0; i < 6; ++i) {
    g.add_op1(OpId::neg, {cur});  // unused
    cur = g.add_op1(OpId::add_Tensor, {cur, x});
  }
  Tensor last = g.add_op1(OpId::sub_Tensor, {cur, a});
  g.set_outputs({last, a});
  Tensor xv = random({5}, kFloat32, 10);
  std::vector<Tensor> out = interpret(g, {xv});
  Tensor expected = exp(xv) * xv;
  for (int i = 0; i < 6; ++i) expected = expected + xv;
  EXPECT_CLOSE(out[0], expected - exp(xv));
  EXPECT_TENSOR_EQ(out[1], exp(xv));
}

TEST(GraphInterpreter, ReturnsInputsAndRepeatedValues) {
  Graph g = parse_graph("graph(%x: f32[2]):\n  %1 = relu(%x)  # f32[2]\n  return (%x, %1, %1)\n");
  Tensor x = random({2});
  std::vector<Tensor> out = interpret(g, {x});
  EXPECT_TRUE(out[0].is_same(x));
  EXPECT_TRUE(out[1].is_same(out[2]));
  EXPECT_TENSOR_EQ(out[1], relu(x));
}

}  // namespace
}  // namespace sinter

namespace sinter {
namespace {

// Concrete recorded metas let the interpreter allocate outputs itself and run the kernel without the shape
// rule; inputs with other layouts than recorded take the full eager path, so the output layout is eager's.
TEST(GraphInterpreter, ReplaysRecordedMetasOnlyForInputsAsRecorded) {
  Graph g = parse_graph(
      "graph(%x: f32[3, 4], %y: f32[3, 4]):\n"
      "  %2 = mul.Tensor(%x, %y)  # f32[3, 4]\n"
      "  %3 = exp(%2)  # f32[3, 4]\n"
      "  return (%3,)\n");
  Tensor x = random({3, 4}, kFloat32, 1), y = random({3, 4}, kFloat32, 2);
  Tensor out = interpret(g, {x, y})[0];
  EXPECT_TENSOR_EQ(out, exp(x * y));
  EXPECT_EQ(out.strides().hints(), (std::vector<int64_t>{4, 1}));
  // Transposed inputs: eager gives a column-major result; so must the interpreter.
  Tensor xt = random({4, 3}, kFloat32, 3).t(), yt = random({4, 3}, kFloat32, 4).t();
  Tensor eager = exp(xt * yt);
  Tensor got = interpret(g, {xt, yt})[0];
  EXPECT_TENSOR_EQ(got, eager);
  EXPECT_EQ(got.strides().hints(), eager.strides().hints());
  EXPECT_EQ(got.strides().hints(), (std::vector<int64_t>{1, 3}));
}

TEST(GraphInterpreter, KernelErrorsNameTheOpWhenReplaying) {
  Graph g = parse_graph(
      "graph(%x: i64[3], %y: i64[3]):\n"
      "  %2 = div.Tensor_mode(%x, %y, rounding_mode='floor')  # i64[3]\n"
      "  return (%2,)\n");
  Tensor x = from_vector(std::vector<int64_t>{1, 2, 3}, {3}), y = from_vector(std::vector<int64_t>{1, 0, 1}, {3});
  EXPECT_ERROR(interpret(g, {x, y}), "ZeroDivisionError", "div");
}

}  // namespace
}  // namespace sinter
