// Tests of the blocked scaled_dot_product_attention kernel against a float64 reference, on shapes that split
// into many row blocks over several threads: causal with L < S, L > S and L == S (causal blocks compute only
// the keys they can see), masks, dropout under is_causal (the Philox counters of skipped keys), strided
// q/k/v views (heads split out of one projection), and odd sizes.
#include <cmath>

#include "tensor/generator.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using V = std::vector<double>;
using I = std::vector<int64_t>;

// Sets the pool size for one test and restores it.
struct Threads {
  int before = get_num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(before); }
};

struct Ref {
  bool causal = false;
  const Tensor* mask = nullptr;  // [L, S] (bool: true = attend; float: added)
  double dropout = 0;
  uint64_t seed = 0, first = 0;
};

// q [B, L, E], k [B, S, E], v [B, S, Ev]; fully masked rows give zeros.
Tensor reference(const Tensor& q, const Tensor& k, const Tensor& v, const Ref& r) {
  I qs = q.sizes().hints(), ks = k.sizes().hints(), vs = v.sizes().hints();
  int64_t B = qs[0], L = qs[1], E = qs[2], S = ks[1], Ev = vs[2];
  V qv = q.contiguous().to_vector<double>(), kv = k.contiguous().to_vector<double>(),
    vv = v.contiguous().to_vector<double>(), mv = r.mask ? r.mask->to_vector<double>() : V(), out;
  bool bool_mask = r.mask && r.mask->dtype() == kBool;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      V s(S);
      double mx = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        double d = 0;
        for (int64_t e = 0; e < E; ++e) d += qv[(b * L + i) * E + e] * kv[(b * S + j) * E + e];
        s[j] = d / std::sqrt(static_cast<double>(E));
        if (r.causal && j > i) s[j] = -INFINITY;
        if (r.mask) s[j] = bool_mask ? (mv[i * S + j] != 0 ? s[j] : -INFINITY) : s[j] + mv[i * S + j];
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += (s[j] = mx == -INFINITY ? 0 : std::exp(s[j] - mx));
      for (int64_t j = 0; j < S; ++j) {
        s[j] = mx == -INFINITY ? 0 : s[j] / sum;
        if (r.dropout > 0) {
          bool keep = philox_uniform(r.seed, r.first + static_cast<uint64_t>((b * L + i) * S + j)) >= r.dropout;
          s[j] = keep ? s[j] / (1 - r.dropout) : 0;
        }
      }
      for (int64_t e = 0; e < Ev; ++e) {
        double o = 0;
        for (int64_t j = 0; j < S; ++j) o += s[j] * vv[(b * S + j) * Ev + e];
        out.push_back(o);
      }
    }
  return from_vector<double>(out, SymIntList(I{B, L, Ev}), kFloat64);
}

TEST(AttentionBlocks, CausalWithAnyLengthsMatchesReference) {
  for (int threads : {1, 3, 16}) {
    Threads t(threads);
    // L == S, L < S (each row sees li + 1 keys), L > S (later rows see every key); odd sizes.
    for (I ls : {I{97, 97}, I{37, 130}, I{150, 41}, I{1, 9}, I{64, 64}}) {
      for (DType dt : {kFloat32, kFloat64}) {
        int64_t L = ls[0], S = ls[1];
        Tensor q = random({3, L, 20}, dt, 1), k = random({3, S, 20}, dt, 2), v = random({3, S, 11}, dt, 3);
        Ref r;
        r.causal = true;
        Tensor out = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true);
        EXPECT_CLOSE(out, reference(q, k, v, r)) << "threads " << threads << " L " << L << " S " << S;
      }
    }
  }
}

