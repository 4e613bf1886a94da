// The tracer (see tracer.h): records ops, lifts free tensors, and splits the function into segments at graph
// breaks. A segment ends with the proxies that host code still references: those are its outputs, and after
// the segment runs each such proxy adopts its real result, so the user's variables hold real tensors from
// then on.
#include "capture/tracer.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <regex>
#include <typeinfo>

#include "graph/graph_util.h"
#include "sinter/compile.h"
#include "support/check.h"
#include "support/log.h"

namespace sinter::capture {

using graph_detail::trace_of;

namespace {

// Ops whose Scalar operands become run-time inputs after a break (host values read from tensors are fed back
// through them), with the Tensor overload that takes the same arguments in the same positions. A 0-dim tensor
// marked wrapped_number promotes exactly as the Scalar did. pow is handled apart (see rewrite_scalars).
struct ScalarRewrite {
  OpId from, to;
  int positions[2];  // argument positions holding the Scalars (-1: none)
};
constexpr ScalarRewrite kScalarRewrites[] = {
    {OpId::add_Scalar, OpId::add_Tensor, {1, -1}},
    {OpId::sub_Scalar, OpId::sub_Tensor, {1, -1}},
    {OpId::mul_Scalar, OpId::mul_Tensor, {1, -1}},
    {OpId::div_Scalar, OpId::div_Tensor, {1, -1}},
    {OpId::div_Scalar_mode, OpId::div_Tensor_mode, {1, -1}},
    {OpId::fmod_Scalar, OpId::fmod_Tensor, {1, -1}},
    {OpId::remainder_Scalar, OpId::remainder_Tensor, {1, -1}},
    {OpId::floor_divide_Scalar, OpId::floor_divide_Tensor, {1, -1}},
    {OpId::eq_Scalar, OpId::eq_Tensor, {1, -1}},
    {OpId::ne_Scalar, OpId::ne_Tensor, {1, -1}},
    {OpId::lt_Scalar, OpId::lt_Tensor, {1, -1}},
    {OpId::le_Scalar, OpId::le_Tensor, {1, -1}},
    {OpId::gt_Scalar, OpId::gt_Tensor, {1, -1}},
    {OpId::ge_Scalar, OpId::ge_Tensor, {1, -1}},
    {OpId::where_ScalarOther, OpId::where_self, {2, -1}},
    {OpId::where_ScalarSelf, OpId::where_self, {1, -1}},
    {OpId::where_Scalar, OpId::where_self, {1, 2}},
    {OpId::clamp, OpId::clamp_Tensor, {1, 2}},
    {OpId::masked_fill_Scalar, OpId::masked_fill_Tensor, {2, -1}},
    {OpId::add__Scalar, OpId::add__Tensor, {1, -1}},
    {OpId::sub__Scalar, OpId::sub__Tensor, {1, -1}},
    {OpId::mul__Scalar, OpId::mul__Tensor, {1, -1}},
    {OpId::div__Scalar, OpId::div__Tensor, {1, -1}},
};

// Whether the op writes one of its arguments (an in-place op, or batch_norm's running stats).
bool writes_argument(const OpDef& def) {
  for (const SchemaArg& a : def.schema.args)
    if (a.is_write) return true;
  return false;
}

// The proxy adopts the real tensor's data and layout: from now on it is an ordinary tensor.
void adopt(const Tensor& proxy, const Tensor& real) {
  TensorImpl* p = proxy.impl();
  const TensorImpl* r = real.impl();
  SINTER_INTERNAL_ASSERT(r && r->storage, "a segment produced no data for a live value");
  p->storage = r->storage;
  p->meta = r->meta;
  p->requires_grad = r->requires_grad;
  p->wrapped_number = r->wrapped_number;
  p->trace.reset();
}

}  // namespace

bool BreakLog::first(const BreakRecord& record, int segment) {
  std::lock_guard<std::mutex> lock(mutex_);
  return seen_.insert(fmt::format("{}\n{}\n{}", record.reason, record.location, segment)).second;
}

std::string location_str(const Loc& loc) {
  if (loc.line() == 0) return "unknown location";
  return fmt::format("{}:{}", loc.file_name(), loc.line());
}

Tracer::Tracer(TracerConfig config, SegmentRunner runner) : config_(config), runner_(std::move(runner)) {}
Tracer::~Tracer() = default;

void Tracer::use_shape_env(std::shared_ptr<sym::ShapeEnv> env) {
  env_scope_.reset();
  env_ = std::move(env);
  segment_.graph.set_shape_env(env_);
  if (env_) env_scope_.emplace(env_.get());
}

Tensor Tracer::add_argument(const Tensor& real, TensorMeta meta, std::string name) {
  Tensor proxy = segment_.graph.add_input(std::move(name), std::move(meta));
  // Autograd, which runs above the tracer, differentiates through the proxy as it would through the argument.
  proxy.impl()->requires_grad = real.requires_grad();
  segment_.inputs.push_back(real);
  ++num_argument_inputs_;
  return proxy;
}

void Tracer::add_int_argument(const SymInt& symbol, int64_t value, std::string name) {
  segment_.graph.add_input(std::move(name), TensorMeta{{symbol}, {0}, 0, kInt64, kCPU});
  segment_.inputs.push_back(size_carrier(value));
  ++num_argument_inputs_;
}

Tensor size_carrier(int64_t value) {
  return empty_from_meta(TensorMeta{{value}, {0}, 0, kInt64, kCPU}, /*with_data=*/true);
}

Tensor Tracer::lift(const Tensor& t) {
  auto it = lifted_.find(t.impl());
  if (it != lifted_.end()) return it->second;
  std::string name;
  if (config_.names) {
    auto n = config_.names->find(t.impl());
    if (n != config_.names->end()) name = n->second;
  }
  if (name.empty()) name = fmt::format("lifted{}", lifted_.size());
  Tensor proxy;
  if (config_.freeze && segment_.one_off) {
    proxy = segment_.graph.add_constant(t, std::move(name));
  } else {
    proxy = segment_.graph.add_input(std::move(name), t.meta());
    segment_.inputs.push_back(t);
    lifted_real_.push_back(t);
    if (segment_.one_off) sources_.push_back({InputSource::kLifted, static_cast<int>(lifted_real_.size()) - 1});
  }
  lifted_.emplace(t.impl(), proxy);
  return proxy;
}

Tensor Tracer::to_graph(const Tensor& t, const char* what) {
  if (!t.defined()) return t;
  if (trace_of(t)) {
    if (segment_.graph.contains(t)) return t;
    throw Error(
        fmt::format("a traced tensor from another capture reached {} (was a tensor made during capture kept "
                    "across calls?)",
                    what));
  }
  return lift(t);
}

Value Tracer::to_graph(const Value& v, bool concretize) {
  if (v.is_tensor()) return v.tensor().defined() ? Value(to_graph(v.tensor(), "an op")) : v;
  if (v.is_tensor_list()) {
    std::vector<Tensor> out;
    out.reserve(v.tensor_list().size());
    for (const Tensor& t : v.tensor_list()) out.push_back(to_graph(t, "an op"));
    return Value(std::move(out));
  }
  // After a break sizes are concrete; a symbolic int kept by host code from before it stands for its value.
  if (concretize && v.is_int() && v.sym_int().is_symbolic()) return Value(SymInt(v.sym_int().hint()));
  if (concretize && v.is_int_list() && v.int_list().any_symbolic())
    return Value(SymIntList(v.int_list().hints()));
  return v;
}

// A 0-d input holding `s`, on the device of the op that reads it (a CUDA graph takes no host inputs).
Tensor Tracer::scalar_input(const Scalar& s, Device device) {
  DType dtype = s.is_floating() ? kFloat64 : s.is_bool() ? kBool : kInt64;
  uint64_t bits =
      s.is_floating() ? std::bit_cast<uint64_t>(s.to_double()) : static_cast<uint64_t>(s.to_int());
  std::tuple<int, uint64_t, std::string> key{static_cast<int>(s.kind()), bits, device.str()};
  auto known = scalar_inputs_.find(key);
  if (known != scalar_inputs_.end()) return segment_.graph.node(known->second).output();
  Tensor real = empty_from_meta(TensorMeta{{}, {}, 0, dtype, kCPU});
  if (dtype == kFloat64)
    *real.data_ptr<double>() = s.to_double();
  else if (dtype == kBool)
    *real.data_ptr<bool>() = s.to_bool();
  else
    *real.data_ptr<int64_t>() = s.to_int();
  if (!device.is_cpu()) {
    HookScope eager(nullptr);  // the copy is not part of the graph
    real = real.to(device);
  }
  real.impl()->wrapped_number = true;
  Tensor proxy = segment_.graph.add_input(fmt::format("scalar{}", scalar_inputs_.size()), real.meta());
  proxy.impl()->wrapped_number = true;
  scalar_inputs_.emplace(key, trace_of(proxy)->node);  // inputs come first: the node id is the input index
  segment_.inputs.push_back(std::move(real));
  return proxy;
}

void Tracer::rewrite_scalars(OpId& op, Args& args) {
  Device device = kCPU;
  for (const Value& v : args)
    if (v.is_tensor() && v.tensor().defined()) {
      device = v.tensor().device();
      break;
    }
  if (op == OpId::pow_Tensor_Scalar) {
    // The Scalar form has exponent shortcuts (x*x for 2, sqrt for 0.5, ...) and refuses negative integer
    // powers of integers: only other floating exponents run the same std::pow as the Tensor form. The rest
    // stay part of the structure (a handful of variants at most).
    const Scalar e = args[1].scalar();
    const double x = e.to_double();
    if (!e.is_floating() || x == 2 || x == 3 || x == 0.5 || x == -0.5 || x == -1 || x == -2) return;
    args[1] = Value(scalar_input(e, device));
    op = OpId::pow_Tensor_Tensor;
    return;
  }
  for (const ScalarRewrite& r : kScalarRewrites) {
    if (r.from != op) continue;
    for (int pos : r.positions) {
      if (pos < 0 || pos >= static_cast<int>(args.size())) continue;
      if (args[pos].is_none()) continue;
      args[pos] = Value(scalar_input(args[pos].scalar(), device));
    }
    op = r.to;
    return;
  }
}

bool Tracer::all_passthrough(const Args& args) const {
  bool any = false;
  for (const Value& v : args) {
    bool ok = true;
    graph_detail::for_each_tensor(v, [&](const Tensor& t) {
      ok = ok && passthrough_.count(t.impl());
      any = true;
    });
    if (!ok) return false;
  }
  return any;
}

Tensor Tracer::hand_out(const Tensor& t) {
  passthrough_.emplace(t.impl(), t.impl_ptr());
  return t;
}

std::vector<Tensor> Tracer::call(OpId op, const Args& args, const Loc& loc) {
  const OpDef& def = op_def(op);
  // Host code working on values it read (printing's per-element views, to_vector's contiguous copy) runs
  // eagerly, unless a recorded write to them is still pending. Anything else is recorded as usual.
  if (!passthrough_.empty() && !segment_.has_writes && (def.schema.is_view() || op == OpId::clone) &&
      all_passthrough(args)) {
    HookScope no_hook(nullptr);
    std::vector<Tensor> outs = run_eager(op, args, loc);
    for (const Tensor& o : outs) hand_out(o);
    return outs;
  }
  const bool after_break = !segment_.one_off;
  Args rec;
  rec.reserve(args.size());
  for (const Value& v : args) rec.push_back(to_graph(v, after_break));

  if ((def.flags & kDataDependent) && def.shape) {
    // Only the shape rule knows whether this call's output size depends on data (index with a bool mask does,
    // with integer indices it does not).
    if (def.shape(op, rec).data_dependent) {
      rec.clear();
      take_break({fmt::format("{} (data-dependent output)", def.schema.full_name()), location_str(loc)});
      // The break gave every traced argument its real data; the op itself runs eagerly (composite kernels
      // calling public ops must not be recorded).
      HookScope no_hook(nullptr);
      return run_eager(op, args, loc);
    }
  }
  if (after_break && segment_.index > 0) rewrite_scalars(op, rec);
  if (writes_argument(op_def(op))) segment_.has_writes = true;
  const Loc& site = loc.line() != 0 ? loc : last_loc_;
  if (env_) env_->set_site({site, def.schema.name.c_str(), true});
  std::vector<Tensor> outs;
  try {
    outs = segment_.graph.add_op(op, std::move(rec), loc);
  } catch (const Error& e) {
    if (typeid(e) != typeid(Error)) throw;
    throw Error(user_message(e.what(), loc));
  }
  if (loc.line() != 0) last_loc_ = loc;
  if (env_) env_->set_site({last_loc_, def.schema.name.c_str(), false});
  if (def.schema.is_view()) {
    // Autograd finds the base of a view written in place through view_base, as for eager views.
    for (const Value& v : args)
      if (v.is_tensor() && v.tensor().defined()) {
        const Tensor base = to_graph(v.tensor(), "an op");
        std::shared_ptr<TensorImpl> root = base.impl()->view_base.lock();
        for (Tensor& o : outs) o.impl()->view_base = root ? root : base.impl_ptr();
        break;
      }
  }
  return outs;
}

// An op's error raised while recording: the sizes of this call instead of the capture's symbols (the user
// passed [3, 4], not [s0, s1]), and where an op without a location (an operator) sits in the user's code.
std::string Tracer::user_message(const std::string& message, const Loc& loc) const {
  std::string out;
  if (env_ && env_->num_symbols() > 0) {
    static const std::regex kSymbol(R"(\bs(\d+)\b)");
    auto begin = std::sregex_iterator(message.begin(), message.end(), kSymbol);
    size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      int64_t id = std::stoll((*it)[1].str());
      if (id >= env_->num_symbols()) continue;
      out.append(message, last, it->position() - last);
      out += std::to_string(env_->hint(id));
      last = it->position() + it->length();
    }
    out.append(message, last, std::string::npos);
  } else {
    out = message;
  }
  if (loc.line() == 0 && last_loc_.line() != 0)
    out += fmt::format("\n  (an operator, which has no location of its own; the nearest located call before it "
                       "is at {})",
                       location_str(last_loc_));
  return out;
}

