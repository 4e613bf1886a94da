// Tests of the joining and reordering ops (cat, stack, tril, triu, pad, repeat, roll, flip) against references
// computed here by mapping each output coordinate to its source: every dtype, negative dims, non-contiguous and
// empty inputs, dtype promotion and layouts, and the errors.
#include <random>

#include "testing.h"

namespace sinter {
namespace {

using I = std::vector<int64_t>;
using V = std::vector<double>;

// Values exact in every dtype (see index_test.cpp): multiples of 0.25 for floating dtypes, small integers, 0/1.
Tensor data(const I& sizes, DType dtype, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  V v(n);
  for (double& x : v) {
    if (is_floating(dtype)) x = (static_cast<int64_t>(rng() % 64) - 32) * 0.25;
    else if (dtype == kBool) x = static_cast<double>(rng() % 2);
    else if (dtype == kUInt8) x = static_cast<double>(rng() % 10);
    else x = static_cast<double>(static_cast<int64_t>(rng() % 20) - 10);
  }
  return from_vector<double>(v, SymIntList(sizes), dtype);
}

int64_t numel(const I& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}
I unravel(int64_t i, const I& sizes) {
  I c(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    c[d] = i % sizes[d];
    i /= sizes[d];
  }
  return c;
}
int64_t ravel(const I& c, const I& sizes) {
  int64_t off = 0;
  for (size_t d = 0; d < c.size(); ++d) off = off * sizes[d] + c[d];
  return off;
}

// out[c] = x[src] for every output coordinate c, where f(c, src) sets src (starting as a copy of c) and returns
// false where the output takes `fill` instead.
template <class F>
V map_ref(const V& x, const I& xs, const I& os, F f, double fill = 0) {
  V out;
  for (int64_t i = 0; i < numel(os); ++i) {
    I c = unravel(i, os), src = c;
    out.push_back(f(c, src) ? x[ravel(src, xs)] : fill);
  }
  return out;
}

void expect_values(const Tensor& actual, const I& sizes, const V& expected, DType dtype) {
  EXPECT_EQ(actual.sizes().hints(), sizes);
  EXPECT_EQ(actual.dtype(), dtype);
  EXPECT_EQ(actual.to_vector<double>(), expected);
}

// ---- cat / stack ----

// The reference concatenation of contiguous value lists along dim.
V cat_ref(const std::vector<Tensor>& ts, int64_t dim, I* out_sizes) {
  I os = ts[0].sizes().hints();
  os[dim] = 0;
  for (const Tensor& t : ts) os[dim] += t.size(dim).hint();
  *out_sizes = os;
  V out(numel(os));
  int64_t offset = 0;
  for (const Tensor& t : ts) {
    const I s = t.sizes().hints();
    const V v = t.contiguous().to_vector<double>();
    for (int64_t i = 0; i < numel(s); ++i) {
      I c = unravel(i, s);
      c[dim] += offset;
      out[ravel(c, os)] = v[i];
    }
    offset += s[dim];
  }
  return out;
}

TEST(ShapeCat, MatchesReferenceForEveryDtypeAndDim) {
  for (DType dt : testing::kAllDTypes) {
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<Tensor> ts;
      for (int64_t n : {3, 1, 4}) {
        I s = {2, 3, 4};
        s[d] = n;
        ts.push_back(data(s, dt, n));
      }
      I os;
      V ref = cat_ref(ts, d, &os);
      expect_values(cat(ts, dim), os, ref, dt);
    }
  }
}

TEST(ShapeCat, NonContiguousEmptyAndLegacyEmptyInputs) {
  Tensor a = data({4, 3}, kFloat32).t();                    // [3, 4] transposed
  Tensor b = testing::non_contiguous(data({3, 2}, kFloat32));
  Tensor e = zeros({3, 0});
  Tensor legacy = zeros({0});                                // skipped whatever the other shapes
  I os;
  V ref = cat_ref({a, b, e}, 1, &os);
  expect_values(cat({a, legacy, b, e}, 1), os, ref, kFloat32);
  expect_values(cat({legacy, legacy}, 0), {0}, {}, kFloat32);
  EXPECT_EQ(cat({zeros({0, 3}), zeros({0, 3})}, 0).sizes().hints(), (I{0, 3}));
}

TEST(ShapeCat, PromotesDtypes) {
  EXPECT_EQ(cat({data({2}, kInt32), data({2}, kFloat32)}).dtype(), kFloat32);
  EXPECT_EQ(cat({data({2}, kInt32), data({2}, kInt64)}).dtype(), kInt64);
  EXPECT_EQ(cat({data({2}, kBool), data({2}, kUInt8)}).dtype(), kUInt8);
  EXPECT_EQ(cat({data({2}, kFloat16), data({2}, kBFloat16)}).dtype(), kFloat32);
  Tensor a = data({2, 2}, kInt8), b = data({2, 3}, kFloat64);
  I os;
  V ref = cat_ref({a, b}, 1, &os);
  expect_values(cat({a, b}, -1), os, ref, kFloat64);
}

TEST(ShapeCat, KeepsChannelsLastWhenEveryInputIsChannelsLast) {
  Tensor a = data({2, 3, 4, 5}, kFloat32).contiguous(kChannelsLast);
  Tensor b = data({2, 2, 4, 5}, kFloat32, 3).contiguous(kChannelsLast);
  Tensor out = cat({a, b}, 1);
  EXPECT_TRUE(out.is_contiguous(kChannelsLast));
  I os;
  EXPECT_EQ(out.contiguous().to_vector<double>(), cat_ref({a, b}, 1, &os));
  EXPECT_TRUE(cat({a, b.contiguous()}, 1).is_contiguous());
}

TEST(ShapeCat, LargeInputsMatch) {
  Tensor a = data({1000, 300}, kFloat32), b = data({1000, 5}, kFloat32, 2);
  I os;
  V ref = cat_ref({a, b}, 1, &os);
  expect_values(cat({a, b}, 1), os, ref, kFloat32);
}

TEST(ShapeCat, LargeTransposedInputsAndConversions) {
  // Transposed sources are copied in tiles (with remainder rows and columns here: 100 and 70 are not multiples
  // of the tile size); an int32 one is converted on the way.
  Tensor a = data({70, 100}, kFloat32).t(), b = data({70, 33}, kInt32, 2).t(), c = data({5, 70}, kFloat64, 3);
  I os;
  V ref = cat_ref({a, b, c}, 0, &os);
  expect_values(cat({a, b, c}, 0), os, ref, kFloat64);
  expect_values(cat({a, a}, 1), {100, 140}, cat_ref({a, a}, 1, &os), kFloat32);
}

TEST(ShapeCat, Errors) {
  EXPECT_ERROR(cat({zeros({2, 3}), zeros({2, 4})}, 0),
               "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 in dimension 1 "
               "for tensor number 1");
  EXPECT_ERROR(cat({zeros({2, 3}), zeros({2, 3, 1})}), "Tensors must have same number of dimensions: got 2 and 3");
  EXPECT_ERROR(cat({scalar_tensor(1.0)}), "zero-dimensional tensor (at position 0) cannot be concatenated");
  EXPECT_ERROR(cat({}), "non-empty list");
  EXPECT_ERROR(cat({zeros({2})}, 1), "dim 1 is out of range");
}

TEST(ShapeStack, MatchesReferenceForEveryDtypeAndDim) {
  for (DType dt : testing::kAllDTypes) {
    std::vector<Tensor> ts = {data({2, 3}, dt, 1), testing::non_contiguous(data({2, 3}, dt, 2)), data({2, 3}, dt, 3)};
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<Tensor> unsqueezed;
      for (const Tensor& t : ts) unsqueezed.push_back(t.unsqueeze(d));
      I os;
      V ref = cat_ref(unsqueezed, d, &os);
      expect_values(stack(ts, dim), os, ref, dt);
    }
  }
  expect_values(stack({scalar_tensor(1.0), scalar_tensor(2.0)}), {2}, {1, 2}, kFloat32);
}

