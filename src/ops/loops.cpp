// The non-template half of the elementwise loop utility: operand geometry (broadcast strides, dim order,
// coalescing), the chunked driver that feeds each op's inner loop, dtype conversion and unaliasing of inputs.
#include "ops/loops.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "ops/copy.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace sinter::loops {

namespace {

SINTER_VECTOR_CLONES void float_to_bf16(const float* s, uint16_t* d, int64_t n) {
  if (n == kChunk) {
    for (int64_t k = 0; k < kChunk; ++k) d[k] = f32_to_bf16(s[k]);
  } else {
    for (int64_t k = 0; k < n; ++k) d[k] = f32_to_bf16(s[k]);
  }
}

// bfloat16 -> float is exact: the bits moved to the high half. Through integers so that the loop vectorizes
// (BFloat16's conversion operator does not); bf16 inputs are read through here.
SINTER_VECTOR_CLONES void bf16_to_float(const uint16_t* s, float* d, int64_t n) {
  if (n == kChunk) {
    for (int64_t k = 0; k < kChunk; ++k) d[k] = bf16_to_f32(s[k]);
  } else {
    for (int64_t k = 0; k < n; ++k) d[k] = bf16_to_f32(s[k]);
  }
}

template <class To, class From>
void convert_typed(const char* src, int64_t ss, char* dst, int64_t ds, int64_t n) {
  if constexpr (std::is_same_v<To, BFloat16> && std::is_same_v<From, float>) {
    if (ss == 4 && ds == 2)
      return float_to_bf16(reinterpret_cast<const float*>(src), reinterpret_cast<uint16_t*>(dst), n);
  }
  if constexpr (std::is_same_v<To, float> && std::is_same_v<From, BFloat16>) {
    if (ss == 2 && ds == 4)
      return bf16_to_float(reinterpret_cast<const uint16_t*>(src), reinterpret_cast<float*>(dst), n);
  }
  if (ss == static_cast<int64_t>(sizeof(From)) && ds == static_cast<int64_t>(sizeof(To))) {
    const From* s = reinterpret_cast<const From*>(src);
    To* d = reinterpret_cast<To*>(dst);
    if (n == kChunk) {  // a fixed count, so the loop vectorizes at -O2
      for (int64_t k = 0; k < kChunk; ++k) d[k] = cast_to<To>(s[k]);
    } else {
      for (int64_t k = 0; k < n; ++k) d[k] = cast_to<To>(s[k]);
    }
    return;
  }
  if (ss == 0) {
    To v = cast_to<To>(*reinterpret_cast<const From*>(src));
    for (int64_t k = 0; k < n; ++k) *reinterpret_cast<To*>(dst + k * ds) = v;
    return;
  }
  for (int64_t k = 0; k < n; ++k)
    *reinterpret_cast<To*>(dst + k * ds) = cast_to<To>(*reinterpret_cast<const From*>(src + k * ss));
}

// A dense copy of `in` (contiguous), made with the loop itself so that it needs no other op.
Tensor dense_copy(const Tensor& in) {
  TensorMeta m;
  m.sizes = in.sizes();
  m.strides = contiguous_strides(in.sizes());
  m.dtype = in.dtype();
  m.device = in.device();
  Tensor c = empty_from_meta(m);
  Loop loop(c);
  loop.input(in);
  visit_compute(in.dtype(), [&]<class C>() { loop.run<C, C>([](C v) { return v; }); });
  return c;
}

}  // namespace

void convert(const char* src, int64_t src_stride, DType src_dtype, char* dst, int64_t dst_stride, DType dst_dtype,
             int64_t n) {
  visit_dtype(dst_dtype, [&]<class To>() {
    visit_dtype(src_dtype, [&]<class From>() { convert_typed<To, From>(src, src_stride, dst, dst_stride, n); });
  });
}

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
// 64-byte streaming stores, one per line: a quarter of the instructions of SSE2's 16-byte ones, which counts
// where a kernel's own work per element is small (the copy after a chunk computed in L1 took a fifth of
// sigmoid's time). dst is 64-byte aligned, bytes a multiple of 64.
__attribute__((target("avx512f"))) void stream_lines_avx512(char* d, const char* s, int64_t bytes) {
  for (; bytes >= 64; bytes -= 64, d += 64, s += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d), _mm512_loadu_si512(s));
}
__attribute__((target("avx512f"))) void stream_scale_avx512(float* d, const float* s, int64_t n, float k) {
  const __m512 kv = _mm512_set1_ps(k);
  for (; n >= 16; n -= 16, d += 16, s += 16) _mm512_stream_ps(d, _mm512_mul_ps(_mm512_loadu_ps(s), kv));
}
bool have_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}
#else
bool have_avx512() { return false; }
#endif

}  // namespace

