// Tests of the reductions (sum, mean, prod, amax/amin, max/min, arg reductions, var/std, norm, logsumexp,
// all/any) and scans: each against a float64 reference computed plainly here, over several shapes (multiple
// and non-adjacent dims, keepdim, size-1 and empty dims), layouts (transposed, strided) and every supported
// dtype.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "testing.h"

namespace sinter {
namespace {

using namespace sinter::testing;
using Group = std::vector<double>;
using RefFn = std::function<double(const Group&)>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().hints(); }

// A tensor of `sizes` (possibly 0-dim) holding `v`.
Tensor make(const std::vector<double>& v, const SymIntList& sizes, DType dtype = kFloat64) {
  return from_vector(v, SymIntList{static_cast<int64_t>(v.size())}, dtype).reshape(sizes);
}
// Every dim of x, for ops whose empty dim list means "no dims".
DimList every_dim(const Tensor& x) {
  DimList d;
  for (int64_t i = 0; i < x.dim(); ++i) d.push_back(i);
  return d;
}

// Groups x's elements (row-major) by output position of a reduction over `dims` (empty: all), applies f to
// each group and returns the results as a float64 tensor of the reduced shape.
Tensor reference(const Tensor& x, std::vector<int64_t> dims, bool keepdim, const RefFn& f) {
  const std::vector<int64_t> sizes = sizes_of(x);
  const int64_t nd = static_cast<int64_t>(sizes.size());
  std::vector<bool> mask(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) mask[(d + std::max<int64_t>(nd, 1)) % std::max<int64_t>(nd, 1)] = nd > 0;
  std::vector<int64_t> out_sizes;
  int64_t nout = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (!mask[d])
      out_sizes.push_back(sizes[d]), nout *= sizes[d];
    else if (keepdim)
      out_sizes.push_back(1);
  }
  std::vector<Group> groups(static_cast<size_t>(nout));
  const std::vector<double> v = x.to_vector<double>();
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    int64_t rem = i, q = 0, scale = 1;
    for (int64_t d = nd - 1; d >= 0; --d) {
      int64_t idx = rem % sizes[d];
      rem /= sizes[d];
      if (!mask[d]) q += idx * scale, scale *= sizes[d];
    }
    groups[q].push_back(v[i]);
  }
  std::vector<double> out;
  for (const Group& g : groups) out.push_back(f(g));
  return make(out, SymIntList(out_sizes));
}

double ref_sum(const Group& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
double ref_prod(const Group& g) {
  double s = 1;
  for (double v : g) s *= v;
  return s;
}
double ref_max(const Group& g) {
  double m = -kInf;
  for (double v : g) m = std::isnan(v) || std::isnan(m) ? kNaN : std::max(m, v);
  return m;
}
double ref_min(const Group& g) {
  double m = kInf;
  for (double v : g) m = std::isnan(v) || std::isnan(m) ? kNaN : std::min(m, v);
  return m;
}
double ref_var(const Group& g, double correction) {
  double mean = ref_sum(g) / g.size(), m2 = 0;
  for (double v : g) m2 += (v - mean) * (v - mean);
  return m2 / std::max(0.0, g.size() - correction);
}

// The same values in three layouts: contiguous, transposed in memory (a permuted dense block), strided.
std::vector<Tensor> layouts(const Tensor& x) {
  if (x.dim() < 2) return {x, non_contiguous(x)};
  Tensor transposed = x.transpose(0, -1).contiguous().transpose(0, -1);
  return {x, transposed, non_contiguous(x)};
}

struct Case {
  SymIntList shape;
  std::vector<int64_t> dims;  // empty: all
};
// Shapes exercising each form of the engine: rows, columns, a middle run, interleaved dims, size-1 and empty
// dims, and long rows/columns that split the reduced range across threads.
const std::vector<Case> kCases = {
    {{2, 3, 4}, {1}},  {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {-1}},      {{2, 3, 4}, {}},
    {{2, 3, 4}, {0}},  {{3, 1, 5}, {1}},    {{3, 1, 5}, {0, 1}},    {{4, 0, 3}, {0}},
    {{4, 0, 3}, {1}},  {{5}, {0}},          {{2, 3, 4, 5}, {1, 3}}, {{2, 3, 4, 5}, {0, 1}},
    {{3, 70000}, {1}}, {{70000, 3}, {0}},   {{40, 300, 7}, {1}},    {{2, 3, 4, 5}, {3, 0}},
    {{5000, 3}, {1}},  {{3, 5000, 2}, {1}},
};

// Checks op(x, dims, keepdim) against the reference for every case, layout and keepdim.
void check_cases(DType dtype, const std::function<Tensor(const Tensor&, const DimList&, bool)>& op,
                 const RefFn& ref, double rtol = -1, bool skip_empty = false) {
  for (const Case& c : kCases) {
    if (skip_empty && sym_product(c.shape).hint() == 0) continue;
    Tensor x0 = random(c.shape, dtype, 3);
    for (const Tensor& x : layouts(x0)) {
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {} dims [{}] keepdim {} strides {}", dtype_name(dtype), c.shape.str(),
                                 fmt::join(c.dims, ", "), keepdim, x.strides().str()));
        Tensor got = op(x, DimList(c.dims), keepdim);
        // The reference rounded to the result's dtype: float16 results beyond 65504 are inf in both.
        EXPECT_CLOSE(got, reference(x, c.dims, keepdim, ref).to(got.dtype()), rtol);
      }
    }
  }
}

