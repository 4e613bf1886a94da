// Normalisations: layer_norm and rms_norm over the trailing normalized_shape, group_norm over (C/G, *) per
// sample and group, batch_norm per channel. Each row is read once into cache (converted to float for float16
// and bfloat16), its statistics taken in two passes there (mean, then squared deviations: no cancellation),
// and written once, rounded at the end.
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/loops.h"
#include "ops/reduce_engine.h"
#include "ops/reduce_internal.h"
#include "ops/vec_math.h"

namespace sinter {

namespace {

using namespace reduce;

bool same_sizes(const SymIntList& a, const SymIntList& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// Checks shared by layer_norm and rms_norm: input (*, normalized_shape), weight/bias of normalized_shape.
void check_trailing_norm(const Args& a, const char* what, bool has_bias) {
  const Tensor& x = a[0].tensor();
  const SymIntList& ns = a[1].int_list();
  SINTER_CHECK(is_floating(x.dtype()), "{} needs a floating input, got {}", what, dtype_name(x.dtype()));
  SINTER_CHECK(!ns.empty(), "normalized_shape must have at least one dim");
  const int64_t k = static_cast<int64_t>(ns.size()), nd = x.dim();
  bool ok = nd >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.sizes()[nd - k + i] == ns[i];
  SINTER_CHECK(ok, "normalized_shape {} does not match the trailing dims of the input of shape {}", ns.str(),
               x.sizes().str());
  for (int i = 2; i <= (has_bias ? 3 : 2); ++i) {
    if (a[i].is_none()) continue;
    const Tensor& p = a[i].tensor();
    SINTER_CHECK(same_sizes(p.sizes(), ns), "{} of shape {} does not match normalized_shape {}",
                 i == 2 ? "weight" : "bias", p.sizes().str(), ns.str());
  }
}

template <class C>
std::vector<C> param_or(const Value& v, int64_t n, C fill) {
  if (v.is_none()) return std::vector<C>(static_cast<size_t>(n), fill);
  return read_values<C>(v.tensor());
}

// Runs `body(x, y, row, next, stream)` over `rows` contiguous rows of length `len` of `in`, writing `out` (same
// layout): rows are converted to C in a buffer when `in` is not C, and results rounded into `out` when it is
// not C. A large output is computed row by row in cache and streamed out (loops::kStreamMinBytes says why):
// through a row buffer, unless `body_streams` says the body writes the output row itself, in which case it
// gets y = the output row and `stream` = whether to use streaming stores (then this fences).
template <class C, class F>
void for_each_row(const Tensor& in, const Tensor& out, int64_t rows, int64_t len, F body, bool body_streams = false) {
  if (rows == 0 || len == 0) return;
  const LoadFn<C> load = load_fn<C>(in.dtype());
  const StoreFn<C> store = store_fn<C>(out.dtype());
  const int64_t isz = static_cast<int64_t>(in.element_size()), osz = static_cast<int64_t>(out.element_size());
  const char* ibase = static_cast<const char*>(in.data_ptr());
  char* obase = static_cast<char*>(out.data_ptr());
  const bool stream = loops::stream_output(rows * len * osz);
  const bool direct = body_streams && !store;  // the body writes (streams) the output row itself
  const bool buffered = store || (stream && !direct);
  parallel_for(0, rows, std::max<int64_t>(1, kGrainElementwise / len), [&](int64_t b, int64_t e) {
    std::vector<C> xbuf(load ? static_cast<size_t>(len) : 0), ybuf(buffered ? static_cast<size_t>(len) : 0);
    std::vector<char> obuf(store && stream ? static_cast<size_t>(len * osz) : 0);
    for (int64_t r = b; r < e; ++r) {
      const C* x = load ? xbuf.data() : reinterpret_cast<const C*>(ibase + r * len * isz);
      if (load) load(ibase + r * len * isz, xbuf.data(), len);
      char* dst = obase + r * len * osz;
      C* y = buffered ? ybuf.data() : reinterpret_cast<C*>(dst);
      // The next row's input, for bodies that prefetch it (map_row_prefetch); only for large (streamed) outputs,
      // whose inputs come from memory.
      const char* next = stream && r + 1 < e ? ibase + (r + 1) * len * isz : nullptr;
      body(x, y, r, next, stream && direct);
      if (buffered) write_row(dst, y, len, osz, store, stream, obuf.data());
    }
    if (stream) loops::stream_fence();
  });
}

// Prefetches bytes [from, to) of `next` (may be null), one instruction per 64-byte line.
[[gnu::always_inline]] inline void prefetch_lines(const char* next, int64_t from, int64_t to) {
  if (next == nullptr) return;
  for (int64_t i = from; i < to; i += 64) __builtin_prefetch(next + i);
}

// sum of f(x[i]) for i < n as block_sum does (float blocks of kPairwiseBlock, added in double), but with 64
// lanes: four AVX-512 registers, so the add latency is hidden (16 lanes, one register, made the variance pass
// from L1 wait on each add). When `next` is given, next_bytes of it are prefetched across the pass.
template <class C, class F>
[[gnu::always_inline]] inline double wide_sum(const C* x, int64_t n, const char* next, int64_t next_bytes, F&& f) {
  constexpr int kWide = 64;
  double total = 0;
  int64_t fetched = 0;
  for (int64_t b = 0; b < n; b += kPairwiseBlock) {
    const int64_t len = std::min(n - b, kPairwiseBlock);
    const C* p = x + b;
    C acc[kWide] = {};
    int64_t i = 0;
    for (; i + kWide <= len; i += kWide) {
      if (next != nullptr && (i & 255) == 0) {  // a share of the lines every 256 elements
        const int64_t upto = next_bytes * (b + i + 256) / n;
        prefetch_lines(next, fetched, upto);
        fetched = std::max(fetched, upto);
      }
      for (int j = 0; j < kWide; ++j) acc[j] += f(p[i + j]);
    }
    C tail = 0;
    for (; i < len; ++i) tail += f(p[i]);
    for (int w = kWide / 2; w >= 1; w /= 2)
      for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
    total += acc[0] + tail;
  }
  prefetch_lines(next, fetched, next_bytes);
  return total;
}

// Mean and 1 / sqrt(var + eps) of a row (biased variance).
// Always inlined (as affine_row) so that layer_norm_row's wide-vector clones compile them too.
template <class C>
[[gnu::always_inline]] inline void row_stats(const C* x, int64_t n, C eps, C& mean, C& rstd,
                                             const char* next = nullptr, int64_t next_bytes = 0) {
  mean = static_cast<C>(wide_sum(x, n, nullptr, 0, [](C v) { return v; }) / static_cast<double>(n));
  const C m = mean;
  const C var = static_cast<C>(wide_sum(x, n, next, next_bytes, [m](C v) { return (v - m) * (v - m); }) /
                               static_cast<double>(n));
  rstd = C(1) / std::sqrt(var + eps);
}

template <class C>
[[gnu::always_inline]] inline void affine_row(const C* __restrict x, C* __restrict y, const C* __restrict w, const C* __restrict b,
                int64_t n, C mean, C rstd) {
  for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * w[j] + b[j];
}

// One layer_norm row: statistics and the affine map, compiled for wider vectors too (three passes over a row
// in L1 are compute, not memory). The next row (when given) is prefetched during the variance pass, which
// reads this row from L1: the next row's mean pass then finds it in cache instead of waiting on memory.
template <class C>
SINTER_CLONES void layer_norm_row(const C* x, C* y, const C* w, const C* b, int64_t n, C eps, const char* next,
                                  int64_t next_bytes) {
  C mean, rstd;
  row_stats(x, n, eps, mean, rstd, next, next_bytes);
  affine_row(x, y, w, b, n, mean, rstd);
}

// ---- layer_norm (input, normalized_shape, weight?, bias?, eps) ----

ShapeResult layer_norm_shape(OpId, const Args& a) {
  check_trailing_norm(a, "layer_norm", true);
  const Tensor& x = a[0].tensor();
  return dense_meta(x.sizes(), x.dtype(), x.device());
}

void layer_norm_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  Tensor x = a[0].tensor().contiguous();
  const int64_t len = sym_product(a[1].int_list()).hint();
  const int64_t rows = len == 0 ? 0 : x.numel().hint() / len;
  const double eps = a[4].to_double();
  visit_float_compute(x.dtype(), [&]<class C>() {
    const std::vector<C> w = param_or<C>(a[2], len, C(1)), b = param_or<C>(a[3], len, C(0));
    const int64_t row_bytes = len * static_cast<int64_t>(x.element_size());
    // float32 in and out on AVX-512: the affine pass writes (streams, when large) the output row itself.
    const bool vec_rows = std::is_same_v<C, float> && x.dtype() == kFloat32 && outs[0].dtype() == kFloat32 &&
                          vec::available();
    for_each_row<C>(
        x, outs[0], rows, len,
        [&](const C* xr, C* yr, int64_t, const char* next, bool stream) {
          if constexpr (std::is_same_v<C, float>) {
            if (vec_rows) {
              vec::layer_norm_row(xr, yr, w.data(), b.data(), len, static_cast<float>(eps), stream, next, row_bytes);
              return;
            }
          }
          layer_norm_row(xr, yr, w.data(), b.data(), len, static_cast<C>(eps), next, row_bytes);
        },
        vec_rows);
  });
}

// ---- rms_norm (input, normalized_shape, weight?, eps?) ----
// As torch.nn.functional.rms_norm: y = (x * rsqrt(mean(x^2) + eps)) rounded to the input's dtype, then *
// weight (so the result takes the promoted dtype of input and weight). eps None is the input dtype's machine
// epsilon.

DType rms_out_dtype(const Args& a) {
  const DType in = a[0].tensor().dtype();
  return a[2].is_none() ? in : promote_types(in, a[2].tensor().dtype());
}

ShapeResult rms_norm_shape(OpId, const Args& a) {
  check_trailing_norm(a, "rms_norm", false);
  const Tensor& x = a[0].tensor();
  return dense_meta(x.sizes(), rms_out_dtype(a), x.device());
}

double machine_epsilon(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return std::numeric_limits<double>::epsilon();
    case DType::kFloat16:
      return 0.0009765625;  // 2^-10
    case DType::kBFloat16:
      return 0.0078125;  // 2^-7
    default:
      return std::numeric_limits<float>::epsilon();
  }
}

template <class C>
void round_row(C* y, int64_t n, DType dtype) {
  if (dtype == kFloat16)
    map_row(y, y, n, [](C v) { return static_cast<C>(static_cast<float>(Half(v))); });
  else if (dtype == kBFloat16)
    map_row(y, y, n, [](C v) { return static_cast<C>(static_cast<float>(BFloat16(v))); });
  else if (dtype == kFloat32 && std::is_same_v<C, double>)
    map_row(y, y, n, [](C v) { return C(float(v)); });
}

void rms_norm_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  Tensor x = a[0].tensor().contiguous();
  const int64_t len = sym_product(a[1].int_list()).hint();
  const int64_t rows = len == 0 ? 0 : x.numel().hint() / len;
  const double eps = a[3].is_none() ? machine_epsilon(x.dtype()) : a[3].to_double();
  const bool has_weight = !a[2].is_none();
  const DType in_dtype = x.dtype();
  visit_float_compute(outs[0].dtype(), [&]<class C>() {
    const std::vector<C> w = param_or<C>(a[2], len, C(1));
    for_each_row<C>(x, outs[0], rows, len, [&](const C* xr, C* yr, int64_t, const char*, bool) {
      const C ms = lane_sum<C>(xr, len, [](C v) { return v * v; }) / static_cast<C>(len);
      const C r = C(1) / std::sqrt(ms + static_cast<C>(eps));
      map_row(xr, yr, len, [r](C v) { return v * r; });
      if (!has_weight) return;
      round_row(yr, len, in_dtype);
      const C* wp = w.data();
      for (int64_t j = 0; j < len; ++j) yr[j] *= wp[j];
    });
  });
}

