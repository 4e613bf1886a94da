// Custom ops (sinter/library.h): checking a registration, the rows' shape rule and kernel trampolines, and calling a
// custom op by name.
#include "ops/custom_ops.h"

#include "ops/dispatch.h"
#include "ops/shape_util.h"
#include "sinter/autograd.h"
#include "support/check.h"

namespace sinter {
namespace {

const CustomOp& custom_of(OpId op) {
  const CustomOp* c = custom_op(op);
  SINTER_INTERNAL_ASSERT(c, "{} is not a custom op", op_name(op));
  return *c;
}

// The shape rule of every custom row: the user's rule, with dense strides filled in and the count checked.
ShapeResult custom_shape(OpId op, const Args& args) {
  const OpDef& def = op_def(op);
  std::vector<TensorMeta> metas = custom_of(op).shape(library::OpArgs(op, args));
  SINTER_CHECK(metas.size() == def.schema.returns.size(), "the shape rule gave {} output(s); the schema returns {}",
               metas.size(), def.schema.returns.size());
  for (size_t i = 0; i < metas.size(); ++i) {
    TensorMeta& m = metas[i];
    if (m.strides.empty() && !m.sizes.empty()) m.strides = dense_meta(m.sizes, m.dtype, m.device).strides;
    SINTER_CHECK(m.strides.size() == m.sizes.size(), "the shape rule gave output {} {} sizes but {} strides", i,
                 m.sizes.size(), m.strides.size());
  }
  return ShapeResult(std::move(metas));
}

// "float32[2, 3]", with "@cuda:0" off the CPU.
std::string where(const Tensor& t) {
  return t.device().is_cpu() ? describe(t) : fmt::format("{}@{}", describe(t), t.device().str());
}

bool shares_storage_with_an_input(const Tensor& t, const Args& args) {
  auto same = [&](const Tensor& a) { return a.defined() && a.has_storage() && a.storage() == t.storage(); };
  for (const Value& v : args) {
    if (v.is_tensor() && same(v.tensor())) return true;
    if (v.is_tensor_list())
      for (const Tensor& a : v.tensor_list())
        if (same(a)) return true;
  }
  return false;
}

// Whether nothing but `outs` holds this output: then the kernel's own result may take its place. (The CUDA
// fallback hands the CPU kernel staged host copies that it uploads afterwards: those must be written.)
bool replaceable(const Tensor& out) {
  return out.impl_ptr().use_count() == 1 && (!out.has_storage() || out.storage().use_count() == 1);
}

// The kernel of every custom row on device D: runs the user's kernel eagerly (no capture hook, grad mode off: it
// may be reached from the interpreter or a compiled graph's extern), checks each result against the output the
// dispatcher allocated from the shape rule, and hands it over, or copies it in when its layout differs, it shares
// memory with an input (outputs of an op are fresh tensors) or the output is held elsewhere.
template <DeviceType D>
void custom_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  HookScope eager(nullptr);
  NoGradGuard no_grad;
  const std::string_view device = D == DeviceType::kCPU ? "cpu" : "cuda";
  std::vector<Tensor> got = custom_of(op).kernels[static_cast<int>(D)](library::OpArgs(op, args));
  SINTER_CHECK(got.size() == outs.size(), "the {} kernel returned {} tensor(s); the schema returns {}", device,
               got.size(), outs.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const Tensor& t = got[i];
    SINTER_CHECK(t.defined() && t.has_storage(), "the {} kernel returned no tensor data for output {}", device, i);
    SINTER_CHECK(t.sizes().hints() == outs[i].sizes().hints() && t.dtype() == outs[i].dtype() &&
                     t.device() == outs[i].device(),
                 "the {} kernel returned output {} as {}, but the shape rule gives {}", device, i, where(t),
                 where(outs[i]));
    bool same_layout = t.strides().hints() == outs[i].strides().hints() &&
                       t.storage_offset().hint() == outs[i].storage_offset().hint();
    if (same_layout && replaceable(outs[i]) && !shares_storage_with_an_input(t, args)) outs[i] = t;
    else outs[i].copy_(t);
  }
}

void check_schema(const Schema& s) {
  const std::string name = s.full_name();
  SINTER_CHECK(s.name.find("::") != std::string::npos,
               "a custom op's name needs a namespace, as in 'mylib::{}' (got '{}')", s.name, name);
  for (const SchemaArg& a : s.args)
    SINTER_CHECK(!a.alias, "custom op {}: argument '{}' has an alias annotation ({}); custom ops must be functional "
                 "(no views, no in-place writes)", name, a.name, a.type_str);
  SINTER_CHECK(!s.returns.empty(), "custom op {} returns nothing; it must return at least one Tensor", name);
  for (const SchemaArg& r : s.returns)
    SINTER_CHECK(r.type == ArgType::kTensor && !r.optional && !r.alias,
                 "custom op {}: returns must be plain Tensors (got {})", name, r.type_str);
}

// Positional arguments, then keywords placed by schema name; the gaps take their defaults.
Args place_arguments(const OpDef& def, Args args, const library::Kwargs& kwargs) {
  const std::vector<SchemaArg>& schema = def.schema.args;
  const std::string name = def.schema.full_name();
  SINTER_CHECK(args.size() <= schema.size(), "{} takes at most {} arguments, got {}", name, schema.size(),
               args.size());
  std::vector<bool> given(schema.size(), false);
  for (size_t i = 0; i < args.size(); ++i) given[i] = true;
  for (const auto& [key, value] : kwargs) {
    int i = def.schema.find_arg(key);
    SINTER_CHECK(i >= 0, "{} has no argument '{}' (schema: {})", name, key, def.schema.str());
    SINTER_CHECK(!given[i], "{}: argument '{}' is given twice", name, key);
    if (args.size() <= static_cast<size_t>(i)) args.resize(i + 1);
    args[i] = value;
    given[i] = true;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (given[i]) continue;
    SINTER_CHECK(schema[i].has_default, "{}: missing argument '{}'", name, schema[i].name);
    args[i] = schema[i].default_value;
  }
  return args;
}

}  // namespace