// ---- sum / mean / prod ----

TEST(ReduceSum, MatchesReferenceForEveryDtypeShapeAndLayout) {
  for (DType dt : kAllDTypes) {
    check_cases(
        dt, [](const Tensor& x, const DimList& d, bool k) { return sum(x, d, k); }, ref_sum);
  }
}

TEST(ReduceSum, IntegerAndBoolGiveInt64AndDtypeCastsFirst) {
  for (DType dt : {kInt32, kInt8, kUInt8, kBool}) EXPECT_EQ(sum(random({3, 4}, dt)).dtype(), kInt64);
  EXPECT_EQ(sum(random({3}, kFloat16)).dtype(), kFloat16);
  Tensor x = from_vector<double>({1.5, 2.5, -1.25}, {3}, kFloat32);
  EXPECT_TENSOR_EQ(sum(x, kInt32), make({2}, {}, kInt32));  // 1 + 2 - 1: cast, then summed
  EXPECT_EQ(sum(x, DimList{0}, false, kFloat64).dtype(), kFloat64);
  // int8 overflows int8 but not the int64 accumulator.
  Tensor big = full({100}, 100, TensorOptions(kInt8));
  EXPECT_TENSOR_EQ(sum(big), make({10000}, {}, kInt64));
}

TEST(ReduceSum, EmptyListAndNoneReduceEverythingEmptyInputGivesZero) {
  Tensor x = random({3, 4});
  EXPECT_CLOSE(sum(x, DimList{}), reference(x, {}, false, ref_sum));
  EXPECT_CLOSE(sum(x, OptDims{}), reference(x, {}, false, ref_sum));
  EXPECT_EQ(sizes_of(sum(x, DimList{}, true)), (std::vector<int64_t>{1, 1}));
  EXPECT_TENSOR_EQ(sum(zeros({0, 3})), make({0}, {}, kFloat32));
  EXPECT_TENSOR_EQ(sum(zeros({0, 3}), DimList{0}), zeros({3}));
  Tensor s = scalar_tensor(2.5);
  EXPECT_TENSOR_EQ(sum(s, DimList{0}), s);
  EXPECT_TENSOR_EQ(sum(s, DimList{-1}, true), s);
}

TEST(ReduceSum, LargeFloat32SumsStayAccurate) {
  // 4M values of mean 1: a naive running float sum is off by ~1e-3 here.
  Tensor x = random_positive({1 << 22}, kFloat32, 0.5, 1.5, 5);
  EXPECT_CLOSE(sum(x), reference(x, {}, false, ref_sum), 1e-6);
  Tensor m = random_positive({8192, 512}, kFloat32, 0.5, 1.5, 6);
  EXPECT_CLOSE(sum(m, DimList{0}), reference(m, {0}, false, ref_sum), 1e-6);
  EXPECT_CLOSE(sum(m, DimList{1}), reference(m, {1}, false, ref_sum), 1e-6);
}

// Column reductions of few outputs split the reduced rows into slices summed into private partials; the
// shapes below take that path with row counts that leave partial groups of four rows and partial slices.
struct Threads {
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(0); }
};
const std::vector<Case> kColumnCases = {
    {{1027, 129}, {0}}, {{2, 4099, 37}, {1}}, {{64, 8195}, {0}}, {{9000, 3}, {0}}, {{3, 1030, 70}, {0, 1}},
};