void stream_copy(void* dst, const void* src, int64_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if defined(__SSE2__)
  // Whole 64-byte lines with AVX-512 where the CPU has it; else (and for 16-byte pieces of a head or tail)
  // SSE2 streaming stores, which every x86-64 has.
  const uintptr_t align = have_avx512() && bytes >= 128 ? 63 : 15;
  const int64_t head = std::min<int64_t>(bytes, static_cast<int64_t>((0 - reinterpret_cast<uintptr_t>(d)) & align));
  std::memcpy(d, s, static_cast<size_t>(head));
  d += head;
  s += head;
  bytes -= head;
#if defined(__x86_64__) && defined(__GNUC__)
  if (align == 63) {
    const int64_t body = bytes / 64 * 64;
    stream_lines_avx512(d, s, body);
    d += body;
    s += body;
    bytes -= body;
  }
#endif
  for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  for (; bytes >= 16; bytes -= 16, d += 16, s += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
#endif
  std::memcpy(d, s, static_cast<size_t>(bytes));
}

void stream_scale(float* dst, const float* src, int64_t n, float k) {
  // Ordinary stores up to dst's first 64-byte boundary and for the tail; the same product either way.
  int64_t head = std::min<int64_t>(n, static_cast<int64_t>(((0 - reinterpret_cast<uintptr_t>(dst)) & 63) / 4));
  if (reinterpret_cast<uintptr_t>(dst) % 4 != 0) head = n;  // not float-aligned: no streaming at all
  for (int64_t i = 0; i < head; ++i) dst[i] = src[i] * k;
  dst += head;
  src += head;
  n -= head;
#if defined(__x86_64__) && defined(__GNUC__)
  if (have_avx512()) {
    const int64_t body = n / 16 * 16;
    stream_scale_avx512(dst, src, body, k);
    dst += body;
    src += body;
    n -= body;
  }
#endif
#if defined(__SSE2__)
  const __m128 kv = _mm_set1_ps(k);
  for (; n >= 4; n -= 4, dst += 4, src += 4) _mm_stream_ps(dst, _mm_mul_ps(_mm_loadu_ps(src), kv));
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * k;
}

bool stream_output(int64_t bytes) {
  static const bool enabled = [] {
    const char* v = std::getenv("SINTER_STREAM_STORES");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return enabled && bytes >= kStreamMinBytes;
}

void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();  // streaming stores are weakly ordered: make them visible before the thread reports done
#endif
}

Tensor unalias_input(const Tensor& out, const Tensor& in) {
  if (!sinter::may_overlap(out, in)) return in;
  bool same = in.data_ptr() == out.data_ptr() && in.dtype() == out.dtype() && in.dim() <= out.dim();
  for (int64_t d = 0; same && d < out.dim(); ++d) {
    int64_t size = out.sizes()[d].hint();
    if (size <= 1) continue;
    int64_t id = d - (out.dim() - in.dim());
    same = id >= 0 && in.sizes()[id].hint() == size && in.strides()[id].hint() == out.strides()[d].hint();
  }
  return same ? in : dense_copy(in);
}

Loop::Loop(const Tensor& out) {
  out_sizes_ = out.sizes().hints();
  Operand& op = ops_[nops_++];
  op.data = static_cast<char*>(out.data_ptr());
  op.dtype = out.dtype();
  op.strides.resize(out_sizes_.size());
  for (size_t d = 0; d < out_sizes_.size(); ++d)
    op.strides[d] = out.strides()[d].hint() * static_cast<int64_t>(out.element_size());
}

Loop& Loop::input(const Tensor& t) {
  SINTER_INTERNAL_ASSERT(nops_ < kMaxOperands && !prepared_, "too many loop operands, or added after run()");
  const int64_t ndim = static_cast<int64_t>(out_sizes_.size()), lead = ndim - t.dim();
  SINTER_INTERNAL_ASSERT(lead >= 0, "loop input of rank {} does not broadcast to rank {}", t.dim(), ndim);
  Operand& op = ops_[nops_++];
  op.tensor = t;
  op.data = static_cast<char*>(t.data_ptr());
  op.dtype = t.dtype();
  op.strides.assign(ndim, 0);
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t size = t.sizes()[d].hint();
    if (size == out_sizes_[lead + d]) {
      op.strides[lead + d] = t.strides()[d].hint() * static_cast<int64_t>(t.element_size());
    } else {
      SINTER_INTERNAL_ASSERT(size == 1, "loop input size {} does not broadcast to {}", size, out_sizes_[lead + d]);
    }
  }
  return *this;
}

