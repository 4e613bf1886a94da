// Building graphs (inputs, ops, constants, outputs), reading them, cloning, and the verifier's checks.
#include "ops/op_table.h"
#include "sinter/graph.h"
#include "symbolic/shape_env.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::meta;

// The test mutates a node the way a buggy pass might, to see the verifier catch it.
Node& corrupt(const Graph& g, int id) { return const_cast<Node&>(g.node(id)); }

TEST(Graph, NodesAreTopologicalWithIdsAsPositions) {
  Graph g;
  Tensor x = g.add_input("x", meta({2, 3}));
  Tensor r = g.add_op1(OpId::relu, {x});
  Tensor y = g.add_input("y", meta({2, 3}));  // placed with the inputs, before the op
  Tensor s = g.add_op1(OpId::add_Tensor, {r, y});
  Tensor c = g.add_constant(ones({3}), "c");  // placed after the inputs
  g.set_outputs({s});
  ASSERT_EQ(g.num_nodes(), 6);
  std::vector<NodeKind> kinds;
  for (const Node& n : g.nodes()) {
    EXPECT_EQ(n.id, static_cast<int>(kinds.size()));
    for (size_t k = 0; k < n.outputs.size(); ++k) EXPECT_EQ(n.outputs[k].impl()->trace->node, n.id);
    kinds.push_back(n.kind);
  }
  EXPECT_EQ(kinds, (std::vector<NodeKind>{NodeKind::kInput, NodeKind::kInput, NodeKind::kConstant, NodeKind::kOp,
                                          NodeKind::kOp, NodeKind::kOutput}));
  EXPECT_EQ(g.num_inputs(), 2);
  EXPECT_EQ(g.num_ops(), 2);
  EXPECT_TRUE(g.inputs()[1].is_same(y));
  EXPECT_EQ(&g.producer(r), &g.node(3));
  EXPECT_TRUE(g.node(3).is_op(OpId::relu));
  EXPECT_EQ(g.node(3).op_name(), "relu");
  EXPECT_TRUE(g.node(4).arg("other").tensor().is_same(y));
  EXPECT_EQ(g.node(4).arg("alpha").scalar(), Scalar(1));
  EXPECT_ERROR(g.node(4).arg("beta"), "add.Tensor has no argument 'beta'");
  EXPECT_EQ(op_id("add.Tensor"), OpId::add_Tensor);
  EXPECT_ERROR(op_id("add.Nope"), "there is no op named 'add.Nope'");
  EXPECT_EQ(g.users(x).size(), 1u);
  EXPECT_EQ(g.users(s)[0]->kind, NodeKind::kOutput);
  EXPECT_TRUE(g.users(c).empty());
  EXPECT_TRUE(g.outputs()[0].is_same(s));
  EXPECT_TRUE(x.is_meta());
  verify(g);
}

TEST(Graph, OpsAddedAfterTheOutputGoBeforeIt) {
  Graph g;
  Tensor x = g.add_input("x", meta({4}));
  g.set_outputs({x});
  Tensor n = g.add_op1(OpId::neg, {x});
  g.set_outputs({n});
  EXPECT_EQ(g.str(), "graph(%x: f32[4]):\n  %1 = neg(%x)  # f32[4]\n  return (%1)\n");
  verify(g);
}

TEST(Graph, InputNamesAreMadeUnique) {
  Graph g;
  g.add_input("x", meta({1}));
  g.add_input("x", meta({1}));
  g.add_input("fc1.weight", meta({1}));
  g.add_constant(zeros({1}), "x");
  EXPECT_EQ(g.node(1).name, "x_1");
  EXPECT_EQ(g.node(2).name, "fc1.weight");
  EXPECT_EQ(g.node(3).name, "x_2");
  EXPECT_ERROR(g.add_input("2x", meta({1})), "graph value name '2x' is not valid");
  EXPECT_ERROR(g.add_input("a b", meta({1})), "is not valid");
}