TEST(ReduceColumns, SplitRowsMatchReferenceForDtypesLayoutsAndThreads) {
  for (int threads : {1, 3}) {
    Threads scope(threads);
    for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt64, kInt32, kUInt8}) {
      for (const Case& c : kColumnCases) {
        Tensor x0 = random(c.shape, dt, 11);
        for (const Tensor& x : layouts(x0)) {
          for (bool keepdim : {false, true}) {
            SCOPED_TRACE(fmt::format("threads {} {} {} dims [{}] keepdim {} strides {}", threads, dtype_name(dt),
                                     c.shape.str(), fmt::join(c.dims, ", "), keepdim, x.strides().str()));
            DimList d(c.dims);
            Tensor s = sum(x, d, keepdim);
            EXPECT_CLOSE(s, reference(x, c.dims, keepdim, ref_sum).to(s.dtype()));
            EXPECT_CLOSE(amax(x, d, keepdim), reference(x, c.dims, keepdim, ref_max).to(x.dtype()), 0);
            EXPECT_CLOSE(amin(x, d, keepdim), reference(x, c.dims, keepdim, ref_min).to(x.dtype()), 0);
            if (is_floating(dt))
              EXPECT_CLOSE(mean(x, d, keepdim), reference(x, c.dims, keepdim, [](const Group& g) {
                                                  return ref_sum(g) / g.size();
                                                }).to(dt));
          }
        }
      }
    }
  }
}

TEST(ReduceColumns, SameBitsForEveryThreadCount) {
  // The slices depend on the shape only, so partials merge in the same order whatever the pool size.
  for (const SymIntList& shape : {SymIntList{8192, 256}, SymIntList{64, 65536}, SymIntList{65536, 64}}) {
    Tensor x = random(shape, kFloat32, 12);
    Tensor one;
    {
      Threads scope(1);
      one = sum(x, DimList{0});
    }
    for (int threads : {2, 3, 5}) {
      Threads scope(threads);
      EXPECT_TENSOR_EQ(sum(x, DimList{0}), one);
    }
  }
}

TEST(ReduceColumns, NaNAndInfinitiesPropagateThroughPartials) {
  Tensor x = random({1027, 129}, kFloat32, 13).contiguous();
  float* p = x.data_ptr<float>();
  p[700 * 129 + 5] = NAN;  // in the middle slice
  p[3 * 129 + 7] = INFINITY;
  p[1026 * 129 + 7] = -INFINITY;  // in the last, short slice
  p[1025 * 129 + 9] = INFINITY;
  for (int threads : {1, 2}) {
    Threads scope(threads);
    std::vector<float> s = sum(x, DimList{0}).to_vector<float>();
    EXPECT_TRUE(std::isnan(s[5]));
    EXPECT_TRUE(std::isnan(s[7]));  // inf + -inf
    EXPECT_EQ(s[9], INFINITY);
    EXPECT_TRUE(std::isfinite(s[8]));
    EXPECT_TRUE(std::isnan(amax(x, DimList{0}).to_vector<float>()[5]));
    EXPECT_TRUE(std::isnan(amin(x, DimList{0}, true).to_vector<float>()[5]));
    EXPECT_EQ(amax(x, DimList{0}).to_vector<float>()[7], INFINITY);
    EXPECT_EQ(amin(x, DimList{0}).to_vector<float>()[7], -INFINITY);
  }
}

TEST(ReduceColumns, TallFloat32ColumnsStayAccurate) {
  Tensor x = random_positive({65536, 64}, kFloat32, 0.5, 1.5, 14);
  EXPECT_CLOSE(sum(x, DimList{0}), reference(x, {0}, false, ref_sum), 1e-6);
  Tensor y = random_positive({16384, 256}, kFloat32, 0.5, 1.5, 15);
  EXPECT_CLOSE(sum(y, DimList{0}), sum(y.to(kFloat64), DimList{0}), 1e-6);
}

TEST(ReduceSum, BadDimsNameTheRange) {
  Tensor x = random({2, 3});
  EXPECT_ERROR(sum(x, DimList{2}), "dim 2 is out of range", "[-2, 1]");
  EXPECT_ERROR(sum(x, DimList{-3}), "dim -3 is out of range");
  EXPECT_ERROR(sum(x, DimList{1, -1}), "dim 1 appears more than once");
  EXPECT_ERROR(sum(scalar_tensor(1.0), DimList{1}), "out of range", "[-1, 0]");
}

