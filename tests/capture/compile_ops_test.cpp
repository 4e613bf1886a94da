// End-to-end capture tests, part 2: views, reductions, pointwise chains, dtypes, control flow on sizes, and
// non-tensor arguments. Every function runs eagerly, then compiled with aot_eager and with the eager backend
// (the capture call and a guard hit); the results must be identical.
#include "sinter/compile.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

std::vector<Tensor> flat(const Tensor& t) { return {t}; }
std::vector<Tensor> flat(const std::vector<Tensor>& v) { return v; }
template <class... T>
std::vector<Tensor> flat(const std::tuple<T...>& t) {
  return std::apply([](const auto&... x) { return std::vector<Tensor>{x...}; }, t);
}

::testing::AssertionResult same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " outputs, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].dtype() != want[i].dtype())
      return ::testing::AssertionFailure() << "output " << i << " dtype " << dtype_name(got[i].dtype());
    auto r = st::equal(got[i], want[i]);
    if (!r) return r << " (output " << i << ")";
  }
  return ::testing::AssertionSuccess();
}

template <class Fn, class... A>
void expect_compiles_exactly(Fn fn, const A&... args) {
  std::vector<Tensor> want = flat(fn(args...));
  for (const char* backend : {"aot_eager", "eager"}) {
    auto compiled = compile(fn, {.backend = backend});
    for (int call = 0; call < 2; ++call)
      EXPECT_TRUE(same(flat(compiled(args...)), want)) << "backend " << backend << ", call " << call;
  }
}

Tensor rnd(const SymIntList& sizes, uint64_t seed, DType dtype = kFloat32) {
  return st::random(sizes, dtype, seed);
}

}  // namespace

// ---- views ----

TEST(CaptureOps, ViewPermuteContiguousChain) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        return x.view({4, 6}).permute({1, 0}).contiguous().view({-1}) * 2;
      },
      rnd({2, 2, 6}, 1));
}

TEST(CaptureOps, TransposeThenMatmul) {
  expect_compiles_exactly([](const Tensor& a, const Tensor& b) { return matmul(a.t(), b); }, rnd({5, 3}, 1),
                          rnd({5, 4}, 2));
}

TEST(CaptureOps, SliceNarrowSelect) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        return x.slice(0, 1, 5, 2) + x.narrow(0, 0, 2) * x.select(1, 3).narrow(0, 0, 2).unsqueeze(1);
      },
      rnd({6, 4}, 1));
}

TEST(CaptureOps, UnsqueezeSqueezeExpand) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        return x.unsqueeze(0).expand({3, 4, 5}).sum({0}) + x.squeeze();
      },
      rnd({4, 5}, 1));
}

TEST(CaptureOps, SplitChunkCat) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        std::vector<Tensor> parts = x.chunk(3, 1);
        std::vector<Tensor> halves = x.split(2, 0);
        return std::vector<Tensor>{cat({parts[2], parts[0]}, 1), halves[1].relu()};
      },
      rnd({4, 9}, 1));
}

TEST(CaptureOps, UnbindAndStack) {
  expect_compiles_exactly([](const Tensor& x) { return stack(x.unbind(1), 0).exp(); }, rnd({3, 4}, 1));
}

TEST(CaptureOps, FlattenUnflatten) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        return x.flatten(1).unflatten(1, {3, 4}).sum({2});
      },
      rnd({2, 3, 4}, 1));
}

TEST(CaptureOps, NonContiguousInputs) {
  Tensor base = rnd({8, 6}, 1);
  expect_compiles_exactly([](const Tensor& x) { return x.sigmoid() + 1; }, base.t());
  expect_compiles_exactly([](const Tensor& x) { return x * x; }, base.slice(0, 0, 8, 2));
}

TEST(CaptureOps, ReturnsInputTransposeAsView) {
  Tensor x = rnd({3, 4}, 1);
  auto c = compile([](const Tensor& a) { return a.t(); });
  Tensor y = c(x);
  EXPECT_TRUE(st::equal(y, x.t()));
  EXPECT_EQ(y.storage(), x.storage());  // aliases x as in eager
  Tensor y2 = c(x);
  EXPECT_EQ(y2.storage(), x.storage());
}

// ---- reductions ----

TEST(CaptureOps, SumMeanKeepdim) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        return x.sum({0, 2}, true) + x.mean({1}, true).sum();
      },
      rnd({3, 4, 5}, 1));
}

TEST(CaptureOps, AmaxAminArgmax) {
  expect_compiles_exactly(
      [](const Tensor& x) { return std::make_tuple(x.amax({1}), x.amin({0}), x.argmax(1), argmin(x)); },
      rnd({4, 6}, 1));
}

