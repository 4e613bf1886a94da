// Tests of conv1d, conv2d (int, "valid" and "same" padding) and conv_transpose2d against direct float64
// loops: stride, padding, dilation, groups (incl. depthwise), bias, channels-last and strided inputs,
// unbatched inputs, every floating dtype, and the errors PyTorch raises for mismatched channels and bad
// arguments.
#include "ops/dispatch.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using V = std::vector<double>;
using I = std::vector<int64_t>;

V vals(const Tensor& t) { return t.to_vector<double>(); }
Tensor make(const V& v, const I& sizes) { return from_vector<double>(v, SymIntList(sizes), kFloat64); }

struct Conv {
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1, groups = 1;
};

// Direct convolution: out[n, o, y, x] = b[o] + sum_{c, i, j} in[n, g*Cg + c, y*sh - pt + i*dh, x*sw - pl +
// j*dw]
// * w[o, c, i, j], reading zeros outside the input.
Tensor ref_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv& p) {
  I xs = x.sizes().hints(), ws = w.sizes().hints();
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], Cg = ws[1], kh = ws[2], kw = ws[3];
  int64_t OH = (H + p.pt + p.pb - p.dh * (kh - 1) - 1) / p.sh + 1;
  int64_t OW = (W + p.pl + p.pr - p.dw * (kw - 1) - 1) / p.sw + 1;
  V xv = vals(x), wv = vals(w), bv = b.defined() ? vals(b) : V(O, 0.0), out;
  int64_t Og = O / p.groups;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xo = 0; xo < OW; ++xo) {
          double s = bv[o];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t ih = y * p.sh - p.pt + i * p.dh, iw = xo * p.sw - p.pl + j * p.dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                int64_t ci = (o / Og) * Cg + c;
                s += xv[((n * C + ci) * H + ih) * W + iw] * wv[((o * Cg + c) * kh + i) * kw + j];
              }
          out.push_back(s);
        }
  return make(out, {N, O, OH, OW});
}

struct Case {
  I x, w;
  Conv p;
};

std::vector<Case> conv_cases() {
  return {
      {{2, 3, 7, 8}, {4, 3, 3, 3}, {}},
      {{2, 3, 7, 8}, {4, 3, 3, 3}, {2, 2, 1, 1, 1, 1}},
      {{1, 4, 9, 9}, {6, 2, 3, 2}, {1, 2, 2, 1, 2, 1, 2, 1, 2}},  // asymmetric kernel, dilation, groups 2
      {{2, 8, 6, 5}, {8, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 8}},  // depthwise
      {{2, 4, 6, 5}, {8, 1, 3, 3}, {2, 1, 1, 1, 1, 1, 1, 1, 4}},  // depthwise with multiplier 2, stride
      // depthwise over 37 channels (two full vectors of 16 and a tail), stride 2; and 16 channels, dilation 2
      {{2, 37, 9, 7}, {37, 1, 3, 3}, {2, 2, 1, 1, 1, 1, 1, 1, 37}},
      {{1, 16, 8, 9}, {16, 1, 3, 3}, {1, 1, 2, 2, 2, 2, 2, 2, 16}},
      {{3, 16, 5, 6}, {12, 16, 1, 1}, {}},                        // 1x1 pointwise
      {{2, 6, 5, 6}, {4, 3, 1, 1}, {1, 1, 0, 0, 0, 0, 1, 1, 2}},  // grouped 1x1
      {{1, 3, 10, 10}, {5, 3, 5, 5}, {3, 2, 2, 2, 2, 2, 1, 2}},
      {{2, 1, 6, 6}, {3, 1, 2, 2}, {1, 1, 0, 0, 0, 0, 2, 2}},
      {{2, 64, 12, 12}, {32, 64, 3, 3}, {1, 1, 1, 1, 1, 1}},  // enough work for the pool
  };
}

