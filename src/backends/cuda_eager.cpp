// Eager CUDA ops from the code generator. An op call on CUDA tensors that has no CUDA kernel of its own becomes a
// graph of that one op over inputs laid out as its operands, compiled by the inductor's CUDA path (the same
// lowering, plans and CUDA source as compiled graphs; cubins cached on disk), and run writing straight into the
// outputs the op's shape rule allocated, or into self for an in-place op. Programs are kept in memory by the op,
// its operands' dtypes, sizes and strides, and its other arguments, so an op on a shape seen before costs a
// lookup. What does not become loop kernels alone (library calls, data-dependent and random ops, writes into
// memory that is not dense) is declined and runs its CPU kernel (ops/cuda_fallback.h).
#include <fmt/format.h>

#include <list>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <unordered_map>

#include "backends/backends.h"
#include "ops/cuda_fallback.h"
#include "support/check.h"
#include "support/log.h"

namespace sinter::backends {

namespace {

// 0 outside any generated op; 1 while one runs (an output it copies may itself run a generated copy); 2 while a
// program is compiled or a nested copy runs: ops met there take the CPU kernel, so nothing recurses.
thread_local int depth = 0;

struct DepthScope {
  explicit DepthScope(int to) : saved(depth) { depth = to; }
  ~DepthScope() { depth = saved; }
  int saved;
};

struct Entry {
  std::once_flag once;
  std::shared_ptr<runtime::Executor> program;  // null: declined
  std::vector<std::vector<int64_t>> perms;     // per output: the dims in memory order (outermost first)
};

// The programs by key, the least recently used forgotten beyond kCapacity (a program still running is kept alive
// by its caller's reference), so that a process meeting endless shapes holds bounded memory and modules.
class ProgramCache {
 public:
  static constexpr size_t kCapacity = 4096;

  std::shared_ptr<Entry> get(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      order_.splice(order_.begin(), order_, it->second.second);
      return it->second.first;
    }
    order_.push_front(key);
    auto e = std::make_shared<Entry>();
    entries_.emplace(key, std::make_pair(e, order_.begin()));
    if (entries_.size() > kCapacity) {
      entries_.erase(order_.back());
      order_.pop_back();
    }
    return e;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
    order_.clear();
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }

