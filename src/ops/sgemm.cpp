#include "ops/sgemm.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sinter/ops.h"
#include "support/check.h"
#include "ops/sgemm_micro.h"
#include "tensor/thread_pool.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SINTER_SGEMM_X86 1
#endif

namespace sinter::blas {
namespace {

// Weights of the tile cost model (plan() below). The macros let bench/sgemm_probe.cpp compile variants side by
// side; the library uses the defaults. The block depth KC is chosen by pick_kc(), or per call (SgemmConfig).
#ifndef SINTER_SGEMM_PASS_FLOPS
#define SINTER_SGEMM_PASS_FLOPS 5e6
#endif
#ifndef SINTER_SGEMM_PACK_FLOPS
#define SINTER_SGEMM_PACK_FLOPS 2
#endif
#ifndef SINTER_SGEMM_READ_FLOPS
#define SINTER_SGEMM_READ_FLOPS 0.25
#endif
#ifndef SINTER_SGEMM_STRAGGLE
#define SINTER_SGEMM_STRAGGLE 0.5
#endif
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// q rounded up to a 64-byte boundary (buffers carry 16 floats of slack for it).
float* align64(float* q) { return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(q) + 63) & ~uintptr_t{63}); }


bool has_avx2() {
#ifdef SINTER_SGEMM_X86
  static const bool yes = __builtin_cpu_supports("avx2");  // a property of the CPU
  return yes;
#else
  return false;
#endif
}

// dst[q * ld_dst + r] = src[r * ld_src + q] for r, q < 8.
#ifdef SINTER_SGEMM_X86
__attribute__((target("avx2"))) void transpose8x8(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ld_src);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ld_dst, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ld_dst, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#else
void transpose8x8(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
  for (int r = 0; r < 8; ++r)
    for (int q = 0; q < 8; ++q) dst[q * ld_dst + r] = src[r * ld_src + q];
}
#endif

// Packs rows [k0, k0 + kc) x columns [j0, j0 + nr) of B into kc runs of nr values (zero past column n).
void pack_b(const TiledGemm& g, int64_t k0, int64_t kc, int64_t j0, int nr, float* out) {
  int64_t cols = std::min<int64_t>(nr, g.n - j0);
  if (g.b_cs == 1) {
    for (int64_t p = 0; p < kc; ++p) {
      const float* src = g.b + (k0 + p) * g.b_rs + j0;
      float* dst = out + p * nr;
      std::memcpy(dst, src, static_cast<size_t>(cols) * sizeof(float));
      for (int64_t j = cols; j < nr; ++j) dst[j] = 0.0f;
    }
    return;
  }
  // Column-strided B (a linear layer's weight read transposed): 8 x 8 blocks transposed in registers.
  if (g.b_rs == 1 && cols == nr && nr % 8 == 0 && has_avx2()) {
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8)
      for (int64_t j = 0; j < nr; j += 8)
        transpose8x8(g.b + (k0 + p) + (j0 + j) * g.b_cs, g.b_cs, out + p * nr + j, nr);
    for (; p < kc; ++p)
      for (int64_t j = 0; j < nr; ++j) out[p * nr + j] = g.b[(k0 + p) + (j0 + j) * g.b_cs];
    return;
  }
  // Otherwise 16 k steps at a time, so the reads run along each column and the writes stay within a few cache
  // lines per step.
  for (int64_t p0 = 0; p0 < kc; p0 += 16) {
    int64_t p1 = std::min(kc, p0 + 16);
    for (int64_t j = 0; j < nr; ++j) {
      if (j >= cols) {
        for (int64_t p = p0; p < p1; ++p) out[p * nr + j] = 0.0f;
        continue;
      }
      const float* src = g.b + k0 * g.b_rs + (j0 + j) * g.b_cs;
      for (int64_t p = p0; p < p1; ++p) out[p * nr + j] = src[p * g.b_rs];
    }
  }
}

// The k steps a packed block of kc steps stores (bfloat16 pairs: rounded up to even), and the floats that
// `values` packed operand values take (two bfloat16 to a float's space).
int64_t packed_steps(bool bf16, int64_t kc) { return bf16 ? (kc + 1) / 2 * 2 : kc; }
int64_t packed_floats(bool bf16, int64_t values) { return bf16 ? values / 2 : values; }

