// Tests of the conv2d kernels' work splitting against direct float64 loops: stride-1 convs take the width-only
// im2col with one GEMM per height tap (dilation, asymmetric "same" padding, groups, 1xk and kx1 kernels, halos
// larger than the image, horizontal stride), others (and blocks no taller than the dilation) the full im2col;
// row blocks are sized for 1 to 16 threads, so blocks of one row, ragged last blocks and many blocks per image
// all occur, in both memory formats and both float dtypes.
#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using V = std::vector<double>;
using I = std::vector<int64_t>;

struct Threads {
  int before = get_num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(before); }
};

struct P {
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1, groups = 1;
};

// out[n, o, y, x] = b[o] + sum_{c, i, j} in[n, g*Cg + c, y*sh - pt + i*dh, x*sw - pl + j*dw] * w[o, c, i, j].
Tensor reference(const Tensor& x, const Tensor& w, const Tensor& b, const P& p) {
  I xs = x.sizes().hints(), ws = w.sizes().hints();
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], Cg = ws[1], kh = ws[2], kw = ws[3];
  int64_t OH = (H + p.pt + p.pb - p.dh * (kh - 1) - 1) / p.sh + 1;
  int64_t OW = (W + p.pl + p.pr - p.dw * (kw - 1) - 1) / p.sw + 1;
  V xv = x.contiguous().to_vector<double>(), wv = w.contiguous().to_vector<double>(),
    bv = b.defined() ? b.to_vector<double>() : V(O, 0.0), out;
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
                s += xv[((n * C + (o / Og) * Cg + c) * H + ih) * W + iw] * wv[((o * Cg + c) * kh + i) * kw + j];
              }
          out.push_back(s);
        }
  return from_vector<double>(out, SymIntList(I{N, O, OH, OW}), kFloat64);
}

struct Case {
  I x, w;
  P p;
  bool bias = true;
};

std::vector<Case> cases() {
  return {
      {{3, 8, 13, 11}, {6, 8, 3, 3}, {1, 1, 1, 1, 1, 1}},                  // the resnet shape, small
      {{2, 5, 17, 9}, {7, 5, 3, 3}, {1, 1, 2, 2, 2, 2, 2, 2}, false},       // dilation 2, no bias
      {{2, 4, 10, 12}, {6, 4, 4, 2}, {1, 1, 1, 0, 2, 1, 1, 1}},             // even kernel, asymmetric padding
      {{2, 6, 9, 8}, {4, 3, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 2}},            // groups 2
      {{1, 3, 11, 14}, {5, 3, 1, 3}, {1, 2, 0, 1, 0, 1}},                   // 1x3, horizontal stride 2
      {{2, 3, 8, 6}, {4, 3, 5, 1}, {1, 1, 2, 0, 2, 0, 1, 1}},               // 5x1
      {{1, 2, 3, 4}, {3, 2, 5, 5}, {1, 1, 3, 3, 3, 3, 1, 1}},               // halo larger than the image
      {{2, 4, 15, 15}, {8, 4, 3, 3}, {2, 2, 1, 1, 1, 1}},                   // stride 2: full im2col
      {{1, 16, 40, 7}, {16, 16, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1}},           // many row blocks
      {{2, 16, 6, 6}, {8, 16, 1, 1}, {}},                                   // 1x1: no buffer
      // Dilation 3: blocks of 1-3 rows (many threads) take the full im2col, taller ones the width-only one.
      {{1, 4, 12, 9}, {4, 4, 3, 3}, {1, 1, 3, 3, 3, 3, 3, 3}},
      // Channels a multiple of 16 (float32 channels-last): the implicit GEMM reads one tap's channels for a run
      // of output pixels straight from the input, except across a row end (13 and 10 are no multiple of the
      // micro-tile's rows) or where the padding falls; strides, dilation and asymmetric padding move both.
      {{2, 32, 9, 13}, {16, 32, 3, 3}, {1, 1, 1, 1, 1, 1}},
      {{1, 48, 11, 10}, {8, 48, 3, 3}, {2, 2, 1, 1, 1, 1}},
      {{1, 32, 12, 14}, {8, 32, 3, 3}, {1, 1, 2, 2, 2, 2, 2, 2}},
      {{1, 32, 8, 9}, {4, 32, 4, 2}, {1, 1, 1, 0, 2, 1, 1, 1}},
      {{1, 32, 7, 9}, {64, 32, 3, 3}, {1, 1, 1, 1, 1, 1}},  // 64 outputs: a wider micro-tile
      // Depthwise (one channel per group): channels-last interior pixels go in blocks of 8, 4, 2 and 1, those
      // at the edges one at a time over the taps inside, 64 channels at once; 24, 40 and 100 channels end in a
      // partial vector (100: a second group of 64 with one full vector and a tail).
      {{2, 24, 13, 13}, {24, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 24}},
      {{1, 32, 9, 21}, {32, 1, 3, 3}, {2, 2, 1, 1, 1, 1, 1, 1, 32}},
      {{1, 16, 10, 19}, {16, 1, 5, 5}, {1, 1, 4, 4, 4, 4, 2, 2, 16}},  // dilation 2
      {{2, 3, 5, 6}, {3, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 3}},
      {{1, 40, 7, 7}, {40, 1, 7, 7}, {1, 1, 3, 3, 3, 3, 1, 1, 40}},  // a kernel as large as the image
      {{1, 16, 6, 11}, {16, 1, 3, 3}, {1, 1, 0, 0, 0, 0, 1, 1, 16}},  // no padding: all pixels inside
      {{1, 16, 8, 10}, {16, 1, 4, 4}, {1, 1, 1, 1, 2, 2, 1, 1, 16}},  // even kernel, "same" padding
      {{2, 100, 9, 11}, {100, 1, 5, 5}, {2, 2, 2, 2, 2, 2, 1, 1, 100}},  // 5x5, stride 2, 100 channels
  };
}

