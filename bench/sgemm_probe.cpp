// sinter's own float32 GEMM (src/ops/sgemm.*) on the workloads' shapes: the planned configuration against
// OpenBLAS, side by side in one process, and with --sweep a search over the configurations sgemm_tiled accepts
// (micro-kernel, KC, loop order, then tile sizes and B sharing), which shows how far the plan is from the best.
// Times are the minimum over repeats (the VM's other tenants only ever add time). Build (after the library):
//   g++ -O2 -std=c++20 -I src bench/sgemm_probe.cpp -L build -lsinter -lopenblas -lfmt -Wl,-rpath,$PWD/build
// Usage: sgemm_probe [threads] [--sweep] [--only NAME]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops/sgemm.h"
#include "tensor/thread_pool.h"

extern "C" void openblas_set_num_threads(int);

using sinter::blas::SgemmConfig;

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class F>
static double best_ms(F f, int reps) {
  f();
  double best = 1e9;
  for (int i = 0; i < reps; ++i) {
    double t = now();
    f();
    best = std::min(best, (now() - t) * 1e3);
  }
  return best;
}

static std::string describe(const SgemmConfig& c) {
  std::vector<std::string> micro = sinter::blas::sgemm_micro_kernels();
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s kc=%lld mc=%lld strips=%lld shared=%d%s",
                c.micro < 0 ? "default" : micro[c.micro].c_str(), (long long)c.kc, (long long)c.mc,
                (long long)c.strips_per_tile, c.shared_b, c.a_outer > 0 ? " a_outer" : c.a_outer == 0 ? " b_outer" : "");
  return buf;
}

struct Shape {
  int m, n, k;
  bool bt;      // B stored [N, K] (a linear layer's weight)
  int threads;  // 0: the pool's
  const char* what;
};

struct Timed {
  SgemmConfig cfg;
  double ms;
};