Tensor Tracer::materialize(const Tensor& t, std::string_view what, const Loc& loc) {
  if (!t.defined()) return t;
  if (!trace_of(t)) {
    // A real tensor. In a whole-function capture its value would be read once and baked into the cached code,
    // so it breaks the graph; after a break only a pending write to it must land first.
    if (segment_.one_off)
      take_break({fmt::format("{} of a tensor that is not an argument", what), location_str(loc)});
    else if (segment_.has_writes)
      take_break({std::string(what), location_str(loc)});
    return hand_out(t);
  }
  if (!segment_.graph.contains(t))
    throw Error(fmt::format("{}: the tensor was traced by another capture (kept across calls?)", what));
  take_break({std::string(what), location_str(loc)});
  SINTER_INTERNAL_ASSERT(t.has_storage() && !trace_of(t), "a value read at a graph break got no data");
  return hand_out(t);
}

void Tracer::fail_fullgraph(const BreakRecord& record) {
  throw GraphBreakError(
      fmt::format("graph break in a function compiled with fullgraph=true: {} at {} reads tensor data on the "
                  "host, which a "
                  "single graph cannot express (remove the read, or compile with fullgraph=false)",
                  record.reason, record.location));
}

void Tracer::take_break(BreakRecord record) {
  if (config_.fullgraph) fail_fullgraph(record);
  if (!config_.allow_breaks) throw BreakDuringVerify{std::move(record)};
  if (tracing_backward_) throw BreakInBackward{std::move(record)};
  if (log_enabled(LogChannel::kGraphBreaks) && (!config_.break_log || config_.break_log->first(record, segment_.index)))
    log_message(LogChannel::kGraphBreaks, fmt::format("graph break: {} at {} (segment {} ends after {} ops)",
                                                      record.reason, record.location, segment_.index,
                                                      segment_.graph.num_ops()));
  breaks_.push_back(std::move(record));
  flush();
}

