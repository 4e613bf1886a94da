// Tests of scaled_dot_product_attention, cross_entropy, nll_loss, mse_loss, embedding and dropout against
// float64 references written here: masks (bool, float, broadcast), is_causal, dropout reproducibility from
// the Philox rule, loss weights / ignore_index / label smoothing / probability targets and reductions, and
// errors.
#include <cmath>

#include "tensor/generator.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using testing::random_positive;
using V = std::vector<double>;
using I = std::vector<int64_t>;

V vals(const Tensor& t) { return t.to_vector<double>(); }
Tensor make(const V& v, const I& sizes, DType dtype = kFloat64) {
  if (sizes.empty()) return from_vector<double>(v, {1}, dtype).reshape(SymIntList{});
  return from_vector<double>(v, SymIntList(sizes), dtype);
}

// ---- attention ----
struct AttnRef {
  const Tensor* mask = nullptr;  // broadcast to [B, L, S] by the caller
  bool causal = false;
  double scale = 0;  // 0: 1/sqrt(E)
  double dropout = 0;
  uint64_t seed = 0, first = 0;
};

// q [B, L, E], k [B, S, E], v [B, S, Ev] (contiguous, batch already flattened); fully masked rows give zeros.
Tensor ref_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const AttnRef& a) {
  I qs = q.sizes().hints(), ks = k.sizes().hints(), vs = v.sizes().hints();
  int64_t B = qs[0], L = qs[1], E = qs[2], S = ks[1], Ev = vs[2];
  double scale = a.scale ? a.scale : 1.0 / std::sqrt(static_cast<double>(E));
  V qv = vals(q), kv = vals(k), vv = vals(v), mv = a.mask ? vals(*a.mask) : V(), out;
  bool bool_mask = a.mask && a.mask->dtype() == kBool;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      V s(S);
      double mx = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        double d = 0;
        for (int64_t e = 0; e < E; ++e) d += qv[(b * L + i) * E + e] * kv[(b * S + j) * E + e];
        s[j] = d * scale;
        if (a.causal && j > i) s[j] = -INFINITY;
        if (a.mask) {
          double m = mv[(b * L + i) * S + j];
          if (bool_mask)
            s[j] = m != 0 ? s[j] : -INFINITY;
          else
            s[j] += m;
        }
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += (s[j] = mx == -INFINITY ? 0 : std::exp(s[j] - mx));
      for (int64_t j = 0; j < S; ++j) {
        s[j] = mx == -INFINITY ? 0 : s[j] / sum;
        if (a.dropout > 0) {
          bool keep =
              philox_uniform(a.seed, a.first + static_cast<uint64_t>((b * L + i) * S + j)) >= a.dropout;
          s[j] = keep ? s[j] / (1 - a.dropout) : 0;
        }
      }
      for (int64_t e = 0; e < Ev; ++e) {
        double o = 0;
        for (int64_t j = 0; j < S; ++j) o += s[j] * vv[(b * S + j) * Ev + e];
        out.push_back(o);
      }
    }
  return make(out, {B, L, Ev});
}

// Flattens the batch dims of x broadcast to `batch` + its last two dims.
Tensor flat(const Tensor& x, const I& batch) {
  I sizes = batch;
  sizes.push_back(x.sizes()[x.dim() - 2].hint());
  sizes.push_back(x.sizes()[x.dim() - 1].hint());
  int64_t b = 1;
  for (int64_t s : batch) b *= s;
  return x.expand(SymIntList(sizes)).contiguous().reshape({b, sizes[sizes.size() - 2], sizes.back()});
}