// ---- group_norm (input, num_groups, weight?, bias?, eps): input (N, C, *) ----

ShapeResult group_norm_shape(OpId, const Args& a) {
  const Tensor& x = a[0].tensor();
  const int64_t groups = a[1].to_int();
  SINTER_CHECK(is_floating(x.dtype()), "group_norm needs a floating input, got {}", dtype_name(x.dtype()));
  SINTER_CHECK(x.dim() >= 2, "group_norm expects an input of shape (N, C, *), got {}", x.sizes().str());
  SINTER_CHECK(groups > 0, "num_groups must be positive, got {}", groups);
  const SymInt& channels = x.sizes()[1];
  SINTER_CHECK(channels % groups == 0,
               "the number of channels ({}) must be divisible by num_groups ({}); input shape {}",
               channels.str(), groups, x.sizes().str());
  for (int i = 2; i <= 3; ++i) {
    if (a[i].is_none()) continue;
    const Tensor& p = a[i].tensor();
    SINTER_CHECK(p.dim() == 1 && p.sizes()[0] == channels,
                 "{} must have shape [{}] (one per channel), got {}", i == 2 ? "weight" : "bias",
                 channels.str(), p.sizes().str());
  }
  return dense_meta(x.sizes(), x.dtype(), x.device());
}

