// Tests of the indexing ops (gather, scatter*, index_select, index.Tensor, index_put(_), masked_select, nonzero)
// against plain references computed here from to_vector values: every dtype, negative dims and indices,
// non-contiguous inputs, empty tensors, broadcast and separated advanced indices, masks, and the errors.
#include <random>

#include "ops/dispatch.h"
#include "testing.h"

namespace sinter {
namespace {

using I = std::vector<int64_t>;
using V = std::vector<double>;

// Values exact in every dtype: multiples of 0.25 in [-8, 8) for floating dtypes, [-10, 10) for signed integers,
// [0, 10) for uint8, 0/1 for bool.
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
  if (sizes.empty()) return from_vector<double>(v, {1}, dtype).view({});
  return from_vector<double>(v, SymIntList(sizes), dtype);
}

// Index values uniform in [lo, hi).
Tensor rand_index(const I& sizes, int64_t lo, int64_t hi, uint64_t seed = 2, DType dtype = kInt64) {
  std::mt19937_64 rng(seed);
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  I v(n);
  for (int64_t& x : v) x = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
  if (sizes.empty()) return from_vector<int64_t>(v, {1}, dtype).view({});
  return from_vector<int64_t>(v, SymIntList(sizes), dtype);
}

Tensor ivec(const I& v, DType dtype = kInt64) { return from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}, dtype); }

