// Functionalization (see functionalize.h). Every value is tracked as a window (a chain of view ops) into a
// base: a graph input, a constant or the output of a non-view op. A write replaces the base's current value
// by a new one (the functional op's result, or an as_strided_scatter of it into the old value); reads of a
// written base's views are re-derived from its current value by replaying their view chains.
#include "passes/functionalize.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "ops/dispatch.h"
#include "ops/op_table.h"
#include "support/check.h"
#include "symbolic/shape_env.h"

namespace sinter {
namespace {

bool writes_arguments(OpId op) {
  for (const SchemaArg& a : op_def(op).schema.args)
    if (a.is_write) return true;
  return false;
}

bool mutates(const Node& n) {
  return n.is_op() && (op_def(n.op).schema.is_inplace() || writes_arguments(n.op));
}

// Equality that records no guard: concrete ints by value, symbolic ones when they are the same expression or
// the graph's ShapeEnv proves them equal (Max(1, s0) is s0, as symbols are at least 2). A false "different"
// only costs an extra as_strided_scatter.
bool same_int(const SymInt& a, const SymInt& b) {
  if (!a.is_symbolic() && !b.is_symbolic()) return a.hint() == b.hint();
  if (a.is_symbolic() && b.is_symbolic() && a.expr() == b.expr()) return true;
  const sym::ShapeEnv* env = sym::current_shape_env();
  return env && env->statically_known(sym::Rel::kEq, sym::expr_of(a), sym::expr_of(b)) == true;
}

bool same_ints(const SymIntList& a, const SymIntList& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_int(a[i], b[i])) return false;
  return true;
}

bool is_one(const SymInt& s) { return !s.is_symbolic() && s.hint() == 1; }

// Same elements at the same places: sizes, offset, and strides of the dims longer than 1 (a size-1 dim's
// stride never addresses anything).
bool same_addressing(const TensorMeta& a, const TensorMeta& b) {
  if (!same_ints(a.sizes, b.sizes) || a.strides.size() != b.strides.size() || !same_int(a.offset, b.offset))
    return false;
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (!is_one(a.sizes[d]) && !same_int(a.strides[d], b.strides[d])) return false;
  return true;
}

// Two elements of the window share memory through a zero stride (an expand): eager refuses to write there.
bool overlaps(const TensorMeta& m) {
  for (const SymInt& s : m.sizes)
    if (s.hint() == 0) return false;  // an empty window has no elements to share memory
  for (size_t d = 0; d < m.sizes.size(); ++d)
    if (m.sizes[d].hint() > 1 && m.strides[d].hint() == 0) return true;
  return false;
}

template <class F>
void for_each_tensor(const Value& v, F&& fn) {
  if (v.is_tensor() && v.tensor().defined()) fn(v.tensor());
  if (v.is_tensor_list())
    for (const Tensor& t : v.tensor_list())
      if (t.defined()) fn(t);
}

// In-place ops whose result does not depend on self's values.
bool overwrites(OpId op) {
  return op == OpId::fill__Scalar || op == OpId::zero_ || op == OpId::copy_ || op == OpId::uniform_ ||
         op == OpId::normal_;
}

Value device_arg(const Tensor& t) { return t.device().is_cpu() ? Value() : Value(t.device()); }

// One view op of a chain: replaying it on a new value of the base gives the view of that value.
struct Step {
  OpId op;
  Args args;    // args[0] (self) is replaced when replaying
  int output;   // which output (split, chunk and unbind make several)
  Tensor orig;  // the view this step made in the original graph
};

// A value as a window into its base. `orig` is a pure view chain from the base (or the base itself) equal to
// the value: the value itself, or for an in-place op's result, its `self`.
struct Alias {
  int base = -1;
  Tensor orig;
  std::vector<Step> chain;
};

struct Base {
  Tensor value;  // the original proxy
  int input_index = -1;
  bool constant = false;
  bool written = false;
  // The base has gaps: its values are kept in a dense copy with the same dimension order (the base's dims by
  // decreasing stride, `perm`), on which its view chains still apply.
  bool compacted = false;
  std::vector<int64_t> perm;
  Tensor current;           // the contents after the writes so far (from the first write on)
  TensorMeta layout;        // how `current` addresses its elements; views' windows are computed against it
  SymIntList rule_strides;  // layout's strides as shape rules spell them (Max(1, s1) for s1)
  std::unordered_map<const TensorImpl*, Tensor> derived;  // original view -> the same view of `current`
};

class Functionalizer {
 public:
  explicit Functionalizer(Graph& g) : g_(g), rw_(g) {
    std::vector<Tensor> inputs = g.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) input_index_[inputs[i].impl()] = static_cast<int>(i);
  }

