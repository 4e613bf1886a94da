// Decompositions: every composite op in the table is gone after the pass, and the graph computes what it
// computed before (interpret before vs after on random inputs: float32 within 1e-5, bfloat16 within 1e-2),
// with concrete and symbolic sizes. Externs and forms that are not decomposed stay as they are.
#include "passes/decompose.h"

#include <set>

#include "pass_testing.h"

namespace sinter {
namespace {

using testing::count_ops;
using testing::expect_same_results;
using testing::random_inputs;

struct Case {
  std::string text;     // the graph
  std::string op;       // the op that must be gone
  double rtol = 1e-5;
  std::vector<Tensor> inputs = {};  // random when empty
};

// What decompositions may emit: the primitives the lowering handles natively.
bool is_primitive(const Node& n) {
  static const std::set<std::string> names = {
      "abs", "neg", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "isinf",
      "add.Tensor", "add.Scalar", "sub.Tensor", "sub.Scalar", "rsub.Scalar", "mul.Tensor", "mul.Scalar",
      "div.Tensor", "div.Scalar", "gt.Scalar", "lt.Scalar", "le.Scalar", "where.self", "where.ScalarSelf",
      "clamp", "_to_copy", "clone", "sum", "sum.dim_IntList", "mean", "mean.dim", "amax", "view", "unsqueeze",
      "squeeze.dims", "expand", "full"};
  return names.count(std::string(n.op_name())) > 0;
}

// parse -> decompose -> verify; the op is gone, only primitives were added, results match.
void check(const Case& c) {
  SCOPED_TRACE(c.text);
  Graph g = parse_graph(c.text);
  Graph before = g.clone();
  EXPECT_TRUE(passes::decompose(g));
  verify(g);
  EXPECT_EQ(count_ops(g, op_id(c.op)), 0) << g;
  for (OpId op : passes::decomposed_ops())
    if (op != OpId::dropout && op != OpId::batch_norm && op != OpId::batch_norm_functional && op != OpId::conv2d)
      EXPECT_EQ(count_ops(g, op), 0) << op_name(op) << " left in\n" << g;
  for (const Node& n : g.nodes())
    if (n.is_op() && !n.is_op(op_id(c.op))) EXPECT_TRUE(is_primitive(n)) << n.op_name() << " in\n" << g;
  expect_same_results(before, g, c.inputs.empty() ? random_inputs(before) : c.inputs, c.rtol);
}

std::string unary(const std::string& dtype, const std::string& call) {
  return "graph(%x: " + dtype + "[6, 37]):\n  %1 = " + call + "\n  return (%1)\n";
}

TEST(Decompose, ActivationsFloat32AndBFloat16) {
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"gelu", "gelu(%x)"},
      {"gelu", "gelu(%x, approximate='tanh')"},
      {"silu", "silu(%x)"},
      {"mish", "mish(%x)"},
      {"softplus", "softplus(%x)"},
      {"softplus", "softplus(%x, 2, 1)"},
      {"hardsigmoid", "hardsigmoid(%x)"},
      {"hardswish", "hardswish(%x)"},
      {"leaky_relu", "leaky_relu(%x, 0.2)"},
      {"leaky_relu", "leaky_relu(%x)"},
      {"elu", "elu(%x)"},
      {"elu", "elu(%x, 1.5, 2, 0.5)"},
      {"celu", "celu(%x, 0.7)"},
      {"selu", "selu(%x)"},
      {"hardtanh", "hardtanh(%x)"},
      {"hardtanh", "hardtanh(%x, -0.5, 0.7)"},
      {"square", "square(%x)"},
  };
  for (const auto& [op, call] : calls) {
    check({unary("f32", call), op});
    check({unary("bf16", call), op, 1e-2});
    check({unary("f16", call), op, 1e-2});
  }
}