TEST(Attention, MatchesReferenceWithMasks) {
  Tensor q = random({2, 3, 5, 8}, kFloat32, 1), k = random({2, 3, 7, 8}, kFloat32, 2);
  Tensor v = random({2, 3, 7, 6}, kFloat32, 3);
  I batch{2, 3};
  Tensor out = scaled_dot_product_attention(q, k, v);
  EXPECT_EQ(out.sizes().hints(), (I{2, 3, 5, 6}));
  EXPECT_CLOSE(out.reshape({6, 5, 6}), ref_sdpa(flat(q, batch), flat(k, batch), flat(v, batch), {}));
  // A bool mask [L, S] broadcast over the batch, a float mask [2, 1, L, S], a custom scale.
  Tensor bm = random({5, 7}, kBool, 4);
  Tensor bmf = flat(bm.to(kFloat32).unsqueeze(0), batch);
  Tensor bmb = bmf.to(kBool);
  AttnRef r{&bmb};
  EXPECT_CLOSE(scaled_dot_product_attention(q, k, v, bm).reshape({6, 5, 6}),
               ref_sdpa(flat(q, batch), flat(k, batch), flat(v, batch), r));
  Tensor fm = random({2, 1, 5, 7}, kFloat32, 5);
  Tensor fmf = flat(fm, batch);
  AttnRef rf{&fmf};
  rf.scale = 0.3;
  EXPECT_CLOSE(scaled_dot_product_attention(q, k, v, fm, 0.0, false, 0.3).reshape({6, 5, 6}),
               ref_sdpa(flat(q, batch), flat(k, batch), flat(v, batch), rf));
  // is_causal with L < S: top-left aligned, key j visible to query i when j <= i.
  AttnRef rc;
  rc.causal = true;
  EXPECT_CLOSE(scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true).reshape({6, 5, 6}),
               ref_sdpa(flat(q, batch), flat(k, batch), flat(v, batch), rc));
}

TEST(Attention, BroadcastBatchLayoutsAndDtypes) {
  // Batch dims broadcast; q comes from a [B, L, H, E] tensor transposed to [B, H, L, E] (not contiguous).
  Tensor q = random({2, 5, 3, 4}, kFloat32, 6).transpose(1, 2), k = random({1, 3, 6, 4}, kFloat32, 7);
  Tensor v = testing::non_contiguous(random({2, 1, 6, 5}, kFloat32, 8));
  I batch{2, 3};
  EXPECT_CLOSE(scaled_dot_product_attention(q, k, v).reshape({6, 5, 5}),
               ref_sdpa(flat(q, batch), flat(k, batch), flat(v, batch), {}));
  Tensor q3 = random({4, 9}, kFloat64, 9), k3 = random({6, 9}, kFloat64, 10),
         v3 = random({6, 2}, kFloat64, 11);
  EXPECT_CLOSE(scaled_dot_product_attention(q3, k3, v3).unsqueeze(0),
               ref_sdpa(q3.unsqueeze(0), k3.unsqueeze(0), v3.unsqueeze(0), {}));
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor qh = random({2, 5, 8}, dt, 12), kh = random({2, 7, 8}, dt, 13), vh = random({2, 7, 8}, dt, 14);
    Tensor out = scaled_dot_product_attention(qh, kh, vh);
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_CLOSE(out, ref_sdpa(qh, kh, vh, {}), 1e-2);
  }
  // A long sequence, split into many row blocks.
  Tensor ql = random({1, 300, 16}, kFloat32, 15), kl = random({1, 400, 16}, kFloat32, 16);
  Tensor vl = random({1, 400, 16}, kFloat32, 17);
  AttnRef rc;
  rc.causal = true;
  EXPECT_CLOSE(scaled_dot_product_attention(ql, kl, vl, Tensor(), 0.0, true), ref_sdpa(ql, kl, vl, rc));
}

TEST(Attention, FullyMaskedRowsAreZeroAndDropoutFollowsTheRule) {
  Tensor q = random({2, 4, 8}, kFloat32, 18), k = random({2, 6, 8}, kFloat32, 19),
         v = random({2, 6, 3}, kFloat32, 20);
  V m(4 * 6, 1.0);
  for (int j = 0; j < 6; ++j) m[2 * 6 + j] = 0;  // query 2 sees no key
  Tensor mask = make(m, {4, 6}, kBool);
  Tensor out = scaled_dot_product_attention(q, k, v, mask);
  V o = vals(out);
  for (int b = 0; b < 2; ++b)
    for (int e = 0; e < 3; ++e) EXPECT_EQ(o[(b * 4 + 2) * 3 + e], 0.0);
  // Dropout: B*L*S numbers reserved; weight (b, i, j) kept iff philox_uniform(seed, first + (b*L+i)*S + j) >=
  // p.
  manual_seed(1234);
  GeneratorState before = get_rng_state();
  Tensor d = scaled_dot_product_attention(q, k, v, Tensor(), 0.4);
  EXPECT_EQ(get_rng_state().offset, before.offset + 2 * 4 * 6);
  AttnRef r;
  r.dropout = 0.4, r.seed = before.seed, r.first = before.offset;
  EXPECT_CLOSE(d, ref_sdpa(q, k, v, r));
  EXPECT_FALSE(testing::close(scaled_dot_product_attention(q, k, v, Tensor(), 0.4), d));  // a fresh mask
}

