// sinter::optim — optimizers and learning-rate schedulers as torch.optim / LibTorch's torch::optim, and
// gradient clipping as torch.nn.utils. Updates follow torch.optim's single-tensor (for-loop) implementations
// op for op, so a sequence of steps matches PyTorch's to rounding; schedulers use PyTorch's recursive and
// closed forms.
//
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
//   optim::StepLR sched(opt, /*step_size=*/30);
//   for each batch: loss.backward(); nn::utils::clip_grad_norm_(model->parameters(), 1.0);
//                   opt.step(); opt.zero_grad();
//   after each epoch: sched.step();
#pragma once
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sinter/tensor.h"

namespace sinter::optim {

// One option: a chainable setter and a getter, as LibTorch's TORCH_ARG. `= value` after it sets the default.
#define SINTER_OPTIM_ARG(T, name)           \
 public:                                    \
  auto& name(T value) {                     \
    name##_ = std::move(value);             \
    return *this;                           \
  }                                         \
  const T& name() const { return name##_; } \
                                            \
 private:                                   \
  T name##_

// The hyper-parameters of one param group. Each optimizer has its own subclass; a group's options must be of
// the optimizer's type.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // Every hyper-parameter by PyTorch's name, booleans as 0 or 1, betas as beta1 and beta2 (what state_dict
  // saves).
  virtual std::map<std::string, double> to_map() const = 0;
  // Sets the hyper-parameters `values` names; a name this type does not have is an Error.
  virtual void from_map(const std::map<std::string, double>& values) = 0;
};

class SGDOptions : public OptimizerOptions {
 public:
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT: converts, as LibTorch's
  SINTER_OPTIM_ARG(double, lr);
  SINTER_OPTIM_ARG(double, momentum) = 0;
  SINTER_OPTIM_ARG(double, dampening) = 0;
  SINTER_OPTIM_ARG(double, weight_decay) = 0;
  SINTER_OPTIM_ARG(bool, nesterov) = false;
  SINTER_OPTIM_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<SGDOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::map<std::string, double> to_map() const override;
  void from_map(const std::map<std::string, double>& values) override;
};

// Adam's (beta1, beta2): the decay rates of the running averages of the gradient and of its square.
using Betas = std::tuple<double, double>;

class AdamOptions : public OptimizerOptions {
 public:
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: converts, as LibTorch's
  SINTER_OPTIM_ARG(double, lr);
  SINTER_OPTIM_ARG(Betas, betas) = {0.9, 0.999};
  SINTER_OPTIM_ARG(double, eps) = 1e-8;
  SINTER_OPTIM_ARG(double, weight_decay) = 0;
  SINTER_OPTIM_ARG(bool, amsgrad) = false;
  SINTER_OPTIM_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::map<std::string, double> to_map() const override;
  void from_map(const std::map<std::string, double>& values) override;
};

// AdamW's options: Adam's, with weight decay 1e-2 by default (applied to the parameter, not the gradient).
class AdamWOptions : public OptimizerOptions {
 public:
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: converts, as LibTorch's
  SINTER_OPTIM_ARG(double, lr);
  SINTER_OPTIM_ARG(Betas, betas) = {0.9, 0.999};
  SINTER_OPTIM_ARG(double, eps) = 1e-8;
  SINTER_OPTIM_ARG(double, weight_decay) = 1e-2;
  SINTER_OPTIM_ARG(bool, amsgrad) = false;
  SINTER_OPTIM_ARG(bool, maximize) = false;

 public:
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamWOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  std::map<std::string, double> to_map() const override;
  void from_map(const std::map<std::string, double>& values) override;
};

#undef SINTER_OPTIM_ARG

// Parameters updated with one set of hyper-parameters (LibTorch's OptimizerParamGroup). A group made without
// options takes the optimizer's defaults when it is added.
class OptimizerParamGroup {
 public:
  explicit OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  template <class Options>
    requires std::derived_from<Options, OptimizerOptions>
  OptimizerParamGroup(std::vector<Tensor> params, const Options& options)
      : params_(std::move(params)), options_(options.clone()) {}
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  // The options object itself, for what must outlive a step (a compiled step reads the lr through it per call).
  std::weak_ptr<const OptimizerOptions> options_ref() const { return options_; }
  double lr() const { return options().get_lr(); }
  void set_lr(double lr) { options().set_lr(lr); }
  // The lr the first scheduler made for this optimizer found (PyTorch's group["initial_lr"]); schedulers'
  // base_lrs come from it.
  const std::optional<double>& initial_lr() const { return initial_lr_; }
  void set_initial_lr(std::optional<double> lr) { initial_lr_ = lr; }