int main(int argc, char** argv) {
  int threads = 16;
  bool sweep = false;
  const char* only = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--sweep")) sweep = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else threads = std::atoi(argv[i]);
  }
  const Shape shapes[] = {{256, 2304, 768, true, 0, "gpt_qkv"},     {256, 768, 768, true, 0, "gpt_proj"},
                          {256, 3072, 768, true, 0, "gpt_up"},      {256, 768, 3072, true, 0, "gpt_down"},
                          {512, 4096, 1024, true, 0, "mlp_up"},     {512, 1024, 4096, true, 0, "mlp_down"},
                          {2048, 4096, 1024, true, 0, "dmlp_up"},   {2048, 1024, 4096, true, 0, "dmlp_down"},
                          {25088, 64, 576, false, 0, "conv3x3"},    {2048, 2048, 2048, false, 0, "square"},
                          {64, 256, 64, true, 1, "attn_qk_1t"},     {64, 64, 256, false, 1, "attn_pv_1t"}};
  std::vector<std::string> micros = sinter::blas::sgemm_micro_kernels();
  std::printf("%d threads; sinter's micro-kernels:", threads);
  for (const std::string& m : micros) std::printf(" %s", m.c_str());
  std::printf("\n");
  for (const Shape& s : shapes) {
    if (only && std::strcmp(only, s.what)) continue;
    int t = s.threads > 0 ? s.threads : threads;
    sinter::set_num_threads(t);
    int m = s.m, n = s.n, k = s.k;
    std::vector<float> a(size_t(m) * k), b(size_t(k) * n), c1(size_t(m) * n), c2(size_t(m) * n);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1, 1);
    for (float& x : a) x = d(rng);
    for (float& x : b) x = d(rng);  // [K, N], or [N, K] when s.bt
    sinter::blas::TiledGemm g;
    g.m = m, g.n = n, g.k = k, g.a = a.data(), g.a_rs = k, g.a_cs = 1, g.c = c1.data(), g.c_rs = n;
    g.b = b.data(), g.b_rs = s.bt ? 1 : n, g.b_cs = s.bt ? k : 1;
    auto run = [&](const SgemmConfig& c, int reps) {
      return best_ms([&] { sinter::blas::sgemm_tiled(g, c); }, reps);
    };
    double planned = micros.empty() ? 0 : run({}, 9);  // before OpenBLAS, whose threads spin on after a call
    SgemmConfig in_place;
    in_place.direct = 1;
    double direct = micros.empty() ? 0 : run(in_place, 9);
    openblas_set_num_threads(t);
    double blas = best_ms([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, s.bt ? CblasTrans : CblasNoTrans, m, n, k, 1, a.data(), k, b.data(),
                  s.bt ? k : n, 0, c2.data(), n);
    }, 9);
    openblas_set_num_threads(1);
    double err = 0;
    for (size_t i = 0; i < c1.size(); ++i) err = std::max(err, double(std::abs(c1[i] - c2[i])));
    double gf = 2.0 * m * n * k / 1e6;
    std::printf("%-11s %5dx%5dx%5d%s %2dt  planned %8.4f ms %5.0f GF/s  openblas %8.4f ms %5.0f GF/s  "
                "openblas/planned %.2f  max|diff| %.1e  in place %8.4f ms\n   plan: %s\n",
                s.what, m, n, k, s.bt ? " B^T" : "    ", t, planned, gf / planned, blas, gf / blas, blas / planned, err,
                direct, sinter::blas::sgemm_plan(g, t).c_str());
    if (!sweep || micros.empty()) continue;
    // Stage 1: micro-kernel x KC x loop order, tiles as planned.
    std::vector<Timed> all;
    for (int u = 0; u < static_cast<int>(micros.size()); ++u)
      for (int64_t kc : {64, 128, 192, 256, 384, 512})
        for (bool ao : {false, true}) {
          SgemmConfig c;
          c.micro = u, c.kc = kc, c.a_outer = ao ? 1 : 0;
          all.push_back({c, run(c, 3)});
        }
    std::sort(all.begin(), all.end(), [](const Timed& x, const Timed& y) { return x.ms < y.ms; });
    std::printf("   stage 1 best:");
    for (int i = 0; i < 5; ++i) std::printf(" [%s %.3f]", describe(all[i].cfg).c_str(), all[i].ms);
    std::printf("\n");
    // Stage 2: a grid of tile sizes and B sharing under the planned micro-kernel, KC and loop order, every
    // time printed ("grid" lines: the data to fit the plan's cost model to).
    std::vector<Timed> tiles;
    SgemmConfig base;
    std::string plan = sinter::blas::sgemm_plan(g, t);
    base.micro = static_cast<int>(std::find(micros.begin(), micros.end(), plan.substr(0, plan.find(' '))) - micros.begin());
    int mr = std::atoi(micros[base.micro].c_str());
    int nr = std::atoi(std::strchr(micros[base.micro].c_str(), 'x') + 1);
    int64_t strips = (n + nr - 1) / nr, panels = (m + mr - 1) / mr;
    for (int64_t pm : {1, 2, 3, 4, 6, 8, 11, 16, 22, 32, 43, 64}) {
      if (pm > panels && pm != 1) continue;
      for (int64_t sp : {1, 2, 3, 4, 6, 8, 12, 16, 24, 48}) {
        if (sp > strips && sp != 1) continue;
        if (pm * mr * sp * nr > 1 << 20) continue;  // a tile of over 4 MB
        for (int sh : {0, 1}) {
          SgemmConfig c = base;
          c.mc = pm * mr, c.strips_per_tile = sp, c.shared_b = sh;
          tiles.push_back({c, run(c, 3)});
          std::printf("   grid %s %lld %lld %d %.4f\n", s.what, (long long)c.mc, (long long)sp, sh, tiles.back().ms);
        }
      }
    }
    std::sort(tiles.begin(), tiles.end(), [](const Timed& x, const Timed& y) { return x.ms < y.ms; });
    // Stage 3: the leaders and the plan, measured again in interleaved rounds.
    std::vector<Timed> final;
    final.push_back({SgemmConfig{}, 1e9});
    for (size_t i = 0; i < 4 && i < all.size(); ++i) final.push_back({all[i].cfg, 1e9});
    for (size_t i = 0; i < 6 && i < tiles.size(); ++i) final.push_back({tiles[i].cfg, 1e9});
    for (int round = 0; round < 8; ++round)
      for (Timed& f : final) f.ms = std::min(f.ms, run(f.cfg, 1));
    double plan_ms = final[0].ms;
    std::sort(final.begin(), final.end(), [](const Timed& x, const Timed& y) { return x.ms < y.ms; });
    std::printf("   planned (re-measured) %.4f ms; best %.4f ms (%.2fx, %.0f GF/s): %s\n", plan_ms, final[0].ms,
                plan_ms / final[0].ms, gf / final[0].ms, describe(final[0].cfg).c_str());
    for (size_t i = 1; i < 5 && i < final.size(); ++i)
      std::printf("      %.4f ms %s\n", final[i].ms, describe(final[i].cfg).c_str());
    std::fflush(stdout);
  }
}