Tensor run(const Case& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  const P& p = c.p;
  if (p.pt == p.pb && p.pl == p.pr)
    return conv2d(x, w, b, {p.sh, p.sw}, SymIntList{p.pt, p.pl}, {p.dh, p.dw}, p.groups);
  // Asymmetric padding only comes from "same".
  return conv2d(x, w, b, {p.sh, p.sw}, kSame, {p.dh, p.dw}, p.groups);
}

TEST(ConvKernels, BothLayoutsOnAnyThreadCountMatchDirectLoops) {
  for (int threads : {1, 2, 3, 16}) {
    Threads t(threads);
    for (const Case& c : cases()) {
      for (DType dt : {kFloat32, kFloat64}) {
        Tensor x = random(SymIntList(c.x), dt, 1), w = random(SymIntList(c.w), dt, 2);
        Tensor b = c.bias ? random({c.w[0]}, dt, 3) : Tensor();
        Tensor ref = reference(x, w, b, c.p);
        EXPECT_CLOSE(run(c, x, w, b), ref) << SymIntList(c.x).str() << " threads " << threads;
        Tensor cl = run(c, x.contiguous(MemoryFormat::kChannelsLast), w, b);
        EXPECT_TRUE(cl.is_contiguous(MemoryFormat::kChannelsLast));
        EXPECT_CLOSE(cl, ref) << "channels-last " << SymIntList(c.x).str() << " threads " << threads;
      }
    }
  }
}

// A stem of few input channels with a channels-last weight (as the layout pass leaves an exported CNN's first
// conv) reads its NCHW input in place and writes channels-last: 40 outputs are 32 + 8 lanes, 19 columns blocks
// of 8, 4, 2 and 1 at stride 2 with the padding masked at both edges.
TEST(ConvKernels, FewInputChannelsIntoChannelsLast) {
  Threads t(3);
  for (int64_t c : {1, 3, 4}) {
    Tensor x = random({2, c, 17, 38}, kFloat32, 6), w = random({40, c, 3, 3}, kFloat32, 7), b = random({40}, kFloat32, 8);
    P p{2, 2, 1, 1, 1, 1};
    Tensor ref = reference(x, w, b, p);
    Tensor got = conv2d(x, w.contiguous(MemoryFormat::kChannelsLast), b, {2, 2}, SymIntList{1, 1});
    // (With one channel the weight is contiguous too, and the output is NCHW, as in PyTorch.)
    EXPECT_EQ(got.is_contiguous(MemoryFormat::kChannelsLast), c > 1);
    EXPECT_CLOSE(got, ref) << c << " channels";
    // 16 outputs (one masked vector), no padding, a 7x7 kernel.
    Tensor w16 = random({16, c, 7, 7}, kFloat32, 9);
    EXPECT_CLOSE(conv2d(x.contiguous(MemoryFormat::kChannelsLast), w16, Tensor(), {1, 1}, SymIntList{0, 0}),
                 reference(x, w16, Tensor(), P{}))
        << c << " channels, 7x7";
  }
}

TEST(ConvKernels, LowPrecisionChannelsLastRoundsOnce) {
  // float16/bfloat16 compute in float and round once: equal to the float32 result rounded.
  Threads t(3);
  Tensor x = random({2, 8, 12, 10}, kFloat32, 4), w = random({8, 8, 3, 3}, kFloat32, 5);
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor xl = x.to(dt).contiguous(MemoryFormat::kChannelsLast), wl = w.to(dt);
    Tensor want = conv2d(xl.to(kFloat32), wl.to(kFloat32), Tensor(), {1}, SymIntList{1}).to(dt);
    EXPECT_CLOSE(conv2d(xl, wl, Tensor(), {1}, SymIntList{1}), want, 1e-2);
  }
}

}  // namespace
}  // namespace sinter