I contiguous_strides(const I& sizes) {
  I s(sizes.size(), 1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * sizes[d + 1];
  return s;
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
  I s = contiguous_strides(sizes);
  for (size_t d = 0; d < c.size(); ++d) off += c[d] * s[d];
  return off;
}
int64_t numel(const I& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

void expect_values(const Tensor& actual, const I& sizes, const V& expected, DType dtype) {
  EXPECT_EQ(actual.sizes().hints(), sizes);
  EXPECT_EQ(actual.dtype(), dtype);
  EXPECT_EQ(actual.to_vector<double>(), expected);
}

// ---- gather ----

V gather_ref(const V& x, const I& xs, int64_t dim, const I& idx, const I& is) {
  V out;
  for (int64_t i = 0; i < numel(is); ++i) {
    I c = unravel(i, is);
    int64_t v = idx[i];
    c[dim] = v < 0 ? v + xs[dim] : v;
    out.push_back(x[ravel(c, xs)]);
  }
  return out;
}

TEST(IndexGather, MatchesReferenceForEveryDtypeAndDim) {
  const I xs = {4, 5, 3};
  for (DType dt : testing::kAllDTypes) {
    Tensor x = data(xs, dt);
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      I is = {3, 4, 2};
      is[d] = 6;  // along dim the index may be longer than self
      Tensor index = rand_index(is, 0, xs[d], 7 + d);
      Tensor out = gather(x, dim, index);
      expect_values(out, is, gather_ref(x.to_vector<double>(), xs, d, index.to_vector<int64_t>(), is), dt);
    }
  }
}

TEST(IndexGather, NonContiguousSelfAndIndexAndInt32Index) {
  Tensor base = data({5, 4}, kFloat32);
  Tensor x = base.t();  // [4, 5], strides [1, 4]
  Tensor index = testing::non_contiguous(rand_index({4, 3}, 0, 5, 3));
  Tensor out = gather(x, 1, index);
  V ref = gather_ref(x.contiguous().to_vector<double>(), {4, 5}, 1, index.contiguous().to_vector<int64_t>(), {4, 3});
  expect_values(out, {4, 3}, ref, kFloat32);
  expect_values(gather(x, 1, index.to(kInt32)), {4, 3}, ref, kFloat32);
}

TEST(IndexGather, EmptyIndexGivesEmptyOutput) {
  Tensor x = data({3, 4}, kFloat64);
  Tensor out = gather(x, 0, rand_index({0, 4}, 0, 3));
  EXPECT_EQ(out.sizes().hints(), (I{0, 4}));
}

TEST(IndexGather, LargeInputRunsInParallelAndMatches) {
  const I xs = {300, 257};
  Tensor x = data(xs, kFloat32);
  Tensor index = rand_index({300, 500}, 0, 257, 11);
  Tensor out = gather(x, 1, index);
  expect_values(out, {300, 500}, gather_ref(x.to_vector<double>(), xs, 1, index.to_vector<int64_t>(), {300, 500}),
                kFloat32);
}

TEST(IndexGather, Errors) {
  Tensor x = data({5, 3}, kFloat32);
  EXPECT_ERROR(gather(x, 0, ivec({1, 7}).view({2, 1})), "index 7 is out of bounds for dimension 0 with size 5");
  EXPECT_ERROR(gather(x, 0, ivec({-1}).view({1, 1})), "index -1 is out of bounds for dimension 0 with size 5");
  EXPECT_ERROR(gather(x, 0, ivec({0, 0, 0, 0}).view({1, 4})), "Size does not match at dimension 1");
  EXPECT_ERROR(gather(x, 0, ivec({0})), "same number of dimensions");
  EXPECT_ERROR(gather(x, 0, data({1, 1}, kFloat32)), "Expected dtype int32/int64 for index");
  EXPECT_ERROR(gather(x, 2, ivec({0}).view({1, 1})), "dim 2 is out of range");
  // Of several bad values in a large index, the first in row-major order is the one reported.
  Tensor big_index = rand_index({300, 500}, 0, 257, 11);
  big_index.index_put_({ivec({250}), ivec({3})}, scalar_tensor(int64_t{-5}));
  big_index.index_put_({ivec({100}), ivec({7})}, scalar_tensor(int64_t{300}));
  EXPECT_ERROR(gather(data({300, 257}, kFloat32), 1, big_index), "index 300 is out of bounds for dimension 1 with size 257");
}

// ---- scatter ----

// Writes in row-major order of the index, so with duplicates the last one wins (what the kernel promises).
V scatter_ref(V self, const I& ss, int64_t dim, const I& idx, const I& is, const V& src, const I& srcs, bool add) {
  for (int64_t i = 0; i < numel(is); ++i) {
    I c = unravel(i, is);
    const double v = src[ravel(c, srcs)];
    c[dim] = idx[i];
    double& dst = self[ravel(c, ss)];
    dst = add ? dst + v : v;
  }
  return self;
}

TEST(IndexScatter, SrcValueAndAddMatchReferenceForEveryDtype) {
  const I ss = {4, 6}, is = {3, 5}, srcs = {4, 5};
  for (DType dt : testing::kAllDTypes) {
    Tensor self = data(ss, dt, 3), src = data(srcs, dt, 4);
    for (int64_t dim : {0, 1, -2}) {
      const int64_t d = dim < 0 ? dim + 2 : dim;
      Tensor index = rand_index(is, 0, ss[d], 5 + d);
      const I iv = index.to_vector<int64_t>();
      V ref = scatter_ref(self.to_vector<double>(), ss, d, iv, is, src.to_vector<double>(), srcs, false);
      expect_values(scatter(self, dim, index, src), ss, ref, dt);
      V vref = scatter_ref(self.to_vector<double>(), ss, d, iv, is, V(numel(is), 1.0), is, false);
      expect_values(scatter(self, dim, index, Scalar(1)), ss, vref, dt);
      if (dt == kBool) continue;
      V aref = scatter_ref(self.to_vector<double>(), ss, d, iv, is, src.to_vector<double>(), srcs, true);
      Tensor added = scatter_add(self, dim, index, src);
      if (is_floating(dt)) EXPECT_CLOSE(added, from_vector<double>(aref, {4, 6}, dt));
      else expect_values(added, ss, aref, dt);
    }
  }
}

TEST(IndexScatter, AddWithManyDuplicatesIsExactAndDeterministic) {
  // 20000 contributions into 7 slots per column: float64 of small integers is exact, and two runs agree bitwise.
  Tensor self = zeros({7, 64}, TensorOptions(kFloat64));
  Tensor index = rand_index({20000, 64}, 0, 7, 9);
  Tensor src = data({20000, 64}, kFloat64, 10);
  V ref = scatter_ref(self.to_vector<double>(), {7, 64}, 0, index.to_vector<int64_t>(), {20000, 64},
                      src.to_vector<double>(), {20000, 64}, true);
  expect_values(scatter_add(self, 0, index, src), {7, 64}, ref, kFloat64);
  Tensor a = scatter_add(zeros({7, 64}), 0, index, src.to(kFloat32));
  Tensor b = scatter_add(zeros({7, 64}), 0, index, src.to(kFloat32));
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
}

TEST(IndexScatter, InPlaceWritesThroughAStridedView) {
  Tensor buffer = zeros({6, 4}, TensorOptions(kFloat32));
  Tensor view = buffer.t();  // [4, 6], strides [1, 4]
  Tensor index = ivec({5, 0, 2, 1, 1, 3, 0, 4}).view({2, 4});
  Tensor src = data({2, 4}, kFloat32, 12);
  const uint64_t version = view.version();
  view.scatter_(1, index, src);
  EXPECT_GT(view.version(), version);
  V ref = scatter_ref(V(24, 0.0), {4, 6}, 1, index.to_vector<int64_t>(), {2, 4}, src.to_vector<double>(), {2, 4},
                      false);
  EXPECT_EQ(view.contiguous().to_vector<double>(), ref);
  view.scatter_add_(1, index, src);
  for (int64_t i = 0; i < 8; ++i) {
    I c = unravel(i, {2, 4});
    ref[c[0] * 6 + index.to_vector<int64_t>()[i]] += src.to_vector<double>()[i];
  }
  EXPECT_EQ(view.contiguous().to_vector<double>(), ref);
}

TEST(IndexScatter, FunctionalKeepsSelfAndItsLayout) {
  Tensor self = data({3, 5}, kFloat32).t();  // [5, 3] transposed
  const V before = self.contiguous().to_vector<double>();
  Tensor out = scatter(self, 0, ivec({4, 0, 1}).view({1, 3}), Scalar(9.5));
  EXPECT_EQ(self.contiguous().to_vector<double>(), before);
  EXPECT_EQ(out.strides().hints(), self.strides().hints());
}

TEST(IndexScatter, Errors) {
  Tensor self = zeros({5, 3});
  EXPECT_ERROR(scatter(self, 0, ivec({5}).view({1, 1}), data({1, 1}, kFloat32)),
               "index 5 is out of bounds for dimension 0 with size 5");
  EXPECT_ERROR(scatter(self, 0, ivec({0}).view({1, 1}), data({1, 1}, kFloat64)), "Expected self.dtype to be equal to src.dtype");
  EXPECT_ERROR(scatter_add(self, 0, ivec({0, 0, 0, 0}).view({1, 4}), data({1, 4}, kFloat32)),
               "Expected index [1, 4] to be smaller than self [5, 3] apart from dimension 0");
  EXPECT_ERROR(scatter(self, 0, ivec({0, 0}).view({1, 2}), data({1, 1}, kFloat32)), "smaller size than src [1, 1]");
  Tensor expanded = zeros({1, 3}).expand({4, 3});
  EXPECT_ERROR(expanded.scatter_(0, ivec({0}).view({1, 1}), data({1, 1}, kFloat32)), "more than one element");
  // In place, a bad index is found before anything is written.
  Tensor kept = data({5, 3}, kFloat32);
  const V before = kept.to_vector<double>();
  EXPECT_ERROR(kept.scatter_add_(0, ivec({1, 2, 9}).view({1, 3}), data({1, 3}, kFloat32)), "index 9 is out of bounds");
  EXPECT_ERROR(kept.index_put_({ivec({0, 3, -7})}, zeros({3, 3})), "index -7 is out of bounds for dimension 0");
  EXPECT_EQ(kept.to_vector<double>(), before);
}

// ---- index_select ----

TEST(IndexSelect, MatchesReferenceForEveryDtypeAndDim) {
  const I xs = {3, 4, 5};
  for (DType dt : testing::kAllDTypes) {
    Tensor x = data(xs, dt);
    for (int64_t dim : {0, 1, 2, -1}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      for (DType it : {kInt64, kInt32}) {
        Tensor index = rand_index({7}, 0, xs[d], 3 + d, it);
        I os = xs;
        os[d] = 7;
        I is = os;
        // index_select is gather with the index broadcast along the other dims.
        I expanded;
        for (int64_t i = 0; i < numel(os); ++i) expanded.push_back(index.to_vector<int64_t>()[unravel(i, os)[d]]);
        expect_values(index_select(x, dim, index), os, gather_ref(x.to_vector<double>(), xs, d, expanded, is), dt);
      }
    }
  }
}

TEST(IndexSelect, NonContiguousScalarIndexEmptyIndexAndZeroDimSelf) {
  Tensor x = data({4, 6}, kFloat32).t();  // [6, 4]
  Tensor index = testing::non_contiguous(ivec({5, 0, 5}));
  V ref;
  const V xv = x.contiguous().to_vector<double>();
  for (int64_t r : {5, 0, 5})
    for (int64_t c = 0; c < 4; ++c) ref.push_back(xv[r * 4 + c]);
  expect_values(index_select(x, 0, index), {3, 4}, ref, kFloat32);
  Tensor scalar_index = ivec({2}).view({});
  expect_values(index_select(x, 1, scalar_index), {6, 1}, gather_ref(xv, {6, 4}, 1, I(6, 2), {6, 1}), kFloat32);
  EXPECT_EQ(index_select(x, 0, ivec({})).sizes().hints(), (I{0, 4}));
  Tensor s = data({}, kFloat64);
  expect_values(index_select(s, 0, ivec({0})), {}, s.to_vector<double>(), kFloat64);
}

TEST(IndexSelect, Errors) {
  Tensor x = data({5, 2}, kFloat32);
  EXPECT_ERROR(index_select(x, 0, ivec({7})), "index 7 is out of bounds for dimension 0 with size 5");
  EXPECT_ERROR(index_select(x, 0, ivec({-1})), "index -1 is out of bounds for dimension 0 with size 5");
  EXPECT_ERROR(index_select(x, 0, ivec({0, 1}).view({1, 2})), "Index is supposed to be a vector");
  EXPECT_ERROR(index_select(x, 0, data({2}, kFloat32)), "Expected dtype int32/int64 for index");
}

// ---- index.Tensor (advanced indexing) ----

TEST(IndexAdvanced, OneIndexOnDimZeroForEveryDtypeWithNegativeIndices) {
  for (DType dt : testing::kAllDTypes) {
    Tensor x = data({5, 3}, dt);
    const V xv = x.to_vector<double>();
    const I iv = {4, -1, 0, -5, 2, 2};
    V ref;
    for (int64_t i : iv)
      for (int64_t c = 0; c < 3; ++c) ref.push_back(xv[(i < 0 ? i + 5 : i) * 3 + c]);
    expect_values(index(x, {ivec(iv).view({2, 3})}), {2, 3, 3}, ref, dt);
    expect_values(index(x, {ivec(iv, kInt32).view({2, 3})}), {2, 3, 3}, ref, dt);
  }
}

TEST(IndexAdvanced, AdjacentIndicesBroadcastAndStayInPlace) {
  // x[:, a, b] with a [2, 1] and b [3] adjacent: the broadcast [2, 3] replaces dims 1 and 2.
  Tensor x = testing::non_contiguous(data({4, 5, 6, 3}, kFloat32));
  const I a = {4, 1}, b = {0, 5, -2};
  Tensor out = index(x, {Tensor(), ivec(a).view({2, 1}), ivec(b)});
  const V xv = x.contiguous().to_vector<double>();
  V ref;
  for (int64_t p = 0; p < 4; ++p)
    for (int64_t q = 0; q < 2; ++q)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t t = 0; t < 3; ++t) ref.push_back(xv[ravel({p, a[q], (b[r] + 6) % 6, t}, {4, 5, 6, 3})]);
  expect_values(out, {4, 2, 3, 3}, ref, kFloat32);
}

