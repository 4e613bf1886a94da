// Outputs of at least loops::kStreamMinBytes are written with streaming stores (computed in L1, then copied
// around the caches): results must equal what ordinary stores give, also for an output that starts off a
// cache line, has a tail shorter than a chunk, is converted on the way out (bfloat16), is written in place,
// runs on one thread or several, and for the plain stream_copy helper at every alignment.
#include "ops/loops.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "testing.h"

namespace sinter {
namespace {

// Elements of float32 just above the streaming threshold, with an odd tail.
constexpr int64_t kBig = loops::kStreamMinBytes / 4 + 1237;

TEST(PointwiseStream, LargeFloatOutputsEqualOrdinaryStores) {
  Tensor a = testing::random({kBig}, kFloat32, 1), b = testing::random({kBig}, kFloat32, 2);
  std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
  for (int threads : {1, 0}) {  // one thread, then the default pool
    set_num_threads(threads);
    std::vector<float> sum = add(a, b).to_vector<float>();
    std::vector<float> scaled = (a * 1.5).to_vector<float>();
    // A three-input float functor (lerp with a tensor weight) takes the streamed functor path as add does.
    std::vector<float> mixed = lerp(a, b, b).to_vector<float>();
    std::vector<float> mixed_small = lerp(a.narrow(0, kBig - 5000, 5000), b.narrow(0, kBig - 5000, 5000),
                                          b.narrow(0, kBig - 5000, 5000)).to_vector<float>();
    for (int64_t i = 0; i < kBig; ++i) {
      ASSERT_EQ(sum[i], av[i] + bv[i]) << i;
      ASSERT_EQ(scaled[i], av[i] * 1.5f) << i;
    }
    for (int64_t i = 0; i < 5000; ++i) ASSERT_EQ(mixed[kBig - 5000 + i], mixed_small[i]) << i;
    EXPECT_NEAR(mixed[7], av[7] + bv[7] * (bv[7] - av[7]), 1e-6);
  }
  set_num_threads(0);
}

TEST(PointwiseStream, OutputOffTheCacheLineAndInPlace) {
  // A view 3 elements into its storage: the first chunk is shortened so later ones stream whole lines.
  Tensor storage = zeros({kBig + 3});
  Tensor x = storage.narrow(0, 3, kBig);
  Tensor y = testing::random({kBig}, kFloat32, 3);
  x.add_(y);
  x.mul_(2);
  std::vector<float> got = storage.to_vector<float>(), yv = y.to_vector<float>();
  EXPECT_EQ(got[0], 0.f);
  EXPECT_EQ(got[2], 0.f);
  for (int64_t i = 0; i < kBig; ++i) ASSERT_EQ(got[i + 3], yv[i] * 2) << i;
}

TEST(PointwiseStream, Bfloat16OutputIsRoundedThenStreamed) {
  const int64_t n = loops::kStreamMinBytes / 2 + 77;  // bf16 elements: 2 bytes each
  Tensor a = testing::random({n}, kFloat32, 4).to(kBFloat16), b = testing::random({n}, kFloat32, 5).to(kBFloat16);
  Tensor got = add(a, b);
  ASSERT_EQ(got.dtype(), kBFloat16);
  // Reference: the float sum, rounded by the copy path.
  Tensor want = add(a.to(kFloat32), b.to(kFloat32)).to(kBFloat16);
  EXPECT_TENSOR_EQ(got, want);
}

TEST(PointwiseStream, NonContiguousLargeOutputsUseOrdinaryStores) {
  // Every second element of a large buffer: not one contiguous run, so no streaming; results still right.
  Tensor storage = zeros({2 * kBig});
  Tensor x = storage.view({kBig, 2}).select(1, 1);
  x.fill_(1);
  x.add_(x);
  std::vector<float> got = storage.view({kBig, 2}).select(1, 1).contiguous().to_vector<float>();
  for (int64_t i = 0; i < kBig; i += 4099) ASSERT_EQ(got[i], 2.f) << i;
  EXPECT_EQ(storage.view({kBig, 2}).select(1, 0).sum().item<double>(), 0.0);
}

TEST(PointwiseStream, StreamCopyAtEveryAlignment) {
  std::vector<char> src(1000), dst(1100);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 7 + 1);
  for (int off = 0; off < 20; ++off) {
    for (int64_t len : {0, 1, 15, 16, 17, 63, 64, 65, 200, 1000 - 20}) {
      std::fill(dst.begin(), dst.end(), 0);
      loops::stream_copy(dst.data() + off, src.data() + off % 5, len);
      loops::stream_fence();
      ASSERT_EQ(std::memcmp(dst.data() + off, src.data() + off % 5, static_cast<size_t>(len)), 0) << off << " " << len;
      for (int i = 0; i < off; ++i) ASSERT_EQ(dst[i], 0);
      ASSERT_EQ(dst[off + len], 0) << off << " " << len;
    }
  }
}

TEST(PointwiseStream, StreamScaleAtEveryAlignment) {
  std::vector<float> src(300), dst(340);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.37f - 20.f;
  src[5] = std::numeric_limits<float>::quiet_NaN();
  src[6] = std::numeric_limits<float>::infinity();
  for (int off = 0; off < 20; ++off) {
    for (int64_t len : {0, 1, 3, 4, 15, 16, 17, 31, 32, 33, 100, 280}) {
      std::fill(dst.begin(), dst.end(), 0.f);
      const float k = 1.0f / 3.0f;
      loops::stream_scale(dst.data() + off, src.data() + off % 3, len, k);
      loops::stream_fence();
      for (int64_t i = 0; i < len; ++i) {
        const float want = src[off % 3 + i] * k;
        if (std::isnan(want))
          ASSERT_TRUE(std::isnan(dst[off + i])) << off << " " << len << " " << i;
        else
          ASSERT_EQ(dst[off + i], want) << off << " " << len << " " << i;
      }
      for (int i = 0; i < off; ++i) ASSERT_EQ(dst[i], 0.f);
      ASSERT_EQ(dst[off + len], 0.f) << off << " " << len;
    }
  }
}

// Large (streamed) softmax and layer_norm outputs with an odd row length (rows start off the 64-byte line, row
// tails shorter than a vector), a NaN row, an infinite element and a constant row: each row as the same row
// computed alone (not streamed), and NaN stays in its row. Softmax's paths (vec_rows.cpp, softmax_row): row 0
// two passes on a sampled shift; row 4 -inf among the samples, then the max pass with the clamp; row 5 a range
// wider than 104; row 6 a max past 40 (exp_le0_fast_v); rows 7-9 two passes redone with the max: an element
// far above the samples (the sum overflows), a -inf and float's lowest between them; row 10 -1e9 (two passes
// suffice). Those also against float64.
TEST(NormStream, OddRowsNanAndInfRows) {
  const int64_t cols = 1037, rows = loops::kStreamMinBytes / (4 * cols) + 5;
  Tensor x = testing::random({rows, cols}, kFloat32, 9) * 4;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  x.select(0, 1).select(0, 17).fill_(nan);
  x.select(0, 2).select(0, 0).fill_(inf);
  x.select(0, 4).narrow(0, 100, 300).fill_(-inf);
  x.select(0, 5).copy_(linspace(-150, 20, cols));
  x.select(0, 6).add_(500);
  x.select(0, 7).select(0, 17).fill_(100);
  x.select(0, 8).select(0, 17).fill_(-inf);
  x.select(0, 9).narrow(0, 500, 300).fill_(std::numeric_limits<float>::lowest());
  x.select(0, 10).narrow(0, 500, 300).fill_(-1e9);
  x.select(0, rows - 1).fill_(2.5);
  Tensor s = softmax(x, -1), ln = layer_norm(x, {cols});
  std::vector<int64_t> checked = {rows - 2, rows - 1};
  for (int64_t r = 0; r <= 10; ++r) checked.push_back(r);
  for (int64_t r : checked) {
    Tensor row = x.narrow(0, r, 1).clone();
    EXPECT_TENSOR_EQ(s.narrow(0, r, 1), softmax(row, -1)) << r;
    EXPECT_TENSOR_EQ(ln.narrow(0, r, 1), layer_norm(row, {cols})) << r;
  }
  for (int64_t r : {0, 4, 5, 6, 7, 8, 9, 10})
    EXPECT_CLOSE(s.narrow(0, r, 1), softmax(x.narrow(0, r, 1).to(kFloat64), -1).to(kFloat32)) << r;
  for (int64_t r : {4, 8, 9, 10}) {  // a masked element of each
    const int64_t masked = r == 4 ? 150 : r == 8 ? 17 : 600;
    EXPECT_EQ(s.select(0, r).select(0, masked).item<float>(), 0.f) << r;
  }
  EXPECT_NEAR(s.select(0, 7).select(0, 17).item<double>(), 1.0, 1e-6);
  EXPECT_TRUE(std::isnan(s.select(0, 1).select(0, 3).item<float>()));
  EXPECT_TRUE(std::isnan(ln.select(0, 1).select(0, 3).item<float>()));
  EXPECT_FALSE(std::isnan(s.select(0, 0).sum().item<float>()));
  EXPECT_NEAR(s.select(0, 0).sum().item<double>(), 1.0, 1e-5);
  EXPECT_NEAR(s.select(0, rows - 1).select(0, 5).item<double>(), 1.0 / cols, 1e-9);
  EXPECT_EQ(ln.select(0, rows - 1).abs().amax().item<float>(), 0.f);
}

// softmax, log_softmax and layer_norm stream large outputs row by row: the rows must equal those of a small
// (not streamed) input with the same rows, for float32 and for bfloat16 (rounded, then streamed).
TEST(NormStream, LargeRowOutputsEqualSmallOnes) {
  const int64_t cols = 1000, rows = loops::kStreamMinBytes / (2 * cols) + 3;  // bf16 outputs stream too
  Tensor x = testing::random({rows, cols}, kFloat32, 6) * 3;
  Tensor head = x.narrow(0, 0, 5).clone(), tail = x.narrow(0, rows - 5, 5).clone();
  Tensor w = testing::random({cols}, kFloat32, 7), b = testing::random({cols}, kFloat32, 8);
  for (DType dt : {kFloat32, kBFloat16}) {
    Tensor xd = x.to(dt), hd = head.to(dt), td = tail.to(dt), wd = w.to(dt), bd = b.to(dt);
    Tensor s = softmax(xd, -1), ls = log_softmax(xd, -1), ln = layer_norm(xd, {cols}, wd, bd);
    EXPECT_TENSOR_EQ(s.narrow(0, 0, 5), softmax(hd, -1));
    EXPECT_TENSOR_EQ(s.narrow(0, rows - 5, 5), softmax(td, -1));
    EXPECT_TENSOR_EQ(ls.narrow(0, rows - 5, 5), log_softmax(td, -1));
    EXPECT_TENSOR_EQ(ln.narrow(0, 0, 5), layer_norm(hd, {cols}, wd, bd));
    EXPECT_TENSOR_EQ(ln.narrow(0, rows - 5, 5), layer_norm(td, {cols}, wd, bd));
  }
}

}  // namespace
}  // namespace sinter
