// Functionalization: graphs with in-place ops, writes through views and written arguments become graphs
// without mutation whose outputs, after the reported write-backs into the inputs, equal exactly what the
// original graph computes (and leaves in its inputs) when it runs eagerly.
#include "passes/functionalize.h"

#include <random>

#include "ops/op_table.h"
#include "sinter/graph.h"
#include "tensor/generator.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

// Real inputs laid out as the graph's input metas say (strides, offset), each in a buffer of its own whose
// other elements hold a marker value, so that a write outside the input's elements shows.
struct Inputs {
  std::vector<Tensor> buffers;
  std::vector<Tensor> views;
};

Inputs make_inputs(const Graph& g, const std::vector<Tensor>& values) {
  Inputs in;
  std::vector<const Node*> nodes = g.input_nodes();
  EXPECT_EQ(nodes.size(), values.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Tensor& v = values[i];
    const TensorMeta& m = nodes[i]->meta();
    // Symbolic strides stand for the dense ones of the real sizes.
    SymIntList strides = m.strides.empty() || m.strides.any_symbolic() ? v.strides() : m.strides;
    int64_t extent = m.offset.hint() + 1;
    for (int64_t d = 0; d < v.dim(); ++d) extent += (v.sizes()[d].hint() - 1) * strides[d].hint();
    Tensor buffer = zeros({extent}, TensorOptions(v.dtype()));
    buffer.fill_(-7);
    Tensor view = buffer.as_strided(v.sizes(), strides, m.offset.hint());
    view.copy_(v);
    in.buffers.push_back(buffer);
    in.views.push_back(view);
  }
  return in;
}

bool is_mutating(const Node& n) {
  if (!n.is_op()) return false;
  const Schema& s = op_def(n.op).schema;
  for (const SchemaArg& a : s.args)
    if (a.is_write) return true;
  return s.is_inplace();
}

// Runs the original graph and the functionalized one on equal inputs and compares everything observable:
// outputs, the inputs' final contents (whole buffers), which outputs alias which inputs and each other.
// Returns the result.
FunctionalizeResult check_functionalize(Graph& g, const std::vector<Tensor>& values) {
  Graph original = g.clone();
  Inputs eager = make_inputs(g, values);
  default_generator().set_state(1234, 0);
  std::vector<Tensor> expected = interpret(original, eager.views);

  FunctionalizeResult r = functionalize(g);
  EXPECT_TRUE(r.changed);
  verify(g);
  EXPECT_FALSE(has_mutations(g));
  for (const Node& n : g.nodes()) EXPECT_FALSE(is_mutating(n)) << n.op_name();

  Inputs compiled = make_inputs(g, values);
  default_generator().set_state(1234, 0);
  std::vector<Tensor> got = interpret(g, compiled.views);
  size_t users = expected.size();
  EXPECT_EQ(got.size(), users + r.mutations.size());
  EXPECT_EQ(r.outputs_aliasing_inputs.size(), users);
  for (const InputMutation& m : r.mutations) {
    EXPECT_GE(m.output_index, static_cast<int>(users));
    for (const Tensor& b : compiled.buffers)  // a write-back never reads an input (the order would matter)
      EXPECT_FALSE(got[m.output_index].storage() == b.storage()) << "mutation output " << m.output_index;
  }
  for (const InputMutation& m : r.mutations) compiled.views[m.input_index].copy_(got[m.output_index]);

  std::vector<Tensor> outs;
  for (size_t i = 0; i < users && i < got.size(); ++i) {
    int alias = r.outputs_aliasing_inputs[i];
    outs.push_back(alias >= 0 ? compiled.views[alias] : got[i]);
    EXPECT_TENSOR_EQ(outs[i], expected[i]) << "output " << i;
    for (size_t j = 0; j < values.size(); ++j) {
      bool in_eager = expected[i].storage() == eager.buffers[j].storage();
      EXPECT_EQ(outs[i].storage() == compiled.buffers[j].storage(), in_eager)
          << "output " << i << ", input " << j;
      if (in_eager) {
        EXPECT_EQ(outs[i].strides().hints(), expected[i].strides().hints()) << "output " << i;
        EXPECT_EQ(outs[i].storage_offset().hint(), expected[i].storage_offset().hint()) << "output " << i;
      }
    }
  }
  for (size_t i = 0; i < outs.size(); ++i)
    for (size_t k = i + 1; k < outs.size(); ++k)
      EXPECT_EQ(outs[i].storage() == outs[k].storage(), expected[i].storage() == expected[k].storage())
          << "outputs " << i << " and " << k;
  for (size_t j = 0; j < values.size(); ++j)
    EXPECT_TENSOR_EQ(compiled.buffers[j], eager.buffers[j]) << "input " << j;

  std::string text = g.str();  // a fixed point
  FunctionalizeResult again = functionalize(g);
  EXPECT_FALSE(again.changed);
  EXPECT_TRUE(again.mutations.empty());
  EXPECT_EQ(g.str(), text);
  return r;
}

std::vector<int> mutation_pairs(const FunctionalizeResult& r) {
  std::vector<int> out;
  for (const InputMutation& m : r.mutations) out.insert(out.end(), {m.input_index, m.output_index});
  return out;
}

using Ints = std::vector<int>;

TEST(Functionalize, InPlaceOnAnIntermediateBecomesFunctional) {
  Graph g = parse_graph(
      "graph(%x: f32[2, 3]):\n"
      "  %1 = mul.Scalar(%x, 2)  # f32[2, 3]\n"
      "  %2 = add_.Scalar(%1, 1)  # f32[2, 3]\n"
      "  %3 = exp(%1)  # f32[2, 3]\n"
      "  return (%3)\n");
  FunctionalizeResult r = check_functionalize(g, {random({2, 3}, kFloat32, 1)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[2, 3]):\n"
            "  %1 = mul.Scalar(%x, 2)  # f32[2, 3]\n"
            "  %2 = add.Scalar(%1, 1)  # f32[2, 3]\n"
            "  %3 = exp(%2)  # f32[2, 3]\n"
            "  return (%3)\n");
  EXPECT_TRUE(r.mutations.empty());
  EXPECT_EQ(r.outputs_aliasing_inputs, Ints{-1});
}

