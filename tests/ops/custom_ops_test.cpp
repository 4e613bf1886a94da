// Custom ops (sinter/library.h) in eager mode: registration, calls, the errors of bad registrations and bad
// kernels, autograd through the backward formula, and the graph text of a graph that calls one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "autograd/gradcheck.h"
#include "custom_ops_testing.h"
#include "ops/op_table.h"
#include "sinter/autograd.h"
#include "sinter/graph.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::define_test_ops;
using testing::random;
using testing::rms_gate_reference;

library::ShapeRule same_as_x() {
  return [](const library::OpArgs& a) { return std::vector{library::dense_meta(a.tensor("x"))}; };
}

TEST(CustomOps, RegisteredOpJoinsTheTableAfterTheBuiltIns) {
  define_test_ops();
  ASSERT_TRUE(library::exists("testlib::rms_gate"));
  const OpDef* def = find_op("testlib::rms_gate");
  ASSERT_NE(def, nullptr);
  EXPECT_TRUE(is_custom_op(def->id));
  EXPECT_GE(static_cast<int>(def->id), kNumOps);
  EXPECT_EQ(op_name(def->id), "testlib::rms_gate");
  EXPECT_EQ(&op_def(def->id), def);
  EXPECT_EQ(def->schema.str(), "testlib::rms_gate(Tensor x, Tensor w, float eps=1e-06) -> Tensor");
  EXPECT_EQ(op_id("testlib::rms_gate"), def->id);
  EXPECT_FALSE(library::exists("testlib::nothing"));
  EXPECT_FALSE(library::exists("relu"));  // a built-in is not a custom op
}

TEST(CustomOps, EagerCallMatchesTheReference) {
  define_test_ops();
  Tensor x = random({4, 6}), w = random({6}, kFloat32, 1);
  Tensor want = rms_gate_reference(x, w, 1e-6);
  int before = testing::rms_gate_kernel_calls;
  EXPECT_CLOSE(library::call1("testlib::rms_gate", {x, w}), want);
  EXPECT_EQ(testing::rms_gate_kernel_calls, before + 1);
  library::Op op = library::find("testlib::rms_gate");
  EXPECT_CLOSE(op(x, w), want);
  EXPECT_CLOSE(op.call1({x, w}, {{"eps", 0.5}}), rms_gate_reference(x, w, 0.5));
  EXPECT_CLOSE(op.call1({x, w, 0.5}), rms_gate_reference(x, w, 0.5));
  // A non-contiguous x and a float64 batch of rank 3.
  Tensor xt = random({6, 4}).t();
  EXPECT_CLOSE(op(xt, w), rms_gate_reference(xt, w, 1e-6));
  Tensor x3 = random({2, 3, 5}, kFloat64), w3 = random({5}, kFloat64, 2);
  EXPECT_CLOSE(op(x3, w3), rms_gate_reference(x3, w3, 1e-6));
}

TEST(CustomOps, KeywordOnlyArgumentsAndDefaults) {
  define_test_ops();
  Tensor x = random({3, 4});
  EXPECT_CLOSE(library::call1("testlib::scale_shift", {x}), x);
  EXPECT_CLOSE(library::call1("testlib::scale_shift", {x}, {{"shift", 2}}), x + 2);
  EXPECT_CLOSE(library::call1("testlib::scale_shift", {x}, {{"scale", 3.0}, {"shift", -1}}), x * 3.0 - 1);
}

TEST(CustomOps, ArgumentErrorsNameTheOp) {
  define_test_ops();
  Tensor x = random({4, 6}), w = random({6});
  EXPECT_ERROR(library::call1("testlib::rms_gate", {x}), "testlib::rms_gate", "missing argument 'w'");
  EXPECT_ERROR(library::call1("testlib::rms_gate", {x, w}, {{"epsilon", 1.0}}), "testlib::rms_gate",
               "no argument 'epsilon'");
  EXPECT_ERROR(library::call1("testlib::rms_gate", {x, 2.0}), "testlib::rms_gate", "argument 'w' must be a Tensor");
  EXPECT_ERROR(library::call1("testlib::rms_gate", {x, random({5})}), "x must be [..., D]");  // the rule's own
  EXPECT_ERROR(library::call1("testlib::nothing", {x}), "no custom op is named 'testlib::nothing'");
}

