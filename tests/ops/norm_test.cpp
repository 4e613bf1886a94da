// Tests of the normalisations along dims: softmax and log_softmax, layer_norm, group_norm, rms_norm and
// batch_norm (including its in-place update of running statistics), each against a float64 reference computed
// here, for every floating dtype, several shapes and layouts, and their argument errors.
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>

#include "testing.h"

namespace sinter {
namespace {

using namespace sinter::testing;
using Line = std::vector<double>;
const double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().hints(); }

Tensor make(const std::vector<double>& v, const SymIntList& sizes, DType dtype = kFloat64) {
  return from_vector(v, SymIntList{static_cast<int64_t>(v.size())}, dtype).reshape(sizes);
}

// Applies f to each line of x along `dim` (a 0-dim x is one line of one element); same shape out, float64.
Tensor along(const Tensor& x, int64_t dim, const std::function<Line(const Line&)>& f) {
  std::vector<int64_t> sizes = sizes_of(x);
  if (sizes.empty()) sizes = {1};
  const int64_t nd = static_cast<int64_t>(sizes.size());
  dim = (dim + nd) % nd;
  int64_t outer = 1, inner = 1, n = sizes[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= sizes[d];
  for (int64_t d = dim + 1; d < nd; ++d) inner *= sizes[d];
  std::vector<double> v = x.to_vector<double>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      Line line;
      for (int64_t r = 0; r < n; ++r) line.push_back(v[(o * n + r) * inner + i]);
      line = f(line);
      for (int64_t r = 0; r < n; ++r) v[(o * n + r) * inner + i] = line[r];
    }
  }
  return make(v, x.sizes());
}

Line ref_softmax(const Line& x, bool log) {
  double m = -kInf;
  for (double v : x) m = std::isnan(v) || std::isnan(m) ? NAN : std::max(m, v);
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  Line y;
  for (double v : x) y.push_back(log ? v - m - std::log(s) : std::exp(v - m) / s);
  return y;
}

std::vector<Tensor> layouts(const Tensor& x) {
  if (x.dim() < 2) return {x, non_contiguous(x)};
  return {x, x.transpose(0, -1).contiguous().transpose(0, -1), non_contiguous(x)};
}

// ---- softmax / log_softmax ----

TEST(NormSoftmax, MatchesReferenceAlongEveryDim) {
  for (DType dt : kFloatingDTypes) {
    for (const SymIntList& shape : {SymIntList{3, 5}, SymIntList{2, 3, 4}, SymIntList{4, 1000},
                                    SymIntList{0, 3}, SymIntList{}, SymIntList{5, 1}, SymIntList{3000, 7}}) {
      for (const Tensor& x : layouts(random(shape, dt, 1) * 3.0)) {
        for (int64_t d = -1; d < std::max<int64_t>(x.dim(), 1); ++d) {
          for (bool log : {false, true}) {
            SCOPED_TRACE(fmt::format("{} {} dim {} log {}", dtype_name(dt), shape.str(), d, log));
            Tensor y = log ? log_softmax(x, d) : softmax(x, d);
            EXPECT_EQ(y.dtype(), dt);
            EXPECT_CLOSE(y, along(x, d, [log](const Line& l) { return ref_softmax(l, log); }).to(dt));
          }
        }
      }
    }
  }
}

TEST(NormSoftmax, StableForLargeAndInfiniteValues) {
  Tensor x = make({1000, 1001, 999, -kInf, 0, -kInf, -kInf, -kInf, 88, 89, 90, 100}, {4, 3}, kFloat32);
  for (bool log : {false, true}) {
    Tensor ref = along(x, 1, [log](const Line& l) { return ref_softmax(l, log); });
    Tensor y = log ? log_softmax(x, 1) : softmax(x, 1);
    std::vector<double> got = y.to_vector<double>(), want = ref.to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i]))
        EXPECT_TRUE(std::isnan(got[i])) << i;  // a row of only -inf is NaN, as PyTorch
      else if (std::isinf(want[i]))
        EXPECT_EQ(got[i], want[i]) << i;
      else
        EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::fabs(want[i]))) << i;
    }
  }
  EXPECT_EQ(softmax(x, 1).to_vector<double>()[3], 0.0);  // exp(-inf) is exactly 0
}