 private:
  std::mutex mutex_;
  std::list<std::string> order_;  // most recently used first
  std::unordered_map<std::string, std::pair<std::shared_ptr<Entry>, std::list<std::string>::iterator>> entries_;
};

ProgramCache& cache() {
  static ProgramCache c;
  return c;
}

void key_tensor(std::string& key, const Tensor& t) {
  if (!t.defined()) {
    key += "undef;";
    return;
  }
  key += fmt::format("{}{}{}", dtype_name(t.dtype()), fmt::join(t.sizes().hints(), ","), "/");
  key += fmt::format("{};", fmt::join(t.strides().hints(), ","));
}

// A Scalar operand whose value the program takes at run time, as a 0-d tensor input: `other` of an op NAME.Scalar
// (or in-place NAME_.Scalar) whose NAME.Tensor takes the same arguments with a tensor there (mul, div, add, sub,
// the comparisons ...), so that `x * lr` with a new lr each step reuses one program. Returns the Tensor overload
// to build, or nullptr where the scalar stays a constant of the program (its value in the key).
const OpDef* runtime_scalar_op(OpId op, const Args& args) {
  if (args.size() < 2 || !args[1].is_scalar() || args[1].scalar().is_bool() || !args[0].is_tensor()) return nullptr;
  const Schema& schema = op_def(op).schema;
  if (schema.overload != "Scalar") return nullptr;
  std::string name = schema.is_inplace() ? schema.name.substr(0, schema.name.size() - 1) : schema.name;
  const OpDef* t = find_op(name + ".Tensor");
  if (!t || t->schema.args.size() != schema.args.size() || t->schema.returns.size() != 1) return nullptr;
  for (size_t i = 0; i < schema.args.size(); ++i)
    if (i != 1 && t->schema.args[i].type != schema.args[i].type) return nullptr;
  return t;
}

// The dtype of that 0-d tensor: what the op computes a scalar in (float32 beside float32/bfloat16/float16, double
// beside double, float32 for a float beside integers, int64 for an integer beside integers). A 0-d tensor does not
// change a dimensioned tensor's dtype within its category, so the op's result dtype is the Scalar form's.
DType runtime_scalar_dtype(const Tensor& self, const Scalar& s) {
  if (is_floating(self.dtype())) return self.dtype() == kFloat64 ? kFloat64 : kFloat32;
  return s.is_floating() ? kFloat32 : kInt64;
}

// The program's identity: the op, its arguments (tensors by dtype, sizes and strides; a run-time scalar by its
// kind only), its outputs' layouts.
std::string key_of(OpId op, const Args& args, const std::vector<Tensor>& outs) {
  std::string key = fmt::format("{}(", static_cast<int>(op));
  const bool runtime_scalar = runtime_scalar_op(op, args) != nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& v = args[i];
    if (runtime_scalar && i == 1) {
      key += fmt::format("S{};", dtype_name(runtime_scalar_dtype(args[0].tensor(), v.scalar())));
    } else if (v.is_tensor()) {
      key_tensor(key, v.tensor());
    } else if (v.is_tensor_list()) {
      key += "[";
      for (const Tensor& t : v.tensor_list()) key_tensor(key, t);
      key += "]";
    } else if (v.is_none()) {
      key += "none;";
    } else if (v.is_scalar()) {
      Scalar s = v.scalar();
      key += s.is_floating() ? fmt::format("d{};", s.to_double()) : fmt::format("i{}{};", s.to_int(), s.is_bool() ? "b" : "");
    } else if (v.is_int()) {
      key += fmt::format("i{};", v.to_int());
    } else if (v.is_int_list()) {
      key += fmt::format("l{};", fmt::join(v.to_int_list(), ","));
    } else if (v.is_double()) {
      key += fmt::format("d{};", v.to_double());
    } else if (v.is_bool()) {
      key += v.to_bool() ? "T;" : "F;";
    } else if (v.is_string()) {
      key += fmt::format("s{}:{};", v.str_value().size(), v.str_value());
    } else if (v.is_dtype()) {
      key += fmt::format("t{};", dtype_name(v.dtype()));
    } else if (v.is_device()) {
      key += v.device().str() + ";";
    } else if (v.is_memory_format()) {
      key += fmt::format("m{};", static_cast<int>(v.memory_format()));
    } else if (v.is_double_list()) {
      key += fmt::format("D{};", fmt::join(v.double_list(), ","));
    } else {
      key += v.kind_name() + ";";
    }
  }
  key += ")->";
  for (const Tensor& t : outs) key_tensor(key, t);
  return key;
}

// The dims of a dense, non-overlapping `t` from the largest stride to the smallest (size-1 dims keep their
// places), or empty when `t` is not dense: a generated kernel writes only dense buffers.
std::vector<int64_t> memory_order(const Tensor& t) {
  std::vector<int64_t> sizes = t.sizes().hints(), strides = t.strides().hints();
  std::vector<int64_t> slots, order;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (sizes[d] != 1) slots.push_back(d);
  order = slots;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  int64_t expected = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (strides[*it] != expected) return {};
    expected *= sizes[*it];
  }
  std::vector<int64_t> perm(t.dim());
  std::iota(perm.begin(), perm.end(), 0);
  for (size_t i = 0; i < slots.size(); ++i) perm[slots[i]] = order[i];
  return perm;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

Tensor permuted(const Tensor& t, const std::vector<int64_t>& perm) {
  return is_identity(perm) ? t : t.permute(perm);
}

TensorMeta input_meta(const Tensor& t) {
  TensorMeta m = t.meta();
  m.offset = SymInt(0);
  return m;
}