TEST(IndexAdvanced, SeparatedIndicesPutTheBroadcastDimsFirst) {
  // x[a, :, b] with a [2, 3] and b [3]: a slice between them moves the broadcast [2, 3] to the front.
  Tensor x = data({4, 5, 6}, kInt32);
  const I a = {0, 3, 1, 2, 2, 3}, b = {5, 0, 1};
  Tensor out = index(x, {ivec(a).view({2, 3}), Tensor(), ivec(b)});
  const V xv = x.to_vector<double>();
  V ref;
  for (int64_t q = 0; q < 2; ++q)
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t m = 0; m < 5; ++m) ref.push_back(xv[ravel({a[q * 3 + r], m, b[r]}, {4, 5, 6})]);
  expect_values(out, {2, 3, 5}, ref, kInt32);
}

TEST(IndexAdvanced, BoolAndUInt8MasksSelectInRowMajorOrder) {
  Tensor x = data({3, 4, 2}, kFloat64);
  Tensor mask = data({3, 4}, kBool, 5);
  const V xv = x.to_vector<double>(), mv = mask.to_vector<double>();
  V ref;
  int64_t n = 0;
  for (int64_t i = 0; i < 12; ++i)
    if (mv[i] != 0) {
      ++n;
      for (int64_t c = 0; c < 2; ++c) ref.push_back(xv[i * 2 + c]);
    }
  expect_values(index(x, {mask}), {n, 2}, ref, kFloat64);
  expect_values(index(x, {mask.to(kUInt8)}), {n, 2}, ref, kFloat64);
  // A mask after a slice covers dims 1 and 2.
  Tensor m2 = data({4, 2}, kBool, 6);
  const V m2v = m2.to_vector<double>();
  V ref2;
  int64_t n2 = 0;
  for (double v : m2v) n2 += v != 0;
  for (int64_t p = 0; p < 3; ++p)
    for (int64_t i = 0; i < 8; ++i)
      if (m2v[i] != 0) ref2.push_back(xv[p * 8 + i]);
  expect_values(index(x, {Tensor(), m2}), {3, n2}, ref2, kFloat64);
  EXPECT_EQ(index(x, {zeros({3, 4}, TensorOptions(kBool))}).sizes().hints(), (I{0, 2}));
}