  FunctionalizeResult run() {
    // Shape rules run here too (on metas): under the graph's symbols, as when the graph records an op.
    std::optional<sym::ShapeEnvScope> scope;
    if (g_.shape_env()) scope.emplace(g_.shape_env().get());
    std::vector<const Node*> nodes;
    for (const Node& n : g_.nodes()) nodes.push_back(&n);
    for (const Node* n : nodes) {
      if (!n->is_op()) continue;
      const Schema& schema = op_def(n->op).schema;
      if (schema.is_view())
        visit_view(*n);
      else if (schema.is_inplace())
        visit_inplace(*n);
      else if (writes_arguments(n->op))
        visit_writer(*n);
      else
        visit_functional(*n);
    }
    FunctionalizeResult result;
    result.changed = true;
    set_outputs(result);
    for (auto it = erase_.rbegin(); it != erase_.rend(); ++it) rw_.erase(**it);
    // Views whose readers now read re-derived values are dead; views that outputs return stay. (Later views
    // come first, so a chain goes from its end.)
    std::unordered_map<const TensorImpl*, int> uses;
    for (const Node& n : g_.nodes())
      for (const Value& v : n.args) for_each_tensor(v, [&](const Tensor& t) { ++uses[t.impl()]; });
    for (auto it = views_.rbegin(); it != views_.rend(); ++it) {
      bool used = false;
      for (const Tensor& out : (*it)->outputs) used = used || uses[out.impl()] > 0;
      if (used) continue;
      --uses[(*it)->args[0].tensor().impl()];
      rw_.erase(**it);
    }
    // Readers of re-derived views may see other layouts (a compacted base): refresh every meta downstream.
    rw_.recompute_metas();
    return result;
  }

 private:
  // ---- Aliases ----

  const Alias& alias_of(const Tensor& t) {
    auto it = aliases_.find(t.impl());
    if (it != aliases_.end()) return it->second;
    // Not seen as a view or an in-place result: t is a base.
    Base b;
    b.value = t;
    const Node& producer = g_.producer(t);
    if (producer.kind == NodeKind::kInput) b.input_index = input_index_.at(t.impl());
    b.constant = producer.kind == NodeKind::kConstant;
    bases_.push_back(std::move(b));
    return aliases_[t.impl()] = Alias{static_cast<int>(bases_.size()) - 1, t, {}};
  }

  // The arguments of a replayed step: self replaced, and an explicit as_strided offset made relative to the
  // base's first element (the new value starts at offset 0).
  Args replay_args(const Base& b, const Step& step, const Tensor& self) {
    Args args = step.args;
    args[0] = self;
    if (step.op == OpId::as_strided && !args[3].is_none()) {
      SINTER_CHECK(
          !b.compacted,
          "functionalize: cannot re-express an as_strided view of a written base whose elements are not "
          "dense (sizes {}, strides {}); pass a contiguous tensor instead",
          b.value.sizes().str(), b.value.strides().str());
      args[3] = Value(args[3].sym_int() - b.value.storage_offset());
    }
    return args;
  }

