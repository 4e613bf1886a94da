// Tests of the elementwise loop utility (src/ops/loops.h) used directly, as other families may: mixed dtypes
// converted at load and store, constants, strided and broadcast operands, short rows packed into chunks, and the
// overlap helpers that in-place ops rely on.
#include "ops/copy.h"
#include "ops/loops.h"

#include "testing.h"

namespace sinter {
namespace {

TEST(PointwiseLoops, MixedDTypesConstantsAndAStridedOutput) {
  Tensor base = zeros({4, 6}, TensorOptions(kBFloat16));
  Tensor out = base.t();  // [6, 4], strides [1, 6]
  Tensor a = from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {6, 1});
  Tensor b = from_vector<double>({0.5, -1, 2, 4});
  loops::Loop loop(out);
  loop.input(a).input(b).constant(Scalar(3));
  loop.run<float, float, float, float>([](float x, float y, float c) { return x * y + c; });
  std::vector<double> got = out.to_vector<double>();
  std::vector<double> bv = {0.5, -1, 2, 4};
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(got[i * 4 + j], (i + 1) * bv[j] + 3) << i << "," << j;
}

TEST(PointwiseLoops, ShortRowsAndBroadcastsAcrossManyChunks) {
  // Inner rows of 3 (packed several to a chunk), a transposed input and a broadcast column.
  Tensor x = testing::random({3, 5000}, kFloat64, 1).t();  // [5000, 3], strides [1, 5000]
  Tensor col = testing::random({5000, 1}, kFloat32, 2);
  Tensor out = empty({5000, 3}, TensorOptions(kFloat64));
  loops::Loop loop(out);
  loop.input(x).input(col);
  loop.run<double, double, double>([](double p, double q) { return p - 2 * q; });
  std::vector<double> xv = x.to_vector<double>(), cv = col.to_vector<double>(), ov = out.to_vector<double>();
  for (size_t i = 0; i < ov.size(); ++i) ASSERT_EQ(ov[i], xv[i] - 2 * cv[i / 3]) << i;
}

TEST(PointwiseLoops, ZeroDimAndEmpty) {
  Tensor out = empty({}, TensorOptions(kInt64));
  loops::Loop loop(out);
  loop.input(scalar_tensor(5, kInt8)).constant(Scalar(true));
  loop.run<int64_t, int64_t, int64_t>([](int64_t p, int64_t q) { return p * 10 + q; });
  EXPECT_EQ(out.item<int64_t>(), 51);
  loop.run<int64_t, int64_t, int64_t>([](int64_t p, int64_t q) { return p - q; });  // a loop can run again
  EXPECT_EQ(out.item<int64_t>(), 4);
  Tensor e = empty({0, 4});
  loops::Loop empty_loop(e);
  empty_loop.input(zeros({4}));
  empty_loop.run<float, float>([](float v) { return v; });
  EXPECT_EQ(empty_loop.numel(), 0);
}

TEST(PointwiseLoops, OverlapHelpers) {
  Tensor x = zeros({4, 4});
  EXPECT_TRUE(may_overlap(x, x.t()));
  EXPECT_TRUE(may_overlap(x, x[2]));
  EXPECT_FALSE(may_overlap(x[1], x[2]));
  EXPECT_FALSE(may_overlap(x, zeros({4, 4})));
  // Elementwise the same memory: used as it is; anything else overlapping: a copy.
  EXPECT_EQ(loops::unalias_input(x, x).data_ptr(), x.data_ptr());
  EXPECT_NE(loops::unalias_input(x, x.t()).data_ptr(), x.data_ptr());
  EXPECT_NE(loops::unalias_input(x, x[0]).data_ptr(), x.data_ptr());
  Tensor y = zeros({3});
  EXPECT_EQ(loops::unalias_input(x[1], y).data_ptr(), y.data_ptr());
}

TEST(PointwiseLoops, ConvertBetweenAnyDTypes) {
  std::vector<double> v = {-2.75, 0, 1.5, 300};
  for (DType to : testing::kAllDTypes) {
    SCOPED_TRACE(dtype_name(to));
    Tensor src = from_vector<double>(v);
    Tensor dst = empty({4}, TensorOptions(to));
    loops::convert(static_cast<const char*>(src.data_ptr()), 8, kFloat64, static_cast<char*>(dst.data_ptr()),
                   static_cast<int64_t>(element_size(to)), to, 4);
    EXPECT_TENSOR_EQ(dst, src.to(to));
  }
}

}  // namespace
}  // namespace sinter
