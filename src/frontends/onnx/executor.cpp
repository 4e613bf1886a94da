// The executor: runs an ONNX graph node by node through the op table. A node whose inputs are all known
// (initializers, constants, values computed from them only) runs on the host with no capture hook, so shape
// arithmetic and constant subgraphs fold; the others call sinter's ops, which capture records inside compile().
#include <fmt/format.h>

#include <algorithm>

#include "frontends/onnx/importer.h"
#include "sinter/compile.h"
#include "support/check.h"

namespace sinter::onnx {

// ---- NodeCtx ----

const Tensor& NodeCtx::in(size_t i) const {
  if (i < inputs_.size() && inputs_[i].is_seq())
    unsupported(fmt::format("input {} is a sequence, and this operator takes a tensor (sinter resolves sequences "
                            "only through the sequence operators)", i));
  if (!has(i)) fail(fmt::format("input {} is required but missing", i));
  const Tensor& t = inputs_[i].t;
  if (device_.is_cpu() || t.device() == device_) return t;
  if (moved_.size() <= i) moved_.resize(inputs_.size());
  // A computed value left on the host (an If's branch made it from constants) moves as an op of the call.
  if (!moved_[i].defined()) moved_[i] = inputs_[i].known ? exec_.on_device(t, device_) : t.to(device_);
  return moved_[i];
}

Tensor NodeCtx::here(const Tensor& host) const {
  if (device_.is_cpu() || host.device() == device_) return host;
  return on_host([&] { return host.to(device_); });
}

const std::vector<Val>& NodeCtx::seq(size_t i) const {
  if (i >= inputs_.size() || !inputs_[i].is_seq())
    fail(fmt::format("input {} must be a sequence", i));
  return *inputs_[i].seq;
}

Val Val::sequence(std::vector<Val> items) {
  Val v;
  v.known = std::all_of(items.begin(), items.end(), [](const Val& x) { return x.known; });
  v.seq = std::make_shared<const std::vector<Val>>(std::move(items));
  return v;
}

namespace {
template <class T>
std::vector<T> host_values(const Tensor& t, bool known) {
  // A known value is read with no hook: it is constant for this model, not data of a traced call.
  if (known) return on_host([&] { return t.to_vector<T>(); });
  return t.to_vector<T>();
}
}  // namespace

int32_t NodeCtx::type(size_t i) const {
  const Tensor& t = in(i);
  return inputs_[i].type != 0 ? inputs_[i].type : onnx_type_of(t.dtype());
}

std::vector<int64_t> NodeCtx::ints(size_t i) const { return host_values<int64_t>(in(i), known(i)); }
std::vector<double> NodeCtx::doubles(size_t i) const { return host_values<double>(in(i), known(i)); }
int64_t NodeCtx::int_at(size_t i) const {
  std::vector<int64_t> v = ints(i);
  if (v.size() != 1) fail(fmt::format("input {} must hold one value, it holds {}", i, v.size()));
  return v[0];
}
double NodeCtx::double_at(size_t i) const {
  std::vector<double> v = doubles(i);
  if (v.size() != 1) fail(fmt::format("input {} must hold one value, it holds {}", i, v.size()));
  return v[0];
}

int64_t NodeCtx::attr_int(std::string_view name, int64_t def) const {
  const proto::Attribute* a = node_.attr(name);
  return a ? a->i : def;
}
double NodeCtx::attr_float(std::string_view name, double def) const {
  const proto::Attribute* a = node_.attr(name);
  return a ? static_cast<double>(a->f) : def;
}
std::string NodeCtx::attr_str(std::string_view name, const std::string& def) const {
  const proto::Attribute* a = node_.attr(name);
  return a ? a->s : def;
}
std::vector<int64_t> NodeCtx::attr_ints(std::string_view name, std::vector<int64_t> def) const {
  const proto::Attribute* a = node_.attr(name);
  return a ? a->ints : def;
}
std::vector<double> NodeCtx::attr_floats(std::string_view name, std::vector<double> def) const {
  const proto::Attribute* a = node_.attr(name);
  if (!a) return def;
  return std::vector<double>(a->floats.begin(), a->floats.end());
}
Tensor NodeCtx::attr_tensor(std::string_view name) const {
  const proto::Attribute* a = node_.attr(name);
  if (!a || !a->t) return Tensor();
  return exec_.attr_tensor(a->t.get());
}
const proto::Graph* NodeCtx::attr_graph(std::string_view name) const {
  const proto::Attribute* a = node_.attr(name);
  if (!a || !a->g) fail(fmt::format("attribute '{}' (a graph) is missing", name));
  return a->g.get();
}

void NodeCtx::fail(const std::string& why) const {
  throw Error(fmt::format("ONNX node '{}' ({}): {}", node_.name, node_.op_type, why));
}
void NodeCtx::unsupported(const std::string& why) const {
  throw UnsupportedError(fmt::format("ONNX node '{}' ({}): {}", node_.name, node_.op_type, why));
}

// ---- helpers ----

int64_t norm_axis(int64_t axis, int64_t rank, const NodeCtx& c) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1)) c.fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return a;
}

