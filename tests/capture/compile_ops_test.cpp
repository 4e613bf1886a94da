// End-to-end capture tests, part 2: views, reductions, pointwise chains, dtypes, control flow on sizes, and
// non-tensor arguments. Every function runs eagerly, then compiled with aot_eager and with the eager backend
// (the capture call and a guard hit); the results must be identical.
#include "function_cases.h"
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

// The corpus case `name` (tests/function_cases.h) in its dtype.
void expect_case_compiles_exactly(const std::string& name) {
  corpus::FunctionCase c = corpus::named(corpus::capture_cases(), name);
  SCOPED_TRACE(name);
  expect_compiles_exactly(c.fn, c.inputs(c.dtype));
}

Tensor rnd(const SymIntList& sizes, uint64_t seed, DType dtype = kFloat32) {
  return st::random(sizes, dtype, seed);
}

}  // namespace

// ---- views ----

TEST(CaptureOps, ViewPermuteContiguousChain) { expect_case_compiles_exactly("view permute contiguous chain"); }

TEST(CaptureOps, TransposeThenMatmul) { expect_case_compiles_exactly("transpose then matmul"); }

TEST(CaptureOps, SliceNarrowSelect) { expect_case_compiles_exactly("slice narrow select"); }

TEST(CaptureOps, UnsqueezeSqueezeExpand) { expect_case_compiles_exactly("unsqueeze squeeze expand"); }

TEST(CaptureOps, SplitChunkCat) { expect_case_compiles_exactly("split chunk cat"); }

TEST(CaptureOps, UnbindAndStack) { expect_case_compiles_exactly("unbind and stack"); }

TEST(CaptureOps, FlattenUnflatten) { expect_case_compiles_exactly("flatten unflatten"); }

TEST(CaptureOps, NonContiguousInputs) {
  expect_case_compiles_exactly("sigmoid of a transpose");
  expect_case_compiles_exactly("square of a stepped slice");
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

TEST(CaptureOps, SumMeanKeepdim) { expect_case_compiles_exactly("sum mean keepdim"); }

TEST(CaptureOps, AmaxAminArgmax) { expect_case_compiles_exactly("amax amin argmax argmin"); }

TEST(CaptureOps, MaxDimReturnsPair) { expect_case_compiles_exactly("max dim keepdim"); }

TEST(CaptureOps, VarStdLogsumexp) { expect_case_compiles_exactly("var std logsumexp"); }

TEST(CaptureOps, CumsumProdNorm) {
  expect_case_compiles_exactly("cumsum norm");
  expect_case_compiles_exactly("int32 prod");
}

TEST(CaptureOps, AllAnyOfComparisons) { expect_case_compiles_exactly("all any of comparisons"); }

TEST(CaptureOps, TopkAndSort) {
  expect_case_compiles_exactly("topk");
  expect_case_compiles_exactly("sort descending");
}

// ---- pointwise and dtypes ----

TEST(CaptureOps, UnaryChain) { expect_case_compiles_exactly("unary chain"); }

TEST(CaptureOps, ScalarsAreWeak) {
  expect_case_compiles_exactly("weak scalars");
  expect_case_compiles_exactly("int64 weak scalars");
}

TEST(CaptureOps, WhereClampMaskedFill) { expect_case_compiles_exactly("where clamp masked_fill"); }

TEST(CaptureOps, IntFloatPromotion) { expect_case_compiles_exactly("int float promotion"); }

TEST(CaptureOps, HalfPrecisionChain) {
  expect_case_compiles_exactly("gelu softmax chain");
  expect_case_compiles_exactly("sqrt rsqrt");
}

TEST(CaptureOps, IntegerArithmetic) { expect_case_compiles_exactly("integer arithmetic"); }

TEST(CaptureOps, LogicalAndBitwise) { expect_case_compiles_exactly("logical and bitwise"); }

TEST(CaptureOps, PowVariants) { expect_case_compiles_exactly("pow variants"); }

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

TEST(CaptureOps, PadTrilTriuRollFlip) { expect_case_compiles_exactly("pad tril triu roll flip"); }

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
  corpus::SizedCase f = corpus::named(corpus::dynamic_cases(), "reshape with size arithmetic");
  expect_compiles_exactly(f.fn, f.sized(kFloat32, 3));
  auto c = compile(f.fn, {.dynamic = Dynamic::kAlways});
  for (int64_t n : f.sizes) {
    corpus::Ts x = f.sized(kFloat32, n);
    EXPECT_TRUE(same(c(x), f.fn(x)));
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

TEST(CaptureOps, ThreeOutputsAndUnusedInput) { expect_case_compiles_exactly("three outputs and an unused input"); }

TEST(CaptureOps, NoTensorArgumentsOnlyFactories) {
  auto f = [](int64_t n, double scale) { return arange(0, n, 1, TensorOptions(kFloat32)) * scale; };
  expect_compiles_exactly(f, int64_t{5}, 0.5);
}

TEST(CaptureOps, EmptyAndZeroDimTensors) {
  expect_case_compiles_exactly("empty sum");
  expect_case_compiles_exactly("zero-dim");
}
