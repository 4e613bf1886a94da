// upsample_nearest2d and upsample_bilinear2d with PyTorch's index rules: nearest takes floor(dst * scale)
// with scale = in/out (or 1/scales when given); bilinear maps dst to src = scale*(dst+0.5)-0.5 clamped at 0,
// or dst*(in-1)/(out-1) with align_corners. Source indices and weights are computed once per row and column.
#include <cmath>

#include "ops/linalg_util.h"
#include "ops/upsample_taps.h"

namespace sinter {
namespace {

bool is_bilinear(OpId op) { return op == OpId::upsample_bilinear2d; }

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
              const std::vector<LinearTap<opmath_t<T>>>& th, const std::vector<LinearTap<opmath_t<T>>>& tw) {
  using A = opmath_t<T>;
  int64_t OH = static_cast<int64_t>(th.size()), OW = static_cast<int64_t>(tw.size());
  if (cl) {
    parallel_for(0, N * OH, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        int64_t n = t / OH;
        const LinearTap<A>& h = th[t % OH];
        const T* r0 = x + (n * H + h.i0) * W * C;
        const T* r1 = x + (n * H + h.i1) * W * C;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const LinearTap<A>& w = tw[ow];
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
                   const LinearTap<A>& h = th[t % OH];
                   const T* plane = x + (t / OH) * H * W;
                   const T* r0 = plane + h.i0 * W;
                   const T* r1 = plane + h.i1 * W;
                   T* out = y + t * OW;
                   for (int64_t ow = 0; ow < OW; ++ow) {
                     const LinearTap<A>& w = tw[ow];
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
