// Copies across a transposition (NCHW -> channels-last, a transpose made contiguous) run in tiles of 16 rows in the
// C++ kernels: the values and strides are eager's for every inner size around the tile's limits, for row counts
// that are and are not multiples of 16, under static and symbolic sizes and with the work split over threads.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(TransposedCopy, ChannelsLastCopiesMatchEager) {
  auto f = [](const Tensor& x) { return mul(relu(x).contiguous(MemoryFormat::kChannelsLast), Scalar(2.0)); };
  // A compiled function per shape (static sizes: the tiles need a constant inner size), and one with symbolic
  // sizes over all of them.
  auto symbolic = compile(f, {.backend = "inductor", .dynamic = Dynamic::kAlways});
  for (int64_t ch : {3, 16, 32, 64, 65})
    for (auto [h, w] : {std::pair<int64_t, int64_t>{1, 1}, {1, 7}, {4, 4}, {5, 7}, {33, 33}, {64, 64}}) {
      SCOPED_TRACE(fmt::format("C {} H {} W {}", ch, h, w));
      Tensor x = testing::random({2, ch, h, w}, kFloat32, ch * 100 + h);
      Tensor want = f(x);
      for (Tensor got : {compile(f, {.backend = "inductor", .dynamic = Dynamic::kNever})(x), symbolic(x)}) {
        EXPECT_EQ(got.strides().hints(), want.strides().hints());
        EXPECT_CLOSE(got, want, 0.0);
      }
    }
}

TEST(TransposedCopy, TransposesMadeContiguousMatchEager) {
  auto f = [](const Tensor& x) { return add(x.transpose(-1, -2).contiguous(), Scalar(1.0)); };
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{40, 37}, {17, 64}, {16, 16}, {100, 20}, {3, 50}}) {
    Tensor x = testing::random({5, rows, cols}, kFloat32, rows);
    EXPECT_CLOSE(compile(f, {.backend = "inductor", .dynamic = Dynamic::kNever})(x), f(x), 0.0) << rows << "x" << cols;
  }
}

}  // namespace
}  // namespace sinter
