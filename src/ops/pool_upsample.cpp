// upsample_nearest2d and upsample_bilinear2d with PyTorch's index rules: nearest takes floor(dst * scale)
// with scale = in/out (or 1/scales when given); bilinear maps dst to src = scale*(dst+0.5)-0.5 clamped at 0,
// or dst*(in-1)/(out-1) with align_corners. Source indices and weights are computed once per row and column.
#include <cmath>

#include "ops/linalg_util.h"

namespace sinter {
namespace {

bool is_bilinear(OpId op) { return op == OpId::upsample_bilinear2d; }

// PyTorch's compute_scales_value: the given scale's reciprocal, else in/out.
template <class A>
A scale_value(const Value& scale, int64_t in, int64_t out) {
  if (!scale.is_none() && scale.to_double() > 0) return static_cast<A>(1.0 / scale.to_double());
  return static_cast<A>(in) / static_cast<A>(out);
}

ShapeResult upsample_shape(OpId op, const Args& args) {
  const Tensor& x = args[0].tensor();
  SINTER_CHECK(x.dim() == 4, "expected a 4-D (N, C, H, W) input, got shape {}", x.sizes().str());
  if (is_bilinear(op)) {
    check_floating_input(x, "input");
  } else {
    SINTER_CHECK(is_floating(x.dtype()) || x.dtype() == kUInt8,
                 "upsample_nearest2d supports floating dtypes and "
                 "uint8, got {}",
                 dtype_name(x.dtype()));
  }
  const SymIntList& size = args[1].int_list();
  SINTER_CHECK(size.size() == 2, "output_size must have 2 entries, got {}", size.str());
  SINTER_CHECK(
      x.sizes()[2] > 0 && x.sizes()[3] > 0 && size[0] > 0 && size[1] > 0,
      "input and output sizes should be greater than 0, but got input (H: {}, W: {}) output (H: {}, W: {})",
      x.sizes()[2].str(), x.sizes()[3].str(), size[0].str(), size[1].str());
  SymIntList out{x.sizes()[0], x.sizes()[1], size[0], size[1]};
  bool cl = !x.is_contiguous() && x.is_contiguous(MemoryFormat::kChannelsLast);
  return dense_meta(out, x.dtype(), x.device(), cl ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
}

// Linear interpolation taps along one axis: out[o] = l0 * in[i0] + l1 * in[i1].
template <class A>
struct Tap {
  int64_t i0, i1;
  A l0, l1;
};

template <class A>
std::vector<Tap<A>> linear_taps(int64_t in, int64_t out, bool align_corners, const Value& scale) {
  std::vector<Tap<A>> taps(out);
  A ratio = align_corners ? (out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0))
                          : scale_value<A>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (in == out) {
      taps[o] = {o, o, A(1), A(0)};
      continue;
    }
    A src = align_corners ? ratio * static_cast<A>(o) : ratio * (static_cast<A>(o) + A(0.5)) - A(0.5);
    if (!align_corners && src < A(0)) src = A(0);
    int64_t i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
    A l1 = std::min(std::max(src - static_cast<A>(i0), A(0)), A(1));
    taps[o] = {i0, i0 + (i0 < in - 1 ? 1 : 0), A(1) - l1, l1};
  }
  return taps;
}

// PyTorch's nearest_idx, computed in float as there.
std::vector<int64_t> nearest_taps(int64_t in, int64_t out, const Value& scale) {
  std::vector<int64_t> idx(out);
  float s = scale_value<float>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (out == in)
      idx[o] = o;
    else if (out == 2 * in)
      idx[o] = o >> 1;
    else
      idx[o] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
  }
  return idx;
}