TEST(NormSoftmax, DtypeArgumentCastsFirstAndIntegersNeedIt) {
  Tensor h = random({3, 6}, kFloat16, 2);
  Tensor y = softmax(h, 1, kFloat32);
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_CLOSE(y, along(h, 1, [](const Line& l) { return ref_softmax(l, false); }));
  Tensor i = random({2, 5}, kInt64, 3);
  EXPECT_CLOSE(log_softmax(i, 1, kFloat64), along(i, 1, [](const Line& l) { return ref_softmax(l, true); }));
  EXPECT_ERROR(softmax(i, 1), "softmax needs a floating input", "int64");
  EXPECT_ERROR(log_softmax(random({2, 3}), 2), "dim 2 is out of range", "[-2, 1]");
}

// ---- layer_norm / rms_norm ----

// Normalises each row of `len` trailing elements: (x - mean) / sqrt(var + eps) * w + b, or the RMS form.
Tensor ref_rows(const Tensor& x, int64_t len, const Tensor& w, const Tensor& b, double eps, bool rms) {
  std::vector<double> v = x.to_vector<double>();
  std::vector<double> wv = w.defined() ? w.to_vector<double>() : std::vector<double>(len, 1.0);
  std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>(len, 0.0);
  for (size_t r = 0; len > 0 && r < v.size() / len; ++r) {
    double* p = v.data() + r * len;
    double mean = 0, m2 = 0;
    for (int64_t j = 0; j < len; ++j) mean += p[j] / len;
    if (rms) mean = 0;
    for (int64_t j = 0; j < len; ++j) m2 += (p[j] - mean) * (p[j] - mean) / len;
    for (int64_t j = 0; j < len; ++j) p[j] = (p[j] - mean) / std::sqrt(m2 + eps) * wv[j] + bv[j];
  }
  return make(v, x.sizes());
}

TEST(NormLayerNorm, MatchesReferenceWithAndWithoutAffine) {
  for (DType dt : kFloatingDTypes) {
    for (auto [shape, ns] : std::vector<std::pair<SymIntList, SymIntList>>{{{4, 10}, {10}},
                                                                           {{2, 3, 4}, {3, 4}},
                                                                           {{2, 3, 4}, {2, 3, 4}},
                                                                           {{3, 700}, {700}},
                                                                           {{0, 5}, {5}}}) {
      int64_t len = sym_product(ns).hint();
      Tensor w = random(ns, dt, 4), b = random(ns, dt, 5);
      for (const Tensor& x : layouts(random(shape, dt, 6) * 2.0 + 1.0)) {
        SCOPED_TRACE(fmt::format("{} {} normalized_shape {}", dtype_name(dt), shape.str(), ns.str()));
        EXPECT_CLOSE(layer_norm(x, ns), ref_rows(x, len, {}, {}, 1e-5, false).to(dt));
        EXPECT_CLOSE(layer_norm(x, ns, w, b, 1e-3), ref_rows(x, len, w, b, 1e-3, false).to(dt));
        EXPECT_CLOSE(layer_norm(x, ns, w), ref_rows(x, len, w, {}, 1e-5, false).to(dt));
      }
    }
  }
}

TEST(NormLayerNorm, ShapeErrors) {
  Tensor x = random({2, 3, 4});
  EXPECT_ERROR(layer_norm(x, {3}), "normalized_shape [3] does not match", "[2, 3, 4]");
  EXPECT_ERROR(layer_norm(x, {3, 4}, random({4})),
               "weight of shape [4] does not match normalized_shape [3, 4]");
  EXPECT_ERROR(layer_norm(x, {4}, {}, random({3})), "bias of shape [3]");
  EXPECT_ERROR(layer_norm(random({2, 3}, kInt64), {3}), "layer_norm needs a floating input");
}

