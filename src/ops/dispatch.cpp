// The one dispatch point. See dispatch.h for the contract.
#include "ops/dispatch.h"

#include <atomic>

#include "ops/autocast.h"
#include "ops/cuda_fallback.h"

#include "ops/shape_util.h"
#include "support/check.h"
#include "tensor/allocator.h"

namespace sinter {
namespace {

thread_local DispatchHook* tls_hook = nullptr;
thread_local const OpCallContext* tls_call = nullptr;
std::atomic<AutogradFn> autograd_fn{nullptr};

// Marks the outermost op call on this thread, so errors raised anywhere inside name it and the user's line.
class CallScope {
 public:
  CallScope(OpId op, const Args* args, const Loc& loc) : ctx_{op, args, loc} {
    if (!tls_call) {
      tls_call = &ctx_;
      detail::set_current_error_context(&ctx_);
      owner_ = true;
    }
  }
  ~CallScope() {
    if (!owner_) return;
    tls_call = nullptr;
    detail::set_current_error_context(nullptr);
  }

 private:
  OpCallContext ctx_;
  bool owner_ = false;
};

std::string_view type_word(ArgType t) {
  switch (t) {
    case ArgType::kTensor: return "a Tensor";
    case ArgType::kTensorList:
    case ArgType::kOptionalTensorList: return "a list of Tensors";
    case ArgType::kScalar: return "a number";
    case ArgType::kInt: return "an int";
    case ArgType::kIntList: return "a list of ints";
    case ArgType::kFloat: return "a float";
    case ArgType::kFloatList: return "a list of floats";
    case ArgType::kBool: return "a bool";
    case ArgType::kStr: return "a string";
    case ArgType::kScalarType: return "a dtype";
    case ArgType::kDevice: return "a device";
    case ArgType::kMemoryFormat: return "a memory format";
  }
  return "?";
}

void normalize_arg(const SchemaArg& a, Value& v) {
  auto bad = [&] { detail::throw_user_error(fmt::format("argument '{}' must be {}, got {}", a.name, type_word(a.type), v.kind_name())); };
  if (v.is_none()) {
    if (!a.optional) detail::throw_user_error(fmt::format("argument '{}' must be {}, got None", a.name, type_word(a.type)));
    return;
  }
  switch (a.type) {
    case ArgType::kTensor:
      if (!v.is_tensor()) bad();
      if (!v.tensor().defined()) {
        if (!a.optional) detail::throw_user_error(fmt::format("argument '{}' is an undefined tensor", a.name));
        v = Value();
      }
      return;
    case ArgType::kTensorList:
      if (!v.is_tensor_list()) bad();
      for (const Tensor& t : v.tensor_list())
        if (!t.defined()) detail::throw_user_error(fmt::format("argument '{}' holds an undefined tensor", a.name));
      return;
    case ArgType::kOptionalTensorList:
      if (!v.is_tensor_list()) bad();
      return;
    case ArgType::kScalar:
      if (v.is_scalar()) return;
      if (v.is_int() || v.is_double() || v.is_bool()) {
        v = Value(v.scalar());
        return;
      }
      bad();
    case ArgType::kInt:
      if (v.is_int()) return;
      if (v.is_scalar() && v.scalar().is_integral()) {
        v = Value(v.scalar().to_int());
        return;
      }
      bad();
    case ArgType::kIntList: {
      if (v.is_int()) v = Value(SymIntList{v.sym_int()});
      if (!v.is_int_list()) bad();
      if (a.fixed_size > 1 && v.int_list().size() == 1) v = Value(SymIntList(a.fixed_size, v.int_list()[0]));
      return;
    }
    case ArgType::kFloat:
      if (v.is_double()) return;
      if (v.is_int() || v.is_scalar()) {
        v = Value(v.to_double());
        return;
      }
      bad();
    case ArgType::kFloatList:
      if (!v.is_double_list()) bad();
      return;
    case ArgType::kBool:
      if (v.is_bool()) return;
      if (v.is_scalar() && v.scalar().is_bool()) {
        v = Value(v.scalar().to_bool());
        return;
      }
      bad();
    case ArgType::kStr:
      if (!v.is_string()) bad();
      return;
    case ArgType::kScalarType:
      if (!v.is_dtype()) bad();
      return;
    case ArgType::kDevice:
      if (!v.is_device()) bad();
      return;
    case ArgType::kMemoryFormat:
      if (!v.is_memory_format()) bad();
      return;
  }
}

bool any_requires_grad(const Args& args) {
  for (const Value& v : args) {
    if (v.is_tensor() && v.tensor().requires_grad()) return true;
    if (v.is_tensor_list())
      for (const Tensor& t : v.tensor_list())
        if (t.requires_grad()) return true;
  }
  return false;
}

bool any_meta(const Args& args) {
  for (const Value& v : args) {
    if (v.is_tensor() && v.tensor().defined() && v.tensor().is_meta()) return true;
    if (v.is_tensor_list())
      for (const Tensor& t : v.tensor_list())
        if (t.defined() && t.is_meta()) return true;
  }
  return false;
}

Tensor make_view(const Tensor& base, const TensorMeta& meta) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->meta = meta;
  const std::shared_ptr<TensorImpl> root = base.impl()->view_base.lock();
  impl->view_base = root ? root : base.impl_ptr();
  return Tensor(std::move(impl));
}

// The device's kernel, or on CUDA a generated kernel or the CPU kernel through the fallback (ops/cuda_fallback.h).
void run_device_kernel(const OpDef& def, OpId op, const Args& args, std::vector<Tensor>& outs, Device device,
                       bool data_dependent) {
  if (KernelFn kernel = def.kernels[static_cast<int>(device.type)]) return kernel(op, args, outs);
  KernelFn cpu = def.kernels[static_cast<int>(DeviceType::kCPU)];
  SINTER_CHECK(device.is_cuda() && cpu, "{} has no {} kernel yet", def.schema.full_name(), device.str());
  run_without_cuda_kernel(cpu, op, args, outs, data_dependent, device);
}

Device kernel_device(const Args& args, const ShapeResult& r) {
  if (!r.outputs.empty()) return r.outputs[0].device;
  return common_device(args);
}

}  // namespace

