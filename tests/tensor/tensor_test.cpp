// The tensor core: storage sharing, views, copies across dtypes, half/bfloat16 rounding, printing, from_blob.
#include <cmath>
#include <cstring>
#include <sstream>

#include "tensor/half.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::kAllDTypes;

TEST(Tensor, FromVectorRoundTripsEveryDType) {
  for (DType d : kAllDTypes) {
    Tensor t = from_vector<double>({0, 1, 2, 3, 4, 5}, {2, 3}, d);
    EXPECT_EQ(t.dtype(), d);
    EXPECT_EQ(t.sizes().hints(), (std::vector<int64_t>{2, 3}));
    std::vector<double> v = t.to_vector<double>();
    for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], d == kBool ? (i != 0) : i) << dtype_name(d);
  }
}

TEST(Tensor, ViewsShareStorageAndVersion) {
  Tensor x = arange(12, TensorOptions(kFloat32)).view({3, 4});
  Tensor row = x.select(0, 1);
  EXPECT_EQ(row.storage(), x.storage());
  EXPECT_EQ(row.storage_offset().hint(), 4);
  uint64_t v0 = x.version();
  row.fill_(7);
  EXPECT_GT(x.version(), v0);
  EXPECT_EQ(x.to_vector<float>()[5], 7.0f);
  EXPECT_EQ(x.to_vector<float>()[0], 0.0f);
}