TEST(ShapeStack, Errors) {
  EXPECT_ERROR(stack({zeros({2, 3}), zeros({2, 4})}),
               "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1");
  EXPECT_ERROR(stack({}), "stack expects a non-empty TensorList");
  EXPECT_ERROR(stack({zeros({2})}, 3), "dim 3 is out of range");
}

// ---- tril / triu ----

TEST(ShapeTri, BatchedWithDiagonalOffsetsForEveryDtype) {
  for (DType dt : testing::kAllDTypes) {
    Tensor x = testing::non_contiguous(data({2, 3, 4, 5}, dt));
    const V xv = x.contiguous().to_vector<double>();
    for (int64_t k : {-4, -1, 0, 2, 6}) {
      auto keep_lower = [&](const I& c, I&) { return c[3] - c[2] <= k; };
      auto keep_upper = [&](const I& c, I&) { return c[3] - c[2] >= k; };
      expect_values(tril(x, k), {2, 3, 4, 5}, map_ref(xv, {2, 3, 4, 5}, {2, 3, 4, 5}, keep_lower), dt);
      expect_values(triu(x, k), {2, 3, 4, 5}, map_ref(xv, {2, 3, 4, 5}, {2, 3, 4, 5}, keep_upper), dt);
    }
  }
  EXPECT_EQ(tril(zeros({0, 3})).sizes().hints(), (I{0, 3}));
  EXPECT_ERROR(tril(zeros({3})), "tril: input tensor must have at least 2 dimensions");
}

