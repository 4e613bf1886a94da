// Tests of mm, bmm, matmul (every rank case), addmm, linear and einsum against float64 references written as
// plain loops here: random inputs, broadcasting, transposed and strided operands, empty dims, every dtype the
// ops take, and the errors for bad shapes and dtypes.
#include <atomic>
#include <functional>
#include <map>
#include <thread>

#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using V = std::vector<double>;
using I = std::vector<int64_t>;

V vals(const Tensor& t) { return t.to_vector<double>(); }
Tensor make(const V& v, const I& sizes, DType dtype = kFloat64) {
  if (sizes.empty()) return from_vector<double>(v, {1}, dtype).reshape(SymIntList{});
  return from_vector<double>(v, SymIntList(sizes), dtype);
}
I contiguous_strides_of(const I& sizes) {
  I s(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) s[d - 1] = s[d] * sizes[d];
  return s;
}

// torch.matmul in float64: 1-D operands gain a dim that the result drops, batch dims broadcast.
Tensor ref_matmul(const Tensor& a, const Tensor& b) {
  I as = a.sizes().hints(), bs = b.sizes().hints();
  bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), 1);
  if (b1) bs.push_back(1);
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  I ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t nb = std::max(ab.size(), bb.size());
  while (ab.size() < nb) ab.insert(ab.begin(), 1);
  while (bb.size() < nb) bb.insert(bb.begin(), 1);
  I batch(nb);
  int64_t total = 1;
  for (size_t d = 0; d < nb; ++d) total *= (batch[d] = std::max(ab[d], bb[d]));
  I sa = contiguous_strides_of(ab), sb = contiguous_strides_of(bb);
  V av = vals(a), bv = vals(b), out;
  for (int64_t t = 0; t < total; ++t) {
    int64_t rem = t, oa = 0, ob = 0;
    for (size_t d = nb; d-- > 0;) {
      int64_t i = rem % batch[d];
      rem /= batch[d];
      oa += (ab[d] == 1 ? 0 : i) * sa[d];
      ob += (bb[d] == 1 ? 0 : i) * sb[d];
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += av[oa * M * K + i * K + k] * bv[ob * K * N + k * N + j];
        out.push_back(s);
      }
  }
  I sizes = batch;
  if (!a1) sizes.push_back(M);
  if (!b1) sizes.push_back(N);
  return make(out, sizes);
}

TEST(LinalgMatmul, EveryRankCaseMatchesReference) {
  std::vector<std::pair<I, I>> cases = {{{3}, {3}},
                                        {{2, 3}, {3, 4}},
                                        {{3}, {3, 4}},
                                        {{2, 3}, {3}},
                                        {{5, 2, 3}, {3, 4}},
                                        {{2, 3}, {5, 3, 4}},
                                        {{5, 1, 2, 3}, {4, 3, 2}},
                                        {{3}, {2, 3, 4}},
                                        {{2, 3, 4}, {4}},
                                        {{1, 2, 3}, {6, 3, 4}},
                                        {{0, 3}, {3, 4}},
                                        {{2, 0}, {0, 3}},
                                        {{3, 0, 4}, {4, 2}},
                                        {{1, 1}, {1, 1}},
                                        {{7, 1}, {1, 9}},
                                        {{64, 33}, {33, 65}}};
  for (DType dt : {kFloat32, kFloat64}) {
    for (auto& [sa, sb] : cases) {
      Tensor a = random(SymIntList(sa), dt, 1), b = random(SymIntList(sb), dt, 2);
      Tensor out = matmul(a, b);
      EXPECT_EQ(out.dtype(), dt);
      EXPECT_CLOSE(out, ref_matmul(a, b)) << SymIntList(sa).str() << " @ " << SymIntList(sb).str();
    }
  }
}

TEST(LinalgMatmul, LargeProductUsesEveryPathCorrectly) {
  // Big enough to be split over the pool (rows, then columns when M is small), and a folded batch.
  for (auto [sa, sb] : std::vector<std::pair<I, I>>{{{300, 70}, {70, 200}},
                                                    {{3, 70}, {70, 900}},
                                                    {{4, 50, 30}, {30, 40}},
                                                    {{6, 40, 30}, {6, 30, 50}}}) {
    Tensor a = random(SymIntList(sa), kFloat32, 3), b = random(SymIntList(sb), kFloat32, 4);
    EXPECT_CLOSE(matmul(a, b), ref_matmul(a, b));
  }
}

