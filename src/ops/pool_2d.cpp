// max_pool2d, avg_pool2d and adaptive_avg_pool2d: PyTorch's argument checks and output sizes (ceil_mode,
// padding at most half the kernel), and kernels parallel over N*C planes for contiguous input, or over output
// rows with a vector loop across channels for channels-last input (whose output is channels-last too, as in
// PyTorch).
#include <cmath>
#include <limits>

#include "ops/linalg_util.h"

namespace sinter {
namespace {

enum class Kind { kMax, kAvg, kAdaptive };

struct Pool {
  Kind kind;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool ceil_mode = false, count_include_pad = true;
  int64_t divisor = 0;  // divisor_override; 0 = none
};

// PyTorch's pooling_output_shape: with ceil_mode the last window must still start inside the input (or its
// left padding).
SymInt pooled_size(const SymInt& in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                   bool ceil_mode) {
  SymInt out = (in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) out = out - 1;
  return out;
}

Pool parse(OpId op, const Args& args) {
  Pool p;
  const Tensor& x = args[0].tensor();
  SINTER_CHECK(x.dim() == 3 || x.dim() == 4,
               "expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape {}", x.sizes().str());
  for (int64_t d = x.dim() - 3; d < x.dim(); ++d)
    SINTER_CHECK(x.sizes()[d] != 0,
                 "expected an input with non-zero sizes except the batch dim, got shape {}", x.sizes().str());
  if (op == OpId::adaptive_avg_pool2d) {
    p.kind = Kind::kAdaptive;
    check_floating_input(x, "input");
    return p;
  }
  p.kind = op == OpId::max_pool2d ? Kind::kMax : Kind::kAvg;
  if (p.kind == Kind::kMax) {
    SINTER_CHECK(x.dtype() != kBool, "max_pool2d does not support bool tensors");
  } else {
    SINTER_CHECK(is_floating(x.dtype()) || x.dtype() == kInt64,
                 "avg_pool2d supports floating dtypes and int64, got {}", dtype_name(x.dtype()));
  }
  auto [kh, kw] = int_pair(args[1], "kernel_size");
  std::vector<int64_t> stride = args[2].to_int_list();
  auto [sh, sw] = stride.empty() ? std::array<int64_t, 2>{kh, kw} : int_pair(args[2], "stride");
  auto [ph, pw] = int_pair(args[3], "padding");
  p.kh = kh, p.kw = kw, p.sh = sh, p.sw = sw, p.ph = ph, p.pw = pw;
  SINTER_CHECK(kh > 0 && kw > 0, "kernel size should be greater than zero, but got ({}, {})", kh, kw);
  SINTER_CHECK(sh > 0 && sw > 0, "stride should be greater than zero, but got ({}, {})", sh, sw);
  SINTER_CHECK(ph >= 0 && pw >= 0, "padding should be non-negative, but got ({}, {})", ph, pw);
  SINTER_CHECK(
      ph <= kh / 2 && pw <= kw / 2,
      "pad should be at most half of the kernel size, but got padding ({}, {}) for kernel size ({}, {})", ph,
      pw, kh, kw);
  if (p.kind == Kind::kMax) {
    auto [dh, dw] = int_pair(args[4], "dilation");
    SINTER_CHECK(dh > 0 && dw > 0, "dilation should be greater than zero, but got ({}, {})", dh, dw);
    p.dh = dh, p.dw = dw;
    p.ceil_mode = args[5].to_bool();
  } else {
    p.ceil_mode = args[4].to_bool();
    p.count_include_pad = args[5].to_bool();
    if (!args[6].is_none()) {
      p.divisor = args[6].to_int();
      SINTER_CHECK(p.divisor != 0, "divisor_override must not be zero");
    }
  }
  return p;
}

bool channels_last_input(const Tensor& x) {
  return x.dim() == 4 && !x.is_contiguous() && x.is_contiguous(MemoryFormat::kChannelsLast);
}

ShapeResult pool_shape(OpId op, const Args& args) {
  const Tensor& x = args[0].tensor();
  Pool p = parse(op, args);
  SymIntList out(x.sizes().begin(), x.sizes().end() - 2);
  const SymInt& h = x.sizes()[x.dim() - 2];
  const SymInt& w = x.sizes()[x.dim() - 1];
  if (p.kind == Kind::kAdaptive) {
    auto [oh, ow] = int_pair(args[1], "output_size");
    SINTER_CHECK(oh >= 0 && ow >= 0,
                 "elements of output_size must be greater than or equal to 0, got ({}, {})", oh, ow);
    out.push_back(oh);
    out.push_back(ow);
  } else {
    SymInt oh = pooled_size(h, p.kh, p.ph, p.sh, p.dh, p.ceil_mode);
    SymInt ow = pooled_size(w, p.kw, p.pw, p.sw, p.dw, p.ceil_mode);
    SINTER_CHECK(
        oh >= 1 && ow >= 1, "given input size ({}x{}x{}), the calculated output size ({}x{}x{}) is too small",
        x.sizes()[x.dim() - 3].str(), h.str(), w.str(), x.sizes()[x.dim() - 3].str(), oh.str(), ow.str());
    out.push_back(oh);
    out.push_back(ow);
  }
  return dense_meta(out, x.dtype(), x.device(),
                    channels_last_input(x) ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
}

// One output pixel's window along one axis: input positions start + i * step for i in [0, count), all in
// range, and the element count PyTorch's avg_pool divides by.
struct Window {
  int64_t start, count, step, divisor;
};

Window window(const Pool& p, int64_t o, int64_t in, int64_t out, bool rows) {
  int64_t k = rows ? p.kh : p.kw, s = rows ? p.sh : p.sw, pad = rows ? p.ph : p.pw, d = rows ? p.dh : p.dw;
  if (p.kind == Kind::kAdaptive) {
    int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
    return {start, end - start, 1, end - start};
  }
  int64_t start = o * s - pad;
  if (p.kind == Kind::kAvg) {
    int64_t end = std::min(start + k, in + pad), padded = end - start;
    start = std::max<int64_t>(start, 0), end = std::min(end, in);
    return {start, std::max<int64_t>(end - start, 0), 1, padded};
  }
  // Max: skip the taps that fall in the padding (dilation d between taps).
  int64_t first = start < 0 ? ceil_div(-start, d) : 0;
  int64_t last = std::min(k, in - start <= 0 ? 0 : ceil_div(in - start, d));
  return {start + first * d, std::max<int64_t>(last - first, 0), d, 0};
}

template <class A>
inline A max_step(A acc, A v) {
  if constexpr (std::is_floating_point_v<A>)
    return (v > acc || std::isnan(v)) ? v : acc;
  else
    return v > acc ? v : acc;
}

template <class A>
A lowest() {
  if constexpr (std::is_floating_point_v<A>)
    return -std::numeric_limits<A>::infinity();
  else
    return std::numeric_limits<A>::lowest();
}

template <class A>
A finish(const Pool& p, A acc, const Window& wh, const Window& ww) {
  if (p.kind == Kind::kMax) return acc;
  int64_t div = p.divisor                                       ? p.divisor
                : (p.kind == Kind::kAvg && p.count_include_pad) ? wh.divisor * ww.divisor
                                                                : wh.count * ww.count;
  if (p.kind == Kind::kAvg && (wh.count == 0 || ww.count == 0)) return A(0);
  return acc / static_cast<A>(div);
}

// One kernel column tap of a fixed-size pool: the outputs [lo, hi) read input column ow * stride + off.
struct ColumnTap {
  int64_t off, lo, hi;
};

// x, y: [N*C planes, H, W] contiguous. Fixed-size pools accumulate a whole output row per kernel tap, so the
// inner loop runs along the row (vectorised for stride 1); adaptive windows vary per output and loop
// directly.
template <class T>
void pool_nchw(const Pool& p, const T* x, T* y, int64_t planes, int64_t H, int64_t W, int64_t OH,
               int64_t OW) {
  using A = opmath_t<T>;
  std::vector<Window> wr(OH), wc(OW);
  for (int64_t o = 0; o < OH; ++o) wr[o] = window(p, o, H, OH, true);
  for (int64_t o = 0; o < OW; ++o) wc[o] = window(p, o, W, OW, false);
  std::vector<ColumnTap> taps;
  for (int64_t j = 0; p.kind != Kind::kAdaptive && j < p.kw; ++j) {
    ColumnTap t{j * p.dw - p.pw, 0, 0};
    t.lo = t.off >= 0 ? 0 : ceil_div(-t.off, p.sw);
    t.hi = W - 1 - t.off < 0 ? 0 : std::min(OW, (W - 1 - t.off) / p.sw + 1);
    t.lo = std::min(t.lo, t.hi);
    taps.push_back(t);
  }
  const bool is_max = p.kind == Kind::kMax;
  int64_t grain = std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(OH * OW * p.kh * p.kw, 1));
  parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    std::vector<A> acc(OW);
    for (int64_t c = begin; c < end; ++c) {
      const T* xp = x + c * H * W;
      T* yp = y + c * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const Window& h = wr[oh];
        if (p.kind == Kind::kAdaptive) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            const Window& w = wc[ow];
            A sum = 0;
            for (int64_t i = 0; i < h.count; ++i) {
              const T* row = xp + (h.start + i) * W + w.start;
              for (int64_t j = 0; j < w.count; ++j) sum += static_cast<A>(row[j]);
            }
            yp[oh * OW + ow] = cast_to<T>(finish(p, sum, h, w));
          }
          continue;
        }
        std::fill(acc.begin(), acc.end(), is_max ? lowest<A>() : A(0));
        A* a = acc.data();
        for (int64_t i = 0; i < h.count; ++i) {
          const T* row = xp + (h.start + i * h.step) * W;
          for (const ColumnTap& t : taps) {
            if (is_max && p.sw == 1) {
              for (int64_t ow = t.lo; ow < t.hi; ++ow)
                a[ow] = max_step<A>(a[ow], static_cast<A>(row[ow + t.off]));
            } else if (is_max) {
              for (int64_t ow = t.lo; ow < t.hi; ++ow)
                a[ow] = max_step<A>(a[ow], static_cast<A>(row[ow * p.sw + t.off]));
            } else if (p.sw == 1) {
              for (int64_t ow = t.lo; ow < t.hi; ++ow) a[ow] += static_cast<A>(row[ow + t.off]);
            } else {
              for (int64_t ow = t.lo; ow < t.hi; ++ow) a[ow] += static_cast<A>(row[ow * p.sw + t.off]);
            }
          }
        }
        for (int64_t ow = 0; ow < OW; ++ow) yp[oh * OW + ow] = cast_to<T>(finish(p, a[ow], h, wc[ow]));
      }
    }
  });
}

