// The loss modules (nn::L1Loss, CrossEntropyLoss, ...), spelled as LibTorch code spells them: each gives its
// functional's result for every reduction and matches a float64 reference computed here; weights are buffers
// named as PyTorch names them; a bad reduction is an error when the module is made; compiled, a loss captures
// without breaks.
#include <cmath>
#include <functional>

#include "nn/nn_testing.h"
#include "sinter/compile.h"
#include "sinter/nn.h"
#include "testing.h"

namespace sinter {
namespace {

namespace F = sinter::nn::functional;
using testing::Names;
using testing::random;
using testing::random_positive;

const std::vector<std::string> kReductions = {"mean", "sum", "none"};

std::vector<double> values(const Tensor& t) { return t.to(kFloat64).contiguous().to_vector<double>(); }

// A float64 tensor of per-element terms reduced as `reduction` says ("mean" divides by `denom`, the count when
// not given).
Tensor reduced(const std::vector<double>& terms, const SymIntList& sizes, const std::string& reduction,
               double denom = -1) {
  double sum = 0;
  for (double v : terms) sum += v;
  if (denom < 0) denom = static_cast<double>(terms.size());
  if (reduction == "sum") return from_vector(std::vector<double>{sum}).sum();  // 0-dim
  if (reduction == "mean") return from_vector(std::vector<double>{sum / denom}).sum();
  return from_vector(terms, sizes);
}

// f(i, a[i], b[i]) for every element, in float64, reduced.
Tensor elementwise_reference(const Tensor& a, const Tensor& b, const std::function<double(size_t, double, double)>& f,
                             const std::string& reduction) {
  std::vector<double> x = values(a), y = values(b), out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f(i, x[i], y[i]);
  return reduced(out, a.sizes(), reduction);
}

// A float32 result against its float64 reference.
#define EXPECT_REF(actual, reference, ...) EXPECT_CLOSE((actual).to(kFloat64), (reference), 1e-5) << __VA_ARGS__

// PyTorch's class-index loss on log-probabilities `logp` [N, C]: -w[t] logp[t] per row, mixed with the
// smoothing term -sum_c w[c] logp[c] / C by `smoothing`; ignored rows count 0, and "mean" divides by the summed
// weights of the counted rows.
Tensor class_loss_reference(const std::vector<double>& logp, int64_t C, const std::vector<int64_t>& target,
                            const std::vector<double>& w, int64_t ignore_index, double smoothing,
                            const std::string& reduction) {
  std::vector<double> terms(target.size());
  double denom = 0;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == ignore_index) continue;
    double smooth = 0;
    for (int64_t c = 0; c < C; ++c) smooth -= w[c] * logp[i * C + c];
    terms[i] = (1 - smoothing) * -w[target[i]] * logp[i * C + target[i]] + smoothing / C * smooth;
    denom += w[target[i]];
  }
  return reduced(terms, {static_cast<int64_t>(target.size())}, reduction, denom);
}

// log_softmax over each row of `logits` [N, C], in float64.
std::vector<double> log_softmax_reference(const Tensor& logits) {
  std::vector<double> x = values(logits), out(x.size());
  int64_t C = logits.size(1).guard_int(), N = logits.size(0).guard_int();
  for (int64_t i = 0; i < N; ++i) {
    double m = x[i * C], s = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, x[i * C + c]);
    for (int64_t c = 0; c < C; ++c) s += std::exp(x[i * C + c] - m);
    for (int64_t c = 0; c < C; ++c) out[i * C + c] = x[i * C + c] - m - std::log(s);
  }
  return out;
}