TEST(CustomOps, MalformedSchemasAreUserErrors) {
  library::OpFunctions f{.shape = same_as_x(), .cpu = [](const library::OpArgs& a) { return std::vector{a.tensor("x")}; }};
  EXPECT_ERROR(library::define("bad::one(Tensor x -> Tensor", f), "bad op schema", "column");
  EXPECT_ERROR(library::define("bad::two(Tensor x) ->", f), "bad op schema");
  EXPECT_ERROR(library::define("bad::three(Widget x) -> Tensor", f), "unknown type Widget");
  EXPECT_ERROR(library::define("bad::four(Tensor x, float eps=1e-6q) -> Tensor", f), "malformed number");
  EXPECT_ERROR(library::define("bad::five(Tensor x, str mode='open) -> Tensor", f), "unterminated string");
  EXPECT_ERROR(library::define("bad::six(Tensor x, Tensor x) -> Tensor", f), "'x' appears twice");
  EXPECT_ERROR(library::define("bad::(Tensor x) -> Tensor", f), "expected a name");
  EXPECT_ERROR(library::define("noname(Tensor x) -> Tensor", f), "needs a namespace");
  EXPECT_ERROR(library::define("bad::seven(Tensor(a!) x) -> Tensor(a!)", f), "alias annotation");
  EXPECT_ERROR(library::define("bad::eight(Tensor x) -> int", f), "returns must be plain Tensors");
  EXPECT_ERROR(library::define("bad::nine(Tensor x) -> Tensor", {.shape = same_as_x()}), "needs a kernel");
  EXPECT_ERROR(library::define("bad::ten(Tensor x) -> Tensor", {.cpu = f.cpu}), "needs a shape rule");
  EXPECT_FALSE(library::exists("bad::one"));
  EXPECT_FALSE(library::exists("bad::nine"));
}

TEST(CustomOps, DuplicateNamesAreRefused) {
  library::OpFunctions f{.shape = same_as_x(), .cpu = [](const library::OpArgs& a) { return std::vector{a.tensor("x")}; }};
  library::define("duplib::twice(Tensor x) -> Tensor", f);
  EXPECT_ERROR(library::define("duplib::twice(Tensor x, float y=1.0) -> Tensor", f),
               "duplib::twice is already defined", "duplib::twice(Tensor x) -> Tensor");
  // Another overload of the same name is a different op.
  EXPECT_NO_THROW(library::define("duplib::twice.scaled(Tensor x, float y) -> Tensor", f));
}

TEST(CustomOps, RegistrationFromManyThreadsGivesDistinctIds) {
  library::OpFunctions f{.shape = same_as_x(), .cpu = [](const library::OpArgs& a) { return std::vector{a.tensor("x") + 1}; }};
  std::vector<std::thread> threads;
  std::vector<OpId> ids(8);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] { ids[i] = library::define(fmt::format("threadlib::op{}(Tensor x) -> Tensor", i), f).id(); });
  for (std::thread& t : threads) t.join();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());
  for (int i = 0; i < 8; ++i) {
    library::Op op = library::find(fmt::format("threadlib::op{}", i));
    EXPECT_EQ(op.name(), fmt::format("threadlib::op{}", i));
    EXPECT_CLOSE(op(ones({2})), full({2}, 2.0));
  }
}

TEST(CustomOps, AKernelReturningTheWrongShapeOrDtypeIsAnError) {
  auto shape = same_as_x();
  library::Op wrong_shape = library::define("wronglib::shape(Tensor x) -> Tensor", {
      .shape = shape, .cpu = [](const library::OpArgs& a) { return std::vector{sum(a.tensor("x"), {-1})}; }});
  EXPECT_ERROR(wrong_shape(random({3, 4})), "wronglib::shape", "the cpu kernel returned output 0 as float32[3]",
               "the shape rule gives float32[3, 4]");
  library::Op wrong_dtype = library::define("wronglib::dtype(Tensor x) -> Tensor", {
      .shape = shape, .cpu = [](const library::OpArgs& a) { return std::vector{a.tensor("x").to(kFloat64)}; }});
  EXPECT_ERROR(wrong_dtype(random({2})), "wronglib::dtype", "float64[2]", "float32[2]");
  library::Op too_many = library::define("wronglib::count(Tensor x) -> Tensor", {
      .shape = shape, .cpu = [](const library::OpArgs& a) { return std::vector{a.tensor("x"), a.tensor("x")}; }});
  EXPECT_ERROR(too_many(random({2})), "wronglib::count", "returned 2 tensor(s); the schema returns 1");
  library::Op bad_rule = library::define("wronglib::rule(Tensor x) -> Tensor", {
      .shape = [](const library::OpArgs&) { return std::vector<TensorMeta>{}; },
      .cpu = [](const library::OpArgs& a) { return std::vector{a.tensor("x")}; }});
  EXPECT_ERROR(bad_rule(random({2})), "wronglib::rule", "the shape rule gave 0 output(s)");
}

// A kernel that returns its input is given a copy: outputs never alias inputs.
TEST(CustomOps, AKernelReturningAnInputGivesAFreshOutput) {
  library::Op identity = library::define("aliaslib::identity(Tensor x) -> Tensor", {
      .shape = same_as_x(), .cpu = [](const library::OpArgs& a) { return std::vector{a.tensor("x")}; }});
  Tensor x = random({3});
  Tensor y = identity(x);
  EXPECT_TENSOR_EQ(y, x);
  y.add_(1);
  EXPECT_CLOSE(y, x + 1);
}