Loop& Loop::constant(const Scalar& s) {
  SINTER_INTERNAL_ASSERT(nops_ < kMaxOperands && !prepared_, "too many loop operands, or added after run()");
  Operand& op = ops_[nops_++];
  op.is_constant = true;
  op.constant = s;
  op.strides.assign(out_sizes_.size(), 0);
  return *this;
}

// Orders dims innermost first by the operands' strides (the output's first, as TensorIterator does), drops
// size-1 dims and merges dims that are contiguous with each other in every operand.
void Loop::prepare() {
  if (prepared_) return;  // run() may be called again on the same loop
  prepared_ = true;
  numel_ = 1;
  for (int64_t s : out_sizes_) numel_ *= s;
  std::vector<int> dims;
  for (int d = static_cast<int>(out_sizes_.size()) - 1; d >= 0; --d)
    if (out_sizes_[d] != 1) dims.push_back(d);
  auto goes_before = [&](int a, int b) {
    for (int i = 0; i < nops_; ++i) {
      int64_t sa = ops_[i].strides[a], sb = ops_[i].strides[b];
      if (sa == 0 || sb == 0 || sa == sb) continue;
      return sa < sb;
    }
    return false;
  };
  for (size_t i = 1; i < dims.size(); ++i)  // stable insertion sort: ranks are small
    for (size_t j = i; j > 0 && goes_before(dims[j], dims[j - 1]); --j) std::swap(dims[j], dims[j - 1]);

  sizes_.clear();
  std::vector<std::vector<int64_t>> strides(nops_);
  for (int d : dims) {
    bool merge = !sizes_.empty();
    for (int i = 0; merge && i < nops_; ++i) merge = ops_[i].strides[d] == strides[i].back() * sizes_.back();
    if (merge) {
      sizes_.back() *= out_sizes_[d];
      continue;
    }
    sizes_.push_back(out_sizes_[d]);
    for (int i = 0; i < nops_; ++i) strides[i].push_back(ops_[i].strides[d]);
  }
  if (sizes_.empty()) {  // one element (0-dim output, or all dims of size 1)
    sizes_.push_back(1);
    for (int i = 0; i < nops_; ++i) strides[i].push_back(0);
  }
  for (int i = 0; i < nops_; ++i) ops_[i].strides = std::move(strides[i]);
}

namespace {
struct ArrayKernels {
  Loop::FloatArrayFn f32;
  Loop::Bf16ArrayFn bf16;
};
template <bool kStream>
void call_float_array(const void* ctx, char* const* in, char* out, int64_t n) {
  static_cast<const ArrayKernels*>(ctx)->f32(reinterpret_cast<const float*>(in[0]), reinterpret_cast<float*>(out), n,
                                             kStream);
}
void call_bf16_array(const void* ctx, char* const* in, char* out, int64_t n) {
  static_cast<const ArrayKernels*>(ctx)->bf16(reinterpret_cast<const uint16_t*>(in[0]),
                                              reinterpret_cast<uint16_t*>(out), n);
}
}  // namespace

