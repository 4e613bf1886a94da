// The graph printer: graphs built by hand print as the exact readable text passes and tests compare against.
#include "ops/op_table.h"
#include "sinter/graph.h"
#include "symbolic/shape_env.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::meta;

TEST(GraphPrinter, MlpWithMultiOutputReduction) {
  Graph g;
  Tensor x = g.add_input("x", meta({4, 768}));
  Tensor w = g.add_input("w", meta({3072, 768}));
  Tensor h = g.add_op1(OpId::linear, {x, w});
  Tensor a = g.add_op1(OpId::gelu, {h, "tanh"});
  std::vector<Tensor> m = g.add_op(OpId::max_dim, {a, 1});
  g.set_outputs({a, m[0]});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[4, 768], %w: f32[3072, 768]):\n"
            "  %2 = linear(%x, %w)  # f32[4, 3072]\n"
            "  %3 = gelu(%2, approximate='tanh')  # f32[4, 3072]\n"
            "  %4, %5 = max.dim(%3, 1)  # f32[4], i64[4]\n"
            "  return (%3, %4)\n");
}

TEST(GraphPrinter, SymbolicSizesPrintAsExpressions) {
  auto env = std::make_shared<sym::ShapeEnv>();
  SymInt s0 = env->create_symbol(8);
  Graph g;
  g.set_shape_env(env);
  Tensor x = g.add_input("x", meta({s0, 768}));
  Tensor w = g.add_input("w", meta({3072, 768}));
  Tensor b = g.add_input("b", meta({3072}));
  Tensor h = g.add_op1(OpId::linear, {x, w, b});
  Tensor v = g.add_op1(OpId::view, {h, SymIntList{s0 * 2, 1536}});
  g.set_outputs({v});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[s0, 768], %w: f32[3072, 768], %b: f32[3072]):\n"
            "  %3 = linear(%x, %w, %b)  # f32[s0, 3072]\n"
            "  %4 = view(%3, [2*s0, 1536])  # f32[2*s0, 1536]\n"
            "  return (%4)\n");
}

TEST(GraphPrinter, ReductionsOmitTrailingDefaultsAndNameKeywords) {
  Graph g;
  Tensor x = g.add_input("x", meta({4, 6}));
  Tensor s = g.add_op1(OpId::sum_dim_IntList, {x, DimList{1}, true});
  Tensor m = g.add_op1(OpId::mean_dim, {x, DimList{0}, false, kFloat64});
  Tensor a = g.add_op1(OpId::amax, {x});
  Tensor v = g.add_op1(OpId::var_correction, {x, DimList{1}, Scalar(0), true});
  g.set_outputs({s, m, a, v});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[4, 6]):\n"
            "  %1 = sum.dim_IntList(%x, [1], True)  # f32[4, 1]\n"
            "  %2 = mean.dim(%x, [0], dtype=f64)  # f64[6]\n"
            "  %3 = amax(%x)  # f32[]\n"
            "  %4 = var.correction(%x, [1], correction=0, keepdim=True)  # f32[4, 1]\n"
            "  return (%1, %2, %3, %4)\n");
}

TEST(GraphPrinter, ScalarsKeepTheirKind) {
  Graph g;
  Tensor x = g.add_input("x", meta({3}));
  Tensor y = g.add_input("y", meta({3}));
  Tensor a = g.add_op1(OpId::add_Tensor, {x, y, 2});
  Tensor b = g.add_op1(OpId::add_Scalar, {a, 1.5});
  Tensor c = g.add_op1(OpId::elu, {b, 1.0});  // 1.0 is not the default 1: it stays
  Tensor d = g.add_op1(OpId::clamp, {c, std::nullopt, 6});
  Tensor e = g.add_op1(OpId::leaky_relu, {d, 1e-05});
  Tensor f = g.add_op1(OpId::div_Tensor_mode, {e, y, "floor"});
  g.set_outputs({f});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[3], %y: f32[3]):\n"
            "  %2 = add.Tensor(%x, %y, alpha=2)  # f32[3]\n"
            "  %3 = add.Scalar(%2, 1.5)  # f32[3]\n"
            "  %4 = elu(%3, 1.0)  # f32[3]\n"
            "  %5 = clamp(%4, None, 6)  # f32[3]\n"
            "  %6 = leaky_relu(%5, 1e-05)  # f32[3]\n"
            "  %7 = div.Tensor_mode(%6, %y, rounding_mode='floor')  # f32[3]\n"
            "  return (%7)\n");
}