std::vector<Tensor> run_custom_backward(OpId op, const std::vector<Tensor>& grads, const Args& args) {
  const OpDef& def = op_def(op);
  const CustomOp& c = custom_of(op);
  SINTER_CHECK(c.backward, "{} has no backward formula (give library::define one to differentiate it)",
               def.schema.full_name());
  std::vector<Tensor> out = c.backward(grads, library::OpArgs(op, args));
  size_t tensors = 0;
  for (const SchemaArg& a : def.schema.args) tensors += a.type == ArgType::kTensor;
  SINTER_CHECK(out.size() == tensors, "the backward formula of {} returned {} gradient(s); it must return one per "
               "Tensor argument ({})", def.schema.full_name(), out.size(), tensors);
  return out;
}

namespace library {

const Value& OpArgs::operator[](std::string_view name) const {
  const Schema& s = op_def(op_).schema;
  int i = s.find_arg(name);
  SINTER_CHECK(i >= 0 && static_cast<size_t>(i) < values_.size(), "{} has no argument '{}' (schema: {})",
               s.full_name(), name, s.str());
  return values_[i];
}

const Tensor& OpArgs::tensor(std::string_view name) const {
  const Value& v = (*this)[name];
  SINTER_CHECK(v.is_tensor() && v.tensor().defined(), "{}: argument '{}' is {}, not a tensor", op_name(), name,
               v.kind_name());
  return v.tensor();
}

std::string_view OpArgs::op_name() const { return sinter::op_name(op_); }

Op define(std::string_view schema_text, OpFunctions functions) {
  Schema schema = parse_schema(schema_text);
  check_schema(schema);
  const std::string name = schema.full_name();
  SINTER_CHECK(functions.shape, "custom op {} needs a shape rule", name);
  SINTER_CHECK(functions.cpu || functions.cuda, "custom op {} needs a kernel (cpu, cuda or both)", name);
  auto custom = std::make_shared<CustomOp>();
  custom->shape = std::move(functions.shape);
  custom->kernels[static_cast<int>(DeviceType::kCPU)] = std::move(functions.cpu);
  custom->kernels[static_cast<int>(DeviceType::kCUDA)] = std::move(functions.cuda);
  custom->backward = std::move(functions.backward);
  custom->decomposition = std::move(functions.decomposition);
  OpDef def{.id = OpId{}, .flags = kNoFlags, .schema = std::move(schema), .shape = custom_shape};
  if (custom->kernels[static_cast<int>(DeviceType::kCPU)])
    def.kernels[static_cast<int>(DeviceType::kCPU)] = custom_kernel<DeviceType::kCPU>;
  if (custom->kernels[static_cast<int>(DeviceType::kCUDA)])
    def.kernels[static_cast<int>(DeviceType::kCUDA)] = custom_kernel<DeviceType::kCUDA>;
  def.custom = std::move(custom);
  return Op(add_custom_row(std::move(def), std::string(schema_text)));
}

bool exists(std::string_view name) {
  const OpDef* def = find_op(name);
  return def && def->custom;
}

Op find(std::string_view name) {
  const OpDef* def = find_op(name);
  SINTER_CHECK(def && def->custom, "no custom op is named '{}'{}", name,
               def ? " (it is a built-in op: call it through sinter's functions)" : "");
  return Op(def->id);
}

std::vector<Tensor> Op::call(Args args, const Kwargs& kwargs, const Loc& loc) const {
  return dispatch(id_, place_arguments(op_def(id_), std::move(args), kwargs), loc);
}

Tensor Op::call1(Args args, const Kwargs& kwargs, const Loc& loc) const {
  const Schema& s = op_def(id_).schema;
  SINTER_CHECK(s.returns.size() == 1, "{} returns {} tensors; use call() for all of them", s.full_name(),
               s.returns.size());
  return call(std::move(args), kwargs, loc)[0];
}

std::string_view Op::name() const { return op_name(id_); }

std::vector<Tensor> call(std::string_view name, Args args, const Kwargs& kwargs, const Loc& loc) {
  return find(name).call(std::move(args), kwargs, loc);
}

Tensor call1(std::string_view name, Args args, const Kwargs& kwargs, const Loc& loc) {
  return find(name).call1(std::move(args), kwargs, loc);
}

TensorMeta dense_meta(const Tensor& like) { return sinter::dense_meta(like.sizes(), like.dtype(), like.device()); }

TensorMeta dense_meta(SymIntList sizes, DType dtype, Device device) {
  return sinter::dense_meta(sizes, dtype, device);
}

}  // namespace library
}  // namespace sinter