// pack_b, rounded to bfloat16 pairs through `tmp` (kc x nr floats) for a bfloat16 product.
void pack_b_panel(const TiledGemm& g, int64_t k0, int64_t kc, int64_t j0, int nr, float* out, float* tmp) {
  if (!g.bf16) return pack_b(g, k0, kc, j0, nr, out);
  pack_b(g, k0, kc, j0, nr, tmp);
  to_bf16_pairs(tmp, kc, nr, out);
}

// Panel t of all of B packed in blocks of kc_max k steps and strips of nr columns (block t / strips, strip
// t % strips), at its place in `out`: block kb at kb * steps(kc_max) * np, its strip s at s * steps(kc) * nr.
void pack_b_whole(const TiledGemm& g, int64_t t, int64_t kc_max, int nr, float* out, float* tmp) {
  const int64_t strips = ceil_div(g.n, nr), kb = t / strips, s = t % strips;
  const int64_t k0 = kb * kc_max, kc = std::min(kc_max, g.k - k0);
  const int64_t at = kb * packed_steps(g.bf16, kc_max) * strips * nr + s * packed_steps(g.bf16, kc) * nr;
  pack_b_panel(g, k0, kc, s * nr, nr, out + packed_floats(g.bf16, at), tmp);
}

// MR row streams read in step and written in order (the row count known to the compiler).
template <int MR>
void pack_rows_fixed(const float* const* rows, int64_t kc, float* __restrict out) {
  const float* row[MR];
  for (int i = 0; i < MR; ++i) row[i] = rows[i];
  for (int64_t p = 0; p < kc; ++p, out += MR)
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) out[i] = row[i][p];
}

// c[rows x cols] (row stride c_rs) = (accumulate ? c : 0) + t (row stride t_rs): a partial micro-tile's part of
// C, vectorised for the CPU (the library itself is built for baseline x86-64).
__attribute__((target_clones("avx512f", "avx2", "default"))) void copy_tile(const float* t, int64_t t_rs,
                                                                             int64_t rows, int64_t cols, float* c,
                                                                             int64_t c_rs, bool accumulate) {
  for (int64_t x = 0; x < rows; ++x) {
    const float* __restrict src = t + x * t_rs;
    float* __restrict dst = c + x * c_rs;
    if (accumulate)
      for (int64_t y = 0; y < cols; ++y) dst[y] += src[y];
    else
      for (int64_t y = 0; y < cols; ++y) dst[y] = src[y];
  }
}

// pack_rows_fixed for the micro-kernels' row counts; false for another count.
bool pack_rows_known(const float* const* rows, int mr, int64_t kc, float* out) {
  switch (mr) {
    case 6: pack_rows_fixed<6>(rows, kc, out); return true;
    case 8: pack_rows_fixed<8>(rows, kc, out); return true;
    case 14: pack_rows_fixed<14>(rows, kc, out); return true;
    case 28: pack_rows_fixed<28>(rows, kc, out); return true;
    default: return false;
  }
}

// Packs rows [i0, i0 + mr) x columns [k0, k0 + kc) of A into kc runs of mr values (zero past row m).
void pack_a(const TiledGemm& g, int64_t i0, int mr, int64_t k0, int64_t kc, float* out) {
  int64_t rows = std::min<int64_t>(mr, g.m - i0);
  if (g.pack_a) {
    g.pack_a(g.pack_ctx, i0, static_cast<int>(rows), mr, k0, kc, out);
    return;
  }
  if (g.alpha != 1.0f) {
    for (int64_t p = 0; p < kc; ++p) {
      const float* src = g.a + i0 * g.a_rs + (k0 + p) * g.a_cs;
      float* dst = out + p * mr;
      for (int64_t i = 0; i < rows; ++i) dst[i] = g.alpha * src[i * g.a_rs];
      for (int64_t i = rows; i < mr; ++i) dst[i] = 0.0f;
    }
    return;
  }
  if (g.a_cs == 1 && rows == mr && mr <= kMaxMicroRows) {
    const float* r[kMaxMicroRows];
    for (int i = 0; i < mr; ++i) r[i] = g.a + (i0 + i) * g.a_rs + k0;
    if (pack_rows_known(r, mr, kc, out)) return;
  }
  for (int64_t p = 0; p < kc; ++p) {
    const float* src = g.a + i0 * g.a_rs + (k0 + p) * g.a_cs;
    float* dst = out + p * mr;
    for (int64_t i = 0; i < rows; ++i) dst[i] = src[i * g.a_rs];
    for (int64_t i = rows; i < mr; ++i) dst[i] = 0.0f;
  }
}