// Whether the op may run as generated code at all: deterministic, computed from its operands' values, every
// tensor on one CUDA device and non-empty, writing only its outputs (or self).
bool eligible(OpId op, const Args& args, const std::vector<Tensor>& outs) {
  const OpDef& def = op_def(op);
  if ((def.flags & (kRandom | kDataDependent)) || def.schema.is_view() || outs.empty()) return false;
  // batch_norm writes its running statistics only when training; in eval it reads them.
  const bool reads_only = op == OpId::batch_norm && !args.at(5).to_bool();
  for (size_t i = 1; i < def.schema.args.size(); ++i)
    if (def.schema.args[i].is_write && !reads_only) return false;
  Device device = outs[0].device();
  bool ok = device.is_cuda();
  auto check = [&](const Tensor& t) {
    if (t.defined()) ok = ok && t.device() == device && t.numel().hint() > 0;
  };
  for (const Value& v : args) {
    if (v.is_tensor()) check(v.tensor());
    else if (v.is_tensor_list())
      for (const Tensor& t : v.tensor_list()) check(t);
  }
  for (const Tensor& t : outs) check(t);
  return ok;
}

// The value an in-place op writes into self, computed by its functional form: copy_ as a conversion of src
// broadcast to self, fill_ and zero_ as full, others as the op of the same name without '_' (add_ -> add).
Tensor new_value(Graph& g, OpId op, const Args& args) {
  const Tensor& self = args[0].tensor();
  const Value device(self.device());
  switch (op) {
    case OpId::copy_: {
      Tensor src = args[1].tensor();
      if (src.sizes().hints() != self.sizes().hints()) src = g.add_op1(OpId::expand, {src, self.sizes()});
      return g.add_op1(OpId::to_copy, {src, self.dtype()});
    }
    case OpId::fill__Scalar: return g.add_op1(OpId::full, {self.sizes(), args[1], self.dtype(), device});
    case OpId::zero_: return g.add_op1(OpId::zeros, {self.sizes(), self.dtype(), device});
    case OpId::pow__Scalar: return g.add_op1(OpId::pow_Tensor_Scalar, {args[0], args[1]});  // pow.Scalar's base is a Scalar
    default: break;
  }
  const Schema& schema = op_def(op).schema;
  std::string name = schema.name.substr(0, schema.name.size() - 1);
  const OpDef* f = find_op(schema.overload.empty() ? name : name + "." + schema.overload);
  SINTER_CHECK(f && f->schema.args.size() == schema.args.size() && f->schema.returns.size() == 1,
               "{} has no functional form taking the same arguments", schema.full_name());
  for (size_t i = 0; i < schema.args.size(); ++i)
    SINTER_CHECK(f->schema.args[i].type == schema.args[i].type, "{} has no functional form taking the same arguments",
                 schema.full_name());
  return g.add_op1(f->id, args);
}