TEST(ReduceMean, MatchesReferenceForFloatingDtypes) {
  for (DType dt : kFloatingDTypes) {
    check_cases(
        dt, [](const Tensor& x, const DimList& d, bool k) { return mean(x, d, k); },
        [](const Group& g) { return ref_sum(g) / g.size(); });
  }
}

TEST(ReduceMean, IntegerNeedsAFloatDtypeEmptyIsNaN) {
  Tensor i = random({3, 4}, kInt64);
  EXPECT_ERROR(mean(i), "mean of a int64 tensor", "floating dtype");
  EXPECT_ERROR(mean(random({3}), kInt64), "floating dtype");
  EXPECT_CLOSE(mean(i, DimList{1}, false, kFloat32),
               reference(i, {1}, false, [](const Group& g) { return ref_sum(g) / g.size(); }));
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item<double>()));
}

TEST(ReduceProd, MatchesReferenceAndEmptyIsOne) {
  for (DType dt : kAllDTypes) {
    for (const Tensor& x : layouts(random({3, 4, 2}, dt, 4))) {
      for (int64_t d : {0, 1, 2}) EXPECT_CLOSE(prod(x, d), reference(x, {d}, false, ref_prod));
      EXPECT_CLOSE(prod(x, 1, true), reference(x, {1}, true, ref_prod));
    }
  }
  Tensor y = random_positive({200}, kFloat32, 0.9, 1.1);
  EXPECT_CLOSE(prod(y), reference(y, {}, false, ref_prod));
  EXPECT_EQ(prod(random({3}, kInt32)).dtype(), kInt64);
  EXPECT_TENSOR_EQ(prod(zeros({4, 0}), 1), ones({4}));
}

// ---- amax / amin / max / min ----

TEST(ReduceAmax, MatchesReferenceForEveryDtype) {
  for (DType dt : kAllDTypes) {
    check_cases(
        dt, [](const Tensor& x, const DimList& d, bool k) { return amax(x, d, k); }, ref_max, 0, true);
    check_cases(
        dt, [](const Tensor& x, const DimList& d, bool k) { return amin(x, d, k); }, ref_min, 0, true);
  }
}

TEST(ReduceAmax, NaNPropagatesAndEmptyReductionNamesTheDim) {
  Tensor x = from_vector<double>({1, kNaN, 3, 4, 5, 6, -kInf, 2}, {2, 4}, kFloat32);
  EXPECT_CLOSE(amax(x, DimList{1}), reference(x, {1}, false, ref_max), 0);
  EXPECT_CLOSE(amin(x, DimList{0}), reference(x, {0}, false, ref_min), 0);
  EXPECT_TRUE(std::isnan(max(x).item<double>()));
  EXPECT_ERROR(amax(zeros({2, 0}), DimList{1}), "reduction dim 1", "non-zero size");
  EXPECT_ERROR(amin(zeros({0, 3})), "reduction dim 0");
  EXPECT_ERROR(max(zeros({0})), "empty tensor");
  EXPECT_ERROR(min(zeros({2, 0})), "empty tensor");
  EXPECT_TENSOR_EQ(amax(zeros({2, 0}), DimList{0}), zeros({0}));
}

TEST(ReduceMaxMin, FullReductionMatchesForEveryDtype) {
  for (DType dt : kAllDTypes) {
    for (const Tensor& x : layouts(random({5, 70}, dt, 8))) {
      EXPECT_CLOSE(max(x), reference(x, {}, false, ref_max), 0);
      EXPECT_CLOSE(min(x), reference(x, {}, false, ref_min), 0);
      EXPECT_EQ(max(x).dtype(), dt);
    }
  }
}

// ---- max.dim / min.dim / argmax / argmin ----

// First index of the extreme along dim (NaN is the extreme), as a reference for the index outputs.
double ref_argext(const Group& g, bool largest) {
  size_t best = 0;
  for (size_t i = 1; i < g.size(); ++i) {
    if (std::isnan(g[best])) break;
    if (std::isnan(g[i]) || (largest ? g[i] > g[best] : g[i] < g[best])) best = i;
  }
  return static_cast<double>(best);
}

