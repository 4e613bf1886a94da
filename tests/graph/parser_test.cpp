// The graph parser: printed text reads back to the same graph (round trip), hand-written text with any value
// names works, and mistakes in the text are reported with their line and column.
#include "ops/op_table.h"
#include "sinter/graph.h"
#include "symbolic/shape_env.h"
#include "testing.h"

namespace sinter {
namespace {

// Parses, checks the graph is valid and that printing gives the text back.
void expect_round_trip(const std::string& text) {
  Graph g = parse_graph(text);
  verify(g);
  EXPECT_EQ(g.str(), text);
  EXPECT_EQ(parse_graph(g.str()).str(), text);
}

TEST(GraphParser, RoundTripsAnMlp) {
  expect_round_trip(
      "graph(%x: f32[4, 768], %fc1.weight: f32[3072, 768]):\n"
      "  %2 = linear(%x, %fc1.weight)  # f32[4, 3072]\n"
      "  %3 = gelu(%2, approximate='tanh')  # f32[4, 3072]\n"
      "  %4, %5 = max.dim(%3, 1)  # f32[4], i64[4]\n"
      "  return (%3, %4)\n");
}

TEST(GraphParser, RoundTripsSymbolicSizes) {
  std::string text =
      "graph(%x: f32[s0, 768], %w: f32[3072, 768], %y: f32[s1, s0]):\n"
      "  %3 = linear(%x, %w)  # f32[s0, 3072]\n"
      "  %4 = view(%3, [2*s0, 1536])  # f32[2*s0, 1536]\n"
      "  %5 = slice.Tensor(%4, 0, 1, s0 + 1)  # f32[s0, 1536]+1536\n"
      "  %6 = sum.dim_IntList(%y, [0])  # f32[s0]\n"
      "  return (%5, %6)\n";
  expect_round_trip(text);
  Graph g = parse_graph(text);
  ASSERT_TRUE(g.shape_env());
  EXPECT_EQ(g.shape_env()->num_symbols(), 2);
  EXPECT_EQ(g.shape_env()->hint(0), 64);  // the default hints
  EXPECT_EQ(g.shape_env()->hint(1), 72);
  const SymInt& s0 = g.inputs()[0].sizes()[0];
  EXPECT_TRUE(s0.is_symbolic());
  EXPECT_EQ(s0.str(), "s0");
  Graph h = parse_graph(text, {.symbol_hints = {5, 9}});
  EXPECT_EQ(h.inputs()[0].sizes()[0].hint(), 5);
  EXPECT_EQ(h.node(4).meta().sizes[0].hint(), 10);  // 2*s0
}

TEST(GraphParser, RoundTripsListsLayoutsAndKeywords) {
  expect_round_trip(
      "graph(%x: f32[8, 4], %i: i64[2], %t: f32[4, 8]{1, 4}, %v: f32[8, 2]):\n"
      "  %4, %5, %6 = split.Tensor(%x, 3)  # f32[3, 4], f32[3, 4]+12, f32[2, 4]+24\n"
      "  %7 = cat([%4, %6])  # f32[5, 4]\n"
      "  %8 = index_put(%x, [None, %i], %v, True)  # f32[8, 4]\n"
      "  %9 = transpose.int(%t, 0, 1)  # f32[8, 4]\n"
      "  %10 = add.Tensor(%8, %9, alpha=-2)  # f32[8, 4]\n"
      "  %11 = mean.dim(%10, [0], dtype=f64)  # f64[4]\n"
      "  %12 = clamp(%11, None, 6)  # f64[4]\n"
      "  %13 = leaky_relu(%12, 1e-05)  # f64[4]\n"
      "  %14 = div.Tensor_mode(%13, %13, rounding_mode='floor')  # f64[4]\n"
      "  %15 = _to_copy(%14, dtype=bf16)  # bf16[4]\n"
      "  return (%15, %5, %7)\n");
}

TEST(GraphParser, RoundTripsDevicesFactoriesInPlaceAndConstants) {
  expect_round_trip(
      "graph(%x: f32[2, 3], %q: f16[3]@cuda:0):\n"
      "  %w = constant()  # f32[3]\n"
      "  %3 = zeros([2, 3], dtype=i32)  # i32[2, 3]\n"
      "  %4 = add_.Tensor(%x, %w)  # f32[2, 3]\n"
      "  %5 = fill_.Scalar(%4, 0.5)  # f32[2, 3]\n"
      "  %6 = relu(%q)  # f16[3]@cuda:0\n"
      "  %7 = elu(%5, 1.0, 2)  # f32[2, 3]\n"
      "  return (%3, %7, %6)\n");
}

TEST(GraphParser, RoundTripsStringsAndSpecialFloats) {
  expect_round_trip(
      "graph(%a: f32[2, 3], %b: f32[3, 4]):\n"
      "  %2 = einsum('ij,jk->ik', [%a, %b])  # f32[2, 4]\n"
      "  %3 = nan_to_num(%2, 0.0, inf, -inf)  # f32[2, 4]\n"
      "  %4 = pad(%3, [1, 1], 'constant', 0.5)  # f32[2, 6]\n"
      "  %5 = hardtanh(%4, -0.25, 1e+20)  # f32[2, 6]\n"
      "  return (%5)\n");
}

TEST(GraphParser, AcceptsAnyNamesCommentsAndBlankLines) {
  Graph g = parse_graph(
      "# a hand-written graph\n"
      "graph(%input: f32[2, 3]):\n"
      "\n"
      "  %hidden = relu(%input)   # relu first\n"
      "  %out = mul.Scalar(other=2.0, self=%hidden)\n"
      "  %clamped = clamp(%out, min=None, max=1.0)\n"
      "  return (%clamped)\n");
  EXPECT_EQ(g.str(),
            "graph(%input: f32[2, 3]):\n"
            "  %1 = relu(%input)  # f32[2, 3]\n"
            "  %2 = mul.Scalar(%1, 2.0)  # f32[2, 3]\n"
            "  %3 = clamp(%2, None, 1.0)  # f32[2, 3]\n"
            "  return (%3)\n");
}

TEST(GraphParser, ConstantsTakeGivenData) {
  Tensor w = from_vector<float>({1, 2, 3});
  Graph g = parse_graph(
      "graph(%x: f32[3]):\n"
      "  %w = constant()  # f32[3]\n"
      "  %2 = add.Tensor(%x, %w)  # f32[3]\n"
      "  return (%2)\n",
      {.constants = {{"w", w}}});
  EXPECT_TRUE(g.node(1).constant.is_same(w));
  Graph z = parse_graph("graph():\n  %w = constant()  # i64[2]\n  return (%w)\n");
  EXPECT_EQ(z.node(0).constant.to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
}

TEST(GraphParser, ErrorsNameLineAndColumn) {
  const std::string header = "graph(%x: f32[2, 3]):\n";
  EXPECT_ERROR(parse_graph(header + "  %1 = gelu2(%x)\n"), "line 2, column 8", "unknown op 'gelu2'");
  EXPECT_ERROR(parse_graph(header + "  %1 = relu(%y)\n"), "line 2, column 13", "%y is not defined");
  EXPECT_ERROR(parse_graph(header + "  %1 = relu(%x)\n  %1 = relu(%x)\n"), "line 3", "%1 is defined twice");
  EXPECT_ERROR(parse_graph(header + "  %1 = gelu(%x, approximate=3)\n"), "line 2", "expected a quoted string");
  EXPECT_ERROR(parse_graph(header + "  %1 = gelu(%x, 'tanh')\n"), "too many positional arguments");
  EXPECT_ERROR(parse_graph(header + "  %1 = add.Tensor(%x)\n"), "missing argument 'other'");
  EXPECT_ERROR(parse_graph(header + "  %1 = relu(%x)  # f32[2, 4]\n"), "line 2, column 20",
               "the comment says f32[2, 4] but the shape rule gives f32[2, 3]");
  EXPECT_ERROR(parse_graph(header + "  %1 = mm(%x, %x)\n"), "line 2, column 8", "mm: ", "operands: self=float32[2, 3]");
  EXPECT_ERROR(parse_graph(header + "  %1, %2 = relu(%x)\n"), "relu returns 1 value(s) here, but the line names 2");
  EXPECT_ERROR(parse_graph(header + "  return (%x)\n  %1 = relu(%x)\n"), "line 3", "text after the return line");
  EXPECT_ERROR(parse_graph("graph(%x: q32[2]):\n"), "line 1, column 11", "unknown dtype 'q32'");
  EXPECT_ERROR(parse_graph("graph(%x: f32[2, s0 +]):\n"), "line 1", "cannot parse size expression");
  EXPECT_ERROR(parse_graph("graph(%x: f32[2]) \n"), "line 1", "expected ':'");
  EXPECT_ERROR(parse_graph("graph(%x: f32[2]):\n  %1 = relu(None)\n"), "cannot be None");
  EXPECT_ERROR(parse_graph(""), "graph text is empty");
  EXPECT_ERROR(parse_graph("graph(%x: f32[s0]):\n", {.symbol_hints = {1}}), "must be at least 2");
}

}  // namespace
}  // namespace sinter
