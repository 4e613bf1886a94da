// sinter::nn's loss modules, as torch.nn's and LibTorch's: each keeps its options struct (`options`, the same
// type as the functional's, as in LibTorch: nn::L1LossOptions is F::L1LossFuncOptions) and forwards to the
// functional, which holds the math. Class and element weights are buffers named as PyTorch names them
// ("weight", "pos_weight"), left out of state_dict() when not given; forward reads the buffers, so to() and
// load_state_dict reach them (change a weight after construction by assigning the member, not the options).
// The reduction is checked when the module is made. They print as PyTorch prints them: `CrossEntropyLoss()`.
#pragma once
#include <string>

#include "sinter/nn.h"

namespace sinter::nn {

using L1LossOptions = functional::L1LossFuncOptions;
using MSELossOptions = functional::MSELossFuncOptions;
using CrossEntropyLossOptions = functional::CrossEntropyFuncOptions;
using NLLLossOptions = functional::NLLLossFuncOptions;
using BCELossOptions = functional::BinaryCrossEntropyFuncOptions;
using BCEWithLogitsLossOptions = functional::BinaryCrossEntropyWithLogitsFuncOptions;
using SmoothL1LossOptions = functional::SmoothL1LossFuncOptions;
using HuberLossOptions = functional::HuberLossFuncOptions;
using KLDivLossOptions = functional::KLDivFuncOptions;

// The base of the loss modules (PyTorch's _Loss): `loss(input, target)` calls forward(input, target), and an
// error raised inside names the caller's line. Module's one-tensor forward still throws, so a loss can't run
// inside a Sequential.
struct Loss : Module {
  using Module::forward;
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target, Loc loc = Loc::current());
};

struct L1Loss : Loss {
  SINTER_NN_ARROW(L1Loss)
  explicit L1Loss(L1LossOptions options = {});
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;
  L1LossOptions options;
};

struct MSELoss : Loss {
  SINTER_NN_ARROW(MSELoss)
  explicit MSELoss(MSELossOptions options = {});
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;
  MSELossOptions options;
};

// input: logits [C] or [N, C, d1, ...]; target: class indices [N, d1, ...], or class probabilities of the
// input's shape. weight: one per class.
struct CrossEntropyLoss : Loss {
  SINTER_NN_ARROW(CrossEntropyLoss)
  explicit CrossEntropyLoss(CrossEntropyLossOptions options = {});
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;
  CrossEntropyLossOptions options;
  Tensor weight;  // buffer "weight" (undefined when not given)
};

// input: log-probabilities [C] or [N, C, d1, ...]; target: class indices. weight: one per class.
struct NLLLoss : Loss {
  SINTER_NN_ARROW(NLLLoss)
  explicit NLLLoss(NLLLossOptions options = {});
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;
  NLLLossOptions options;
  Tensor weight;  // buffer "weight"
};

// input: probabilities in [0, 1]. weight broadcasts against the input.
struct BCELoss : Loss {
  SINTER_NN_ARROW(BCELoss)
  explicit BCELoss(BCELossOptions options = {});
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;
  BCELossOptions options;
  Tensor weight;  // buffer "weight"
};

// input: logits. weight broadcasts against the input; pos_weight weighs the positive term, one per class.
struct BCEWithLogitsLoss : Loss {
  SINTER_NN_ARROW(BCEWithLogitsLoss)
  explicit BCEWithLogitsLoss(BCEWithLogitsLossOptions options = {});
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;
  BCEWithLogitsLossOptions options;
  Tensor weight, pos_weight;  // buffers "weight", "pos_weight"
};

struct SmoothL1Loss : Loss {
  SINTER_NN_ARROW(SmoothL1Loss)
  explicit SmoothL1Loss(SmoothL1LossOptions options = {});
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;
  SmoothL1LossOptions options;
};

struct HuberLoss : Loss {
  SINTER_NN_ARROW(HuberLoss)
  explicit HuberLoss(HuberLossOptions options = {});
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;
  HuberLossOptions options;
};

// input: log-probabilities; target: probabilities (log-probabilities with log_target). reduction: also
// "batchmean", the sum divided by the batch size (the mathematically right KL divergence).
struct KLDivLoss : Loss {
  SINTER_NN_ARROW(KLDivLoss)
  explicit KLDivLoss(KLDivLossOptions options = {});
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;
  KLDivLossOptions options;
};

}  // namespace sinter::nn