TEST(Functionalize, InPlaceOnAnInputIsReportedAndWrittenBack) {
  Graph g = parse_graph(
      "graph(%x: f32[2, 3], %y: f32[3]):\n"
      "  %2 = add_.Tensor(%x, %y, alpha=2)  # f32[2, 3]\n"
      "  %3 = mul.Tensor(%x, %y)  # f32[2, 3]\n"
      "  return (%3)\n");
  FunctionalizeResult r = check_functionalize(g, {random({2, 3}, kFloat32, 2), random({3}, kFloat32, 3)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[2, 3], %y: f32[3]):\n"
            "  %2 = add.Tensor(%x, %y, alpha=2)  # f32[2, 3]\n"
            "  %3 = mul.Tensor(%2, %y)  # f32[2, 3]\n"
            "  return (%3, %2)\n");
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 1}));
}

TEST(Functionalize, ReturningAnInPlaceResultAliasesTheInput) {
  // return x.add_(1): the caller returns the real x after copying the new value into it.
  Graph g = parse_graph(
      "graph(%x: f32[3], %y: f32[3]):\n"
      "  %2 = add_.Scalar(%x, 1)  # f32[3]\n"
      "  return (%2, %y)\n");
  FunctionalizeResult r = check_functionalize(g, {random({3}, kFloat32, 4), random({3}, kFloat32, 5)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[3], %y: f32[3]):\n"
            "  %2 = add.Scalar(%x, 1)  # f32[3]\n"
            "  return (%x, %y, %2)\n");
  EXPECT_EQ(r.outputs_aliasing_inputs, (Ints{0, 1}));
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 2}));
}

TEST(Functionalize, WriteThroughASelectOfAnInputScattersIntoIt) {
  Graph g = parse_graph(
      "graph(%x: f32[3, 4]):\n"
      "  %1 = select.int(%x, 0, 1)  # f32[4]+4\n"
      "  %2 = mul_.Scalar(%1, 3)  # f32[4]+4\n"
      "  %3 = sum(%x)  # f32[]\n"
      "  return (%3)\n");
  FunctionalizeResult r = check_functionalize(g, {random({3, 4}, kFloat32, 6)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[3, 4]):\n"
            "  %1 = select.int(%x, 0, 1)  # f32[4]+4\n"
            "  %2 = mul.Scalar(%1, 3)  # f32[4]\n"
            "  %3 = as_strided_scatter(%x, %2, [4], [1], 4)  # f32[3, 4]\n"
            "  %4 = sum(%3)  # f32[]\n"
            "  return (%4, %3)\n");
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 1}));
}

TEST(Functionalize, WritesThroughSliceAndTransposeViewsOfAnInput) {
  // The input starts at a storage offset; the scatter offsets count from its first element.
  Graph g = parse_graph(
      "graph(%x: f32[4, 6]+3, %y: f32[4, 2]):\n"
      "  %2 = slice.Tensor(%x, 1, 1, 5, 2)  # f32[4, 2]{6, 2}+4\n"
      "  %3 = add_.Tensor(%2, %y)  # f32[4, 2]{6, 2}+4\n"
      "  %4 = transpose.int(%x, 0, 1)  # f32[6, 4]{1, 6}+3\n"
      "  %5 = select.int(%4, 0, 5)  # f32[4]{6}+8\n"
      "  %6 = neg_(%5)  # f32[4]{6}+8\n"
      "  %7 = mul.Scalar(%x, 2)  # f32[4, 6]\n"
      "  return (%7)\n");
  FunctionalizeResult r = check_functionalize(g, {random({4, 6}, kFloat32, 7), random({4, 2}, kFloat32, 8)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[4, 6]+3, %y: f32[4, 2]):\n"
            "  %2 = slice.Tensor(%x, 1, 1, 5, 2)  # f32[4, 2]{6, 2}+4\n"
            "  %3 = add.Tensor(%2, %y)  # f32[4, 2]\n"
            "  %4 = as_strided_scatter(%x, %3, [4, 2], [6, 2], 1)  # f32[4, 6]\n"
            "  %5 = transpose.int(%4, 0, 1)  # f32[6, 4]{1, 6}\n"
            "  %6 = select.int(%5, 0, 5)  # f32[4]{6}+5\n"
            "  %7 = neg(%6)  # f32[4]\n"
            "  %8 = as_strided_scatter(%4, %7, [4], [6], 5)  # f32[4, 6]\n"
            "  %9 = mul.Scalar(%8, 2)  # f32[4, 6]\n"
            "  return (%9, %8)\n");
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 1}));
}