TEST(CustomOps, GradientsMatchFiniteDifferences) {
  define_test_ops();
  library::Op op = library::find("testlib::rms_gate");
  auto fn = [op](const std::vector<Tensor>& in) { return op.call1({in[0], in[1]}, {{"eps", 0.1}}); };
  EXPECT_TRUE(testing::gradcheck(fn, {testing::away_from_zero({3, 5}, 1), testing::away_from_zero({5}, 2)}));
  EXPECT_TRUE(testing::gradcheck(fn, {testing::away_from_zero({2, 2, 4}, 3), testing::away_from_zero({4}, 4)}));
  // The formula is written with sinter ops, so it differentiates again.
  EXPECT_TRUE(testing::gradgradcheck(fn, {testing::away_from_zero({2, 3}, 5), testing::away_from_zero({3}, 6)}));
}

TEST(CustomOps, GradientsMatchTheReferenceFormulaInFloat32) {
  define_test_ops();
  Tensor x = random({4, 8}), w = random({8}, kFloat32, 1);
  Tensor xa = x.clone().requires_grad_(), wa = w.clone().requires_grad_();
  Tensor xb = x.clone().requires_grad_(), wb = w.clone().requires_grad_();
  Tensor v = random({4, 8}, kFloat32, 2);
  Tensor y = library::call1("testlib::rms_gate", {xa, wa});
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "RmsGateBackward0");
  (y * v).sum().backward();
  (rms_gate_reference(xb, wb, 1e-6) * v).sum().backward();
  EXPECT_CLOSE(xa.grad(), xb.grad());
  EXPECT_CLOSE(wa.grad(), wb.grad());
}

TEST(CustomOps, BackwardWithoutAFormulaIsAClearError) {
  define_test_ops();
  Tensor x = random({3, 4}).requires_grad_();
  Tensor y = library::call1("testlib::scale_shift", {x}, {{"scale", 2.0}});
  EXPECT_TRUE(y.requires_grad());
  EXPECT_ERROR(y.sum().backward(), "the derivative of testlib::scale_shift is not implemented",
               "defined without a backward formula");
  // Without grad mode nothing is recorded, and the op runs.
  NoGradGuard no_grad;
  EXPECT_FALSE(library::call1("testlib::scale_shift", {x}).requires_grad());
}

TEST(CustomOps, BackwardReturningBadGradientsIsAnError) {
  library::Op few = library::define("gradlib::few(Tensor x, Tensor y) -> Tensor", {
      .shape = same_as_x(),
      .cpu = [](const library::OpArgs& a) { return std::vector{a.tensor("x") * a.tensor("y")}; },
      .backward = [](const std::vector<Tensor>& g, const library::OpArgs&) { return std::vector{g[0]}; }});
  Tensor x = random({3}).requires_grad_(), y = random({3}).requires_grad_();
  EXPECT_ERROR(few(x, y).sum().backward(), "gradlib::few returned 1 gradient(s)", "one per Tensor argument (2)");
  library::Op misshaped = library::define("gradlib::misshaped(Tensor x) -> Tensor", {
      .shape = same_as_x(),
      .cpu = [](const library::OpArgs& a) { return std::vector{a.tensor("x") * 2}; },
      .backward = [](const std::vector<Tensor>& g, const library::OpArgs&) { return std::vector{g[0].sum()}; }});
  EXPECT_ERROR(misshaped(x).sum().backward(), "gradlib::misshaped returned a gradient of shape []",
               "whose shape is [3]");
}

// The printer writes ns::name(...) and the parser reads it back while the op is registered.
TEST(CustomOps, GraphTextRoundTrips) {
  define_test_ops();
  const std::string text =
      "graph(%x: f32[4, 6], %w: f32[6]):\n"
      "  %2 = relu(%x)  # f32[4, 6]\n"
      "  %3 = testlib::rms_gate(%2, %w, 0.5)  # f32[4, 6]\n"
      "  %4 = testlib::scale_shift(%3, shift=3)  # f32[4, 6]\n"
      "  return (%4)\n";
  Graph g = parse_graph(text);
  EXPECT_EQ(print_graph(g), text);
  verify(g);
  Tensor x = random({4, 6}), w = random({6}, kFloat32, 1);
  std::vector<Tensor> out = interpret(g, {x, w});
  EXPECT_CLOSE(out[0], rms_gate_reference(relu(x), w, 0.5) + 3);
  EXPECT_ERROR(parse_graph("graph(%x: f32[4]):\n  %0 = testlib::absent(%x)\n  return (%0)\n"),
               "unknown op 'testlib::absent'");
}

}  // namespace
}  // namespace sinter
