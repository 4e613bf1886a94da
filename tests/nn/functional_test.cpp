// nn::functional, spelled as LibTorch code spells it (`namespace F = ...`, option structs): each function gives
// the op's result, with F.*'s argument order where it differs from torch.*'s.
#include <cmath>

#include "sinter/nn.h"
#include "testing.h"

namespace sinter {
namespace {

namespace F = sinter::nn::functional;
using testing::random;
using testing::random_positive;

TEST(NnFunctional, PlainFormsAreTheOps) {
  Tensor x = random({2, 3, 4}, kFloat32, 1);
  EXPECT_TENSOR_EQ(F::relu(x), relu(x));
  EXPECT_TENSOR_EQ(F::gelu(x), gelu(x));
  EXPECT_TENSOR_EQ(F::gelu(x, "tanh"), gelu(x, "tanh"));
  EXPECT_TENSOR_EQ(F::silu(x), silu(x));
  EXPECT_TENSOR_EQ(F::sigmoid(x), sigmoid(x));
  EXPECT_TENSOR_EQ(F::tanh(x), tanh(x));
  EXPECT_TENSOR_EQ(F::mish(x), mish(x));
  EXPECT_TENSOR_EQ(F::leaky_relu(x, 0.2), leaky_relu(x, 0.2));
  EXPECT_TENSOR_EQ(F::softmax(x, 1), softmax(x, 1));
  EXPECT_TENSOR_EQ(F::log_softmax(x, -1), log_softmax(x, -1));
  Tensor w = random({5, 4}, kFloat32, 2), b = random({5}, kFloat32, 3);
  EXPECT_TENSOR_EQ(F::linear(x, w, b), linear(x, w, b));
  Tensor g = random({4}, kFloat32, 4);
  EXPECT_TENSOR_EQ(F::layer_norm(x, {4}, g, b.narrow(0, 0, 4)), layer_norm(x, {4}, g, b.narrow(0, 0, 4)));
  EXPECT_TENSOR_EQ(F::dropout(x, 0.3, false), x);
  EXPECT_TENSOR_EQ(F::pad(x, {1, 2}), pad(x, {1, 2}));
  Tensor q = random({1, 2, 5, 4}, kFloat32, 5);
  EXPECT_TENSOR_EQ(F::scaled_dot_product_attention(q, q, q, {}, 0.0, true),
                   scaled_dot_product_attention(q, q, q, {}, 0.0, true));
  Tensor logits = random({6, 5}, kFloat32, 6);
  Tensor target = from_vector(std::vector<int64_t>{0, 4, 2, 2, 1, 3});
  EXPECT_TENSOR_EQ(F::cross_entropy(logits, target), cross_entropy(logits, target));
  EXPECT_TENSOR_EQ(F::mse_loss(x, x * 0.5), mse_loss(x, x * 0.5));
}

TEST(NnFunctional, OptionStructsAsInLibTorch) {
  Tensor x = random({2, 3, 4}, kFloat32, 1);
  EXPECT_TENSOR_EQ(F::softmax(x, F::SoftmaxFuncOptions(1)), softmax(x, 1));
  EXPECT_EQ(F::softmax(x, F::SoftmaxFuncOptions(-1).dtype(kFloat64)).dtype(), kFloat64);
  EXPECT_TENSOR_EQ(F::log_softmax(x, F::LogSoftmaxFuncOptions(0)), log_softmax(x, 0));
  EXPECT_TENSOR_EQ(F::gelu(x, F::GELUFuncOptions().approximate("tanh")), gelu(x, "tanh"));
  EXPECT_TENSOR_EQ(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)), leaky_relu(x, 0.2));
  EXPECT_TENSOR_EQ(F::elu(x, F::ELUFuncOptions().alpha(0.5)), elu(x, 0.5));
  EXPECT_TENSOR_EQ(F::softplus(x, F::SoftplusFuncOptions().beta(2).threshold(10)), softplus(x, 2, 10));
  EXPECT_TENSOR_EQ(F::hardtanh(x, F::HardtanhFuncOptions().min_val(-0.5).max_val(0.5)), hardtanh(x, -0.5, 0.5));

  const int64_t E = 4;
  Tensor g = random({E}, kFloat32, 2), b = random({E}, kFloat32, 3);
  EXPECT_TENSOR_EQ(F::layer_norm(x, F::LayerNormFuncOptions({E}).eps(1e-5)), layer_norm(x, {E}, {}, {}, 1e-5));
  EXPECT_TENSOR_EQ(F::layer_norm(x, F::LayerNormFuncOptions({3, E}).weight(ones({3, E})).eps(1e-3)),
                   layer_norm(x, {3, E}, ones({3, E}), {}, 1e-3));
  Tensor img = random({2, 4, 6, 6}, kFloat32, 4);
  EXPECT_TENSOR_EQ(F::group_norm(img, F::GroupNormFuncOptions(2).weight(g).bias(b)), group_norm(img, 2, g, b));