TEST(Functionalize, WritesThroughViewsOfAnIntermediateReachLaterReads) {
  Graph g = parse_graph(
      "graph(%x: f32[4, 6]):\n"
      "  %1 = mul.Scalar(%x, 2)  # f32[4, 6]\n"
      "  %2 = transpose.int(%1, 0, 1)  # f32[6, 4]{1, 6}\n"
      "  %3 = sub_.Scalar(%2, 1)  # f32[6, 4]{1, 6}\n"
      "  %4 = slice.Tensor(%2, 0, 2)  # f32[4, 4]{1, 6}+2\n"
      "  %5 = neg_(%4)  # f32[4, 4]{1, 6}+2\n"
      "  %6 = exp(%2)  # f32[6, 4]{1, 6}\n"
      "  %7 = add.Tensor(%1, %x)  # f32[4, 6]\n"
      "  return (%6, %7, %4)\n");
  FunctionalizeResult r = check_functionalize(g, {random({4, 6}, kFloat32, 9)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[4, 6]):\n"
            "  %1 = mul.Scalar(%x, 2)  # f32[4, 6]\n"
            "  %2 = transpose.int(%1, 0, 1)  # f32[6, 4]{1, 6}\n"
            "  %3 = sub.Scalar(%2, 1)  # f32[6, 4]{1, 6}\n"
            "  %4 = as_strided_scatter(%1, %3, [6, 4], [1, 6])  # f32[4, 6]\n"
            "  %5 = transpose.int(%4, 0, 1)  # f32[6, 4]{1, 6}\n"
            "  %6 = slice.Tensor(%5, 0, 2)  # f32[4, 4]{1, 6}+2\n"
            "  %7 = neg(%6)  # f32[4, 4]{1, 4}\n"
            "  %8 = as_strided_scatter(%4, %7, [4, 4], [1, 6], 2)  # f32[4, 6]\n"
            "  %9 = transpose.int(%8, 0, 1)  # f32[6, 4]{1, 6}\n"
            "  %10 = exp(%9)  # f32[6, 4]{1, 6}\n"
            "  %11 = add.Tensor(%8, %x)  # f32[4, 6]\n"
            "  %12 = slice.Tensor(%9, 0, 2)  # f32[4, 4]{1, 6}+2\n"
            "  return (%10, %11, %12)\n");
  EXPECT_TRUE(r.mutations.empty());
}

TEST(Functionalize, TwoViewsOfOneBaseSeeEachOthersWrites) {
  // Row 0 and column 0 share x[0, 0]; a view taken after the write sees it too; the returned view stays a
  // view.
  Graph g = parse_graph(
      "graph(%x: f32[4, 4]):\n"
      "  %1 = select.int(%x, 0, 0)  # f32[4]\n"
      "  %2 = select.int(%x, 1, 0)  # f32[4]{4}\n"
      "  %3 = fill_.Scalar(%1, 5)  # f32[4]\n"
      "  %4 = mul.Scalar(%2, 2)  # f32[4]\n"
      "  %5 = transpose.int(%x, 0, 1)  # f32[4, 4]{1, 4}\n"
      "  %6 = add.Scalar(%5, 1)  # f32[4, 4]{1, 4}\n"
      "  return (%4, %6, %2)\n");
  FunctionalizeResult r = check_functionalize(g, {random({4, 4}, kFloat32, 10)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[4, 4]):\n"
            "  %1 = select.int(%x, 1, 0)  # f32[4]{4}\n"
            "  %2 = full([4], 5, dtype=f32)  # f32[4]\n"
            "  %3 = as_strided_scatter(%x, %2, [4], [1])  # f32[4, 4]\n"
            "  %4 = select.int(%3, 1, 0)  # f32[4]{4}\n"
            "  %5 = mul.Scalar(%4, 2)  # f32[4]\n"
            "  %6 = transpose.int(%3, 0, 1)  # f32[4, 4]{1, 4}\n"
            "  %7 = add.Scalar(%6, 1)  # f32[4, 4]{1, 4}\n"
            "  return (%5, %7, %1, %3)\n");
  EXPECT_EQ(r.outputs_aliasing_inputs, (Ints{-1, -1, -1}));
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 3}));
}

TEST(Functionalize, CopyBroadcastsAndConvertsTheSource) {
  Graph g = parse_graph(
      "graph(%x: f64[3, 4], %src: f32[4], %one: i64[1]):\n"
      "  %3 = copy_(%x, %src)  # f64[3, 4]\n"
      "  %4 = select.int(%x, 1, 2)  # f64[3]{4}+2\n"
      "  %5 = copy_(%4, %one)  # f64[3]{4}+2\n"
      "  %6 = sum(%x)  # f64[]\n"
      "  return (%6)\n");
  Tensor one = from_vector<int64_t>({9});
  FunctionalizeResult r =
      check_functionalize(g, {random({3, 4}, kFloat64, 11), random({4}, kFloat32, 12), one});
  EXPECT_EQ(g.str(),
            "graph(%x: f64[3, 4], %src: f32[4], %one: i64[1]):\n"
            "  %3 = expand(%src, [3, 4])  # f32[3, 4]{0, 1}\n"
            "  %4 = _to_copy(%3, dtype=f64)  # f64[3, 4]\n"
            "  %5 = expand(%one, [3])  # i64[3]{0}\n"
            "  %6 = _to_copy(%5, dtype=f64)  # f64[3]\n"
            "  %7 = as_strided_scatter(%4, %6, [3], [4], 2)  # f64[3, 4]\n"
            "  %8 = sum(%7)  # f64[]\n"
            "  return (%8, %7)\n");
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 1}));
}

TEST(Functionalize, FillAndZero) {
  Graph g = parse_graph(
      "graph(%x: i32[3, 4], %y: f32[2, 2]):\n"
      "  %2 = slice.Tensor(%x, 1, 1, 3)  # i32[3, 2]{4, 1}+1\n"
      "  %3 = fill_.Scalar(%2, 7.9)  # i32[3, 2]{4, 1}+1\n"
      "  %4 = zero_(%y)  # f32[2, 2]\n"
      "  %5 = add.Scalar(%x, 1)  # i32[3, 4]\n"
      "  return (%5, %4)\n");
  FunctionalizeResult r = check_functionalize(g, {random({3, 4}, kInt32, 13), random({2, 2}, kFloat32, 14)});
  EXPECT_EQ(g.str(),
            "graph(%x: i32[3, 4], %y: f32[2, 2]):\n"
            "  %2 = full([3, 2], 7.9, dtype=i32)  # i32[3, 2]\n"
            "  %3 = as_strided_scatter(%x, %2, [3, 2], [4, 1], 1)  # i32[3, 4]\n"
            "  %4 = zeros([2, 2], dtype=f32)  # f32[2, 2]\n"
            "  %5 = add.Scalar(%3, 1)  # i32[3, 4]\n"
            "  return (%5, %y, %3, %4)\n");
  EXPECT_EQ(r.outputs_aliasing_inputs, (Ints{-1, 1}));
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 2, 1, 3}));
}