void Loop::run_float(FloatArrayFn k, Bf16ArrayFn kb, int64_t grain) {
  SINTER_INTERNAL_ASSERT(nops_ == 2, "run_float takes one input, the loop has {}", nops_ - 1);
  const DType compute[] = {kFloat32, kFloat32};
  const ArrayKernels ctx{k, kb};
  run_chunks(compute, &call_float_array<false>, kb ? &call_bf16_array : nullptr, &ctx, grain,
             &call_float_array<true>);
}

void Loop::run_chunks(const DType* compute, ChunkFn fn, ChunkFn bf16, const void* ctx, int64_t grain,
                      ChunkFn stream_fn, bool fn_any_n) {
  prepare();
  if (numel_ == 0) return;
  for (int i = 1; i < nops_; ++i) {
    Operand& op = ops_[i];
    if (!op.is_constant) continue;
    const Scalar& s = op.constant;
    if (s.is_floating()) {
      double v = s.to_double();
      convert(reinterpret_cast<const char*>(&v), 0, kFloat64, constants_[i], 0, compute[i], 1);
    } else {
      int64_t v = s.to_int();
      convert(reinterpret_cast<const char*>(&v), 0, kInt64, constants_[i], 0, compute[i], 1);
    }
    op.data = constants_[i];
    op.dtype = compute[i];
  }

  const int ndim = static_cast<int>(sizes_.size());
  const int64_t n0 = sizes_[0];
  // Chunks follow rows when rows are long; short rows are packed several to a chunk through the buffers.
  const bool row_chunks = ndim == 1 || n0 >= kChunk / 4;
  int64_t esize[kMaxOperands];
  bool all_zero[kMaxOperands];
  for (int i = 0; i < nops_; ++i) {
    esize[i] = static_cast<int64_t>(element_size(compute[i]));
    all_zero[i] = std::all_of(ops_[i].strides.begin(), ops_[i].strides.end(), [](int64_t s) { return s == 0; });
  }

  // A large contiguous output is computed into buf[0] (and converted into obuf) in L1, then streamed out.
  const Operand& out = ops_[0];
  const int64_t out_esize = static_cast<int64_t>(element_size(out.dtype));
  const bool stream = ndim == 1 && out.strides[0] == out_esize && stream_output(numel_ * out_esize);
  // Every operand a contiguous bfloat16 tensor: the functor reads and writes them in place (call_chunk_bf16).
  bool direct_bf16 = bf16 != nullptr && ndim == 1;
  for (int i = 0; direct_bf16 && i < nops_; ++i)
    direct_bf16 = !ops_[i].is_constant && ops_[i].dtype == kBFloat16 && ops_[i].strides[0] == 2;

  // An array kernel (run_float) whose operands are all contiguous in its compute dtype reads and writes them in
  // place: no buffers to keep in L1, so it takes long chunks (the per-chunk bookkeeping cost about a fifth of
  // sigmoid's time at 256 elements a chunk on the 16-core host, bench/results/rowpass-h200-*-s5.txt).
  // A functor's chunk loop (fn_any_n false) is vectorized for kChunk elements only: long chunks go to its streamed
  // form alone. That took sinter's add of two 2^25-float tensors from 2.64-2.71 to 1.95-2.14 ms on the 16-core
  // host (66-67% -> 92-93% of the copy, bench/results/rowpass-h200-16core-2026-11-30-s7-add.txt).
  bool wide = stream_fn != nullptr && (fn_any_n || stream) && ndim == 1 && out.dtype == compute[0] &&
              out.strides[0] == out_esize;
  for (int i = 1; wide && i < nops_; ++i)
    wide = !ops_[i].is_constant && ops_[i].dtype == compute[i] && ops_[i].strides[0] == esize[i];

  parallel_for(0, numel_, grain, [&](int64_t begin, int64_t end) {
    alignas(64) char buf[kMaxOperands][kChunk * 8];
    alignas(64) char obuf[kChunk * 8];
    std::vector<int64_t> idx(ndim), seg(ndim);
    int64_t rem = begin;
    for (int d = 0; d < ndim; ++d) {
      idx[d] = rem % sizes_[d];
      rem /= sizes_[d];
    }
    auto advance = [&](std::vector<int64_t>& at, int64_t by) {
      at[0] += by;
      for (int d = 0; d + 1 < ndim && at[d] >= sizes_[d]; ++d) {
        at[d + 1] += at[d] / sizes_[d];
        at[d] %= sizes_[d];
      }
    };
    auto offset = [&](int i, const std::vector<int64_t>& at) {
      int64_t off = 0;
      for (int d = 0; d < ndim; ++d) off += at[d] * ops_[i].strides[d];
      return off;
    };
    // Gathers (or, for the output, scatters) operand i's n elements from idx on, row piece by row piece.
    auto by_segments = [&](int i, int64_t n, bool gather) {
      seg = idx;
      for (int64_t pos = 0; pos < n;) {
        int64_t len = std::min(n - pos, n0 - seg[0]);
        char* p = ops_[i].data + offset(i, seg);
        char* b = buf[i] + pos * esize[i];
        if (gather)
          convert(p, ops_[i].strides[0], ops_[i].dtype, b, esize[i], compute[i], len);
        else
          convert(b, esize[i], compute[i], p, ops_[i].strides[0], ops_[i].dtype, len);
        pos += len;
        advance(seg, len);
      }
    };

    const char* cached[kMaxOperands] = {};
    int64_t cached_n[kMaxOperands] = {};
    char* in[kMaxOperands];
    bool first = true;
    while (begin < end) {
      int64_t n = std::min(kChunk, end - begin);
      // Long only where it goes straight to the kernel: unstreamed, or streamed to a 64-byte-aligned address.
      if (wide && (!stream || (reinterpret_cast<uintptr_t>(out.data + idx[0] * out_esize) & 63) == 0))
        n = std::min(kWideChunk, end - begin);
      if (row_chunks) n = std::min(n, n0 - idx[0]);
      if (stream && first) {
        // A shorter first chunk, so that every later one streams whole cache lines.
        const int64_t mis = static_cast<int64_t>(reinterpret_cast<uintptr_t>(out.data + offset(0, idx)) & 63);
        if (mis != 0 && mis % out_esize == 0) n = std::min(n, (64 - mis) / out_esize);
      }
      first = false;
      if (direct_bf16) {  // ndim == 1: idx[0] is the element index
        for (int i = 1; i < nops_; ++i) in[i - 1] = ops_[i].data + idx[0] * 2;
        char* dst = out.data + idx[0] * 2;
        if (stream) {
          bf16(ctx, in, obuf, n);
          stream_copy(dst, obuf, n * 2);
        } else {
          bf16(ctx, in, dst, n);
        }
        advance(idx, n);
        begin += n;
        continue;
      }
      const bool single = n <= n0 - idx[0];
      for (int i = 1; i < nops_; ++i) {
        const Operand& op = ops_[i];
        char* base = op.data + offset(i, idx);
        if (single && op.dtype == compute[i] && op.strides[0] == esize[i]) {
          in[i - 1] = base;
          continue;
        }
        in[i - 1] = buf[i];
        if (all_zero[i] || (single && op.strides[0] == 0)) {  // one value repeated: fill once, reuse
          if (cached[i] != base || cached_n[i] < n) {
            convert(base, 0, op.dtype, buf[i], esize[i], compute[i], n);
            cached[i] = base;
            cached_n[i] = n;
          }
        } else {
          cached[i] = nullptr;
          by_segments(i, n, true);
        }
      }
      char* dst = out.data + offset(0, idx);
      if (stream && stream_fn != nullptr && out.dtype == compute[0] && (reinterpret_cast<uintptr_t>(dst) & 63) == 0) {
        stream_fn(ctx, in, dst, n);
      } else if (stream) {
        fn(ctx, in, buf[0], n);
        const char* src = buf[0];
        if (out.dtype != compute[0]) {
          convert(buf[0], esize[0], compute[0], obuf, out_esize, out.dtype, n);
          src = obuf;
        }
        stream_copy(dst, src, n * out_esize);
      } else if (single && out.dtype == compute[0] && out.strides[0] == esize[0]) {
        fn(ctx, in, dst, n);
      } else {
        fn(ctx, in, buf[0], n);
        by_segments(0, n, false);
      }
      advance(idx, n);
      begin += n;
    }
    if (stream) stream_fence();
  });
}

}  // namespace sinter::loops#include "ops/copy.h"