template <class T>
void nearest(const T* x, T* y, bool cl, int64_t N, int64_t C, int64_t H, int64_t W,
             const std::vector<int64_t>& ih, const std::vector<int64_t>& iw) {
  int64_t OH = static_cast<int64_t>(ih.size()), OW = static_cast<int64_t>(iw.size());
  if (cl) {
    parallel_for(0, N * OH, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        int64_t n = t / OH, oh = t % OH;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const T* src = x + ((n * H + ih[oh]) * W + iw[ow]) * C;
          std::copy(src, src + C, y + (t * OW + ow) * C);
        }
      }
    });
    return;
  }
  parallel_for(0, N * C * OH, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(OW, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t t = begin; t < end; ++t) {
                   const T* row = x + ((t / OH) * H + ih[t % OH]) * W;
                   T* out = y + t * OW;
                   for (int64_t ow = 0; ow < OW; ++ow) out[ow] = row[iw[ow]];
                 }
               });
}

template <class T>
void bilinear(const T* x, T* y, bool cl, int64_t N, int64_t C, int64_t H, int64_t W,
              const std::vector<Tap<opmath_t<T>>>& th, const std::vector<Tap<opmath_t<T>>>& tw) {
  using A = opmath_t<T>;
  int64_t OH = static_cast<int64_t>(th.size()), OW = static_cast<int64_t>(tw.size());
  if (cl) {
    parallel_for(0, N * OH, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        int64_t n = t / OH;
        const Tap<A>& h = th[t % OH];
        const T* r0 = x + (n * H + h.i0) * W * C;
        const T* r1 = x + (n * H + h.i1) * W * C;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const Tap<A>& w = tw[ow];
          T* out = y + (t * OW + ow) * C;
          for (int64_t c = 0; c < C; ++c) {
            A top = w.l0 * static_cast<A>(r0[w.i0 * C + c]) + w.l1 * static_cast<A>(r0[w.i1 * C + c]);
            A bot = w.l0 * static_cast<A>(r1[w.i0 * C + c]) + w.l1 * static_cast<A>(r1[w.i1 * C + c]);
            out[c] = static_cast<T>(h.l0 * top + h.l1 * bot);
          }
        }
      }
    });
    return;
  }
  parallel_for(0, N * C * OH, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(OW, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t t = begin; t < end; ++t) {
                   const Tap<A>& h = th[t % OH];
                   const T* plane = x + (t / OH) * H * W;
                   const T* r0 = plane + h.i0 * W;
                   const T* r1 = plane + h.i1 * W;
                   T* out = y + t * OW;
                   for (int64_t ow = 0; ow < OW; ++ow) {
                     const Tap<A>& w = tw[ow];
                     A top = w.l0 * static_cast<A>(r0[w.i0]) + w.l1 * static_cast<A>(r0[w.i1]);
                     A bot = w.l0 * static_cast<A>(r1[w.i0]) + w.l1 * static_cast<A>(r1[w.i1]);
                     out[ow] = static_cast<T>(h.l0 * top + h.l1 * bot);
                   }
                 }
               });
}

void upsample_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& out = outs[0];
  if (out.numel().hint() == 0) return;
  const Tensor& in = args[0].tensor();
  bool cl = !out.is_contiguous();
  Tensor x = contiguous_as(in, in.dtype(), cl ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
  std::vector<int64_t> xs = sizes_of(x), ys = sizes_of(out);
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], OH = ys[2], OW = ys[3];
  if (!is_bilinear(op)) {
    std::vector<int64_t> ih = nearest_taps(H, OH, args[2]), iw = nearest_taps(W, OW, args[3]);
    visit_dtype(in.dtype(), [&]<class T>() {
      if constexpr (std::is_floating_point_v<opmath_t<T>> || std::is_same_v<T, uint8_t>)
        nearest<T>(x.data_ptr<T>(), out.data_ptr<T>(), cl, N, C, H, W, ih, iw);
    });
    return;
  }
  bool align = args[2].to_bool();
  visit_floating(in.dtype(), [&]<class T>() {
    using A = opmath_t<T>;
    bilinear<T>(x.data_ptr<T>(), out.data_ptr<T>(), cl, N, C, H, W, linear_taps<A>(H, OH, align, args[3]),
                linear_taps<A>(W, OW, align, args[4]));
  });
}

}  // namespace

void register_upsample_ops(OpTable& t) {
  t.set(OpId::upsample_nearest2d, upsample_shape, upsample_kernel);
  t.set(OpId::upsample_bilinear2d, upsample_shape, upsample_kernel);
}

}  // namespace sinter