void Tracer::flush() {
  Graph& g = segment_.graph;
  // A whole capture that breaks runs its first segment once: the .grad() fields it replaced are set now (a graph
  // value held by a real tensor is live, so the segment hands it real data).
  for (const GradState& st : grad_states_)
    if (st.written) lifted_real_[st.owner].impl()->grad = st.current.defined() ? st.current.impl_ptr() : nullptr;
  grad_states_.clear();
  grad_index_.clear();
  // A proxy is live when something outside the graph (a user variable, an argument list, the function's
  // result) still holds it: count the references the graph and this tracer hold themselves (the node's own
  // output slot, each use as an argument, the lifted-tensor map), per node output.
  std::vector<int> first(g.num_nodes() + 1, 0);
  for (const Node& n : g.nodes()) first[n.id + 1] = first[n.id] + static_cast<int>(n.outputs.size());
  std::vector<long> internal(first.back(), 1);
  auto count = [&](const Tensor& t) {
    if (const TraceState* tr = trace_of(t)) ++internal[first[tr->node] + tr->output];
  };
  for (const Node& n : g.nodes()) graph_detail::for_each_tensor(n.args, count);
  for (const auto& entry : lifted_) count(entry.second);
  std::vector<std::pair<Tensor, int>> live_inputs;  // proxy, input position
  std::vector<Tensor> outputs;
  for (const Node& n : g.nodes()) {
    if (n.kind != NodeKind::kInput && n.kind != NodeKind::kOp) continue;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Tensor& o = n.outputs[k];
      if (o.impl_ptr().use_count() <= internal[first[n.id] + k]) continue;
      if (n.kind == NodeKind::kInput)
        live_inputs.emplace_back(o, n.id);
      else
        outputs.push_back(o);
    }
  }
  std::vector<Tensor> results;
  if (g.num_ops() > 0) {
    g.set_outputs(outputs);
    HookScope no_hook(nullptr);  // kernels run for real (composite ones call public ops)
    sym::ShapeEnvScope no_env(nullptr);
    results = runner_(segment_);
    ++segments_run_;
    SINTER_INTERNAL_ASSERT(results.size() == outputs.size(), "segment returned {} values, expected {}",
                           results.size(), outputs.size());
  }
  for (auto& [proxy, pos] : live_inputs) adopt(proxy, segment_.inputs.at(pos));
  for (size_t k = 0; k < outputs.size(); ++k) adopt(outputs[k], results[k]);
  start_segment();
}

