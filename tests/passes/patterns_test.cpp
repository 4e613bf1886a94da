// Patterns: conv2d + batch_norm (eval, frozen) folds into one conv2d that computes the same values, and the
// matmul -> scale -> [mask] -> softmax -> matmul chain becomes scaled_dot_product_attention with the same
// results; near misses stay as they are.
#include "passes/patterns.h"

#include <fmt/format.h>

#include "pass_testing.h"

namespace sinter {
namespace {

using testing::count_ops;
using testing::expect_same_results;
using testing::random;
using testing::random_inputs;

using testing::meta;

// x -> conv2d(W, b) -> batch_norm(gamma, beta, mean, var) [-> relu], with the parameters as constants.
Graph conv_bn_graph(bool functional, bool conv_bias, bool bn_affine, bool training = false, bool weight_input = false) {
  Graph g;
  Tensor x = g.add_input("x", meta({2, 3, 9, 9}));
  Tensor w = weight_input ? g.add_input("w", meta({8, 3, 3, 3})) : g.add_constant(random({8, 3, 3, 3}, kFloat32, 2), "w");
  Value b = conv_bias ? Value(g.add_constant(random({8}, kFloat32, 3), "b")) : Value();
  Value gamma = bn_affine ? Value(g.add_constant(random({8}, kFloat32, 4), "gamma")) : Value();
  Value beta = bn_affine ? Value(g.add_constant(random({8}, kFloat32, 5), "beta")) : Value();
  Tensor mean = g.add_constant(random({8}, kFloat32, 6), "mean");
  Tensor var = g.add_constant(testing::random_positive({8}, kFloat32, 0.3, 2.0, 7), "var");
  Tensor conv = g.add_op1(OpId::conv2d, {x, w, b, SymIntList{1, 1}, SymIntList{1, 1}});
  Tensor y = functional ? g.add_op(OpId::batch_norm_functional, {conv, gamma, beta, mean, var, training, 0.1, 1e-5})[0]
                        : g.add_op1(OpId::batch_norm, {conv, gamma, beta, mean, var, training, 0.1, 1e-5});
  g.set_outputs({g.add_op1(OpId::relu, {y})});
  return g;
}

TEST(Patterns, ConvBatchNormFoldsWhenFrozen) {
  for (bool functional : {false, true})
    for (bool conv_bias : {false, true})
      for (bool affine : {false, true}) {
        SCOPED_TRACE(fmt::format("functional {} conv_bias {} affine {}", functional, conv_bias, affine));
        Graph g = conv_bn_graph(functional, conv_bias, affine);
        Graph before = g.clone();
        EXPECT_TRUE(passes::apply_patterns(g, {.freeze = true}));
        verify(g);
        EXPECT_EQ(count_ops(g, OpId::conv2d), 1);
        EXPECT_EQ(count_ops(g, OpId::batch_norm) + count_ops(g, OpId::batch_norm_functional), 0) << g;
        expect_same_results(before, g, random_inputs(before), 1e-5);
        EXPECT_FALSE(passes::apply_patterns(g, {.freeze = true}));
      }
}

TEST(Patterns, ConvBatchNormStaysWithoutFreezeInTrainingOrWithInputWeights) {
  std::vector<std::pair<Graph, passes::PassContext>> cases;
  cases.emplace_back(conv_bn_graph(false, true, true), passes::PassContext{.freeze = false});
  cases.emplace_back(conv_bn_graph(true, true, true, /*training=*/true), passes::PassContext{.freeze = true});
  cases.emplace_back(conv_bn_graph(false, true, true, false, /*weight_input=*/true), passes::PassContext{.freeze = true});
  for (auto& [g, ctx] : cases) {
    std::string text = g.str();
    EXPECT_FALSE(passes::apply_patterns(g, ctx));
    EXPECT_EQ(g.str(), text);
  }
}

std::string attention_text(const std::string& transpose, const std::string& scale, bool mask, bool dropout,
                           const std::string& dtype = "f32") {
  std::string t = dtype;
  std::string text = "graph(%q: " + t + "[2, 4, 10, 16], %k: " + t + "[2, 4, 12, 16], %v: " + t +
                     "[2, 4, 12, 8], %m: " + t + "[10, 12]):\n"
                     "  %4 = " + transpose + "\n"
                     "  %5 = matmul(%q, %4)\n"
                     "  %6 = " + scale + "\n";
  std::string last = "%6";
  if (mask) text += "  %7 = add.Tensor(%6, %m)\n", last = "%7";
  text += "  %8 = softmax.int(" + last + ", -1)\n";
  last = "%8";
  if (dropout) text += "  %9 = dropout(%8, 0.1, False)\n", last = "%9";
  text += "  %10 = matmul(" + last + ", %v)\n  return (%10)\n";
  return text;
}

TEST(Patterns, AttentionChainBecomesScaledDotProductAttention) {
  for (std::string transpose : {"transpose.int(%k, -2, -1)", "transpose.int(%k, 3, 2)", "permute(%k, [0, 1, 3, 2])"})
    for (std::string scale : {"mul.Scalar(%5, 0.25)", "div.Scalar(%5, 4.0)"})
      for (bool mask : {false, true})
        for (bool dropout : {false, true}) {
          std::string text = attention_text(transpose, scale, mask, dropout);
          SCOPED_TRACE(text);
          Graph g = parse_graph(text);
          Graph before = g.clone();
          EXPECT_TRUE(passes::apply_patterns(g, {}));
          verify(g);
          EXPECT_EQ(count_ops(g, OpId::scaled_dot_product_attention), 1) << g;
          EXPECT_EQ(count_ops(g, OpId::matmul) + count_ops(g, OpId::softmax_int), 0) << g;
          EXPECT_EQ(g.num_ops(), 1) << g;
          expect_same_results(before, g, random_inputs(before), 1e-5);
        }
  // mask + scores (the other order) and a batch-broadcast mask
  {
    std::string text = attention_text("transpose.int(%k, -2, -1)", "mul.Scalar(%5, 0.25)", true, false);
    text.replace(text.find("add.Tensor(%6, %m)"), 18, "add.Tensor(%m, %6)");
    Graph g = parse_graph(text);
    Graph before = g.clone();
    EXPECT_TRUE(passes::apply_patterns(g, {}));
    EXPECT_EQ(g.num_ops(), 1) << g;
    expect_same_results(before, g, random_inputs(before), 1e-5);
  }
  Graph g = parse_graph(attention_text("transpose.int(%k, -2, -1)", "mul.Scalar(%5, 0.25)", true, false, "bf16"));
  Graph before = g.clone();
  EXPECT_TRUE(passes::apply_patterns(g, {}));
  expect_same_results(before, g, random_inputs(before), 1e-2);
}

TEST(Patterns, AttentionWithSymbolicSequenceLength) {
  Graph g = parse_graph(
      "graph(%q: f32[2, s0, 16], %k: f32[2, s0, 16], %v: f32[2, s0, 8]):\n"
      "  %3 = transpose.int(%k, -2, -1)\n"
      "  %4 = matmul(%q, %3)\n"
      "  %5 = div.Scalar(%4, 4.0)\n"
      "  %6 = softmax.int(%5, -1)\n"
      "  %7 = matmul(%6, %v)\n"
      "  return (%7)\n");
  Graph before = g.clone();
  EXPECT_TRUE(passes::apply_patterns(g, {}));
  verify(g);
  EXPECT_EQ(g.num_ops(), 1) << g;
  for (int64_t s : {3, 11})
    expect_same_results(before, g, {random({2, s, 16}, kFloat32, 1), random({2, s, 16}, kFloat32, 2),
                                     random({2, s, 8}, kFloat32, 3)}, 1e-5);
}

// As an exported model writes attention: k^T as one permute of the [B, T, H, D] projection (not a transpose of a
// k), the scale a division by a 0-dim constant, the mask a constant. The rewrite makes k's permute itself.
// A scale that is an input, or a constant per head, is not attention's scale: those stay.
Graph exported_attention(int scale_kind) {
  Graph g;
  Tensor q = g.add_input("q", meta({2, 4, 6, 8}));
  Tensor kp = g.add_input("kp", meta({2, 6, 4, 8}));  // [B, T, H, D]
  Tensor v = g.add_input("v", meta({2, 4, 6, 5}));
  Tensor kt = g.add_op1(OpId::permute, {kp, SymIntList{0, 2, 3, 1}});  // [B, H, D, T]
  Tensor scores = g.add_op1(OpId::matmul, {q, kt});
  Tensor scale = scale_kind == 0   ? g.add_constant(scalar_tensor(2.5), "scale")
                 : scale_kind == 1 ? g.add_input("s", meta({}))
                                   : g.add_constant(random({1, 4, 1, 1}, kFloat32, 9), "per_head");
  Tensor scaled = g.add_op1(OpId::div_Tensor, {scores, scale});
  Tensor mask = g.add_constant(random({1, 1, 6, 6}, kFloat32, 8), "mask");
  Tensor masked = g.add_op1(OpId::add_Tensor, {scaled, mask, 1});
  Tensor probs = g.add_op1(OpId::softmax_int, {masked, 3});
  g.set_outputs({g.add_op1(OpId::matmul, {probs, v})});
  return g;
}

TEST(Patterns, ExportedAttentionWithAPermutedKeyAndAConstantScale) {
  Graph g = exported_attention(0);
  Graph before = g.clone();
  EXPECT_TRUE(passes::apply_patterns(g, {}));
  verify(g);
  EXPECT_EQ(count_ops(g, OpId::scaled_dot_product_attention), 1) << g;
  EXPECT_EQ(count_ops(g, OpId::matmul) + count_ops(g, OpId::softmax_int) + count_ops(g, OpId::div_Tensor), 0) << g;
  expect_same_results(before, g, random_inputs(before), 1e-5);
  for (int kind : {1, 2}) {
    Graph other = exported_attention(kind);
    EXPECT_FALSE(passes::apply_patterns(other, {})) << kind;
    EXPECT_EQ(count_ops(other, OpId::scaled_dot_product_attention), 0) << other;
  }
}

TEST(Patterns, AttentionNearMissesStay) {
  std::vector<std::string> texts = {
      // softmax over the query dim
      "graph(%q: f32[4, 10, 16], %k: f32[4, 10, 16], %v: f32[4, 10, 8]):\n"
      "  %3 = transpose.int(%k, -2, -1)  # f32[4, 16, 10]{160, 1, 16}\n"
      "  %4 = matmul(%q, %3)  # f32[4, 10, 10]\n"
      "  %5 = softmax.int(%4, -2)  # f32[4, 10, 10]\n"
      "  %6 = matmul(%5, %v)  # f32[4, 10, 8]\n"
      "  return (%6)\n",
      // the scores are used elsewhere too
      "graph(%q: f32[4, 10, 16], %k: f32[4, 10, 16], %v: f32[4, 10, 8]):\n"
      "  %3 = transpose.int(%k, -2, -1)  # f32[4, 16, 10]{160, 1, 16}\n"
      "  %4 = matmul(%q, %3)  # f32[4, 10, 10]\n"
      "  %5 = softmax.int(%4, -1)  # f32[4, 10, 10]\n"
      "  %6 = matmul(%5, %v)  # f32[4, 10, 8]\n"
      "  return (%6, %4)\n",
      // k is not transposed (k^T is a different matrix)
      "graph(%q: f32[4, 10, 16], %k: f32[4, 16, 10], %v: f32[4, 10, 8]):\n"
      "  %3 = matmul(%q, %k)  # f32[4, 10, 10]\n"
      "  %4 = softmax.int(%3, -1)  # f32[4, 10, 10]\n"
      "  %5 = matmul(%4, %v)  # f32[4, 10, 8]\n"
      "  return (%5)\n",
      // a bool mask added as 0/1 is not attention's bool mask
      "graph(%q: f32[4, 10, 16], %k: f32[4, 10, 16], %v: f32[4, 10, 8], %m: b8[10, 10]):\n"
      "  %4 = transpose.int(%k, -2, -1)  # f32[4, 16, 10]{160, 1, 16}\n"
      "  %5 = matmul(%q, %4)  # f32[4, 10, 10]\n"
      "  %6 = add.Tensor(%5, %m)  # f32[4, 10, 10]\n"
      "  %7 = softmax.int(%6, -1)  # f32[4, 10, 10]\n"
      "  %8 = matmul(%7, %v)  # f32[4, 10, 8]\n"
      "  return (%8)\n",
  };
  for (const std::string& text : texts) {
    Graph g = parse_graph(text);
    EXPECT_FALSE(passes::apply_patterns(g, {})) << text;
    EXPECT_EQ(g.str(), text);
  }
}

}  // namespace
}  // namespace sinter
