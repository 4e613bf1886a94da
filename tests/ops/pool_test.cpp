// Tests of max_pool2d, avg_pool2d, adaptive_avg_pool2d, upsample_nearest2d and upsample_bilinear2d:
// hand-computed PyTorch values, float64 loop references over
// stride/padding/dilation/ceil_mode/count_include_pad/divisor_override, channels-last layouts, every
// supported dtype, and the argument errors PyTorch raises.
#include <cmath>

#include "ops/dispatch.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using V = std::vector<double>;
using I = std::vector<int64_t>;

V vals(const Tensor& t) { return t.to_vector<double>(); }
Tensor make(const V& v, const I& sizes, DType dtype = kFloat64) {
  return from_vector<double>(v, SymIntList(sizes), dtype);
}
Tensor seq(const I& sizes, DType dtype = kFloat32) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  V v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return make(v, sizes, dtype);
}

struct PoolArgs {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  bool ceil = false, include_pad = true;
  int64_t divisor = 0;
};

// Output size as PyTorch's pooling_output_shape; a window must start inside the input or its left padding.
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil && (o - 1) * s >= in + p) --o;
  return o;
}

// Reference pools over [N, C, H, W] in float64: every tap checked against the bounds one by one.
Tensor ref_pool(const Tensor& x, const PoolArgs& a, bool max) {
  I xs = x.sizes().hints();
  int64_t P = xs[0] * xs[1], H = xs[2], W = xs[3];
  int64_t OH = out_size(H, a.kh, a.sh, a.ph, a.dh, a.ceil), OW = out_size(W, a.kw, a.sw, a.pw, a.dw, a.ceil);
  V xv = vals(x), out;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double best = -INFINITY, sum = 0;
        int64_t count = 0, padded = 0;
        for (int64_t i = 0; i < a.kh; ++i)
          for (int64_t j = 0; j < a.kw; ++j) {
            int64_t ih = oh * a.sh - a.ph + i * a.dh, iw = ow * a.sw - a.pw + j * a.dw;
            // avg_pool counts padding taps but not taps past the right padding (PyTorch's pool_size).
            if (ih < H + a.ph && iw < W + a.pw) ++padded;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            double v = xv[(p * H + ih) * W + iw];
            if (v > best || std::isnan(v)) best = std::isnan(best) ? best : v;
            sum += v;
            ++count;
          }
        if (max) {
          out.push_back(best);
        } else {
          int64_t div = a.divisor ? a.divisor : a.include_pad ? padded : count;
          out.push_back(count == 0 ? 0.0 : sum / static_cast<double>(div));
        }
      }
  return make(out, {xs[0], xs[1], OH, OW});
}

Tensor max_pool(const Tensor& x, const PoolArgs& a) {
  return max_pool2d(x, {a.kh, a.kw}, {a.sh, a.sw}, {a.ph, a.pw}, {a.dh, a.dw}, a.ceil);
}
Tensor avg_pool(const Tensor& x, const PoolArgs& a) {
  return avg_pool2d(x, {a.kh, a.kw}, {a.sh, a.sw}, {a.ph, a.pw}, a.ceil, a.include_pad,
                    a.divisor ? std::optional<int64_t>(a.divisor) : std::nullopt);
}

std::vector<PoolArgs> pool_cases() {
  return {{2, 2, 2, 2, 0, 0},
          {3, 3, 2, 2, 1, 1},
          {3, 3, 2, 2, 1, 1, 1, 1, true},
          {3, 2, 1, 2, 1, 0, 1, 1, true},
          {2, 2, 3, 3, 1, 1, 1, 1, true},
          {3, 3, 2, 2, 1, 1, 2, 2},
          {3, 3, 2, 2, 1, 1, 1, 1, true, false},
          {3, 3, 2, 2, 1, 1, 1, 1, false, true, 5},
          {4, 4, 3, 3, 2, 2, 1, 1, true, false}};
}

