// Elementwise loops over broadcast operands (a small TensorIterator). Dims are reordered to the output's memory
// order and coalesced; each thread walks its range in chunks of kChunk elements. An operand whose chunk is
// contiguous and already of the compute type is used in place; any other (strided, broadcast, another dtype, a
// constant) is gathered and converted into a small buffer. So an op's functor is instantiated once per compute
// type (float for float32/float16/bfloat16, double, int64, bool) and its inner loop is one that g++ vectorizes.
#pragma once
#include <bit>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/kernel_util.h"
#include "sinter/tensor.h"

// The library is built for baseline x86-64 (SSE2). Each op's inner loop is also compiled for AVX2+FMA and picked
// at load time, which matters for compute-heavy functors (exp, tanh, erf polynomials): twice the lanes.
// An AVX-512 clone (x86-64-v4) too: 16 lanes and 32 registers halve the cost of the polynomial functors again
// (gelu 0.62 -> 0.33 ns/element in L1 on a Zen 4 core, where 512-bit operations are even split in two halves).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SINTER_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SINTER_VECTOR_CLONES
#endif

namespace sinter::loops {

inline constexpr int kMaxOperands = 5;  // one output and up to four inputs
inline constexpr int64_t kChunk = 256;  // elements per chunk: buffers stay in L1, inner loops have a fixed count
inline constexpr int64_t kWideChunk = 16384;  // elements per chunk for array kernels on operands in place

// Outputs of at least this many bytes are written with streaming (non-temporal) stores, which go around the
// caches: an ordinary store first reads the line it writes (read-for-ownership), so a kernel moving 2 arrays'
// worth of data moves 3 through memory. Above about one socket's last-level cache the output cannot stay
// cached for its consumer anyway; smaller outputs keep ordinary stores so the next op finds them in cache.
inline constexpr int64_t kStreamMinBytes = int64_t{32} << 20;
// Whether an output of `bytes` is streamed: at least kStreamMinBytes, unless SINTER_STREAM_STORES=0 (read once)
// turns streaming off, to compare both on a machine at hand.
bool stream_output(int64_t bytes);
// Copies `bytes` from src to dst with streaming stores for dst's whole aligned 16-byte pieces (ordinary stores
// for an unaligned head and tail). A thread that streamed calls stream_fence() before its results are used.
void stream_copy(void* dst, const void* src, int64_t bytes);
// dst[i] = src[i] * k for i < n, streamed as stream_copy (softmax's last pass and its copy out in one).
void stream_scale(float* dst, const float* src, int64_t n, float k);
void stream_fence();

// n elements of T in `storage` (resized to fit), starting half a page after `near` modulo 4096: a row buffer
// that a kernel fills from rows at `near` (or writes out to them) without its loads meeting its own recent stores
// in the 12 address bits the store-to-load check compares (the CPU allocator says more).
template <class T>
T* staggered_buffer(std::vector<T>& storage, const void* near, int64_t n) {
  constexpr int64_t kPage = 4096;
  storage.resize(static_cast<size_t>(n) + kPage / sizeof(T));
  const auto base = reinterpret_cast<uintptr_t>(storage.data()), want = reinterpret_cast<uintptr_t>(near) + kPage / 2;
  const uintptr_t skip = (want - base) & (kPage - 1);
  return storage.data() + skip / sizeof(T);  // near and storage are both T-aligned, so skip is a multiple of it
}

// The dtype of a compute type (float, double, int64_t, bool).
template <class T>
constexpr DType compute_dtype() {
  if constexpr (std::is_same_v<T, float>) return kFloat32;
  else if constexpr (std::is_same_v<T, double>) return kFloat64;
  else if constexpr (std::is_same_v<T, int64_t>) return kInt64;
  else {
    static_assert(std::is_same_v<T, bool>, "compute types are float, double, int64_t and bool");
    return kBool;
  }
}

// Calls f.template operator()<C>() with C the compute type of `dtype`.
template <class F>
decltype(auto) visit_compute(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16: return f.template operator()<float>();
    case DType::kFloat64: return f.template operator()<double>();
    case DType::kBool: return f.template operator()<bool>();
    default: return f.template operator()<int64_t>();
  }
}
// The same for floating dtypes only (callers have checked the dtype in the shape rule).
template <class F>
decltype(auto) visit_compute_floating(DType dtype, F&& f) {
  if (dtype == kFloat64) return f.template operator()<double>();
  SINTER_INTERNAL_ASSERT(is_floating(dtype), "floating compute expected, got {}", dtype_name(dtype));
  return f.template operator()<float>();
}