// pack_a, rounded to bfloat16 pairs through `tmp` (kc x mr floats) for a bfloat16 product.
void pack_a_panel(const TiledGemm& g, int64_t i0, int mr, int64_t k0, int64_t kc, float* out, float* tmp) {
  if (!g.bf16) return pack_a(g, i0, mr, k0, kc, out);
  pack_a(g, i0, mr, k0, kc, tmp);
  to_bf16_pairs(tmp, kc, mr, out);
}

struct Plan {
  int64_t kc = 0, kblocks = 0, strips = 0, row_tiles = 1, strip_tiles = 1;
  int64_t mc = 0, strips_per_tile = 0;  // a tile's rows, and its width in strips of nr columns
  bool shared_b = false;                // B packed once for every task (else each task packs its columns)
  bool a_outer = false;                 // inside a tile: A panels in the outer loop, B strips in the inner
  bool direct_a = false, direct_b = false;  // whole panels / strips read in place, not packed
  int64_t tasks() const { return row_tiles * strip_tiles; }
};

// No task ever waits for another (the pool may run them in any order, or all on one thread). Each packs its own
// rows of A; B is either packed once up front and shared (one more pass over the pool, memory for all of B) or
// packed by each task for its columns (again for every row tile). The plan weighs, in flop-equivalents on the
// busiest thread: the tiles' balance over the threads; packing traffic (A once per column tile); reading the
// shared B once per row tile; a fixed cost per pass and per task; a tile's B block (KC x its columns) outgrowing
// the part of L2 it may hold while A panels stream past it; and thin tiles, whose micro-kernel calls reuse each
// packed panel fewer times. Balance is counted over cores, not hardware threads: two hyperthreads of one core
// share its FMA units. The weights were fitted to a sweep of tile sizes on the 16-core Xeon host
// (bench/sgemm_probe.cpp --sweep, run_h200.sh part 6): within about 5% of the best tiling found per shape.
constexpr int64_t kMaxTileRows = 384, kMaxTileStrips = 16;
constexpr double kFlopsPerPackedByte = SINTER_SGEMM_PACK_FLOPS, kFlopsPerReadByte = SINTER_SGEMM_READ_FLOPS;
constexpr double kFlopsPerPass = SINTER_SGEMM_PASS_FLOPS;
constexpr double kFlopsPerTask = 2e4;
// Threads finish unevenly (a VM's other tenants, hyperthread siblings): the last task handed out ends about
// this fraction of a task after the others, so smaller tasks (more of them) balance better.
constexpr double kStraggle = SINTER_SGEMM_STRAGGLE;
constexpr double kL2BlockBytes = 384 << 10, kL2Penalty = 2;  // work added per multiple of the budget exceeded
constexpr double kSharedPenalty = 0.03;                        // shared B is read from other cores' caches
constexpr double kThinPenalty = 0.5;                           // work added per (mr / rows + nr / columns)