TEST(Attention, Errors) {
  Tensor q = random({2, 4, 8}), k = random({2, 6, 8}), v = random({2, 6, 3});
  EXPECT_ERROR(scaled_dot_product_attention(q, k, v, random({4, 6}, kBool), 0.0, true), "is_causal");
  EXPECT_ERROR(scaled_dot_product_attention(q, k.to(kFloat64), v), "same dtype");
  EXPECT_ERROR(scaled_dot_product_attention(q, random({2, 6, 7}), v), "embedding");
  EXPECT_ERROR(scaled_dot_product_attention(q, k, random({2, 5, 3})), "sequence length");
  EXPECT_ERROR(scaled_dot_product_attention(q, k, v, random({4, 6}, kInt64)), "attn_mask");
  EXPECT_ERROR(scaled_dot_product_attention(q, k, v, random({3, 6}, kBool)), "broadcast");
  EXPECT_ERROR(scaled_dot_product_attention(random({2, 4, 8}, kInt64), random({2, 6, 8}, kInt64),
                                            random({2, 6, 3}, kInt64)),
               "floating");
}

// ---- losses ----
// Per-position log-softmax over the class dim of [N, C, D] values.
V log_softmax_ref(const V& x, int64_t N, int64_t C, int64_t D) {
  V out(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      double mx = -INFINITY, s = 0;
      for (int64_t c = 0; c < C; ++c) mx = std::max(mx, x[(n * C + c) * D + d]);
      for (int64_t c = 0; c < C; ++c) s += std::exp(x[(n * C + c) * D + d] - mx);
      for (int64_t c = 0; c < C; ++c) out[(n * C + c) * D + d] = x[(n * C + c) * D + d] - mx - std::log(s);
    }
  return out;
}

// cross_entropy with class indices, written from the definition: loss_i = (1-eps) * -w[t] logp[t]
// + eps/C * -sum_c w[c] logp[c]; mean divides both sums by sum of w[t] over the counted targets.
Tensor ref_ce(const Tensor& x, const Tensor& t, const V& w, const std::string& red, int64_t ignore,
              double eps, bool log_softmax = true) {
  I xs = x.sizes().hints();
  int64_t N = xs.size() == 1 ? 1 : xs[0], C = xs.size() == 1 ? xs[0] : xs[1], D = 1;
  for (size_t d = 2; d < xs.size(); ++d) D *= xs[d];
  V lp = log_softmax ? log_softmax_ref(vals(x), N, C, D) : vals(x);
  V tv = vals(t), per;
  double nll = 0, smooth = 0, wsum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      int64_t ti = static_cast<int64_t>(tv[n * D + d]);
      if (ti == ignore) {
        per.push_back(0);
        continue;
      }
      double a = -w[ti] * lp[(n * C + ti) * D + d], s = 0;
      for (int64_t c = 0; c < C; ++c) s -= w[c] * lp[(n * C + c) * D + d];
      per.push_back((1 - eps) * a + eps / C * s);
      nll += a, smooth += s, wsum += w[ti];
    }
  if (red == "none") return make(per, t.sizes().hints());
  double total = (1 - eps) * nll + eps / C * smooth;
  return make({red == "sum" ? total : total / wsum}, {});
}

