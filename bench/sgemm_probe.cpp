// sinter's own float32 GEMM (src/ops/sgemm.*) against OpenBLAS on the workloads' shapes, side by side in one
// process: OpenBLAS on its own threads, and sinter's tiles over sinter's pool, with B stored [K, N] and [N, K]
// (a linear layer's weight). Build (after the library):
//   g++ -O2 -std=c++20 -I src bench/sgemm_probe.cpp -L build -lsinter -lopenblas -lfmt -Wl,-rpath,$PWD/build
// Variants of the tiling constants: add src/ops/sgemm.cpp -DSINTER_SGEMM_KC=384 (its copy replaces the library's).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ops/sgemm.h"
#include "tensor/thread_pool.h"

extern "C" void openblas_set_num_threads(int);

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class F>
static double best_ms(F f) {
  f();
  double best = 1e9;
  for (int i = 0; i < 9; ++i) {
    double t = now();
    f();
    best = std::min(best, (now() - t) * 1e3);
  }
  return best;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 16;
  sinter::set_num_threads(threads);
  struct Shape { int m, n, k; const char* what; };
  const Shape shapes[] = {{256, 2304, 768, "gpt qkv"},   {256, 768, 768, "gpt proj"},
                          {256, 3072, 768, "gpt up"},    {256, 768, 3072, "gpt down"},
                          {512, 4096, 1024, "mlp up"},   {512, 1024, 4096, "mlp down"},
                          {25088, 64, 576, "conv 3x3"}, {2048, 2048, 2048, "square"}};
  std::printf("%d threads; sinter's micro-kernel: %s\n", threads, sinter::blas::sgemm_available() ? "yes" : "no");
  for (const Shape& s : shapes) {
    int m = s.m, n = s.n, k = s.k;
    std::vector<float> a(size_t(m) * k), b(size_t(k) * n), bt(size_t(n) * k), c1(size_t(m) * n), c2(size_t(m) * n);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1, 1);
    for (float& x : a) x = d(rng);
    for (float& x : b) x = d(rng);
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) bt[size_t(j) * k + p] = b[size_t(p) * n + j];
    sinter::blas::TiledGemm g;
    g.m = m, g.n = n, g.k = k, g.a = a.data(), g.a_rs = k, g.a_cs = 1, g.c = c1.data(), g.c_rs = n;
    g.b = b.data(), g.b_rs = n, g.b_cs = 1;
    double ours = sinter::blas::sgemm_available() ? best_ms([&] { sinter::blas::sgemm_tiled(g); }) : 0;
    g.b = bt.data(), g.b_rs = 1, g.b_cs = k;
    double ours_t = sinter::blas::sgemm_available() ? best_ms([&] { sinter::blas::sgemm_tiled(g); }) : 0;
    openblas_set_num_threads(threads);
    double blas = best_ms([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a.data(), k, b.data(), n, 0, c2.data(), n);
    });
    double blas_t = best_ms([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1, a.data(), k, bt.data(), k, 0, c2.data(), n);
    });
    openblas_set_num_threads(1);
    double err = 0;
    for (size_t i = 0; i < c1.size(); ++i) err = std::max(err, double(std::abs(c1[i] - c2[i])));
    double gf = 2.0 * m * n * k / 1e6;
    g.b = b.data(), g.b_rs = n, g.b_cs = 1;
    std::printf("          %s\n", sinter::blas::sgemm_plan(g, threads).c_str());
    std::printf("%-9s %5dx%5dx%5d  sinter %7.3f ms %6.0f GF/s (B^T %7.3f ms %6.0f)  openblas %7.3f ms %6.0f GF/s (B^T %7.3f ms)"
                "  sinter/openblas %.2f  max|diff| %.1e\n",
                s.what, m, n, k, ours, gf / ours, ours_t, gf / ours_t, blas, gf / blas, blas_t,
                ours > 0 ? blas / ours : 0.0, err);
  }
}