Plan plan(const TiledGemm& g, const Micro& u, int threads, int64_t kc) {
  Plan best;
  best.kc = kc;
  best.kblocks = ceil_div(g.k, kc);
  best.strips = ceil_div(g.n, u.nr);
  int64_t row_panels = ceil_div(g.m, u.mr);
  double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  double a_bytes = 4.0 * static_cast<double>(g.m) * static_cast<double>(g.k);
  double b_bytes = 4.0 * static_cast<double>(g.k) * static_cast<double>(g.n);
  double best_cost = -1, th = cores_for(threads);
  int64_t min_rt = ceil_div(row_panels * u.mr, kMaxTileRows);
  int64_t min_st = ceil_div(best.strips, kMaxTileStrips);
  for (int64_t st = min_st; st <= best.strips; ++st) {
    int64_t per = ceil_div(best.strips, st);
    if (st > min_st && ceil_div(best.strips, per) != st) continue;  // same tiles as a smaller st
    double cols = static_cast<double>(std::min(g.n, per * u.nr));
    double block = 4.0 * static_cast<double>(kc) * static_cast<double>(per * u.nr);
    for (int64_t rt = min_rt; rt <= row_panels; ++rt) {
      int64_t mc = ceil_div(row_panels, rt) * u.mr;
      if (rt > min_rt && ceil_div(g.m, mc) != rt) continue;
      double tasks = static_cast<double>(rt * st), rounds = std::ceil(tasks / th);
      double work = flops / tasks * rounds;
      double base = work + flops / tasks * (threads > 1 ? kStraggle : 0.0) + kFlopsPerTask * rounds +
                    kFlopsPerPackedByte * a_bytes * static_cast<double>(st) / th +
                    work * kL2Penalty * std::max(0.0, block / kL2BlockBytes - 1.0) +
                    work * kThinPenalty * (u.mr / static_cast<double>(mc) + u.nr / cols);
      double own = base + kFlopsPerPackedByte * b_bytes * static_cast<double>(rt) / th;
      double shared = base + (kFlopsPerPackedByte + kFlopsPerReadByte * static_cast<double>(rt)) * b_bytes / th +
                      (threads > 1 ? kFlopsPerPass : 0.0) + work * kSharedPenalty;
      for (bool sh : {false, true}) {
        double cost = sh ? shared : own;
        if (best_cost < 0 || cost < best_cost) {
          best_cost = cost;
          best.row_tiles = rt, best.strip_tiles = st, best.mc = mc, best.strips_per_tile = per, best.shared_b = sh;
        }
      }
      if (tasks >= 4 * th) break;  // more row tiles only add packing
    }
  }
  best.row_tiles = ceil_div(g.m, best.mc);
  best.strip_tiles = ceil_div(best.strips, best.strips_per_tile);
  if (best.row_tiles == 1) best.shared_b = false;  // nothing would be packed twice
  return best;
}

// Scratch slots for parallel_for_dynamic's workers.
int64_t workers(int64_t tasks, int threads) { return std::max<int64_t>(1, std::min<int64_t>(threads, tasks)); }

// Depth of the packed blocks. A tile one strip wide loops over its A panels with the B strip held in L1, so
// that strip (KC x NR floats) must fit in about 32 KB; wider tiles hold one A panel in L1 and stream B strips
// from L2, where deeper blocks (fewer passes over C) win up to about 512. K is cut into equal blocks.
int64_t pick_kc(const TiledGemm& g, const Micro& u, bool one_strip) {
  int64_t most = one_strip ? std::max<int64_t>(64, (32 << 10) / (4 * u.nr)) : 512;
  int64_t blocks = ceil_div(g.k, most);
  return ceil_div(ceil_div(g.k, blocks), 8) * 8;
}

// The plan for g under cfg: the model's, with whatever cfg fixes.
Plan resolve(const TiledGemm& g, const Micro& u, int threads, const SgemmConfig& cfg) {
  bool one_strip = g.n <= u.nr || cfg.strips_per_tile == 1;
  int64_t kc = g.packed_b ? g.packed_b->kc : cfg.kc > 0 ? cfg.kc : g.k_block > 0 ? g.k_block : pick_kc(g, u, one_strip);
  Plan p = plan(g, u, threads, kc);
  if (cfg.mc > 0) {
    p.mc = ceil_div(cfg.mc, u.mr) * u.mr;
    p.row_tiles = ceil_div(g.m, p.mc);
  }
  if (cfg.strips_per_tile > 0) {
    p.strips_per_tile = std::min(cfg.strips_per_tile, p.strips);
    p.strip_tiles = ceil_div(p.strips, p.strips_per_tile);
  }
  if (cfg.shared_b >= 0) p.shared_b = cfg.shared_b > 0 && p.row_tiles > 1;
  if (g.packed_b) p.shared_b = true;  // packed ahead: every tile reads it
  p.a_outer = cfg.a_outer >= 0 ? cfg.a_outer > 0 : p.strips_per_tile > 1;
  // Operands read in place (no packing). A row-major A panel is read in place whenever it is used once per
  // block or stays in L1 while the tile's B strips pass (A panels outer): packing it only copied it. On the
  // host's sweep that was 5-17% faster on every multi-threaded shape (sgemm_probe's "in place" column).
  // B is read in place on one thread only (attention's and batched products' small blocks, used by one tile),
  // where packing was up to half the time. cfg.direct = 1 allows both anywhere, 0 neither.
  bool direct = u.direct && cfg.direct != 0 && !g.bf16;  // bfloat16 operands are rounded copies, never in place
  bool anywhere = cfg.direct > 0;
  p.direct_a = direct && !g.pack_a && g.alpha == 1.0f && g.a_cs == 1 &&
               (anywhere || threads == 1 || p.a_outer || p.strips_per_tile == 1);
  p.direct_b = direct && !p.shared_b && g.b_cs == 1 && p.row_tiles == 1 && (anywhere || threads == 1);
  return p;
}