Tensor conv(const Tensor& x, const Tensor& w, const Tensor& b, const Conv& p) {
  return conv2d(x, w, b, {p.sh, p.sw}, SymIntList{p.pt, p.pl}, {p.dh, p.dw}, p.groups);
}

TEST(Conv2d, MatchesDirectLoopsAcrossArguments) {
  for (const Case& c : conv_cases()) {
    for (DType dt : {kFloat32, kFloat64}) {
      Tensor x = random(SymIntList(c.x), dt, 1), w = random(SymIntList(c.w), dt, 2);
      Tensor b = random({c.w[0]}, dt, 3);
      Tensor out = conv(x, w, b, c.p);
      EXPECT_EQ(out.dtype(), dt);
      EXPECT_TRUE(out.is_contiguous());
      EXPECT_CLOSE(out, ref_conv2d(x, w, b, c.p)) << SymIntList(c.x).str() << " * " << SymIntList(c.w).str();
      EXPECT_CLOSE(conv(x, w, Tensor(), c.p), ref_conv2d(x, w, Tensor(), c.p));
    }
  }
}

TEST(Conv2d, ChannelsLastInputGivesChannelsLastOutput) {
  for (const Case& c : conv_cases()) {
    Tensor x = random(SymIntList(c.x), kFloat32, 4), w = random(SymIntList(c.w), kFloat32, 5);
    Tensor b = random({c.w[0]}, kFloat32, 6);
    Tensor xcl = x.contiguous(MemoryFormat::kChannelsLast);
    Tensor out = conv(xcl, w, b, c.p);
    if (c.x[1] > 1) EXPECT_TRUE(out.is_contiguous(MemoryFormat::kChannelsLast)) << SymIntList(c.x).str();
    EXPECT_CLOSE(out, ref_conv2d(x, w, b, c.p)) << SymIntList(c.x).str() << " * " << SymIntList(c.w).str();
    // A channels-last weight also selects the channels-last kernel.
    if (c.w[2] > 1 && c.w[1] > 1)
      EXPECT_CLOSE(conv(x, w.contiguous(MemoryFormat::kChannelsLast), b, c.p), ref_conv2d(x, w, b, c.p));
  }
}

TEST(Conv2d, StridedInputsHalfDtypesAndUnbatched) {
  Case c = conv_cases()[2];
  Tensor x = random(SymIntList(c.x), kFloat32, 7), w = random(SymIntList(c.w), kFloat32, 8);
  EXPECT_CLOSE(conv(testing::non_contiguous(x), testing::non_contiguous(w), Tensor(), c.p),
               ref_conv2d(x, w, Tensor(), c.p));
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor xh = x.to(dt), wh = w.to(dt), bh = random({c.w[0]}, dt, 9);
    Tensor out = conv(xh, wh, bh, c.p);
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_CLOSE(out, ref_conv2d(xh, wh, bh, c.p), 1e-2);
  }
  Tensor x3 = random({3, 6, 7}, kFloat32, 10), w3 = random({5, 3, 3, 3}, kFloat32, 11);
  Tensor out = conv2d(x3, w3, Tensor(), {1}, SymIntList{1});
  EXPECT_EQ(out.sizes().hints(), (I{5, 6, 7}));
  EXPECT_CLOSE(out, ref_conv2d(x3.unsqueeze(0), w3, Tensor(), {1, 1, 1, 1, 1, 1}).squeeze({0}));
  // Empty batch.
  EXPECT_EQ(conv2d(random({0, 3, 5, 5}), random({2, 3, 3, 3})).sizes().hints(), (I{0, 2, 3, 3}));
}