void group_norm_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  Tensor x = a[0].tensor().contiguous();
  const int64_t groups = a[1].to_int();
  const int64_t n = x.sizes()[0].hint(), channels = x.sizes()[1].hint();
  const int64_t hw = n * channels == 0 ? 0 : x.numel().hint() / (n * channels);
  const int64_t per_group = channels / groups, len = per_group * hw;
  const double eps = a[4].to_double();
  visit_float_compute(x.dtype(), [&]<class C>() {
    const std::vector<C> w = param_or<C>(a[2], channels, C(1)), b = param_or<C>(a[3], channels, C(0));
    for_each_row<C>(x, outs[0], n * groups, len, [&](const C* xr, C* yr, int64_t row, const char*, bool) {
      C mean, rstd;
      row_stats(xr, len, static_cast<C>(eps), mean, rstd);
      // Per channel the normalisation and affine fold into y = x * scale + shift.
      for (int64_t c = 0; c < per_group; ++c) {
        const int64_t ch = (row % groups) * per_group + c;
        const C scale = rstd * w[ch], shift = b[ch] - mean * scale;
        map_row(xr + c * hw, yr + c * hw, hw, [scale, shift](C v) { return v * scale + shift; });
      }
    });
  });
}

// ---- batch_norm (input, weight?, bias?, running_mean?, running_var?, training, momentum, eps): (N, C, *)
// ---- Training normalises with the batch statistics (biased variance) and, when running stats are given,
// updates them in place: running = (1 - momentum) * running + momentum * batch, with the unbiased variance,
// as PyTorch.

