// Compiled outputs have eager's strides also where a decomposition's result would lay out otherwise and the sizes
// are expressions of symbols that may be 0: softmax of a transposed conv output is contiguous in eager, and stays
// so compiled (found by sinter fuzz, seed 111 case 2246: the dense check compared (s1 - 3)//2 + 1 with
// Max(1, (s1 - 3)//2 + 1) and kept the transposed layout).
#include <gtest/gtest.h>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(OutputStrides, SoftmaxOfATransposedConvOutputUnderSymbolicSizes) {
  Tensor w = testing::random({2, 1, 3, 3}, kFloat32, 1);
  auto f = [&w](const Tensor& x) { return softmax(conv2d(x, w, {}, {2, 2}, {1, 1}, {2, 2}).transpose(2, 0), -3); };
  for (const char* backend : {"inductor", "aot_eager"}) {
    auto c = compile(f, {.backend = backend, .dynamic = Dynamic::kAlways});
    for (int64_t h : {7, 9, 12}) {
      Tensor x = testing::random({1, 1, h, h + 2}, kFloat32, h);
      Tensor want = f(x), got = c(x);
      EXPECT_EQ(got.strides().hints(), want.strides().hints()) << backend << " h=" << h;
      EXPECT_CLOSE(got, want);
    }
  }
}

}  // namespace
}  // namespace sinter