// One to eight rows against a linear layer's weight take the dot-product path (ops/gemm_thin.h, AVX-512): K with
// and without a partial vector, N not a multiple of its 4-row blocks, rows of A with a gap between them, and
// addmm's alpha and beta; all against float64.
TEST(LinalgMatmul, ThinProductsAgainstAWeightMatchFloat64) {
  for (int64_t m : {1, 2, 3, 5, 8})
    for (int64_t k : {1, 7, 16, 33, 300})
      for (int64_t n : {1, 5, 64, 1001}) {
        Tensor wide = random({m, k + 5}, kFloat32, 1), w = random({n, k}, kFloat32, 2), b = random({n}, kFloat32, 3);
        Tensor x = wide.narrow(1, 0, k);  // row stride k + 5
        Tensor ref = linear(x.to(kFloat64), w.to(kFloat64), b.to(kFloat64));
        EXPECT_CLOSE(linear(x, w, b), ref.to(kFloat32)) << m << "x" << k << " by " << n;
        Tensor c = random({m, n}, kFloat32, 4);
        Tensor want = addmm(c.to(kFloat64), x.to(kFloat64), w.to(kFloat64).t(), 0.5, 2.0);
        EXPECT_CLOSE(addmm(c, x, w.t(), 0.5, 2.0), want.to(kFloat32)) << "addmm " << m << "x" << k << " by " << n;
      }
}

TEST(LinalgMatmul, TransposedStridedAndExpandedOperands) {
  Tensor a = random({4, 6}, kFloat32, 5), b = random({6, 5}, kFloat32, 6);
  Tensor at = random({6, 4}, kFloat32, 7).t(), bt = random({5, 6}, kFloat32, 8).t();
  EXPECT_CLOSE(mm(at, bt), ref_matmul(at.contiguous(), bt.contiguous()));
  EXPECT_CLOSE(mm(a, bt), ref_matmul(a, bt.contiguous()));
  Tensor an = testing::non_contiguous(a), bn = testing::non_contiguous(b);  // stride 2 in the last dim
  EXPECT_CLOSE(mm(an, bn), ref_matmul(a, b));
  // A permuted batch, and a batch dim expanded with stride 0.
  Tensor p = random({6, 3, 4}, kFloat64, 9).permute({1, 2, 0});  // [3, 4, 6], batch stride 4
  Tensor q = random({6, 5}, kFloat64, 10).unsqueeze(0).expand({3, 6, 5});
  EXPECT_CLOSE(bmm(p, q), ref_matmul(p.contiguous(), q.contiguous()));
  EXPECT_CLOSE(matmul(p, testing::non_contiguous(q.contiguous())),
               ref_matmul(p.contiguous(), q.contiguous()));
  // Row and column vectors with odd strides.
  Tensor col = random({8, 3}, kFloat32, 11).slice(1, 0, 1);  // [8, 1], stride 3
  Tensor row = random({3, 8}, kFloat32, 12).slice(0, 1, 2);  // [1, 8]
  EXPECT_CLOSE(mm(row, col), ref_matmul(row.contiguous(), col.contiguous()));
  EXPECT_CLOSE(mm(col, row), ref_matmul(col.contiguous(), row.contiguous()));
}

TEST(LinalgMatmul, HalfAndIntegerDtypes) {
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor a = random({3, 17, 9}, dt, 13), b = random({9, 11}, dt, 14);
    Tensor out = matmul(a, b);
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_CLOSE(out, ref_matmul(a, b), 1e-2);
  }
  for (DType dt : {kInt64, kInt32, kInt8, kUInt8}) {
    // Small values so that no sum overflows int8 (PyTorch would wrap; the float64 reference would not).
    V av, bv;
    for (int i = 0; i < 2 * 3 * 4; ++i) av.push_back(i % 5 - (dt == kUInt8 ? 0 : 2));
    for (int i = 0; i < 4 * 5; ++i) bv.push_back(i % 3);
    Tensor a = make(av, {2, 3, 4}, dt), b = make(bv, {4, 5}, dt);
    Tensor out = matmul(a, b);
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_TENSOR_EQ(out, ref_matmul(a, b));
  }
  Tensor big = make({1 << 20}, {1, 1}, kInt64);
  EXPECT_EQ(mm(big, big).item<int64_t>(), int64_t(1) << 40);
}

