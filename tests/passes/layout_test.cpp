// The layout pass: float32 convs of one group get channels-last inputs and weights (constants converted at compile
// time), views that the new strides cannot express read a contiguous copy, the outputs keep eager's layouts, and
// the values are eager's; graphs with as_strided, other dtypes or groups stay as they are. Compiled end to end, the
// inductor runs the convs as implicit GEMMs with their epilogues and returns eager's values and strides.
#include "passes/layout.h"

#include <fmt/format.h>

#include "ops/sgemm.h"
#include "pass_testing.h"
#include "sinter/sinter.h"

namespace sinter {
namespace {

using testing::count_ops;
using testing::expect_same_results;
using testing::random;
using testing::random_inputs;

using testing::meta;

// x -> conv(16 -> 32) -> relu -> conv(32 -> 32) + residual -> [view to [N, C, H*W] | mean over H, W]
Graph conv_graph(bool view_tail, int64_t groups = 1, DType dtype = kFloat32, bool weight_input = false) {
  Graph g;
  Tensor x = g.add_input("x", meta({2, 16, 6, 6}, dtype));
  Tensor w1 = g.add_constant(random({32, 16 / groups, 3, 3}, dtype, 2), "w1");
  Tensor b1 = g.add_constant(random({32}, dtype, 3), "b1");
  Tensor w2 = weight_input ? g.add_input("w2", meta({32, 32 / groups, 1, 1}, dtype))
                           : g.add_constant(random({32, 32 / groups, 1, 1}, dtype, 4), "w2");
  Tensor c1 = g.add_op1(OpId::conv2d, {x, w1, b1, SymIntList{1, 1}, SymIntList{1, 1}, SymIntList{1, 1}, groups});
  Tensor r = g.add_op1(OpId::relu, {c1});
  Tensor c2 = g.add_op1(OpId::conv2d, {r, w2, Value(), SymIntList{1, 1}, SymIntList{0, 0}, SymIntList{1, 1}, groups});
  Tensor y = g.add_op1(OpId::add_Tensor, {c2, r, 1});
  Tensor tail = view_tail ? g.add_op1(OpId::view, {y, SymIntList{2, 32, 36}})
                          : g.add_op1(OpId::mean_dim, {y, SymIntList{2, 3}, false, Value()});
  g.set_outputs({tail, y});
  return g;
}

TEST(Layout, ConvsTakeChannelsLastAndOutputsKeepEagerLayouts) {
  for (bool view_tail : {false, true}) {
    SCOPED_TRACE(fmt::format("view tail {}", view_tail));
    Graph g = conv_graph(view_tail);
    Graph before = g.clone();
    ASSERT_TRUE(passes::convs_channels_last(g));
    verify(g);
    for (const Node& n : g.nodes())
      if (n.is_op(OpId::conv2d)) {
        EXPECT_TRUE(n.args[0].tensor().is_contiguous(MemoryFormat::kChannelsLast)) << g;
        EXPECT_TRUE(n.args[1].tensor().is_contiguous(MemoryFormat::kChannelsLast)) << g;
        EXPECT_TRUE(n.output().is_contiguous(MemoryFormat::kChannelsLast)) << g;
      }
    // The constant weights are converted once, here; x by a clone in the graph; the view reads a contiguous
    // copy; the returned y goes back to contiguous.
    EXPECT_EQ(count_ops(g, OpId::clone), view_tail ? 3 : 2) << g;
    const Node& out = g.node(g.num_nodes() - 1);
    for (size_t k = 0; k < out.args.size(); ++k)
      EXPECT_EQ(out.args[k].tensor().strides(), before.node(before.num_nodes() - 1).args[k].tensor().strides());
    expect_same_results(before, g, random_inputs(before), 1e-5);
  }
}

TEST(Layout, LeavesOtherConvsWeightInputsAndAsStridedAlone) {
  std::vector<Graph> cases;
  cases.push_back(conv_graph(false, 1, kFloat32, /*weight_input=*/true));  // a training graph's parameters
  cases.push_back(conv_graph(false, /*groups=*/2));
  cases.push_back(conv_graph(false, 1, kFloat64));
  Graph strided = conv_graph(false);  // returns as_strided(y) [2, 32] in place of the mean
  {
    const Node& out = strided.node(strided.num_nodes() - 1);
    Tensor y = out.args[1].tensor();
    Rewriter rw(strided);
    Tensor s = rw.insert_op1_before(out, OpId::as_strided, {y, SymIntList{2, 32}, SymIntList{1152, 1}, Value()});
    rw.set_output(0, s);
  }
  cases.push_back(std::move(strided));
  for (Graph& g : cases) {
    std::string text = g.str();
    EXPECT_FALSE(passes::convs_channels_last(g)) << text;
    EXPECT_EQ(g.str(), text);
  }
}

// End to end (a frozen module's weights are constants): the inductor's result and strides are eager's, for a
// residual conv block and a ViT-style patch embedding whose conv output is flattened by a view.
TEST(Layout, CompiledConvNetsMatchEager) {
  Tensor w1 = randn({32, 16, 3, 3}), b1 = randn({32}), w2 = randn({32, 32, 1, 1}), wp = randn({64, 32, 2, 2});
  auto block = [&](const Tensor& x) {
    Tensor r = relu(conv2d(x, w1, b1, {1}, {1}));
    Tensor y = add(conv2d(r, w2), r);
    return std::vector<Tensor>{y, conv2d(y, wp, {}, {2}).flatten(2).transpose(1, 2)};
  };
  auto fast = compile(block, {.backend = "inductor", .freeze = true});
  for (int64_t n : {1, 3}) {
    Tensor x = randn({n, 16, 8, 8});
    std::vector<Tensor> want = block(x), got = fast(x);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_CLOSE(got[k], want[k], 1e-4) << "output " << k << " batch " << n;
      EXPECT_EQ(got[k].strides(), want[k].strides()) << "output " << k << " batch " << n;
    }
  }
}

}  // namespace
}  // namespace sinter
