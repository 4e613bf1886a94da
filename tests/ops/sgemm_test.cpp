// sinter's own float32 GEMM (src/ops/sgemm.*): every shape edge of the micro-tiles, any operand strides, the
// tile callback seeing each element of C exactly once (whole rows when asked), against a float64 reference.
#include "ops/sgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <random>
#include <vector>

#include "ops/loops.h"
#include "sinter/sinter.h"
#include "tensor/thread_pool.h"

namespace sinter {
namespace {

struct Seen {
  std::mutex mutex;
  std::vector<int> count;  // per element of C
  int64_t n = 0;
  bool whole_rows = false;
  bool rows_ok = true;
};

// bf16: a bfloat16 product, checked against float64 over the operands rounded to bfloat16 (and required to differ
// from the float32 product's reference). packed: B packed ahead, for products of 64 rows whatever m is.
void check_product(int64_t m, int64_t n, int64_t k, bool a_t, bool b_t, bool whole_rows,
                   const blas::SgemmConfig& cfg = {}, bool bf16 = false, bool packed = false) {
  std::mt19937 rng(static_cast<uint32_t>(m * 131 + n * 7 + k));
  std::normal_distribution<float> dist;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  blas::TiledGemm g;
  g.m = m, g.n = n, g.k = k;
  g.a = a.data(), g.a_rs = a_t ? 1 : k, g.a_cs = a_t ? m : 1;  // a_t: A stored as [k, m]
  g.b = b.data(), g.b_rs = b_t ? 1 : n, g.b_cs = b_t ? k : 1;  // b_t: B stored as [n, k]
  int64_t ldc = n + 3;                                          // C rows padded: c_rs is honoured
  std::vector<float> c(static_cast<size_t>(std::max<int64_t>(m, 1) * ldc), NAN);
  g.c = c.data(), g.c_rs = ldc;
  Seen seen;
  seen.count.assign(static_cast<size_t>(m * n), 0);
  seen.n = n, seen.whole_rows = whole_rows;
  g.whole_rows = whole_rows;
  g.ctx = &seen;
  g.tile_done = [](void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    auto* s = static_cast<Seen*>(ctx);
    std::lock_guard<std::mutex> lock(s->mutex);
    if (s->whole_rows && (j0 != 0 || j1 != s->n)) s->rows_ok = false;
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = j0; j < j1; ++j) ++s->count[static_cast<size_t>(i * s->n + j)];
  };
  g.bf16 = bf16;
  std::shared_ptr<const blas::PackedB> ahead;
  if (packed) {
    blas::TiledGemm for_pack = g;
    for_pack.m = 64;
    ahead = blas::sgemm_pack_b(for_pack);
    g.packed_b = ahead.get();
  }
  blas::sgemm_tiled(g, cfg);
  auto round = [bf16](float v) { return bf16 ? loops::bf16_to_f32(loops::f32_to_bf16(v)) : v; };
  double worst = 0, worst_unrounded = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0, scale = 0, unrounded = 0;
      for (int64_t p = 0; p < k; ++p) {
        float x = a[static_cast<size_t>(a_t ? p * m + i : i * k + p)];
        float y = b[static_cast<size_t>(b_t ? j * k + p : p * n + j)];
        ref += static_cast<double>(round(x)) * round(y);
        unrounded += static_cast<double>(x) * y;
        scale += std::abs(static_cast<double>(x) * y);
      }
      double out = c[static_cast<size_t>(i * ldc + j)];
      double err = std::abs(out - ref) / std::max(scale, 1e-30);
      worst = std::max(worst, std::isnan(err) ? 1.0 : err);
      worst_unrounded = std::max(worst_unrounded, std::abs(out - unrounded) / std::max(scale, 1e-30));
    }
  EXPECT_LT(worst, 1e-5) << m << "x" << n << "x" << k << " a_t " << a_t << " b_t " << b_t << " plan "
                         << blas::sgemm_plan(g, get_num_threads(), cfg);
  if (bf16 && m * n * k >= 64)
    EXPECT_GT(worst_unrounded, 1e-5) << "a bfloat16 product came out as the float32 one: " << m << "x" << n << "x" << k;
  for (int x : seen.count) ASSERT_EQ(x, 1) << "a tile callback missed or repeated an element of C";
  EXPECT_TRUE(seen.rows_ok) << "whole_rows asked, a tile did not span every column";
}