TEST(NormRmsNorm, MatchesReferenceWithDefaultEpsAndPromotesWithWeight) {
  const std::vector<std::pair<DType, double>> eps_of = {{kFloat32, 1.1920928955078125e-07},
                                                        {kFloat64, 2.220446049250313e-16},
                                                        {kFloat16, 0.0009765625},
                                                        {kBFloat16, 0.0078125}};
  for (auto [dt, eps] : eps_of) {
    for (const Tensor& x : layouts(random({5, 3, 16}, dt, 7))) {
      Tensor w = random({3, 16}, dt, 8);
      SCOPED_TRACE(dtype_name(dt));
      EXPECT_CLOSE(rms_norm(x, {16}), ref_rows(x, 16, {}, {}, eps, true).to(dt));
      EXPECT_CLOSE(rms_norm(x, {3, 16}, w, 0.5), ref_rows(x, 48, w, {}, 0.5, true).to(dt));
    }
  }
  // Tiny rows: the default eps decides the result, so it must be the dtype's.
  Tensor tiny = make({1e-4, -1e-4}, {1, 2}, kFloat16);
  EXPECT_CLOSE(rms_norm(tiny, {2}), ref_rows(tiny, 2, {}, {}, 0.0009765625, true).to(kFloat16));
  Tensor xb = random({4, 8}, kBFloat16, 9);
  Tensor wf = random({8}, kFloat32, 10);
  Tensor y = rms_norm(xb, {8}, wf);
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_CLOSE(y, ref_rows(xb, 8, wf, {}, 0.0078125, true), 1e-2);
  EXPECT_ERROR(rms_norm(xb, {4}), "normalized_shape [4] does not match");
}

// ---- group_norm ----

Tensor ref_group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps) {
  std::vector<int64_t> s = sizes_of(x);
  int64_t n = s[0], c = s[1], hw = 1;
  for (size_t d = 2; d < s.size(); ++d) hw *= s[d];
  std::vector<double> v = x.to_vector<double>();
  std::vector<double> wv = w.defined() ? w.to_vector<double>() : std::vector<double>(c, 1.0);
  std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>(c, 0.0);
  const int64_t len = c / groups * hw;
  for (int64_t row = 0; row < n * groups; ++row) {
    double* p = v.data() + row * len;
    double mean = 0, m2 = 0;
    for (int64_t j = 0; j < len; ++j) mean += p[j] / len;
    for (int64_t j = 0; j < len; ++j) m2 += (p[j] - mean) * (p[j] - mean) / len;
    for (int64_t j = 0; j < len; ++j) {
      int64_t ch = (row % groups) * (c / groups) + j / hw;
      p[j] = (p[j] - mean) / std::sqrt(m2 + eps) * wv[ch] + bv[ch];
    }
  }
  return make(v, x.sizes());
}

TEST(NormGroupNorm, MatchesReference) {
  for (DType dt : kFloatingDTypes) {
    for (auto [shape, groups] : std::vector<std::pair<SymIntList, int64_t>>{{{2, 6, 5}, 3},
                                                                            {{2, 4, 3, 3}, 2},
                                                                            {{3, 4, 7}, 1},
                                                                            {{2, 4, 2, 2}, 4},
                                                                            {{2, 6}, 2},
                                                                            {{0, 4, 3}, 2}}) {
      const int64_t c = shape[1].hint();
      Tensor w = random({c}, dt, 11), b = random({c}, dt, 12);
      for (const Tensor& x : layouts(random(shape, dt, 13))) {
        SCOPED_TRACE(fmt::format("{} {} groups {}", dtype_name(dt), shape.str(), groups));
        EXPECT_CLOSE(group_norm(x, groups), ref_group_norm(x, groups, {}, {}, 1e-5).to(dt));
        EXPECT_CLOSE(group_norm(x, groups, w, b, 1e-2), ref_group_norm(x, groups, w, b, 1e-2).to(dt));
      }
    }
  }
}

