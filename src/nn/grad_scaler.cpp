// torch.amp.GradScaler (include/sinter/amp.h): dynamic loss scaling for float16 training.
#include <cmath>

#include "sinter/amp.h"
#include "sinter/autograd.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter {

GradScaler::GradScaler() : GradScaler(Options{}) {}

GradScaler::GradScaler(Options options) : options_(options), scale_(options.init_scale) {
  SINTER_CHECK(options.init_scale > 0 && std::isfinite(options.init_scale),
               "GradScaler: init_scale must be positive and finite, got {}", options.init_scale);
  SINTER_CHECK(options.growth_factor > 1, "GradScaler: growth_factor must be above 1, got {}", options.growth_factor);
  SINTER_CHECK(options.backoff_factor > 0 && options.backoff_factor < 1,
               "GradScaler: backoff_factor must be in (0, 1), got {}", options.backoff_factor);
  SINTER_CHECK(options.growth_interval > 0, "GradScaler: growth_interval must be positive, got {}",
               options.growth_interval);
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!options_.enabled) return loss;
  return loss * scale_;
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!options_.enabled) return;
  SINTER_CHECK(!found_inf_.count(&optimizer),
               "GradScaler: unscale_() has already been called on this optimizer since the last update()");
  NoGradGuard no_grad;
  const double inv = 1.0 / scale_;
  bool inf = false;
  for (const Tensor& p : optimizer.parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    g.mul_(inv);
    // One host read per gradient, as PyTorch's _amp_foreach_non_finite_check_and_unscale_ ends in one per step.
    if (!inf && !isfinite(g).all().item<bool>()) inf = true;
  }
  found_inf_[&optimizer] = inf;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  if (!found_inf_.count(&optimizer)) unscale_(optimizer);
  if (found_inf_.at(&optimizer)) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  SINTER_CHECK(!found_inf_.empty(), "GradScaler: update() with no step() or unscale_() since the last update()");
  bool inf = false;
  for (const auto& [opt, found] : found_inf_) inf = inf || found;
  if (inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
  found_inf_.clear();
}

}  // namespace sinter
