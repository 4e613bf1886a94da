// Automatic mixed precision, as torch.amp: autocast runs the ops that profit from it (matrix products,
// convolutions, attention) in float16 or bfloat16 and keeps the ops that need float32's range (exp, log, norms,
// softmax, losses) in float32, by PyTorch's lists per device; GradScaler scales a float16 loss so small gradients
// survive, unscales them before the step and skips steps whose gradients overflowed.
#pragma once
#include <cstdint>
#include <map>
#include <optional>

#include "sinter/optim.h"
#include "sinter/tensor.h"

namespace sinter {

// Autocast for ops on tensors of `device` (kCPU or kCUDA) for its scope, then the previous state again (scopes
// nest, as torch.autocast's). dtype: kBFloat16 or kFloat16 (the default: bfloat16 on the CPU, float16 on CUDA).
// Per device, PyTorch's lists decide: matrix products, linear, convolutions and attention run in `dtype`; exp,
// log, pow and the like, softmax, log_softmax, the norms, sums, products and cumulative ops, logsumexp, upsampling
// and the losses run in float32 (the CPU list keeps the element-wise ops and softmax in low precision, as
// PyTorch's CPU autocast does); addcmul, addcdiv, atan2, index_put and scatter_add promote to their widest input;
// everything else runs in its inputs' dtypes. float64 inputs and in-place ops are never cast. The backward of an
// autocast forward runs in the dtypes the forward used, whatever autocast says when it runs. Compiled functions
// guard the autocast state (a change recompiles).
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType device, std::optional<DType> dtype = std::nullopt, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_;
  bool was_enabled_;
  DType was_dtype_;
};

bool is_autocast_enabled(DeviceType device);
DType autocast_dtype(DeviceType device);

// torch.amp.GradScaler: scale(loss).backward(), then step(optimizer) (which unscales the gradients, and skips the
// step when one is inf or NaN), then update() (which halves the scale after an overflow, and doubles it after
// growth_interval steps without one). unscale_(optimizer) first is for gradient clipping between the two. Reading
// whether a step overflowed is a host read: a compiled training step with a scaler breaks there.
class GradScaler {
 public:
  struct Options {
    double init_scale = 65536.0;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
    bool enabled = true;
  };
  GradScaler();
  explicit GradScaler(Options options);

  Tensor scale(const Tensor& loss) const;   // loss * scale (the loss itself when disabled)
  void unscale_(optim::Optimizer& optimizer);  // gradients / scale, once per step; notes inf/NaN
  // Unscales unless unscale_ did, then steps unless a gradient was inf or NaN; returns whether it stepped.
  bool step(optim::Optimizer& optimizer);
  void update();                            // the next scale
  double get_scale() const { return scale_; }
  bool is_enabled() const { return options_.enabled; }

 private:
  Options options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  // Per optimizer of the current step: unscaled already, and whether a gradient was inf or NaN.
  std::map<const optim::Optimizer*, bool> found_inf_;
};

}  // namespace sinter