TEST(ReduceMaxDim, ValuesAndFirstIndicesForEveryDtypeAndLayout) {
  for (DType dt : kAllDTypes) {
    for (const Tensor& x : layouts(random({4, 6, 5}, dt, 9))) {
      for (int64_t d : {0, 1, 2, -1}) {
        for (bool keepdim : {false, true}) {
          auto [mv, mi] = max(x, d, keepdim);
          auto [nv, ni] = min(x, d, keepdim);
          EXPECT_EQ(mv.dtype(), dt);
          EXPECT_EQ(mi.dtype(), kInt64);
          EXPECT_CLOSE(mv, reference(x, {d}, keepdim, ref_max), 0);
          EXPECT_CLOSE(nv, reference(x, {d}, keepdim, ref_min), 0);
          EXPECT_CLOSE(mi, reference(x, {d}, keepdim, [](const Group& g) { return ref_argext(g, true); }), 0);
          EXPECT_CLOSE(ni, reference(x, {d}, keepdim, [](const Group& g) { return ref_argext(g, false); }),
                       0);
          EXPECT_CLOSE(argmax(x, d, keepdim), mi, 0);
          EXPECT_CLOSE(argmin(x, d, keepdim), ni, 0);
        }
      }
    }
  }
}

TEST(ReduceMaxDim, ManyShortRowsAndNarrowColumns) {
  for (DType dt : {kFloat32, kFloat16, kInt32}) {
    Tensor x = random({3000, 7}, dt, 10);
    for (int64_t d : {0, 1}) {
      auto [v, i] = max(x, d);
      EXPECT_CLOSE(v, reference(x, {d}, false, ref_max), 0);
      EXPECT_CLOSE(i, reference(x, {d}, false, [](const Group& g) { return ref_argext(g, true); }), 0);
      EXPECT_CLOSE(argmin(x, d),
                   reference(x, {d}, false, [](const Group& g) { return ref_argext(g, false); }), 0);
    }
  }
}

TEST(ReduceMaxDim, TiesTakeTheFirstIndexAndNaNIsTheMax) {
  Tensor x = from_vector<double>({1, 3, 3, 2, kNaN, 5, kNaN, 0}, {2, 4});
  auto [v, i] = max(x, 1);
  EXPECT_TENSOR_EQ(i, from_vector<int64_t>({1, 0}, {2}));
  EXPECT_TRUE(std::isnan(v.to_vector<double>()[1]));
  EXPECT_TENSOR_EQ(std::get<1>(min(x, 1)), from_vector<int64_t>({0, 0}, {2}));
  EXPECT_TENSOR_EQ(argmax(x.t(), 0), from_vector<int64_t>({1, 0}, {2}));
  EXPECT_TENSOR_EQ(argmax(x), make({4}, {}, kInt64));
  // A long row split across threads still finds the first extreme.
  std::vector<double> big(300000, 1.0);
  big[123457] = big[250000] = 7;
  EXPECT_EQ(argmax(from_vector(big, {1, 300000}), 1).item<int64_t>(), 123457);
  EXPECT_EQ(argmax(from_vector(big, {300000})).item<int64_t>(), 123457);
}