TEST(Decompose, ActivationsOnLargeAndSpecialValues) {
  // Overflowing exp inside softplus/mish, infinities and NaN must behave as the eager kernels.
  Tensor x = from_vector<float>({-100.f, -20.f, -1.f, 0.f, 1.f, 20.f, 100.f, INFINITY, -INFINITY, NAN}, {10});
  for (std::string call : {"gelu(%x)", "silu(%x)", "mish(%x)", "softplus(%x)", "elu(%x)", "hardswish(%x)",
                           "hardsigmoid(%x)", "leaky_relu(%x)", "hardtanh(%x)"}) {
    std::string text = "graph(%x: f32[10]):\n  %1 = " + call + "\n  return (%1)\n";
    Graph g = parse_graph(text);
    Graph before = g.clone();
    passes::decompose(g);
    Tensor want = interpret(before, {x})[0], got = interpret(g, {x})[0];
    std::vector<float> w = want.to_vector<float>(), o = got.to_vector<float>();
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i])) EXPECT_TRUE(std::isnan(o[i])) << call << " at " << i;
      else if (std::isinf(w[i])) EXPECT_EQ(o[i], w[i]) << call << " at " << i;
      else EXPECT_NEAR(o[i], w[i], 1e-5 * std::max(1.0f, std::fabs(w[i]))) << call << " at " << i;
    }
  }
}

TEST(Decompose, HardtanhAndSquareKeepIntegerDtypes) {
  Tensor xi = from_vector<int64_t>({-5, -1, 0, 1, 7}, {5});
  for (std::string call : {"hardtanh(%x, -2, 3)", "square(%x)"}) {
    std::string text = "graph(%x: i64[5]):\n  %1 = " + call + "\n  return (%1)\n";
    check({text, call.substr(0, call.find('(')), 0, {xi}});
  }
  // square of bool counts as int64, as PyTorch
  check({"graph(%x: b8[7]):\n  %1 = square(%x)\n  return (%1)\n", "square", 0});
}

TEST(Decompose, Logit) {
  Tensor p = testing::random_positive({6, 37}, kFloat32, 0.02, 0.98, 3);
  check({unary("f32", "logit(%x)"), "logit", 1e-5, {p}});
  check({unary("f32", "logit(%x, 0.1)"), "logit", 1e-5, {p}});
  check({unary("bf16", "logit(%x, 0.1)"), "logit", 1e-2, {p.to(kBFloat16)}});
}

TEST(Decompose, CompositePointwise) {
  std::string three = "graph(%a: f32[4, 9], %b: f32[4, 9], %c: f32[9]):\n";
  Tensor a = testing::random({4, 9}, kFloat32, 1), b = testing::random({4, 9}, kFloat32, 2);
  Tensor c = testing::random_positive({9}, kFloat32, 0.5, 2.0, 3);
  check({three + "  %3 = addcmul(%a, %b, %c, value=0.5)\n  return (%3)\n", "addcmul", 1e-5, {a, b, c}});
  check({three + "  %3 = addcmul(%a, %b, %c)\n  return (%3)\n", "addcmul", 1e-5, {a, b, c}});
  check({three + "  %3 = addcdiv(%a, %b, %c, value=-2)\n  return (%3)\n", "addcdiv", 1e-5, {a, b, c}});
  check({three + "  %3 = lerp.Scalar(%a, %b, 0.3)\n  return (%3)\n", "lerp.Scalar", 1e-5, {a, b, c}});
  check({three + "  %3 = lerp.Scalar(%a, %b, 0.8)\n  return (%3)\n", "lerp.Scalar", 1e-5, {a, b, c}});
  Tensor w = testing::random({9}, kFloat32, 4);
  check({three + "  %3 = lerp.Tensor(%a, %b, %c)\n  return (%3)\n", "lerp.Tensor", 1e-5, {a, b, w}});
  // Mixed dtypes: bfloat16 operands of a float32 result are computed in float32 once (no bf16 rounding).
  std::string mixed = "graph(%a: f32[4, 9], %b: bf16[4, 9], %c: bf16[9]):\n";
  check({mixed + "  %3 = addcmul(%a, %b, %c, value=0.5)\n  return (%3)\n", "addcmul", 1e-5,
         {a, b.to(kBFloat16), c.to(kBFloat16)}});
  std::string low = "graph(%a: bf16[4, 9], %b: bf16[4, 9], %c: bf16[9]):\n";
  check({low + "  %3 = addcdiv(%a, %b, %c)\n  return (%3)\n", "addcdiv", 1e-2,
         {a.to(kBFloat16), b.to(kBFloat16), c.to(kBFloat16)}});
}