void Tracer::start_segment() {
  int next = segment_.index + 1;
  // Segments after a break record concrete sizes: host code re-runs on every call, so nothing needs a guard.
  env_scope_.reset();
  env_.reset();
  lifted_.clear();
  lifted_real_.clear();
  scalar_inputs_.clear();
  num_argument_inputs_ = 0;
  segment_ = Segment{};
  segment_.index = next;
}

Tensor Tracer::add_tangent(TensorMeta meta, std::string name, Tensor example) {
  Tensor proxy = segment_.graph.add_input(std::move(name), std::move(meta));
  segment_.inputs.push_back(std::move(example));
  sources_.push_back({InputSource::kTangent, 0});
  return proxy;
}

// ---- .grad() fields and host state ----

int Tracer::lifted_index(const Tensor& real) {
  SINTER_CHECK(!(config_.freeze && segment_.one_off),
               "a function compiled with freeze=true reads or writes a gradient: freeze makes parameters constants, "
               "which have none (compile a training step without freeze)");
  lift(real);
  for (size_t k = 0; k < lifted_real_.size(); ++k)
    if (lifted_real_[k].is_same(real)) return static_cast<int>(k);
  SINTER_INTERNAL_ASSERT(false, "a lifted tensor is missing from the lifted list");
}

Tracer::GradState& Tracer::grad_state(const Tensor& owner, bool read) {
  auto it = grad_index_.find(owner.impl());
  if (it != grad_index_.end()) {
    GradState& known = grad_states_[it->second];
    if (read && !known.written && !known.read) read_real_grad(owner, known);
    return known;
  }
  GradState st;
  st.owner = lifted_index(owner);
  if (read) read_real_grad(owner, st);
  grad_index_.emplace(owner.impl(), grad_states_.size());
  grad_states_.push_back(std::move(st));
  return grad_states_.back();
}