TEST(CaptureOps, MaxDimReturnsPair) {
  expect_compiles_exactly([](const Tensor& x) { return max(x, 1, true); }, rnd({5, 3}, 1));
}

TEST(CaptureOps, VarStdLogsumexp) {
  expect_compiles_exactly(
      [](const Tensor& x) { return std::make_tuple(x.var({1}), x.std({0}, true, 0), logsumexp(x, {1})); },
      rnd({4, 7}, 1));
}

TEST(CaptureOps, CumsumProdNorm) {
  expect_compiles_exactly([](const Tensor& x) { return std::make_tuple(cumsum(x, 1), norm(x)); },
                          rnd({3, 5}, 1));
  expect_compiles_exactly([](const Tensor& x) { return prod(x); }, rnd({5}, 2, kInt32));
}

TEST(CaptureOps, AllAnyOfComparisons) {
  expect_compiles_exactly(
      [](const Tensor& x) { return std::make_tuple(all(x > -5), any(x > 1), any(x >= 0, {1})); },
      rnd({4, 5}, 1));
}

TEST(CaptureOps, TopkAndSort) {
  expect_compiles_exactly([](const Tensor& x) { return topk(x, 3); }, rnd({4, 8}, 1));
  expect_compiles_exactly([](const Tensor& x) { return sort(x, 0, true); }, rnd({6, 2}, 2));
}

// ---- pointwise and dtypes ----

TEST(CaptureOps, UnaryChain) {
  expect_compiles_exactly([](const Tensor& x) { return tanh(log1p(exp(x).abs())).sigmoid() - sin(x); },
                          rnd({17}, 1));
}

TEST(CaptureOps, ScalarsAreWeak) {
  expect_compiles_exactly([](const Tensor& x) { return x * 1.5 + 2; }, rnd({8}, 1, kBFloat16));
  expect_compiles_exactly([](const Tensor& x) { return (x * 1.5) / 3; }, rnd({8}, 2, kInt64));
}

TEST(CaptureOps, WhereClampMaskedFill) {
  expect_compiles_exactly(
      [](const Tensor& x, const Tensor& y) {
        return where(x > y, x, y).clamp(-0.5, 0.5).masked_fill(x < -1, 7.0);
      },
      rnd({5, 5}, 1), rnd({5, 5}, 2));
}

TEST(CaptureOps, IntFloatPromotion) {
  expect_compiles_exactly([](const Tensor& a, const Tensor& b) { return a + b; }, rnd({6}, 1, kInt32),
                          rnd({6}, 2, kFloat64));
}

TEST(CaptureOps, HalfPrecisionChain) {
  expect_compiles_exactly([](const Tensor& x) { return gelu(x * x + 1).softmax(-1); },
                          rnd({3, 8}, 1, kBFloat16));
  expect_compiles_exactly([](const Tensor& x) { return x.sqrt().rsqrt(); },
                          st::random_positive({9}, kFloat16));
}

TEST(CaptureOps, IntegerArithmetic) {
  expect_compiles_exactly(
      [](const Tensor& a, const Tensor& b) {
        return std::make_tuple(remainder(a, b), floor_divide(a, b), remainder(a, 3));
      },
      rnd({7}, 1, kInt64), st::random_positive({7}, kFloat32, 1, 5).to(kInt64));
}

TEST(CaptureOps, LogicalAndBitwise) {
  expect_compiles_exactly(
      [](const Tensor& a, const Tensor& b) { return std::make_tuple(logical_and(a > 0, b > 0), a & b, ~a); },
      rnd({6}, 1, kInt32), rnd({6}, 2, kInt32));
}

TEST(CaptureOps, PowVariants) {
  expect_compiles_exactly([](const Tensor& x) { return x.pow(2) + pow(x.abs(), 0.5) + pow(2.0, x); },
                          rnd({10}, 1));
}

// ---- indexing and reordering ----

TEST(CaptureOps, GatherIndexSelect) {
  Tensor idx = from_vector<int64_t>({2, 0, 1, 1}, {2, 2});
  expect_compiles_exactly(
      [&](const Tensor& x) { return gather(x, 1, idx) + index_select(x, 1, idx.flatten()).sum(); },
      rnd({2, 3}, 1));
}

TEST(CaptureOps, IndexWithIntegerTensorDoesNotBreak) {
  Tensor idx = from_vector<int64_t>({3, 0, 2});
  auto f = [&](const Tensor& x) { return index(x, {idx}) * 2; };
  expect_compiles_exactly(f, rnd({4, 2}, 1));
  EXPECT_EQ(explain(f, rnd({4, 2}, 1)).graph_break_count, 0);
}

