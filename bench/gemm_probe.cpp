// Which way of calling OpenBLAS is fastest on this machine for the workloads' GEMM shapes: OpenBLAS's own
// threading on one call, or sinter's way (single-threaded OpenBLAS per 2-D tile, tiles spread over threads).
// Build: g++ -O2 -std=c++20 bench/gemm_probe.cpp -lopenblas -lpthread -o gemm_probe (cblas.h from OpenBLAS).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

extern "C" void openblas_set_num_threads(int);

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class F>
static double best_ms(F f) {
  f();
  double best = 1e9;
  for (int i = 0; i < 7; ++i) {
    double t = now();
    f();
    best = std::min(best, (now() - t) * 1e3);
  }
  return best;
}

int main() {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  struct Shape { int m, n, k; };
  for (Shape s : {Shape{512, 4096, 1024}, Shape{512, 1024, 4096}, Shape{256, 2304, 768}, Shape{2048, 4096, 1024}}) {
    std::vector<float> a(size_t(s.m) * s.k, 0.5f), b(size_t(s.k) * s.n, 0.25f), c(size_t(s.m) * s.n);
    double flop = 2.0 * s.m * s.n * s.k;
    for (int t : {1, threads}) {
      openblas_set_num_threads(t);
      double ms = best_ms([&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1, a.data(), s.k, b.data(), s.n, 0,
                    c.data(), s.n);
      });
      std::printf("%dx%dx%d openblas %2d threads: %.3f ms  %.2f TFLOP/s\n", s.m, s.n, s.k, t, ms, flop / ms / 1e9);
    }
    openblas_set_num_threads(1);
    for (int mb : {64, 128, 256}) {
      for (int nb : {256, 512, 1024}) {
        int tm = (s.m + mb - 1) / mb, tn = (s.n + nb - 1) / nb;
        double ms = best_ms([&] {
          std::vector<std::thread> pool;
          for (int w = 0; w < threads; ++w)
            pool.emplace_back([&, w] {
              for (int t = w; t < tm * tn; t += threads) {
                int i = (t / tn) * mb, j = (t % tn) * nb;
                int mm = std::min(mb, s.m - i), nn = std::min(nb, s.n - j);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mm, nn, s.k, 1, a.data() + size_t(i) * s.k,
                            s.k, b.data() + j, s.n, 0, c.data() + size_t(i) * s.n + j, s.n);
              }
            });
          for (auto& p : pool) p.join();
        });
        std::printf("%dx%dx%d tiles %dx%d (%d tiles): %.3f ms  %.2f TFLOP/s\n", s.m, s.n, s.k, mb, nb, tm * tn, ms,
                    flop / ms / 1e9);
      }
    }
  }
}