void Tracer::read_real_grad(const Tensor& owner, GradState& st) {
  st.read = true;
  Tensor real = owner.impl()->grad ? Tensor(owner.impl()->grad) : Tensor();
  grad_reads_.push_back({st.owner, real.defined()});
  if (real.defined()) {
    auto known = lifted_.find(real.impl());
    if (known != lifted_.end()) {
      st.current = known->second;  // the same tensor already reached an op as a lifted tensor
    } else {
      const std::string base = config_.names && config_.names->count(owner.impl()) ? config_.names->at(owner.impl())
                                                                                   : fmt::format("lifted{}", st.owner);
      st.current = segment_.graph.add_input(base + ".grad", real.meta());
      segment_.inputs.push_back(real);
      sources_.push_back({InputSource::kGrad, st.owner});
      lifted_.emplace(real.impl(), st.current);
    }
  }
}

Tensor Tracer::read_grad(const Tensor& owner) {
  if (!segment_.one_off) return ReadHook::read_grad(owner);
  return grad_state(owner, true).current;
}

void Tracer::write_grad(const Tensor& owner, const Tensor& grad) {
  if (!segment_.one_off) return ReadHook::write_grad(owner, grad);
  GradState& st = grad_state(owner, false);
  st.current = grad;
  st.written = true;
}