TEST(ReduceArgmax, NoDimFlattensKeepdimGivesOnes) {
  Tensor x = random({3, 4, 5}, kFloat32, 11);
  Tensor xt = x.transpose(0, 2);
  EXPECT_EQ(argmax(xt).item<int64_t>(), static_cast<int64_t>(ref_argext(xt.to_vector<double>(), true)));
  EXPECT_EQ(argmin(xt).item<int64_t>(), static_cast<int64_t>(ref_argext(xt.to_vector<double>(), false)));
  EXPECT_EQ(sizes_of(argmax(x, std::nullopt, true)), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_ERROR(argmax(zeros({0, 2})), "empty tensor");
  EXPECT_ERROR(argmax(zeros({0, 2}), 0), "reduction dim 0");
  EXPECT_ERROR(max(zeros({2, 0}), 1), "reduction dim 1");
  EXPECT_ERROR(argmin(x, 3), "dim 3 is out of range", "[-3, 2]");
  EXPECT_TENSOR_EQ(argmax(zeros({0, 2}), 1), zeros({0}, TensorOptions(kInt64)));
}

// ---- var / std ----

TEST(ReduceVar, MatchesReferenceWithCorrections) {
  for (DType dt : kFloatingDTypes) {
    for (double corr : {1.0, 0.0, 2.5}) {
      auto var_ref = [corr](const Group& g) { return ref_var(g, corr); };
      check_cases(
          dt, [corr](const Tensor& x, const DimList& d, bool k) { return var(x, d, corr, k); }, var_ref, -1,
          true);
      check_cases(
          dt, [corr](const Tensor& x, const DimList& d, bool k) { return std(x, d, corr, k); },
          [var_ref](const Group& g) { return std::sqrt(var_ref(g)); }, -1, true);
    }
  }
}

TEST(ReduceVar, DefaultsCorrectionAtLeastNAndIntegerInputs) {
  Tensor x = random({4, 5}, kFloat64);
  EXPECT_CLOSE(var(x), reference(x, {}, false, [](const Group& g) { return ref_var(g, 1); }));
  EXPECT_CLOSE(std(x, DimList{1}),
               reference(x, {1}, false, [](const Group& g) { return std::sqrt(ref_var(g, 1)); }));
  // One element with correction 1: 0 / 0. Correction beyond N: a positive m2 over a divisor clamped at 0.
  EXPECT_TRUE(std::isnan(var(from_vector<double>({3}, {1})).item<double>()));
  EXPECT_TRUE(std::isinf(var(from_vector<double>({1, 2}, {2}), OptDims{}, 5).item<double>()));
  EXPECT_TRUE(std::isnan(var(zeros({0})).item<double>()));
  // Values far from zero: a one-pass E[x^2] - E[x]^2 would lose everything here.
  Tensor shifted = random({1000}, kFloat32, 12) + 10000.0;
  EXPECT_CLOSE(var(shifted), reference(shifted, {}, false, [](const Group& g) { return ref_var(g, 1); }),
               1e-4);
  EXPECT_ERROR(var(random({3}, kInt64)), "var needs a floating input");
  EXPECT_ERROR(std(random({3}, kInt32)), "std needs a floating input");
}

// ---- norm ----

TEST(ReduceNorm, EveryOrderMatchesReference) {
  for (DType dt : kFloatingDTypes) {
    for (double p : {2.0, 1.0, kInf, -kInf, 0.0, 3.0, 0.5}) {
      auto ref = [p](const Group& g) {
        if (std::isinf(p)) {
          double m = p > 0 ? 0 : kInf;
          for (double v : g) m = p > 0 ? std::max(m, std::fabs(v)) : std::min(m, std::fabs(v));
          return m;
        }
        double s = 0;
        for (double v : g) s += p == 0 ? (v != 0) : std::pow(std::fabs(v), p);
        return p == 0 ? s : std::pow(s, 1 / p);
      };
      SCOPED_TRACE(fmt::format("p = {}", p));
      check_cases(
          dt, [p](const Tensor& x, const DimList& d, bool k) { return norm(x, p, d, k); }, ref, -1,
          std::isinf(p));
    }
  }
}

TEST(ReduceNorm, DefaultsEmptyInputsAndErrors) {
  Tensor x = random({3, 4});
  EXPECT_CLOSE(norm(x), reference(x, {}, false, [](const Group& g) {
                 double s = 0;
                 for (double v : g) s += v * v;
                 return std::sqrt(s);
               }));
  EXPECT_CLOSE(norm(x, std::nullopt, DimList{1}), norm(x, 2, DimList{1}));
  EXPECT_TENSOR_EQ(norm(zeros({0, 3}), 2, DimList{0}), zeros({3}));
  EXPECT_ERROR(norm(zeros({0, 3}), kInf, DimList{0}), "reduction dim 0");
  EXPECT_ERROR(norm(random({3}, kInt64)), "norm needs a floating input");
}

// ---- logsumexp ----

TEST(ReduceLogsumexp, MatchesReferenceAndIsStable) {
  auto ref = [](const Group& g) {
    double m = -kInf;
    for (double v : g) m = std::max(m, v);
    if (std::isinf(m)) m = 0;
    double s = 0;
    for (double v : g) s += std::exp(v - m);
    return std::log(s) + m;
  };
  for (DType dt : kFloatingDTypes)
    check_cases(
        dt, [](const Tensor& x, const DimList& d, bool k) { return logsumexp(x, d, k); }, ref);
  // Large values do not overflow; rows of -inf give -inf; +inf gives +inf.
  Tensor x = from_vector<double>({1000, 1000, -kInf, -kInf, kInf, 0, 1, 2}, {4, 2}, kFloat32);
  EXPECT_CLOSE(logsumexp(x, DimList{1}), reference(x, {1}, false, ref));
  Tensor i = random({3, 4}, kInt32);
  EXPECT_EQ(logsumexp(i, DimList{1}).dtype(), kFloat32);
  EXPECT_CLOSE(logsumexp(i, DimList{1}), reference(i, {1}, false, ref));
}

// ---- all / any ----

TEST(ReduceAllAny, MatchReferenceAndGiveBool) {
  auto ref_all = [](const Group& g) {
    return double(std::all_of(g.begin(), g.end(), [](double v) { return v != 0; }));
  };
  auto ref_any = [](const Group& g) {
    return double(std::any_of(g.begin(), g.end(), [](double v) { return v != 0; }));
  };
  for (DType dt : kAllDTypes) {
    check_cases(
        dt, [](const Tensor& x, const DimList& d, bool k) { return all(x, d.empty() ? every_dim(x) : d, k); },
        ref_all);
    Tensor x = random({4, 3}, dt, 13);
    EXPECT_EQ(all(x).dtype(), dt == kUInt8 ? kUInt8 : kBool);
    EXPECT_CLOSE(all(x, DimList{0}), reference(x, {0}, false, ref_all), 0);
    EXPECT_CLOSE(any(x.t(), DimList{1}, true), reference(x.t(), {1}, true, ref_any), 0);
  }
  // NaN counts as true; empty sets give the identities; an empty dim list reduces nothing.
  EXPECT_TRUE(all(from_vector<double>({kNaN, 1}, {2})).item<bool>());
  EXPECT_TRUE(all(zeros({0})).item<bool>());
  EXPECT_FALSE(any(zeros({0})).item<bool>());
  Tensor y = from_vector<double>({0, 2, 3}, {3});
  EXPECT_TENSOR_EQ(all(y, DimList{}), make({0, 1, 1}, {3}, kBool));
}

// ---- cumsum / cumprod ----

Tensor ref_scan(const Tensor& x, int64_t dim, bool prod) {
  std::vector<int64_t> sizes = sizes_of(x);
  const int64_t nd = static_cast<int64_t>(sizes.size());
  if (nd == 0) return x.to(kFloat64);
  dim = (dim + nd) % nd;
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= sizes[d];
  std::vector<double> v = x.to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t along = (static_cast<int64_t>(i) / inner) % sizes[dim];
    if (along > 0) v[i] = prod ? v[i - inner] * v[i] : v[i - inner] + v[i];
  }
  return from_vector(v, x.sizes(), kFloat64);
}