 private:
  std::vector<Tensor> params_;
  std::shared_ptr<OptimizerOptions> options_;
  std::optional<double> initial_lr_;
};

// The base of every optimizer: param groups, per-parameter state, zero_grad and state dicts.
//
// state_dict() is one flat map, so it can be saved as it is (nn::save_safetensors). Parameters are numbered
// 0, 1, ... through the groups in order, as in PyTorch's state_dict:
//   "state.{i}.{name}"             parameter i's state, the optimizer's own tensors (not copies). SGD:
//                                  momentum_buffer; Adam, AdamW: step (float32, 0-dim, on the parameter's
//                                  device, as PyTorch's capturable step), exp_avg, exp_avg_sq, and
//                                  max_exp_avg_sq with amsgrad
//   "param_groups.{g}.params"      int64 1-d: the numbers of group g's parameters
//   "param_groups.{g}.{option}"    float64 0-dim: each hyper-parameter of OptimizerOptions::to_map()
//   "param_groups.{g}.initial_lr"  float64 0-dim, when a scheduler has set it
// load_state_dict() takes such a map for an optimizer of the same type with as many groups of the same sizes;
// it copies each state tensor to its parameter's device (floating ones to its dtype), replaces all state and
// sets every group's hyper-parameters. A map it refuses changes nothing.
class Optimizer {
 public:
  using LossClosure = std::function<Tensor()>;

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient (one whose grad() is undefined is skipped), under
  // NoGradGuard. `closure`, when given, is called first with grad mode on; its result is returned (else an
  // undefined tensor).
  //
  // step() may run inside a compiled function (compile(train_step)): the update is tensor ops only (the step
  // count and bias corrections are tensors, no host read), the state is made outside the capture the first time
  // (it is kept across calls), the learning rate is read at every call (a scheduler's change needs no recompile)
  // and the other hyper-parameters are guarded (a change recompiles). SGD's first step with momentum differs
  // from the others, so a compiled step compiles twice.
  Tensor step(const LossClosure& closure = nullptr);
  // Clears every parameter's gradient (set_to_none), or zeroes it in place after detaching it.
  void zero_grad(bool set_to_none = true);
  // Adds a group; its options (or a copy of the defaults) are checked. A parameter may be in one group only.
  void add_param_group(const OptimizerParamGroup& group);

  std::vector<OptimizerParamGroup>& param_groups() { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return param_groups_; }
  std::vector<Tensor> parameters() const;  // every group's, in order
  const OptimizerOptions& defaults() const { return *defaults_; }
  const std::string& name() const { return name_; }
  // Parameter `param`'s state (empty before its first update).
  const std::map<std::string, Tensor>& state(const Tensor& param) const;

  std::map<std::string, Tensor> state_dict() const;
  void load_state_dict(const std::map<std::string, Tensor>& state_dict);

 protected:
  Optimizer(std::string name, std::unique_ptr<OptimizerOptions> defaults);
  // Adds the groups after checking the defaults (no parameter in any group is an Error); derived
  // constructors call it.
  void init(const std::vector<OptimizerParamGroup>& groups);
  // The update of every group, with grad mode off.
  virtual void update() = 0;
  // Throws an Error naming the optimizer when `options` is of another type or holds an invalid value.
  virtual void check_options(const OptimizerOptions& options) const = 0;
  std::map<std::string, Tensor>& state_of(const Tensor& param) { return state_[param.impl()]; }
  // The state of `param`, made by `init` when it has none; inside a capture it is made outside it, on real tensors.
  std::map<std::string, Tensor>& state_for(const Tensor& param,
                                           const std::function<void(std::map<std::string, Tensor>&)>& init);
  // The group's learning rate as a 0-dim float64 tensor on `device` (inside a capture, read at every call).
  Tensor lr_tensor(const OptimizerParamGroup& group, Device device);
  // Alive as long as the optimizer: what a compiled step's guards hold to know it still exists.
  std::weak_ptr<const int> alive() const { return alive_; }

