// The learning-rate schedulers of torch.optim.lr_scheduler: each has PyTorch's recursive form (get_lr, from
// the groups' current lrs, what step() uses) and, where PyTorch has one, its closed form (from base_lrs, what
// SequentialLR uses to restart a scheduler at epoch 0). The arithmetic is written in PyTorch's order of
// operations so the sequences agree to the last bits.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>

#include "sinter/optim.h"
#include "support/check.h"

namespace sinter::optim {

namespace {

// Python's a // b and a % b (rounding toward minus infinity).
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

}  // namespace

// ---- the base ----

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (OptimizerParamGroup& group : optimizer.param_groups()) {
    if (!group.initial_lr()) group.set_initial_lr(group.lr());
    base_lrs_.push_back(*group.initial_lr());
  }
}

void LRScheduler::initial_step() {
  struct Initial {
    bool& flag;
    explicit Initial(bool& f) : flag(f) { flag = true; }
    ~Initial() { flag = false; }
  } initial(is_initial_);
  step();
}

void LRScheduler::step() {
  ++last_epoch_;
  set_lrs(get_lr());
}

void LRScheduler::step_to(int64_t epoch) {
  last_epoch_ = epoch;
  set_lrs(closed_form_lr());
}

std::vector<double> LRScheduler::group_lrs() const {
  SINTER_CHECK(optimizer_.param_groups().size() == base_lrs_.size(),
               "LRScheduler: the optimizer has {} param groups but the scheduler was made for {}",
               optimizer_.param_groups().size(), base_lrs_.size());
  std::vector<double> lrs;
  for (const OptimizerParamGroup& group : optimizer_.param_groups()) lrs.push_back(group.lr());
  return lrs;
}

void LRScheduler::set_lrs(const std::vector<double>& lrs) {
  std::vector<OptimizerParamGroup>& groups = optimizer_.param_groups();
  SINTER_CHECK(lrs.size() == groups.size(),
               "LRScheduler: the optimizer has {} param groups but the scheduler has {} lrs", groups.size(),
               lrs.size());
  for (size_t i = 0; i < groups.size(); ++i) groups[i].set_lr(lrs[i]);
  last_lr_ = group_lrs();
}

