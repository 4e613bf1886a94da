// sinter's flash-attention kernel for CUDA: softmax(q k^T * scale + mask) @ v in one pass over the keys, the
// scores never leaving registers (FlashAttention-2's schedule). The source is fixed CUDA C++ specialised by a few
// macros (dtype, head dim, mask kind, causal), compiled by NVRTC like generated kernels, and by the host compiler
// over the simulator's prelude, where the tensor-core instruction it uses (mma.sync m16n8k16) is emulated lane by
// lane through the warp's shared scratch.
//
// Each block of 128 threads (4 warps) owns 64 x row_tiles query rows of one batch item, each warp 16 x row_tiles
// of them. Tiles of key_tile keys of K and V are double-buffered in shared memory (cp.async loads the next while
// this one is used); a warp loads their fragments with ldmatrix (V's transposed), computes its scores with
// mma.sync, applies scale, causality and the mask, updates the running row maximum and sum (online softmax, base
// 2), and multiplies the probabilities, rounded to the input dtype, by V into its float accumulators. Rows whose
// every key is masked give zeros (PyTorch's _safe_softmax), as the CPU kernel does.
#pragma once
#include <cstdint>
#include <string>

namespace sinter::codegen::cuda {

enum class FlashMask : int { kNone = 0, kBool = 1, kAdditive = 2 };

struct FlashVariant {
  bool bf16 = true;  // else float16
  int head_dim = 64; // 16, 32, 64, 96 or 128 (a multiple of 16, at most 128)
  FlashMask mask = FlashMask::kNone;
  bool causal = false;
  int row_tiles = 1;  // 16-row tiles per warp (1 or 2: two share every K and V fragment, in twice the registers)
  int key_tile = 64;  // keys per tile (32 or 64)
  bool stats = false; // writes the backward's row statistics (FlashParams::lse, delta) instead of the output
  std::string name() const;  // "sn_flash_bf16_d64_m0_c1_t1x64"
  int rows() const { return 64 * row_tiles; }  // query rows per block
  // Static shared memory: two tiles each of K and V, rows padded by 8 elements; at most 48 KiB.
  int shared_bytes() const { return 2 * 2 * key_tile * (head_dim + 8) * 2; }
};

// The kernel's one parameter, passed by value; the same layout on the host and the device. The batch is at most
// two dims (n0 x n1, item i = i0 * n1 + i1), each operand walked by its own strides (0 where it broadcasts); the
// innermost stride of q, k, v and out is 1; under grouped-query attention dim 1 is the heads. Mask strides are in
// elements of the mask.
struct FlashParams {
  const void* q;
  const void* k;
  const void* v;
  const void* mask;
  void* out;
  int64_t n1, L, S, row_blocks;
  int64_t group;  // query heads per key/value head (enable_gqa): k and v take batch index i1 / group
  int64_t q0, q1, qr;
  int64_t k0, k1, kr;
  int64_t v0, v1, vr;
  int64_t m0, m1, mr, mc;
  int64_t o0, o1, orow;
  float scale_log2;  // scale * log2(e): the scores are exponentiated with exp2
  float scale;
  // The stats variant: per row (item * L + row), the log-sum-exp of the scaled scores in base 2 and
  // D = sum(dout * out) over the head dim, with dout walked like q.
  float* lse;
  float* delta;
  const void* dout;
  int64_t g0, g1, grow;
};

inline constexpr int kFlashThreads = 128; // threads per block

// The backward's two kernels (NAME_dq, NAME_dkv; no mask, no grouped heads), given the stats variant's lse and
// delta: a block of kFlashThreads per 64 query rows (dq) or 64 key rows (dk and dv).
inline constexpr int kFlashBackwardMaxHeadDim = 64;  // above, its accumulators would not fit in registers
struct FlashBackwardVariant {
  static constexpr int kTile = 64;  // rows of the streamed side per tile
  bool bf16 = true;
  int head_dim = 64;
  bool causal = false;
  std::string name() const;  // "sn_flash_bwd_bf16_d64_c1"
};

// One parameter for both backward kernels, by value; the same layout on the host and the device. Strides in
// elements; dout, dq, dk and dv are walked by their own.
struct FlashBackwardParams {
  const void* q;
  const void* k;
  const void* v;
  const void* dout;
  void* dq;
  void* dk;
  void* dv;
  const float* lse;
  const float* delta;
  int64_t n1, L, S, row_blocks;
  int64_t q0, q1, qr, k0, k1, kr, v0, v1, vr, g0, g1, gr;
  int64_t dq0, dq1, dqr, dk0, dk1, dkr, dv0, dv1, dvr;
  float scale_log2, scale;
};

// The kernel's source (without the unit header): `extern "C" __global__ void NAME(const FlashParams p)` and, for
// the simulator, `NAME__sim`.
std::string flash_attention_source(const FlashVariant& v);
// The backward's source: NAME_dq and NAME_dkv, and for the simulator NAME_dq__sim and NAME_dkv__sim.
std::string flash_backward_source(const FlashBackwardVariant& v);

}  // namespace sinter::codegen::cuda
