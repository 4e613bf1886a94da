// sinter's own float32 GEMM for compiled programs: C = A @ B over the intra-op pool, B packed once and shared by
// every task, each task packing its own rows of A, AVX-512 or AVX2 micro-kernels, and a callback on every
// finished tile of C while it is still in cache (the place where generated epilogues run). One pool means no
// second set of threads: OpenBLAS's threads keep spinning for a while after a threaded call and then compete
// with the pool's next kernel, which cost compiled graphs 10-30% on the 16-core host.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sinter::blas {

// Called once per finished tile of C: rows [i0, i1), columns [j0, j1).
using TileFn = void (*)(void* ctx, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

// Packs rows [i0, i0 + rows) and columns [k0, k0 + kc) of a virtual A into out[p * mr + i] (rows <= mr; the rows
// from `rows` to mr are zero). Lets a caller build A on the fly, e.g. a convolution's im2col while packing.
using PackAFn = void (*)(const void* ctx, int64_t i0, int rows, int mr, int64_t k0, int64_t kc, float* out);

// Where a virtual A's panel lies, if anywhere: rows [i0, i0 + mr) and columns [k0, k0 + kc) as
// A(i0 + i, k0 + p) = ptr[i * *row_stride + p], or null (the panel is then packed through PackAFn). Lets a
// convolution read most of its im2col straight from the input: within one tap, consecutive output pixels of a
// row are input pixels a fixed stride apart with their channels contiguous.
using LocateAFn = const float* (*)(const void* ctx, int64_t i0, int mr, int64_t k0, int64_t kc, int64_t* row_stride);

struct PackedB;

struct TiledGemm {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;  // element (i, p) at a[i * a_rs + p * a_cs]: any strides
  int64_t a_rs = 0, a_cs = 0;
  PackAFn pack_a = nullptr;  // when set, A is read only through it (a, a_rs, a_cs unused; alpha must be 1)
  const void* pack_ctx = nullptr;
  LocateAFn locate_a = nullptr;  // with pack_a: panels it can place are read in place (ctx: pack_ctx)
  int64_t k_block = 0;           // depth of the packed blocks when nonzero (a conv's channels: one tap a block)
  const float* b = nullptr;  // element (p, j) at b[p * b_rs + j * b_cs]: any strides
  int64_t b_rs = 0, b_cs = 0;
  float* c = nullptr;        // element (i, j) at c[i * c_rs + j]
  int64_t c_rs = 0;
  float alpha = 1, beta = 0;  // C = alpha * A @ B + beta * C (beta 0: C's old contents, NaN included, ignored)
  TileFn tile_done = nullptr;
  void* ctx = nullptr;
  bool whole_rows = false;   // every callback spans all n columns (for callbacks that reduce over a row): it runs
                             // once per row tile, after the last of that row's tiles is done
  // Products of A and B rounded to bfloat16, summed in float32 (AVX512-BF16 dot products; requires
  // sgemm_bf16_available()). A and B are still given as float32 and rounded while packed.
  bool bf16 = false;
  // B packed ahead by sgemm_pack_b (for the same k, n and bf16); b, b_rs, b_cs are then unused.
  const PackedB* packed_b = nullptr;
};

// B packed once in the panels sgemm_tiled's micro-kernels read (for every block of kc k steps and strip of nr
// columns, kc runs of nr values, or kc / 2 runs of nr pairs for bfloat16): a constant weight packed when first
// used, so that later products neither copy nor transpose it.
struct PackedB {
  int64_t k = 0, n = 0, kc = 0;
  int micro = 0;  // index into micros() or micros_bf16()
  bool bf16 = false;
  std::vector<float> storage;
  const float* data = nullptr;  // 64-byte aligned, inside storage
};
// Packs g's B (b, b_rs, b_cs, k, n, k_block; bf16) for products of about g.m rows.
std::shared_ptr<const PackedB> sgemm_pack_b(const TiledGemm& g);

// c[x * c_rs + y] += v[y] for rows x < rows and columns y < cols (a bias added to a finished tile), vectorised.
void add_to_rows(float* c, int64_t c_rs, int64_t rows, const float* v, int64_t cols);

// The most rows a micro-tile has (28x16's 28, rounded up): the bound of a PackAFn's `mr`.
inline constexpr int kMaxMicroRows = 32;

// For PackAFn implementations: interleaves `mr` rows of `len` values (row i at rows[i], null for a row of
// zeros) into out[p * mr + i].
void pack_rows(const float* const* rows, int mr, int64_t len, float* out);

// A tuning run's choices (bench/sgemm_probe.cpp sweeps them); every field left at its default is planned.
struct SgemmConfig {
  int micro = -1;               // index into sgemm_micro_kernels()
  int64_t kc = 0;               // depth of a packed block
  int64_t mc = 0;               // rows of a tile (rounded up to the micro-kernel's rows)
  int64_t strips_per_tile = 0;  // a tile's width in strips of the micro-kernel's columns
  int shared_b = -1;            // 1: B packed once and shared, 0: packed per tile
  int a_outer = -1;             // loop order inside a tile: 1: A panels outside B strips, 0: inside
  int direct = -1;              // 1: read row-major A and B in place where possible, 0: always pack
};
// The micro-kernels this CPU runs ("6x64", ...), the default first; empty without AVX2/AVX-512.
std::vector<std::string> sgemm_micro_kernels();

// Whether this CPU has one of the micro-kernels (AVX-512F, or AVX2 with FMA). Without, callers use OpenBLAS.
bool sgemm_available();
// Whether this CPU has the bfloat16 micro-kernels (AVX512-BF16).
bool sgemm_bf16_available();
// Whether they run faster than float32's here (timed once per process): where they do not, products that may
// use bfloat16 (set_float32_matmul_precision("medium")) stay in float32.
bool sgemm_bf16_pays();
// Runs on the pool (or inline inside a parallel region). Requires sgemm_available().
void sgemm_tiled(const TiledGemm& g, const SgemmConfig& cfg = {});
// Whether sgemm_tiled is the better choice for this product: a micro-kernel exists and the product is not so
// thin that padding to micro-tiles wastes most of it (matrix-vector products stay with BLAS's gemv).
bool sgemm_suits(int64_t m, int64_t n, int64_t k);
// How sgemm_tiled would cut this product over `threads` threads ("6x64 micro-tiles, 48 tiles of 132 rows x ...").
std::string sgemm_plan(const TiledGemm& g, int threads, const SgemmConfig& cfg = {});

}  // namespace sinter::blas