TEST(Decompose, DropoutInEvalIsACopyAndTrainingDropoutStays) {
  check({unary("f32", "dropout(%x, 0.5, False)"), "dropout", 0});
  check({unary("f32", "dropout(%x, 0.0, True)"), "dropout", 0});
  Graph g = parse_graph(unary("f32", "dropout(%x, 0.5, True)"));
  std::string text = g.str();
  EXPECT_FALSE(passes::decompose(g));
  EXPECT_EQ(g.str(), text);
}

TEST(Decompose, SoftmaxFamily) {
  for (std::string dt : {"f32", "bf16"}) {
    double tol = dt == "f32" ? 1e-5 : 1e-2;
    std::string head = "graph(%x: " + dt + "[5, 7, 33]):\n";
    for (std::string call : {"softmax.int(%x, -1)", "softmax.int(%x, 1)", "softmax.int(%x, 0)",
                             "log_softmax.int(%x, -1)", "log_softmax.int(%x, 1)", "logsumexp(%x, [2])",
                             "logsumexp(%x, [0, 2], True)", "logsumexp(%x, [-2])"})
      check({head + "  %1 = " + call + "\n  return (%1)\n", call.substr(0, call.find('(')), tol});
  }
  // A dtype argument casts the input first; bfloat16 in, float32 out.
  check({"graph(%x: bf16[5, 33]):\n  %1 = softmax.int(%x, 1, f32)\n  return (%1)\n", "softmax.int"});
  check({"graph(%x: f32[5, 33]):\n  %1 = log_softmax.int(%x, 1, f64)\n  return (%1)\n", "log_softmax.int", 1e-12});
  // logsumexp: integers give float32; rows of -inf give -inf and rows with +inf give +inf.
  check({"graph(%x: i64[4, 6]):\n  %1 = logsumexp(%x, [1])\n  return (%1)\n", "logsumexp"});
  Tensor inf = from_vector<float>({-INFINITY, -INFINITY, 1.f, INFINITY, 0.f, 2.f}, {3, 2});
  Graph g = parse_graph("graph(%x: f32[3, 2]):\n  %1 = logsumexp(%x, [1])\n  return (%1)\n");
  Graph before = g.clone();
  passes::decompose(g);
  EXPECT_TENSOR_EQ(interpret(g, {inf})[0], interpret(before, {inf})[0]);
}

// var and std are left for their eager kernel (src/passes/decompositions/reductions.cpp says why): a fused
// two-pass form recomputes its input in each pass, which FMA contraction rounds differently.
TEST(Decompose, VarianceAndStdAreLeftForTheirKernel) {
  for (std::string call : {"var.correction(%x, [1], correction=0)", "var.correction(%x)",
                           "std.correction(%x, [-1], keepdim=True)"}) {
    Graph g = parse_graph("graph(%x: f32[6, 40]):\n  %1 = " + call + "\n  return (%1)\n");
    std::string text = g.str();
    EXPECT_FALSE(passes::decompose(g)) << call;
    EXPECT_EQ(g.str(), text);
  }
}

TEST(Decompose, MseLoss) {
  std::string head = "graph(%x: f32[8, 5], %t: f32[5]):\n";
  for (std::string red : {"'none'", "'mean'", "'sum'"})
    check({head + "  %2 = mse_loss(%x, %t, " + red + ")\n  return (%2)\n", "mse_loss"});
  check({"graph(%x: bf16[8, 5], %t: bf16[8, 5]):\n  %2 = mse_loss(%x, %t)\n  return (%2)\n", "mse_loss", 1e-2});
}