TEST(CaptureOps, PadTrilTriuRollFlip) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        return std::make_tuple(pad(x, {1, 2}), tril(x, -1) + triu(x), roll(x, {1}, {0}), x.flip({1}));
      },
      rnd({4, 4}, 1));
}

TEST(CaptureOps, FactoriesInsideTheFunction) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        return x + zeros_like(x) + ones({x.size(0), 1}) * arange(0, 3, 1, TensorOptions(kFloat32)) +
               full({3}, 0.25);
      },
      rnd({2, 3}, 1));
}

// ---- control flow on sizes and non-tensor arguments ----

TEST(CaptureOps, BranchOnSize) {
  auto f = [](const Tensor& x) {
    if (x.size(0) > 16) return x.sum({0});
    return x.amax({0}) * 2;
  };
  expect_compiles_exactly(f, rnd({20, 3}, 1));
  expect_compiles_exactly(f, rnd({4, 3}, 2));
  // One compiled function serving both sides: the size guard sends each call to the right entry.
  auto c = compile(f, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  for (int64_t n : {20, 4, 30, 5}) {
    Tensor x = rnd({n, 3}, n);
    EXPECT_TRUE(same({c(x)}, {f(x)})) << n;
  }
  EXPECT_EQ(c.stats().compiles, 2);
}

TEST(CaptureOps, LoopOverASize) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        Tensor acc = zeros({x.size(1)});
        for (int64_t i = 0; i < x.size(0); ++i) acc = acc + x.select(0, i) * static_cast<double>(i + 1);
        return acc;
      },
      rnd({4, 3}, 1));
}

TEST(CaptureOps, ReshapeWithSizeArithmetic) {
  auto f = [](const Tensor& x) { return x.reshape({x.size(0) * x.size(1), -1}).mean({1}); };
  expect_compiles_exactly(f, rnd({3, 4, 5}, 1));
  auto c = compile(f, {.dynamic = Dynamic::kAlways});
  for (int64_t n : {3, 7, 9}) {
    Tensor x = rnd({n, 4, 5}, n);
    EXPECT_TRUE(same({c(x)}, {f(x)}));
  }
  EXPECT_EQ(c.stats().compiles, 1);
}

TEST(CaptureOps, TensorListArgument) {
  expect_compiles_exactly([](const std::vector<Tensor>& xs) { return cat(xs, 0).sum({0}); },
                          std::vector<Tensor>{rnd({2, 3}, 1), rnd({4, 3}, 2), rnd({1, 3}, 3)});
}

TEST(CaptureOps, IntDoubleBoolArguments) {
  auto f = [](const Tensor& x, int64_t n, double alpha, bool flag) {
    Tensor y = x.narrow(0, 0, n) * alpha;
    return flag ? y.relu() : y.neg();
  };
  expect_compiles_exactly(f, rnd({6, 2}, 1), int64_t{3}, 0.5, true);
  expect_compiles_exactly(f, rnd({6, 2}, 1), int64_t{4}, -2.0, false);
}

TEST(CaptureOps, SymIntArgumentStaysSymbolic) {
  auto f = [](const Tensor& x, SymInt n) { return x.narrow(0, 0, n).sum({0}); };
  auto c = compile(f, {.dynamic = Dynamic::kAlways});
  Tensor x = rnd({10, 3}, 1);
  for (int64_t n : {2, 5, 9}) EXPECT_TRUE(same({c(x, n)}, {f(x, SymInt(n))})) << n;
  EXPECT_EQ(c.stats().compiles, 1);
}

TEST(CaptureOps, ThreeOutputsAndUnusedInput) {
  expect_compiles_exactly(
      [](const Tensor& a, const Tensor& b, const Tensor&) { return std::make_tuple(a + b, a - b, a * b); },
      rnd({3}, 1), rnd({3}, 2), rnd({3}, 3));
}

TEST(CaptureOps, NoTensorArgumentsOnlyFactories) {
  auto f = [](int64_t n, double scale) { return arange(0, n, 1, TensorOptions(kFloat32)) * scale; };
  expect_compiles_exactly(f, int64_t{5}, 0.5);
}

TEST(CaptureOps, EmptyAndZeroDimTensors) {
  expect_compiles_exactly([](const Tensor& x) { return x.sum({0}) + 1; }, rnd({0, 3}, 1));
  expect_compiles_exactly([](const Tensor& x) { return x * x + 2; }, scalar_tensor(1.5));
}