// Converts n elements between any two dtypes, each side strided in bytes (a stride of 0 repeats one element).
void convert(const char* src, int64_t src_stride, DType src_dtype, char* dst, int64_t dst_stride, DType dst_dtype,
             int64_t n);

// `in` as an input of an op that writes `out`: itself unless it overlaps `out` without being elementwise the same
// memory (x.add_(x) is fine, x.add_(x.t()) or x.add_(x[0]) is not), in which case a copy.
Tensor unalias_input(const Tensor& out, const Tensor& in);

using ChunkFn = void (*)(const void* ctx, char* const* in, char* out, int64_t n);

// bfloat16 bits -> float: exact, the bits moved to the high half (a shift in a vector register).
inline float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
// float -> bfloat16 bits, round to nearest even, NaN kept quiet: BFloat16::from_float without its branch (the
// NaN test is a mask), so that loops over it vectorize.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t quiet = (x >> 16) | 0x40u;
  const uint32_t m = 0u - static_cast<uint32_t>((x & 0x7fffffffu) > 0x7f800000u);
  return static_cast<uint16_t>((quiet & m) | (rounded & ~m));
}

class Loop {
 public:
  // `out` is written; it may be a strided view (in-place ops).
  explicit Loop(const Tensor& out);
  // A tensor input whose sizes broadcast to out's. The loop holds a reference to it.
  Loop& input(const Tensor& t);
  // A constant input (a Scalar argument), converted to its slot's compute type when the loop runs.
  Loop& constant(const Scalar& s);

  // Runs out[i] = f(in0[i], in1[i], ...), computing in R (result) and A... (one type per input), each a compute
  // type; inputs and output are converted from and to their dtypes as needed.
  template <class R, class... A, class F>
  void run(const F& f, int64_t grain = kGrainElementwise) {
    static_assert(sizeof...(A) + 1 <= kMaxOperands);
    SINTER_INTERNAL_ASSERT(static_cast<int>(sizeof...(A)) + 1 == nops_, "loop arity mismatch");
    const DType compute[] = {compute_dtype<R>(), compute_dtype<A>()...};
    ChunkFn bf16 = nullptr, stream = nullptr;
    if constexpr (std::is_same_v<R, float> && (std::is_same_v<A, float> && ...)) {
      bf16 = &call_chunk_bf16<F, A...>;
      stream = &call_chunk_stream<F, A...>;
    }
    run_chunks(compute, &call_chunk<F, R, A...>, bf16, &f, grain, stream, /*fn_any_n=*/false);
  }

  // Runs out[i] = k(in0[i]) for a loop with one input, k a hand-vectorized kernel over float arrays
  // (vec_math.h): operands are converted to and from float as for run<float, float>. A streamed output
  // (stream_output) is written by the kernel itself with streaming stores (its `stream` argument), not
  // computed into a buffer in L1 and copied out. `kb`, the same kernel over bfloat16 arrays, serves
  // all-contiguous bfloat16 operands in place (as run's functor does).
  using FloatArrayFn = void (*)(const float* x, float* y, int64_t n, bool stream);
  using Bf16ArrayFn = void (*)(const uint16_t* x, uint16_t* y, int64_t n);
  void run_float(FloatArrayFn k, Bf16ArrayFn kb, int64_t grain = kGrainElementwise);

  int64_t numel() const { return numel_; }  // valid once run() has been called

