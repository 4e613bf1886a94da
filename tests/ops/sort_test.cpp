// Tests of sort, argsort and topk: against a stable float64 reference (NaN sorts as the largest value), along
// every dim, in both directions, for every dtype and layout, with ties, empty dims and the k range check.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "testing.h"

namespace sinter {
namespace {

using namespace sinter::testing;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// For each line of x along `dim`: the stable order of its elements (NaN largest), keeping the first k (all
// when k < 0). Returns (values, indices) as float64 and int64 tensors.
std::pair<Tensor, Tensor> ref_sort(const Tensor& x, int64_t dim, bool descending, int64_t k = -1) {
  std::vector<int64_t> sizes = x.sizes().hints();
  const int64_t nd = static_cast<int64_t>(sizes.size());
  if (nd == 0) sizes = {1};
  dim = (dim + std::max<int64_t>(nd, 1)) % std::max<int64_t>(nd, 1);
  const int64_t n = sizes[dim];
  if (k < 0) k = n;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= sizes[d];
  for (int64_t d = dim + 1; d < static_cast<int64_t>(sizes.size()); ++d) inner *= sizes[d];
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> vals(static_cast<size_t>(outer * k * inner));
  std::vector<int64_t> idx(vals.size());
  auto before = [descending](double a, double b) {
    if (descending) return !std::isnan(b) && (std::isnan(a) || a > b);
    return !std::isnan(a) && (std::isnan(b) || a < b);
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      auto at = [&](int64_t r) { return v[(o * n + r) * inner + i]; };
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return before(at(a), at(b)); });
      for (int64_t r = 0; r < k; ++r) {
        vals[(o * k + r) * inner + i] = at(order[r]);
        idx[(o * k + r) * inner + i] = order[r];
      }
    }
  }
  SymIntList out_sizes = x.sizes();
  if (nd > 0) out_sizes[dim] = k;
  const SymIntList flat{static_cast<int64_t>(vals.size())};
  return {from_vector(vals, flat, kFloat64).reshape(out_sizes),
          from_vector(idx, flat, kInt64).reshape(out_sizes)};
}

std::vector<Tensor> layouts(const Tensor& x) {
  if (x.dim() < 2) return {x, non_contiguous(x)};
  return {x, x.transpose(0, -1).contiguous().transpose(0, -1), non_contiguous(x)};
}

// Random values with many ties (small integers), so stability shows in the indices.
Tensor tied(const SymIntList& sizes, DType dtype, uint64_t seed) {
  Tensor r = random(sizes, kInt64, seed);
  return dtype == kBool ? r.to(kBool) : r.to(dtype);
}

TEST(SortSort, StableAscendingAndDescendingForEveryDtypeDimAndLayout) {
  for (DType dt : kAllDTypes) {
    for (const SymIntList& shape :
         {SymIntList{4, 7, 5}, SymIntList{9}, SymIntList{3, 0, 2}, SymIntList{2, 300}}) {
      for (const Tensor& x : layouts(tied(shape, dt, 1))) {
        for (int64_t d = -1; d < x.dim(); ++d) {
          for (bool desc : {false, true}) {
            SCOPED_TRACE(fmt::format("{} {} dim {} descending {} strides {}", dtype_name(dt), shape.str(), d,
                                     desc, x.strides().str()));
            auto [v, i] = sort(x, d, desc);
            auto [rv, ri] = ref_sort(x, d, desc);
            EXPECT_EQ(v.dtype(), dt);
            EXPECT_TENSOR_EQ(v, rv);
            EXPECT_TENSOR_EQ(i, ri);
            EXPECT_TENSOR_EQ(argsort(x, d, desc), ri);
          }
        }
      }
    }
  }
}

TEST(SortSort, NaNSortsAsLargestAndInfinitiesInOrder) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dt : kFloatingDTypes) {
    Tensor x = from_vector<double>({3, kNaN, -inf, 1, kNaN, inf, 1, -2}, {8}, dt);
    for (bool desc : {false, true}) {
      auto [v, i] = sort(x, 0, desc);
      auto [rv, ri] = ref_sort(x, 0, desc);
      EXPECT_TENSOR_EQ(v, rv);
      EXPECT_TENSOR_EQ(i, ri);
    }
    EXPECT_TENSOR_EQ(std::get<1>(sort(x)), from_vector<int64_t>({2, 7, 3, 6, 0, 5, 1, 4}, {8}));
    EXPECT_TENSOR_EQ(std::get<1>(sort(x, 0, true)), from_vector<int64_t>({1, 4, 5, 0, 3, 6, 7, 2}, {8}));
  }
}

TEST(SortSort, ZeroDimAndBadDims) {
  Tensor s = scalar_tensor(4.0);
  auto [v, i] = sort(s);
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(v.item<double>(), 4.0);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_ERROR(sort(random({2, 3}), 2), "dim 2 is out of range", "[-2, 1]");
  EXPECT_ERROR(argsort(random({2, 3}), -3), "dim -3 is out of range");
}

TEST(SortTopk, LargestAndSmallestMatchReference) {
  for (DType dt : kAllDTypes) {
    for (const Tensor& x : layouts(tied({6, 9, 4}, dt, 2))) {
      for (int64_t d : {0, 1, 2, -1}) {
        const int64_t n = x.sizes()[(d + 3) % 3].hint();
        for (int64_t k : {int64_t{0}, int64_t{1}, n / 2, n}) {
          for (bool largest : {true, false}) {
            SCOPED_TRACE(fmt::format("{} dim {} k {} largest {}", dtype_name(dt), d, k, largest));
            auto [v, i] = topk(x, k, d, largest);
            auto [rv, ri] = ref_sort(x, d, largest, k);
            EXPECT_TENSOR_EQ(v, rv);
            EXPECT_TENSOR_EQ(i, ri);
          }
        }
      }
    }
  }
}

TEST(SortTopk, NaNCountsAsLargestAndLongRows) {
  Tensor x = from_vector<double>({1, kNaN, 5, 2, kNaN, 0}, {6});
  EXPECT_TENSOR_EQ(std::get<1>(topk(x, 3)), from_vector<int64_t>({1, 4, 2}, {3}));
  EXPECT_TENSOR_EQ(std::get<1>(topk(x, 2, 0, false)), from_vector<int64_t>({5, 0}, {2}));
  Tensor big = random({3, 5000}, kFloat32, 3);
  auto [v, i] = topk(big, 10, 1);
  auto [rv, ri] = ref_sort(big, 1, true, 10);
  EXPECT_TENSOR_EQ(v, rv);
  EXPECT_TENSOR_EQ(i, ri);
}

TEST(SortTopk, KOutOfRangeIsAnError) {
  Tensor x = random({3, 4});
  EXPECT_ERROR(topk(x, 5), "k=5 is out of range", "size 4");
  EXPECT_ERROR(topk(x, -1, 0), "k=-1 is out of range");
  EXPECT_ERROR(topk(x, 1, 2), "dim 2 is out of range");
  auto [v, i] = topk(zeros({2, 0}), 0);
  EXPECT_EQ(v.sizes().hints(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(std::get<0>(topk(scalar_tensor(2.0), 1)).item<double>(), 2.0);
}

}  // namespace
}  // namespace sinter