TEST(LinalgMatmul, ConcurrentCallsFromUserThreadsAgree) {
  // One caller gets the pool, the others run their GEMMs inline: all must give the same numbers.
  Tensor a = random({256, 200}, kFloat32, 15), b = random({200, 230}, kFloat32, 16);
  Tensor ref = ref_matmul(a, b);
  Tensor x = random({2, 8, 20, 20}, kFloat32, 17), w = random({8, 8, 3, 3}, kFloat32, 18);
  Tensor conv_ref = conv2d(x, w, Tensor(), {1}, SymIntList{1});
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        if (!testing::close(mm(a, b), ref)) ++bad;
        if (!testing::close(conv2d(x, w, Tensor(), {1}, SymIntList{1}), conv_ref, 1e-6)) ++bad;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(LinalgMatmul, ErrorsNameShapesAndDtypes) {
  Tensor a = random({2, 3}), b = random({4, 5});
  EXPECT_ERROR(mm(a, b), "2x3", "4x5");
  EXPECT_ERROR(matmul(random({2, 3, 4}), random({5, 6})), "[2, 3, 4]", "[5, 6]");
  EXPECT_ERROR(matmul(random({3}), random({4})), "[3]", "[4]");
  EXPECT_ERROR(matmul(random({2, 2, 3}), random({3, 3, 4})), "broadcast");
  EXPECT_ERROR(mm(random({2, 3}), random({3, 4}, kFloat64)), "float32", "float64");
  EXPECT_ERROR(mm(random({2, 3}, kBool), random({3, 4}, kBool)), "bool");
  EXPECT_ERROR(mm(random({2, 3, 1}), random({3, 4})), "matrix");
  EXPECT_ERROR(bmm(random({2, 2, 3}), random({3, 3, 4})), "[2, 2, 3]", "[3, 3, 4]");
  EXPECT_ERROR(matmul(scalar_tensor(1.0), random({3})), "at least 1-D");
}

TEST(LinalgAddmm, BetaAlphaAndBroadcastSelf) {
  Tensor a = random({5, 4}, kFloat64, 20), b = random({4, 6}, kFloat64, 21);
  V p = vals(ref_matmul(a, b));
  for (I self_shape : {I{5, 6}, I{6}, I{1, 6}, I{5, 1}, I{}}) {
    Tensor self = random(SymIntList(self_shape), kFloat64, 22);
    Tensor full = self.expand({5, 6}).contiguous();
    V s = vals(full), expect(30);
    for (int i = 0; i < 30; ++i) expect[i] = 0.5 * s[i] + 2.0 * p[i];
    EXPECT_CLOSE(addmm(self, a, b, 0.5, 2.0), make(expect, {5, 6}));
  }
  // beta = 0 ignores self entirely, NaN included.
  Tensor nan_self = full({5, 6}, NAN, TensorOptions(kFloat64));
  EXPECT_CLOSE(addmm(nan_self, a, b, 0, 1), make(p, {5, 6}));
  EXPECT_ERROR(addmm(random({5, 6}, kInt64), random({5, 4}, kInt64), random({4, 6}, kInt64), 0.5, 1),
               "integer");
  EXPECT_ERROR(addmm(random({3, 6}), random({5, 4}), random({4, 6})), "[3, 6]");
  Tensor h = addmm(random({6}, kBFloat16), random({5, 4}, kBFloat16, 1), random({4, 6}, kBFloat16, 2));
  EXPECT_EQ(h.dtype(), kBFloat16);
}

// linear(x, w, b) = x @ w^T + b over any leading dims.
Tensor ref_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor out = ref_matmul(x.to(kFloat64), w.to(kFloat64).t().contiguous());
  if (!b.defined()) return out;
  V o = vals(out), bv = vals(b);
  for (size_t i = 0; i < o.size(); ++i) o[i] += bv[i % bv.size()];
  return make(o, out.sizes().hints());
}