TEST(Decompose, LayerNormAndRmsNorm) {
  for (std::string dt : {"f32", "bf16"}) {
    double tol = dt == "f32" ? 1e-5 : 1e-2;
    std::string head = "graph(%x: " + dt + "[4, 6, 32], %w: " + dt + "[32], %b: " + dt + "[32], %w2: " + dt +
                       "[6, 32]):\n";
    for (std::string call : {"layer_norm(%x, [32], %w, %b)", "layer_norm(%x, [32])", "layer_norm(%x, [32], %w)",
                             "layer_norm(%x, [6, 32], %w2, None, 0.001)", "rms_norm(%x, [32], %w)",
                             "rms_norm(%x, [32])", "rms_norm(%x, [6, 32], %w2, 1e-06)"})
      check({head + "  %4 = " + call + "\n  return (%4)\n", call.substr(0, call.find('(')), tol});
  }
  // rms_norm with a float32 weight on bfloat16 input: normalised, rounded to bf16, then scaled in float32
  check({"graph(%x: bf16[4, 32], %w: f32[32]):\n  %2 = rms_norm(%x, [32], %w)\n  return (%2)\n", "rms_norm"});
}

TEST(Decompose, NonContiguousInputKeepsADenseResult) {
  // The composite op made a dense output, and the view after it relies on that.
  std::string text =
      "graph(%x: f32[8, 16]{1, 8}):\n"
      "  %1 = layer_norm(%x, [16])  # f32[8, 16]\n"
      "  %2 = view(%1, [128])  # f32[128]\n"
      "  %3 = softmax.int(%x, 0)  # f32[8, 16]\n"
      "  %4 = view(%3, [128])  # f32[128]\n"
      "  return (%2, %4)\n";
  Tensor x = testing::non_contiguous(testing::random({8, 16}, kFloat32, 9));
  check({text, "layer_norm", 1e-5, {x}});
}

TEST(Decompose, GroupNorm) {
  for (std::string dt : {"f32", "bf16"}) {
    double tol = dt == "f32" ? 1e-5 : 1e-2;
    std::string head = "graph(%x: " + dt + "[2, 6, 5, 4], %w: " + dt + "[6], %b: " + dt + "[6]):\n";
    for (std::string call : {"group_norm(%x, 3, %w, %b)", "group_norm(%x, 2)", "group_norm(%x, 6, %w, None, 0.001)"})
      check({head + "  %3 = " + call + "\n  return (%3)\n", "group_norm", tol});
  }
  check({"graph(%x: f32[3, 8]):\n  %1 = group_norm(%x, 4)\n  return (%1)\n", "group_norm"});
}

TEST(Decompose, BatchNormInEvalUsesRunningStats) {
  std::string head = "graph(%x: f32[4, 6, 5, 3], %w: f32[6], %b: f32[6], %m: f32[6], %v: f32[6]):\n";
  Tensor x = testing::random({4, 6, 5, 3}, kFloat32, 1), w = testing::random({6}, kFloat32, 2);
  Tensor b = testing::random({6}, kFloat32, 3), m = testing::random({6}, kFloat32, 4);
  Tensor v = testing::random_positive({6}, kFloat32, 0.5, 2.0, 5);
  check({head + "  %5 = batch_norm(%x, %w, %b, %m, %v, False, 0.1, 1e-05)\n  return (%5)\n", "batch_norm", 1e-5,
         {x, w, b, m, v}});
  check({head + "  %5 = batch_norm(%x, None, None, %m, %v, False, 0.1, 1e-05)\n  return (%5)\n", "batch_norm",
         1e-5, {x, w, b, m, v}});
  check({head + "  %5, %6, %7 = batch_norm_functional(%x, %w, %b, %m, %v, False, 0.1, 1e-05)\n  return (%5, %7)\n",
         "batch_norm_functional", 1e-5, {x, w, b, m, v}});
  // bfloat16 input with float32 statistics (mixed, as PyTorch allows)
  check({"graph(%x: bf16[4, 6], %m: f32[6], %v: f32[6]):\n"
         "  %3 = batch_norm(%x, None, None, %m, %v, False, 0.1, 1e-05)\n  return (%3)\n",
         "batch_norm", 1e-2, {x.reshape({4, 6 * 15}).narrow(1, 0, 6).to(kBFloat16), m, v}});
}