bool Tracer::wrote_grads() const {
  for (const GradState& st : grad_states_)
    if (st.written) return true;
  return false;
}

Tensor Tracer::host_scalar(std::function<double()> read, TensorOptions options) {
  Tensor real;
  {
    HookScope eager(nullptr);
    real = full({}, read(), options);
  }
  if (!segment_.one_off) return real;  // host code re-runs every call: a value of this call
  Tensor proxy = segment_.graph.add_input(fmt::format("host{}", host_reads_.size()), real.meta());
  segment_.inputs.push_back(std::move(real));
  sources_.push_back({InputSource::kHostScalar, static_cast<int>(host_reads_.size())});
  host_reads_.push_back({std::move(read), options});
  return proxy;
}

void Tracer::guard_host_state(std::function<bool()> holds, std::string what) {
  if (segment_.one_off) host_guards_.emplace_back(std::move(holds), std::move(what));
}

int Tracer::add_output(const Tensor& t) {
  std::vector<Tensor> outs = segment_.graph.outputs();
  outs.push_back(to_graph(t, "a gradient"));
  segment_.graph.set_outputs(outs);
  return static_cast<int>(outs.size()) - 1;
}

std::vector<int> Tracer::finish(std::vector<Tensor>& outputs) {
  if (!segment_.one_off || broke()) {
    flush();
    return {};
  }
  std::vector<int> plan;
  std::vector<Tensor> graph_outputs;
  for (const Tensor& t : outputs) {
    if (!t.defined()) {
      plan.push_back(-1);
      continue;
    }
    plan.push_back(static_cast<int>(graph_outputs.size()));
    graph_outputs.push_back(to_graph(t, "the function's result"));
  }
  segment_.graph.set_outputs(std::move(graph_outputs));
  // The .grad() fields the function replaced: their final values are outputs, set after every call.
  for (const GradState& st : grad_states_)
    if (st.written) grad_effects_.push_back({st.owner, st.current.defined() ? add_output(st.current) : -1});
  return plan;
}

}  // namespace sinter::capture