// ---- pad ----

// Pads (left, right) from the last dim backwards; constant where the source falls outside.
V pad_ref(const V& x, const I& xs, const I& pads, const std::string& mode, double value, I* out_sizes) {
  I os = xs;
  const int64_t nd = static_cast<int64_t>(xs.size());
  for (size_t i = 0; i < pads.size() / 2; ++i) os[nd - 1 - i] += pads[2 * i] + pads[2 * i + 1];
  *out_sizes = os;
  return map_ref(x, xs, os, [&](const I& c, I& src) {
    for (size_t i = 0; i < pads.size() / 2; ++i) {
      const int64_t d = nd - 1 - static_cast<int64_t>(i), n = xs[d];
      int64_t j = c[d] - pads[2 * i];
      if (mode == "reflect") j = j < 0 ? -j : (j >= n ? 2 * (n - 1) - j : j);
      if (mode == "replicate") j = std::clamp<int64_t>(j, 0, n - 1);
      if (j < 0 || j >= n) return false;
      src[d] = j;
    }
    return true;
  }, value);
}

TEST(ShapePad, ConstantWithPositiveNegativeAndMixedPadsForEveryDtype) {
  for (DType dt : testing::kAllDTypes) {
    Tensor x = testing::non_contiguous(data({2, 3, 4}, dt));
    const V xv = x.contiguous().to_vector<double>();
    for (const I& pads : {I{1, 2}, I{1, 2, 0, 1}, I{-1, 2, 3, -1}, I{0, 0, 0, 0, 1, 1}, I{-2, -2}}) {
      I os;
      V ref = pad_ref(xv, {2, 3, 4}, pads, "constant", 1.0, &os);
      expect_values(pad(x, pads, "constant", 1.0), os, ref, dt);
    }
  }
  I os;
  Tensor x = data({2, 3}, kFloat32);
  expect_values(pad(x, {1, 1}), {2, 5}, pad_ref(x.to_vector<double>(), {2, 3}, {1, 1}, "constant", 0.0, &os),
                kFloat32);
  EXPECT_EQ(pad(x, {-2, -1}).sizes().hints(), (I{2, 0}));
}

TEST(ShapePad, ReflectAndReplicateForEveryDtype) {
  for (DType dt : testing::kAllDTypes) {
    Tensor x = data({2, 3, 5}, dt).transpose(0, 1).contiguous().transpose(0, 1);
    const V xv = x.contiguous().to_vector<double>();
    for (const std::string mode : {"reflect", "replicate"}) {
      for (const I& pads : {I{2, 3}, I{4, 0, 1, 2}, I{-1, 2}, I{0, 0, 2, 1}}) {
        I os;
        V ref = pad_ref(xv, {2, 3, 5}, pads, mode, 0.0, &os);
        expect_values(pad(x, pads, mode), os, ref, dt);
      }
    }
  }
  I os;
  Tensor wide = data({2, 6}, kFloat32);
  expect_values(pad(wide, {5, 5}, "replicate"), {2, 16},
                pad_ref(wide.to_vector<double>(), {2, 6}, {5, 5}, "replicate", 0, &os), kFloat32);
}

TEST(ShapePad, ConstantPadKeepsChannelsLast) {
  Tensor x = data({1, 3, 4, 4}, kFloat32).contiguous(kChannelsLast);
  Tensor out = pad(x, {1, 1, 1, 1});
  EXPECT_TRUE(out.is_contiguous(kChannelsLast));
  I os;
  EXPECT_EQ(out.contiguous().to_vector<double>(),
            pad_ref(x.contiguous().to_vector<double>(), {1, 3, 4, 4}, {1, 1, 1, 1}, "constant", 0, &os));
}

TEST(ShapePad, Errors) {
  Tensor x = zeros({2, 3, 5});
  EXPECT_ERROR(pad(x, {5, 0}, "reflect"),
               "Padding size should be less than the corresponding input dimension, but got: padding (5, 0) at "
               "dimension 2 of input [2, 3, 5]");
  EXPECT_ERROR(pad(x, {1, 3, 0}), "Padding length must be divisible by 2");
  EXPECT_ERROR(pad(x, {1, 1, 1, 1, 1, 1, 1, 1}), "Padding length should be less than or equal to two times");
  EXPECT_ERROR(pad(x, {-3, -3}), "resulted in a negative output size");
  EXPECT_ERROR(pad(x, {1, 1}, "circular"), "Unrecognised padding mode circular");
  EXPECT_ERROR(pad(x, {1, 1}, "reflect", 2.0), "Padding mode \"reflect\" doesn't take in value argument");
  EXPECT_ERROR(pad(zeros({2, 0}), {1, 1}, "replicate"), "replicate padding needs a non-empty input");
}

