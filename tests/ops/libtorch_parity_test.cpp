// LibTorch spellings a ported program reaches for: an untyped item() returning a Scalar, sizes().vec(), sizes
// and dtypes printed to a stream, one int where sizes go, a dtype where options go, the TensorOptions builder.
#include <gtest/gtest.h>

#include <sstream>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(LibTorchParity, UntypedItemReturnsAScalarOfTheTensorsKind) {
  Scalar f = full({}, 2.5).item();
  EXPECT_TRUE(f.is_floating());
  EXPECT_EQ(f.to_double(), 2.5);
  Scalar i = arange(4).sum().item();
  EXPECT_FALSE(i.is_floating());
  EXPECT_EQ(i.to_int(), 6);
  Scalar b = (arange(3) > 1).any().item();
  EXPECT_TRUE(b.is_bool());
  EXPECT_TRUE(b.to_bool());
  EXPECT_ERROR(arange(3).item(), "cannot be converted to a scalar");
}

TEST(LibTorchParity, SizesVecAndPrinting) {
  Tensor x = zeros({2, 3, 4});
  std::vector<int64_t> v = x.sizes().vec();
  EXPECT_EQ(v, (std::vector<int64_t>{2, 3, 4}));
  std::ostringstream os;
  os << x.sizes() << " " << x.strides() << " " << x.dtype();
  EXPECT_EQ(os.str(), "[2, 3, 4] [12, 4, 1] float32");
}

TEST(LibTorchParity, OneIntWhereSizesGo) {
  Tensor x = arange(12).view({3, 4});
  EXPECT_EQ(x.view(-1).sizes().vec(), (std::vector<int64_t>{12}));
  EXPECT_EQ(x.reshape(-1).sizes().vec(), (std::vector<int64_t>{12}));
  EXPECT_EQ(zeros(5).sizes().vec(), (std::vector<int64_t>{5}));
  EXPECT_EQ(ones(3, kInt64).sum().item<int64_t>(), 3);
  EXPECT_EQ(arange(1).expand(4).numel(), 4);
  EXPECT_EQ(x.split(2, 1).size(), 2u);  // an int split size, not a list of one size
  EXPECT_EQ(x.split({1, 3}, 1)[1].size(1), 3);
  EXPECT_ERROR(x.view(5), "view", "[5]");
}

TEST(LibTorchParity, DTypeOrDeviceWhereOptionsGo) {
  EXPECT_EQ(zeros({2, 3}, kInt64).dtype(), kInt64);
  EXPECT_EQ(ones({2}, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(empty({2}, kCPU).dtype(), kFloat32);
  EXPECT_EQ(arange(5, kFloat32).dtype(), kFloat32);
  EXPECT_EQ(full({2}, 7, kInt32).dtype(), kInt32);
  EXPECT_EQ(randint(0, 10, {4}, kInt32).dtype(), kInt32);
  EXPECT_EQ(zeros({2}, kFloat16).to(kCPU).dtype(), kFloat16);
}

TEST(LibTorchParity, TensorOptionsBuilder) {
  TensorOptions o = TensorOptions().dtype(kInt64).device(kCPU);
  EXPECT_EQ(o.dtype(), kInt64);
  EXPECT_EQ(o.device(), kCPU);
  EXPECT_FALSE(o.requires_grad());
  EXPECT_TRUE(o.has_dtype());
  EXPECT_FALSE(TensorOptions().has_dtype());
  EXPECT_EQ(TensorOptions().dtype(), kFloat32);  // the default dtype when none is set
  EXPECT_EQ(zeros({2}, o).dtype(), kInt64);
  EXPECT_EQ(zeros({2}, dtype(kFloat64).requires_grad(false)).dtype(), kFloat64);
  EXPECT_TRUE(zeros({2}, requires_grad()).requires_grad());
  EXPECT_EQ(zeros({2}, device(kCPU)).device(), kCPU);
  // Without a dtype, full and arange infer it from their values, as LibTorch's factories do.
  EXPECT_EQ(full({2}, 3, TensorOptions().device(kCPU)).dtype(), kInt64);
  EXPECT_EQ(arange(4, TensorOptions().device(kCPU)).dtype(), kInt64);
  EXPECT_EQ(arange(0.5, 3.0, 1.0, device(kCPU)).dtype(), kFloat32);
  Tensor h = zeros({3}, kFloat16);
  EXPECT_EQ(ones({2}, h.options()).dtype(), kFloat16);
  EXPECT_EQ(h.to(TensorOptions().dtype(kFloat64)).dtype(), kFloat64);
  std::ostringstream os;
  os << o;
  EXPECT_EQ(os.str(), "TensorOptions(dtype=int64, device=cpu, requires_grad=false)");
}

}  // namespace
}  // namespace sinter