TEST(Graph, AddOpChecksItsArguments) {
  Graph g;
  Tensor x = g.add_input("x", meta({2, 3}));
  Tensor w = g.add_input("w", meta({4, 5}));
  EXPECT_ERROR(g.add_op(OpId::linear, {x, w}), "linear", "operands: input=float32[2, 3], weight=float32[4, 5]");
  EXPECT_ERROR(g.add_op(OpId::relu, {ones({2})}), "argument 'self' is a real tensor",
               "add it with add_input or add_constant");
  Graph other;
  Tensor o = other.add_input("o", meta({2}));
  EXPECT_ERROR(g.add_op(OpId::relu, {o}), "argument 'self' is a value of another graph");
  EXPECT_ERROR(g.add_op(OpId::gelu, {x, 3}), "argument 'approximate' must be a string, got int");
  EXPECT_ERROR(g.add_op(OpId::add_Tensor, {x}), "missing argument 'other'");
  EXPECT_ERROR(g.add_op1(OpId::max_dim, {x, 0}), "returns 2 values; use add_op");
  EXPECT_ERROR(g.add_constant(x), "add_constant needs a real tensor");
  EXPECT_ERROR(g.set_outputs({ones({1})}), "output 0 is a real tensor");
  EXPECT_ERROR(g.output_node(), "no output node");
  EXPECT_EQ(g.num_ops(), 0);  // failed calls leave nothing behind
}

TEST(Graph, RecordsTheCallersSourceLine) {
  Graph g;
  Tensor x = g.add_input("x", meta({2}));
  int line = __LINE__ + 1;
  g.add_op(OpId::relu, {x});
  EXPECT_EQ(g.node(1).loc.line(), static_cast<unsigned>(line));
  EXPECT_NE(std::string(g.node(1).loc.file_name()).find("graph_test.cpp"), std::string::npos);
}

TEST(Graph, CloneIsIndependent) {
  Graph g;
  Tensor x = g.add_input("x", meta({2, 3}));
  Tensor t = g.add_op1(OpId::transpose_int, {x, 0, 1});
  g.add_constant(ones({2}), "k");
  g.set_outputs({t});
  Graph c = g.clone();
  EXPECT_EQ(c.str(), g.str());
  EXPECT_NE(c.serial(), g.serial());
  EXPECT_FALSE(c.contains(t));
  EXPECT_TRUE(c.contains(c.outputs()[0]));
  EXPECT_TRUE(c.node(1).constant.is_same(g.node(1).constant));
  verify(c);
  Rewriter(c).set_args(c.node(2), {c.inputs()[0], 1, 0});
  EXPECT_NE(c.str(), g.str());
  verify(g);
  Graph moved = std::move(c);
  verify(moved);
}

TEST(Graph, CloneKeepsWrappedNumberAndRequiresGrad) {
  Graph g;
  Tensor x = g.add_input("x", meta({}));
  Tensor s = g.add_input("s", TensorMeta{{}, {}, 0, kFloat64, kCPU});
  s.impl()->wrapped_number = true;
  x.impl()->requires_grad = true;
  EXPECT_EQ(g.add_op1(OpId::mul_Tensor, {x, s}).dtype(), kFloat32);
  Graph c = g.clone();
  EXPECT_FALSE(c.inputs()[0].impl()->wrapped_number);
  EXPECT_TRUE(c.inputs()[0].requires_grad());
  EXPECT_TRUE(c.inputs()[1].impl()->wrapped_number);
  // A wrapped float64 number keeps a 0-dim float32 tensor float32 (a plain 0-dim float64 would not), in the
  // copy as in the original.
  EXPECT_EQ(c.node(2).meta().dtype, kFloat32);
  EXPECT_EQ(c.add_op1(OpId::mul_Tensor, {c.inputs()[0], c.inputs()[1]}).dtype(), kFloat32);
}

