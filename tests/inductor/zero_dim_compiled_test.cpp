// The 0-dim op table of tests/ops/zero_dim_cases.cpp compiled: under inductor and aot_eager every case gives
// eager's value (aot_eager exactly) or the same sinter::Error, with the 0-dim tensor as a graph input and as
// an intermediate computed in the graph (inductor lowers the two differently: a buffer and a lazy
// expression).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/zero_dim_cases.h"
#include "testing.h"

namespace sinter {
namespace {

using zero_dim::Case;

std::vector<Case> value_cases() {
  std::vector<Case> out;
  for (Case& c : zero_dim::cases())
    if (!c.want.empty()) out.push_back(std::move(c));
  return out;
}

// Every value case on the input x and on x * 2 - 2.5 (the same value, computed), flattened.
std::vector<Tensor> run_all(const std::vector<Case>& cases, const Tensor& x) {
  std::vector<Tensor> outs;
  const Tensor computed = x * 2 - zero_dim::kValue;
  for (const Case& c : cases)
    for (const Tensor& in : {x, computed})
      for (Tensor& t : c.fn(in)) outs.push_back(std::move(t));
  return outs;
}

::testing::AssertionResult same_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                        bool exact) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " outputs, eager gives " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].dtype() != want[i].dtype())
      return ::testing::AssertionFailure() << "output " << i << ": dtype " << dtype_name(got[i].dtype())
                                           << ", eager " << dtype_name(want[i].dtype());
    ::testing::AssertionResult r = exact ? testing::equal(got[i], want[i]) : testing::close(got[i], want[i]);
    if (!r) return ::testing::AssertionFailure() << "output " << i << ": " << r.message();
  }
  return ::testing::AssertionSuccess();
}

void check_backend(const char* backend) {
  const Tensor x = scalar_tensor(zero_dim::kValue, kFloat32);
  const std::vector<Case> cases = value_cases();
  auto all = [&cases](const Tensor& t) { return run_all(cases, t); };
  const std::vector<Tensor> want = all(x);
  const bool exact = std::string(backend) == "aot_eager";
  try {
    auto compiled = compile(all, {.backend = backend, .fallback = false});
    for (int call = 0; call < 2; ++call)  // the second call runs the cached entry
      EXPECT_TRUE(same_outputs(compiled(x), want, exact)) << backend << ", call " << call;
  } catch (const std::exception& e) {
    ADD_FAILURE() << backend << ": the table failed as one graph: " << std::string(e.what()).substr(0, 2000);
    for (const Case& c : cases) {  // name the cases that fail on their own
      auto one = [&c](const Tensor& t) { return run_all({c}, t); };
      try {
        EXPECT_TRUE(same_outputs(compile(one, {.backend = backend, .fallback = false})(x), one(x), exact))
            << c.name;
      } catch (const std::exception& e1) {
        ADD_FAILURE() << c.name << ": " << std::string(e1.what()).substr(0, 2000);
      }
    }
  }
}

TEST(ZeroDimCompiled, InductorMatchesEager) { check_backend("inductor"); }
TEST(ZeroDimCompiled, AotEagerMatchesEagerExactly) { check_backend("aot_eager"); }

// The cases PyTorch rejects are rejected when captured too, with the same kind of error.
TEST(ZeroDimCompiled, RejectedCasesAreErrorsWhenCompiled) {
  const Tensor x = scalar_tensor(zero_dim::kValue, kFloat32);
  for (const Case& c : zero_dim::cases()) {
    if (!c.want.empty()) continue;
    SCOPED_TRACE(c.name);
    for (const char* backend : {"inductor", "aot_eager"}) {
      auto compiled = compile([&c](const Tensor& t) { return c.fn(t * 1); }, {.backend = backend});
      EXPECT_ERROR(compiled(x), c.error);
    }
  }
}

// The repros: a dim reduction of a 0-dim input, and transpose(0, 0) of a 0-dim intermediate in a function
// with a graph break (its segments compile on the second call).
TEST(ZeroDimCompiled, ProdOverDimZeroOfAZeroDimInput) {
  auto f = [](const Tensor& t) { return prod(t, 0, true); };
  Tensor x = scalar_tensor(2.0);
  Tensor got = compile(f)(x);
  EXPECT_EQ(got.dim(), 0);
  EXPECT_EQ(got.item<double>(), 2.0);
}

TEST(ZeroDimCompiled, TransposeOfAZeroDimIntermediateAcrossAGraphBreak) {
  auto f = [](const Tensor& x) {
    Tensor m = amax(x, {0}, false);  // 0-dim
    Tensor a = add(m, -3);
    Tensor t = a.transpose(0, 0);
    return std::vector<Tensor>{m * (1.0 / (1.0 + sum(abs(m.to(kFloat32))).item<double>())), t * 2};
  };
  auto g = compile(f);
  for (int call = 1; call <= 3; ++call) {
    manual_seed(7);
    Tensor x = randn({2});
    std::vector<Tensor> want = f(x), got = g(x);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_CLOSE(got[0], want[0]) << "call " << call;
    EXPECT_CLOSE(got[1], want[1]) << "call " << call;
  }
}

}  // namespace
}  // namespace sinter