Tensor cast_to(const Tensor& t, DType d) { return t.dtype() == d ? t : to_copy(t, d); }

// ---- Executor ----

Tensor Executor::attr_tensor(const proto::TensorProto* t) const {
  auto it = model_.attr_tensors.find(t);
  SINTER_INTERNAL_ASSERT(it != model_.attr_tensors.end(), "an attribute tensor was not decoded at load");
  return it->second;
}

Tensor Executor::on_device(const Tensor& t, Device device) {
  auto key = std::make_pair(t.impl(), device.str());
  auto copy = [&] { return on_host([&] { return t.to(device); }); };
  {
    detail::ModelData::DeviceCopies& dc = model_.device_copies;
    std::lock_guard<std::mutex> lock(dc.mutex);
    if (dc.persistent.empty())
      for (const auto& [proto, tensor] : model_.attr_tensors) dc.persistent.insert(tensor.impl());
    if (dc.persistent.count(t.impl())) {
      auto it = dc.copies.find(key);
      if (it == dc.copies.end()) it = dc.copies.emplace(key, copy()).first;
      return it->second;
    }
  }
  auto it = run_copies_.find(key);  // the source is kept with its copy, so its address is not reused
  if (it == run_copies_.end()) it = run_copies_.emplace(key, std::make_pair(t, copy())).first;
  return it->second.second;
}

const Val* Executor::lookup(const Scope& s, const std::string& name) const {
  for (const Scope* p = &s; p; p = p->parent) {
    auto it = p->values.find(name);
    if (it != p->values.end()) return &it->second;
  }
  return nullptr;
}

std::vector<Val> Executor::run(const proto::Graph& g, const std::vector<Val>& inputs) {
  Scope scope;
  scope.parent = scopes_.empty() ? nullptr : scopes_.back();
  scopes_.push_back(&scope);
  graphs_.push_back(&g);
  struct Pop {
    Executor& e;
    ~Pop() {
      e.scopes_.pop_back();
      e.graphs_.pop_back();
    }
  } pop{*this};

  for (const proto::TensorProto& init : g.initializers)
    scope.values[init.name] = Val{attr_tensor(&init), true, emulated_type(init.data_type) ? init.data_type : 0};
  size_t k = 0;
  for (const proto::ValueInfo& vi : g.inputs) {
    if (scope.values.count(vi.name)) continue;  // IR < 4 lists initializers among the inputs
    SINTER_CHECK(k < inputs.size(), "ONNX graph '{}' takes more inputs than the {} given", g.name, inputs.size());
    Val v = inputs[k++];
    // A declared emulated type (uint16 ...) travels with its wider tensor.
    int32_t et = vi.type.elem_type;
    if (v.type == 0 && emulated_type(et) && v.t.defined() && v.t.dtype() == to_dtype(et, vi.name)) v.type = et;
    scope.values[vi.name] = v;
  }
  SINTER_CHECK(k == inputs.size(), "ONNX graph '{}' takes {} inputs, {} given", g.name, k, inputs.size());
  for (const proto::Node& n : g.nodes) run_node(n, scope);
  std::vector<Val> outs;
  for (const proto::ValueInfo& vi : g.outputs) {
    const Val* v = lookup(scope, vi.name);
    if (v && v->is_seq())
      throw UnsupportedError(fmt::format("ONNX graph '{}': output '{}' is a sequence (not supported: sequences are "
                                         "resolved at import and cannot leave a graph)", g.name, vi.name));
    SINTER_CHECK(v && v->t.defined(), "ONNX graph '{}': output '{}' is never computed", g.name, vi.name);
    outs.push_back(*v);
  }
  return outs;
}