TEST(LossModule, RegressionLossesAreTheirFunctionals) {
  Tensor x = random({4, 7}, kFloat32, 1) * 2, y = random({4, 7}, kFloat32, 2) * 2;
  auto smooth = [](double beta) {
    return [beta](size_t, double a, double b) {
      double d = std::abs(a - b);
      return d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
    };
  };
  auto huber = [](size_t, double a, double b) {
    double d = std::abs(a - b), delta = 1.5;
    return d < delta ? 0.5 * d * d : delta * (d - 0.5 * delta);
  };
  for (const std::string& r : kReductions) {
    nn::L1Loss l1{nn::L1LossOptions(r)};
    EXPECT_TENSOR_EQ(l1(x, y), F::l1_loss(x, y, r));
    EXPECT_REF(l1(x, y), elementwise_reference(x, y, [](size_t, double a, double b) { return std::abs(a - b); }, r),
               r);
    nn::MSELoss mse(nn::MSELossOptions().reduction(r));
    EXPECT_TENSOR_EQ(mse->forward(x, y), F::mse_loss(x, y, r));
    EXPECT_REF(mse(x, y), elementwise_reference(x, y, [](size_t, double a, double b) { return (a - b) * (a - b); }, r),
               r);
    nn::SmoothL1Loss smooth_l1(nn::SmoothL1LossOptions(r).beta(0.5));
    EXPECT_TENSOR_EQ(smooth_l1(x, y), F::smooth_l1_loss(x, y, r, 0.5));
    EXPECT_REF(smooth_l1(x, y), elementwise_reference(x, y, smooth(0.5), r), r);
    EXPECT_REF(nn::SmoothL1Loss(nn::SmoothL1LossOptions(r))(x, y), elementwise_reference(x, y, smooth(1.0), r), r);
    nn::HuberLoss hub(nn::HuberLossOptions().reduction(r).delta(1.5));
    EXPECT_TENSOR_EQ(hub(x, y), F::huber_loss(x, y, r, 1.5));
    EXPECT_REF(hub(x, y), elementwise_reference(x, y, huber, r), r);
  }
  // The defaults: reduction "mean", beta 1.0 (unset), delta 1.0.
  nn::L1Loss l1;
  EXPECT_EQ(l1->options.reduction(), "mean");
  EXPECT_TENSOR_EQ(l1(x, y), F::l1_loss(x, y));
  EXPECT_FALSE(nn::SmoothL1Loss()->options.beta().has_value());
  EXPECT_TENSOR_EQ(nn::SmoothL1Loss()(x, y), F::smooth_l1_loss(x, y));
  EXPECT_TENSOR_EQ(nn::HuberLoss()(x, y), F::huber_loss(x, y));
  EXPECT_DOUBLE_EQ(nn::HuberLoss()->options.delta(), 1.0);
}

TEST(LossModule, CrossEntropyWithWeightIgnoreIndexAndLabelSmoothing) {
  Tensor logits = random({6, 5}, kFloat32, 3) * 2;
  std::vector<int64_t> t = {0, 4, 2, 1, 2, 3};
  Tensor target = from_vector(t);
  Tensor w = random_positive({5}, kFloat32, 0.5, 2.0, 4);
  std::vector<double> logp = log_softmax_reference(logits), wv = values(w), ones_w(5, 1.0);
  for (const std::string& r : kReductions) {
    auto options = nn::CrossEntropyLossOptions().weight(w).ignore_index(2).reduction(r).label_smoothing(0.1);
    nn::CrossEntropyLoss loss(options);
    EXPECT_TENSOR_EQ(loss(logits, target), F::cross_entropy(logits, target, options));
    EXPECT_REF(loss(logits, target), class_loss_reference(logp, 5, t, wv, 2, 0.1, r), r);
    nn::CrossEntropyLoss plain(nn::CrossEntropyLossOptions().reduction(r));
    EXPECT_REF(plain(logits, target), class_loss_reference(logp, 5, t, ones_w, -100, 0.0, r), r);
  }
  nn::CrossEntropyLoss loss;
  EXPECT_EQ(loss->options.ignore_index(), -100);
  EXPECT_DOUBLE_EQ(loss->options.label_smoothing(), 0.0);
  EXPECT_TENSOR_EQ(loss(logits, target), cross_entropy(logits, target));
  // Class-probability targets (the input's shape), as F::cross_entropy takes them.
  Tensor probs = softmax(random({6, 5}, kFloat32, 5), 1);
  EXPECT_TENSOR_EQ(loss(logits, probs), cross_entropy(logits, probs));
}