// ---- repeat ----

TEST(ShapeRepeat, TilesEveryDimAndAddsLeadingDims) {
  for (DType dt : testing::kAllDTypes) {
    Tensor x = testing::non_contiguous(data({2, 3}, dt));
    const V xv = x.contiguous().to_vector<double>();
    for (const I& reps : {I{2, 3}, I{1, 1}, I{2, 1, 3}, I{3, 0, 2}}) {
      I os = reps;
      os[reps.size() - 1] *= 3;
      os[reps.size() - 2] *= 2;
      const int64_t lead = static_cast<int64_t>(reps.size()) - 2;
      V ref = map_ref(xv, {2, 3}, os, [&](const I& c, I& src) {
        src = {c[lead] % 2, c[lead + 1] % 3};
        return true;
      });
      expect_values(x.repeat(reps), os, ref, dt);
    }
  }
  EXPECT_ERROR(zeros({2, 3}).repeat({2}), "Number of dimensions of repeat dims can not be smaller");
  EXPECT_ERROR(zeros({2}).repeat({-1}), "Trying to create tensor with negative dimension -1");
}

// ---- roll ----

TEST(ShapeRoll, WithoutDimsRollsTheFlattenedTensor) {
  Tensor x = data({3, 4}, kInt64).t();  // [4, 3] non-contiguous
  const V xv = x.contiguous().to_vector<double>();
  for (int64_t s : {0, 1, -2, 13, -25}) {
    V ref(12);
    for (int64_t i = 0; i < 12; ++i) ref[((i + s) % 12 + 12) % 12] = xv[i];
    expect_values(roll(x, {s}), {4, 3}, ref, kInt64);
  }
}

TEST(ShapeRoll, SeveralDimsNegativeShiftsAndRepeatedDims) {
  for (DType dt : testing::kAllDTypes) {
    Tensor x = testing::non_contiguous(data({3, 4, 5}, dt));
    const V xv = x.contiguous().to_vector<double>();
    auto rolled = [&](const I& shift) {
      return map_ref(xv, {3, 4, 5}, {3, 4, 5}, [&](const I& c, I& src) {
        for (int64_t d = 0; d < 3; ++d) src[d] = ((c[d] - shift[d]) % I{3, 4, 5}[d] + I{3, 4, 5}[d]) % I{3, 4, 5}[d];
        return true;
      });
    };
    expect_values(roll(x, {1, -2}, {0, -1}), {3, 4, 5}, rolled({1, 0, -2}), dt);
    expect_values(roll(x, {2, 3, 7}, {0, 1, 2}), {3, 4, 5}, rolled({2, 3, 7}), dt);
    expect_values(roll(x, {1, 2}, {1, 1}), {3, 4, 5}, rolled({0, 3, 0}), dt);
  }
  EXPECT_EQ(roll(zeros({0, 3}), {1}, {1}).sizes().hints(), (I{0, 3}));
  EXPECT_ERROR(roll(zeros({3}), {1, 2}), "shifts and dimensions must align. shifts: 2, dims:0");
  EXPECT_ERROR(roll(zeros({3}), {1}, {1}), "dim 1 is out of range");
}

// ---- flip ----

TEST(ShapeFlip, ReversesTheGivenDims) {
  for (DType dt : testing::kAllDTypes) {
    Tensor x = testing::non_contiguous(data({3, 4, 5}, dt));
    const V xv = x.contiguous().to_vector<double>();
    for (const I& dims : {I{0}, I{-1, 0}, I{}, I{0, 1, 2}}) {
      V ref = map_ref(xv, {3, 4, 5}, {3, 4, 5}, [&](const I& c, I& src) {
        for (int64_t d : dims) {
          const int64_t w = d < 0 ? d + 3 : d;
          src[w] = I{3, 4, 5}[w] - 1 - c[w];
        }
        return true;
      });
      expect_values(x.flip(dims), {3, 4, 5}, ref, dt);
    }
  }
  EXPECT_EQ(zeros({0, 2}).flip({0}).sizes().hints(), (I{0, 2}));
  EXPECT_ERROR(zeros({2, 3}).flip({0, -2}), "dim 0 appears multiple times in the list of dims");
}

}  // namespace
}  // namespace sinter