TEST(Pool, HandComputedValues) {
  Tensor x = seq({1, 1, 4, 4});
  EXPECT_TENSOR_EQ(max_pool2d(x, {2, 2}), make({5, 7, 13, 15}, {1, 1, 2, 2}));
  EXPECT_TENSOR_EQ(avg_pool2d(x, {2, 2}), make({2.5, 4.5, 10.5, 12.5}, {1, 1, 2, 2}));
  // ceil_mode keeps a last, partial window: 5 -> 3 instead of 2.
  Tensor y = seq({1, 1, 5, 5});
  EXPECT_TENSOR_EQ(max_pool2d(y, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true),
                   make({6, 8, 9, 16, 18, 19, 21, 23, 24}, {1, 1, 3, 3}));
  // count_include_pad=False divides by the real elements only: corner window {0, 1, 5, 6} / 4 vs / 9.
  EXPECT_CLOSE(avg_pool2d(y, {3, 3}, {2, 2}, {1, 1}, false, false).slice(2, 0, 1).slice(3, 0, 1),
               make({3.0}, {1, 1, 1, 1}));
  EXPECT_CLOSE(avg_pool2d(y, {3, 3}, {2, 2}, {1, 1}, false, true).slice(2, 0, 1).slice(3, 0, 1),
               make({12.0 / 9.0}, {1, 1, 1, 1}));
  // adaptive 5 -> 2: windows rows/cols [0, 3) and [2, 5).
  EXPECT_CLOSE(adaptive_avg_pool2d(y, {2, 2}), make({6, 8, 16, 18}, {1, 1, 2, 2}));
}

TEST(Pool, MatchReferencesAcrossArguments) {
  for (const PoolArgs& a : pool_cases()) {
    for (DType dt : {kFloat32, kFloat64}) {
      Tensor x = random({2, 3, 9, 8}, dt, 1);
      EXPECT_CLOSE(max_pool(x, a), ref_pool(x, a, true))
          << "max k=" << a.kh << " s=" << a.sh << " p=" << a.ph;
      if (a.dh == 1) EXPECT_CLOSE(avg_pool(x, a), ref_pool(x, a, false)) << "avg k=" << a.kh << " s=" << a.sh;
      // Channels-last in, channels-last out; strided input.
      Tensor xcl = x.contiguous(MemoryFormat::kChannelsLast);
      Tensor m = max_pool(xcl, a);
      EXPECT_TRUE(m.is_contiguous(MemoryFormat::kChannelsLast));
      EXPECT_CLOSE(m, ref_pool(x, a, true));
      if (a.dh == 1) EXPECT_CLOSE(avg_pool(xcl, a), ref_pool(x, a, false));
      EXPECT_CLOSE(max_pool(testing::non_contiguous(x), a), ref_pool(x, a, true));
    }
  }
}

TEST(Pool, DtypesNanAndUnbatched) {
  PoolArgs a{3, 3, 2, 2, 1, 1};
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor x = random({2, 3, 7, 6}, dt, 2);
    EXPECT_CLOSE(max_pool(x, a), ref_pool(x, a, true));  // max is exact in any dtype
    EXPECT_CLOSE(avg_pool(x, a), ref_pool(x, a, false), 1e-2);
  }
  for (DType dt : {kInt64, kInt32, kUInt8}) {
    Tensor x = random({2, 3, 7, 6}, dt, 3);
    EXPECT_TENSOR_EQ(max_pool(x, a), ref_pool(x, a, true));
  }
  Tensor xi = make({1, 2, 3, 4, 5, 6, 7, 8, 10}, {1, 1, 3, 3}, kInt64);
  EXPECT_TENSOR_EQ(avg_pool2d(xi, {2, 2}, {1, 1}),
                   make({3, 4, 6, 7}, {1, 1, 2, 2}));  // 29 / 4 truncates to 7
  Tensor n = make({1, NAN, 3, 4}, {1, 1, 2, 2}, kFloat32);
  EXPECT_TRUE(std::isnan(max_pool2d(n, {2, 2}).item<float>()));
  Tensor x3 = random({3, 6, 6}, kFloat32, 4);
  EXPECT_CLOSE(max_pool(x3, a), ref_pool(x3.unsqueeze(0), a, true).squeeze({0}));
  Tensor x = random({2, 5, 7, 9}, kFloat32, 5);
  for (I os : {I{1, 1}, I{3, 4}, I{7, 9}, I{5, 11}}) {
    // adaptive: window [floor(o*in/out), ceil((o+1)*in/out)).
    V xv = vals(x), out;
    for (int64_t p = 0; p < 10; ++p)
      for (int64_t oh = 0; oh < os[0]; ++oh)
        for (int64_t ow = 0; ow < os[1]; ++ow) {
          int64_t h0 = oh * 7 / os[0], h1 = ((oh + 1) * 7 + os[0] - 1) / os[0];
          int64_t w0 = ow * 9 / os[1], w1 = ((ow + 1) * 9 + os[1] - 1) / os[1];
          double s = 0;
          for (int64_t i = h0; i < h1; ++i)
            for (int64_t j = w0; j < w1; ++j) s += xv[(p * 7 + i) * 9 + j];
          out.push_back(s / static_cast<double>((h1 - h0) * (w1 - w0)));
        }
    Tensor ref = make(out, {2, 5, os[0], os[1]});
    EXPECT_CLOSE(adaptive_avg_pool2d(x, SymIntList(os)), ref);
    Tensor cl = adaptive_avg_pool2d(x.contiguous(MemoryFormat::kChannelsLast), SymIntList(os));
    EXPECT_CLOSE(cl, ref);
  }
}