  // The value `t` stands for at `anchor`: the original view while its base is unwritten, else the same view
  // of the base's current value.
  Tensor current(const Tensor& t, const Node& anchor) {
    const Alias& a = alias_of(t);  // stays valid: unordered_map keeps its elements in place
    Base& b = bases_[a.base];
    if (!b.written) return a.orig;
    Tensor v = b.current;
    size_t start = 0;
    for (size_t i = a.chain.size(); i > 0; --i) {
      auto it = b.derived.find(a.chain[i - 1].orig.impl());
      if (it != b.derived.end()) {
        v = it->second;
        start = i;
        break;
      }
    }
    for (size_t i = start; i < a.chain.size(); ++i) {
      const Step& step = a.chain[i];
      v = rw_.insert_op_before(anchor, step.op, replay_args(b, step, v), anchor.loc)[step.output];
      b.derived[step.orig.impl()] = v;
    }
    return v;
  }

  Value current(const Value& v, const Node& anchor) {
    if (v.is_tensor()) return v.tensor().defined() ? Value(current(v.tensor(), anchor)) : v;
    if (!v.is_tensor_list()) return v;
    std::vector<Tensor> list;
    for (const Tensor& t : v.tensor_list()) list.push_back(t.defined() ? current(t, anchor) : Tensor());
    return Value(std::move(list));
  }

  // The current values of a node's arguments. With skip_self, self stays the original (an op that overwrites
  // self reads only its sizes and dtype, so deriving its current value would leave a dead view).
  Args current_args(const Node& n, bool* changed = nullptr, bool skip_self = false) {
    Args args;
    for (const Value& v : n.args) {
      args.push_back(skip_self && args.empty() ? v : current(v, n));
      if (changed && !same_tensors(v, args.back())) *changed = true;
    }
    return args;
  }

  static bool same_tensors(const Value& a, const Value& b) {
    if (a.is_tensor()) return a.tensor().is_same(b.tensor());
    if (!a.is_tensor_list()) return true;
    for (size_t i = 0; i < a.tensor_list().size(); ++i)
      if (!a.tensor_list()[i].is_same(b.tensor_list()[i])) return false;
    return true;
  }

  // ---- Writes ----

  // The window of `a` in the base's `layout` (relative to its first element), by replaying the chain on
  // metas.
  TensorMeta relative_window(const Alias& a, const Base& b) {
    Tensor t = empty_from_meta(b.layout, /*with_data=*/false);
    for (const Step& step : a.chain) t = run_meta(step.op, replay_args(b, step, t))[step.output];
    return t.meta();
  }

  std::string base_name(const Base& b) {
    const Node& p = g_.producer(b.value);
    return p.kind == NodeKind::kOp ? fmt::format("the result of node {} ({})", p.id, p.op_name())
                                   : fmt::format("{} '{}'", p.op_name(), p.name);
  }

  // Before the first write: the layout in which the base's values are kept from now on, one that
  // as_strided_scatter accepts (dense: contiguous, or a permutation of it). A base with gaps gets the dense
  // layout of the same dimension order, so that the view chains taken from it still apply to the copy.
  void prepare(Base& b, const Node& anchor) {
    const TensorMeta& m = b.value.meta();
    SINTER_CHECK(!b.constant,
                 "functionalize: {} writes into {}, a constant of the graph; a compiled graph cannot "
                 "change its constants",
                 anchor.op_name(), base_name(b));
    if (overlaps(m))
      throw OverlappingWriteError(fmt::format("functionalize: {} writes into {}, whose elements overlap in memory "
                                              "(strides {})",
                                              anchor.op_name(), base_name(b), m.strides.str()));
    Tensor dense = run_meta(OpId::clone, {b.value, Value()})[0];
    if (b.value.is_contiguous() || dense.strides().hints() == m.strides.hints()) {
      b.current = b.value;
      b.layout = TensorMeta{m.sizes, m.strides, 0, m.dtype, m.device};
      b.rule_strides = dense.strides();
      return;
    }
    b.compacted = true;
    b.perm.resize(m.sizes.size());
    std::iota(b.perm.begin(), b.perm.end(), 0);
    std::stable_sort(b.perm.begin(), b.perm.end(),
                     [&](int64_t x, int64_t y) { return m.strides[x].hint() > m.strides[y].hint(); });
    b.layout = compact(b, b.value, nullptr).meta();
    b.rule_strides = b.layout.strides;
  }