// Training: the batch statistics normalise and the running stats are updated (unbiased variance), as the
// eager kernel; a symbolic count per channel would make the unbiasing factor symbolic, so that form stays.
TEST(Decompose, BatchNormInTraining) {
  check({"graph(%x: f32[4, 6, 5], %w: f32[6], %b: f32[6], %m: f32[6], %v: f32[6]):\n"
         "  %5, %6, %7 = batch_norm_functional(%x, %w, %b, %m, %v, True, 0.1, 1e-05)\n  return (%5, %6, %7)\n",
         "batch_norm_functional"});
  check({"graph(%x: bf16[4, 6], %m: f32[6], %v: f32[6]):\n"
         "  %3, %4, %5 = batch_norm_functional(%x, None, None, %m, %v, True, 0.1, 1e-05)\n  return (%3, %4, %5)\n",
         "batch_norm_functional", 1e-2});
  check({"graph(%x: f32[4, 6, 3]):\n  %1 = batch_norm(%x, None, None, None, None, True, 0.1, 1e-05)\n"
         "  return (%1)\n",
         "batch_norm"});
  Graph g = parse_graph(
      "graph(%x: f32[s0, 6], %m: f32[6], %v: f32[6]):\n"
      "  %3, %4, %5 = batch_norm_functional(%x, None, None, %m, %v, True, 0.1, 1e-05)\n"
      "  return (%3, %4, %5)\n");
  std::string text = g.str();
  EXPECT_FALSE(passes::decompose(g));
  EXPECT_EQ(g.str(), text);
}

TEST(Decompose, SymbolicSizes) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"graph(%x: f32[s0, 48]):\n  %1 = softmax.int(%x, -1)\n  return (%1)\n", "softmax.int"},
      {"graph(%x: f32[s0, s1]):\n  %1 = log_softmax.int(%x, 1)\n  return (%1)\n", "log_softmax.int"},
      {"graph(%x: f32[s0, s1]):\n  %1 = logsumexp(%x, [1])\n  return (%1)\n", "logsumexp"},
      {"graph(%x: f32[s0, s1], %w: f32[s1]):\n  %2 = layer_norm(%x, [s1], %w)\n  return (%2)\n", "layer_norm"},
      {"graph(%x: f32[s0, s1]):\n  %1 = rms_norm(%x, [s1])\n  return (%1)\n", "rms_norm"},
      {"graph(%x: f32[s0, 6, s1], %w: f32[6]):\n  %2 = group_norm(%x, 3, %w)\n  return (%2)\n", "group_norm"},
      {"graph(%x: f32[s0, s1], %t: f32[s0, s1]):\n  %2 = mse_loss(%x, %t)\n  return (%2)\n", "mse_loss"},
      {"graph(%x: f32[s0, 7]):\n  %1 = gelu(%x)\n  return (%1)\n", "gelu"},
  };
  for (const auto& [text, op] : cases) {
    SCOPED_TRACE(text);
    Graph g = parse_graph(text);
    Graph before = g.clone();
    ASSERT_TRUE(passes::decompose(g));
    verify(g);
    EXPECT_EQ(count_ops(g, op_id(op)), 0) << g;
    // No size of the example was baked in: other sizes (a value per symbol) give the same results too.
    for (int64_t s : {5, 9}) {
      std::vector<Tensor> inputs;
      int seed = 1;
      for (const Node* n : before.input_nodes()) {
        SymIntList sizes;
        for (const SymInt& d : n->meta().sizes)
          sizes.push_back(!d.is_symbolic() ? d : SymInt(d.str() == "s0" ? s : 2 * s + 1));
        inputs.push_back(testing::random(sizes, kFloat32, seed++));
      }
      expect_same_results(before, g, inputs, 1e-5);
    }
  }
}