// The one-op graph: the op over inputs laid out as `args`' tensors (for an in-place op, its functional form:
// the one output is self's new value). Each output is then produced in the memory order of the tensor it is
// written into, as a contiguous value of that order, so the kernel that computes it can store into it directly.
void build(Entry& e, OpId op, const Args& args, const std::vector<Tensor>& outs) {
  const bool inplace = op_def(op).schema.is_inplace();
  for (const Tensor& t : outs) {
    e.perms.push_back(memory_order(t));
    if (e.perms.back().empty() && t.dim() > 0) return;  // not dense
  }
  Graph g;
  Args gargs = args;
  const OpDef* tensor_op = runtime_scalar_op(op, args);
  if (tensor_op) {  // graph_inputs() passes the value in this place
    TensorMeta m;
    m.dtype = runtime_scalar_dtype(args[0].tensor(), args[1].scalar());
    m.device = outs[0].device();
    gargs[1] = Value(g.add_input("s", m));
  }
  int next = 0;
  for (size_t i = 0; i < gargs.size(); ++i) {
    Value& v = gargs[i];
    if (tensor_op && i == 1) continue;
    if (v.is_tensor() && v.tensor().defined()) {
      v = Value(g.add_input(fmt::format("x{}", next++), input_meta(v.tensor())));
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> list = v.tensor_list();
      for (Tensor& t : list)
        if (t.defined()) t = g.add_input(fmt::format("x{}", next++), input_meta(t));
      v = Value(std::move(list));
    }
  }
  std::vector<Tensor> results = tensor_op  ? g.add_op(tensor_op->id, gargs)
                                : inplace ? std::vector<Tensor>{new_value(g, op, gargs)}
                                          : g.add_op(op, gargs);
  if (results.size() != outs.size()) return;
  std::vector<Tensor> finals;
  for (size_t i = 0; i < results.size(); ++i) {
    Tensor r = results[i];
    if (r.dtype() != outs[i].dtype()) r = g.add_op1(OpId::to_copy, {r, outs[i].dtype()});
    if (!is_identity(e.perms[i])) r = g.add_op1(OpId::permute, {r, SymIntList(e.perms[i])});
    if (!r.is_contiguous()) r = g.add_op1(OpId::to_copy, {r, Value(), Value(), MemoryFormat::kContiguous});
    finals.push_back(r);
  }
  g.set_outputs(finals);
  CompileContext ctx = CompileContext::for_graph(g);
  ctx.target = cuda_target(90);  // also for a graph without inputs (full, ones)
  std::string name = fmt::format("{} on {}", op_def(op).schema.full_name(), outs[0].device().str());
  std::shared_ptr<runtime::Executor> program = compile_for_cuda(g, ctx);
  for (const inductor::Kernel& k : program->parts().schedule.kernels)
    if (k.kind != inductor::Kernel::Kind::kLoops) {
      SINTER_LOG(kPerfHints, "cuda eager: {} is a library call; it runs its CPU kernel", name);
      return;
    }
  SINTER_LOG(kPerfHints, "cuda eager: {} compiled to {} kernel(s)", name, program->launches());
  e.program = std::move(program);
}

// The program's inputs in the order build() made them: a run-time scalar first, copied to the device (a copy,
// not a generated fill), then the tensors.
std::vector<Tensor> graph_inputs(OpId op, const Args& args, Device device) {
  std::vector<Tensor> inputs;
  if (runtime_scalar_op(op, args)) {
    const Scalar& s = args[1].scalar();
    inputs.push_back(scalar_tensor(s, runtime_scalar_dtype(args[0].tensor(), s)).to(device));
  }
  for (const Value& v : args) {
    if (v.is_tensor() && v.tensor().defined()) inputs.push_back(v.tensor());
    else if (v.is_tensor_list())
      for (const Tensor& t : v.tensor_list())
        if (t.defined()) inputs.push_back(t);
  }
  return inputs;
}

bool run_generated(OpId op, const Args& args, std::vector<Tensor>& outs) {
  // batch_norm in training writes its running stats in place: batch_norm_functional computes the output and
  // their new values, stored straight into them (each element is read, then written, by the same thread).
  if (op == OpId::batch_norm && args.at(5).to_bool() && !args[3].is_none() && !args[4].is_none()) {
    std::vector<Tensor> all{outs.at(0), args[3].tensor(), args[4].tensor()};
    if (!run_generated(OpId::batch_norm_functional, args, all)) return false;
    for (int i : {3, 4}) args[i].tensor().storage()->bump_version();
    return true;
  }
  if (depth >= 2 || !eligible(op, args, outs)) return false;
  std::shared_ptr<Entry> e = cache().get(key_of(op, args, outs));
  std::call_once(e->once, [&] {
    DepthScope scope(2);
    try {
      build(*e, op, args, outs);
    } catch (const std::exception& err) {
      SINTER_LOG(kPerfHints, "cuda eager: {} runs its CPU kernel: {}", op_def(op).schema.full_name(), err.what());
      e->program.reset();
    }
  });
  if (!e->program) return false;
  DepthScope scope(depth + 1);
  std::vector<Tensor> into;
  for (size_t i = 0; i < outs.size(); ++i) into.push_back(permuted(outs[i], e->perms[i]));
  e->program->run(graph_inputs(op, args, outs[0].device()), std::move(into));
  return true;
}

[[maybe_unused]] const bool installed = [] {
  set_cuda_generated_kernel(&run_generated);
  return true;
}();

}  // namespace

void clear_cuda_eager_programs() { cache().clear(); }
size_t cuda_eager_program_count() { return cache().size(); }

}  // namespace sinter::backends
