// The kernel plan as text (what SINTER_LOGS=schedule prints after the fusion decisions): loops after
// coalescing, index width, kept values, forwarded row results, hoisted reciprocals and argument order.
#include <gtest/gtest.h>

#include "inductor/kernel_plan.h"
#include "inductor/lower.h"
#include "inductor/scheduler.h"
#include "sinter/error.h"
#include "sinter/graph.h"

namespace sinter {
namespace {

std::string plan_text(const std::string& graph) {
  Graph g = parse_graph(graph);
  inductor::LoopProgram p = inductor::lower(g);
  inductor::Schedule s = inductor::schedule(p);
  return inductor::plan_kernels(p, s).str(p);
}

TEST(KernelPlan, ContiguousDimsCoalesceIntoOneLoop) {
  EXPECT_EQ(plan_text("graph(%x: f32[64, 100]):\n  %1 = exp(%x)  # f32[64, 100]\n  return (%1)\n"),
            "kernel0: flat loops, 32-bit indices\n"
            "  args: b0 = x, b1 = buf1\n"
            "  stage 0: pointwise over v1 < 6400\n"
            "    node 0: buf1[v1]\n"
            "  total 6400, work 1, row elements 100\n");
}

TEST(KernelPlan, ATransposedReadKeepsBothLoops) {
  EXPECT_EQ(plan_text("graph(%x: f32[64, 100], %y: f32[100, 64]):\n"
                      "  %1 = permute(%x, [1, 0])  # f32[100, 64]{1, 100}\n"
                      "  %2 = add.Tensor(%y, %1)  # f32[100, 64]\n"
                      "  return (%2)\n"),
            "kernel0: flat loops, 32-bit indices\n"
            "  args: b0 = x, b1 = y, b2 = buf2\n"
            "  stage 0: pointwise over v0 < 100, v1 < 64\n"
            "    node 0: buf2[64*v0 + v1]\n"
            "  total 6400, work 1, row elements 64\n");
}

TEST(KernelPlan, SymbolicSizesUse64BitIndices) {
  EXPECT_EQ(plan_text("graph(%x: f32[s0, 100]):\n  %1 = neg(%x)  # f32[s0, 100]\n  return (%1)\n"),
            "kernel0: flat loops, 64-bit indices\n"
            "  args: b0 = x, b1 = buf1\n"
            "  stage 0: pointwise over v1 < 100*s0\n"
            "    node 0: buf1[v1]\n"
            "  total 100*s0, work 1, row elements 100\n");
}

TEST(KernelPlan, SoftmaxKeepsItsExpsAndMultipliesByOneReciprocal) {
  EXPECT_EQ(plan_text("graph(%x: f32[8, 1001]):\n"
                      "  %1 = amax(%x, [1], True)  # f32[8, 1]\n"
                      "  %2 = sub.Tensor(%x, %1)  # f32[8, 1001]\n"
                      "  %3 = exp(%2)  # f32[8, 1001]\n"
                      "  %4 = sum.dim_IntList(%3, [1], True)  # f32[8, 1]\n"
                      "  %5 = div.Tensor(%3, %4)  # f32[8, 1001]\n"
                      "  return (%5)\n"),
            "kernel0: row loops, 32-bit indices\n"
            "  outer: v0 < 8\n"
            "  args: b0 = x, b1 = buf3\n"
            "  stage 0: reduction over v1 < 1001\n"
            "    node 0: amax buf1 (kept in registers)\n"
            "  stage 1: reduction over v1 < 1001\n"
            "    node 1: sum buf2 (kept in registers), keeps its per-element value for node 2\n"
            "    reads computed values of node(s) 0\n"
            "  stage 2: pointwise over v1 < 1001\n"
            "    node 2: buf3[1001*v0 + v1], loads 1 kept value(s)\n"
            "    reads computed values of node(s) 0, 1\n"
            "    1 division(s) by a row result as reciprocal multiplies\n"
            "  total 8, work 1001\n");
}

TEST(KernelPlan, AFullReductionHasOneRow) {
  EXPECT_EQ(plan_text("graph(%x: f32[4, 5, 6]):\n  %1 = sum(%x)  # f32[]\n  return (%1)\n"),
            "kernel0: row loops, 32-bit indices\n"
            "  outer: -\n"
            "  args: b0 = x, b1 = buf1\n"
            "  stage 0: reduction over v2 < 120\n"
            "    node 0: sum buf1[0]\n"
            "  total 1, work 120\n");
}

// The scalar op table: names round-trip, arities are checked when a node is built.
TEST(ScalarOps, NamesRoundTripAndArityIsChecked) {
  for (int i = 0; i <= static_cast<int>(inductor::SOp::pending); ++i) {
    auto op = static_cast<inductor::SOp>(i);
    EXPECT_EQ(inductor::scalar_op_named(inductor::scalar_op_name(op)), op);
  }
  EXPECT_FALSE(inductor::scalar_op_named("gelu").has_value());  // decomposed, never a scalar op
  inductor::SPool pool;
  inductor::SExpr x = pool.constant(1.0, inductor::CType::kF32);
  EXPECT_EQ(pool.op(inductor::SOp::exp, {x}, inductor::CType::kF32)->op, inductor::SOp::exp);
  EXPECT_THROW(pool.op(inductor::SOp::add, {x}, inductor::CType::kF32), InternalError);
}

// A pool over a base returns the base's node for an equal expression and keeps new ones to itself.
TEST(ScalarOps, APoolOverABaseSharesItsNodes) {
  inductor::SPool base;
  inductor::SExpr x = base.constant(2.0, inductor::CType::kF32);
  inductor::SExpr e = base.op(inductor::SOp::exp, {x}, inductor::CType::kF32);
  inductor::SPool over(&base);
  EXPECT_EQ(over.op(inductor::SOp::exp, {x}, inductor::CType::kF32), e);
  EXPECT_EQ(over.size(), 0u);
  inductor::SExpr l = over.op(inductor::SOp::log, {x}, inductor::CType::kF32);
  EXPECT_EQ(over.size(), 1u);
  EXPECT_EQ(base.size(), 2u);
  EXPECT_EQ(over.op(inductor::SOp::log, {x}, inductor::CType::kF32), l);
}

}  // namespace
}  // namespace sinter