// The micro-kernel for g: cfg's, else the first in order of preference whose padding of C to whole micro-tiles
// is within 2% of the least any of them needs (a 64-column product would waste a third of 8x48's work), among
// those meant for a product of g's width.
const Micro& pick_micro(const TiledGemm& g, const SgemmConfig& cfg) {
  const std::vector<Micro>& all = g.bf16 ? micros_bf16() : micros();
  SINTER_INTERNAL_ASSERT(!all.empty(), "sgemm_tiled: no {}micro-kernel for this CPU", g.bf16 ? "bfloat16 " : "");
  if (g.packed_b) {
    SINTER_INTERNAL_ASSERT(g.packed_b->k == g.k && g.packed_b->n == g.n && g.packed_b->bf16 == g.bf16,
                           "sgemm_tiled: B was packed for another product");
    return all[g.packed_b->micro];
  }
  SINTER_INTERNAL_ASSERT(cfg.micro < static_cast<int>(all.size()), "sgemm: no micro-kernel {}", cfg.micro);
  if (cfg.micro >= 0) return all[cfg.micro];
  auto padding = [&](const Micro& u) {
    return static_cast<double>(ceil_div(g.m, u.mr) * u.mr) * static_cast<double>(ceil_div(g.n, u.nr) * u.nr);
  };
  // A narrow kernel (max_n) also wants rows enough: a 64x16x1024 product ran 1.4x slower on 28x16 than on 8x48.
  auto fits = [&](const Micro& u) { return u.max_n == 0 || (g.n <= u.max_n && g.m >= 8 * u.mr); };
  double least = padding(all[0]);
  for (const Micro& u : all)
    if (fits(u)) least = std::min(least, padding(u));
  for (const Micro& u : all)
    if (fits(u) && padding(u) <= 1.02 * least) return u;
  return all[0];
}

}  // namespace

bool sgemm_available() { return micro().fn != nullptr; }
bool sgemm_bf16_available() { return !micros_bf16().empty(); }