DispatchHook* current_hook() { return tls_hook; }
DispatchHook* exchange_hook(DispatchHook* hook) {
  DispatchHook* previous = tls_hook;
  tls_hook = hook;
  set_current_read_hook(hook);
  return previous;
}
HookScope::HookScope(DispatchHook* hook) : previous_(tls_hook) {
  tls_hook = hook;
  set_current_read_hook(hook);
}
HookScope::~HookScope() {
  tls_hook = previous_;
  set_current_read_hook(previous_);
}
const OpCallContext* current_op_call() { return tls_call; }

std::string OpCallContext::describe(const std::string& message) const {
  const OpDef& def = op_def(op);
  std::string where = loc.line() == 0 ? "unknown location" : fmt::format("{}:{}", loc.file_name(), loc.line());
  return fmt::format("{}: {}\n  operands: {}\n  called from {}", def.schema.name, message,
                     describe_operands(def, *args), where);
}

void normalize_args(const OpDef& def, Args& args) {
  const std::vector<SchemaArg>& schema_args = def.schema.args;
  SINTER_CHECK(args.size() <= schema_args.size(), "takes at most {} arguments, got {}", schema_args.size(),
               args.size());
  for (size_t i = args.size(); i < schema_args.size(); ++i) {
    SINTER_CHECK(schema_args[i].has_default, "missing argument '{}'", schema_args[i].name);
    args.push_back(schema_args[i].default_value);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    // A symbolic integer stays symbolic where the op's shape rule reads its Scalars as SymInt (arange's bounds
    // under capture); elsewhere the conversion to Scalar specialises it, with a guard.
    if ((def.flags & kSymScalars) && schema_args[i].type == ArgType::kScalar && args[i].is_int()) continue;
    normalize_arg(schema_args[i], args[i]);
  }
}

std::vector<Tensor> dispatch(OpId op, Args args, const Loc& loc) {
  CallScope scope(op, &args, loc);
  normalize_args(op_def(op), args);
  // Autocast sits above autograd (its casts are differentiated and captured like any op); below it, the op's own
  // kernels call public ops that must not be cast again.
  std::optional<AutocastExcluded> autocast_below;
  if (autocast_active()) {
    apply_autocast(op, args);
    autocast_below.emplace();
  }
  // Autograd sits above capture, as in PyTorch's dispatcher: under a capture it records backward nodes over the
  // proxies, so a backward run during capture (loss.backward() in a compiled training step, or the joint graph of
  // a compiled forward) is itself recorded into the graph.
  if (AutogradFn fn = autograd_fn.load(std::memory_order_acquire); fn && any_requires_grad(args))
    return fn(op, args, loc);
  return dispatch_below_autograd(op, args, loc);
}

std::vector<Tensor> dispatch_below_autograd(OpId op, const Args& args, const Loc& loc) {
  if (DispatchHook* hook = tls_hook) return hook->call(op, args, loc);
  return run_eager(op, args, loc);
}

void set_autograd_fn(AutogradFn fn) { autograd_fn.store(fn, std::memory_order_release); }

std::vector<Tensor> run_meta(OpId op, const Args& args) {
  const OpDef& def = op_def(op);
  SINTER_CHECK(def.shape, "{} is not implemented yet (no shape rule)", def.schema.full_name());
  ShapeResult r = def.shape(op, args);
  SINTER_CHECK(!r.data_dependent, "the output size depends on the input's values, which a meta tensor does not have");
  std::vector<Tensor> outs;
  if (def.schema.is_inplace()) return {args[0].tensor()};
  for (const TensorMeta& m : r.outputs) outs.push_back(empty_from_meta(m, /*with_data=*/false));
  return outs;
}