TEST(NormGroupNorm, GroupsMustDivideChannels) {
  Tensor x = random({2, 6, 4});
  EXPECT_ERROR(group_norm(x, 4), "number of channels (6) must be divisible by num_groups (4)");
  EXPECT_ERROR(group_norm(x, 0), "num_groups must be positive");
  EXPECT_ERROR(group_norm(random({6}), 1), "shape (N, C, *)");
  EXPECT_ERROR(group_norm(x, 3, random({4})), "weight must have shape [6]");
}

// ---- batch_norm ----

struct BatchStats {
  std::vector<double> mean, var;  // biased variance
  int64_t count;
};
BatchStats ref_stats(const Tensor& x) {
  std::vector<int64_t> s = sizes_of(x);
  int64_t n = s[0], c = s[1], hw = 1;
  for (size_t d = 2; d < s.size(); ++d) hw *= s[d];
  std::vector<double> v = x.to_vector<double>();
  BatchStats st{std::vector<double>(c, 0.0), std::vector<double>(c, 0.0), n * hw};
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < hw; ++j) st.mean[ch] += v[(i * c + ch) * hw + j] / st.count;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < hw; ++j) {
        double d = v[(i * c + ch) * hw + j] - st.mean[ch];
        st.var[ch] += d * d / st.count;
      }
  }
  return st;
}
Tensor ref_batch_norm(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& var,
                      const Tensor& w, const Tensor& b, double eps) {
  std::vector<int64_t> s = sizes_of(x);
  int64_t c = s[1], hw = 1;
  for (size_t d = 2; d < s.size(); ++d) hw *= s[d];
  std::vector<double> v = x.to_vector<double>();
  std::vector<double> wv = w.defined() ? w.to_vector<double>() : std::vector<double>(c, 1.0);
  std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>(c, 0.0);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t ch = (static_cast<int64_t>(i) / hw) % c;
    v[i] = (v[i] - mean[ch]) / std::sqrt(var[ch] + eps) * wv[ch] + bv[ch];
  }
  return make(v, x.sizes());
}

TEST(NormBatchNorm, TrainingNormalisesWithBatchStatsAndUpdatesRunningStats) {
  for (DType dt : kFloatingDTypes) {
    for (const SymIntList& shape : {SymIntList{4, 3}, SymIntList{2, 3, 5}, SymIntList{3, 2, 4, 4}}) {
      for (const Tensor& x : layouts(random(shape, dt, 14) * 2.0 + 0.5)) {
        const int64_t c = shape[1].hint();
        Tensor w = random({c}, dt, 15), b = random({c}, dt, 16);
        // Running stats in float32 as strided views (every second element), written in place through the
        // stride.
        Tensor rm_buf = random({2 * c}, kFloat32, 17),
               rv_buf = random_positive({2 * c}, kFloat32, 0.5, 2.0, 18);
        Tensor rm = rm_buf.slice(0, 0, std::nullopt, 2), rv = rv_buf.slice(0, 0, std::nullopt, 2);
        std::vector<double> rm0 = rm.to_vector<double>(), rv0 = rv.to_vector<double>();
        const uint64_t version = rm.version();
        SCOPED_TRACE(fmt::format("{} {} strides {}", dtype_name(dt), shape.str(), x.strides().str()));
        Tensor y = batch_norm(x, w, b, rm, rv, true, 0.3, 1e-4);
        BatchStats st = ref_stats(x);
        EXPECT_EQ(y.dtype(), dt);
        EXPECT_CLOSE(y, ref_batch_norm(x, st.mean, st.var, w, b, 1e-4).to(dt));
        std::vector<double> want_m, want_v;
        for (int64_t ch = 0; ch < c; ++ch) {
          want_m.push_back(0.7 * rm0[ch] + 0.3 * st.mean[ch]);
          want_v.push_back(0.7 * rv0[ch] + 0.3 * st.var[ch] * st.count / (st.count - 1));  // unbiased
        }
        EXPECT_CLOSE(rm, make(want_m, {c}), dt == kFloat16 || dt == kBFloat16 ? 1e-2 : 1e-5);
        EXPECT_CLOSE(rv, make(want_v, {c}), dt == kFloat16 || dt == kBFloat16 ? 1e-2 : 1e-5);
        EXPECT_GT(rm.version(), version);
        // Elements between the strided views are untouched.
        EXPECT_CLOSE(rm_buf.slice(0, 1, std::nullopt, 2),
                     random({2 * c}, kFloat32, 17).slice(0, 1, std::nullopt, 2));
      }
    }
  }
}