TEST(Functionalize, MaskedFillIndexPutAndScatter) {
  Graph g = parse_graph(
      "graph(%x: f32[4, 5], %mask: b8[4, 5], %rows: i64[2], %vals: f32[2, 5], %index: i64[2, 5], %src: "
      "f32[2, 5]):\n"
      "  %6 = masked_fill_.Scalar(%x, %mask, -1.5)  # f32[4, 5]\n"
      "  %7 = index_put_(%x, [%rows], %vals, True)  # f32[4, 5]\n"
      "  %8 = scatter_.src(%x, 0, %index, %src)  # f32[4, 5]\n"
      "  %9 = scatter_add_(%x, 0, %index, %src)  # f32[4, 5]\n"
      "  return (%x)\n");
  Tensor mask = random({4, 5}, kBool, 15);
  Tensor rows = from_vector<int64_t>({3, 1});
  Tensor index = from_vector<int64_t>({0, 1, 2, 3, 0, 3, 2, 1, 0, 3}, {2, 5});
  FunctionalizeResult r =
      check_functionalize(g, {random({4, 5}, kFloat32, 16), mask, rows, random({2, 5}, kFloat32, 17), index,
                              random({2, 5}, kFloat32, 18)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[4, 5], %mask: b8[4, 5], %rows: i64[2], %vals: f32[2, 5], %index: i64[2, 5], %src: "
            "f32[2, 5]):\n"
            "  %6 = masked_fill.Scalar(%x, %mask, -1.5)  # f32[4, 5]\n"
            "  %7 = index_put(%6, [%rows], %vals, True)  # f32[4, 5]\n"
            "  %8 = scatter.src(%7, 0, %index, %src)  # f32[4, 5]\n"
            "  %9 = scatter_add(%8, 0, %index, %src)  # f32[4, 5]\n"
            "  return (%x, %9)\n");
  EXPECT_EQ(r.outputs_aliasing_inputs, (Ints{0}));
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 1}));
}

TEST(Functionalize, ChainedInPlaceOps) {
  Graph g = parse_graph(
      "graph(%x: f32[3, 4], %y: f32[3, 4]):\n"
      "  %2 = add_.Scalar(%x, 1)  # f32[3, 4]\n"
      "  %3 = mul_.Tensor(%2, %y)  # f32[3, 4]\n"
      "  %4 = clamp_(%3, -1, 2)  # f32[3, 4]\n"
      "  %5 = select.int(%4, 0, 2)  # f32[4]+8\n"
      "  %6 = div_.Scalar(%5, 4)  # f32[4]+8\n"
      "  %7 = pow_.Scalar(%6, 2)  # f32[4]+8\n"
      "  %8 = sigmoid_(%y)  # f32[3, 4]\n"
      "  %9 = tanh_(%8)  # f32[3, 4]\n"
      "  %10 = relu_(%9)  # f32[3, 4]\n"
      "  %11 = exp_(%10)  # f32[3, 4]\n"
      "  %12 = sub_.Tensor(%11, %x)  # f32[3, 4]\n"
      "  return (%7, %12)\n");
  FunctionalizeResult r =
      check_functionalize(g, {random({3, 4}, kFloat32, 19), random({3, 4}, kFloat32, 20)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[3, 4], %y: f32[3, 4]):\n"
            "  %2 = add.Scalar(%x, 1)  # f32[3, 4]\n"
            "  %3 = mul.Tensor(%2, %y)  # f32[3, 4]\n"
            "  %4 = clamp(%3, -1, 2)  # f32[3, 4]\n"
            "  %5 = select.int(%x, 0, 2)  # f32[4]+8\n"
            "  %6 = select.int(%4, 0, 2)  # f32[4]+8\n"
            "  %7 = div.Scalar(%6, 4)  # f32[4]\n"
            "  %8 = as_strided_scatter(%4, %7, [4], [1], 8)  # f32[3, 4]\n"
            "  %9 = select.int(%8, 0, 2)  # f32[4]+8\n"
            "  %10 = pow.Tensor_Scalar(%9, 2)  # f32[4]\n"
            "  %11 = as_strided_scatter(%8, %10, [4], [1], 8)  # f32[3, 4]\n"
            "  %12 = sigmoid(%y)  # f32[3, 4]\n"
            "  %13 = tanh(%12)  # f32[3, 4]\n"
            "  %14 = relu(%13)  # f32[3, 4]\n"
            "  %15 = exp(%14)  # f32[3, 4]\n"
            "  %16 = sub.Tensor(%15, %11)  # f32[3, 4]\n"
            "  return (%5, %y, %11, %16)\n");
  EXPECT_EQ(r.outputs_aliasing_inputs, (Ints{-1, 1}));
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 2, 1, 3}));
}

TEST(Functionalize, BatchNormInTrainingUpdatesItsRunningStats) {
  Graph g = parse_graph(
      "graph(%x: f32[4, 3, 2, 2], %w: f32[3], %b: f32[3], %mean: f32[3], %var: f32[3]):\n"
      "  %5 = batch_norm(%x, %w, %b, %mean, %var, True, 0.1, 1e-05)  # f32[4, 3, 2, 2]\n"
      "  %6 = relu_(%5)  # f32[4, 3, 2, 2]\n"
      "  return (%6)\n");
  FunctionalizeResult r = check_functionalize(
      g, {random({4, 3, 2, 2}, kFloat32, 21), random({3}, kFloat32, 22), random({3}, kFloat32, 23),
          random({3}, kFloat32, 24), testing::random_positive({3}, kFloat32, 0.5, 2.0, 25)});
  EXPECT_EQ(
      g.str(),
      "graph(%x: f32[4, 3, 2, 2], %w: f32[3], %b: f32[3], %mean: f32[3], %var: f32[3]):\n"
      "  %5, %6, %7 = batch_norm_functional(%x, %w, %b, %mean, %var, True, 0.1, 1e-05)  # f32[4, 3, 2, 2], "
      "f32[3], f32[3]\n"
      "  %8 = relu(%5)  # f32[4, 3, 2, 2]\n"
      "  return (%8, %6, %7)\n");
  EXPECT_EQ(mutation_pairs(r), (Ints{3, 1, 4, 2}));
}