TEST(LinalgLinear, LeadingDimsBiasAndLayouts) {
  Tensor w = random({7, 5}, kFloat32, 30), bias = random({7}, kFloat32, 31);
  for (I xs : {I{5}, I{3, 5}, I{2, 3, 5}, I{2, 1, 4, 5}, I{0, 5}}) {
    Tensor x = random(SymIntList(xs), kFloat32, 32);
    EXPECT_CLOSE(linear(x, w, bias), ref_linear(x, w, bias));
    EXPECT_CLOSE(linear(x, w), ref_linear(x, w, Tensor()));
  }
  // A transposed input (leading dims not collapsible), a non-contiguous weight, a 1-D weight.
  Tensor xt = random({5, 3, 4}, kFloat32, 33).permute({1, 2, 0});
  EXPECT_CLOSE(linear(xt, w, bias), ref_linear(xt.contiguous(), w, bias));
  Tensor wn = testing::non_contiguous(w);
  EXPECT_CLOSE(linear(xt, wn, bias), ref_linear(xt.contiguous(), w, bias));
  Tensor w1 = random({5}, kFloat32, 34);
  EXPECT_CLOSE(linear(xt, w1), ref_matmul(xt.contiguous().to(kFloat64), w1.to(kFloat64)));
  for (DType dt : {kFloat16, kBFloat16, kFloat64}) {
    Tensor x = random({4, 5}, dt, 35);
    EXPECT_CLOSE(linear(x, w.to(dt), bias.to(dt)), ref_linear(x, w.to(dt), bias.to(dt)),
                 dt == kFloat64 ? 1e-12 : 1e-2);
  }
  EXPECT_ERROR(linear(random({3, 4}), w), "in_features", "4", "5");
  EXPECT_ERROR(linear(random({3, 5}), w, random({6})), "bias");
  EXPECT_ERROR(linear(random({3, 5}, kFloat64), w), "float64", "float32");
}

// ---- einsum: a brute-force reference over every assignment of the labels ----
Tensor ref_einsum(const std::string& eq, const std::vector<Tensor>& ts) {
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs = eq.substr(arrow + 2);
  std::vector<std::string> terms;
  for (size_t s = 0;;) {
    size_t c = lhs.find(',', s);
    terms.push_back(lhs.substr(s, c == std::string::npos ? std::string::npos : c - s));
    if (c == std::string::npos) break;
    s = c + 1;
  }
  std::map<char, int64_t> size;
  for (size_t i = 0; i < ts.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d)
      size[terms[i][d]] = std::max(size[terms[i][d]], ts[i].sizes()[d].hint());
  std::vector<char> labels;
  for (auto& [c, s] : size) labels.push_back(c);
  std::vector<V> data;
  for (const Tensor& t : ts) data.push_back(vals(t));
  I out_sizes;
  for (char c : rhs) out_sizes.push_back(size[c]);
  int64_t out_n = 1;
  for (int64_t s : out_sizes) out_n *= s;
  V out(out_n, 0.0);
  std::map<char, int64_t> at;
  std::function<void(size_t)> loop = [&](size_t li) {
    if (li < labels.size()) {
      for (int64_t v = 0; v < size[labels[li]]; ++v) at[labels[li]] = v, loop(li + 1);
      return;
    }
    double prod = 1;
    for (size_t i = 0; i < ts.size(); ++i) {
      I s = ts[i].sizes().hints();
      int64_t off = 0;
      for (size_t d = 0; d < terms[i].size(); ++d) off = off * s[d] + (s[d] == 1 ? 0 : at[terms[i][d]]);
      prod *= data[i][off];
    }
    int64_t o = 0;
    for (size_t d = 0; d < rhs.size(); ++d) o = o * out_sizes[d] + at[rhs[d]];
    out[o] += prod;
  };
  loop(0);
  return make(out, out_sizes);
}

