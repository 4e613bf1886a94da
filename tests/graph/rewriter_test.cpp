// The Rewriter: inserting, replacing, erasing, re-arguing and dead code elimination keep the graph valid, and
// the results still compute what the original did.
#include <cmath>

#include "ops/op_table.h"
#include "sinter/graph.h"
#include "testing.h"

namespace sinter {
namespace {

// gelu(x, approximate='tanh') -> 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))), as a pass would write it.
int expand_tanh_gelu(Graph& g) {
  std::vector<const Node*> matches;
  for (const Node& n : g.nodes())
    if (n.is_op(OpId::gelu) && n.arg("approximate").str_value() == "tanh") matches.push_back(&n);
  Rewriter rw(g);
  for (const Node* n : matches) {
    const Tensor x = n->args[0].tensor();
    auto op = [&](OpId id, Args args) { return rw.insert_op1_before(*n, id, std::move(args)); };
    Tensor cube = op(OpId::pow_Tensor_Scalar, {x, 3});
    Tensor inner = op(OpId::add_Tensor, {x, op(OpId::mul_Scalar, {cube, 0.044715})});
    Tensor t = op(OpId::tanh, {op(OpId::mul_Scalar, {inner, std::sqrt(2.0 / M_PI)})});
    Tensor y = op(OpId::mul_Scalar, {op(OpId::mul_Tensor, {x, op(OpId::add_Scalar, {t, 1})}), 0.5});
    rw.replace_all_uses(n->output(), y);
    rw.erase(*n);
  }
  return static_cast<int>(matches.size());
}

TEST(GraphRewriter, ReplacesGeluByItsTanhForm) {
  Graph g = parse_graph(
      "graph(%x: f32[4, 8]):\n"
      "  %1 = gelu(%x, approximate='tanh')  # f32[4, 8]\n"
      "  %2 = gelu(%1)  # f32[4, 8]\n"
      "  %3 = mul.Scalar(%1, 2)  # f32[4, 8]\n"
      "  return (%2, %3)\n");
  Tensor x = testing::random({4, 8}, kFloat32, 11);
  std::vector<Tensor> before = interpret(g, {x});
  EXPECT_EQ(expand_tanh_gelu(g), 1);
  verify(g);
  EXPECT_EQ(g.str(),
            "graph(%x: f32[4, 8]):\n"
            "  %1 = pow.Tensor_Scalar(%x, 3)  # f32[4, 8]\n"
            "  %2 = mul.Scalar(%1, 0.044715)  # f32[4, 8]\n"
            "  %3 = add.Tensor(%x, %2)  # f32[4, 8]\n"
            "  %4 = mul.Scalar(%3, 0.7978845608028654)  # f32[4, 8]\n"
            "  %5 = tanh(%4)  # f32[4, 8]\n"
            "  %6 = add.Scalar(%5, 1)  # f32[4, 8]\n"
            "  %7 = mul.Tensor(%x, %6)  # f32[4, 8]\n"
            "  %8 = mul.Scalar(%7, 0.5)  # f32[4, 8]\n"
            "  %9 = gelu(%8)  # f32[4, 8]\n"
            "  %10 = mul.Scalar(%8, 2)  # f32[4, 8]\n"
            "  return (%9, %10)\n");
  std::vector<Tensor> after = interpret(g, {x});
  EXPECT_CLOSE(after[0], before[0], 1e-5);
  EXPECT_CLOSE(after[1], before[1], 1e-5);
  EXPECT_EQ(expand_tanh_gelu(g), 0);  // a fixed point
}

TEST(GraphRewriter, DeadCodeEliminationKeepsSideEffects) {
  Graph g = parse_graph(
      "graph(%x: f32[3], %unused: f32[3]):\n"
      "  %k = constant()  # f32[3]\n"
      "  %3 = exp(%x)  # f32[3]\n"
      "  %4 = neg(%3)  # f32[3]\n"
      "  %5 = add_.Scalar(%x, 1)  # f32[3]\n"
      "  %6 = rand([3])  # f32[3]\n"
      "  %7 = relu(%x)  # f32[3]\n"
      "  %8 = unsqueeze(%7, 0)  # f32[1, 3]\n"
      "  %9, %10 = max.dim(%8, 1)  # f32[1], i64[1]\n"
      "  return (%7, %9)\n");
  Rewriter rw(g);
  EXPECT_EQ(rw.eliminate_dead_code(), 3);
  verify(g);
  EXPECT_EQ(g.str(),
            "graph(%x: f32[3], %unused: f32[3]):\n"
            "  %2 = add_.Scalar(%x, 1)  # f32[3]\n"
            "  %3 = rand([3])  # f32[3]\n"
            "  %4 = relu(%x)  # f32[3]\n"
            "  %5 = unsqueeze(%4, 0)  # f32[1, 3]\n"
            "  %6, %7 = max.dim(%5, 1)  # f32[1], i64[1]\n"
            "  return (%4, %6)\n");
  EXPECT_EQ(rw.eliminate_dead_code(), 0);
  EXPECT_TRUE(has_side_effects(g.node(2)));
  EXPECT_TRUE(has_side_effects(g.node(3)));
  EXPECT_FALSE(has_side_effects(g.node(4)));
}

TEST(GraphRewriter, InsertedNodesRenumberTheGraph) {
  Graph g = parse_graph(
      "graph(%x: f32[2]):\n"
      "  %1 = neg(%x)  # f32[2]\n"
      "  %2 = exp(%1)  # f32[2]\n"
      "  return (%2)\n");
  Rewriter rw(g);
  const Node& neg_node = g.node(1);
  const Node& exp_node = g.node(2);
  // x -> relu(x) for every user of x: the new node itself keeps reading x.
  Tensor r = rw.insert_op1_before(neg_node, OpId::relu, {g.inputs()[0]});
  EXPECT_EQ(rw.replace_all_uses(g.inputs()[0], r), 1);
  EXPECT_EQ(neg_node.id, 2);  // nodes keep their addresses; ids follow positions
  EXPECT_EQ(exp_node.id, 3);
  EXPECT_EQ(neg_node.output().impl()->trace->node, 2);
  verify(g);
  EXPECT_EQ(g.str(),
            "graph(%x: f32[2]):\n"
            "  %1 = relu(%x)  # f32[2]\n"
            "  %2 = neg(%1)  # f32[2]\n"
            "  %3 = exp(%2)  # f32[2]\n"
            "  return (%3)\n");
  Tensor x = testing::random({2});
  EXPECT_TENSOR_EQ(interpret(g, {x})[0], exp(neg(relu(x))));
}

TEST(GraphRewriter, RefusesEditsThatBreakTheGraph) {
  Graph g = parse_graph(
      "graph(%x: f32[2, 3]):\n"
      "  %1 = neg(%x)  # f32[2, 3]\n"
      "  %2 = exp(%1)  # f32[2, 3]\n"
      "  %3 = relu(%1)  # f32[2, 3]\n"
      "  %4 = sum(%2)  # f32[]\n"
      "  return (%4, %3)\n");
  std::string text = g.str();
  Rewriter rw(g);
  Tensor neg = g.node(1).output(), ex = g.node(2).output(), re = g.node(3).output(), total = g.node(4).output();
  EXPECT_ERROR(rw.erase(g.node(1)), "node 1 (neg) cannot be erased: its value is used by node 2");
  EXPECT_ERROR(rw.erase(g.output_node()), "the output node cannot be erased");
  EXPECT_ERROR(rw.replace_all_uses(ex, total), "the replacement f32[] differs from the value it replaces f32[2, 3]");
  EXPECT_ERROR(rw.replace_all_uses(neg, re), "node 2 uses the old value but comes before node 3");
  EXPECT_ERROR(rw.insert_op_before(g.node(1), OpId::relu, {ex}), "argument 'self' is defined after the point");
  EXPECT_ERROR(rw.insert_op_before(g.node(0), OpId::relu, {neg}), "not before an input");
  EXPECT_ERROR(rw.set_args(g.node(0), {}), "set_args applies to op nodes");
  Graph other;
  other.add_input("y", {{1}, {}, 0, kFloat32});
  EXPECT_ERROR(rw.erase(other.node(0)), "does not belong to this graph");
  verify(g);  // nothing changed
  EXPECT_EQ(g.str(), text);
}

TEST(GraphRewriter, SetArgsKeepsUsersAndRecomputeMetasRefreshesThem) {
  Graph g = parse_graph(
      "graph(%x: f32[6]):\n"
      "  %1 = view(%x, [6, 1])  # f32[6, 1]\n"
      "  %2 = relu(%1)  # f32[6, 1]\n"
      "  %3 = gelu(%2)  # f32[6, 1]\n"
      "  return (%3)\n");
  Rewriter rw(g);
  rw.set_args(g.node(3), {g.node(2).output(), "tanh"});
  verify(g);
  EXPECT_EQ(g.node(3).args[1].str_value(), "tanh");
  rw.set_args(g.node(1), {g.inputs()[0], SymIntList{3, 2}});
  EXPECT_EQ(g.node(1).meta().sizes.hints(), (std::vector<int64_t>{3, 2}));
  EXPECT_ERROR(verify(g), "at node 2", "recorded as f32[6, 1] but the shape rule gives f32[3, 2]");
  rw.recompute_metas();
  verify(g);
  EXPECT_EQ(g.str(),
            "graph(%x: f32[6]):\n"
            "  %1 = view(%x, [3, 2])  # f32[3, 2]\n"
            "  %2 = relu(%1)  # f32[3, 2]\n"
            "  %3 = gelu(%2, approximate='tanh')  # f32[3, 2]\n"
            "  return (%3)\n");
  EXPECT_ERROR(rw.set_args(g.node(1), {g.inputs()[0], SymIntList{4, 2}}), "view");
  verify(g);  // a refused set_args leaves the node as it was
}

TEST(GraphRewriter, ErasedValuesAreNoLongerPartOfTheGraph) {
  Graph g = parse_graph("graph(%x: f32[2]):\n  %1 = neg(%x)  # f32[2]\n  return (%x)\n");
  Tensor dead = g.node(1).output();
  Rewriter(g).erase(g.node(1));
  EXPECT_FALSE(g.contains(dead));
  EXPECT_ERROR(g.add_op(OpId::relu, {dead}), "a value of another graph (or of a node that was erased)");
  EXPECT_EQ(g.str(), "graph(%x: f32[2]):\n  return (%x)\n");
}

}  // namespace
}  // namespace sinter
