// A GEMM's left operand x[..., K] is read as one [M, K] matrix only when its leading dims collapse into rows at
// one stride. Found by sinter fuzz (seed 2026120802, case 2920): a conv's [2, 1, 1, 1] output expanded to
// [1, 2, 1, 3, 4] (strides 0, 1, 1, 0, 0) into a Linear(4, 16) passed as 6 rows 1 apart, because the size-1 dim
// between the 2 and the 3 was compared instead of skipped; half the results were wrong.
#include <gtest/gtest.h>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(GemmRowsView, RowsThatDoNotCollapseAreNotOneMatrix) {
  manual_seed(7);
  nn::Linear lin(4, 16, false);
  Tensor w = testing::random({1, 1, 3, 3}, kFloat32, 2), bias = testing::random({1}, kFloat32, 3);
  auto conv_expand_linear = [&](const Tensor& x) {
    return lin(conv2d(x, w, bias, {2}, {1}, {2}).expand({1, -1, -1, 3, 4}));
  };
  // Rows [n, 1, 3] at strides [12, 4, 0]: an expanded dim inside the rows, never one matrix either.
  auto expanded_rows = [&](const Tensor& x) {
    Tensor rows = (x * 2).narrow(1, 0, 1).unsqueeze(2).expand({-1, -1, 3, -1});
    return matmul(rows, lin.weight.t()) + 1;
  };
  for (Dynamic d : {Dynamic::kNever, Dynamic::kAuto}) {
    auto a = compile(conv_expand_linear, {.backend = "inductor", .dynamic = d});
    auto b = compile(expanded_rows, {.backend = "inductor", .dynamic = d});
    for (int64_t n : {2, 3}) {
      Tensor x = testing::random({n, 1, 3, 3}, kFloat32, static_cast<uint64_t>(n));
      EXPECT_CLOSE(a(x), conv_expand_linear(x)) << n;
      Tensor y = testing::random({n, 3, 4}, kFloat32, static_cast<uint64_t>(n) + 10);
      EXPECT_CLOSE(b(y), expanded_rows(y)) << n;
    }
  }
}

}  // namespace
}  // namespace sinter