TEST(IndexAdvanced, EmptyIndexAndEmptySelf) {
  Tensor x = data({4, 3}, kFloat32);
  EXPECT_EQ(index(x, {ivec({})}).sizes().hints(), (I{0, 3}));
  EXPECT_EQ(index(x, {Tensor(), ivec({}).view({0, 2})}).sizes().hints(), (I{4, 0, 2}));
  EXPECT_EQ(index(zeros({0, 3}), {ivec({})}).sizes().hints(), (I{0, 3}));
  EXPECT_ERROR(index(zeros({0, 3}), {ivec({0})}), "index 0 is out of bounds for dimension 0 with size 0");
}

TEST(IndexAdvanced, ShapeRuleIsStaticForIntegersAndUnknownForMasks) {
  auto meta = [](const SymIntList& sizes, DType dtype) {
    return empty_from_meta({sizes, contiguous_strides(sizes), 0, dtype, kCPU}, /*with_data=*/false);
  };
  Tensor x = meta({4, 5, 6}, kFloat32);
  std::vector<Tensor> out = run_meta(OpId::index_Tensor, {x, std::vector<Tensor>{meta({2, 3}, kInt64), Tensor(), meta({3}, kInt64)}});
  EXPECT_EQ(out[0].sizes().hints(), (I{2, 3, 5}));
  EXPECT_ERROR(run_meta(OpId::index_Tensor, {x, std::vector<Tensor>{meta({4}, kBool)}}), "depends on the input's values");
}

