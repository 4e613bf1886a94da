// Simplification: each identity (text in -> simplify -> text out), CSE, DCE, constant folding, the aliasing
// rules that keep clones and identities whose removal would make an output alias an input, and the fixed point.
#include "passes/simplify.h"

#include "pass_testing.h"

namespace sinter {
namespace {

using testing::count_ops;
using testing::expect_same_results;
using testing::random_inputs;

// simplify(text) equals `want`; simplifying again changes nothing; results are equal before and after.
void expect_simplifies_to(const std::string& text, const std::string& want, const ParseOptions& options = {}) {
  SCOPED_TRACE(text);
  Graph g = parse_graph(text, options);
  Graph before = g.clone();
  bool changed = passes::simplify(g);
  verify(g);
  EXPECT_EQ(g.str(), want);
  EXPECT_EQ(changed, text != want);
  EXPECT_FALSE(passes::simplify(g));  // a fixed point
  EXPECT_EQ(g.str(), want);
  expect_same_results(before, g, random_inputs(before), 0);
}

TEST(Simplify, ArithmeticIdentities) {
  expect_simplifies_to(
      "graph(%x: f32[4, 8]):\n"
      "  %1 = mul.Scalar(%x, 1)  # f32[4, 8]\n"
      "  %2 = add.Scalar(%1, 0)  # f32[4, 8]\n"
      "  %3 = sub.Scalar(%2, 0)  # f32[4, 8]\n"
      "  %4 = div.Scalar(%3, 1)  # f32[4, 8]\n"
      "  %5 = exp(%4)  # f32[4, 8]\n"
      "  return (%5)\n",
      "graph(%x: f32[4, 8]):\n"
      "  %1 = exp(%x)  # f32[4, 8]\n"
      "  return (%1)\n");
}

TEST(Simplify, IdentityOnAnotherDtypeStays) {
  // i64 * 1.0 is float32: not the same value.
  std::string text =
      "graph(%x: i64[4]):\n"
      "  %1 = mul.Scalar(%x, 1.0)  # f32[4]\n"
      "  %2 = exp(%1)  # f32[4]\n"
      "  return (%2)\n";
  expect_simplifies_to(text, text);
}

TEST(Simplify, ViewsThatChangeNothing) {
  expect_simplifies_to(
      "graph(%x: f32[4, 8]):\n"
      "  %1 = view(%x, [4, 8])  # f32[4, 8]\n"
      "  %2 = permute(%1, [0, 1])  # f32[4, 8]\n"
      "  %3 = transpose.int(%2, 1, -1)  # f32[4, 8]\n"
      "  %4 = expand(%3, [4, 8])  # f32[4, 8]\n"
      "  %5 = slice.Tensor(%4, 1, 0, 9223372036854775807)  # f32[4, 8]\n"
      "  %6 = neg(%5)  # f32[4, 8]\n"
      "  %7 = neg(%6)  # f32[4, 8]\n"
      "  %8 = exp(%7)  # f32[4, 8]\n"
      "  return (%8)\n",
      "graph(%x: f32[4, 8]):\n"
      "  %1 = exp(%x)  # f32[4, 8]\n"
      "  return (%1)\n");
}

TEST(Simplify, SymbolicSameSizeView) {
  expect_simplifies_to(
      "graph(%x: f32[s0, 8]):\n"
      "  %1 = view(%x, [s0, 8])  # f32[s0, 8]\n"
      "  %2 = exp(%1)  # f32[s0, 8]\n"
      "  return (%2)\n",
      "graph(%x: f32[s0, 8]):\n"
      "  %1 = exp(%x)  # f32[s0, 8]\n"
      "  return (%1)\n");
}

TEST(Simplify, CopiesToTheSameDtype) {
  expect_simplifies_to(
      "graph(%x: f32[4, 8]):\n"
      "  %1 = _to_copy(%x, dtype=f32)  # f32[4, 8]\n"
      "  %2 = _to_copy(%1, dtype=bf16)  # bf16[4, 8]\n"
      "  %3 = clone(%2)  # bf16[4, 8]\n"
      "  %4 = exp(%3)  # bf16[4, 8]\n"
      "  return (%4)\n",
      "graph(%x: f32[4, 8]):\n"
      "  %1 = _to_copy(%x, dtype=bf16)  # bf16[4, 8]\n"
      "  %2 = exp(%1)  # bf16[4, 8]\n"
      "  return (%2)\n");
}

TEST(Simplify, ClonesThatKeepOutputsFromAliasingInputsStay) {
  // Returning the input itself would make the output alias it; a clone of an intermediate is free to go.
  std::string text =
      "graph(%x: f32[4, 8]):\n"
      "  %1 = clone(%x)  # f32[4, 8]\n"
      "  %2 = mul.Scalar(%x, 1)  # f32[4, 8]\n"
      "  %3 = transpose.int(%x, 0, 1)  # f32[8, 4]{1, 8}\n"
      "  %4 = _to_copy(%3)  # f32[8, 4]{1, 8}\n"
      "  return (%1, %2, %4)\n";
  expect_simplifies_to(text, text);
  // Two outputs must not become one buffer either.
  std::string two =
      "graph(%x: f32[4, 8]):\n"
      "  %1 = exp(%x)  # f32[4, 8]\n"
      "  %2 = clone(%1)  # f32[4, 8]\n"
      "  return (%1, %2)\n";
  expect_simplifies_to(two, two);
}

TEST(Simplify, ContiguousCloneBeforeAViewStays) {
  std::string text =
      "graph(%x: f32[4, 8]):\n"
      "  %1 = transpose.int(%x, 0, 1)  # f32[8, 4]{1, 8}\n"
      "  %2 = clone(%1, memory_format=contiguous_format)  # f32[8, 4]\n"
      "  %3 = view(%2, [32])  # f32[32]\n"
      "  %4 = exp(%3)  # f32[32]\n"
      "  return (%4)\n";
  Graph g = parse_graph(text);
  passes::simplify(g);
  EXPECT_EQ(count_ops(g, OpId::clone), 1) << g;
  verify(g);
}

// Removing a copy must not change an output's layout: the relu after a removed contiguous clone of a
// channels-last input would come out channels-last, so the output gets a clone back to eager's layout.
TEST(Simplify, OutputsKeepTheirLayoutWhenACopyGoes) {
  expect_simplifies_to(
      "graph(%x: f32[2, 3, 4, 5]{60, 1, 15, 3}):\n"
      "  %1 = clone(%x, memory_format=contiguous_format)  # f32[2, 3, 4, 5]\n"
      "  %2 = relu(%1)  # f32[2, 3, 4, 5]\n"
      "  return (%2)\n",
      "graph(%x: f32[2, 3, 4, 5]{60, 1, 15, 3}):\n"
      "  %1 = relu(%x)  # f32[2, 3, 4, 5]{60, 1, 15, 3}\n"
      "  %2 = clone(%1, memory_format=contiguous_format)  # f32[2, 3, 4, 5]\n"
      "  return (%2)\n");
}

TEST(Simplify, CommonSubexpressions) {
  expect_simplifies_to(
      "graph(%x: f32[4, 8]):\n"
      "  %1 = exp(%x)  # f32[4, 8]\n"
      "  %2 = exp(%x)  # f32[4, 8]\n"
      "  %3 = add.Tensor(%1, %2)  # f32[4, 8]\n"
      "  %4 = sum.dim_IntList(%3, [1])  # f32[4]\n"
      "  %5 = sum.dim_IntList(%3, [1])  # f32[4]\n"
      "  %6 = sum.dim_IntList(%3, [0])  # f32[8]\n"
      "  %7 = mul.Tensor(%4, %5)  # f32[4]\n"
      "  return (%7, %6)\n",
      "graph(%x: f32[4, 8]):\n"
      "  %1 = exp(%x)  # f32[4, 8]\n"
      "  %2 = add.Tensor(%1, %1)  # f32[4, 8]\n"
      "  %3 = sum.dim_IntList(%2, [1])  # f32[4]\n"
      "  %4 = sum.dim_IntList(%2, [0])  # f32[8]\n"
      "  %5 = mul.Tensor(%3, %3)  # f32[4]\n"
      "  return (%5, %4)\n");
}

TEST(Simplify, RandomOpsAreNeitherMergedNorRemoved) {
  std::string text =
      "graph(%x: f32[4, 8]):\n"
      "  %1 = rand([4, 8])  # f32[4, 8]\n"
      "  %2 = rand([4, 8])  # f32[4, 8]\n"
      "  %3 = rand([2])  # f32[2]\n"
      "  %4 = add.Tensor(%1, %2)  # f32[4, 8]\n"
      "  return (%4)\n";
  Graph g = parse_graph(text);
  passes::simplify(g);
  EXPECT_EQ(g.str(), text);
  EXPECT_EQ(count_ops(g, OpId::rand), 3);
}

TEST(Simplify, DeadCode) {
  expect_simplifies_to(
      "graph(%x: f32[4, 8]):\n"
      "  %1 = exp(%x)  # f32[4, 8]\n"
      "  %2 = log(%1)  # f32[4, 8]\n"
      "  %3 = neg(%x)  # f32[4, 8]\n"
      "  return (%3)\n",
      "graph(%x: f32[4, 8]):\n"
      "  %1 = neg(%x)  # f32[4, 8]\n"
      "  return (%1)\n");
}

TEST(Simplify, SmallConstantSubgraphsFold) {
  ParseOptions options;
  options.constants["c"] = from_vector<float>({1, 2, 3});
  Graph g = parse_graph(
      "graph(%x: f32[4, 3]):\n"
      "  %c = constant()  # f32[3]\n"
      "  %2 = mul.Scalar(%c, 2)  # f32[3]\n"
      "  %3 = exp(%2)  # f32[3]\n"
      "  %4 = add.Tensor(%x, %3)  # f32[4, 3]\n"
      "  return (%4)\n",
      options);
  Graph before = g.clone();
  EXPECT_TRUE(passes::simplify(g));
  verify(g);
  EXPECT_EQ(g.str(),
            "graph(%x: f32[4, 3]):\n"
            "  %folded_1 = constant()  # f32[3]\n"
            "  %2 = add.Tensor(%x, %folded_1)  # f32[4, 3]\n"
            "  return (%2)\n");
  expect_same_results(before, g, random_inputs(before), 0);
  EXPECT_FALSE(passes::simplify(g));
}

TEST(Simplify, LargeConstantsAndReturnedValuesDoNotFold) {
  ParseOptions options;
  options.constants["w"] = testing::random({128, 64});
  std::string text =
      "graph(%x: f32[4, 64]):\n"
      "  %w = constant()  # f32[128, 64]\n"
      "  %2 = mul.Scalar(%w, 2)  # f32[128, 64]\n"
      "  %3 = linear(%x, %2)  # f32[4, 128]\n"
      "  return (%3)\n";
  Graph g = parse_graph(text, options);
  EXPECT_FALSE(passes::simplify(g));
  EXPECT_EQ(g.str(), text);
}

TEST(Simplify, ReachesAFixedPointThroughChains) {
  // Each rule exposes the next: neg(neg(neg(neg(x * 1)))) + 0 -> x
  expect_simplifies_to(
      "graph(%x: f32[5]):\n"
      "  %1 = mul.Scalar(%x, 1)  # f32[5]\n"
      "  %2 = neg(%1)  # f32[5]\n"
      "  %3 = neg(%2)  # f32[5]\n"
      "  %4 = neg(%3)  # f32[5]\n"
      "  %5 = neg(%4)  # f32[5]\n"
      "  %6 = add.Scalar(%5, 0)  # f32[5]\n"
      "  %7 = exp(%6)  # f32[5]\n"
      "  %8 = exp(%x)  # f32[5]\n"
      "  %9 = sub.Tensor(%7, %8)  # f32[5]\n"
      "  return (%9)\n",
      "graph(%x: f32[5]):\n"
      "  %1 = exp(%x)  # f32[5]\n"
      "  %2 = sub.Tensor(%1, %1)  # f32[5]\n"
      "  return (%2)\n");
}

}  // namespace
}  // namespace sinter