TEST(Pool, ArgumentErrors) {
  Tensor x = random({1, 2, 5, 5});
  EXPECT_ERROR(max_pool2d(x, {3, 3}, {1, 1}, {2, 2}), "half of the kernel size");
  EXPECT_ERROR(max_pool2d(x, {0, 2}), "kernel size");
  EXPECT_ERROR(max_pool2d(x, {2, 2}, {0, 1}), "stride");
  EXPECT_ERROR(max_pool2d(x, {2, 2}, {1, 1}, {0, 0}, {0, 1}), "dilation");
  EXPECT_ERROR(max_pool2d(random({1, 2, 2, 2}), {3, 3}, {1, 1}, {1, 1}, {2, 2}), "too small");
  EXPECT_ERROR(max_pool2d(random({5, 5}), {2, 2}), "3-D", "4-D");
  EXPECT_ERROR(max_pool2d(random({1, 2, 5, 5}, kBool), {2, 2}), "bool");
  EXPECT_ERROR(avg_pool2d(x, {2, 2}, {}, {0}, false, true, 0), "divisor");
  EXPECT_ERROR(avg_pool2d(random({1, 2, 5, 5}, kInt32), {2, 2}), "int32");
  EXPECT_ERROR(adaptive_avg_pool2d(random({1, 2, 5, 5}, kInt64), {2, 2}), "floating");
}

// ---- upsampling ----
Tensor nearest(const Tensor& x, const I& size, std::optional<double> sh = {}, std::optional<double> sw = {}) {
  return dispatch1(OpId::upsample_nearest2d, {x, SymIntList(size), sh, sw}, Loc::current());
}
Tensor bilinear(const Tensor& x, const I& size, bool align, std::optional<double> sh = {},
                std::optional<double> sw = {}) {
  return dispatch1(OpId::upsample_bilinear2d, {x, SymIntList(size), align, sh, sw}, Loc::current());
}

TEST(Upsample, BilinearHandValues) {
  Tensor x = make({1, 2, 3, 4}, {1, 1, 2, 2}, kFloat32);
  // torch.nn.functional.interpolate(x, size=(4, 4), mode='bilinear', align_corners=False / True)
  EXPECT_CLOSE(bilinear(x, {4, 4}, false), make({1.00, 1.25, 1.75, 2.00, 1.50, 1.75, 2.25, 2.50,  //
                                                 2.50, 2.75, 3.25, 3.50, 3.00, 3.25, 3.75, 4.00},
                                                {1, 1, 4, 4}));
  double t = 1.0 / 3.0;
  EXPECT_CLOSE(bilinear(x, {4, 4}, true), make({1, 1 + t, 1 + 2 * t, 2, 1 + 2 * t, 2, 2 + t, 2 + 2 * t,  //
                                                2 + t, 2 + 2 * t, 3, 3 + t, 3, 3 + t, 3 + 2 * t, 4},
                                               {1, 1, 4, 4}));
  EXPECT_CLOSE(interpolate(x, SymIntList{4, 4}, {}, "bilinear", false), bilinear(x, {4, 4}, false));
  EXPECT_CLOSE(bilinear(x, {1, 1}, true), make({1}, {1, 1, 1, 1}));
}