TEST(LossModule, NLLLossWithWeightAndIgnoreIndex) {
  Tensor logits = random({5, 4}, kFloat32, 6);
  Tensor input = log_softmax(logits, 1);
  std::vector<int64_t> t = {3, -1, 0, 1, -1};
  Tensor target = from_vector(t);
  Tensor w = random_positive({4}, kFloat32, 0.5, 2.0, 7);
  std::vector<double> logp = values(input), wv = values(w);
  for (const std::string& r : kReductions) {
    nn::NLLLoss loss(nn::NLLLossOptions().weight(w).ignore_index(-1).reduction(r));
    EXPECT_TENSOR_EQ(loss(input, target), nll_loss(input, target, w, r, -1));
    EXPECT_REF(loss(input, target), class_loss_reference(logp, 4, t, wv, -1, 0.0, r), r);
  }
  // Every target ignored: "mean" divides 0 by 0, as PyTorch does.
  Tensor all_ignored = from_vector(std::vector<int64_t>{-1, -1, -1, -1, -1});
  EXPECT_TRUE(std::isnan(nn::NLLLoss(nn::NLLLossOptions().ignore_index(-1))(input, all_ignored).item<float>()));
}

TEST(LossModule, BinaryCrossEntropyWithWeightAndPosWeight) {
  Tensor logits = random({4, 3}, kFloat32, 8) * 2;
  Tensor p = sigmoid(logits);
  Tensor y = random_positive({4, 3}, kFloat32, 0.0, 1.0, 9);
  Tensor w = random_positive({3}, kFloat32, 0.5, 2.0, 10), pw = random_positive({3}, kFloat32, 0.5, 3.0, 11);
  std::vector<double> wv = values(w), pwv = values(pw);
  auto bce = [&](size_t i, double q, double t) {
    return -wv[i % 3] * (t * std::log(q) + (1 - t) * std::log(1 - q));
  };
  // From the definition: -w (pw y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))).
  auto bce_logits = [&](size_t i, double x, double t) {
    double s = 1 / (1 + std::exp(-x));
    return -wv[i % 3] * (pwv[i % 3] * t * std::log(s) + (1 - t) * std::log(1 - s));
  };
  for (const std::string& r : kReductions) {
    nn::BCELoss loss(nn::BCELossOptions().weight(w).reduction(r));
    EXPECT_TENSOR_EQ(loss(p, y), F::binary_cross_entropy(p, y, w, r));
    EXPECT_CLOSE(loss(p, y).to(kFloat64), elementwise_reference(p, y, bce, r), 1e-4) << r;
    nn::BCEWithLogitsLoss with_logits(nn::BCEWithLogitsLossOptions().weight(w).pos_weight(pw).reduction(r));
    EXPECT_TENSOR_EQ(with_logits(logits, y), F::binary_cross_entropy_with_logits(logits, y, w, r, pw));
    EXPECT_REF(with_logits(logits, y), elementwise_reference(logits, y, bce_logits, r), r);
  }
  EXPECT_TENSOR_EQ(nn::BCELoss()(p, y), F::binary_cross_entropy(p, y));
  EXPECT_TENSOR_EQ(nn::BCEWithLogitsLoss()(logits, y), F::binary_cross_entropy_with_logits(logits, y));
  EXPECT_ERROR(nn::BCELoss()(logits * 10, y), "binary_cross_entropy", "between 0 and 1");
}

