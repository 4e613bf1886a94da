// In-place writes into inputs that eager accepts run compiled as eager runs them (r08, r10, r11): a write
// through a view of a strided (non-dense) input, writes into an expanded input (fill_, zero_, copy_, and a
// write through a view of it that does not itself overlap), and an in-place op on an empty tensor (which has no
// elements that could share memory). Every backend; the written inputs and the results are compared with eager.
#include <gtest/gtest.h>

#include "sinter/compile.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

const std::vector<std::string> kBackends = {"inductor", "aot_eager", "eager"};

// Runs fn eagerly on make() and compiled on another make(), comparing results and the inputs after the call.
template <class Fn, class Make>
void expect_like_eager(Fn fn, Make make) {
  for (const std::string& backend : kBackends) {
    SCOPED_TRACE(backend);
    Tensor a = make(), b = make();
    Tensor want = fn(a);
    Tensor got;
    ASSERT_NO_THROW(got = compile(fn, {.backend = backend})(b));
    EXPECT_TENSOR_EQ(got, want);
    EXPECT_TENSOR_EQ(b, a);
  }
}

// r08: v = t.mT(); v.add_(1) where t is a step-2 slice (strides [4, 1]).
TEST(InplaceInputs, WriteThroughAViewOfANonDenseInput) {
  auto f = [](const Tensor& t) {
    Tensor v = t.mT();
    v.add_(1.0);
    return t * 1;
  };
  auto make = [] {
    manual_seed(3);
    return randn({4, 2}).slice(0, 0, std::nullopt, 2);
  };
  expect_like_eager(f, make);
  auto g = [](const Tensor& t) {  // a column of a transposed, strided input; then read the whole input
    Tensor v = t.t().select(0, 1);
    v.mul_(3.0);
    return t.sum(0);
  };
  auto make2 = [] {
    manual_seed(4);
    return randn({6, 8}).slice(1, 1, 7, 2);
  };
  expect_like_eager(g, make2);
}

Tensor expanded() {
  manual_seed(5);
  return randn({1, 3}).expand({2, 3});
}

// r10: fill_, zero_ and copy_ into an expanded input.
TEST(InplaceInputs, OverwritesOfAnExpandedInput) {
  expect_like_eager([](const Tensor& t) { Tensor y = t; y.fill_(1.5); return y * 1; }, expanded);
  expect_like_eager([](const Tensor& t) { Tensor y = t; y.zero_(); return y + 2; }, expanded);
  expect_like_eager([](const Tensor& t) { Tensor y = t; y.copy_(full({3}, 4.0)); return y * 2; }, expanded);
}

// r10: sub_ through a view of an expanded input that does not itself overlap.
TEST(InplaceInputs, WriteThroughANonOverlappingViewOfAnExpandedInput) {
  expect_like_eager([](const Tensor& t) { Tensor y = t.split(1, 0)[0]; y.sub_(1.5); return y * 1; }, expanded);
  expect_like_eager([](const Tensor& t) { Tensor y = t.select(0, 1); y.mul_(2.0); return t + 0; }, expanded);
}

// An op that reads its destination into a tensor whose elements share memory stays an error, as in eager.
TEST(InplaceInputs, AccumulatingIntoAnExpandedInputIsEagersError) {
  auto f = [](const Tensor& t) { Tensor y = t; y.add_(1.0); return y * 1; };
  Tensor x = expanded();
  EXPECT_ERROR(f(x), "more than one element of the written-to tensor refers to a single memory location");
  for (const std::string& backend : kBackends) {
    SCOPED_TRACE(backend);
    Tensor y = expanded();
    EXPECT_ERROR(compile(f, {.backend = backend})(y), "more than one element");
  }
}

// The same writes into an expanded view of a computed value (found by sinter fuzz: softmax of a 0-dim input,
// expand, fill_): the graph runs as recorded, with eager's results and eager's error for add_.
TEST(InplaceInputs, WritesIntoAnExpandedIntermediate) {
  auto make = [] {
    manual_seed(6);
    return randn({});
  };
  expect_like_eager([](const Tensor& t) { return softmax(t, 0).expand({2, 4}).fill_(0.001); }, make);
  expect_like_eager([](const Tensor& t) { Tensor y = exp(t).expand({3}); y.zero_(); return y + t; }, make);
  expect_like_eager([](const Tensor& t) {
    Tensor b = sigmoid(t.unsqueeze(0));
    b.expand({2, 3}).select(1, 0).fill_(2.0);
    return b * 3;
  }, make);
  auto f = [](const Tensor& t) { return exp(t).expand({3}).add_(1.0); };
  EXPECT_ERROR(f(make()), "more than one element");
  for (const std::string& backend : kBackends) {
    SCOPED_TRACE(backend);
    EXPECT_ERROR(compile(f, {.backend = backend})(make()), "more than one element");
  }
}

