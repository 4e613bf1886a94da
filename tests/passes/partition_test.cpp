// The joint-graph partitioner: text in, the forward and backward graphs out, and both halves together compute what
// the joint graph does.
#include "passes/partition.h"

#include "pass_testing.h"

namespace sinter::testing {
namespace {

// linear -> relu -> linear, with the backward of both linears and the relu (the derivative table's formulas).
constexpr const char* kMlpJoint = R"(graph(%x: f32[4, 8], %w1: f32[16, 8], %w2: f32[2, 16], %t: f32[4, 2]):
  %4 = linear(%x, %w1)  # f32[4, 16]
  %5 = relu(%4)  # f32[4, 16]
  %6 = linear(%5, %w2)  # f32[4, 2]
  %7 = matmul(%t, %w2)  # f32[4, 16]
  %8 = transpose.int(%t, 0, 1)  # f32[2, 4]{1, 2}
  %9 = mm(%8, %5)  # f32[2, 16]
  %10 = gt.Scalar(%5, 0)  # b8[4, 16]
  %11 = where.ScalarOther(%10, %7, 0)  # f32[4, 16]
  %12 = transpose.int(%11, 0, 1)  # f32[16, 4]{1, 16}
  %13 = mm(%12, %x)  # f32[16, 8]
  return (%6, %13, %9)
)";

passes::JointSpec mlp_spec() {
  passes::JointSpec spec;
  spec.tangent = {false, false, false, true};
  spec.free_to_keep = {false, true, true, false};
  spec.forward_outputs = {0};
  spec.backward_outputs = {1, 2};
  return spec;
}

// A joint graph of (x, t): forward output 0, backward output 1 (the gradient of x).
passes::JointSpec one_in_one_tangent_spec() {
  passes::JointSpec spec;
  spec.tangent = {false, true};
  spec.free_to_keep = {false, false};
  spec.forward_outputs = {0};
  spec.backward_outputs = {1};
  return spec;
}

TEST(Partition, KeepsTheGemmOutputAndRecomputesTheElementwiseOp) {
  Graph joint = parse_graph(kMlpJoint);
  passes::PartitionResult r = passes::partition_joint(joint, mlp_spec());
  // The forward keeps the first linear's output (relu is recomputed from it) and the inputs the backward reads; the
  // parameter costs nothing to keep.
  EXPECT_EQ(print_graph(r.forward), R"(graph(%x: f32[4, 8], %w1: f32[16, 8], %w2: f32[2, 16]):
  %3 = linear(%x, %w1)  # f32[4, 16]
  %4 = relu(%3)  # f32[4, 16]
  %5 = linear(%4, %w2)  # f32[4, 2]
  return (%5, %x, %w2, %3)
)");
  EXPECT_EQ(print_graph(r.backward), R"(graph(%kept0: f32[4, 8], %kept2: f32[2, 16], %kept4: f32[4, 16], %t: f32[4, 2]):
  %4 = relu(%kept4)  # f32[4, 16]
  %5 = matmul(%t, %kept2)  # f32[4, 16]
  %6 = transpose.int(%t, 0, 1)  # f32[2, 4]{1, 2}
  %7 = mm(%6, %4)  # f32[2, 16]
  %8 = gt.Scalar(%4, 0)  # b8[4, 16]
  %9 = where.ScalarOther(%8, %5, 0)  # f32[4, 16]
  %10 = transpose.int(%9, 0, 1)  # f32[16, 4]{1, 16}
  %11 = mm(%10, %kept0)  # f32[16, 8]
  return (%11, %7)
)");
  EXPECT_EQ(r.num_kept, 3);
  EXPECT_EQ(r.recomputed_ops, 2);  // relu, and its mask
  EXPECT_EQ(r.kept_bytes, 4 * 8 * 4 + 4 * 16 * 4);  // x and the linear's output; the parameter costs nothing
  EXPECT_EQ(r.kept_bytes_naive, 4 * 8 * 4 + 4 * 16 * 4 + 4 * 16);  // x, relu's output and its bool mask
  EXPECT_NE(r.summary.find("recomputed 2 ops"), std::string::npos) << r.summary;
}

TEST(Partition, BothHalvesComputeWhatTheJointGraphDoes) {
  Graph joint = parse_graph(kMlpJoint);
  passes::PartitionResult r = passes::partition_joint(joint, mlp_spec());
  std::vector<Tensor> in = random_inputs(joint, 3);
  std::vector<Tensor> want = interpret(joint, in);
  std::vector<Tensor> fwd = interpret(r.forward, {in[0], in[1], in[2]});
  std::vector<Tensor> bwd_in(fwd.begin() + 1, fwd.end());
  bwd_in.push_back(in[3]);
  std::vector<Tensor> bwd = interpret(r.backward, bwd_in);
  EXPECT_TRUE(equal(fwd[0], want[0]));
  EXPECT_TRUE(equal(bwd[0], want[1]));
  EXPECT_TRUE(equal(bwd[1], want[2]));
}

// A chain of element-wise ops costs the same to keep at any point: the cut keeps one value, not every value the
// backward reads.
TEST(Partition, AnElementwiseChainKeepsOneValue) {
  Graph joint = parse_graph(R"(graph(%x: f32[64], %t: f32[64]):
  %2 = sin(%x)  # f32[64]
  %3 = exp(%2)  # f32[64]
  %4 = tanh(%3)  # f32[64]
  %5 = mul.Tensor(%t, %3)  # f32[64]
  %6 = cos(%x)  # f32[64]
  %7 = mul.Tensor(%5, %6)  # f32[64]
  %8 = mul.Tensor(%7, %2)  # f32[64]
  return (%4, %8)
)");
  passes::PartitionResult r = passes::partition_joint(joint, one_in_one_tangent_spec());
  EXPECT_EQ(r.num_kept, 1);
  EXPECT_EQ(r.kept_bytes, 64 * 4);
  EXPECT_EQ(r.kept_bytes_naive, 3 * 64 * 4);  // sin, exp and cos: the cut keeps x instead
  std::vector<Tensor> in = random_inputs(joint, 5);
  std::vector<Tensor> want = interpret(joint, in);
  std::vector<Tensor> fwd = interpret(r.forward, {in[0]});
  std::vector<Tensor> bwd = interpret(r.backward, {fwd[1], in[1]});
  EXPECT_TRUE(equal(fwd[0], want[0]));
  EXPECT_TRUE(equal(bwd[0], want[1]));
}

// Random draws are never recomputed: the backward must see the same mask.
TEST(Partition, RandomOpsAreKeptNotRecomputed) {
  Graph joint = parse_graph(R"(graph(%x: f32[32], %t: f32[32]):
  %2 = dropout(%x, 0.5, True)  # f32[32]
  %3 = ne.Scalar(%2, 0)  # b8[32]
  %4 = mul.Scalar(%t, 2.0)  # f32[32]
  %5 = where.ScalarOther(%3, %4, 0)  # f32[32]
  return (%2, %5)
)");
  passes::PartitionResult r = passes::partition_joint(joint, one_in_one_tangent_spec());
  EXPECT_EQ(count_ops(r.backward, OpId::dropout), 0) << r.backward;
  EXPECT_EQ(count_ops(r.forward, OpId::dropout), 1);
}

}  // namespace
}  // namespace sinter::testing