// ---- StepLR ----

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  SINTER_CHECK(step_size > 0, "StepLR: step_size must be positive, got {}", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() const {
  std::vector<double> lrs = group_lrs();
  if (last_epoch() == 0 || floor_mod(last_epoch(), step_size_) != 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::vector<double> StepLR::closed_form_lr() const {
  std::vector<double> lrs;
  const double exponent = static_cast<double>(floor_div(last_epoch(), step_size_));
  for (double base_lr : base_lrs()) lrs.push_back(base_lr * std::pow(gamma_, exponent));
  return lrs;
}

// ---- CosineAnnealingLR ----

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  SINTER_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be positive, got {}", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() const {
  std::vector<double> lrs = group_lrs();
  if (is_initial()) return lrs;
  const double pi = std::numbers::pi;
  const double t_max = static_cast<double>(T_max_);
  const double epoch = static_cast<double>(last_epoch());
  if (floor_mod(last_epoch() - 1 - T_max_, 2 * T_max_) == 0) {
    // The restart half-period: the recursive ratio below would divide by 1 + cos(pi) = 0.
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = lrs[i] + (base_lrs()[i] - eta_min_) * (1 - std::cos(pi / t_max)) / 2;
    return lrs;
  }
  for (double& lr : lrs)
    lr = (1 + std::cos(pi * epoch / t_max)) / (1 + std::cos(pi * (epoch - 1) / t_max)) * (lr - eta_min_) +
         eta_min_;
  return lrs;
}

std::vector<double> CosineAnnealingLR::closed_form_lr() const {
  const double pi = std::numbers::pi;
  std::vector<double> lrs;
  for (double base_lr : base_lrs())
    lrs.push_back(eta_min_ +
                  (base_lr - eta_min_) *
                      (1 + std::cos(pi * static_cast<double>(last_epoch()) / static_cast<double>(T_max_))) /
                      2);
  return lrs;
}

// ---- LinearLR ----

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  SINTER_CHECK(
      start_factor > 0 && start_factor <= 1,
      "LinearLR: starting multiplicative factor expected to be greater than 0 and less or equal to 1, got {}",
      start_factor);
  SINTER_CHECK(end_factor >= 0 && end_factor <= 1,
               "LinearLR: ending multiplicative factor expected to be between 0 and 1, got {}", end_factor);
  SINTER_CHECK(total_iters > 0, "LinearLR: total_iters must be positive, got {}", total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() const {
  std::vector<double> lrs = group_lrs();
  if (last_epoch() == 0) {
    for (double& lr : lrs) lr = lr * start_factor_;
    return lrs;
  }
  if (is_initial() || last_epoch() > total_iters_) return lrs;
  const double delta = end_factor_ - start_factor_;
  const double factor = 1.0 + delta / (static_cast<double>(total_iters_) * start_factor_ +
                                       static_cast<double>(last_epoch() - 1) * delta);
  for (double& lr : lrs) lr = lr * factor;
  return lrs;
}

std::vector<double> LinearLR::closed_form_lr() const {
  const double progress = static_cast<double>(std::min(total_iters_, last_epoch()));
  std::vector<double> lrs;
  for (double base_lr : base_lrs())
    lrs.push_back(base_lr * (start_factor_ +
                             (end_factor_ - start_factor_) * progress / static_cast<double>(total_iters_)));
  return lrs;
}

// ---- LambdaLR ----

LambdaLR::LambdaLR(Optimizer& optimizer, LrLambda lr_lambda)
    : LambdaLR(optimizer, std::vector<LrLambda>(optimizer.param_groups().size(), lr_lambda)) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas)
    : LRScheduler(optimizer), lr_lambdas_(std::move(lr_lambdas)) {
  SINTER_CHECK(lr_lambdas_.size() == optimizer.param_groups().size(),
               "LambdaLR: expected {} lr_lambdas, but got {}", optimizer.param_groups().size(),
               lr_lambdas_.size());
  for (size_t i = 0; i < lr_lambdas_.size(); ++i)
    SINTER_CHECK(static_cast<bool>(lr_lambdas_[i]), "LambdaLR: lr_lambda {} is empty", i);
  initial_step();
}

std::vector<double> LambdaLR::get_lr() const {
  group_lrs();  // checks the group count
  std::vector<double> lrs;
  for (size_t i = 0; i < base_lrs().size(); ++i) lrs.push_back(base_lrs()[i] * lr_lambdas_[i](last_epoch()));
  return lrs;
}

// ---- SequentialLR ----

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  SINTER_CHECK(!schedulers_.empty(), "SequentialLR expects at least one scheduler, but got no scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    SINTER_CHECK(schedulers_[i] != nullptr, "SequentialLR: scheduler {} is null", i);
    SINTER_CHECK(
        &schedulers_[i]->optimizer() == &optimizer,
        "SequentialLR expects all schedulers to belong to the same optimizer, but scheduler {} has another",
        i);
  }
  SINTER_CHECK(
      milestones_.size() + 1 == schedulers_.size(),
      "SequentialLR expects number of schedulers provided to be one more than the number of milestone "
      "points, but got number of schedulers {} and the number of milestones to be equal to {}",
      schedulers_.size(), milestones_.size());

  for (OptimizerParamGroup& group : optimizer.param_groups()) group.set_lr(*group.initial_lr());
  // Take back the initial step of every scheduler, of nested SequentialLRs' too (PyTorch's recursive_undo).
  std::function<void(LRScheduler&)> undo = [&](LRScheduler& s) {
    if (auto* sequential = dynamic_cast<SequentialLR*>(&s)) {
      for (const std::shared_ptr<LRScheduler>& inner : sequential->schedulers_) undo(*inner);
    } else {
      --s.last_epoch_;
    }
  };
  for (const std::shared_ptr<LRScheduler>& s : schedulers_) undo(*s);
  last_epoch_ = 0;
  const size_t idx =
      std::upper_bound(milestones_.begin(), milestones_.end(), int64_t{0}) - milestones_.begin();
  schedulers_[idx]->initial_step();
  last_lr_ = schedulers_[idx]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  LRScheduler& scheduler = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_)
    scheduler.step_to(0);
  else
    scheduler.step();
  last_lr_ = scheduler.get_last_lr();
}

}  // namespace sinter::optim