namespace {
// The declared type of an output whose dtype is an emulated type's: what the import function set; else a
// constant's value type; else that of the first input of the same dtype (elementwise ops, views, Concat, Gather's
// data, Where's branches). Shape and Size give int64 whatever their input.
int32_t output_type(const proto::Node& n, const OpEntry& e, const NodeCtx& ctx, const std::vector<Val>& ins, size_t i,
                    const Tensor& out) {
  int32_t t = i < ctx.out_types().size() ? ctx.out_types()[i] : 0;
  if (t != 0) return emulated_type(t) ? t : 0;
  if (e.known_output) return 0;
  if (const proto::Attribute* a = n.attr("value"); a && a->t) return emulated_type(a->t->data_type) ? a->t->data_type : 0;
  for (const Val& v : ins)
    if (v.t.defined() && v.t.dtype() == out.dtype()) return v.type;
  return 0;
}
}  // namespace

std::string op_key(const proto::Node& n) {
  bool default_domain = n.domain.empty() || n.domain == "ai.onnx";
  return default_domain ? n.op_type : n.domain + "::" + n.op_type;
}

const proto::Graph& Executor::current_graph() const {
  SINTER_INTERNAL_ASSERT(!graphs_.empty(), "no ONNX graph is running");
  return *graphs_.back();
}

const Val* Executor::find(const std::string& name) const {
  return scopes_.empty() ? nullptr : lookup(*scopes_.back(), name);
}

std::vector<Val> Executor::eval_node(const proto::Node& n, std::vector<Val> ins) {
  const OpEntry* entry = find_entry(n);
  if (!entry) throw UnsupportedError(fmt::format("ONNX operator {} is not supported", op_key(n)));
  const OpEntry& e = *entry;
  bool all_known = true;
  for (const Val& v : ins) all_known = all_known && (v.known || (!v.t.defined() && !v.is_seq()));
  bool fold = all_known && !e.random && !e.host;
  // Where the node computes: the device of its first computed input (known values live on the host).
  Device device = kCPU;
  for (const Val& v : ins)
    if (!v.known && v.t.defined() && !v.t.device().is_cpu()) {
      device = v.t.device();
      break;
    }
  NodeCtx ctx(*this, n, ins, model_.opset, device);
  std::vector<Tensor> outs;
  try {
    outs = fold ? on_host([&] { return e.fn(ctx); }) : e.fn(ctx);
  } catch (const GraphBreakError&) {
    throw;
  } catch (const UnsupportedError&) {
    throw;
  } catch (const Error& err) {
    std::string msg = err.what();
    if (msg.rfind("ONNX node", 0) == 0) throw;
    throw Error(fmt::format("ONNX node '{}' ({}): {}", n.name, n.op_type, msg));
  }
  std::vector<Val> result(n.outputs.size());
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (n.outputs[i].empty()) continue;
    if (i < ctx.seq_outs().size() && ctx.seq_outs()[i].is_seq()) {
      result[i] = ctx.seq_outs()[i];
      continue;
    }
    SINTER_CHECK(i < outs.size() && outs[i].defined(), "ONNX node '{}' ({}): output {} ('{}') is not produced",
                 n.name, n.op_type, i, n.outputs[i]);
    result[i] = Val{outs[i], fold || e.known_output, output_type(n, e, ctx, ins, i, outs[i])};
  }
  return result;
}

void Executor::run_node(const proto::Node& n, Scope& scope) {
  std::vector<Val> ins;
  ins.reserve(n.inputs.size());
  for (const std::string& name : n.inputs) {
    if (name.empty()) {
      ins.emplace_back();
      continue;
    }
    const Val* v = lookup(scope, name);
    SINTER_CHECK(v, "ONNX node '{}' ({}): input '{}' is not defined before it is used", n.name, n.op_type, name);
    ins.push_back(*v);
  }
  std::vector<Val> outs = eval_node(n, std::move(ins));
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) scope.values[n.outputs[i]] = std::move(outs[i]);
}

}  // namespace sinter::onnx