  EXPECT_TENSOR_EQ(F::dropout(x, F::DropoutFuncOptions().p(0.2).training(false)), x);
  Tensor big = ones({4000});
  Tensor dropped = F::dropout(big, F::DropoutFuncOptions().p(0.25));  // training by default, as F.dropout
  std::vector<float> v = dropped.to_vector<float>();
  int64_t zeros_seen = 0;
  for (float e : v) {
    if (e == 0) ++zeros_seen;
    else EXPECT_FLOAT_EQ(e, 1 / 0.75f);
  }
  EXPECT_NEAR(zeros_seen / 4000.0, 0.25, 0.05);
  EXPECT_DOUBLE_EQ(F::DropoutFuncOptions().p(), 0.5);  // getters read the defaults
  EXPECT_TRUE(F::DropoutFuncOptions().training());

  Tensor logits = random({6, 5}, kFloat32, 6);
  Tensor target = from_vector(std::vector<int64_t>{0, 4, -1, 2, 1, -1});
  EXPECT_TENSOR_EQ(
      F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().ignore_index(-1).label_smoothing(0.1)),
      cross_entropy(logits, target, {}, "mean", -1, 0.1));
  Tensor cls_weight = random_positive({5}, kFloat32);
  auto summed = F::CrossEntropyFuncOptions().weight(cls_weight).ignore_index(-1).reduction("sum");
  EXPECT_TENSOR_EQ(F::cross_entropy(logits, target, summed), cross_entropy(logits, target, cls_weight, "sum", -1));
  Tensor logp = log_softmax(logits, 1);
  EXPECT_TENSOR_EQ(F::nll_loss(logp, target, F::NLLLossFuncOptions().ignore_index(-1).reduction("none")),
                   nll_loss(logp, target, {}, "none", -1));
  EXPECT_TENSOR_EQ(F::mse_loss(x, x * 2, F::MSELossFuncOptions().reduction("sum")), mse_loss(x, x * 2, "sum"));

  EXPECT_TENSOR_EQ(F::pad(x, F::PadFuncOptions({1, 2}).mode("reflect")), pad(x, {1, 2}, "reflect"));
  EXPECT_TENSOR_EQ(F::pad(x, F::PadFuncOptions({1, 1, 2, 0}).value(3.0)), pad(x, {1, 1, 2, 0}, "constant", 3.0));
  EXPECT_ERROR(F::pad(x, F::PadFuncOptions({1, 1}).mode("replicate").value(1.0)), "doesn't take in value argument");

  Tensor cw = random({3, 4, 3, 3}, kFloat32, 7), cb = random({3}, kFloat32, 8);
  EXPECT_TENSOR_EQ(F::conv2d(img, cw, F::Conv2dFuncOptions().stride(2).padding(1).bias(cb)),
                   conv2d(img, cw, cb, {2, 2}, {1, 1}));
  EXPECT_TENSOR_EQ(F::conv2d(img, cw, F::Conv2dFuncOptions().padding(kSame)), conv2d(img, cw, {}, {1}, kSame));
  EXPECT_TENSOR_EQ(F::conv2d(img, cw), conv2d(img, cw));
  EXPECT_TENSOR_EQ(F::max_pool2d(img, F::MaxPool2dFuncOptions(2).stride(1)), max_pool2d(img, {2, 2}, {1, 1}));
  EXPECT_TENSOR_EQ(F::max_pool2d(img, F::MaxPool2dFuncOptions({3, 2})), max_pool2d(img, {3, 2}));
  EXPECT_TENSOR_EQ(F::avg_pool2d(img, F::AvgPool2dFuncOptions({3, 3}).stride(2).padding(1).count_include_pad(false)),
                   avg_pool2d(img, {3, 3}, {2, 2}, {1, 1}, false, false));
  EXPECT_TENSOR_EQ(F::interpolate(img, F::InterpolateFuncOptions().size(std::vector<int64_t>{12, 9})),
                   interpolate(img, SymIntList{12, 9}));
  EXPECT_TENSOR_EQ(
      F::interpolate(img, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2, 2}).mode("bilinear")),
      interpolate(img, {}, std::vector<double>{2, 2}, "bilinear"));
}