TEST(Functionalize, BatchNormInEvalWritesNothing) {
  Graph g = parse_graph(
      "graph(%x: f32[4, 3], %mean: f32[3], %var: f32[3], %y: f32[3]):\n"
      "  %4 = batch_norm(%x, None, None, %mean, %var, False, 0.1, 1e-05)  # f32[4, 3]\n"
      "  %5 = add_.Scalar(%y, 1)  # f32[3]\n"
      "  return (%4)\n");
  FunctionalizeResult r = check_functionalize(
      g, {random({4, 3}, kFloat32, 26), random({3}, kFloat32, 27),
          testing::random_positive({3}, kFloat32, 0.5, 2.0, 28), random({3}, kFloat32, 29)});
  EXPECT_EQ(mutation_pairs(r), (Ints{3, 1}));
}

TEST(Functionalize, ViewOutputsOfInputsStayViews) {
  // x[0].add_(1) returned: a view of the real x, which holds the new row after the write-back.
  Graph g = parse_graph(
      "graph(%x: f32[3, 4]):\n"
      "  %1 = select.int(%x, 0, 0)  # f32[4]\n"
      "  %2 = add_.Scalar(%1, 1)  # f32[4]\n"
      "  %3 = transpose.int(%x, 0, 1)  # f32[4, 3]{1, 4}\n"
      "  return (%2, %3, %x)\n");
  Tensor x = random({3, 4}, kFloat32, 30);
  FunctionalizeResult r = check_functionalize(g, {x});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[3, 4]):\n"
            "  %1 = select.int(%x, 0, 0)  # f32[4]\n"
            "  %2 = add.Scalar(%1, 1)  # f32[4]\n"
            "  %3 = as_strided_scatter(%x, %2, [4], [1])  # f32[3, 4]\n"
            "  %4 = transpose.int(%x, 0, 1)  # f32[4, 3]{1, 4}\n"
            "  return (%1, %4, %x, %3)\n");
  EXPECT_EQ(r.outputs_aliasing_inputs, (Ints{-1, -1, 0}));
  Tensor real = x.clone();
  std::vector<Tensor> out = interpret(g, {real});
  EXPECT_TRUE(out[0].storage() == real.storage());
  EXPECT_TRUE(out[1].storage() == real.storage());
}

TEST(Functionalize, OutputViewOfAWrittenIntermediateIsDerivedFromItsFinalValue) {
  Graph g = parse_graph(
      "graph(%x: f32[3, 4]):\n"
      "  %1 = mul.Scalar(%x, 2)  # f32[3, 4]\n"
      "  %2 = select.int(%1, 1, 1)  # f32[3]{4}+1\n"
      "  %3 = add_.Scalar(%1, 1)  # f32[3, 4]\n"
      "  return (%2, %1)\n");
  check_functionalize(g, {random({3, 4}, kFloat32, 31)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[3, 4]):\n"
            "  %1 = mul.Scalar(%x, 2)  # f32[3, 4]\n"
            "  %2 = add.Scalar(%1, 1)  # f32[3, 4]\n"
            "  %3 = select.int(%2, 1, 1)  # f32[3]{4}+1\n"
            "  return (%3, %2)\n");
}

TEST(Functionalize, SplitAndUnbindViews) {
  Graph g = parse_graph(
      "graph(%x: f32[6, 2]):\n"
      "  %1, %2, %3 = split.Tensor(%x, 2)  # f32[2, 2], f32[2, 2]+4, f32[2, 2]+8\n"
      "  %4 = mul_.Scalar(%2, 10)  # f32[2, 2]+4\n"
      "  %5, %6 = unbind.int(%3, 1)  # f32[2]{2}+8, f32[2]{2}+9\n"
      "  %7 = add_.Tensor(%6, %5)  # f32[2]{2}+9\n"
      "  %8 = add.Tensor(%1, %2)  # f32[2, 2]\n"
      "  return (%8, %3)\n");
  FunctionalizeResult r = check_functionalize(g, {random({6, 2}, kFloat32, 32)});
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 2}));
}

TEST(Functionalize, AsStridedAndViewChains) {
  Graph g = parse_graph(
      "graph(%x: f32[4, 4]+2):\n"
      "  %1 = as_strided(%x, [2, 2], [1, 4], 3)  # f32[2, 2]{1, 4}+3\n"
      "  %2 = mul_.Scalar(%1, -2)  # f32[2, 2]{1, 4}+3\n"
      "  %3 = view(%x, [2, 8])  # f32[2, 8]+2\n"
      "  %4 = unsqueeze(%3, 0)  # f32[1, 2, 8]+2\n"
      "  %5 = squeeze.dims(%4, [0])  # f32[2, 8]+2\n"
      "  %6 = permute(%5, [1, 0])  # f32[8, 2]{1, 8}+2\n"
      "  %7, %8 = chunk(%6, 2)  # f32[4, 2]{1, 8}+2, f32[4, 2]{1, 8}+6\n"
      "  %9 = add_.Scalar(%8, 100)  # f32[4, 2]{1, 8}+6\n"
      "  %10 = exp(%6)  # f32[8, 2]{1, 8}\n"
      "  return (%10)\n");
  FunctionalizeResult r = check_functionalize(g, {random({4, 4}, kFloat32, 33)});
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 1}));
}