TEST(Conv2d, SameAndValidPadding) {
  // kSame pads d*(k-1) in total, the odd one on the bottom/right.
  for (auto [kh, kw, dh, dw] :
       std::vector<std::array<int64_t, 4>>{{3, 3, 1, 1}, {4, 2, 1, 1}, {4, 3, 2, 3}}) {
    Tensor x = random({2, 3, 8, 7}, kFloat32, 12), w = random({4, 3, kh, kw}, kFloat32, 13);
    Conv p;
    p.dh = dh, p.dw = dw;
    int64_t th = dh * (kh - 1), tw = dw * (kw - 1);
    p.pt = th / 2, p.pb = th - th / 2, p.pl = tw / 2, p.pr = tw - tw / 2;
    Tensor out = conv2d(x, w, Tensor(), {1}, kSame, {dh, dw});
    EXPECT_EQ(out.sizes().hints(), (I{2, 4, 8, 7}));
    EXPECT_CLOSE(out, ref_conv2d(x, w, Tensor(), p));
    EXPECT_CLOSE(conv2d(x, w, Tensor(), {1}, kValid, {dh, dw}),
                 ref_conv2d(x, w, Tensor(), Conv{1, 1, 0, 0, 0, 0, dh, dw}));
  }
  EXPECT_ERROR(conv2d(random({1, 3, 8, 8}), random({4, 3, 3, 3}), Tensor(), {2}, kSame), "strided");
  // The row itself takes the mode as a string, as PyTorch's conv2d.padding.
  EXPECT_ERROR(
      dispatch1(OpId::conv2d_padding,
                {random({1, 3, 8, 8}), random({4, 3, 3, 3}), Value(), SymIntList{1}, "full"}, Loc::current()),
      "full");
}

TEST(Conv1d, MatchesConv2dOfHeightOne) {
  Tensor x = random({2, 4, 11}, kFloat32, 14), w = random({6, 2, 3}, kFloat32, 15),
         b = random({6}, kFloat32, 16);
  Tensor out = conv1d(x, w, b, {2}, SymIntList{1}, {2}, 2);
  Tensor ref = ref_conv2d(x.unsqueeze(2), w.unsqueeze(2), b, {1, 2, 0, 1, 0, 1, 1, 2, 2}).squeeze({2});
  EXPECT_CLOSE(out, ref);
  Tensor same = conv1d(x, random({5, 4, 4}, kFloat32, 17), Tensor(), {1}, kSame);
  EXPECT_EQ(same.sizes().hints(), (I{2, 5, 11}));
  EXPECT_CLOSE(same, ref_conv2d(x.unsqueeze(2), random({5, 4, 4}, kFloat32, 17).unsqueeze(2), Tensor(),
                                {1, 1, 0, 1, 0, 2})
                         .squeeze({2}));
  EXPECT_CLOSE(conv1d(x[0], w, b, {1}, SymIntList{0}, {1}, 2),
               ref_conv2d(x.slice(0, 0, 1).unsqueeze(2), w.unsqueeze(2), b, {1, 1, 0, 0, 0, 0, 1, 1, 2})
                   .squeeze({0, 2}));
}

TEST(Conv2d, ErrorsForBadArguments) {
  Tensor x = random({2, 4, 8, 8}), w = random({6, 3, 3, 3});
  EXPECT_ERROR(conv2d(x, w), "groups=1", "to have 3 channels", "got 4 channels");
  EXPECT_ERROR(conv2d(random({2, 6, 8, 8}), random({6, 3, 3, 3}), Tensor(), {1}, SymIntList{0}, {1}, 4),
               "divisible by 4");
  EXPECT_ERROR(conv2d(random({2, 3, 8, 8}), w, random({5})), "bias", "6 elements");
  EXPECT_ERROR(conv2d(random({2, 3, 2, 2}), w), "kernel size");
  EXPECT_ERROR(conv2d(random({2, 3, 8, 8}), w, Tensor(), {0}), "stride");
  EXPECT_ERROR(conv2d(random({2, 3, 8, 8}), w, Tensor(), {1}, SymIntList{-1}), "negative padding");
  EXPECT_ERROR(conv2d(random({2, 3, 8, 8}), w.to(kFloat64)), "float32", "float64");
  EXPECT_ERROR(conv2d(random({2, 3, 8, 8}, kInt64), random({6, 3, 3, 3}, kInt64)), "floating");
  EXPECT_ERROR(conv2d(random({8, 8}), w), "3-D", "4-D");
}

