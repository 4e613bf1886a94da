// The nn::functional functions PyTorch composes of ops (losses, similarities, one_hot, glu, ...), spelled as
// LibTorch code spells them, against float64 references computed element by element here, and compiled against
// eager.
#include <cmath>
#include <functional>

#include "sinter/compile.h"
#include "sinter/nn.h"
#include "testing.h"

namespace sinter {
namespace {

namespace F = sinter::nn::functional;
using testing::random;

// The float64 values of `t`.
std::vector<double> values(const Tensor& t) { return t.to(kFloat64).contiguous().to_vector<double>(); }

// A float32 result against its float64 reference.
#define EXPECT_REF(actual, reference) EXPECT_CLOSE((actual).to(kFloat64), (reference), 1e-5)

// An element-wise float64 reference of f(a[i], b[i]), reduced as `reduction` says.
Tensor reference(const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f,
                 const std::string& reduction = "none") {
  std::vector<double> x = values(a), y = values(b), out(x.size());
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += out[i] = f(x[i], y[i]);
  if (reduction == "sum") return from_vector(std::vector<double>{sum}).sum();  // 0-dim
  if (reduction == "mean") return from_vector(std::vector<double>{sum / static_cast<double>(x.size())}).sum();
  return from_vector(out, a.sizes());
}

TEST(NnFunctionalComposed, RegressionLossesMatchTheirDefinitions) {
  Tensor x = random({4, 7}, kFloat32, 1) * 2, y = random({4, 7}, kFloat32, 2) * 2;
  for (std::string r : {"mean", "sum", "none"}) {
    EXPECT_REF(F::l1_loss(x, y, r), reference(x, y, [](double a, double b) { return std::abs(a - b); }, r)) << r;
    auto smooth = [](double beta) {
      return [beta](double a, double b) {
        double d = std::abs(a - b);
        return d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
      };
    };
    EXPECT_REF(F::smooth_l1_loss(x, y, r), reference(x, y, smooth(1.0), r)) << r;
    EXPECT_REF(F::smooth_l1_loss(x, y, r, 0.5), reference(x, y, smooth(0.5), r)) << r;
    auto huber = [](double a, double b) {
      double d = std::abs(a - b), delta = 1.5;
      return d < delta ? 0.5 * d * d : delta * (d - 0.5 * delta);
    };
    EXPECT_REF(F::huber_loss(x, y, r, 1.5), reference(x, y, huber, r)) << r;
  }
  EXPECT_TENSOR_EQ(F::smooth_l1_loss(x, y, "sum", 0.0), F::l1_loss(x, y, "sum"));
  EXPECT_ERROR(F::l1_loss(x, y, "avg"), "l1_loss", "reduction", "avg");
  EXPECT_ERROR(F::l1_loss(x, y.narrow(1, 0, 3)), "l1_loss", "target size");
}

TEST(NnFunctionalComposed, BinaryCrossEntropyOnProbabilitiesAndLogits) {
  Tensor logits = random({5, 6}, kFloat32, 3) * 4;
  logits.select(0, 0).select(0, 0).fill_(60.0);  // exp(-60) underflows float32: the stable form still holds
  logits.select(0, 0).select(0, 1).fill_(-60.0);
  Tensor p = sigmoid(logits);
  Tensor y = testing::random_positive({5, 6}, kFloat32, 0.0, 1.0, 4);
  auto bce = [](double q, double t) {
    return -(t * std::max(std::log(q), -100.0) + (1 - t) * std::max(std::log(1 - q), -100.0));
  };
  auto bce_logits = [](double x, double t) {
    double sp = std::max(-x, 0.0) + std::log1p(std::exp(-std::abs(x)));  // log(1 + exp(-x))
    return (1 - t) * x + sp;
  };
  for (std::string r : {"mean", "sum", "none"}) {
    EXPECT_CLOSE(F::binary_cross_entropy(p, y, {}, r).to(kFloat64), reference(p, y, bce, r), 1e-4) << r;
    EXPECT_REF(F::binary_cross_entropy_with_logits(logits, y, {}, r), reference(logits, y, bce_logits, r)) << r;
  }
  // Saturated probabilities: each log is clamped at -100, as PyTorch's kernel does.
  Tensor edge = from_vector(std::vector<float>{0.0f, 1.0f, 0.0f, 1.0f}), t = from_vector(std::vector<float>{1, 0, 0, 1});
  EXPECT_CLOSE(F::binary_cross_entropy(edge, t, {}, "none"), from_vector(std::vector<float>{100, 100, 0, 0}));
  // Weights and pos_weight: w * (1 + (pw - 1) y) * log(1 + exp(-x)) + w * (1 - y) x.
  Tensor w = testing::random_positive({6}, kFloat32, 0.5, 2.0, 5), pw = testing::random_positive({6}, kFloat32, 0.5, 3.0, 6);
  Tensor want = (1 + (pw - 1) * y) * softplus(-logits) + (1 - y) * logits;
  EXPECT_CLOSE(F::binary_cross_entropy_with_logits(logits, y, w, "none", pw), want * w);
  EXPECT_CLOSE(F::binary_cross_entropy(p, y, w, "sum"), (w * F::binary_cross_entropy(p, y, {}, "none")).sum());
  EXPECT_ERROR(F::binary_cross_entropy(logits, y), "binary_cross_entropy", "between 0 and 1");
}

TEST(NnFunctionalComposed, KlDivPointwiseAndBatchmean) {
  Tensor input = log_softmax(random({3, 5}, kFloat32, 7), 1), target = softmax(random({3, 5}, kFloat32, 8), 1);
  target.select(0, 0).select(0, 0).fill_(0.0);  // 0 * log 0 counts as 0
  auto kl = [](double x, double t) { return t > 0 ? t * (std::log(t) - x) : 0.0; };
  EXPECT_REF(F::kl_div(input, target, "none"), reference(input, target, kl));
  EXPECT_REF(F::kl_div(input, target, "sum"), reference(input, target, kl, "sum"));
  EXPECT_CLOSE(F::kl_div(input, target, "batchmean"), F::kl_div(input, target, "sum") / 3.0);
  Tensor log_t = log_softmax(random({3, 5}, kFloat32, 9), 1);
  EXPECT_CLOSE(F::kl_div(input, log_t, "none", true), exp(log_t) * (log_t - input));
}

TEST(NnFunctionalComposed, SimilaritiesAndDistances) {
  Tensor a = random({4, 8}, kFloat32, 10), b = random({4, 8}, kFloat32, 11);
  std::vector<double> x = values(a), y = values(b), cos(4), dist(4);
  for (int i = 0; i < 4; ++i) {
    double dot = 0, na = 0, nb = 0, d = 0;
    for (int j = 0; j < 8; ++j) {
      double u = x[i * 8 + j], v = y[i * 8 + j];
      dot += u * v, na += u * u, nb += v * v, d += (u - v + 1e-6) * (u - v + 1e-6);
    }
    cos[i] = dot / std::max(std::sqrt(na) * std::sqrt(nb), 1e-8);
    dist[i] = std::sqrt(d);
  }
  EXPECT_REF(F::cosine_similarity(a, b), from_vector(cos));
  EXPECT_REF(F::pairwise_distance(a, b), from_vector(dist));
  EXPECT_EQ(F::pairwise_distance(a, b, 2.0, 1e-6, true).sizes(), (SymIntList{4, 1}));
  EXPECT_CLOSE(F::cosine_similarity(a, a, 1), ones({4}));
}

TEST(NnFunctionalComposed, OneHotGluAndSmallActivations) {
  Tensor idx = from_vector(std::vector<int64_t>{2, 0, 1, 2}, {2, 2});
  Tensor oh = F::one_hot(idx);
  EXPECT_EQ(oh.dtype(), kInt64);
  EXPECT_EQ(oh.sizes(), (SymIntList{2, 2, 3}));
  EXPECT_EQ(oh.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(F::one_hot(idx, 5).sizes(), (SymIntList{2, 2, 5}));
  EXPECT_ERROR(F::one_hot(idx, 2), "one_hot", "smaller than num_classes");
  EXPECT_ERROR(F::one_hot(idx - 3, 4), "one_hot", "non-negative");
  EXPECT_ERROR(F::one_hot(idx.to(kFloat32)), "one_hot", "int64");

  Tensor x = random({3, 6}, kFloat32, 12) * 3;
  EXPECT_CLOSE(F::glu(x), x.narrow(1, 0, 3) * sigmoid(x.narrow(1, 3, 3)));
  EXPECT_ERROR(F::glu(x, 0), "glu", "even");
  Tensor big = from_vector(std::vector<float>{-200.0f, -20.0f, 0.0f, 20.0f, 200.0f});
  auto logsig = [](double v, double) { return -(std::max(-v, 0.0) + std::log1p(std::exp(-std::abs(v)))); };
  EXPECT_REF(F::logsigmoid(big), reference(big, big, logsig));
  EXPECT_CLOSE(F::softsign(x), x / (abs(x) + 1));
  EXPECT_CLOSE(F::tanhshrink(x), x - tanh(x));
}

// Composed functions capture as the ops they are made of: no graph break, the compiled result equals eager.
TEST(NnFunctionalComposed, CompileWithoutBreaks) {
  Tensor logits = random({16, 10}, kFloat32, 13), y = testing::random_positive({16, 10}, kFloat32, 0.0, 1.0, 14);
  auto f = [](const Tensor& x, const Tensor& t) {
    return F::binary_cross_entropy_with_logits(x, t) + F::smooth_l1_loss(x, t) + F::l1_loss(x, t) +
           F::cosine_similarity(x, t).mean() + F::glu(x).sum() + F::logsigmoid(x).mean();
  };
  auto c = compile(f, {.fullgraph = true});
  EXPECT_CLOSE(c(logits, y), f(logits, y));
  EXPECT_EQ(c.stats().graph_breaks, 0);
}

}  // namespace
}  // namespace sinter
