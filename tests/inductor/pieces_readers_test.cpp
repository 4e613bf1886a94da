// A buffer that several nodes write in parts (cat, stack, constant pad) is whole only once all of them are done:
// a reader may not join the kernel that writes its last part. Found by sinter fuzz (seed 813, case 582):
// softmax over dim 0 of cat([y, y, y]) with y [5, 5] fused its column reductions into the row loop writing the
// cat, whose 5 rows happened to match the 5 columns; each column's max and sum read rows not yet written, and 60
// of 75 results were 0.
#include <gtest/gtest.h>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(PiecesReaders, ReductionsOverACatWaitForAllItsParts) {
  auto cat_softmax = [](const Tensor& x) {
    Tensor y = x * 2 + 1;
    return softmax(cat({y, y, y}, 0), 0);
  };
  auto stack_sum = [](const Tensor& x) {
    Tensor y = x * 2 + 1;
    return stack({y, y * 3, y - 1}, 0).sum(0) + amax(stack({y, -y}, 1), DimList{1});
  };
  auto pad_amax = [](const Tensor& x) { return amax(pad(x * 2 + 1, {0, 0, 1, 1}, "constant", -7.0), DimList{0}); };
  for (Dynamic d : {Dynamic::kNever, Dynamic::kAuto}) {
    auto a = compile(cat_softmax, {.backend = "inductor", .dynamic = d});
    auto b = compile(stack_sum, {.backend = "inductor", .dynamic = d});
    auto c = compile(pad_amax, {.backend = "inductor", .dynamic = d});
    for (int64_t n : {5, 7, 16}) {
      Tensor x = testing::random({n, n}, kFloat32, static_cast<uint64_t>(n));
      EXPECT_CLOSE(a(x), cat_softmax(x)) << n;  // exp rounds alike within an ulp
      EXPECT_CLOSE(b(x), stack_sum(x)) << n;
      EXPECT_TENSOR_EQ(c(x), pad_amax(x)) << n;
    }
  }
}

}  // namespace
}  // namespace sinter