TEST(AttentionBlocks, MasksOverManyBlocksMatchReference) {
  Threads t(5);
  int64_t L = 70, S = 90;
  Tensor q = random({4, L, 16}, kFloat32, 4), k = random({4, S, 16}, kFloat32, 5),
         v = random({4, S, 8}, kFloat32, 6);
  // A bool mask with one row that sees nothing (zeros out), and a float mask.
  V m = random({L, S}, kBool, 7).to_vector<double>();
  for (int64_t j = 0; j < S; ++j) m[5 * S + j] = 0;
  Tensor bm = from_vector<double>(m, SymIntList(I{L, S}), kBool);
  Ref rb;
  rb.mask = &bm;
  EXPECT_CLOSE(scaled_dot_product_attention(q, k, v, bm), reference(q, k, v, rb));
  Tensor fm = random({L, S}, kFloat32, 8);
  Ref rf;
  rf.mask = &fm;
  EXPECT_CLOSE(scaled_dot_product_attention(q, k, v, fm), reference(q, k, v, rf));
}

TEST(AttentionBlocks, CausalDropoutUsesTheSameCountersAsTheFullSquare) {
  Threads t(4);
  int64_t L = 45, S = 60;
  Tensor q = random({2, L, 8}, kFloat64, 9), k = random({2, S, 8}, kFloat64, 10),
         v = random({2, S, 5}, kFloat64, 11);
  manual_seed(77);
  GeneratorState before = get_rng_state();
  Tensor d = scaled_dot_product_attention(q, k, v, Tensor(), 0.3, true);
  EXPECT_EQ(get_rng_state().offset, before.offset + 2 * L * S);  // reserved for the full square
  Ref r;
  r.causal = true, r.dropout = 0.3, r.seed = before.seed, r.first = before.offset;
  EXPECT_CLOSE(d, reference(q, k, v, r));
}

TEST(AttentionBlocks, HeadsSplitOutOfOneProjection) {
  // As in a transformer block: q, k, v are strided views [B, H, S, D] of one [B, S, 3 * H * D] buffer.
  Threads t(16);
  int64_t B = 2, S = 67, H = 3, D = 16;
  Tensor qkv = random({B, S, 3 * H * D}, kFloat32, 12);
  std::vector<Tensor> parts = qkv.split(H * D, -1);
  auto heads = [&](const Tensor& x) { return x.view({B, S, H, D}).transpose(1, 2); };
  Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
  Tensor out = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true);
  auto flat = [&](const Tensor& x) { return x.contiguous().reshape({B * H, S, D}); };
  Ref r;
  r.causal = true;
  EXPECT_CLOSE(out.reshape({B * H, S, D}), reference(flat(q), flat(k), flat(v), r));
}

TEST(AttentionBlocks, GroupedQueryAttention) {
  // enable_gqa: 6 query heads over 2 key/value heads; query head h reads key/value head h / 3 (as PyTorch).
  int64_t B = 2, Hq = 6, Hk = 2, L = 9, S = 13, D = 8;
  Tensor q = random({B, Hq, L, D}, kFloat32, 20), k = random({B, Hk, S, D}, kFloat32, 21),
         v = random({B, Hk, S, D}, kFloat32, 22);
  Tensor out = scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true, std::nullopt, true);
  ASSERT_EQ(out.sizes().hints(), (I{B, Hq, L, D}));
  Ref r;
  r.causal = true;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      auto pick = [&](const Tensor& x, int64_t head) { return x.select(0, b).select(0, head).unsqueeze(0); };
      EXPECT_CLOSE(out.select(0, b).select(0, h).unsqueeze(0),
                   reference(pick(q, h), pick(k, h / 3), pick(v, h / 3), r))
          << "b " << b << " h " << h;
    }
  // Heads that do not divide, and key and value with different head counts, are errors.
  EXPECT_THROW(scaled_dot_product_attention(q, random({B, 4, S, D}), random({B, 4, S, D}), Tensor(), 0.0, false,
                                            std::nullopt, true),
               Error);
  EXPECT_THROW(scaled_dot_product_attention(q, k, random({B, 3, S, D}), Tensor(), 0.0, false, std::nullopt, true),
               Error);
  // Without enable_gqa the heads must broadcast, as before.
  EXPECT_THROW(scaled_dot_product_attention(q, k, v), Error);
}

}  // namespace
}  // namespace sinter