  // The base's values copied into its dense layout: permute to decreasing strides, copy contiguously, permute
  // back. Records the ops before `anchor`, or only computes the meta when `anchor` is null.
  Tensor compact(const Base& b, Tensor v, const Node* anchor) {
    std::vector<int64_t> inverse(b.perm.size());
    for (size_t d = 0; d < b.perm.size(); ++d) inverse[b.perm[d]] = static_cast<int64_t>(d);
    bool identity = std::is_sorted(b.perm.begin(), b.perm.end());
    auto op = [&](OpId id, Args args) {
      return anchor ? rw_.insert_op1_before(*anchor, id, std::move(args), anchor->loc)
                    : run_meta(id, args)[0];
    };
    if (!identity) v = op(OpId::permute, {v, SymIntList(b.perm)});
    v = op(OpId::clone, {v, MemoryFormat::kContiguous});
    if (!identity) v = op(OpId::permute, {v, SymIntList(inverse)});
    return v;
  }

  // Writes `value` (the alias's sizes and dtype) into the alias's window of its base.
  void write(const Alias& a, Tensor value, const Node& anchor) {
    Base& b = bases_[a.base];
    if (!b.written) prepare(b, anchor);
    TensorMeta window = relative_window(a, b);
    if (overlaps(window))
      throw OverlappingWriteError(fmt::format("functionalize: {} writes into a view of {} in which several "
                                              "elements share one memory location (sizes {}, strides {})",
                                              anchor.op_name(), base_name(b), window.sizes.str(),
                                              window.strides.str()));
    SINTER_INTERNAL_ASSERT(
        value.sizes().hints() == window.sizes.hints() && value.dtype() == b.layout.dtype,
        "functionalize: the new value of {} has sizes {} and dtype {}, the window {} and {}", base_name(b),
        value.sizes().str(), dtype_name(value.dtype()), window.sizes.str(), dtype_name(b.layout.dtype));
    const Node& producer = g_.producer(value);
    bool fresh = producer.is_op() && !op_def(producer.op).schema.is_view();
    TensorMeta rule_layout = b.layout;
    rule_layout.strides = b.rule_strides;
    bool fits = same_addressing(value.meta(), b.layout) || same_addressing(value.meta(), rule_layout);
    if (fresh && fits && same_addressing(window, b.layout)) {
      b.current = value;  // the whole base, already in its layout
    } else {
      if (!b.current.defined()) b.current = compact(b, b.value, &anchor);
      Value offset = same_int(window.offset, 0) ? Value() : Value(window.offset);
      b.current = rw_.insert_op1_before(anchor, OpId::as_strided_scatter,
                                        {b.current, value, window.sizes, window.strides, offset}, anchor.loc);
    }
    b.written = true;
    b.derived.clear();
  }

  // ---- Nodes ----

  void visit_view(const Node& n) {
    SINTER_INTERNAL_ASSERT(n.args.at(0).is_tensor(), "view op {} without a tensor self", n.op_name());
    Alias a = alias_of(n.args[0].tensor());
    // A view of an in-place op's result is the same view of that op's self: keep views pure chains from
    // bases.
    if (!a.orig.is_same(n.args[0].tensor())) {
      Args args = n.args;
      args[0] = a.orig;
      rw_.set_args(n, std::move(args));
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      Alias view{a.base, n.outputs[k], a.chain};
      view.chain.push_back(Step{n.op, n.args, static_cast<int>(k), n.outputs[k]});
      aliases_[n.outputs[k].impl()] = std::move(view);
    }
    views_.push_back(&n);
  }