// x, y: [N, H, W, C] contiguous; one task per output row, the inner loops run across channels.
template <class T>
void pool_nhwc(const Pool& p, const T* x, T* y, int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH,
               int64_t OW) {
  using A = opmath_t<T>;
  std::vector<Window> wc(OW);
  for (int64_t o = 0; o < OW; ++o) wc[o] = window(p, o, W, OW, false);
  parallel_for(0, N * OH, 1, [&](int64_t begin, int64_t end) {
    std::vector<A> acc(C);
    for (int64_t t = begin; t < end; ++t) {
      int64_t n = t / OH, oh = t % OH;
      Window h = window(p, oh, H, OH, true);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const Window& w = wc[ow];
        std::fill(acc.begin(), acc.end(), p.kind == Kind::kMax ? lowest<A>() : A(0));
        for (int64_t i = 0; i < h.count; ++i)
          for (int64_t j = 0; j < w.count; ++j) {
            const T* px = x + ((n * H + h.start + i * h.step) * W + w.start + j * w.step) * C;
            if (p.kind == Kind::kMax) {
              for (int64_t c = 0; c < C; ++c) acc[c] = max_step<A>(acc[c], static_cast<A>(px[c]));
            } else {
              for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<A>(px[c]);
            }
          }
        T* py = y + (t * OW + ow) * C;
        for (int64_t c = 0; c < C; ++c) py[c] = cast_to<T>(finish(p, acc[c], h, w));
      }
    }
  });
}

void pool_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  Pool p = parse(op, args);
  const Tensor& out = outs[0];
  if (out.numel().hint() == 0) return;
  const Tensor& in = args[0].tensor();
  bool cl = !out.is_contiguous();  // the shape rule made it channels-last
  Tensor x = contiguous_as(in, in.dtype(), cl ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
  std::vector<int64_t> xs = sizes_of(x), ys = sizes_of(out);
  int64_t r = x.dim(), N = r == 4 ? xs[0] : 1, C = xs[r - 3], H = xs[r - 2], W = xs[r - 1];
  int64_t OH = ys[r - 2], OW = ys[r - 1];
  visit_dtype(in.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      if (cl)
        pool_nhwc<T>(p, x.data_ptr<T>(), out.data_ptr<T>(), N, C, H, W, OH, OW);
      else
        pool_nchw<T>(p, x.data_ptr<T>(), out.data_ptr<T>(), N * C, H, W, OH, OW);
    }
  });
}

}  // namespace

void register_pool_ops(OpTable& t) {
  for (OpId op : {OpId::max_pool2d, OpId::avg_pool2d, OpId::adaptive_avg_pool2d})
    t.set(op, pool_shape, pool_kernel);
}

}  // namespace sinter