 private:
  std::string name_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<OptimizerParamGroup> param_groups_;
  std::map<const TensorImpl*, std::map<std::string, Tensor>> state_;
  std::shared_ptr<const int> alive_ = std::make_shared<const int>(0);
};

// Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay (torch.optim.SGD).
class SGD : public Optimizer {
 public:
  SGD(const std::vector<Tensor>& params, const SGDOptions& defaults);
  SGD(const std::vector<OptimizerParamGroup>& groups, const SGDOptions& defaults);

 protected:
  void update() override;
  void check_options(const OptimizerOptions& options) const override;
};

// torch.optim.Adam (L2 weight decay added to the gradient, amsgrad, maximize).
class Adam : public Optimizer {
 public:
  Adam(const std::vector<Tensor>& params, const AdamOptions& defaults = {});
  Adam(const std::vector<OptimizerParamGroup>& groups, const AdamOptions& defaults = {});

 protected:
  void update() override;
  void check_options(const OptimizerOptions& options) const override;
};

// torch.optim.AdamW: Adam with decoupled weight decay (the parameter is multiplied by 1 - lr * weight_decay).
class AdamW : public Optimizer {
 public:
  AdamW(const std::vector<Tensor>& params, const AdamWOptions& defaults = {});
  AdamW(const std::vector<OptimizerParamGroup>& groups, const AdamWOptions& defaults = {});

 protected:
  void update() override;
  void check_options(const OptimizerOptions& options) const override;
};

// ---- learning-rate schedulers (torch.optim.lr_scheduler) ----

// The base of the schedulers: made over an optimizer, it records each group's initial_lr (when not set yet)
// as its base_lrs and sets the lrs for epoch 0; step() moves to the next epoch and sets every group's lr.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  virtual void step();
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return optimizer_; }

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Each group's lr at last_epoch() from the groups' current lrs (PyTorch's get_lr, the recursive form).
  virtual std::vector<double> get_lr() const = 0;
  // Each group's lr at last_epoch() from base_lrs() alone (PyTorch's _get_closed_form_lr); get_lr() where a
  // scheduler has none.
  virtual std::vector<double> closed_form_lr() const { return get_lr(); }
  // The first step, to epoch 0 (PyTorch's _initial_step); every scheduler's constructor ends with it.
  void initial_step();
  bool is_initial() const { return is_initial_; }
  std::vector<double> group_lrs() const;

 private:
  friend class SequentialLR;
  // Sets last_epoch() to `epoch` and the lrs to the closed form there (PyTorch's step(epoch)).
  void step_to(int64_t epoch);
  void set_lrs(const std::vector<double>& lrs);

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = -1;
  bool is_initial_ = false;
};

// lr = base_lr * gamma^(epoch / step_size) (integer division).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() const override;
  std::vector<double> closed_form_lr() const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, continuing as a cosine past T_max.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  std::vector<double> get_lr() const override;
  std::vector<double> closed_form_lr() const override;

 private:
  int64_t T_max_;
  double eta_min_;
};

// lr = base_lr * (start_factor + (end_factor - start_factor) * min(epoch, total_iters) / total_iters): linear
// warm-up. start_factor in (0, 1], end_factor in [0, 1], total_iters > 0.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() const override;
  std::vector<double> closed_form_lr() const override;

 private:
  double start_factor_;
  double end_factor_;
  int64_t total_iters_;
};

// lr = base_lr * lr_lambda(epoch), one function for every group or one per group.
class LambdaLR : public LRScheduler {
 public:
  using LrLambda = std::function<double(int64_t epoch)>;
  LambdaLR(Optimizer& optimizer, LrLambda lr_lambda);
  LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas);

 protected:
  std::vector<double> get_lr() const override;

 private:
  std::vector<LrLambda> lr_lambdas_;
};

// Runs schedulers[0] until milestones[0], then schedulers[1] (restarted at its epoch 0) until milestones[1],
// and so on. Every scheduler must be over `optimizer`; there is one milestone fewer than schedulers.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;

 protected:
  std::vector<double> get_lr() const override { return get_last_lr(); }

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

}  // namespace sinter::optim

namespace sinter::nn::utils {

// Scales the gradients of `parameters` (those defined) in place so that their norm of order `norm_type` taken
// together (the norm of the per-gradient norms; norm_type may be infinity) is at most `max_norm`, and returns
// that total norm before clipping (a 0-dim tensor; 0.0 when no parameter has a gradient), as torch.nn.utils.
// A non-finite total norm is an Error with error_if_nonfinite.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
Tensor clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
// Clamps every defined gradient of `parameters` to [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

}  // namespace sinter::nn::utils