  void visit_inplace(const Node& n) {
    SINTER_CHECK(n.args.at(0).is_tensor(),
                 "functionalize: {} writes into a list of tensors, which has no functional form yet",
                 n.op_name());
    const Tensor& self = n.args[0].tensor();
    Alias a = alias_of(self);
    Args args = current_args(n, /*changed=*/nullptr, /*skip_self=*/overwrites(n.op));
    Tensor value = functional_value(n, args);
    if (value.dtype() != self.dtype())
      value = rw_.insert_op1_before(n, OpId::to_copy, {value, self.dtype()}, n.loc);
    write(a, value, n);
    aliases_[n.output().impl()] = a;  // the result is self
    erase_.push_back(&n);
  }

  // An op that writes some arguments (batch_norm's running stats) -> its `_functional` form, which also
  // returns their new values, in argument order.
  void visit_writer(const Node& n) {
    const Schema& schema = op_def(n.op).schema;
    const OpDef* f =
        find_op(schema.name + "_functional" + (schema.overload.empty() ? "" : "." + schema.overload));
    SINTER_CHECK(f, "functionalize: {} writes into its arguments and has no functional form",
                 schema.full_name());
    std::vector<Tensor> outs = rw_.insert_op_before(n, f->id, current_args(n), n.loc);
    for (size_t k = 0; k < n.outputs.size(); ++k) rw_.replace_all_uses(n.outputs[k], outs[k]);
    // batch_norm in eval mode reads its running stats without writing them.
    int training = schema.find_arg("training");
    bool writes = training < 0 || n.args[training].to_bool();
    size_t next = n.outputs.size();
    for (size_t i = 0; i < schema.args.size(); ++i) {
      if (!schema.args[i].is_write) continue;
      const Value& arg = n.args[i];
      Tensor value = outs.at(next++);
      if (!writes || arg.is_none()) continue;
      if (value.dtype() != arg.tensor().dtype())
        value = rw_.insert_op1_before(n, OpId::to_copy, {value, arg.tensor().dtype()}, n.loc);
      write(alias_of(arg.tensor()), value, n);
    }
    erase_.push_back(&n);
  }

  void visit_functional(const Node& n) {
    bool changed = false;
    Args args = current_args(n, &changed);
    if (changed) rw_.set_args(n, std::move(args));
  }

  // The value an in-place op writes, computed functionally from `args` (the current values of its arguments).
  Tensor functional_value(const Node& n, const Args& args) {
    const Tensor& self = args[0].tensor();
    const SymIntList& sizes = self.sizes();
    auto insert = [&](OpId op, Args a) { return rw_.insert_op1_before(n, op, std::move(a), n.loc); };
    switch (n.op) {
      // fill_(self, v) -> full(self.sizes, v); zero_(self) -> zeros(self.sizes)
      case OpId::fill__Scalar: return insert(OpId::full, {sizes, args[1], self.dtype(), device_arg(self)});
      case OpId::zero_: return insert(OpId::zeros, {sizes, self.dtype(), device_arg(self)});
      // copy_(self, src) -> _to_copy(expand(src, self.sizes), dtype=self.dtype)
      case OpId::copy_: {
        Tensor src = args[1].tensor();
        if (!same_ints(src.sizes(), sizes)) src = insert(OpId::expand, {src, sizes});
        Value dtype = src.dtype() == self.dtype() ? Value() : Value(self.dtype());
        Value device = src.device() == self.device() ? Value() : Value(self.device());
        return insert(OpId::to_copy, {src, dtype, device});
      }
      // uniform_(self, a, b) -> rand(self.sizes) * (b - a) + a, in float64 as the eager kernel computes it
      case OpId::uniform_: {
        double from = args[1].to_double(), to = args[2].to_double();
        Tensor r = insert(OpId::rand, {sizes, self.dtype(), device_arg(self)});
        if (from == 0 && to == 1) return r;
        if (self.dtype() != kFloat64) r = insert(OpId::to_copy, {r, kFloat64});
        return insert(OpId::add_Scalar, {insert(OpId::mul_Scalar, {r, to - from}), from});
      }
      // normal_(self, mean, std) -> normal(mean, std, self.sizes)
      case OpId::normal_:
        return insert(OpId::normal, {args[1], args[2], sizes, self.dtype(), device_arg(self)});
      // pow_(self, e) -> pow.Tensor_Scalar(self, e) (pow.Scalar is the Scalar-base overload)
      case OpId::pow__Scalar: return insert(OpId::pow_Tensor_Scalar, {self, args[1]});
      default: return insert(functional_op(n.op), args);
    }
  }

