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

TEST(LibTorchParity, TensorFromBraces) {
  Tensor a = tensor({1, 2, 3});
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  Tensor b = tensor({{1.5, 2.0}, {3.0, 4.0}});
  EXPECT_EQ(b.dtype(), kFloat32);
  EXPECT_EQ(b.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(b[1][0].item<float>(), 3.0f);
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor(2.5).dim(), 0);
  EXPECT_EQ(tensor(7).item<int64_t>(), 7);
  EXPECT_EQ(tensor({1, 2}, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(tensor({1, 2}, TensorOptions().dtype(kInt32)).dtype(), kInt32);
  EXPECT_EQ(tensor({1, 2.5}).dtype(), kFloat32);  // promoted, as torch.tensor([1, 2.5])
  EXPECT_EQ(tensor({}).sizes().vec(), (std::vector<int64_t>{0}));
  EXPECT_EQ(tensor({{}, {}}).sizes().vec(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(tensor(std::vector<float>{1, 2, 3, 4}).sizes().vec(), (std::vector<int64_t>{4}));
  EXPECT_EQ(tensor(std::vector<int>{1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor({{{1}, {2}}, {{3}, {4}}}).sizes().vec(), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_ERROR(tensor({{1, 2}, {3}}), "tensor()", "sizes [2]", "got [1] at index 1");
  EXPECT_EQ(tensor({-9007199254740993LL}).item<int64_t>(), -9007199254740993LL) << "int64 beyond 2^53 exact";
}

TEST(LibTorchParity, OpsAsMethods) {
  Tensor x = tensor({{0.5, -1.0, 2.0}, {3.0, 0.25, -0.75}});
  EXPECT_TENSOR_EQ(x.sin(), sin(x));
  EXPECT_TENSOR_EQ(x.gelu(), gelu(x));
  EXPECT_TENSOR_EQ(x.gelu("tanh"), gelu(x, "tanh"));
  EXPECT_TENSOR_EQ(x.erf(), erf(x));
  EXPECT_TENSOR_EQ(x.isnan(), isnan(x));
  EXPECT_TENSOR_EQ(x.maximum(x.neg()), maximum(x, neg(x)));
  EXPECT_TENSOR_EQ(x.gt(0), gt(x, 0));
  EXPECT_TENSOR_EQ(x.add(1), x + 1);
  EXPECT_TENSOR_EQ(x.pow(x.abs()), pow(x, abs(x)));
  EXPECT_TENSOR_EQ(x.where(x > 0, 0.0), where(x > 0, x, Scalar(0.0)));
  EXPECT_TENSOR_EQ(x.clamp_min(0), relu(x));
  auto [values, indices] = x.max(1);
  EXPECT_TENSOR_EQ(values, tensor({2.0, 3.0}));
  EXPECT_TENSOR_EQ(indices, tensor({2, 0}));
  auto [mn, imn] = x.min(0, true);
  EXPECT_EQ(mn.sizes().vec(), (std::vector<int64_t>{1, 3}));
  EXPECT_TENSOR_EQ(std::get<0>(x.sort(1)), std::get<0>(sort(x, 1)));
  EXPECT_TENSOR_EQ(std::get<1>(x.topk(2)), std::get<1>(topk(x, 2)));
  EXPECT_TENSOR_EQ(x.cumsum(1), cumsum(x, 1));
  EXPECT_TENSOR_EQ(x.logsumexp(1), logsumexp(x, 1));
  EXPECT_TENSOR_EQ(x.softmax(-1, kFloat64), softmax(x, -1, kFloat64));
  EXPECT_TENSOR_EQ(x.mm(x.t()), mm(x, x.t()));
  EXPECT_TENSOR_EQ(x.prod(1), prod(x, 1));
  EXPECT_TENSOR_EQ((x > 0).all(1), all(x > 0, 1));
  EXPECT_EQ(x.new_zeros({4}).dtype(), kFloat32);
  EXPECT_EQ(x.new_full({2}, 3, kInt32).dtype(), kInt32);
  EXPECT_EQ(tensor({1, 2}).new_ones(3).dtype(), kInt64);
  EXPECT_EQ(x.type_as(tensor({1})).dtype(), kInt64);
  EXPECT_ERROR(x.max(5), "max", "5");  // a clear error naming the dim, not an internal location
}

TEST(LibTorchParity, DetachIsAViewWithoutGrad) {
  Tensor w = randn({3, 4}, requires_grad());
  Tensor d = w.t().detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(d.storage().get(), w.storage().get());
  EXPECT_EQ(d.strides().vec(), w.t().strides().vec());
  EXPECT_TENSOR_EQ(d, w.t());
  EXPECT_TENSOR_EQ(w.expand({2, 3, 4}).detach(), w.expand({2, 3, 4}));
  EXPECT_FALSE(w.detach_().requires_grad());
}

TEST(LibTorchParity, InPlaceUnaryMethods) {
  Tensor x = tensor({0.5, -1.0, 2.0});
  Tensor expect = sin(x);
  Tensor view = x.view(-1);
  EXPECT_TRUE(x.sin_().is_same(x));
  EXPECT_TENSOR_EQ(view, expect) << "written through to views";
  Tensor y = tensor({1.0, 4.0});
  y.sqrt_().neg_();
  EXPECT_TENSOR_EQ(y, tensor({-1.0, -2.0}));
  Tensor i = tensor({-2, 3});
  i.abs_();
  EXPECT_TENSOR_EQ(i, tensor({2, 3}));
  EXPECT_ERROR(tensor({1, 2}).sin_(), "result type float32 can't be cast to the desired output type int64");
  Tensor f = tensor({0.0, 2.0});
  f.logical_not_();  // the bool result written back as 1 and 0
  EXPECT_TENSOR_EQ(f, tensor({1.0, 0.0}));
}

TEST(LibTorchParity, InPlaceUnaryMethodsCompile) {
  auto fn = [](const Tensor& a) {
    Tensor t = a.clone();
    t.exp_().log1p_().floor_();
    Tensor v = t.narrow(0, 1, 2);
    v.tanh_();
    return t;
  };
  Tensor a = tensor({0.5, -1.0, 2.0, 0.1});
  for (const char* backend : {"aot_eager", "inductor"}) {
    auto f = compile(fn, {.backend = backend});
    EXPECT_TENSOR_EQ(f(a), fn(a)) << backend;
  }
}

}  // namespace
}  // namespace sinter