 private:
  template <class F, class R, class... A>
  static void call_chunk(const void* ctx, char* const* in, char* out, int64_t n) {
    call_indexed<F, R, A...>(*static_cast<const F*>(ctx), in, reinterpret_cast<R*>(out), n,
                             std::index_sequence_for<A...>{});
  }
  template <class F, class R, class... A, size_t... I>
  static void call_indexed(const F& f, char* const* in, R* out, int64_t n, std::index_sequence<I...>) {
    chunk_loop<R, A...>(f, out, n, reinterpret_cast<const A*>(in[I])...);
  }
  // A float functor over float operands in place, its output streamed: kChunk results at a time into a block in
  // L1 (the chunk loop's fixed trip count keeps it vectorized), then out with streaming stores; run_chunks hands
  // it long chunks, so its per-chunk bookkeeping is paid once per kWideChunk elements, not per kChunk.
  template <class F, class... A>
  static void call_chunk_stream(const void* ctx, char* const* in, char* out, int64_t n) {
    call_indexed_stream<F, A...>(*static_cast<const F*>(ctx), in, reinterpret_cast<float*>(out), n,
                                 std::index_sequence_for<A...>{});
  }
  template <class F, class... A, size_t... I>
  static void call_indexed_stream(const F& f, char* const* in, float* out, int64_t n, std::index_sequence<I...>) {
    chunk_loop_stream(f, out, n, reinterpret_cast<const float*>(in[I])...);
  }
  template <class F, class... P>
  SINTER_VECTOR_CLONES static void chunk_loop_stream(const F& f, float* out, int64_t n, const P*... in) {
    alignas(64) float block[kChunk];
    int64_t b = 0;
    for (; b + kChunk <= n; b += kChunk) {
#pragma GCC ivdep
      for (int64_t k = 0; k < kChunk; ++k) block[k] = f(in[b + k]...);
      stream_copy(out + b, block, kChunk * 4);
    }
    for (; b < n; ++b) out[b] = f(in[b]...);
  }
  // A float functor over bfloat16 operands read and written in place: the conversions are a shift and a
  // rounding in vector registers, no float buffers (which, besides the extra passes through L1, ran at a third
  // of the speed from memory when the operands' addresses were 64 MB + 4 KB apart, as consecutive
  // allocations are).
  template <class F, class... A>
  static void call_chunk_bf16(const void* ctx, char* const* in, char* out, int64_t n) {
    call_indexed_bf16<F, A...>(*static_cast<const F*>(ctx), in, reinterpret_cast<uint16_t*>(out), n,
                               std::index_sequence_for<A...>{});
  }
  template <class F, class... A, size_t... I>
  static void call_indexed_bf16(const F& f, char* const* in, uint16_t* out, int64_t n, std::index_sequence<I...>) {
    chunk_loop_bf16(f, out, n, reinterpret_cast<const uint16_t*>(in[I])...);
  }
  template <class F, class... P>
  SINTER_VECTOR_CLONES static void chunk_loop_bf16(const F& f, uint16_t* out, int64_t n, const P*... in) {
    if (n == kChunk) {
#pragma GCC ivdep
      for (int64_t k = 0; k < kChunk; ++k) out[k] = f32_to_bf16(f(bf16_to_f32(in[k])...));
    } else {
      for (int64_t k = 0; k < n; ++k) out[k] = f32_to_bf16(f(bf16_to_f32(in[k])...));
    }
  }
  // The one inner loop per functor. A full chunk has a constant trip count, which g++ -O2 vectorizes (its cheap
  // cost model refuses loops that need a scalar epilogue). An output may be exactly one of the inputs (x.add_(x)):
  // each element is read before it is written, so ivdep holds.
  template <class R, class... A, class F>
  SINTER_VECTOR_CLONES static void chunk_loop(const F& f, R* out, int64_t n, const A*... in) {
    if (n == kChunk) {
#pragma GCC ivdep
      for (int64_t k = 0; k < kChunk; ++k) out[k] = f(in[k]...);
    } else {
      for (int64_t k = 0; k < n; ++k) out[k] = f(in[k]...);
    }
  }

  // `bf16` (may be null): the functor over bfloat16 operands (call_chunk_bf16), used when the output and every
  // input are contiguous bfloat16 tensors. `stream_fn` (may be null): fn writing its output with streaming
  // stores, called for a streamed output of the compute type at a 64-byte-aligned address. `fn_any_n`: fn runs
  // at full speed on any count (an array kernel), so unstreamed contiguous operands get long chunks too.
  void run_chunks(const DType* compute, ChunkFn fn, ChunkFn bf16, const void* ctx, int64_t grain,
                  ChunkFn stream_fn = nullptr, bool fn_any_n = true);
  void prepare();

  struct Operand {
    Tensor tensor;  // keeps the data alive (an input may be a temporary copy)
    char* data = nullptr;
    DType dtype = kFloat32;
    std::vector<int64_t> strides;  // bytes, one per output dim (logical order until prepare())
    bool is_constant = false;
    Scalar constant;
  };
  std::vector<int64_t> out_sizes_;  // logical sizes of out
  std::vector<int64_t> sizes_;      // after prepare(): innermost first, coalesced
  Operand ops_[kMaxOperands];
  int nops_ = 0;
  int64_t numel_ = 0;
  bool prepared_ = false;
  alignas(8) char constants_[kMaxOperands][8] = {};
};

}  // namespace sinter::loops