TEST(IndexAdvanced, Errors) {
  Tensor x = data({5, 4}, kFloat32);
  EXPECT_ERROR(index(x, {ivec({7})}), "index 7 is out of bounds for dimension 0 with size 5");
  EXPECT_ERROR(index(x, {ivec({0, 9, 7, -8})}), "index 9 is out of bounds for dimension 0 with size 5");
  EXPECT_ERROR(index(x, {Tensor(), ivec({1, 2, -5, 3})}), "index -5 is out of bounds for dimension 1 with size 4");
  EXPECT_ERROR(index(x, {ivec({-6})}), "index -6 is out of bounds for dimension 0 with size 5");
  EXPECT_ERROR(index(x, {Tensor(), ivec({4})}), "index 4 is out of bounds for dimension 1 with size 4");
  EXPECT_ERROR(index(x, {ivec({0}), ivec({0}), ivec({0})}), "too many indices for tensor of dimension 2 (got 3)");
  EXPECT_ERROR(index(x, {ivec({0, 1}), ivec({0, 1, 2})}),
               "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]");
  EXPECT_ERROR(index(x, {zeros({4}, TensorOptions(kBool))}), "The shape of the mask [4] at index 0 does not match");
  EXPECT_ERROR(index(x, {data({2}, kFloat32)}), "tensors used as indices must be long, int, byte or bool tensors");
}