TEST(ReduceScan, CumsumAndCumprodMatchReference) {
  for (DType dt : kAllDTypes) {
    for (const SymIntList& shape :
         {SymIntList{3, 4, 5}, SymIntList{7}, SymIntList{2, 0, 3}, SymIntList{2, 700}}) {
      Tensor x0 =
          dt == kFloat32 || dt == kFloat64 ? random_positive(shape, dt, 0.8, 1.2, 14) : random(shape, dt, 14);
      for (const Tensor& x : layouts(x0)) {
        for (int64_t d = -1; d < x.dim(); ++d) {
          SCOPED_TRACE(fmt::format("{} {} dim {}", dtype_name(dt), shape.str(), d));
          Tensor cs = cumsum(x, d);
          EXPECT_EQ(cs.dtype(), is_integral(dt, true) ? kInt64 : dt);
          EXPECT_CLOSE(cs, ref_scan(x, d, false));
          if (shape.size() == 3 || shape[0] == 7) EXPECT_CLOSE(cumprod(x, d), ref_scan(x, d, true));
        }
      }
    }
  }
  Tensor x = random({4, 5}, kInt32);
  EXPECT_EQ(cumsum(x, 1, kFloat64).dtype(), kFloat64);
  EXPECT_CLOSE(cumsum(x, 1, kFloat64), ref_scan(x, 1, false));
  EXPECT_CLOSE(cumsum(scalar_tensor(3.0), 0), scalar_tensor(3.0, kFloat64));
  EXPECT_ERROR(cumsum(x, 2), "dim 2 is out of range");
}

}  // namespace
}  // namespace sinter
