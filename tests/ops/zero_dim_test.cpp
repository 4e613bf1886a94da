// Every dim-taking op on a 0-dim tensor in eager: PyTorch's value (tests/ops/zero_dim_cases.cpp says which
// and why) or a sinter::Error, never a crash or a read past a per-dim vector.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/zero_dim_cases.h"
#include "testing.h"

namespace sinter {
namespace {

using zero_dim::Case;
using zero_dim::Out;

::testing::AssertionResult matches(const std::vector<Tensor>& got, const std::vector<Out>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " outputs, PyTorch gives " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor& t = got[i];
    if (t.sizes() != want[i].sizes)
      return ::testing::AssertionFailure()
             << "output " << i << " has sizes " << t.sizes().str() << ", want " << want[i].sizes.str();
    if (t.dtype() != want[i].dtype)
      return ::testing::AssertionFailure() << "output " << i << " has dtype " << dtype_name(t.dtype())
                                           << ", want " << dtype_name(want[i].dtype);
    for (double v : t.to(kFloat64).contiguous().to_vector<double>()) {
      const bool same = std::isnan(want[i].value) ? std::isnan(v) : v == want[i].value;
      if (!same)
        return ::testing::AssertionFailure()
               << "output " << i << " holds " << v << ", want " << want[i].value;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(ZeroDim, EveryDimTakingOpFollowsPyTorch) {
  const Tensor x = scalar_tensor(zero_dim::kValue, kFloat32);
  for (const Case& c : zero_dim::cases()) {
    SCOPED_TRACE(c.name);
    if (c.want.empty()) {
      EXPECT_ERROR(c.fn(x), c.error);
    } else {
      std::vector<Tensor> got;
      try {
        got = c.fn(x);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "threw: " << e.what();
        continue;
      }
      EXPECT_TRUE(matches(got, c.want));
    }
  }
}

// PyTorch's size(d)/stride(d) do not wrap a 0-dim tensor's dim (IndexError "dimension specified as 0 but
// tensor has no dimensions"): there is no size to return.
TEST(ZeroDim, SizeAndStrideOfAZeroDimTensorAreErrors) {
  const Tensor x = scalar_tensor(1.0);
  EXPECT_ERROR(x.size(0), "no dimensions");
  EXPECT_ERROR(x.size(-1), "no dimensions");
  EXPECT_ERROR(x.stride(0), "no dimensions");
  EXPECT_ERROR(x.stride(-1), "no dimensions");
  EXPECT_EQ(x.sizes().size(), 0u);
  const Tensor v = zeros({3});
  EXPECT_EQ(v.size(-1), 3);
  EXPECT_ERROR(v.size(1), "out of range");
}

// PyTorch's roll along a dim takes that dim's size (IndexError for a 0-dim tensor); a flat roll is the value.
TEST(ZeroDim, RollAlongADimOfAZeroDimTensorIsAnError) {
  EXPECT_ERROR(roll(scalar_tensor(2.0), {1}, {0}), "roll", "no dimensions");
  Tensor y = roll(scalar_tensor(2.0), {1});
  EXPECT_EQ(y.dim(), 0);
  EXPECT_EQ(y.item<double>(), 2.0);
}

// topk(k = 0) of a 0-dim tensor: PyTorch copies the input (its output keeps the input's sizes, and a 0-dim
// tensor has no dim to shrink to k), index 0. It must never hand back uninitialised memory: run it after
// dirtying the allocator's free blocks.
TEST(ZeroDim, TopkOfZeroElementsOfAZeroDimTensorIsDefined) {
  std::vector<Tensor> keep;
  for (int i = 0; i < 6; ++i) {
    for (int n : {1, 2, 3, 8, 64}) keep.push_back(full({n}, 1e20 * (i + 1)) * 3.0);
    keep.erase(keep.begin(), keep.begin() + 3);
    auto [v, ix] = topk(scalar_tensor(1.0), 0, 0);
    EXPECT_EQ(v.dim(), 0);
    EXPECT_EQ(v.item<double>(), 1.0);
    EXPECT_EQ(ix.item<int64_t>(), 0);
  }
}

// Sorting-like ops on empty inputs produce empty outputs (nothing to leave uninitialised) or an error where
// PyTorch has no identity (max/argmax over an empty dim).
TEST(ZeroDim, SortingOpsOnEmptyInputs) {
  const Tensor e = zeros({0});
  EXPECT_EQ(std::get<0>(sort(e)).numel(), 0);
  EXPECT_EQ(argsort(e).numel(), 0);
  auto [tv, ti] = topk(e, 0);
  EXPECT_EQ(tv.sizes(), SymIntList{0});
  EXPECT_EQ(ti.sizes(), SymIntList{0});
  EXPECT_ERROR(topk(e, 1), "out of range");
  const Tensor e2 = zeros({3, 0});
  auto [v2, i2] = topk(e2, 0, 1);
  EXPECT_EQ(v2.sizes(), (SymIntList{3, 0}));
  EXPECT_EQ(i2.sizes(), (SymIntList{3, 0}));
  auto [v3, i3] = topk(zeros({0, 4}), 2, 1);
  EXPECT_EQ(v3.sizes(), (SymIntList{0, 2}));
  EXPECT_ERROR(max(e, 0), "");
  EXPECT_ERROR(argmax(e), "");
  EXPECT_EQ(std::get<0>(sort(zeros({2, 0}), 0)).sizes(), (SymIntList{2, 0}));
}

}  // namespace
}  // namespace sinter