TEST(Loss, CrossEntropyIndexTargets) {
  Tensor x = random({6, 5}, kFloat32, 30);
  Tensor t = make({0, 4, 2, -100, 1, 4}, {6}, kInt64);
  V w{0.5, 1.0, 2.0, 1.5, 0.25};
  Tensor wt = make(w, {5}, kFloat32);
  for (std::string red : {"mean", "sum", "none"}) {
    for (double eps : {0.0, 0.1}) {
      EXPECT_CLOSE(cross_entropy(x, t, Tensor(), red, -100, eps), ref_ce(x, t, V(5, 1.0), red, -100, eps))
          << red << " eps=" << eps;
      EXPECT_CLOSE(cross_entropy(x, t, wt, red, -100, eps), ref_ce(x, t, w, red, -100, eps))
          << red << " " << eps;
    }
  }
  // ignore_index as a real class; N-d input [N, C, d1, d2]; 1-D input with a 0-dim target.
  EXPECT_CLOSE(cross_entropy(x, t.clamp(0, 4), wt, "mean", 4), ref_ce(x, t.clamp(0, 4), w, "mean", 4, 0));
  Tensor x4 = random({2, 5, 3, 4}, kFloat64, 31);
  V t4v;
  for (int i = 0; i < 24; ++i) t4v.push_back((i * 7) % 5);
  Tensor t4 = make(t4v, {2, 3, 4}, kInt64);
  EXPECT_CLOSE(cross_entropy(x4, t4, wt.to(kFloat64), "mean", -100, 0.2),
               ref_ce(x4, t4, w, "mean", -100, 0.2));
  EXPECT_CLOSE(cross_entropy(x4, t4, Tensor(), "none"), ref_ce(x4, t4, V(5, 1.0), "none", -100, 0));
  Tensor x1 = random({5}, kFloat32, 33);
  EXPECT_CLOSE(cross_entropy(x1, make({3}, {}, kInt64)),
               ref_ce(x1, make({3}, {}, kInt64), V(5, 1), "mean", -100, 0));
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor out = cross_entropy(x.to(dt), t, wt.to(dt), "mean", -100, 0.1);
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_CLOSE(out, ref_ce(x.to(dt), t, w, "mean", -100, 0.1), 1e-2);
  }
  // Every target ignored: 0 / 0 = NaN for 'mean', as PyTorch.
  EXPECT_TRUE(std::isnan(cross_entropy(x, full({6}, -100, TensorOptions(kInt64))).item<float>()));
}

TEST(Loss, CrossEntropyProbabilityTargets) {
  Tensor x = random({4, 5, 3}, kFloat64, 34);
  Tensor p = random_positive({4, 5, 3}, kFloat64, 0.1, 1.0, 35);
  V w{0.5, 1.0, 2.0, 1.5, 0.25};
  for (double eps : {0.0, 0.2}) {
    V lp = log_softmax_ref(vals(x), 4, 5, 3), pv = vals(p), per;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t d = 0; d < 3; ++d) {
        double s = 0;
        for (int64_t c = 0; c < 5; ++c) {
          double tc = pv[(n * 5 + c) * 3 + d] * (1 - eps) + eps / 5;
          s -= w[c] * lp[(n * 5 + c) * 3 + d] * tc;
        }
        per.push_back(s);
      }
    double sum = 0;
    for (double v : per) sum += v;
    Tensor wt = make(w, {5});
    EXPECT_CLOSE(cross_entropy(x, p, wt, "none", -100, eps), make(per, {4, 3}));
    EXPECT_CLOSE(cross_entropy(x, p, wt, "sum", -100, eps), make({sum}, {}));
    EXPECT_CLOSE(cross_entropy(x, p, wt, "mean", -100, eps), make({sum / 12}, {}));
  }
  EXPECT_ERROR(cross_entropy(x, random({4, 5, 3}, kInt64)), "floating");
}

TEST(Loss, NllAndMse) {
  Tensor lp = random({7, 4}, kFloat32, 36);
  Tensor t = make({0, 3, 1, 1, -100, 2, 3}, {7}, kInt64);
  V w{1.0, 0.5, 2.0, 3.0};
  for (std::string red : {"mean", "sum", "none"})
    EXPECT_CLOSE(nll_loss(lp, t, make(w, {4}, kFloat32), red), ref_ce(lp, t, w, red, -100, 0, false)) << red;
  EXPECT_ERROR(nll_loss(lp, make({0, 3, 1, 1, 9, 2, 3}, {7}, kInt64)), "target 9 is out of bounds");
  EXPECT_ERROR(nll_loss(lp, make({0, 1}, {2}, kInt64)), "expected target of shape [7]");
  EXPECT_ERROR(nll_loss(lp, t, Tensor(), "avg"), "reduction");
  EXPECT_ERROR(cross_entropy(lp, t, make({1, 2}, {2}, kFloat32)), "weight");
  EXPECT_ERROR(cross_entropy(lp, t, Tensor(), "mean", -100, 1.5), "label_smoothing");

  Tensor a = random({3, 4}, kFloat32, 37), b = random({4}, kFloat32, 38);
  V av = vals(a), bv = vals(b), sq;
  double sum = 0;
  for (int i = 0; i < 12; ++i) sq.push_back((av[i] - bv[i % 4]) * (av[i] - bv[i % 4])), sum += sq.back();
  EXPECT_CLOSE(mse_loss(a, b, "none"), make(sq, {3, 4}));
  EXPECT_CLOSE(mse_loss(a, b, "sum"), make({sum}, {}));
  EXPECT_CLOSE(mse_loss(a, b), make({sum / 12}, {}));
  EXPECT_EQ(mse_loss(a.to(kBFloat16), b.to(kBFloat16)).dtype(), kBFloat16);
  EXPECT_EQ(mse_loss(a, b.to(kFloat64)).dtype(), kFloat64);
  EXPECT_CLOSE(mse_loss(a.to(kFloat16), b.to(kFloat16)), make({sum / 12}, {}), 1e-2);
  EXPECT_ERROR(mse_loss(random({3}, kInt64), random({3}, kInt64)), "floating");
  EXPECT_ERROR(mse_loss(a, random({5})), "broadcast");
}