TEST(GraphPrinter, SplitReturnsAListAndViewsShowLayouts) {
  Graph g;
  Tensor x = g.add_input("x", meta({8, 4}));
  std::vector<Tensor> parts = g.add_op(OpId::split_Tensor, {x, 3});
  ASSERT_EQ(parts.size(), 3u);
  Tensor c = g.add_op1(OpId::cat, {std::vector<Tensor>{parts[0], parts[2]}});
  Tensor t = g.add_op1(OpId::transpose_int, {x, 0, 1});
  Tensor s = g.add_op1(OpId::select_int, {t, 1, 2});
  g.set_outputs({c, t, s});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[8, 4]):\n"
            "  %1, %2, %3 = split.Tensor(%x, 3)  # f32[3, 4], f32[3, 4]+12, f32[2, 4]+24\n"
            "  %4 = cat([%1, %3])  # f32[5, 4]\n"
            "  %5 = transpose.int(%x, 0, 1)  # f32[4, 8]{1, 4}\n"
            "  %6 = select.int(%5, 1, 2)  # f32[4]+8\n"
            "  return (%4, %5, %6)\n");
}

TEST(GraphPrinter, OptionalTensorListsShowHoles) {
  Graph g;
  Tensor x = g.add_input("x", meta({4, 5}));
  Tensor i = g.add_input("i", meta({2}, kInt64));
  Tensor v = g.add_input("v", meta({4, 2}));
  Tensor r = g.add_op1(OpId::index_put, {x, std::vector<Tensor>{Tensor(), i}, v, true});
  g.set_outputs({r});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[4, 5], %i: i64[2], %v: f32[4, 2]):\n"
            "  %3 = index_put(%x, [None, %i], %v, True)  # f32[4, 5]\n"
            "  return (%3)\n");
}

TEST(GraphPrinter, DtypesMemoryFormatsDevicesAndConstants) {
  Graph g;
  Tensor x = g.add_input("x", meta({2, 3, 4, 5}, kBFloat16));
  Tensor k = g.add_constant(zeros({5}, TensorOptions(kBFloat16)), "bias");
  Tensor q = g.add_input("q", meta({3}, kFloat16, kCUDA));
  Tensor a = g.add_op1(OpId::to_copy, {x, kFloat32});
  Tensor b = g.add_op1(OpId::clone, {x, MemoryFormat::kChannelsLast});
  Tensor c = g.add_op1(OpId::add_Tensor, {b, k});
  Tensor d = g.add_op1(OpId::relu, {q});
  g.set_outputs({a, c, d});
  EXPECT_EQ(g.str(),
            "graph(%x: bf16[2, 3, 4, 5], %q: f16[3]@cuda:0):\n"
            "  %bias = constant()  # bf16[5]\n"
            "  %3 = _to_copy(%x, dtype=f32)  # f32[2, 3, 4, 5]\n"
            "  %4 = clone(%x, memory_format=channels_last)  # bf16[2, 3, 4, 5]{60, 1, 15, 3}\n"
            "  %5 = add.Tensor(%4, %bias)  # bf16[2, 3, 4, 5]{60, 1, 15, 3}\n"
            "  %6 = relu(%q)  # f16[3]@cuda:0\n"
            "  return (%3, %5, %6)\n");
}

TEST(GraphPrinter, InPlaceOpsAndFactories) {
  Graph g;
  Tensor x = g.add_input("x", meta({2, 3}));
  Tensor z = g.add_op1(OpId::zeros, {SymIntList{2, 3}, kInt32});
  Tensor y = g.add_op1(OpId::add__Scalar, {x, 1});
  Tensor f = g.add_op1(OpId::fill__Scalar, {y, 0.5});
  g.set_outputs({z, f});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[2, 3]):\n"
            "  %1 = zeros([2, 3], dtype=i32)  # i32[2, 3]\n"
            "  %2 = add_.Scalar(%x, 1)  # f32[2, 3]\n"
            "  %3 = fill_.Scalar(%2, 0.5)  # f32[2, 3]\n"
            "  return (%1, %3)\n");
}

TEST(GraphPrinter, GraphWithoutInputsOrOutputs) {
  Graph g;
  EXPECT_EQ(g.str(), "graph():\n");
  g.set_outputs({});
  EXPECT_EQ(g.str(), "graph():\n  return ()\n");
}

}  // namespace
}  // namespace sinter