TEST(Graph, SymbolicShapesUseTheGraphsShapeEnv) {
  auto env = std::make_shared<sym::ShapeEnv>();
  SymInt s0 = env->create_symbol(6);
  Graph g;
  g.set_shape_env(env);
  Tensor x = g.add_input("x", meta({s0, 4}));
  // Broadcasting [s0, 4] with [1, 4] compares s0 with 1; the env knows s0 >= 2 and records nothing.
  Tensor b = g.add_input("b", meta({1, 4}));
  Tensor y = g.add_op1(OpId::add_Tensor, {x, b});
  Tensor f = g.add_op1(OpId::view, {y, SymIntList{-1}});
  g.set_outputs({f});
  EXPECT_EQ(f.sizes().str(), "[4*s0]");
  EXPECT_TRUE(env->guards().empty());
  verify(g);
}

TEST(GraphVerifier, RejectsWrongMetas) {
  Graph g;
  Tensor x = g.add_input("x", meta({2, 3}));
  Tensor r = g.add_op1(OpId::relu, {x});
  g.set_outputs({r});
  verify(g);
  r.impl()->meta.sizes = SymIntList{2, 4};
  r.impl()->meta.strides = SymIntList{4, 1};
  EXPECT_ERROR(verify(g), "graph verification failed at node 1 `%1 = relu(%x)  # f32[2, 4]`",
               "output 0 is recorded as f32[2, 4] but the shape rule gives f32[2, 3]");
  r.impl()->meta.sizes = SymIntList{2, 3};
  r.impl()->meta.strides = SymIntList{3, 1};
  r.impl()->meta.dtype = kFloat64;
  EXPECT_ERROR(verify(g), "recorded as f64[2, 3] but the shape rule gives f32[2, 3]");
}

TEST(GraphVerifier, RejectsUseBeforeDefinition) {
  Graph g;
  Tensor x = g.add_input("x", meta({3}));
  Tensor a = g.add_op1(OpId::neg, {x});
  Tensor b = g.add_op1(OpId::exp, {a});
  g.set_outputs({b});
  corrupt(g, 1).args[0] = b;  // neg now reads exp's result, which comes later
  EXPECT_ERROR(verify(g), "at node 1 `%1 = neg(%2)", "argument 'self' is used before it is defined (by node 2)");
}

TEST(GraphVerifier, RejectsBadArgumentsAndStructure) {
  Graph g;
  Tensor x = g.add_input("x", meta({3}));
  Tensor a = g.add_op1(OpId::gelu, {x});
  g.set_outputs({a});
  corrupt(g, 1).args[1] = Value(int64_t{3});
  EXPECT_ERROR(verify(g), "at node 1", "argument 'approximate' must be a string, got int");
  corrupt(g, 1).args[1] = Value("none");
  corrupt(g, 1).args.pop_back();
  EXPECT_ERROR(verify(g), "1 arguments, but the schema has 2");
  corrupt(g, 1).args.push_back(Value("none"));
  corrupt(g, 1).args[0] = ones({3});
  EXPECT_ERROR(verify(g), "argument 'self' is a real tensor, not a value of this graph");
  corrupt(g, 1).args[0] = x;
  verify(g);
  corrupt(g, 2).args[0] = Value(1.5);
  EXPECT_ERROR(verify(g), "returned value 0 is not a tensor");
  Graph empty;
  EXPECT_ERROR(verify(empty), "the graph has no output node");
}

TEST(GraphVerifier, AcceptsSymbolicGraphsWithoutRecordingGuards) {
  auto env = std::make_shared<sym::ShapeEnv>();
  SymInt s0 = env->create_symbol(8), s1 = env->create_symbol(5);
  Graph g;
  g.set_shape_env(env);
  Tensor x = g.add_input("x", meta({s0, s1}));
  Tensor y = g.add_input("y", meta({s1}));
  Tensor z = g.add_op1(OpId::add_Tensor, {x, y});
  Tensor n = g.add_op1(OpId::slice_Tensor, {z, 0, 0, s0 - 1});
  g.set_outputs({n});
  size_t guards = env->guards().size();
  verify(g);
  EXPECT_EQ(env->guards().size(), guards);
}

}  // namespace
}  // namespace sinter
