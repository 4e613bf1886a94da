// Autocast (ops/autocast.h, include/sinter/amp.h): PyTorch's op lists as one policy per op and device kind, the
// thread's state, and the casts, each a dispatched `to` so that autograd and capture see it.
#include "ops/autocast.h"

#include <unordered_map>

#include "ops/dispatch.h"
#include "ops/shape_util.h"
#include "sinter/amp.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter {

namespace {

enum class Policy : uint8_t {
  kNone,
  kLower,     // run in the autocast dtype (matrix products, convolutions, attention)
  kFloat32,   // run in float32
  kPromote,   // run in the widest floating dtype of the inputs
};

struct DevicePolicy {
  Policy cuda = Policy::kNone, cpu = Policy::kNone;
};

// PyTorch's autocast lists (aten/src/ATen/autocast_mode.h for CUDA and the other GPU backends, the CPU's in
// autocast_mode.cpp), restricted to the ops of sinter's table. An op's dtype argument set by the caller opts out.
const std::unordered_map<OpId, DevicePolicy>& policies() {
  static const std::unordered_map<OpId, DevicePolicy> table = [] {
    std::unordered_map<OpId, DevicePolicy> t;
    auto both = [&](Policy p, std::initializer_list<OpId> ops) {
      for (OpId op : ops) t[op] = {p, p};
    };
    auto cuda_only = [&](Policy p, std::initializer_list<OpId> ops) {
      for (OpId op : ops) t[op].cuda = p;
    };
    // lower_precision_fp, both devices
    both(Policy::kLower, {OpId::mm, OpId::bmm, OpId::matmul, OpId::addmm, OpId::linear, OpId::conv1d,
                          OpId::conv1d_padding, OpId::conv2d, OpId::conv2d_padding, OpId::conv_transpose2d,
                          OpId::scaled_dot_product_attention});
    cuda_only(Policy::kLower, {OpId::einsum});
    // fp32 on CUDA (the element-wise functions of a wide range, norms, softmax, reductions, upsampling, losses)
    cuda_only(Policy::kFloat32,
              {OpId::acos, OpId::asin, OpId::cosh, OpId::erfinv, OpId::exp, OpId::expm1, OpId::log, OpId::log10,
               OpId::log2, OpId::log1p, OpId::reciprocal, OpId::rsqrt, OpId::sinh, OpId::tan, OpId::pow_Tensor_Tensor,
               OpId::pow_Tensor_Scalar, OpId::pow_Scalar, OpId::softplus, OpId::layer_norm, OpId::group_norm,
               OpId::rms_norm, OpId::norm_ScalarOpt_dim, OpId::logsumexp, OpId::upsample_nearest2d,
               OpId::upsample_bilinear2d, OpId::softmax_int, OpId::log_softmax_int, OpId::sum, OpId::prod,
               OpId::prod_dim_int, OpId::cumsum, OpId::cumprod});
    // fp32 on both: the losses
    both(Policy::kFloat32, {OpId::mse_loss, OpId::nll_loss, OpId::cross_entropy_loss});
    // promote to the widest input
    cuda_only(Policy::kPromote,
              {OpId::addcdiv, OpId::addcmul, OpId::atan2, OpId::index_put, OpId::scatter_add});
    return t;
  }();
  return table;
}

struct State {
  bool enabled[2] = {false, false};  // cpu, cuda
  DType dtype[2] = {kBFloat16, kFloat16};
  bool excluded = false;
};
thread_local State tls_state;

int slot(DeviceType d) { return d == DeviceType::kCUDA ? 1 : 0; }

bool castable(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.dtype() != kFloat64;
}

// The device kind of the op's first tensor argument (lists included).
std::optional<DeviceType> op_device(const Args& args) {
  for (const Value& v : args) {
    if (v.is_tensor() && v.tensor().defined()) return v.tensor().device().type;
    if (v.is_tensor_list())
      for (const Tensor& t : v.tensor_list())
        if (t.defined()) return t.device().type;
  }
  return std::nullopt;
}

template <class F>
void for_each_tensor_arg(Args& args, F&& fn) {
  for (Value& v : args) {
    if (v.is_tensor() && v.tensor().defined()) {
      v = Value(fn(v.tensor()));
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> list = v.tensor_list();
      for (Tensor& t : list)
        if (t.defined()) t = fn(t);
      v = Value(std::move(list));
    }
  }
}

}  // namespace

bool autocast_active() {
  const State& s = tls_state;
  return !s.excluded && (s.enabled[0] || s.enabled[1]);
}

bool apply_autocast(OpId op, Args& args) {
  const OpDef& def = op_def(op);
  if (def.schema.is_inplace()) return false;
  auto it = policies().find(op);
  if (it == policies().end()) return false;
  std::optional<DeviceType> device = op_device(args);
  if (!device || (*device != DeviceType::kCPU && *device != DeviceType::kCUDA)) return false;
  if (!tls_state.enabled[slot(*device)]) return false;
  const Policy policy = *device == DeviceType::kCUDA ? it->second.cuda : it->second.cpu;
  if (policy == Policy::kNone) return false;
  // An explicit dtype argument opts the call out, as in PyTorch.
  const int dtype_arg = def.schema.find_arg("dtype");
  if (dtype_arg >= 0 && dtype_arg < static_cast<int>(args.size()) && !args[dtype_arg].is_none()) return false;
  DType target = kFloat32;
  if (policy == Policy::kLower) {
    target = tls_state.dtype[slot(*device)];
  } else if (policy == Policy::kPromote) {
    bool any = false;
    for_each_tensor_arg(args, [&](const Tensor& t) {
      if (castable(t)) target = any ? promote_types(target, t.dtype()) : t.dtype(), any = true;
      return t;
    });
    if (!any) return false;
  }
  for_each_tensor_arg(args, [&](const Tensor& t) { return castable(t) && t.dtype() != target ? t.to(target) : t; });
  return true;
}

AutocastExcluded::AutocastExcluded() : previous_(tls_state.excluded) { tls_state.excluded = true; }
AutocastExcluded::~AutocastExcluded() { tls_state.excluded = previous_; }

uint32_t autocast_state_key() {
  const State& s = tls_state;
  uint32_t key = 0;
  for (int d = 0; d < 2; ++d)
    if (s.enabled[d]) key |= (1u | (static_cast<uint32_t>(s.dtype[d]) << 1)) << (8 * d);
  return key;
}

AutocastGuard::AutocastGuard(DeviceType device, std::optional<DType> dtype, bool enabled) : device_(device) {
  SINTER_CHECK(device == DeviceType::kCPU || device == DeviceType::kCUDA,
               "autocast: device must be cpu or cuda, got {}", Device(device).str());
  const DType want = dtype.value_or(device == DeviceType::kCUDA ? kFloat16 : kBFloat16);
  SINTER_CHECK(want == kFloat16 || want == kBFloat16,
               "autocast: dtype must be float16 or bfloat16 (the lower precision autocast runs in), got {}",
               dtype_name(want));
  State& s = tls_state;
  was_enabled_ = s.enabled[slot(device)];
  was_dtype_ = s.dtype[slot(device)];
  s.enabled[slot(device)] = enabled;
  s.dtype[slot(device)] = want;
}

AutocastGuard::~AutocastGuard() {
  tls_state.enabled[slot(device_)] = was_enabled_;
  tls_state.dtype[slot(device_)] = was_dtype_;
}

bool is_autocast_enabled(DeviceType device) { return tls_state.enabled[slot(device)]; }
DType autocast_dtype(DeviceType device) { return tls_state.dtype[slot(device)]; }

}  // namespace sinter