// ---- index_put ----

TEST(IndexPut, AssignsForEveryDtypeWithoutTouchingSelf) {
  for (DType dt : testing::kAllDTypes) {
    Tensor x = data({5, 3}, dt), v = data({3, 3}, dt, 9);
    const V before = x.to_vector<double>(), vv = v.to_vector<double>();
    V ref = before;
    const I iv = {4, -5, 2};
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t c = 0; c < 3; ++c) ref[((iv[j] + 5) % 5) * 3 + c] = vv[j * 3 + c];
    expect_values(index_put(x, {ivec(iv)}, v), {5, 3}, ref, dt);
    EXPECT_EQ(x.to_vector<double>(), before);
  }
}

TEST(IndexPut, AccumulateAddsDuplicates) {
  for (DType dt : {kFloat64, kFloat32, kInt64, kInt8, kFloat16, kBFloat16}) {
    Tensor x = data({4, 2}, dt), v = data({6, 2}, dt, 3);
    const I iv = {1, 1, 3, 1, 0, -3};
    V ref = x.to_vector<double>();
    const V vv = v.to_vector<double>();
    for (int64_t j = 0; j < 6; ++j)
      for (int64_t c = 0; c < 2; ++c) ref[((iv[j] + 4) % 4) * 2 + c] += vv[j * 2 + c];
    Tensor out = index_put(x, {ivec(iv)}, v, /*accumulate=*/true);
    if (is_floating(dt)) EXPECT_CLOSE(out, from_vector<double>(ref, {4, 2}, dt));
    else expect_values(out, {4, 2}, ref, dt);
  }
}

TEST(IndexPut, AccumulateIsDeterministicAcrossRuns) {
  Tensor index = rand_index({50000}, 0, 5, 4);
  Tensor v = data({50000, 33}, kFloat32, 8);
  Tensor a = index_put(zeros({5, 33}), {index}, v, true), b = index_put(zeros({5, 33}), {index}, v, true);
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  V ref(5 * 33, 0.0);
  const I iv = index.to_vector<int64_t>();
  const V vv = v.to_vector<double>();
  for (int64_t j = 0; j < 50000; ++j)
    for (int64_t c = 0; c < 33; ++c) ref[iv[j] * 33 + c] += vv[j * 33 + c];
  EXPECT_CLOSE(a, from_vector<double>(ref, {5, 33}, kFloat32));
}

TEST(IndexPut, SeparatedIndicesWithBroadcastValuesAndLastWriteWins) {
  // x[a, :, b] = v: the result of x[a, :, b] is [2, 4]; v [4] broadcasts over it. a repeats (0, 0): the later
  // write wins.
  Tensor x = zeros({3, 4, 5}, TensorOptions(kInt64));
  Tensor v = ivec({10, 20, 30, 40});
  Tensor out = index_put(x, {ivec({0, 0}), Tensor(), ivec({1, 3})}, v);
  V ref(60, 0.0);
  for (int64_t b : {1, 3})
    for (int64_t m = 0; m < 4; ++m) ref[ravel({0, m, b}, {3, 4, 5})] = 10.0 * (m + 1);
  expect_values(out, {3, 4, 5}, ref, kInt64);
  // With distinct values per position, the second of two equal index pairs wins.
  Tensor y = index_put(zeros({3}), {ivec({1, 1})}, from_vector<double>({5.0, 7.0}, {2}, kFloat32));
  EXPECT_EQ(y.to_vector<double>(), (V{0, 7, 0}));
}