TEST(LinalgEinsum, EquationsMatchBruteForce) {
  struct Case {
    std::string eq, ref_eq;
    std::vector<I> shapes;
  };
  std::vector<Case> cases = {
      {"ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk", "ij,jk->ik", {{3, 4}, {4, 5}}},  // implicit output
      {"ba", "ba->ab", {{3, 4}}},                // implicit output is sorted: a transpose
      {"bij,bjk->bik", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"ii->i", "ii->i", {{4, 4}}},
      {"ii", "ii->", {{4, 4}}},  // trace
      {"iij->j", "iij->j", {{3, 3, 5}}},
      {"ij->ji", "ij->ji", {{3, 5}}},
      {"ij->", "ij->", {{3, 5}}},
      {"i,i->", "i,i->", {{6}, {6}}},
      {"i,j->ij", "i,j->ij", {{3}, {4}}},
      {"bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", {{2, 3, 4, 5}, {2, 3, 6, 5}}},
      {"ijk,jil->kl", "ijk,jil->kl", {{2, 3, 4}, {3, 2, 5}}},
      {"ij,jk,kl->il", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
      {"bi,bi->b", "bi,bi->b", {{4, 6}, {4, 6}}},
      {"ij,ij->ij", "ij,ij->ij", {{3, 4}, {1, 4}}},  // size-1 dims broadcast
      {"...ij,...jk->...ik", "xyij,yjk->xyik", {{2, 3, 4, 5}, {3, 5, 6}}},
      {"...ij,...jk", "xyij,yjk->xyik", {{2, 3, 4, 5}, {3, 5, 6}}},
      {"b...,b...->b", "bxy,bxy->b", {{2, 3, 4}, {2, 1, 4}}},
      {"...i->...", "xyi->xy", {{2, 3, 4}}},
      {"i...->", "ixy->", {{2, 3, 4}}},
      {"A a,a A->Aa", "Aa,aA->Aa", {{3, 4}, {4, 3}}},  // spaces ignored, upper and lower case are distinct
  };
  for (const Case& c : cases) {
    for (DType dt : {kFloat32, kFloat64}) {
      std::vector<Tensor> ts;
      for (size_t i = 0; i < c.shapes.size(); ++i) ts.push_back(random(SymIntList(c.shapes[i]), dt, 40 + i));
      Tensor out = einsum(c.eq, ts);
      EXPECT_EQ(out.dtype(), dt);
      EXPECT_CLOSE(out, ref_einsum(c.ref_eq, ts)) << c.eq;
    }
  }
}

TEST(LinalgEinsum, StridedOperandsAndOtherDtypes) {
  Tensor a = random({5, 3, 4}, kFloat32, 50).permute({1, 0, 2});  // [3, 5, 4]
  Tensor b = testing::non_contiguous(random({4, 2}, kFloat32, 51));
  EXPECT_CLOSE(einsum("ijk,kl->ijl", {a, b}), ref_einsum("ijk,kl->ijl", {a.contiguous(), b.contiguous()}));
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor x = random({3, 4}, dt, 52), y = random({4, 5}, dt, 53);
    EXPECT_CLOSE(einsum("ij,jk->ik", {x, y}), ref_einsum("ij,jk->ik", {x, y}), 1e-2);
  }
  Tensor i = make({1, 2, 3, 4, 5, 6}, {2, 3}, kInt32);
  Tensor s = einsum("ij->j", {i});
  EXPECT_EQ(s.dtype(), kInt32);
  EXPECT_TENSOR_EQ(s, make({5, 7, 9}, {3}));
}

TEST(LinalgEinsum, BadEquationsAreErrors) {
  Tensor a = random({2, 3}), b = random({3, 4});
  EXPECT_ERROR(einsum("ij,jk->ik", {a}), "2 operands", "1 tensors");
  EXPECT_ERROR(einsum("ijk,jk->ik", {a, b}), "subscripts", "operand 0");
  EXPECT_ERROR(einsum("ij,jk->iz", {a, b}), "output subscript z");
  EXPECT_ERROR(einsum("ij,jk->ii", {a, b}), "more than once");
  EXPECT_ERROR(einsum("ij,ik->jk", {a, b}), "subscript i", "size 2", "size 3");
  EXPECT_ERROR(einsum("i1,jk", {a, b}), "invalid subscript");
  EXPECT_ERROR(einsum("ij,jk", {a, b.to(kFloat64)}), "float32", "float64");
}

}  // namespace
}  // namespace sinter