TEST(Upsample, NearestIndexRule) {
  Tensor x = make({1, 2, 3, 4}, {1, 1, 2, 2}, kFloat32);
  EXPECT_TENSOR_EQ(nearest(x, {4, 4}), make({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, {1, 1, 4, 4}));
  // 4 -> 7: floor(dst * 4/7) = 0 0 1 1 2 2 3; with scales_w 1.5: floor(dst / 1.5) = 0 0 1 2 2 3 (3 clamps 4).
  Tensor r = make({10, 11, 12, 13}, {1, 1, 1, 4}, kFloat32);
  EXPECT_TENSOR_EQ(nearest(r, {1, 7}), make({10, 10, 11, 11, 12, 12, 13}, {1, 1, 1, 7}));
  EXPECT_TENSOR_EQ(nearest(r, {1, 7}, {}, 1.5), make({10, 10, 11, 12, 12, 13, 13}, {1, 1, 1, 7}));
  // Downsampling 5 -> 3: floor(dst * 5/3) = 0 1 3.
  Tensor d = make({0, 1, 2, 3, 4}, {1, 1, 1, 5}, kFloat32);
  EXPECT_TENSOR_EQ(nearest(d, {1, 3}), make({0, 1, 3}, {1, 1, 1, 3}));
  Tensor u = make({1, 2, 3, 4}, {1, 1, 2, 2}, kUInt8);
  EXPECT_TENSOR_EQ(nearest(u, {4, 4}), nearest(x, {4, 4}));
}

// Bilinear reference following PyTorch's area_pixel_compute_source_index in float64.
Tensor ref_bilinear(const Tensor& x, int64_t OH, int64_t OW, bool align, std::optional<double> sh,
                    std::optional<double> sw) {
  I xs = x.sizes().hints();
  int64_t P = xs[0] * xs[1], H = xs[2], W = xs[3];
  auto taps = [&](int64_t in, int64_t out, std::optional<double> s, int64_t o, int64_t& i0, int64_t& i1,
                  double& l1) {
    double ratio =
        align ? (out > 1 ? double(in - 1) / double(out - 1) : 0.0) : (s ? 1.0 / *s : double(in) / out);
    double src = align ? ratio * o : std::max(ratio * (o + 0.5) - 0.5, 0.0);
    if (in == out) src = o;
    i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(src)), in - 1);
    i1 = std::min<int64_t>(i0 + 1, in - 1);
    l1 = std::min(std::max(src - i0, 0.0), 1.0);
  };
  V xv = vals(x), out;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t h0, h1, w0, w1;
        double lh, lw;
        taps(H, OH, sh, oh, h0, h1, lh);
        taps(W, OW, sw, ow, w0, w1, lw);
        auto at = [&](int64_t h, int64_t w) { return xv[(p * H + h) * W + w]; };
        double top = (1 - lw) * at(h0, w0) + lw * at(h0, w1), bot = (1 - lw) * at(h1, w0) + lw * at(h1, w1);
        out.push_back((1 - lh) * top + lh * bot);
      }
  return make(out, {xs[0], xs[1], OH, OW});
}

TEST(Upsample, BilinearMatchesReferenceAndLayouts) {
  Tensor x = random({2, 3, 5, 7}, kFloat32, 6);
  for (bool align : {false, true}) {
    for (I os : {I{10, 14}, I{3, 4}, I{5, 7}, I{9, 1}, I{1, 13}}) {
      Tensor ref = ref_bilinear(x, os[0], os[1], align, {}, {});
      EXPECT_CLOSE(bilinear(x, os, align), ref) << os[0] << "x" << os[1] << " align=" << align;
      Tensor cl = bilinear(x.contiguous(MemoryFormat::kChannelsLast), os, align);
      EXPECT_TRUE(cl.is_contiguous(MemoryFormat::kChannelsLast));
      EXPECT_CLOSE(cl, ref);
    }
  }
  // Given scales change the source mapping (align_corners=False only).
  EXPECT_CLOSE(bilinear(x, {8, 11}, false, 1.5, 1.5), ref_bilinear(x, 8, 11, false, 1.5, 1.5));
  for (DType dt : {kFloat64, kFloat16, kBFloat16}) {
    Tensor xd = x.to(dt);
    EXPECT_CLOSE(bilinear(xd, {9, 4}, false), ref_bilinear(xd, 9, 4, false, {}, {}),
                 dt == kFloat64 ? 1e-12 : 1e-2);
  }
  EXPECT_ERROR(bilinear(random({2, 3, 5}), {4, 4}, false), "4-D");
  EXPECT_ERROR(bilinear(x, {0, 4}, false), "greater than 0");
  EXPECT_ERROR(bilinear(random({1, 1, 2, 2}, kInt64), {4, 4}, false), "floating");
  EXPECT_ERROR(nearest(random({1, 1, 2, 2}, kInt64), {4, 4}), "int64");
}

}  // namespace
}  // namespace sinter
