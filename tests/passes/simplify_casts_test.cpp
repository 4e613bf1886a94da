// Simplification of conversion chains: _to_copy(_to_copy(x, A), x.dtype) folds to x only when the round trip is
// exact for every value of x (int8 through float16, int32 through float64, bool through anything); chains that
// round, overflow or truncate (float32 through float16, int64 through float64, float through an integer) stay,
// since the program asked for both conversions.
#include "passes/simplify.h"

#include "pass_testing.h"

namespace sinter {
namespace {

using testing::expect_same_results;
using testing::random_inputs;

std::string chain(const std::string& from, const std::string& via) {
  return "graph(%x: " + from + "[4]):\n"
         "  %1 = _to_copy(%x, dtype=" + via + ")  # " + via + "[4]\n"
         "  %2 = _to_copy(%1, dtype=" + from + ")  # " + from + "[4]\n"
         "  %3 = " + std::string(from == "b8" ? "logical_not(%2)" : "mul.Scalar(%2, 2)") + "  # " + from + "[4]\n"
         "  return (%3)\n";
}

void expect_folds(const std::string& from, const std::string& via, bool folds) {
  SCOPED_TRACE(from + " through " + via);
  Graph g = parse_graph(chain(from, via));
  Graph before = g.clone();
  passes::simplify(g);
  verify(g);
  bool folded = g.str().find("_to_copy") == std::string::npos;
  EXPECT_EQ(folded, folds) << g.str();
  expect_same_results(before, g, random_inputs(before), 0);
}

TEST(SimplifyCasts, ExactRoundTripsFold) {
  expect_folds("i8", "f16", true);
  expect_folds("u8", "bf16", true);
  expect_folds("i32", "f64", true);
  expect_folds("i32", "i64", true);
  expect_folds("b8", "f32", true);
  expect_folds("i8", "i32", true);
}

TEST(SimplifyCasts, LossyRoundTripsStay) {
  expect_folds("f32", "f16", false);   // rounds, overflows
  expect_folds("f32", "bf16", false);
  expect_folds("f64", "f32", false);
  expect_folds("f32", "i32", false);   // truncates
  expect_folds("f32", "b8", false);    // != 0
  expect_folds("i64", "f64", false);   // rounds beyond 2^53
  expect_folds("i32", "f32", false);   // rounds beyond 2^24
  expect_folds("i32", "i8", false);    // wraps
  expect_folds("i8", "u8", false);     // negative values wrap
  expect_folds("f16", "f32", false);   // exact for numbers, but a signalling NaN's bits change
}

}  // namespace
}  // namespace sinter