std::vector<Tensor> run_eager(OpId op, const Args& args, const Loc& loc) {
  CallScope scope(op, &args, loc);
  const OpDef& def = op_def(op);
  if (any_meta(args)) return run_meta(op, args);
  SINTER_CHECK(def.shape, "{} is not implemented yet (no shape rule)", def.schema.full_name());
  ShapeResult r = def.shape(op, args);
  const Schema& schema = def.schema;
  if (schema.is_view()) {
    const Tensor& base = args[0].tensor();
    std::vector<Tensor> outs;
    outs.reserve(r.outputs.size());
    for (const TensorMeta& m : r.outputs) outs.push_back(make_view(base, m));
    return outs;
  }
  Device device = kernel_device(args, r);
  std::vector<Tensor> outs;
  if (schema.is_inplace()) {
    const Tensor& self = args[0].tensor();
    SINTER_INTERNAL_ASSERT(r.outputs.size() == 1, "in-place op with {} outputs", r.outputs.size());
    SINTER_CHECK(r.outputs[0].sizes.hints() == self.sizes().hints(),
                 "the result of shape {} cannot be written in place into a tensor of shape {}",
                 r.outputs[0].sizes.str(), self.sizes().str());
    outs.push_back(self);
    run_device_kernel(def, op, args, outs, device, false);
    self.storage()->bump_version();
    return outs;
  }
  if (!r.data_dependent) {
    outs.reserve(r.outputs.size());
    for (const TensorMeta& m : r.outputs) outs.push_back(empty_from_meta(m));
  }
  run_device_kernel(def, op, args, outs, device, r.data_dependent);
  SINTER_INTERNAL_ASSERT(r.data_dependent || outs.size() == r.outputs.size(), "{} returned {} outputs, expected {}",
                         schema.full_name(), outs.size(), r.outputs.size());
  return outs;
}

Tensor run_pinned(OpId op, Args args, const Loc& loc) {
  CallScope scope(op, &args, loc);
  const OpDef& def = op_def(op);
  normalize_args(def, args);
  if (any_meta(args)) return run_meta(op, args)[0];
  SINTER_CHECK(def.shape, "{} is not implemented yet (no shape rule)", def.schema.full_name());
  ShapeResult r = def.shape(op, args);
  SINTER_INTERNAL_ASSERT(r.outputs.size() == 1 && !r.data_dependent && !def.schema.is_view() &&
                             !def.schema.is_inplace(),
                         "{} cannot make a pinned result", def.schema.full_name());
  std::vector<Tensor> outs{empty_pinned(r.outputs[0])};
  run_device_kernel(def, op, args, outs, kCPU, false);
  return outs[0];
}

void run_kernel_into(OpId op, const Args& args, std::vector<Tensor>& outs, const Loc& loc) {
  CallScope scope(op, &args, loc);
  const OpDef& def = op_def(op);
  Device device = outs.empty() ? common_device(args) : outs[0].device();
  run_device_kernel(def, op, args, outs, device, false);
}

std::string describe_operands(const OpDef& def, const Args& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& v = args[i];
    std::string name = i < def.schema.args.size() ? def.schema.args[i].name : fmt::format("arg{}", i);
    std::string text;
    if (v.is_tensor()) {
      text = v.tensor().defined() ? describe(v.tensor()) : "undefined";
    } else if (v.is_tensor_list()) {
      text = "[";
      for (size_t j = 0; j < v.tensor_list().size(); ++j) {
        if (j == 4) {
          text += fmt::format(", ... ({} tensors)", v.tensor_list().size());
          break;
        }
        const Tensor& t = v.tensor_list()[j];
        text += (j ? ", " : "") + (t.defined() ? describe(t) : std::string("None"));
      }
      text += "]";
    } else if (v.is_none()) {
      continue;
    } else if (v.is_scalar()) {
      text = v.scalar().str();
    } else if (v.is_int()) {
      text = v.sym_int().str();
    } else if (v.is_int_list()) {
      text = v.int_list().str();
    } else if (v.is_double()) {
      text = Scalar(v.to_double()).str();
    } else if (v.is_bool()) {
      text = v.to_bool() ? "True" : "False";
    } else if (v.is_string()) {
      text = "'" + v.str_value() + "'";
    } else if (v.is_dtype()) {
      text = std::string(dtype_name(v.dtype()));
    } else if (v.is_device()) {
      text = v.device().str();
    } else {
      continue;
    }
    out += (out.empty() ? "" : ", ") + name + "=" + text;
  }
  return out;
}

}  // namespace sinter