  // add_.Tensor -> add.Tensor: the same name without the trailing '_', taking the same arguments.
  static OpId functional_op(OpId op) {
    const Schema& schema = op_def(op).schema;
    std::string name = schema.name;
    if (!name.empty() && name.back() == '_') name.pop_back();
    const OpDef* f = find_op(schema.overload.empty() ? name : name + "." + schema.overload);
    bool same = f && f->schema.args.size() == schema.args.size() && f->schema.returns.size() == 1;
    for (size_t i = 0; same && i < schema.args.size(); ++i)
      same = f->schema.args[i].type == schema.args[i].type &&
             f->schema.args[i].optional == schema.args[i].optional;
    SINTER_CHECK(same, "functionalize: the in-place op {} has no functional form taking the same arguments",
                 schema.full_name());
    return f->id;
  }

  // ---- Outputs ----

  // User outputs: a window of an input stays the original view chain from that input (it aliases the real
  // input, which holds the final values after the write-backs); any other value is its final value. Then the
  // new values of the written inputs.
  void set_outputs(FunctionalizeResult& result) {
    const Node& out = g_.output_node();
    std::vector<Tensor> outputs;
    for (const Value& v : out.args) {
      Alias a = alias_of(v.tensor());
      int input = bases_[a.base].input_index;
      bool is_base = a.orig.is_same(bases_[a.base].value);
      outputs.push_back(input >= 0 || bases_[a.base].constant ? a.orig : current(v.tensor(), out));
      result.outputs_aliasing_inputs.push_back(input >= 0 && is_base ? input : -1);
    }
    std::vector<const Base*> written;
    for (const Base& b : bases_)
      if (b.written && b.input_index >= 0) written.push_back(&b);
    std::sort(written.begin(), written.end(),
              [](const Base* x, const Base* y) { return x->input_index < y->input_index; });
    for (const Base* b : written) {
      result.mutations.push_back({b->input_index, static_cast<int>(outputs.size())});
      outputs.push_back(b->current);
    }
    g_.set_outputs(std::move(outputs));
  }

  Graph& g_;
  Rewriter rw_;
  std::unordered_map<const TensorImpl*, int> input_index_;
  std::vector<Base> bases_;
  std::unordered_map<const TensorImpl*, Alias> aliases_;
  std::vector<const Node*> erase_;  // the mutating nodes, in order
  std::vector<const Node*> views_;  // the original view nodes, in order
};

}  // namespace

bool has_mutations(const Graph& graph) {
  for (const Node& n : graph.nodes())
    if (mutates(n)) return true;
  return false;
}

FunctionalizeResult functionalize(Graph& graph) {
  if (has_mutations(graph)) return Functionalizer(graph).run();
  FunctionalizeResult result;
  std::vector<Tensor> inputs = graph.inputs();
  for (const Tensor& t : graph.outputs()) {
    auto it = std::find_if(inputs.begin(), inputs.end(), [&](const Tensor& x) { return x.is_same(t); });
    result.outputs_aliasing_inputs.push_back(it == inputs.end() ? -1 : static_cast<int>(it - inputs.begin()));
  }
  return result;
}

}  // namespace sinter