// A conv2d of a 1x1 image by a 1x1 kernel (a squeeze-and-excitation block's fully connected layers) is a linear
// layer over views; other convs stay library calls.
TEST(Decompose, ConvOfAOneByOneImageIsALinearLayer) {
  for (const char* text : {"graph(%x: f32[3, 8, 1, 1], %w: f32[5, 8, 1, 1], %b: f32[5]):\n"
                           "  %3 = conv2d(%x, %w, %b)\n  return (%3)\n",
                           "graph(%x: f32[3, 8, 1, 1], %w: f32[5, 8, 1, 1]):\n"
                           "  %2 = conv2d(%x, %w, None, [2, 2])\n  return (%2)\n"}) {
    SCOPED_TRACE(text);
    Graph g = parse_graph(text);
    Graph before = g.clone();
    EXPECT_TRUE(passes::decompose(g));
    verify(g);
    EXPECT_EQ(count_ops(g, OpId::conv2d), 0) << g;
    EXPECT_EQ(count_ops(g, OpId::linear), 1) << g;
    expect_same_results(before, g, random_inputs(before), 1e-5);
  }
  for (const char* text : {"graph(%x: f32[3, 8, 2, 1], %w: f32[5, 8, 1, 1]):\n  %2 = conv2d(%x, %w)\n  return (%2)\n",
                           "graph(%x: f32[3, 8, 1, 1], %w: f32[5, 8, 1, 1]):\n"
                           "  %2 = conv2d(%x, %w, None, [1, 1], [1, 1])\n  return (%2)\n",
                           "graph(%x: f32[3, 8, 1, 1], %w: f32[4, 4, 1, 1]):\n"
                           "  %2 = conv2d(%x, %w, None, [1, 1], [0, 0], [1, 1], 2)\n  return (%2)\n",
                           "graph(%x: f32[s0, 8, 1, 1], %w: f32[5, 8, 1, 1]):\n  %2 = conv2d(%x, %w)\n  return (%2)\n"}) {
    SCOPED_TRACE(text);
    Graph g = parse_graph(text);
    EXPECT_FALSE(passes::decompose(g));
    EXPECT_EQ(count_ops(g, OpId::conv2d), 1);
  }
}

TEST(Decompose, ExternsAreNeverDecomposed) {
  Graph g = parse_graph(
      "graph(%x: f32[4, 8], %w: f32[16, 8], %b: f32[16], %m: f32[8, 16], %q: f32[2, 4, 8], %i: f32[1, 3, 8, 8], "
      "%k: f32[4, 3, 3, 3]):\n"
      "  %7 = linear(%x, %w, %b)  # f32[4, 16]\n"
      "  %8 = addmm(%b, %x, %m)  # f32[4, 16]\n"
      "  %9 = mm(%x, %m)  # f32[4, 16]\n"
      "  %10 = matmul(%x, %m)  # f32[4, 16]\n"
      "  %11 = transpose.int(%q, 1, 2)  # f32[2, 8, 4]{32, 1, 8}\n"
      "  %12 = bmm(%q, %11)  # f32[2, 4, 4]\n"
      "  %13 = conv2d(%i, %k)  # f32[1, 4, 6, 6]\n"
      "  %14 = scaled_dot_product_attention(%q, %q, %q)  # f32[2, 4, 8]\n"
      "  return (%7, %8, %9, %10, %12, %13, %14)\n");
  std::string text = g.str();
  EXPECT_FALSE(passes::decompose(g));
  EXPECT_EQ(g.str(), text);
}

}  // namespace
}  // namespace sinter