TEST(LossModule, KLDivLossReductionsAndLogTarget) {
  Tensor input = log_softmax(random({3, 5}, kFloat32, 12), 1), target = softmax(random({3, 5}, kFloat32, 13), 1);
  auto kl = [](size_t, double x, double t) { return t * (std::log(t) - x); };
  for (const std::string& r : kReductions) {
    nn::KLDivLoss loss{nn::KLDivLossOptions(r)};
    EXPECT_TENSOR_EQ(loss(input, target), F::kl_div(input, target, r));
    EXPECT_REF(loss(input, target), elementwise_reference(input, target, kl, r), r);
  }
  Tensor batchmean = nn::KLDivLoss(nn::KLDivLossOptions("batchmean"))(input, target);
  EXPECT_REF(batchmean, elementwise_reference(input, target, kl, "sum") / 3.0, "batchmean");
  Tensor log_t = log(target);
  nn::KLDivLoss log_space(nn::KLDivLossOptions().log_target(true).reduction("sum"));
  EXPECT_TENSOR_EQ(log_space(input, log_t), F::kl_div(input, log_t, "sum", true));
  EXPECT_REF(log_space(input, log_t), elementwise_reference(input, target, kl, "sum"), "log_target");
}

// Weights are buffers, as in PyTorch: named "weight" / "pos_weight", saved and loaded, converted by to(), and
// absent (no state_dict entry) when not given; losses have no parameters.
TEST(LossModule, WeightsAreBuffers) {
  Tensor w = random_positive({5}, kFloat32, 0.5, 2.0, 14);
  nn::CrossEntropyLoss weighted(nn::CrossEntropyLossOptions().weight(w));
  EXPECT_EQ(testing::names_of(weighted.named_buffers()), (Names{"weight"}));
  EXPECT_TRUE(weighted.parameters().empty());
  EXPECT_EQ(testing::names_of(weighted.state_dict().items()), (Names{"weight"}));
  EXPECT_TRUE(nn::CrossEntropyLoss().state_dict().empty());
  EXPECT_TRUE(nn::NLLLoss().named_buffers().empty());
  EXPECT_EQ(testing::names_of(nn::NLLLoss(nn::NLLLossOptions().weight(w)).named_buffers()), (Names{"weight"}));
  EXPECT_EQ(testing::names_of(nn::BCELoss(nn::BCELossOptions().weight(w)).named_buffers()), (Names{"weight"}));
  nn::BCEWithLogitsLoss both(nn::BCEWithLogitsLossOptions().weight(w).pos_weight(w * 2));
  EXPECT_EQ(testing::names_of(both.named_buffers()), (Names{"weight", "pos_weight"}));
  EXPECT_EQ(testing::names_of(nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions().pos_weight(w)).named_buffers()),
            (Names{"pos_weight"}));
  EXPECT_TRUE(nn::L1Loss().state_dict().empty());

  // forward reads the buffer: loading a state dict changes the loss.
  Tensor logits = random({6, 5}, kFloat32, 15), target = from_vector(std::vector<int64_t>{0, 4, 2, 1, 2, 3});
  Tensor other = random_positive({5}, kFloat32, 0.5, 2.0, 16);
  weighted.load_state_dict(nn::StateDict{{"weight", other}});
  EXPECT_TENSOR_EQ(weighted.weight, other);
  EXPECT_TENSOR_EQ(weighted(logits, target), cross_entropy(logits, target, other));
  weighted.to(kFloat64);
  EXPECT_EQ(weighted.weight.dtype(), kFloat64);
  EXPECT_CLOSE(weighted(logits.to(kFloat64), target), cross_entropy(logits, target, other).to(kFloat64), 1e-5);
}

// Losses print as PyTorch prints them: the name and no options.
TEST(LossModule, PrintsAsPyTorch) {
  EXPECT_EQ(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().label_smoothing(0.1)).str(), "CrossEntropyLoss()");
  EXPECT_EQ(nn::L1Loss().str(), "L1Loss()");
  EXPECT_EQ(nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions().pos_weight(ones({3}))).str(), "BCEWithLogitsLoss()");
  EXPECT_EQ(nn::KLDivLoss().str(), "KLDivLoss()");
  struct Net : nn::Module {
    nn::Linear fc{4, 3};
    nn::MSELoss criterion;
    Net() {
      register_module("fc", fc);
      register_module("criterion", criterion);
    }
  } net;
  EXPECT_EQ(net.str(), "Net(\n  (fc): Linear(in_features=4, out_features=3, bias=True)\n  (criterion): MSELoss()\n)");
}