// Times the first float32 and bfloat16 micro-kernels of one shape on panels in L1 (the best of 5 runs of 200
// calls, a few ms in all): bfloat16 pays where its dot products run at least 1.4x float32's rate. On the dev
// VM's AMD EPYC they run 2x (230 against 115 GFLOP/s a core); a core that issues one 512-bit bfloat16 dot product
// per cycle against two float32 FMAs would gain nothing from them.
bool sgemm_bf16_pays() {
  static const bool pays = [] {
    if (micros_bf16().empty()) return false;
    const Micro* h = &micros_bf16()[0];
    auto same = std::find_if(micros().begin(), micros().end(),
                             [&](const Micro& u) { return u.mr == h->mr && u.nr == h->nr; });
    if (same == micros().end()) return false;
    const Micro* f = &*same;
    constexpr int64_t kc = 256;
    std::vector<float> buf(static_cast<size_t>(kc * (h->mr + h->nr) + h->mr * h->nr + 32), 0.001f);
    float* a = align64(buf.data());
    float* b = a + kc * h->mr;
    float* c = b + kc * h->nr;
    auto best = [&](const Micro& u) {
      double t = 1e30;
      for (int run = 0; run < 5; ++run) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < 200; ++i) u.fn(kc, a, 0, 0, b, 0, c, u.nr, true);
        t = std::min(t, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      return t;
    };
    return best(*f) >= 1.4 * best(*h);
  }();
  return pays;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void add_to_rows(float* c, int64_t c_rs, int64_t rows,
                                                                               const float* v, int64_t cols) {
  for (int64_t x = 0; x < rows; ++x) {
    float* __restrict dst = c + x * c_rs;
    for (int64_t y = 0; y < cols; ++y) dst[y] += v[y];
  }
}

void pack_rows(const float* const* rows, int mr, int64_t len, float* out) {
  bool dense = true;
  for (int i = 0; i < mr && dense; ++i) dense = rows[i] != nullptr;
  if (dense && pack_rows_known(rows, mr, len, out)) return;
  for (int i = 0; i < mr; ++i) {
    const float* r = rows[i];
    for (int64_t p = 0; p < len; ++p) out[p * mr + i] = r ? r[p] : 0.0f;
  }
}

std::vector<std::string> sgemm_micro_kernels() {
  std::vector<std::string> names;
  for (const Micro& u : micros()) names.emplace_back(u.name);
  return names;
}

std::string sgemm_plan(const TiledGemm& g, int threads, const SgemmConfig& cfg) {
  if (!sgemm_available()) return "no micro-kernel";
  const Micro& u = pick_micro(g, cfg);
  Plan p = resolve(g, u, threads, cfg);
  return fmt::format("{} micro-tiles, KC {}, {} tiles of {} rows x {} columns, B {}{}{}", u.name, p.kc, p.tasks(),
                     p.mc, p.strips_per_tile * u.nr,
                     p.direct_b   ? "read in place"
                     : g.packed_b ? "packed ahead"
                     : p.shared_b ? "packed once and shared"
                                  : "packed per tile",
                     p.direct_a ? ", A read in place" : "", p.a_outer ? ", A panels outer" : "");
}

bool sgemm_suits(int64_t m, int64_t n, int64_t k) { return sgemm_available() && m >= 4 && n >= 8 && k >= 4; }

void sgemm_tiled(const TiledGemm& g, const SgemmConfig& cfg) {
  const Micro& u = pick_micro(g, cfg);
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0 || g.alpha == 0.0f) {  // C = beta * C
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) g.c[i * g.c_rs + j] = g.beta == 0.0f ? 0.0f : g.beta * g.c[i * g.c_rs + j];
    if (g.tile_done) g.tile_done(g.ctx, 0, g.m, 0, g.n);
    return;
  }
  // Below about 2 MFLOP waking the pool costs more than it saves.
  double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  int threads = in_parallel_region() || flops < (1 << 21) ? 1 : get_num_threads();
  const Plan p = resolve(g, u, threads, cfg);
  const int mr = u.mr, nr = u.nr;
  const int64_t KC = p.kc;
  // Packed operands in floats (bfloat16 pairs take half): shared B's block kb starts at kb * KS * np, strip s of
  // it at s * steps(kc) * nr. Per worker: one block of A (mc x KC), without shared B one of B (KC x the tile's
  // columns), reused for every k block, and for bfloat16 a float32 panel that is rounded into them.
  const bool bh = g.bf16;
  auto steps = [bh](int64_t kc) { return packed_steps(bh, kc); };
  auto floats = [bh](int64_t values) { return packed_floats(bh, values); };
  const int64_t KS = steps(KC), np = p.strips * nr, row_panels = ceil_div(g.m, mr), mp = row_panels * mr;
  const bool pack_shared = p.shared_b && !g.packed_b;
  const int64_t shared_size = pack_shared ? floats(p.kblocks * KS * np) + 16 : 0;
  // A bfloat16 product rounds A once: a row-major A into a bfloat16 copy of its rows (a_words words each, padded
  // with zero rows to whole panels) that the micro-kernels' direct form reads in place; any other A into panels
  // that every column tile reads (block kb's panel R at kb * KS * mp + R * steps(kc) * mr), where more than one does.
  const bool flat_a = bh && u.direct && !g.pack_a && g.a_cs == 1 && g.alpha == 1.0f && KC % 2 == 0;
  const int64_t a_words = (g.k + 1) / 2;
  const bool share_a = bh && !flat_a && p.strip_tiles > 1;
  const int64_t shared_a_size = share_a ? floats(p.kblocks * KS * mp) + 16 : flat_a ? mp * a_words + 16 : 0;
  const int64_t a_size = ceil_div(floats(p.mc * KS), 16) * 16;
  const int64_t b_size = p.shared_b ? 0 : floats(KS * p.strips_per_tile * nr);
  const int64_t tmp_size = bh ? KS * std::max(mr, nr) : 0;
  const int64_t slot = a_size + b_size + tmp_size + 16;
  // One pass packs the shared operands first: B's strips, then A's panels.
  constexpr int64_t kFlatPanels = 8;  // row panels per task of rounding a flat A
  const int64_t b_panels = pack_shared ? p.kblocks * p.strips : 0;
  const int64_t a_panels = share_a ? p.kblocks * row_panels : flat_a ? ceil_div(row_panels, kFlatPanels) : 0;
  const int64_t slots = workers(std::max(p.tasks(), b_panels + a_panels), threads);
  Tensor scratch = empty({shared_size + shared_a_size + slots * slot}, TensorOptions{});
  float* own_b = align64(scratch.data_ptr<float>());
  float* own_a = align64(scratch.data_ptr<float>() + shared_size);
  const float* shared_b = g.packed_b ? g.packed_b->data : own_b;
  float* base = scratch.data_ptr<float>() + shared_size + shared_a_size;
  if (b_panels + a_panels > 0)
    parallel_for_dynamic(b_panels + a_panels, threads, [&](int64_t t, int64_t worker) {
      float* tmp = align64(base + worker * slot) + a_size + b_size;
      if (t < b_panels) return pack_b_whole(g, t, KC, nr, own_b, tmp);
      if (flat_a) {
        const int64_t i0 = (t - b_panels) * kFlatPanels * mr, i1 = std::min(mp, i0 + kFlatPanels * mr);
        for (int64_t i = i0; i < i1; ++i) {
          uint16_t* row = reinterpret_cast<uint16_t*>(own_a + i * a_words);
          if (i >= g.m) {
            std::memset(row, 0, static_cast<size_t>(a_words) * 4);
            continue;
          }
          to_bf16_row(g.a + i * g.a_rs, g.k, row);
          if (g.k % 2 == 1) row[g.k] = 0;
        }
        return;
      }
      int64_t kb = (t - b_panels) / row_panels, r = (t - b_panels) % row_panels;
      int64_t k0 = kb * KC, kc = std::min(KC, g.k - k0);
      pack_a_panel(g, r * mr, mr, k0, kc, own_a + floats(kb * KS * mp + r * steps(kc) * mr), tmp);
    });

  std::unique_ptr<std::atomic<int64_t>[]> unfinished;  // per row tile, its strip tiles not yet done
  if (g.whole_rows && g.tile_done && p.strip_tiles > 1) {
    unfinished = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(p.row_tiles));
    for (int64_t i = 0; i < p.row_tiles; ++i) unfinished[i].store(p.strip_tiles, std::memory_order_relaxed);
  }
  parallel_for_dynamic(p.tasks(), threads, [&](int64_t t, int64_t worker) {
    int64_t i0 = (t % p.row_tiles) * p.mc, i1 = std::min(g.m, i0 + p.mc);
    int64_t s0 = (t / p.row_tiles) * p.strips_per_tile, s1 = std::min(p.strips, s0 + p.strips_per_tile);
    float* ap = align64(base + worker * slot);
    float* bp = ap + a_size;
    float* tmp = bp + b_size;
    alignas(64) float edge[16 * 64];
    int64_t panels = ceil_div(i1 - i0, mr);
    const bool locate = g.locate_a != nullptr && u.direct != nullptr && !bh;
    std::vector<const float*> located(locate ? static_cast<size_t>(panels) : 0);
    std::vector<int64_t> located_rs(located.size());
    if (g.beta != 0.0f && g.beta != 1.0f)
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = s0 * nr; j < std::min(g.n, s1 * nr); ++j) g.c[i * g.c_rs + j] *= g.beta;
    for (int64_t kb = 0; kb < p.kblocks; ++kb) {
      int64_t k0 = kb * KC, kc = std::min(KC, g.k - k0);
      bool accumulate = kb > 0 || g.beta != 0.0f;
      // Direct operands are read in place where a panel or strip is whole; partial ones are packed (zero-padded).
      // A caller's locator (g.locate_a) may offer a virtual A's panel in place too, else it is packed.
      for (int64_t r = 0; r < panels; ++r) {
        const bool whole = i1 - (i0 + r * mr) >= mr;
        const float* in_place = nullptr;
        if (locate) {
          if (whole) in_place = g.locate_a(g.pack_ctx, i0 + r * mr, mr, k0, kc, &located_rs[r]);
          located[r] = in_place;
        }
        if (in_place == nullptr && !share_a && !flat_a && (!p.direct_a || !whole))
          pack_a_panel(g, i0 + r * mr, mr, k0, kc, ap + floats(r * steps(kc) * mr), tmp);
      }
      if (!p.shared_b)
        for (int64_t s = s0; s < s1; ++s)
          if (!p.direct_b || g.n - s * nr < nr)
            pack_b_panel(g, k0, kc, s * nr, nr, bp + floats((s - s0) * steps(kc) * nr), tmp);
      auto tile = [&](int64_t s, int64_t r) {
        int64_t i = i0 + r * mr, j = s * nr, rows = std::min<int64_t>(mr, i1 - i), cols = std::min<int64_t>(nr, g.n - j);
        bool la = locate && located[r] != nullptr, da = la || (p.direct_a && rows == mr), db = p.direct_b && cols == nr;
        const float* as = la        ? located[r]
                          : da      ? g.a + i * g.a_rs + k0
                          : flat_a  ? own_a + i * a_words + k0 / 2
                          : share_a ? own_a + floats(kb * KS * mp + (i0 / mr + r) * steps(kc) * mr)
                                    : ap + floats(r * steps(kc) * mr);
        const float* bs = db           ? g.b + k0 * g.b_rs + j
                          : p.shared_b ? shared_b + floats(kb * KS * np + s * steps(kc) * nr)
                                       : bp + floats((s - s0) * steps(kc) * nr);
        MicroFn fn = da || db || flat_a ? u.direct : u.fn;
        int64_t a_rs = la ? located_rs[r] : da ? g.a_rs : flat_a ? a_words : 1, a_ps = da || flat_a ? 1 : mr;
        int64_t b_ps = db ? g.b_rs : nr;
        float* c = g.c + i * g.c_rs + j;
        if (rows == mr && cols == nr) {
          fn(steps(kc), as, a_rs, a_ps, bs, b_ps, c, g.c_rs, accumulate);
          return;
        }
        fn(steps(kc), as, a_rs, a_ps, bs, b_ps, edge, nr, false);
        copy_tile(edge, nr, rows, cols, c, g.c_rs, accumulate);
      };
      if (p.a_outer) {  // an A panel stays in L1 while the tile's B strips stream past it
        for (int64_t r = 0; r < panels; ++r)
          for (int64_t s = s0; s < s1; ++s) tile(s, r);
      } else {  // a B strip stays in L1/L2 while the tile's A panels stream past it
        for (int64_t s = s0; s < s1; ++s)
          for (int64_t r = 0; r < panels; ++r) tile(s, r);
      }
    }
    if (!g.tile_done) return;
    if (!g.whole_rows || p.strip_tiles == 1) {
      g.tile_done(g.ctx, i0, i1, s0 * nr, std::min(g.n, s1 * nr));
      return;
    }
    // Whole rows: whichever task finishes a row tile's last strip runs the callback on all of its columns (the
    // acquire makes the other tasks' stores to those rows visible).
    if (unfinished[t % p.row_tiles].fetch_sub(1, std::memory_order_acq_rel) == 1) g.tile_done(g.ctx, i0, i1, 0, g.n);
  });
}