TEST(IndexPut, InPlaceThroughAViewWithMaskAndScalarValue) {
  Tensor buffer = data({4, 6}, kFloat32);
  Tensor view = buffer.slice(1, 0, 6, 2);  // [4, 3], strides [6, 2]
  Tensor mask = data({4, 3}, kBool, 3);
  const V before = buffer.to_vector<double>(), mv = mask.to_vector<double>();
  view.index_put_({mask}, scalar_tensor(2.5));
  V ref = before;
  for (int64_t i = 0; i < 12; ++i)
    if (mv[i] != 0) ref[(i / 3) * 6 + (i % 3) * 2] = 2.5;
  EXPECT_EQ(buffer.to_vector<double>(), ref);
  // Accumulating through the same view with one value per true element.
  int64_t n = 0;
  for (double m : mv) n += m != 0;
  V vals(n);
  for (int64_t j = 0; j < n; ++j) vals[j] = j;
  view.index_put_({mask}, from_vector<double>(vals, {n}, kFloat32), /*accumulate=*/true);
  for (int64_t i = 0, j = 0; i < 12; ++i)
    if (mv[i] != 0) ref[(i / 3) * 6 + (i % 3) * 2] += vals[j++];
  EXPECT_EQ(buffer.to_vector<double>(), ref);
}

TEST(IndexPut, Errors) {
  Tensor x = zeros({5, 4});
  EXPECT_ERROR(index_put(x, {ivec({0, 1})}, zeros({3})),
               "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 4]");
  EXPECT_ERROR(index_put(x, {ivec({0})}, zeros({4}, TensorOptions(kFloat64))),
               "Index put requires the source and destination dtypes match");
  EXPECT_ERROR(index_put(x, {ivec({5})}, zeros({4})), "index 5 is out of bounds for dimension 0 with size 5");
  EXPECT_ERROR(index_put(x, {zeros({5, 4}, TensorOptions(kBool))}, zeros({2})), "shape mismatch: value tensor of shape [2]");
}

// ---- masked_select and nonzero ----

TEST(IndexMaskedSelect, BroadcastMaskForEveryDtype) {
  for (DType dt : testing::kAllDTypes) {
    Tensor x = testing::non_contiguous(data({3, 4}, dt));
    Tensor mask = data({4}, kBool, 7);
    const V xv = x.contiguous().to_vector<double>(), mv = mask.to_vector<double>();
    V ref;
    for (int64_t i = 0; i < 12; ++i)
      if (mv[i % 4] != 0) ref.push_back(xv[i]);
    expect_values(masked_select(x, mask), {static_cast<int64_t>(ref.size())}, ref, dt);
  }
  EXPECT_EQ(masked_select(zeros({0, 3}), zeros({3}, TensorOptions(kBool))).sizes().hints(), (I{0}));
  EXPECT_ERROR(masked_select(zeros({3}), zeros({3})), "expected BoolTensor for mask");
}

TEST(IndexNonzero, CoordinatesInRowMajorOrderForEveryDtype) {
  for (DType dt : testing::kAllDTypes) {
    Tensor x = data({3, 5, 2}, dt, 4).permute({2, 1, 0}).contiguous().permute({2, 1, 0});  // non-contiguous
    const V xv = x.contiguous().to_vector<double>();
    V ref;
    for (int64_t i = 0; i < 30; ++i)
      if (xv[i] != 0)
        for (int64_t c : unravel(i, {3, 5, 2})) ref.push_back(static_cast<double>(c));
    expect_values(nonzero(x), {static_cast<int64_t>(ref.size()) / 3, 3}, ref, kInt64);
  }
  Tensor special = from_vector<double>({-0.0, NAN, 0.0, 1.0}, {4}, kFloat16);
  EXPECT_EQ(nonzero(special).to_vector<int64_t>(), (I{1, 3}));
  EXPECT_EQ(nonzero(scalar_tensor(3)).sizes().hints(), (I{1, 0}));
  EXPECT_EQ(nonzero(zeros({2, 0})).sizes().hints(), (I{0, 2}));
  Tensor big = zeros({200000});
  big.index_put_({ivec({7, 150001, 199999})}, scalar_tensor(1.0f));
  EXPECT_EQ(nonzero(big).to_vector<int64_t>(), (I{7, 150001, 199999}));
}

}  // namespace
}  // namespace sinter