TEST(Functionalize, InputWithGapsIsWrittenThroughADenseCopy) {
  // x is a window of a bigger buffer (strides with gaps, dims in decreasing-stride order 2, 1, 0); its views
  // (including a view() that merges dims) replay on a dense copy in the same dimension order.
  Graph g = parse_graph(
      "graph(%x: f32[2, 3, 4]{1, 2, 16}):\n"
      "  %1 = permute(%x, [2, 1, 0])  # f32[4, 3, 2]{16, 2, 1}\n"
      "  %2 = view(%1, [4, 6])  # f32[4, 6]{16, 1}\n"
      "  %3 = select.int(%2, 1, 4)  # f32[4]{16}+4\n"
      "  %4 = add_.Scalar(%3, 1)  # f32[4]{16}+4\n"
      "  %5 = sum.dim_IntList(%2, [1])  # f32[4]\n"
      "  return (%5, %2)\n");
  Tensor x = random({2, 3, 4}, kFloat32, 34);
  FunctionalizeResult r = check_functionalize(g, {x});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[2, 3, 4]{1, 2, 16}):\n"
            "  %1 = permute(%x, [2, 1, 0])  # f32[4, 3, 2]{16, 2, 1}\n"
            "  %2 = view(%1, [4, 6])  # f32[4, 6]{16, 1}\n"
            "  %3 = select.int(%2, 1, 4)  # f32[4]{16}+4\n"
            "  %4 = add.Scalar(%3, 1)  # f32[4]\n"
            "  %5 = permute(%x, [2, 1, 0])  # f32[4, 3, 2]{16, 2, 1}\n"
            "  %6 = clone(%5, memory_format=contiguous_format)  # f32[4, 3, 2]\n"
            "  %7 = permute(%6, [2, 1, 0])  # f32[2, 3, 4]{1, 2, 6}\n"
            "  %8 = as_strided_scatter(%7, %4, [4], [6], 4)  # f32[2, 3, 4]{1, 2, 6}\n"
            "  %9 = permute(%8, [2, 1, 0])  # f32[4, 3, 2]\n"
            "  %10 = view(%9, [4, 6])  # f32[4, 6]\n"
            "  %11 = sum.dim_IntList(%10, [1])  # f32[4]\n"
            "  return (%11, %2, %8)\n");
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 2}));
}

TEST(Functionalize, RandomInPlaceOpsDrawTheSameNumbers) {
  Graph g = parse_graph(
      "graph(%x: f32[3, 5], %y: f64[4]):\n"
      "  %2 = select.int(%x, 0, 1)  # f32[5]+5\n"
      "  %3 = uniform_(%2, -2.0, 3.0)  # f32[5]+5\n"
      "  %4 = slice.Tensor(%x, 1, 0, 5, 2)  # f32[3, 3]{5, 2}\n"
      "  %5 = normal_(%4, 1.0, 0.5)  # f32[3, 3]{5, 2}\n"
      "  %6 = uniform_(%y)  # f64[4]\n"
      "  return (%x)\n");
  FunctionalizeResult r = check_functionalize(g, {random({3, 5}, kFloat32, 35), random({4}, kFloat64, 36)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[3, 5], %y: f64[4]):\n"
            "  %2 = rand([5], dtype=f32)  # f32[5]\n"
            "  %3 = _to_copy(%2, dtype=f64)  # f64[5]\n"
            "  %4 = mul.Scalar(%3, 5.0)  # f64[5]\n"
            "  %5 = add.Scalar(%4, -2.0)  # f64[5]\n"
            "  %6 = _to_copy(%5, dtype=f32)  # f32[5]\n"
            "  %7 = as_strided_scatter(%x, %6, [5], [1], 5)  # f32[3, 5]\n"
            "  %8 = normal.float_float(1.0, 0.5, [3, 3], dtype=f32)  # f32[3, 3]\n"
            "  %9 = as_strided_scatter(%7, %8, [3, 3], [5, 2])  # f32[3, 5]\n"
            "  %10 = rand([4], dtype=f64)  # f64[4]\n"
            "  return (%x, %9, %10)\n");
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 1, 1, 2}));
}

TEST(Functionalize, SymbolicSizes) {
  Graph g = parse_graph(
      "graph(%x: f32[s0, 4], %y: f32[4]):\n"
      "  %2 = select.int(%x, 0, 1)  # f32[4]+4\n"
      "  %3 = add_.Tensor(%2, %y)  # f32[4]+4\n"
      "  %4 = mul_.Scalar(%x, 2)  # f32[s0, 4]\n"
      "  %5 = sum.dim_IntList(%x, [1])  # f32[s0]\n"
      "  return (%5)\n");
  Graph copy = g.clone();
  FunctionalizeResult r = check_functionalize(g, {random({5, 4}, kFloat32, 37), random({4}, kFloat32, 38)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[s0, 4], %y: f32[4]):\n"
            "  %2 = select.int(%x, 0, 1)  # f32[4]+4\n"
            "  %3 = add.Tensor(%2, %y)  # f32[4]\n"
            "  %4 = as_strided_scatter(%x, %3, [4], [1], 4)  # f32[s0, 4]\n"
            "  %5 = mul.Scalar(%4, 2)  # f32[s0, 4]\n"
            "  %6 = sum.dim_IntList(%5, [1])  # f32[s0]\n"
            "  return (%6, %5)\n");
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 1}));
  check_functionalize(copy, {random({3, 4}, kFloat32, 39), random({4}, kFloat32, 40)});
}

