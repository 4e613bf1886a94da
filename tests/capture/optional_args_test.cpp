// std::optional<Tensor> arguments and results of compiled functions: nullopt travels as an undefined tensor, is
// guarded (the other case compiles a second entry), and comes back as nullopt.
#include <gtest/gtest.h>

#include <optional>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

Tensor biased(const Tensor& x, const std::optional<Tensor>& bias) { return bias ? x * 2 + *bias : x * 2; }

TEST(OptionalArgs, NulloptAndATensorEachCompileOnce) {
  for (const char* backend : {"aot_eager", "inductor"}) {
    auto f = compile(biased, {.backend = backend});
    Tensor x = testing::random({3, 4}, kFloat32, 1), b = testing::random({4}, kFloat32, 2);
    EXPECT_CLOSE(f(x, std::optional<Tensor>(b)), biased(x, b)) << backend;
    EXPECT_TENSOR_EQ(f(x, std::optional<Tensor>()), biased(x, std::nullopt)) << backend;
    EXPECT_TENSOR_EQ(f(x, std::nullopt), biased(x, std::nullopt)) << backend;
    EXPECT_CLOSE(f(x, b), biased(x, b)) << backend;  // a Tensor where the parameter is optional
    EXPECT_EQ(f.stats().compiles, 2) << backend << ": one entry per case, reused";
  }
}

TEST(OptionalArgs, AcrossAGraphBreak) {
  auto fn = [](const Tensor& x, const std::optional<Tensor>& scale) {
    Tensor y = x.relu();
    if (y.sum().item<float>() > 0 && scale) y = y * *scale;  // reading a value breaks the graph
    return y + 1;
  };
  Tensor x = testing::random({4}, kFloat32, 5), s = testing::random({4}, kFloat32, 6);
  auto f = compile(fn, {.backend = "inductor"});
  EXPECT_CLOSE(f(x, s), fn(x, s));
  EXPECT_CLOSE(f(x, std::nullopt), fn(x, std::nullopt));
}

TEST(OptionalArgs, OptionalResults) {
  auto fn = [](const Tensor& x, bool with_aux) -> std::tuple<Tensor, std::optional<Tensor>> {
    if (with_aux) return {x.relu(), x.sum()};
    return {x.relu(), std::nullopt};
  };
  auto only = [](const Tensor& x) -> std::optional<Tensor> {
    if (x.size(0) > 2) return x.exp();
    return std::nullopt;
  };
  Tensor x = testing::random({3, 2}, kFloat32, 3);
  for (const char* backend : {"aot_eager", "inductor"}) {
    auto f = compile(fn, {.backend = backend});
    auto [a, aux] = f(x, true);
    EXPECT_TENSOR_EQ(a, x.relu());
    ASSERT_TRUE(aux.has_value());
    EXPECT_TENSOR_EQ(*aux, x.sum());
    auto [b, none] = f(x, false);
    EXPECT_TENSOR_EQ(b, x.relu());
    EXPECT_FALSE(none.has_value()) << backend;
    auto g = compile(only, {.backend = backend});
    ASSERT_TRUE(g(x).has_value());
    EXPECT_CLOSE(*g(x), x.exp());
    EXPECT_FALSE(g(x.narrow(0, 0, 2)).has_value()) << backend;
  }
}

}  // namespace
}  // namespace sinter