// r11: an in-place op on an empty tensor, after a graph break, and directly on an empty expanded one.
TEST(InplaceInputs, InPlaceOnAnEmptyTensorAfterABreak) {
  auto f = [](const Tensor& x) {
    Tensor y = copysign(x, x);
    double s = sum(abs(y)).item<double>();
    y.div_(1.5);
    return y * (1.0 / (1.0 + s));
  };
  auto g = compile(f);
  manual_seed(6);
  Tensor a = randn({2, 2});
  EXPECT_CLOSE(g(a), f(a));
  Tensor e = randn({2, 0});
  Tensor got;
  ASSERT_NO_THROW(got = g(e));
  EXPECT_EQ(got.sizes().hints(), (std::vector<int64_t>{2, 0}));
  // Eager: an empty tensor with a zero stride has no overlapping elements either.
  Tensor z = zeros({1, 0}).expand({3, 0});
  EXPECT_NO_THROW(z.add_(1.0));
}

// An in-place op on an empty input whose strides are a permutation (sizes [0, 6, 6], strides [1, 1, 6]): the
// functional write-back of an empty value is fine for any strides (a fuzzer finding: as_strided_scatter called
// it non-dense).
TEST(InplaceInputs, InPlaceOnAnEmptyPermutedInput) {
  auto f = [](const Tensor& t) {
    Tensor y = t;
    y.div_(-2.0);
    return y;
  };
  expect_like_eager(f, [] { return zeros({6, 6, 0}).transpose(2, 0); });
}

// A permuted input with a dim of size 1 is dense whatever that dim's stride says (strides [2, 1, 2] for sizes
// [1, 2, 2]): the functional write-back of fill_ into it compiles (a fuzzer finding).
TEST(InplaceInputs, FillOfAPermutedInputWithASizeOneDim) {
  auto f = [](const Tensor& t) {
    Tensor y = t;
    y.fill_(0.5);
    return t * 2;
  };
  auto make = [] {
    manual_seed(5);
    return randn({2, 2, 1}).permute({2, 1, 0});
  };
  expect_like_eager(f, make);
}

// sinter fuzz, seed 112 case 2851: relu_ on a strided input, then a permute of it and a binary op of the two:
// the functional relu is a fresh dense value, the eager one the strided input, and the output's layout (which
// follows their dimension order) must be the same.
TEST(InplaceInputs, LayoutAfterAnInPlaceOpOnAStridedInput) {
  auto f = [](const Tensor& t) {
    Tensor y = t;
    y.relu_();
    return logical_or(y.permute({2, 1, 0}), y);
  };
  auto make = [] {
    manual_seed(7);
    return randn({4, 2, 2}).slice(0, 0, std::nullopt, 2);
  };
  expect_like_eager(f, make);
  for (const std::string& backend : kBackends) {
    SCOPED_TRACE(backend);
    EXPECT_EQ(compile(f, {.backend = backend})(make()).strides().hints(), f(make()).strides().hints());
  }
}

// An input read by one kernel after another kernel computes a value written back into it: the value may not be
// computed into the input's memory (copy_(x1, x0) then neg_(x0) gave x1 = -x0 under the inductor; sinter fuzz,
// seed 2026120701 case 10143).
TEST(InplaceInputs, AnInputReadAfterItsWriteBackIsComputedKeepsItsOldValues) {
  auto f = [](Tensor x0, Tensor x1) {
    x1.copy_(x0);
    x0.neg_();
    return std::vector<Tensor>{x0, x1};
  };
  for (const std::string& backend : kBackends) {
    SCOPED_TRACE(backend);
    Tensor a0 = testing::random({4}, kFloat32, 1), a1 = zeros({3, 4});
    Tensor b0 = a0.clone(), b1 = a1.clone();
    std::vector<Tensor> want = f(a0, a1);
    std::vector<Tensor> got = compile(f, {.backend = backend})(b0, b1);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_TENSOR_EQ(got[k], want[k]);
    EXPECT_TENSOR_EQ(b0, a0);
    EXPECT_TENSOR_EQ(b1, a1);
  }
}

}  // namespace
}  // namespace sinter