// ---- conv_transpose2d: each input element scatters weight * value into the output ----
Tensor ref_conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t s, int64_t pad,
                            int64_t opad, int64_t groups, int64_t d) {
  I xs = x.sizes().hints(), ws = w.sizes().hints();
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Og = ws[1], kh = ws[2], kw = ws[3], Cg = C / groups;
  int64_t O = Og * groups;
  int64_t OH = (H - 1) * s - 2 * pad + d * (kh - 1) + opad + 1,
          OW = (W - 1) * s - 2 * pad + d * (kw - 1) + opad + 1;
  V xv = vals(x), wv = vals(w), out(N * O * OH * OW, 0.0);
  V bv = b.defined() ? vals(b) : V(O, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH * OW; ++i) out[(n * O + o) * OH * OW + i] = bv[o];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw)
          for (int64_t co = 0; co < Og; ++co)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t oh = ih * s - pad + i * d, ow = iw * s - pad + j * d;
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                int64_t o = (ci / Cg) * Og + co;
                out[((n * O + o) * OH + oh) * OW + ow] +=
                    xv[((n * C + ci) * H + ih) * W + iw] * wv[((ci * Og + co) * kh + i) * kw + j];
              }
  return make(out, {N, O, OH, OW});
}

TEST(ConvTranspose2d, MatchesScatterReference) {
  struct T {
    I x, w;
    int64_t s, pad, opad, groups, d;
  };
  for (const T& c : std::vector<T>{{{2, 3, 4, 5}, {3, 4, 3, 3}, 1, 0, 0, 1, 1},
                                   {{2, 3, 4, 5}, {3, 4, 3, 3}, 2, 1, 1, 1, 1},
                                   {{1, 4, 5, 3}, {4, 3, 2, 3}, 3, 1, 2, 2, 1},
                                   {{2, 2, 3, 3}, {2, 2, 3, 3}, 1, 2, 1, 1, 2},
                                   {{1, 16, 8, 8}, {16, 8, 4, 4}, 2, 1, 0, 1, 1}}) {
    for (DType dt : {kFloat32, kFloat64}) {
      Tensor x = random(SymIntList(c.x), dt, 20), w = random(SymIntList(c.w), dt, 21);
      Tensor b = random({c.w[1] * c.groups}, dt, 22);
      Tensor out = conv_transpose2d(x, w, b, {c.s}, {c.pad}, {c.opad}, c.groups, {c.d});
      EXPECT_CLOSE(out, ref_conv_transpose2d(x, w, b, c.s, c.pad, c.opad, c.groups, c.d))
          << SymIntList(c.x).str() << " s=" << c.s;
    }
  }
  Tensor x = random({2, 3, 4, 5}, kFloat32, 23), w = random({3, 4, 3, 3}, kFloat32, 24);
  Tensor cl = conv_transpose2d(x.contiguous(MemoryFormat::kChannelsLast), w, Tensor(), {2});
  EXPECT_TRUE(cl.is_contiguous(MemoryFormat::kChannelsLast));
  EXPECT_CLOSE(cl, ref_conv_transpose2d(x, w, Tensor(), 2, 0, 0, 1, 1));
  EXPECT_CLOSE(conv_transpose2d(x.to(kBFloat16), w.to(kBFloat16)),
               ref_conv_transpose2d(x.to(kBFloat16), w.to(kBFloat16), Tensor(), 1, 0, 0, 1, 1), 1e-2);
  EXPECT_ERROR(conv_transpose2d(x, w, Tensor(), {1}, {0}, {1}), "output padding");
  EXPECT_ERROR(conv_transpose2d(random({2, 5, 4, 4}), w), "to have 3 channels");
}

}  // namespace
}  // namespace sinter
