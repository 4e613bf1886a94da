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
constexpr char kPrelude[] = R"FA(
struct sn_fa_params {
  const void* q; const void* k; const void* v; const void* mask; void* out;
  long long n1, L, S, row_blocks, group;
  long long q0, q1, qr, k0, k1, kr, v0, v1, vr, m0, m1, mr, mc, o0, o1, orow;
  float scale_log2, scale;
  float* lse; float* delta; const void* dout; long long g0, g1, grow;
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

// ldmatrix.x4: lane l names row l % 8 of 8 x 8 matrix l / 8 (16 bytes of shared memory); r[i] receives elements
// (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of matrix i, or with .trans those of its transpose.
#ifdef SINTER_CUDA_SIM
template <bool kTrans>
SN_INLINE void sn_fa_ldsm(unsigned* r, const sn_fa_t* row) {
  __shared__ const sn_fa_t* rows[32][32];
  unsigned lin = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned w = lin / 32, lane = lin % 32;
  rows[w][lane] = row;
  __syncwarp();
  unsigned g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; ++i) {
    sn_fa_t lo, hi;
    if (kTrans) {
      lo = ((const sn_fa_h*)rows[w][i * 8 + 2 * t])[g];
      hi = ((const sn_fa_h*)rows[w][i * 8 + 2 * t + 1])[g];
    } else {
      lo = ((const sn_fa_h*)rows[w][i * 8 + g])[2 * t];
      hi = ((const sn_fa_h*)rows[w][i * 8 + g])[2 * t + 1];
    }
    r[i] = (unsigned)lo | ((unsigned)hi << 16);
  }
  __syncwarp();
}
#else
template <bool kTrans>
SN_INLINE void sn_fa_ldsm(unsigned* r, const sn_fa_t* row) {
  unsigned a;
  asm("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(a) : "l"(row));
  if (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
#endif

// 16 bytes from global to shared memory, asynchronously (zeros where !valid); a group of them is committed, and
// waited for until at most N groups are in flight. The simulator copies at once.
#ifdef SINTER_CUDA_SIM
SN_INLINE void sn_fa_cp16(sn_fa_t* dst, const sn_fa_t* src, bool valid) {
  *(sn_fa_q*)dst = valid ? *(const sn_fa_q*)src : make_uint4(0u, 0u, 0u, 0u);
}
SN_INLINE void sn_fa_commit() {}
template <int N>
SN_INLINE void sn_fa_wait() {}
SN_INLINE float sn_fa_exp2(float x) { return exp2f(x); }
#else
SN_INLINE void sn_fa_cp16(sn_fa_t* dst, const sn_fa_t* src, bool valid) {
  unsigned d;
  asm("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(d) : "l"(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0));
}
SN_INLINE void sn_fa_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
SN_INLINE void sn_fa_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
// One MUFU instruction (2 ulp); exp2f adds a range reduction for results below 2^-126, which are 0 to a softmax.
SN_INLINE float sn_fa_exp2(float x) {
  float y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
#endif

)FA";

// The forward kernel (SN_FA_MT row tiles per warp, SN_FA_BN keys per tile); with SN_FA_STATS it writes, instead
// of the output, each row's log-sum-exp (base 2, of the scaled scores) and D = rowsum(dout * out), the
// backward's two row statistics.
constexpr char kForward[] = R"FA(
#define SN_FA_BM (64 * SN_FA_MT)  // query rows per block (SN_FA_MT 16-row tiles per warp)
#define SN_FA_S (SN_FA_D + 8)             // padded rows: a phase of ldmatrix hits 32 different banks

extern "C" __global__ void __launch_bounds__(128) SN_FA_NAME(const sn_fa_params p) {
  // Two tiles of K and V: the next is loading while this one is used.
  __shared__ __align__(16) sn_fa_t kbuf[2 * SN_FA_BN * SN_FA_S];
  __shared__ __align__(16) sn_fa_t vbuf[2 * SN_FA_BN * SN_FA_S];
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
  const int L = (int)p.L, S = (int)p.S;
  // This lane's rows: row[m][0] and row[m][1] = row[m][0] + 8 of m-tile m.
  int row[SN_FA_MT][2];
  #pragma unroll
  for (int m = 0; m < SN_FA_MT; ++m) {
    row[m][0] = (int)rb * SN_FA_BM + (warp * SN_FA_MT + m) * 16 + g;
    row[m][1] = row[m][0] + 8;
  }
  unsigned qa[SN_FA_MT][SN_FA_D / 16][4];
  #pragma unroll
  for (int m = 0; m < SN_FA_MT; ++m)
    #pragma unroll
    for (int kk = 0; kk < SN_FA_D / 16; ++kk) {
      int c = kk * 16 + t * 2;
      #pragma unroll
      for (int h = 0; h < 2; ++h) {
        bool in = row[m][h] < L;
        qa[m][kk][h] = in ? *(const sn_fa_w*)(Q + row[m][h] * p.qr + c) : 0u;
        qa[m][kk][h + 2] = in ? *(const sn_fa_w*)(Q + row[m][h] * p.qr + c + 8) : 0u;
      }
    }
  float o[SN_FA_MT][SN_FA_D / 8][4];
  float mx[SN_FA_MT][2], sum[SN_FA_MT][2];
  #pragma unroll
  for (int m = 0; m < SN_FA_MT; ++m) {
    #pragma unroll
    for (int n = 0; n < SN_FA_D / 8; ++n) o[m][n][0] = o[m][n][1] = o[m][n][2] = o[m][n][3] = 0.0f;
    mx[m][0] = mx[m][1] = kNegInf;
    sum[m][0] = sum[m][1] = 0.0f;
  }
  int kend = S;
#if SN_FA_CAUSAL
  if (kend > (int)rb * SN_FA_BM + SN_FA_BM) kend = (int)rb * SN_FA_BM + SN_FA_BM;  // row r sees keys [0, r]
#endif
  // ldmatrix row addresses of this lane: matrix l / 8, its row l % 8.
  const int lm = lane >> 3, lr = lane & 7;
  auto load_tile = [&](int kb, int buf) {
    #pragma unroll
    for (int idx = tid; idx < SN_FA_BN * SN_FA_D / 8; idx += 128) {
      int r = idx / (SN_FA_D / 8), c = idx % (SN_FA_D / 8) * 8;
      bool in = kb + r < S;
      long long key = in ? kb + r : 0;
      sn_fa_cp16(kbuf + (buf * SN_FA_BN + r) * SN_FA_S + c, K + key * p.kr + c, in);
      sn_fa_cp16(vbuf + (buf * SN_FA_BN + r) * SN_FA_S + c, V + key * p.vr + c, in);
    }
    sn_fa_commit();
  };
  if (kend > 0) load_tile(0, 0);
  for (int kb = 0, buf = 0; kb < kend; kb += SN_FA_BN, buf ^= 1) {
    if (kb + SN_FA_BN < kend) {
      load_tile(kb + SN_FA_BN, buf ^ 1);  // its buffer was last read before the barrier that ended that tile
      sn_fa_wait<1>();
    } else {
      sn_fa_wait<0>();
    }
    __syncthreads();  // this tile is in shared memory for every thread
    const sn_fa_t* ks = kbuf + buf * SN_FA_BN * SN_FA_S;
    const sn_fa_t* vs = vbuf + buf * SN_FA_BN * SN_FA_S;
    float s[SN_FA_MT][SN_FA_BN / 8][4];
    #pragma unroll
    for (int m = 0; m < SN_FA_MT; ++m)
      #pragma unroll
      for (int j = 0; j < SN_FA_BN / 8; ++j) s[m][j][0] = s[m][j][1] = s[m][j][2] = s[m][j][3] = 0.0f;
    #pragma unroll
    for (int kk = 0; kk < SN_FA_D / 16; ++kk)
      #pragma unroll
      for (int j = 0; j < SN_FA_BN / 8; j += 2) {
        // B fragments of key tiles j and j + 1: matrices (keys of j + lm / 2, dims kk * 16 + (lm % 2) * 8).
        unsigned b[4];
        sn_fa_ldsm<false>(b, ks + ((j + (lm >> 1)) * 8 + lr) * SN_FA_S + kk * 16 + (lm & 1) * 8);
        #pragma unroll
        for (int m = 0; m < SN_FA_MT; ++m) {
          sn_fa_mma(s[m][j], qa[m][kk], b);
          sn_fa_mma(s[m][j + 1], qa[m][kk], b + 2);
        }
      }
    #pragma unroll
    for (int m = 0; m < SN_FA_MT; ++m) {
      // Scale, causality, mask; then the tile's row maxima (over the 4 lanes that share a row).
      float tmax[2] = {kNegInf, kNegInf};
      #pragma unroll
      for (int j = 0; j < SN_FA_BN / 8; ++j)
        #pragma unroll
        for (int e = 0; e < 4; ++e) {
          int r = row[m][e >> 1], col = kb + j * 8 + t * 2 + (e & 1);
          float x = s[m][j][e] * p.scale_log2;
          bool out = col >= S;
#if SN_FA_CAUSAL
          out = out || col > r;
#endif
#if SN_FA_MASK == 1
          if (!out && r < L) out = !((const bool*)p.mask)[r * p.mr + col * p.mc + i0 * p.m0 + i1 * p.m1];
#elif SN_FA_MASK == 2
          if (!out && r < L)
            x += 1.4426950408889634f *
                 sn_fa_load(((const sn_fa_t*)p.mask)[r * p.mr + col * p.mc + i0 * p.m0 + i1 * p.m1]);
#endif
          x = out ? kNegInf : x;
          s[m][j][e] = x;
          tmax[e >> 1] = fmaxf(tmax[e >> 1], x);
        }
      float shift[2];
      #pragma unroll
      for (int h = 0; h < 2; ++h) {
        tmax[h] = fmaxf(tmax[h], __shfl_xor_sync(0xffffffffu, tmax[h], 1));
        tmax[h] = fmaxf(tmax[h], __shfl_xor_sync(0xffffffffu, tmax[h], 2));
        float mnew = fmaxf(mx[m][h], tmax[h]);
        shift[h] = mnew == kNegInf ? 0.0f : mnew;  // every key so far masked: exp2(-inf - 0) = 0, never NaN
        float alpha = sn_fa_exp2(mx[m][h] - shift[h]);
        mx[m][h] = mnew;
        sum[m][h] *= alpha;
        #pragma unroll
        for (int n = 0; n < SN_FA_D / 8; ++n) o[m][n][2 * h] *= alpha, o[m][n][2 * h + 1] *= alpha;
      }
      #pragma unroll
      for (int j = 0; j < SN_FA_BN / 8; ++j)
        #pragma unroll
        for (int e = 0; e < 4; ++e) {
          float pr = sn_fa_exp2(s[m][j][e] - shift[e >> 1]);
          s[m][j][e] = pr;
          sum[m][e >> 1] += pr;  // this lane's part of the row sum; the 4 lanes' parts are added at the end
        }
    }
    #pragma unroll
    for (int kk = 0; kk < SN_FA_BN / 16; ++kk) {
      unsigned pa[SN_FA_MT][4];
      #pragma unroll
      for (int m = 0; m < SN_FA_MT; ++m) {
        pa[m][0] = sn_fa_pack(s[m][2 * kk][0], s[m][2 * kk][1]);
        pa[m][1] = sn_fa_pack(s[m][2 * kk][2], s[m][2 * kk][3]);
        pa[m][2] = sn_fa_pack(s[m][2 * kk + 1][0], s[m][2 * kk + 1][1]);
        pa[m][3] = sn_fa_pack(s[m][2 * kk + 1][2], s[m][2 * kk + 1][3]);
      }
      #pragma unroll
      for (int n = 0; n < SN_FA_D / 8; n += 2) {
        // B fragments of dim tiles n and n + 1 from V (keys x dims) transposed: matrices (keys kk * 16 +
        // (lm % 2) * 8, dims of n + lm / 2).
        unsigned b[4];
        sn_fa_ldsm<true>(b, vs + (kk * 16 + (lm & 1) * 8 + lr) * SN_FA_S + (n + (lm >> 1)) * 8);
        #pragma unroll
        for (int m = 0; m < SN_FA_MT; ++m) {
          sn_fa_mma(o[m][n], pa[m], b);
          sn_fa_mma(o[m][n + 1], pa[m], b + 2);
        }
      }
    }
    __syncthreads();  // the next iteration loads into this tile's buffer
  }
#if SN_FA_STATS
  const sn_fa_t* G = (const sn_fa_t*)p.dout + i0 * p.g0 + i1 * p.g1;
  (void)O;
#endif
  #pragma unroll
  for (int m = 0; m < SN_FA_MT; ++m)
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      float total = sum[m][h];
      total += __shfl_xor_sync(0xffffffffu, total, 1);
      total += __shfl_xor_sync(0xffffffffu, total, 2);
      const float inv = total > 0.0f ? 1.0f / total : 0.0f;
#if SN_FA_STATS
      // D from the output as stored (rounded), as the math path reads it; the 4 lanes of a row add their parts.
      float d = 0.0f;
      if (row[m][h] < L) {
        #pragma unroll
        for (int n = 0; n < SN_FA_D / 8; ++n) {
          unsigned ov = sn_fa_pack(o[m][n][2 * h] * inv, o[m][n][2 * h + 1] * inv);
          unsigned gv = *(const sn_fa_w*)(G + row[m][h] * p.grow + n * 8 + t * 2);
          d += sn_fa_load((sn_fa_t)(ov & 0xffffu)) * sn_fa_load((sn_fa_t)(gv & 0xffffu)) +
               sn_fa_load((sn_fa_t)(ov >> 16)) * sn_fa_load((sn_fa_t)(gv >> 16));
        }
      }
      d += __shfl_xor_sync(0xffffffffu, d, 1);
      d += __shfl_xor_sync(0xffffffffu, d, 2);
      if (row[m][h] < L && t == 0) {
        const long long at = item * p.L + row[m][h];
        // A row with every key masked has no probabilities: +inf makes each exp2(x - lse) zero.
        p.lse[at] = total > 0.0f ? mx[m][h] + log2f(total) : sn_from_bits(0x7f800000u);
        p.delta[at] = d;
      }
#else
      if (row[m][h] >= L) continue;
      #pragma unroll
      for (int n = 0; n < SN_FA_D / 8; ++n)
        *(sn_fa_w*)(O + row[m][h] * p.orow + n * 8 + t * 2) =
            sn_fa_pack(o[m][n][2 * h] * inv, o[m][n][2 * h + 1] * inv);
#endif
    }
}
#ifdef SINTER_CUDA_SIM
extern "C" void SN_FA_SIM_NAME(void** p) { SN_FA_NAME(*(const sn_fa_params*)p[0]); }
#endif
)FA";

// The backward (FlashAttention-2's, in two kernels without atomics), given the forward's row statistics lse and
// D (the stats variant above). Both use 4 warps of 16 rows and stream tiles of SN_FB_BN rows of the other side
// through double-buffered shared memory, as the forward streams K and V.
//   dq kernel, per 64 query rows: over key tiles, S = Q K^T, P = exp2(S * scale_log2 - lse), dP = dO V^T,
//     dS = P (dP - D), dQ += dS K; dQ *= scale.
//   dkv kernel, per 64 key rows: over query tiles, S^T = K Q^T, P^T likewise, dV += P^T dO, dP^T = V dO^T,
//     dS^T = P^T (dP^T - D), dK += dS^T Q; dK *= scale.
// P and dS are rounded to the input dtype for their products, as the forward rounds P.
constexpr char kBackward[] = R"FA(
struct sn_fb_params {
  const void* q; const void* k; const void* v; const void* dout;
  void* dq; void* dk; void* dv;
  const float* lse; const float* delta;  // [items, L]
  long long n1, L, S, row_blocks;
  long long q0, q1, qr, k0, k1, kr, v0, v1, vr, g0, g1, gr;
  long long dq0, dq1, dqr, dk0, dk1, dkr, dv0, dv1, dvr;
  float scale_log2, scale;
};
#define SN_FB_S (SN_FA_D + 8)

// A 16-row A fragment set (rows r0 and r0 + 8 of this lane) of a [rows, SN_FA_D] operand, zeros past `limit`.
SN_INLINE void sn_fb_rows(unsigned (*a)[4], const sn_fa_t* base, long long stride, int r0, int limit, int t) {
  #pragma unroll
  for (int kk = 0; kk < SN_FA_D / 16; ++kk) {
    int c = kk * 16 + t * 2;
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      int r = r0 + 8 * h;
      bool in = r < limit;
      a[kk][h] = in ? *(const sn_fa_w*)(base + r * stride + c) : 0u;
      a[kk][h + 2] = in ? *(const sn_fa_w*)(base + r * stride + c + 8) : 0u;
    }
  }
}

// acc[j] (16 x SN_FB_BN, as 8-column tiles) = a (16 x SN_FA_D) times the tile's rows (SN_FB_BN x SN_FA_D)^T.
SN_INLINE void sn_fb_scores(float (*acc)[4], unsigned (*a)[4], const sn_fa_t* tile, int lm, int lr) {
  #pragma unroll
  for (int j = 0; j < SN_FB_BN / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  #pragma unroll
  for (int kk = 0; kk < SN_FA_D / 16; ++kk)
    #pragma unroll
    for (int j = 0; j < SN_FB_BN / 8; j += 2) {
      unsigned b[4];
      sn_fa_ldsm<false>(b, tile + ((j + (lm >> 1)) * 8 + lr) * SN_FB_S + kk * 16 + (lm & 1) * 8);
      sn_fa_mma(acc[j], a[kk], b);
      sn_fa_mma(acc[j + 1], a[kk], b + 2);
    }
}

// out (16 x SN_FA_D) += p (16 x SN_FB_BN, accumulator tiles, rounded here) times the tile (SN_FB_BN x SN_FA_D).
SN_INLINE void sn_fb_apply(float (*out)[4], float (*p)[4], const sn_fa_t* tile, int lm, int lr) {
  #pragma unroll
  for (int kk = 0; kk < SN_FB_BN / 16; ++kk) {
    unsigned pa[4] = {sn_fa_pack(p[2 * kk][0], p[2 * kk][1]), sn_fa_pack(p[2 * kk][2], p[2 * kk][3]),
                      sn_fa_pack(p[2 * kk + 1][0], p[2 * kk + 1][1]), sn_fa_pack(p[2 * kk + 1][2], p[2 * kk + 1][3])};
    #pragma unroll
    for (int n = 0; n < SN_FA_D / 8; n += 2) {
      unsigned b[4];
      sn_fa_ldsm<true>(b, tile + (kk * 16 + (lm & 1) * 8 + lr) * SN_FB_S + (n + (lm >> 1)) * 8);
      sn_fa_mma(out[n], pa, b);
      sn_fa_mma(out[n + 1], pa, b + 2);
    }
  }
}

// Rows `r0` and r0 + 8 of a [rows, SN_FA_D] result, times `scale`, rounded, where below `limit`.
SN_INLINE void sn_fb_store(sn_fa_t* base, long long stride, float (*acc)[4], float scale, int r0, int limit, int t) {
  #pragma unroll
  for (int h = 0; h < 2; ++h) {
    int r = r0 + 8 * h;
    if (r >= limit) continue;
    #pragma unroll
    for (int n = 0; n < SN_FA_D / 8; ++n)
      *(sn_fa_w*)(base + r * stride + n * 8 + t * 2) = sn_fa_pack(acc[n][2 * h] * scale, acc[n][2 * h + 1] * scale);
  }
}

// Copies rows [r0, r0 + SN_FB_BN) of two [rows, SN_FA_D] operands into a tile buffer each (zeros past limit).
SN_INLINE void sn_fb_load2(sn_fa_t* abuf, const sn_fa_t* A, long long ar, sn_fa_t* bbuf, const sn_fa_t* B,
                           long long br, int r0, int limit, int tid) {
  #pragma unroll
  for (int idx = tid; idx < SN_FB_BN * SN_FA_D / 8; idx += 128) {
    int r = idx / (SN_FA_D / 8), c = idx % (SN_FA_D / 8) * 8;
    bool in = r0 + r < limit;
    long long at = in ? r0 + r : 0;
    sn_fa_cp16(abuf + r * SN_FB_S + c, A + at * ar + c, in);
    sn_fa_cp16(bbuf + r * SN_FB_S + c, B + at * br + c, in);
  }
  sn_fa_commit();
}

extern "C" __global__ void __launch_bounds__(128) SN_FB_DQ_NAME(const sn_fb_params p) {
  __shared__ __align__(16) sn_fa_t kbuf[2 * SN_FB_BN * SN_FB_S];
  __shared__ __align__(16) sn_fa_t vbuf[2 * SN_FB_BN * SN_FB_S];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int lm = lane >> 3, lr = lane & 7;
  const long long item = (long long)blockIdx.x / p.row_blocks;
  const long long rb = p.row_blocks - 1 - (long long)blockIdx.x % p.row_blocks;  // later rows (more keys) first
  const long long i0 = item / p.n1, i1 = item % p.n1;
  const sn_fa_t* K = (const sn_fa_t*)p.k + i0 * p.k0 + i1 * p.k1;
  const sn_fa_t* V = (const sn_fa_t*)p.v + i0 * p.v0 + i1 * p.v1;
  const int L = (int)p.L, S = (int)p.S;
  const int r0 = (int)rb * 64 + warp * 16 + g;  // this lane's rows r0 and r0 + 8
  unsigned qa[SN_FA_D / 16][4], ga[SN_FA_D / 16][4];
  sn_fb_rows(qa, (const sn_fa_t*)p.q + i0 * p.q0 + i1 * p.q1, p.qr, r0, L, t);
  sn_fb_rows(ga, (const sn_fa_t*)p.dout + i0 * p.g0 + i1 * p.g1, p.gr, r0, L, t);
  float lse[2], dl[2];
  #pragma unroll
  for (int h = 0; h < 2; ++h) {
    bool in = r0 + 8 * h < L;
    lse[h] = in ? p.lse[item * p.L + r0 + 8 * h] : 0.0f;
    dl[h] = in ? p.delta[item * p.L + r0 + 8 * h] : 0.0f;
  }
  float dq[SN_FA_D / 8][4];
  #pragma unroll
  for (int n = 0; n < SN_FA_D / 8; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;
  int kend = S;
#if SN_FA_CAUSAL
  if (kend > (int)rb * 64 + 64) kend = (int)rb * 64 + 64;
#endif
  if (kend > 0) sn_fb_load2(kbuf, K, p.kr, vbuf, V, p.vr, 0, S, tid);
  for (int kb = 0, buf = 0; kb < kend; kb += SN_FB_BN, buf ^= 1) {
    if (kb + SN_FB_BN < kend) {
      sn_fb_load2(kbuf + (buf ^ 1) * SN_FB_BN * SN_FB_S, K, p.kr, vbuf + (buf ^ 1) * SN_FB_BN * SN_FB_S, V, p.vr,
                  kb + SN_FB_BN, S, tid);
      sn_fa_wait<1>();
    } else {
      sn_fa_wait<0>();
    }
    __syncthreads();
    const sn_fa_t* ks = kbuf + buf * SN_FB_BN * SN_FB_S;
    const sn_fa_t* vs = vbuf + buf * SN_FB_BN * SN_FB_S;
    float s[SN_FB_BN / 8][4], dp[SN_FB_BN / 8][4];
    sn_fb_scores(s, qa, ks, lm, lr);
    sn_fb_scores(dp, ga, vs, lm, lr);
    #pragma unroll
    for (int j = 0; j < SN_FB_BN / 8; ++j)
      #pragma unroll
      for (int e = 0; e < 4; ++e) {
        int r = r0 + 8 * (e >> 1), col = kb + j * 8 + t * 2 + (e & 1);
        bool out = col >= S || r >= L;
#if SN_FA_CAUSAL
        out = out || col > r;
#endif
        float pr = out ? 0.0f : sn_fa_exp2(s[j][e] * p.scale_log2 - lse[e >> 1]);
        s[j][e] = pr * (dp[j][e] - dl[e >> 1]);
      }
    sn_fb_apply(dq, s, ks, lm, lr);
    __syncthreads();
  }
  sn_fb_store((sn_fa_t*)p.dq + i0 * p.dq0 + i1 * p.dq1, p.dqr, dq, p.scale, r0, L, t);
}

extern "C" __global__ void __launch_bounds__(128) SN_FB_DKV_NAME(const sn_fb_params p) {
  __shared__ __align__(16) sn_fa_t qbuf[2 * SN_FB_BN * SN_FB_S];
  __shared__ __align__(16) sn_fa_t gbuf[2 * SN_FB_BN * SN_FB_S];
  __shared__ float lse_s[2][SN_FB_BN], dl_s[2][SN_FB_BN];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int lm = lane >> 3, lr = lane & 7;
  const long long item = (long long)blockIdx.x / p.row_blocks;
  const long long rb = (long long)blockIdx.x % p.row_blocks;  // key blocks; under causality early ones see more
  const long long i0 = item / p.n1, i1 = item % p.n1;
  const sn_fa_t* Q = (const sn_fa_t*)p.q + i0 * p.q0 + i1 * p.q1;
  const sn_fa_t* G = (const sn_fa_t*)p.dout + i0 * p.g0 + i1 * p.g1;
  const int L = (int)p.L, S = (int)p.S;
  const int r0 = (int)rb * 64 + warp * 16 + g;  // this lane's keys r0 and r0 + 8
  unsigned ka[SN_FA_D / 16][4], va[SN_FA_D / 16][4];
  sn_fb_rows(ka, (const sn_fa_t*)p.k + i0 * p.k0 + i1 * p.k1, p.kr, r0, S, t);
  sn_fb_rows(va, (const sn_fa_t*)p.v + i0 * p.v0 + i1 * p.v1, p.vr, r0, S, t);
  float dk[SN_FA_D / 8][4], dv[SN_FA_D / 8][4];
  #pragma unroll
  for (int n = 0; n < SN_FA_D / 8; ++n) {
    dk[n][0] = dk[n][1] = dk[n][2] = dk[n][3] = 0.0f;
    dv[n][0] = dv[n][1] = dv[n][2] = dv[n][3] = 0.0f;
  }
  int qbegin = 0;
#if SN_FA_CAUSAL
  qbegin = (int)rb * 64 / SN_FB_BN * SN_FB_BN;  // query q sees key r only where r <= q
#endif
  auto load = [&](int qb, int buf) {
    for (int i = tid; i < SN_FB_BN; i += 128) {
      bool in = qb + i < L;
      lse_s[buf][i] = in ? p.lse[item * p.L + qb + i] : 0.0f;
      dl_s[buf][i] = in ? p.delta[item * p.L + qb + i] : 0.0f;
    }
    sn_fb_load2(qbuf + buf * SN_FB_BN * SN_FB_S, Q, p.qr, gbuf + buf * SN_FB_BN * SN_FB_S, G, p.gr, qb, L, tid);
  };
  if (qbegin < L) load(qbegin, 0);
  for (int qb = qbegin, buf = 0; qb < L; qb += SN_FB_BN, buf ^= 1) {
    if (qb + SN_FB_BN < L) {
      load(qb + SN_FB_BN, buf ^ 1);
      sn_fa_wait<1>();
    } else {
      sn_fa_wait<0>();
    }
    __syncthreads();
    const sn_fa_t* qs = qbuf + buf * SN_FB_BN * SN_FB_S;
    const sn_fa_t* gs = gbuf + buf * SN_FB_BN * SN_FB_S;
    float s[SN_FB_BN / 8][4], dp[SN_FB_BN / 8][4];
    sn_fb_scores(s, ka, qs, lm, lr);
    sn_fb_scores(dp, va, gs, lm, lr);
    #pragma unroll
    for (int j = 0; j < SN_FB_BN / 8; ++j)
      #pragma unroll
      for (int e = 0; e < 4; ++e) {
        int r = r0 + 8 * (e >> 1), c = j * 8 + t * 2 + (e & 1), col = qb + c;
        bool out = col >= L || r >= S;
#if SN_FA_CAUSAL
        out = out || r > col;
#endif
        float pr = out ? 0.0f : sn_fa_exp2(s[j][e] * p.scale_log2 - lse_s[buf][c]);
        s[j][e] = pr;
        dp[j][e] = pr * (dp[j][e] - dl_s[buf][c]);
      }
    sn_fb_apply(dv, s, gs, lm, lr);
    sn_fb_apply(dk, dp, qs, lm, lr);
    __syncthreads();
  }
  sn_fb_store((sn_fa_t*)p.dk + i0 * p.dk0 + i1 * p.dk1, p.dkr, dk, p.scale, r0, S, t);
  sn_fb_store((sn_fa_t*)p.dv + i0 * p.dv0 + i1 * p.dv1, p.dvr, dv, 1.0f, r0, S, t);
}
#ifdef SINTER_CUDA_SIM
extern "C" void SN_FB_DQ_SIM_NAME(void** p) { SN_FB_DQ_NAME(*(const sn_fb_params*)p[0]); }
extern "C" void SN_FB_DKV_SIM_NAME(void** p) { SN_FB_DKV_NAME(*(const sn_fb_params*)p[0]); }
#endif
)FA";

}  // namespace

std::string FlashVariant::name() const {
  return fmt::format("sn_flash_{}_d{}_m{}_c{}_t{}x{}{}", bf16 ? "bf16" : "f16", head_dim, static_cast<int>(mask),
                     causal ? 1 : 0, row_tiles, key_tile, stats ? "_stats" : "");
}

std::string FlashBackwardVariant::name() const {
  return fmt::format("sn_flash_bwd_{}_d{}_c{}", bf16 ? "bf16" : "f16", head_dim, causal ? 1 : 0);
}

std::string flash_attention_source(const FlashVariant& v) {
  SINTER_CHECK(v.head_dim % 16 == 0 && v.head_dim >= 16 && v.head_dim <= 128,
               "flash attention: head dim {} is not a multiple of 16 in [16, 128]", v.head_dim);
  SINTER_CHECK((v.row_tiles == 1 || v.row_tiles == 2) && (v.key_tile == 32 || v.key_tile == 64),
                "flash attention: {} row tiles per warp and {} keys per tile (1 or 2, 32 or 64)", v.row_tiles,
                v.key_tile);
  std::string n = v.name();
  return fmt::format("// {}: flash attention (codegen/cuda/flash_attention.cpp)\n#define SN_FA_NAME {}\n"
                     "#define SN_FA_SIM_NAME {}__sim\n#define SN_FA_BF16 {}\n#define SN_FA_D {}\n"
                     "#define SN_FA_MASK {}\n#define SN_FA_CAUSAL {}\n#define SN_FA_MT {}\n#define SN_FA_BN {}\n"
                     "#define SN_FA_STATS {}\n",
                     n, n, n, v.bf16 ? 1 : 0, v.head_dim, static_cast<int>(v.mask), v.causal ? 1 : 0, v.row_tiles,
                     v.key_tile, v.stats ? 1 : 0) +
         kPrelude + kForward;
}

std::string flash_backward_source(const FlashBackwardVariant& v) {
  SINTER_CHECK(v.head_dim % 16 == 0 && v.head_dim >= 16 && v.head_dim <= kFlashBackwardMaxHeadDim,
               "flash attention backward: head dim {} is not a multiple of 16 in [16, {}]", v.head_dim,
               kFlashBackwardMaxHeadDim);
  std::string n = v.name();
  return fmt::format("// {}: flash attention backward (codegen/cuda/flash_attention.cpp)\n#define SN_FB_DQ_NAME {}_dq\n"
                     "#define SN_FB_DKV_NAME {}_dkv\n#define SN_FB_DQ_SIM_NAME {}_dq__sim\n"
                     "#define SN_FB_DKV_SIM_NAME {}_dkv__sim\n#define SN_FA_BF16 {}\n#define SN_FA_D {}\n"
                     "#define SN_FA_CAUSAL {}\n#define SN_FB_BN {}\n",
                     n, n, n, n, n, v.bf16 ? 1 : 0, v.head_dim, v.causal ? 1 : 0, FlashBackwardVariant::kTile) +
         kPrelude + kBackward;
}

}  // namespace sinter::codegen::cuda
