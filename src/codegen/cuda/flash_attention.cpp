#include "codegen/cuda/flash_attention.h"

#include <fmt/format.h>

#include "support/check.h"

namespace sinter::codegen::cuda {
namespace {

// The body, specialised by SN_FA_NAME, SN_FA_BF16, SN_FA_D, SN_FA_MASK (0 none, 1 bool, 2 additive) and
// SN_FA_CAUSAL. Fragment layouts are those of PTX's mma.m16n8k16 (g = lane / 4, t = lane % 4): A's registers hold
// rows g and g + 8, columns 2t, 2t + 1 and 2t + 8, 2t + 9; B's hold rows 2t, 2t + 1 (and + 8) of column g; the
// accumulator holds rows g and g + 8, columns 2t and 2t + 1. A score tile's accumulators are therefore already the
// A fragment of the product with V: no shared memory between the two products.
constexpr char kBody[] = R"FA(
struct sn_fa_params {
  const void* q; const void* k; const void* v; const void* mask; void* out;
  long long n1, L, S, row_blocks, group;
  long long q0, q1, qr, k0, k1, kr, v0, v1, vr, m0, m1, mr, mc, o0, o1, orow;
  float scale_log2, scale;
};
typedef unsigned short sn_fa_t;
// Shared and global memory are read and written as 16-, 32- and 128-bit words of one array; on the host compiler
// (the simulator) these types say so, else -O3's strict aliasing may reorder the accesses.
#ifdef SINTER_CUDA_SIM
#define SN_FA_ALIAS __attribute__((may_alias))
#else
#define SN_FA_ALIAS
#endif
typedef unsigned short SN_FA_ALIAS sn_fa_h;
typedef unsigned SN_FA_ALIAS sn_fa_w;
typedef uint4 SN_FA_ALIAS sn_fa_q;
#if SN_FA_BF16
SN_INLINE float sn_fa_load(sn_fa_t h) { return sn_bf16_to_f32(h); }
SN_INLINE sn_fa_t sn_fa_round(float f) { return sn_f32_to_bf16(f); }
#define SN_FA_MMA_TYPE "bf16"
#else
SN_INLINE float sn_fa_load(sn_fa_t h) { return sn_f16_to_f32(h); }
SN_INLINE sn_fa_t sn_fa_round(float f) { return sn_f32_to_f16(f); }
#define SN_FA_MMA_TYPE "f16"
#endif
SN_INLINE unsigned sn_fa_pack(float lo, float hi) {
  return (unsigned)sn_fa_round(lo) | ((unsigned)sn_fa_round(hi) << 16);
}

// d += a (16 x 16, row-major) * b (16 x 8, column-major), float accumulators.
#ifdef SINTER_CUDA_SIM
// The simulator: every lane leaves its registers in the warp's scratch and computes its own four results.
SN_INLINE void sn_fa_mma(float* d, const unsigned* a, const unsigned* b) {
  __shared__ unsigned scratch[32][32][6];
  unsigned lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned w = lin / 32, lane = lin % 32;
  for (int r = 0; r < 4; ++r) scratch[w][lane][r] = a[r];
  scratch[w][lane][4] = b[0];
  scratch[w][lane][5] = b[1];
  __syncwarp();
  auto half = [](unsigned reg, int odd) { return sn_fa_load((sn_fa_t)(odd ? reg >> 16 : reg & 0xffffu)); };
  unsigned g = lane >> 2, t = lane & 3;
  for (int e = 0; e < 4; ++e) {
    int row = (int)g + (e >= 2 ? 8 : 0), col = (int)t * 2 + (e & 1);
    float acc = d[e];
    for (int k = 0; k < 16; ++k) {
      unsigned ar = scratch[w][(row & 7) * 4 + ((k & 7) >> 1)][(row >> 3) + 2 * (k >> 3)];
      unsigned br = scratch[w][col * 4 + ((k & 7) >> 1)][4 + (k >> 3)];
      acc += half(ar, k & 1) * half(br, k & 1);
    }
    d[e] = acc;
  }
  __syncwarp();
}
#else
SN_INLINE void sn_fa_mma(float* d, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." SN_FA_MMA_TYPE "." SN_FA_MMA_TYPE ".f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

#define SN_FA_BN 64
#define SN_FA_KS (SN_FA_D + 8)   // padded rows: the fragment loads of a warp hit 32 different banks
#define SN_FA_VS (SN_FA_BN + 8)

extern "C" __global__ void __launch_bounds__(128) SN_FA_NAME(const sn_fa_params p) {
  __shared__ __align__(16) sn_fa_t ks[SN_FA_BN * SN_FA_KS];
  __shared__ __align__(16) sn_fa_t vt[SN_FA_D * SN_FA_VS];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const float kNegInf = sn_from_bits(0xff800000u);
  // Blocks of later rows first: under causality they see more keys.
  const long long item = (long long)blockIdx.x / p.row_blocks;
  const long long rb = p.row_blocks - 1 - (long long)blockIdx.x % p.row_blocks;
  const long long i0 = item / p.n1, i1 = item % p.n1;
  const sn_fa_t* Q = (const sn_fa_t*)p.q + i0 * p.q0 + i1 * p.q1;
  const long long kv1 = i1 / p.group;
  const sn_fa_t* K = (const sn_fa_t*)p.k + i0 * p.k0 + kv1 * p.k1;
  const sn_fa_t* V = (const sn_fa_t*)p.v + i0 * p.v0 + kv1 * p.v1;
  sn_fa_t* O = (sn_fa_t*)p.out + i0 * p.o0 + i1 * p.o1;
  const long long r0 = rb * 64 + warp * 16 + g, r1 = r0 + 8;

  unsigned qa[SN_FA_D / 16][4];
  for (int kk = 0; kk < SN_FA_D / 16; ++kk) {
    int c = kk * 16 + t * 2;
    qa[kk][0] = r0 < p.L ? *(const sn_fa_w*)(Q + r0 * p.qr + c) : 0u;
    qa[kk][1] = r1 < p.L ? *(const sn_fa_w*)(Q + r1 * p.qr + c) : 0u;
    qa[kk][2] = r0 < p.L ? *(const sn_fa_w*)(Q + r0 * p.qr + c + 8) : 0u;
    qa[kk][3] = r1 < p.L ? *(const sn_fa_w*)(Q + r1 * p.qr + c + 8) : 0u;
  }
  float o[SN_FA_D / 8][4];
  for (int n = 0; n < SN_FA_D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float mx[2] = {kNegInf, kNegInf}, sum[2] = {0.0f, 0.0f};
  long long kend = p.S;
#if SN_FA_CAUSAL
  if (kend > rb * 64 + 64) kend = rb * 64 + 64;  // row r sees keys [0, r] (top-left aligned)
#endif
  for (long long kb = 0; kb < kend; kb += SN_FA_BN) {
    __syncthreads();  // the previous tile is no longer read
    for (int idx = tid; idx < SN_FA_BN * SN_FA_D / 8; idx += 128) {
      int r = idx / (SN_FA_D / 8), c = idx % (SN_FA_D / 8) * 8;
      uint4 kv = make_uint4(0u, 0u, 0u, 0u);
      if (kb + r < p.S) kv = *(const sn_fa_q*)(K + (kb + r) * p.kr + c);
      *(sn_fa_q*)(ks + r * SN_FA_KS + c) = kv;
      // V transposed, consecutive threads on consecutive keys (conflict-free stores).
      int vr = idx % SN_FA_BN, vc = idx / SN_FA_BN * 8;
      uint4 vv = make_uint4(0u, 0u, 0u, 0u);
      if (kb + vr < p.S) vv = *(const sn_fa_q*)(V + (kb + vr) * p.vr + vc);
      const sn_fa_h* ve = (const sn_fa_h*)&vv;
      for (int e = 0; e < 8; ++e) vt[(vc + e) * SN_FA_VS + vr] = ve[e];
    }
    __syncthreads();
    float s[SN_FA_BN / 8][4];
    for (int j = 0; j < SN_FA_BN / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    for (int kk = 0; kk < SN_FA_D / 16; ++kk)
      for (int j = 0; j < SN_FA_BN / 8; ++j) {
        const sn_fa_t* kr = ks + (j * 8 + g) * SN_FA_KS + kk * 16 + t * 2;
        unsigned b[2] = {*(const sn_fa_w*)kr, *(const sn_fa_w*)(kr + 8)};
        sn_fa_mma(s[j], qa[kk], b);
      }
    // Scale, causality, mask; then the tile's row maxima (over the 4 lanes that share a row).
    float tmax[2] = {kNegInf, kNegInf};
    for (int j = 0; j < SN_FA_BN / 8; ++j)
      for (int e = 0; e < 4; ++e) {
        long long row = e < 2 ? r0 : r1, col = kb + j * 8 + t * 2 + (e & 1);
        float x = s[j][e] * p.scale;
        bool out = col >= p.S;
#if SN_FA_CAUSAL
        out = out || col > row;
#endif
#if SN_FA_MASK == 1
        if (!out && row < p.L) out = !((const bool*)p.mask)[row * p.mr + col * p.mc + i0 * p.m0 + i1 * p.m1];
#elif SN_FA_MASK == 2
        if (!out && row < p.L)
          x += sn_fa_load(((const sn_fa_t*)p.mask)[row * p.mr + col * p.mc + i0 * p.m0 + i1 * p.m1]);
#endif
        x = out ? kNegInf : x * 1.4426950408889634f;
        s[j][e] = x;
        tmax[e >> 1] = fmaxf(tmax[e >> 1], x);
      }
    float shift[2], alpha[2];
    for (int h = 0; h < 2; ++h) {
      tmax[h] = fmaxf(tmax[h], __shfl_xor_sync(0xffffffffu, tmax[h], 1));
      tmax[h] = fmaxf(tmax[h], __shfl_xor_sync(0xffffffffu, tmax[h], 2));
      float m = fmaxf(mx[h], tmax[h]);
      shift[h] = m == kNegInf ? 0.0f : m;  // every key so far masked: exp2(-inf - 0) = 0, never NaN
      alpha[h] = exp2f(mx[h] - shift[h]);
      mx[h] = m;
      sum[h] *= alpha[h];
    }
    for (int n = 0; n < SN_FA_D / 8; ++n) {
      o[n][0] *= alpha[0], o[n][1] *= alpha[0];
      o[n][2] *= alpha[1], o[n][3] *= alpha[1];
    }
    for (int j = 0; j < SN_FA_BN / 8; ++j)
      for (int e = 0; e < 4; ++e) {
        float pr = exp2f(s[j][e] - shift[e >> 1]);
        s[j][e] = pr;
        sum[e >> 1] += pr;  // this lane's part of the row sum; the 4 lanes' parts are added at the end
      }
    for (int kk = 0; kk < SN_FA_BN / 16; ++kk) {
      unsigned pa[4] = {sn_fa_pack(s[2 * kk][0], s[2 * kk][1]), sn_fa_pack(s[2 * kk][2], s[2 * kk][3]),
                        sn_fa_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                        sn_fa_pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      for (int n = 0; n < SN_FA_D / 8; ++n) {
        const sn_fa_t* vr = vt + (n * 8 + g) * SN_FA_VS + kk * 16 + t * 2;
        unsigned b[2] = {*(const sn_fa_w*)vr, *(const sn_fa_w*)(vr + 8)};
        sn_fa_mma(o[n], pa, b);
      }
    }
  }
  for (int h = 0; h < 2; ++h) {
    sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
    sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
  }
  const float inv0 = sum[0] > 0.0f ? 1.0f / sum[0] : 0.0f, inv1 = sum[1] > 0.0f ? 1.0f / sum[1] : 0.0f;
  for (int n = 0; n < SN_FA_D / 8; ++n) {
    int c = n * 8 + t * 2;
    if (r0 < p.L) *(sn_fa_w*)(O + r0 * p.orow + c) = sn_fa_pack(o[n][0] * inv0, o[n][1] * inv0);
    if (r1 < p.L) *(sn_fa_w*)(O + r1 * p.orow + c) = sn_fa_pack(o[n][2] * inv1, o[n][3] * inv1);
  }
}
#ifdef SINTER_CUDA_SIM
extern "C" void SN_FA_SIM_NAME(void** p) { SN_FA_NAME(*(const sn_fa_params*)p[0]); }
#endif
)FA";

}  // namespace

std::string FlashVariant::name() const {
  return fmt::format("sn_flash_{}_d{}_m{}_c{}", bf16 ? "bf16" : "f16", head_dim, static_cast<int>(mask),
                     causal ? 1 : 0);
}

std::string flash_attention_source(const FlashVariant& v) {
  SINTER_CHECK(v.head_dim % 16 == 0 && v.head_dim >= 16 && v.head_dim <= 128,
               "flash attention: head dim {} is not a multiple of 16 in [16, 128]", v.head_dim);
  std::string n = v.name();
  return fmt::format("// {}: flash attention (codegen/cuda/flash_attention.cpp)\n#define SN_FA_NAME {}\n"
                     "#define SN_FA_SIM_NAME {}__sim\n#define SN_FA_BF16 {}\n#define SN_FA_D {}\n"
                     "#define SN_FA_MASK {}\n#define SN_FA_CAUSAL {}\n",
                     n, n, n, v.bf16 ? 1 : 0, v.head_dim, static_cast<int>(v.mask), v.causal ? 1 : 0) +
         kBody;
}

}  // namespace sinter::codegen::cuda