TEST(Sgemm, MatchesFloat64OnEveryEdge) {
  if (!blas::sgemm_available()) GTEST_SKIP() << "no AVX2/AVX-512 micro-kernel on this CPU";
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    for (int64_t m : {1, 5, 6, 7, 13, 64, 131})
      for (int64_t n : {1, 15, 16, 17, 64, 65, 200})
        for (int64_t k : {1, 7, 256, 300}) check_product(m, n, k, false, false, (m + n) % 2 == 0);
    // Tall and at most 16 wide: the one-register-wide micro-kernel where the CPU has it.
    for (int64_t n : {9, 16}) check_product(300, n, 70, false, n == 9, false);
    for (bool a_t : {false, true})
      for (bool b_t : {false, true}) check_product(70, 130, 270, a_t, b_t, a_t);
  }
  set_num_threads(0);
}

// Every micro-kernel, depth, loop order, forced tiling and in-place reading a tuning run may pick computes the
// same product.
TEST(Sgemm, EveryConfigurationMatches) {
  if (!blas::sgemm_available()) GTEST_SKIP() << "no AVX2/AVX-512 micro-kernel on this CPU";
  set_num_threads(3);
  int micros = static_cast<int>(blas::sgemm_micro_kernels().size());
  for (int u = 0; u < micros; ++u)
    for (int64_t kc : {64, 200})
      for (bool a_outer : {false, true})
        for (int shared : {0, 1}) {
          blas::SgemmConfig cfg;
          cfg.micro = u, cfg.kc = kc, cfg.a_outer = a_outer ? 1 : 0, cfg.shared_b = shared;
          cfg.direct = (u + kc + shared) % 2;  // operands packed, or read in place where they can be
          cfg.mc = 20, cfg.strips_per_tile = 2;
          check_product(45, 150, 290, false, shared == 1, false, cfg);
          check_product(15, 17, 64, true, false, a_outer, cfg);
        }
  set_num_threads(0);
}

// A weight packed once (for products of 64 rows) serves products of any row count, alone or with B shared.
TEST(Sgemm, PackedAheadMatches) {
  if (!blas::sgemm_available()) GTEST_SKIP() << "no AVX2/AVX-512 micro-kernel on this CPU";
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    for (int64_t m : {1, 7, 64, 131})
      for (int64_t n : {15, 17, 65, 200})
        for (int64_t k : {1, 7, 300, 1100}) check_product(m, n, k, false, (m + k) % 2 == 1, m == 7, {}, false, true);
  }
  set_num_threads(0);
}

// bfloat16 products (AVX512-BF16): operands rounded to nearest even, products summed in float32; with B packed
// per tile, shared, or ahead, and with A rounded once for all column tiles.
TEST(Sgemm, BFloat16ProductsRoundOperandsAndSumInFloat32) {
  if (!blas::sgemm_bf16_available()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    for (int64_t m : {1, 5, 13, 64, 131})
      for (int64_t n : {15, 17, 65, 200})
        for (int64_t k : {1, 7, 256, 301})
          check_product(m, n, k, (m + n) % 3 == 0, (n + k) % 2 == 1, m == 13, {}, true, (m + k) % 2 == 0);
    for (int shared : {0, 1}) {
      blas::SgemmConfig cfg;
      cfg.shared_b = shared, cfg.mc = 20, cfg.strips_per_tile = 2, cfg.kc = 63;  // odd depth: a half-empty pair
      check_product(45, 150, 290, false, shared == 1, false, cfg, true);
    }
  }
  set_num_threads(0);
}

TEST(Sgemm, EmptyDepthWritesZerosAndStillCallsBack) {
  if (!blas::sgemm_available()) GTEST_SKIP() << "no AVX2/AVX-512 micro-kernel on this CPU";
  check_product(9, 20, 0, false, false, false);
  check_product(0, 20, 5, false, false, false);  // nothing to compute, no callback
}

TEST(Sgemm, RunsInsideAParallelRegion) {
  if (!blas::sgemm_available()) GTEST_SKIP() << "no AVX2/AVX-512 micro-kernel on this CPU";
  set_num_threads(2);
  parallel_for(0, 2, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) check_product(40 + i, 70, 33, false, i == 1, false);
  });
  set_num_threads(0);
}

}  // namespace
}  // namespace sinter