// ---- embedding and dropout ----
TEST(Embedding, GathersRowsForAnyIntegerIndices) {
  Tensor w = random({10, 3}, kFloat32, 40);
  V wv = vals(w);
  V idx{3, 0, 9, 3, 7, 1};
  for (DType dt : {kInt64, kInt32, kInt8, kUInt8}) {
    Tensor out = embedding(w, make(idx, {2, 3}, dt));
    V expect;
    for (double i : idx)
      for (int d = 0; d < 3; ++d) expect.push_back(wv[static_cast<int>(i) * 3 + d]);
    EXPECT_TENSOR_EQ(out, make(expect, {2, 3, 3}));
  }
  EXPECT_TENSOR_EQ(embedding(testing::non_contiguous(w), make({2}, {}, kInt64)), w[2]);
  EXPECT_TENSOR_EQ(embedding(w, make(idx, {6}, kInt64), 3), embedding(w, make(idx, {6}, kInt64)));
  EXPECT_EQ(embedding(w, make({}, {0}, kInt64)).sizes().hints(), (I{0, 3}));
  EXPECT_ERROR(embedding(w, make({1, 10}, {2}, kInt64)), "index 10", "size 10");
  EXPECT_ERROR(embedding(w, make({-1}, {1}, kInt64)), "index -1");
  EXPECT_ERROR(embedding(w, make({1}, {1}, kFloat32)), "integer");
  EXPECT_ERROR(embedding(random({10}), make({1}, {1}, kInt64)), "2-D");
}

TEST(Dropout, KeepsByThePhiloxRuleAndScales) {
  Tensor x = random({64, 33}, kFloat32, 41).t();  // non-contiguous: the rule follows logical order
  manual_seed(99);
  GeneratorState s = get_rng_state();
  Tensor out = dropout(x, 0.3, true);
  EXPECT_EQ(get_rng_state().offset, s.offset + 64 * 33);
  V xv = vals(x), ov = vals(out);
  int64_t kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    bool keep = philox_uniform(s.seed, s.offset + i) >= 0.3;
    kept += keep;
    EXPECT_NEAR(ov[i], keep ? xv[i] / 0.7 : 0.0, 1e-5 * (1 + std::fabs(xv[i])));
  }
  EXPECT_NEAR(static_cast<double>(kept) / xv.size(), 0.7, 0.05);
  EXPECT_FALSE(testing::close(dropout(x, 0.3, true), out));  // the next call draws fresh numbers
  // p = 0 and eval mode copy without drawing; p = 1 gives zeros (x * 0).
  GeneratorState before = get_rng_state();
  EXPECT_TENSOR_EQ(dropout(x, 0.0, true), x);
  EXPECT_TENSOR_EQ(dropout(x, 0.5, false), x);
  EXPECT_TENSOR_EQ(dropout(x, 1.0, true), zeros({33, 64}));
  EXPECT_EQ(get_rng_state().offset, before.offset);
  Tensor h = dropout(x.to(kBFloat16), 0.5, true);
  EXPECT_EQ(h.dtype(), kBFloat16);
  EXPECT_ERROR(dropout(x, 1.5, true), "between 0 and 1");
  EXPECT_ERROR(dropout(random({3}, kInt64), 0.5, true), "floating");
}

}  // namespace
}  // namespace sinter