TEST(Functionalize, InPlaceResultsKeepSelfsDtype) {
  // bf16 += f32 computes in float32 and rounds once into bf16; int32 *= int64 wraps as int32.
  Graph g = parse_graph(
      "graph(%x: bf16[5], %y: f32[5], %i: i32[5], %j: i64[5]):\n"
      "  %4 = add_.Tensor(%x, %y)  # bf16[5]\n"
      "  %5 = mul_.Tensor(%i, %j)  # i32[5]\n"
      "  %6 = mul_.Scalar(%x, 1.5)  # bf16[5]\n"
      "  return (%6, %5)\n");
  FunctionalizeResult r = check_functionalize(g, {random({5}, kBFloat16, 42), random({5}, kFloat32, 43),
                                                  random({5}, kInt32, 44), random({5}, kInt64, 45)});
  EXPECT_EQ(g.str(),
            "graph(%x: bf16[5], %y: f32[5], %i: i32[5], %j: i64[5]):\n"
            "  %4 = add.Tensor(%x, %y)  # f32[5]\n"
            "  %5 = _to_copy(%4, dtype=bf16)  # bf16[5]\n"
            "  %6 = mul.Tensor(%i, %j)  # i64[5]\n"
            "  %7 = _to_copy(%6, dtype=i32)  # i32[5]\n"
            "  %8 = mul.Scalar(%5, 1.5)  # bf16[5]\n"
            "  return (%x, %i, %8, %7)\n");
  EXPECT_EQ(r.outputs_aliasing_inputs, (Ints{0, 2}));
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 2, 2, 3}));
}

TEST(Functionalize, ZeroDimAndEmptyWrites) {
  Graph g = parse_graph(
      "graph(%x: f32[3], %e: f32[0, 4], %s: f32[]):\n"
      "  %3 = select.int(%x, 0, 1)  # f32[]+1\n"
      "  %4 = fill_.Scalar(%3, 2.5)  # f32[]+1\n"
      "  %5 = add_.Scalar(%e, 1)  # f32[0, 4]\n"
      "  %6 = slice.Tensor(%x, 0, 3)  # f32[0]+3\n"
      "  %7 = zero_(%6)  # f32[0]+3\n"
      "  %8 = mul_.Tensor(%s, %3)  # f32[]\n"
      "  return (%x, %e, %8)\n");
  FunctionalizeResult r = check_functionalize(
      g, {random({3}, kFloat32, 46), random({0, 4}, kFloat32, 47), random({}, kFloat32, 48)});
  EXPECT_EQ(r.outputs_aliasing_inputs, (Ints{0, 1, 2}));
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 3, 1, 4, 2, 5}));
}

TEST(Functionalize, ViewsOfInPlaceResultsAreViewsOfTheirSelf) {
  // x.add_(1).t() returned: a transpose of the real x; its reads inside the graph see the new values.
  Graph g = parse_graph(
      "graph(%x: f32[2, 3]):\n"
      "  %1 = add_.Scalar(%x, 1)  # f32[2, 3]\n"
      "  %2 = transpose.int(%1, 0, 1)  # f32[3, 2]{1, 3}\n"
      "  %3 = relu(%2)  # f32[3, 2]{1, 3}\n"
      "  return (%2, %3)\n");
  check_functionalize(g, {random({2, 3}, kFloat32, 49)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[2, 3]):\n"
            "  %1 = add.Scalar(%x, 1)  # f32[2, 3]\n"
            "  %2 = transpose.int(%x, 0, 1)  # f32[3, 2]{1, 3}\n"
            "  %3 = transpose.int(%1, 0, 1)  # f32[3, 2]{1, 3}\n"
            "  %4 = relu(%3)  # f32[3, 2]{1, 3}\n"
            "  return (%2, %4, %1)\n");
}

// Random programs of views, in-place ops and reads on two inputs (ops whose arguments do not fit are
// skipped). An in-place op reads another value only when that value lies in a different base, or is self
// itself: eager results of partially overlapping reads and writes depend on the kernel's order.
TEST(Functionalize, RandomProgramsMatchEager) {
  std::mt19937 rng(2024);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int checked = 0;
  for (int program = 0; program < 300; ++program) {
    Graph g;
    std::vector<Tensor> values = {g.add_input("x", TensorMeta{{4, 6}, {}, 0, kFloat32, kCPU}),
                                  g.add_input("y", TensorMeta{{3, 4, 2}, {}, 0, kFloat32, kCPU})};
    std::vector<int> base = {0, 1};  // which input's storage each value lies in; -1: a fresh value
    auto add = [&](OpId op, Args args, int b) {
      try {
        for (const Tensor& t : g.add_op(op, std::move(args))) {
          values.push_back(t);
          base.push_back(b);
        }
      } catch (const Error&) {
      }
    };
    for (int step = 0; step < 16; ++step) {
      int i = pick(static_cast<int>(values.size()));
      const Tensor v = values[i];
      int rank = static_cast<int>(v.dim()), d = rank ? pick(rank) : 0;
      int64_t size = rank ? v.sizes()[d].hint() : 0;
      int b = base[i] >= 0 ? base[i] : -2 - i;  // fresh values are bases of their own
      int j = pick(static_cast<int>(values.size()));
      bool other_ok = j == i || (base[j] != b && !(base[j] < 0 && -2 - j == b));
      switch (pick(15)) {
        case 0: add(OpId::select_int, {v, d, pick(std::max<int64_t>(size, 1))}, b); break;
        case 1: add(OpId::slice_Tensor, {v, d, pick(3), 2 + pick(6), 1 + pick(2)}, b); break;
        case 2: add(OpId::transpose_int, {v, d, rank ? pick(rank) : 0}, b); break;
        case 3: add(OpId::unsqueeze, {v, rank ? pick(rank + 1) : 0}, b); break;
        case 4: add(OpId::split_Tensor, {v, 1 + pick(3), d}, b); break;
        case 5: add(OpId::add__Scalar, {v, 1 + pick(3)}, b); break;
        case 6: add(OpId::mul__Scalar, {v, -2}, b); break;
        case 7: add(OpId::fill__Scalar, {v, pick(5)}, b); break;
        case 8:
          if (other_ok) add(OpId::copy_, {v, values[j]}, b);
          break;
        case 9:
          if (other_ok) add(OpId::add__Tensor, {v, values[j]}, b);
          break;
        case 10: add(OpId::mul_Scalar, {v, 3}, -1); break;
        case 11: add(OpId::view, {v, SymIntList{v.numel()}}, b); break;
        case 12: {
          std::vector<int64_t> dims(rank);
          for (int k = 0; k < rank; ++k) dims[k] = rank - 1 - k;
          add(OpId::permute, {v, SymIntList(dims)}, b);
          break;
        }
        case 13: add(OpId::relu_, {v}, b); break;
        case 14: add(OpId::uniform_, {v, -1.0, 1.0}, b); break;
      }
    }
    // Return a few values, reads of the inputs, and the inputs themselves sometimes.
    std::vector<Tensor> outs;
    for (int k = 0; k < 3; ++k) outs.push_back(values[2 + pick(static_cast<int>(values.size()) - 2)]);
    outs.push_back(g.add_op1(OpId::mul_Scalar, {values[0], 1}));
    outs.push_back(g.add_op1(OpId::mul_Scalar, {values[1], 1}));
    if (pick(2)) outs.push_back(values[pick(2)]);
    g.set_outputs(outs);
    if (!has_mutations(g)) continue;
    SCOPED_TRACE(g.str());
    check_functionalize(
        g, {random({4, 6}, kFloat32, 100 + program), random({3, 4, 2}, kFloat32, 200 + program)});
    ++checked;
  }
  EXPECT_GT(checked, 200);
}