TEST(LossModule, BadReductionIsAnError) {
  EXPECT_ERROR(nn::L1Loss(nn::L1LossOptions("avg")), "L1Loss", "reduction", "'mean', 'sum' or 'none'", "avg");
  EXPECT_ERROR(nn::MSELoss(nn::MSELossOptions("Mean")), "MSELoss", "reduction", "Mean");
  EXPECT_ERROR(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().reduction("batchmean")), "CrossEntropyLoss",
               "reduction", "batchmean");
  EXPECT_ERROR(nn::NLLLoss(nn::NLLLossOptions().reduction("")), "NLLLoss", "reduction");
  EXPECT_ERROR(nn::BCELoss(nn::BCELossOptions().reduction("avg")), "BCELoss", "reduction");
  EXPECT_ERROR(nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions().reduction("avg")), "BCEWithLogitsLoss");
  EXPECT_ERROR(nn::SmoothL1Loss(nn::SmoothL1LossOptions("avg")), "SmoothL1Loss", "reduction");
  EXPECT_ERROR(nn::HuberLoss(nn::HuberLossOptions("avg")), "HuberLoss", "reduction");
  EXPECT_ERROR(nn::KLDivLoss(nn::KLDivLossOptions("avg")), "KLDivLoss", "'batchmean'", "avg");
  // A reduction changed after construction reaches the functional, which rejects it too.
  Tensor x = random({2, 3}, kFloat32, 17);
  nn::L1Loss loss;
  loss->options.reduction("avg");
  EXPECT_ERROR(loss(x, x), "l1_loss", "reduction", "avg");
}

// Errors raised inside a loss name the line that called it; other values are checked by the functional.
TEST(LossModule, ErrorsNameTheCallersLine) {
  Tensor x = random({2, 3}, kFloat32, 18);
  EXPECT_ERROR(nn::MSELoss()(x, x.narrow(1, 0, 2)), "loss_modules_test.cpp");
  EXPECT_ERROR(nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(-1.0))(x, x), "smooth_l1_loss", "beta",
               "loss_modules_test.cpp");
  EXPECT_ERROR(nn::HuberLoss(nn::HuberLossOptions().delta(0.0))(x, x), "huber_loss", "delta");
}

// A loss module compiles as any module: its weight buffers become graph inputs and it captures without breaks.
TEST(LossModule, CompiledLossesMatchEager) {
  Tensor logits = random({8, 5}, kFloat32, 19);
  Tensor target = from_vector(std::vector<int64_t>{0, 4, 2, 1, 2, 3, 0, 1});
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(random_positive({5}, kFloat32, 0.5, 2.0, 20))
                              .ignore_index(2)
                              .label_smoothing(0.05));
  auto compiled = compile(ce, {.fullgraph = true});
  EXPECT_CLOSE(compiled(logits, target), ce(logits, target));
  EXPECT_EQ(compiled.stats().graph_breaks, 0);

  // A model and its criterion in one compiled function.
  nn::Linear fc(5, 3);
  Tensor pw = random_positive({3}, kFloat32, 0.5, 2.0, 21);
  nn::BCEWithLogitsLoss criterion(nn::BCEWithLogitsLossOptions().pos_weight(pw));
  Tensor y = random_positive({8, 3}, kFloat32, 0.0, 1.0, 22);
  auto step = [&](const Tensor& x, const Tensor& t) { return criterion(fc(x), t); };
  auto compiled_step = compile(step, {.fullgraph = true});
  EXPECT_CLOSE(compiled_step(logits, y), step(logits, y));
  EXPECT_EQ(compiled_step.stats().graph_breaks, 0);
}

}  // namespace
}  // namespace sinter