TEST(NormBatchNorm, EvalUsesRunningStatsAndTrainingWorksWithoutThem) {
  for (DType dt : kFloatingDTypes) {
    Tensor x = random({4, 3, 5}, dt, 19);
    Tensor rm = random({3}, kFloat32, 20), rv = random_positive({3}, kFloat32, 0.5, 2.0, 21);
    Tensor before = rm.clone();
    Tensor y = batch_norm(x, {}, {}, rm, rv, false, 0.1, 1e-5);
    EXPECT_CLOSE(y, ref_batch_norm(x, rm.to_vector<double>(), rv.to_vector<double>(), {}, {}, 1e-5).to(dt));
    EXPECT_TENSOR_EQ(rm, before);
    BatchStats st = ref_stats(x);
    EXPECT_CLOSE(batch_norm(x, {}, {}, {}, {}, true, 0.1, 1e-5),
                 ref_batch_norm(x, st.mean, st.var, {}, {}, 1e-5).to(dt));
  }
}

// A channels-last input gives a channels-last output (as PyTorch's suggest_memory_format), eval and training.
TEST(NormBatchNorm, ChannelsLastInputGivesChannelsLastOutput) {
  for (DType dt : kFloatingDTypes) {
    Tensor x = (random({3, 5, 4, 6}, dt, 22) * 2.0 + 0.5).contiguous(MemoryFormat::kChannelsLast);
    Tensor w = random({5}, dt, 23), b = random({5}, dt, 24);
    Tensor rm = random({5}, kFloat32, 25), rv = random_positive({5}, kFloat32, 0.5, 2.0, 26);
    SCOPED_TRACE(dtype_name(dt));
    Tensor y = batch_norm(x, w, b, rm, rv, false, 0.1, 1e-5);
    EXPECT_TRUE(y.is_contiguous(MemoryFormat::kChannelsLast) && !y.is_contiguous()) << y.strides().str();
    EXPECT_CLOSE(y, ref_batch_norm(x, rm.to_vector<double>(), rv.to_vector<double>(), w, b, 1e-5).to(dt));
    Tensor t = batch_norm(x, w, b, {}, {}, true, 0.1, 1e-5);
    EXPECT_TRUE(t.is_contiguous(MemoryFormat::kChannelsLast)) << t.strides().str();
    BatchStats st = ref_stats(x);
    EXPECT_CLOSE(t, ref_batch_norm(x, st.mean, st.var, w, b, 1e-5).to(dt));
  }
}

TEST(NormBatchNorm, Errors) {
  Tensor x = random({4, 3, 2});
  EXPECT_ERROR(batch_norm(x, random({2}), {}, {}, {}, true), "weight must have shape [3]");
  EXPECT_ERROR(batch_norm(x, {}, {}, random({3}), random({4}), true), "running_var must have shape [3]");
  EXPECT_ERROR(batch_norm(x, {}, {}, {}, {}, false), "running_mean and running_var must be given");
  EXPECT_ERROR(batch_norm(random({1, 3}), {}, {}, {}, {}, true), "more than 1 value per channel");
  EXPECT_ERROR(batch_norm(random({3}), {}, {}, {}, {}, true), "shape (N, C, *)");
}

}  // namespace
}  // namespace sinter