std::shared_ptr<const PackedB> sgemm_pack_b(const TiledGemm& g) {
  SINTER_INTERNAL_ASSERT(g.packed_b == nullptr && g.k > 0 && g.n > 0, "sgemm_pack_b: nothing to pack");
  const Micro& u = pick_micro(g, {});
  const std::vector<Micro>& all = g.bf16 ? micros_bf16() : micros();
  auto out = std::make_shared<PackedB>();
  out->k = g.k, out->n = g.n, out->bf16 = g.bf16;
  out->micro = static_cast<int>(&u - all.data());
  out->kc = g.k_block > 0 ? g.k_block : pick_kc(g, u, g.n <= u.nr);
  const int nr = u.nr;
  const int64_t ks = packed_steps(g.bf16, out->kc), strips = ceil_div(g.n, nr), kblocks = ceil_div(g.k, out->kc);
  out->storage.resize(static_cast<size_t>(packed_floats(g.bf16, kblocks * ks * strips * nr) + 16));
  float* data = align64(out->storage.data());
  out->data = data;
  parallel_for_dynamic(kblocks * strips, get_num_threads(), [&](int64_t t, int64_t) {
    std::vector<float> tmp(g.bf16 ? static_cast<size_t>(ks * nr) : 0);
    pack_b_whole(g, t, out->kc, nr, data, tmp.data());
  });
  return out;
}

}  // namespace sinter::blas