TEST(Functionalize, SymbolicWindows) {
  // Strides and offsets of the windows are symbolic; one graph serves every size.
  Graph g = parse_graph(
      "graph(%x: f32[s0, s1], %y: f32[s0]):\n"
      "  %2 = mul_.Scalar(%x, 2)  # f32[s0, s1]\n"
      "  %3 = transpose.int(%x, 0, 1)  # f32[s1, s0]{1, s1}\n"
      "  %4 = select.int(%3, 0, -1)  # f32[s0]{s1}+(s1 - 1)\n"
      "  %5 = copy_(%4, %y)  # f32[s0]{s1}+(s1 - 1)\n"
      "  %6 = slice.Tensor(%x, 0, 1)  # f32[s0 - 1, s1]+s1\n"
      "  %7 = neg_(%6)  # f32[s0 - 1, s1]+s1\n"
      "  %8 = sum.dim_IntList(%3, [1])  # f32[s1]\n"
      "  return (%8, %4)\n");
  Graph copy = g.clone();
  check_functionalize(g, {random({5, 3}, kFloat32, 50), random({5}, kFloat32, 51)});
  EXPECT_EQ(g.str(),
            "graph(%x: f32[s0, s1], %y: f32[s0]):\n"
            "  %2 = mul.Scalar(%x, 2)  # f32[s0, s1]\n"
            "  %3 = transpose.int(%x, 0, 1)  # f32[s1, s0]{1, s1}\n"
            "  %4 = select.int(%3, 0, -1)  # f32[s0]{s1}+(s1 - 1)\n"
            "  %5 = _to_copy(%y)  # f32[s0]\n"
            "  %6 = as_strided_scatter(%2, %5, [s0], [s1], s1 - 1)  # f32[s0, s1]\n"
            "  %7 = slice.Tensor(%6, 0, 1)  # f32[s0 - 1, s1]+(s1)\n"
            "  %8 = neg(%7)  # f32[s0 - 1, s1]\n"
            "  %9 = as_strided_scatter(%6, %8, [s0 - 1, s1], [s1, 1], s1)  # f32[s0, s1]\n"
            "  %10 = transpose.int(%9, 0, 1)  # f32[s1, s0]{1, s1}\n"
            "  %11 = sum.dim_IntList(%10, [1])  # f32[s1]\n"
            "  return (%11, %4, %9)\n");
  check_functionalize(copy, {random({2, 7}, kFloat32, 52), random({2}, kFloat32, 53)});
}

TEST(Functionalize, GraphsWithoutMutationAreLeftAlone) {
  Graph g = parse_graph(
      "graph(%x: f32[3, 4]):\n"
      "  %1 = transpose.int(%x, 0, 1)  # f32[4, 3]{1, 4}\n"
      "  %2 = relu(%1)  # f32[4, 3]{1, 4}\n"
      "  return (%2, %x, %1)\n");
  std::string text = g.str();
  EXPECT_FALSE(has_mutations(g));
  FunctionalizeResult r = functionalize(g);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(g.str(), text);
  EXPECT_EQ(r.outputs_aliasing_inputs, (Ints{-1, 0, -1}));
}

TEST(Functionalize, WritesIntoConstantsAreErrors) {
  Graph into_constant = parse_graph(
      "graph(%x: f32[3]):\n"
      "  %w = constant()  # f32[3]\n"
      "  %2 = add_.Tensor(%w, %x)  # f32[3]\n"
      "  return (%2)\n");
  EXPECT_ERROR(functionalize(into_constant), "add_.Tensor writes into constant 'w'");
}

TEST(Functionalize, BuildsFromCodeToo) {
  // The same as InPlaceOnAnInputIsReportedAndWrittenBack, built with add_input/add_op.
  Graph g;
  Tensor x = g.add_input("x", TensorMeta{{2, 3}, {}, 0, kFloat32, kCPU});
  Tensor row = g.add_op1(OpId::select_int, {x, 0, 1});
  g.add_op1(OpId::fill__Scalar, {row, 2.5});
  Tensor y = g.add_op1(OpId::neg, {x});
  g.set_outputs({y});
  FunctionalizeResult r = check_functionalize(g, {random({2, 3}, kFloat32, 41)});
  EXPECT_EQ(mutation_pairs(r), (Ints{0, 1}));
}

}  // namespace
}  // namespace sinter