TEST(Tensor, TransposeAndPermuteAreViewsWithSwappedStrides) {
  Tensor x = arange(24, TensorOptions(kInt64)).view({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.sizes().hints(), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(p.strides().hints(), (std::vector<int64_t>{1, 12, 4}));
  EXPECT_FALSE(p.is_contiguous());
  Tensor c = p.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  // c[i][j][k] = x[j][k][i] = 12j + 4k + i
  std::vector<int64_t> v = c.to_vector<int64_t>();
  EXPECT_EQ(v[1 * 6 + 1 * 3 + 2], 12 + 8 + 1);
}

TEST(Tensor, ExpandGivesZeroStrides) {
  Tensor x = from_vector<float>({1, 2, 3}, {3, 1});
  Tensor e = x.expand({3, 4});
  EXPECT_EQ(e.strides().hints(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(e.contiguous().to_vector<float>(), (std::vector<float>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  Tensor lead = from_vector<float>({1, 2}).expand({3, 2});
  EXPECT_EQ(lead.sizes().hints(), (std::vector<int64_t>{3, 2}));
  EXPECT_ERROR(from_vector<float>({1, 2}).expand({-1, 2}), "not allowed in a leading, new dimension");
  EXPECT_ERROR(x.expand({2, 4}), "expand", "expanded size 2", "[3, 1]");
}

TEST(Tensor, SliceWithStepAndNegativeBounds) {
  Tensor x = arange(10, TensorOptions(kInt64));
  EXPECT_EQ(x.slice(0, 1, 8, 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(x.slice(0, -3).to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(x.slice(0, 20, 30).numel().hint(), 0);
  EXPECT_EQ(x.slice(0, 5, 2).numel().hint(), 0);
  EXPECT_ERROR(x.slice(0, 0, 5, 0), "slice step must be positive");
}

TEST(Tensor, SelectOutOfRangeNamesIndexAndSize) {
  Tensor x = zeros({2, 5});
  EXPECT_ERROR(x.select(1, 5), "select", "index 5 is out of range", "size 5");
  EXPECT_EQ(x.select(1, -1).sizes().hints(), (std::vector<int64_t>{2}));
}

TEST(Tensor, ViewNeedsCompatibleStrides) {
  Tensor x = zeros({4, 6}).t();
  EXPECT_ERROR(x.view({24}), "view", "reshape");
  EXPECT_EQ(x.view({6, 2, 2}).sizes().hints(), (std::vector<int64_t>{6, 2, 2}));  // splits a dim: allowed
  EXPECT_EQ(zeros({2, 3, 4}).view({-1, 4}).sizes().hints(), (std::vector<int64_t>{6, 4}));
  EXPECT_ERROR(zeros({2, 3}).view({4, -1}), "shape [4, -1] is invalid for a tensor of 6 elements");
}

TEST(Tensor, SplitChunkUnbind) {
  Tensor x = arange(10, TensorOptions(kInt64));
  std::vector<Tensor> parts = x.split(4);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].to_vector<int64_t>(), (std::vector<int64_t>{8, 9}));
  std::vector<Tensor> sized = x.split(SymIntList{3, 7});
  EXPECT_EQ(sized[1].numel().hint(), 7);
  EXPECT_ERROR(x.split(SymIntList{3, 6}), "split sizes [3, 6] sum to 9");
  std::vector<Tensor> ch = x.chunk(3);
  ASSERT_EQ(ch.size(), 3u);
  EXPECT_EQ(ch[0].numel().hint(), 4);
  std::vector<Tensor> rows = x.view({2, 5}).unbind(1);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3].to_vector<int64_t>(), (std::vector<int64_t>{3, 8}));
}

TEST(Tensor, SqueezeUnsqueeze) {
  Tensor x = zeros({1, 3, 1, 2});
  EXPECT_EQ(x.squeeze().sizes().hints(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(x.squeeze(2).sizes().hints(), (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(x.squeeze(1).sizes().hints(), (std::vector<int64_t>{1, 3, 1, 2}));
  EXPECT_EQ(x.unsqueeze(-1).sizes().hints(), (std::vector<int64_t>{1, 3, 1, 2, 1}));
  EXPECT_ERROR(x.unsqueeze(6), "dim 6 is out of range");
}

TEST(Tensor, AsStridedChecksStorageBounds) {
  Tensor x = arange(6, TensorOptions(kFloat32));
  Tensor w = x.as_strided({2, 2}, {1, 2});
  EXPECT_EQ(w.contiguous().to_vector<float>(), (std::vector<float>{0, 2, 1, 3}));
  EXPECT_ERROR(x.as_strided({3, 3}, {3, 1}), "as_strided", "beyond the storage");
}

TEST(Tensor, CopyConvertsDTypesAndBroadcasts) {
  Tensor src = from_vector<float>({1.7f, -2.5f, 0.0f});
  Tensor dst = zeros({2, 3}, TensorOptions(kInt32));
  dst.copy_(src);
  EXPECT_EQ(dst.to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 0, 1, -2, 0}));
  Tensor b = zeros({3}, TensorOptions(kBool));
  b.copy_(src);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_ERROR(zeros({3}).copy_(zeros({2})), "copy_", "cannot be broadcast");
}

TEST(Tensor, CopyIntoOverlappingSelfIsSafe) {
  Tensor x = arange(9, TensorOptions(kFloat32)).view({3, 3});
  x.copy_(x.t());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
}

TEST(Tensor, CloneKeepsChannelsLastLayout) {
  Tensor x = randn({2, 3, 4, 5}).contiguous(kChannelsLast);
  EXPECT_TRUE(x.is_contiguous(kChannelsLast));
  Tensor c = x.clone();
  EXPECT_TRUE(c.is_contiguous(kChannelsLast));
  EXPECT_TENSOR_EQ(c, x);
  EXPECT_TRUE(x.clone(kContiguousFormat).is_contiguous());
}

TEST(Tensor, ToChangesDTypeAndReturnsSelfWhenNothingChanges) {
  Tensor x = from_vector<float>({1.5f, 2.25f});
  EXPECT_TRUE(x.to(kFloat32).is_same(x));
  Tensor d = x.to(kFloat64);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{1.5, 2.25}));
  Tensor c = x.to(kCUDA);  // a GPU, or the simulated device in a test run without one
  EXPECT_TRUE(c.is_cuda());
  EXPECT_TRUE(c.to(kCUDA).is_same(c));
  EXPECT_EQ(c.to(kCPU, kFloat64).to_vector<double>(), (std::vector<double>{1.5, 2.25}));
}

TEST(Tensor, HalfAndBFloat16RoundToNearestEven) {
  // 1 + 2^-11 is halfway between two halfs: rounds to even (1.0); 1 + 3*2^-11 rounds up.
  EXPECT_EQ(static_cast<float>(Half(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  EXPECT_EQ(static_cast<float>(Half(1.0f + 3 * std::ldexp(1.0f, -11))), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(static_cast<float>(Half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(65520.0f))));
  EXPECT_EQ(static_cast<float>(Half(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(static_cast<float>(Half(std::ldexp(1.0f, -26))), 0.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(NAN))));
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(3.0f)), 3.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
  // Every half bit pattern survives float and back.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    Half h;
    h.bits = static_cast<uint16_t>(bits);
    float f = h;
    if (std::isnan(f)) continue;
    ASSERT_EQ(Half(f).bits, h.bits) << bits;
  }
}

TEST(Tensor, ItemAndErrors) {
  EXPECT_EQ(full({}, 2.5).item<double>(), 2.5);
  EXPECT_EQ(full({1, 1}, 3).item<int64_t>(), 3);
  EXPECT_ERROR(zeros({2}).item<float>(), "item()", "2 elements");
  EXPECT_TRUE(static_cast<bool>(full({}, 1)));
  EXPECT_ERROR((void)static_cast<bool>(zeros({3})), "ambiguous");
  Tensor undefined;
  EXPECT_ERROR(undefined.dim(), "undefined");
}

TEST(Tensor, FromBlobWrapsMemoryWithoutCopying) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(data, {2, 3});
  t.select(0, 1).fill_(0);
  EXPECT_EQ(data[3], 0.0f);
  bool freed = false;
  {
    Tensor owned = from_blob(new float[4]{}, {4}, {}, [&](void* p) {
      delete[] static_cast<float*>(p);
      freed = true;
    });
  }
  EXPECT_TRUE(freed);
}

TEST(Tensor, MetaTensorsRunShapeRulesOnly) {
  Tensor m = empty_from_meta(TensorMeta{{2, 3}, {3, 1}, 0, kFloat32, kCPU}, /*with_data=*/false);
  EXPECT_TRUE(m.is_meta());
  Tensor v = m.t().unsqueeze(0);
  EXPECT_EQ(v.sizes().hints(), (std::vector<int64_t>{1, 3, 2}));
  EXPECT_TRUE(v.is_meta());
  EXPECT_ERROR(m.data_ptr(), "no data");
}

TEST(Tensor, NegativeOrOverflowingSizesAreErrors) {
  EXPECT_ERROR(zeros({2, -1}), "zeros", "non-negative");
  EXPECT_ERROR(empty({int64_t{1} << 40, int64_t{1} << 40}), "overflow");
}

TEST(Tensor, PrintsLikePyTorch) {
  EXPECT_EQ(from_vector<float>({1, 2, 3}).str(), "tensor([1., 2., 3.])");
  EXPECT_EQ(from_vector<float>({1.5f, -2.25f}).str(), "tensor([ 1.5000, -2.2500])");
  EXPECT_EQ(from_vector<int64_t>({1, 20}, {2, 1}).str(), "tensor([[ 1],\n        [20]])");
  EXPECT_EQ(from_vector<double>({0.5}).str(), "tensor([0.5000], dtype=torch.float64)");
  EXPECT_EQ(from_vector<bool>({true, false}).str(), "tensor([ True, False])");
  EXPECT_EQ(zeros({0, 3}).str(), "tensor([], size=[0, 3])");
  std::ostringstream os;
  os << full({}, 7);
  EXPECT_EQ(os.str(), "tensor(7)");
  std::string big = arange(2000, TensorOptions(kInt64)).str();
  EXPECT_NE(big.find("..."), std::string::npos);
  EXPECT_NE(big.find("1999"), std::string::npos);
}

}  // namespace
}  // namespace sinter