ShapeResult batch_norm_shape(OpId, const Args& a) {
  const Tensor& x = a[0].tensor();
  SINTER_CHECK(is_floating(x.dtype()), "batch_norm needs a floating input, got {}", dtype_name(x.dtype()));
  SINTER_CHECK(x.dim() >= 2, "batch_norm expects an input of shape (N, C, *), got {}", x.sizes().str());
  const SymInt& channels = x.sizes()[1];
  static const char* names[] = {"", "weight", "bias", "running_mean", "running_var"};
  for (int i = 1; i <= 4; ++i) {
    if (a[i].is_none()) continue;
    const Tensor& p = a[i].tensor();
    SINTER_CHECK(p.dim() == 1 && p.sizes()[0] == channels,
                 "{} must have shape [{}] (one per channel), got {}", names[i], channels.str(),
                 p.sizes().str());
  }
  const bool training = a[5].to_bool();
  if (training) {
    const SymInt count = x.numel() / sym_max(channels, SymInt(1));
    SINTER_CHECK(count > 1, "expected more than 1 value per channel when training, got input of shape {}",
                 x.sizes().str());
  } else {
    SINTER_CHECK(!a[3].is_none() && !a[4].is_none(),
                 "running_mean and running_var must be given when training is false");
  }
  // A channels-last input gives a channels-last output, as PyTorch's suggest_memory_format (then a conv,
  // batch_norm, relu chain stays channels-last).
  const bool channels_last = x.dim() == 4 && !x.is_contiguous() && x.is_contiguous(MemoryFormat::kChannelsLast);
  return dense_meta(x.sizes(), x.dtype(), x.device(),
                    channels_last ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
}

// Writes `vals` into the 1-d tensor `t` through its stride, converting, and marks it as changed.
template <class C>
void write_running(const Tensor& t, const std::vector<C>& vals) {
  const int64_t stride = t.strides()[0].hint();
  visit_dtype(t.dtype(), [&]<class T>() {
    T* p = t.data_ptr<T>();
    for (size_t c = 0; c < vals.size(); ++c) p[static_cast<int64_t>(c) * stride] = cast_to<T>(vals[c]);
  });
  t.storage()->bump_version();
}

void batch_norm_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  // A channels-last output (of a channels-last input) is applied per pixel, as rows of C channels; the
  // statistics of a training step are taken over the contiguous copy.
  const Tensor& input = a[0].tensor();
  const bool channels_last = !outs[0].is_contiguous();
  const bool training = a[5].to_bool();
  Tensor x = channels_last && !training ? input : input.contiguous();
  const double momentum = a[6].to_double(), eps = a[7].to_double();
  const int64_t n = x.sizes()[0].hint(), channels = x.sizes()[1].hint();
  const int64_t hw = n * channels == 0 ? 0 : x.numel().hint() / (n * channels), count = n * hw;
  visit_float_compute(x.dtype(), [&]<class C>() {
    std::vector<C> mean, var;
    if (training) {
      mean.assign(static_cast<size_t>(channels), C(0));
      var.assign(static_cast<size_t>(channels), C(0));
      const LoadFn<C> load = load_fn<C>(x.dtype());
      const int64_t esz = static_cast<int64_t>(x.element_size());
      const char* base = static_cast<const char*>(x.data_ptr());
      // Per channel: the sum over its N segments of hw contiguous values, then the squared deviations.
      parallel_for(0, channels, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, count)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t c = b; c < e; ++c) {
                       C s = 0, m2 = 0;
                       for (int64_t i = 0; i < n; ++i)
                         s += reduce_run(SumOp<C>{}, base + (i * channels + c) * hw * esz, hw, c, load, esz);
                       mean[c] = s / static_cast<C>(count);
                       SumOp<C, SquaredDeviation<C>> dev{{mean.data()}};
                       for (int64_t i = 0; i < n; ++i)
                         m2 += reduce_run(dev, base + (i * channels + c) * hw * esz, hw, c, load, esz);
                       var[c] = m2 / static_cast<C>(count);
                     }
                   });
    } else {
      mean = read_values<C>(a[3].tensor());
      var = read_values<C>(a[4].tensor());
    }
    const std::vector<C> w = param_or<C>(a[1], channels, C(1)), b = param_or<C>(a[2], channels, C(0));
    std::vector<C> scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      scale[c] = w[c] / std::sqrt(var[c] + static_cast<C>(eps));
      shift[c] = b[c] - mean[c] * scale[c];
    }
    if (channels_last) {
      visit_dtype(input.dtype(), [&]<class T>() {
        const T* xp = input.data_ptr<T>();
        T* yp = outs[0].data_ptr<T>();
        parallel_for(0, n * hw, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, channels)),
                     [&](int64_t b, int64_t e) {
                       for (int64_t p = b; p < e; ++p)
                         for (int64_t c = 0; c < channels; ++c)
                           yp[p * channels + c] = cast_to<T>(static_cast<C>(xp[p * channels + c]) * scale[c] + shift[c]);
                     });
      });
    } else {
      for_each_row<C>(x, outs[0], n * channels, hw, [&](const C* xr, C* yr, int64_t row, const char*, bool) {
        const C sc = scale[row % channels], sh = shift[row % channels];
        map_row(xr, yr, hw, [sc, sh](C v) { return v * sc + sh; });
      });
    }
    if (!training) return;
    const C m = static_cast<C>(momentum);
    if (!a[3].is_none()) {
      std::vector<C> rm = read_values<C>(a[3].tensor());
      for (int64_t c = 0; c < channels; ++c) rm[c] = (1 - m) * rm[c] + m * mean[c];
      write_running(a[3].tensor(), rm);
    }
    if (!a[4].is_none()) {
      std::vector<C> rv = read_values<C>(a[4].tensor());
      const C unbias = static_cast<C>(count) / static_cast<C>(count - 1);
      for (int64_t c = 0; c < channels; ++c) rv[c] = (1 - m) * rv[c] + m * var[c] * unbias;
      write_running(a[4].tensor(), rv);
    }
  });
}

}  // namespace

void register_norm_ops(OpTable& t) {
  t.set(OpId::layer_norm, layer_norm_shape, layer_norm_kernel);
  t.set(OpId::rms_norm, rms_norm_shape, rms_norm_kernel);
  t.set(OpId::group_norm, group_norm_shape, group_norm_kernel);
  t.set(OpId::batch_norm, batch_norm_shape, batch_norm_kernel);
}

}  // namespace sinter