// The option structs of the composed losses (LibTorch's F::L1LossFuncOptions, ...) give the plain forms' results;
// those whose LibTorch form takes the reduction as its constructor argument take it here as a string.
TEST(NnFunctional, LossOptionStructsAreThePlainForms) {
  Tensor x = random({4, 6}, kFloat32, 1), y = random({4, 6}, kFloat32, 2);
  EXPECT_TENSOR_EQ(F::l1_loss(x, y, F::L1LossFuncOptions("sum")), F::l1_loss(x, y, "sum"));
  EXPECT_TENSOR_EQ(F::mse_loss(x, y, F::MSELossFuncOptions("none")), mse_loss(x, y, "none"));
  EXPECT_TENSOR_EQ(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions()), F::smooth_l1_loss(x, y));
  EXPECT_TENSOR_EQ(F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions("none").beta(0.5)),
                   F::smooth_l1_loss(x, y, "none", 0.5));
  EXPECT_FALSE(F::SmoothL1LossFuncOptions().beta().has_value());  // unset means 1.0, as in LibTorch
  EXPECT_TENSOR_EQ(F::huber_loss(x, y, F::HuberLossFuncOptions().delta(0.3).reduction("sum")),
                   F::huber_loss(x, y, "sum", 0.3));
  Tensor logp = log_softmax(x, 1), p = softmax(y, 1);
  EXPECT_TENSOR_EQ(F::kl_div(logp, p, F::KLDivFuncOptions("batchmean")), F::kl_div(logp, p, "batchmean"));
  EXPECT_TENSOR_EQ(F::kl_div(logp, logp, F::KLDivFuncOptions().log_target(true)), F::kl_div(logp, logp, "mean", true));
  Tensor prob = sigmoid(x), t = random_positive({4, 6}, kFloat32, 0.0, 1.0, 3), w = random_positive({6}, kFloat32);
  EXPECT_TENSOR_EQ(F::binary_cross_entropy(prob, t, F::BinaryCrossEntropyFuncOptions().weight(w).reduction("sum")),
                   F::binary_cross_entropy(prob, t, w, "sum"));
  EXPECT_TENSOR_EQ(
      F::binary_cross_entropy_with_logits(x, t, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(w * 2)),
      F::binary_cross_entropy_with_logits(x, t, {}, "mean", w * 2));
  EXPECT_ERROR(F::l1_loss(x, y, F::L1LossFuncOptions("avg")), "l1_loss", "reduction", "avg");
}

TEST(NnFunctional, EmbeddingTakesIndicesFirst) {
  Tensor weight = random({10, 4}, kFloat32, 1);
  Tensor idx = from_vector(std::vector<int64_t>{3, 9, 0, 3}, {2, 2});
  EXPECT_TENSOR_EQ(F::embedding(idx, weight), embedding(weight, idx));
  EXPECT_TENSOR_EQ(F::embedding(idx, weight, F::EmbeddingFuncOptions().padding_idx(-1)), embedding(weight, idx, 9));
}

TEST(NnFunctional, BatchNormTakesPyTorchsArgumentOrder) {
  Tensor x = random({4, 3, 5}, kFloat32, 1);
  Tensor mean = random({3}, kFloat32, 2), var = random_positive({3}, kFloat32);
  Tensor w = random({3}, kFloat32, 3), b = random({3}, kFloat32, 4);
  Tensor expected = batch_norm(x, w, b, mean, var, false, 0.1, 1e-5);
  EXPECT_TENSOR_EQ(F::batch_norm(x, mean, var, w, b), expected);
  EXPECT_TENSOR_EQ(F::batch_norm(x, mean, var, F::BatchNormFuncOptions().weight(w).bias(b)), expected);
  // In training the running statistics update in place.
  Tensor running = mean.clone();
  F::batch_norm(x, running, var.clone(), F::BatchNormFuncOptions().training(true).momentum(0.5));
  EXPECT_CLOSE(running, mean * 0.5 + x.mean(DimList{0, 2}) * 0.5);
}

TEST(NnFunctional, NormalizeDividesByTheClampedNorm) {
  Tensor x = from_vector(std::vector<float>{3, 4, 0, 0, 0, 0, 1, 2, 2}, {3, 3});
  // Row norms 5, 0 (clamped to eps: the row stays zero) and 3.
  Tensor expected = from_vector(std::vector<float>{0.6f, 0.8f, 0, 0, 0, 0, 1 / 3.f, 2 / 3.f, 2 / 3.f}, {3, 3});
  EXPECT_CLOSE(F::normalize(x), expected);
  EXPECT_CLOSE(F::normalize(x, F::NormalizeFuncOptions().p(1).dim(0)),
               x / from_vector(std::vector<float>{4, 6, 2}, {1, 3}));
}

TEST(NnFunctional, ErrorsNameTheCallersLine) {
  Tensor x = random({2, 3});
  EXPECT_ERROR(F::softmax(x, F::SoftmaxFuncOptions(5)), "functional_test.cpp");
  EXPECT_ERROR(F::layer_norm(x, F::LayerNormFuncOptions({4})), "functional_test.cpp");
  EXPECT_ERROR(F::embedding(x, x), "functional_test.cpp");
}

}  // namespace
}  // namespace sinter
