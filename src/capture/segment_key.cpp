// Segment keys (see segment_key.h). Tensor arguments are compared by position (node and output index), never
// by identity, since the two graphs belong to different recordings.
#include "capture/segment_key.h"

#include <bit>
#include <functional>

#include "graph/graph_util.h"
#include "symbolic/expr.h"

namespace sinter::capture {

namespace {

using graph_detail::trace_of;

uint64_t mix(uint64_t h, uint64_t v) {
  return (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))) * 0xff51afd7ed558ccdull;
}

uint64_t symint_hash(const SymInt& s) {
  return s.is_symbolic() ? s.expr()->hash() * 31 + 1 : static_cast<uint64_t>(s.hint()) * 31;
}

uint64_t tensor_hash(const Tensor& t) {
  if (!t.defined()) return 7;
  const TraceState* tr = trace_of(t);
  return tr ? (static_cast<uint64_t>(tr->node) << 8) ^ static_cast<uint64_t>(tr->output) : 11;
}

uint64_t value_hash(const Value& v) {
  uint64_t h = v.storage().index();
  if (v.is_tensor()) return mix(h, tensor_hash(v.tensor()));
  if (v.is_tensor_list()) {
    for (const Tensor& t : v.tensor_list()) h = mix(h, tensor_hash(t));
    return h;
  }
  if (v.is_scalar()) {
    const Scalar s = v.scalar();
    return mix(mix(h, static_cast<uint64_t>(s.kind())),
               s.is_floating() ? std::bit_cast<uint64_t>(s.to_double()) : static_cast<uint64_t>(s.to_int()));
  }
  if (v.is_int()) return mix(h, symint_hash(v.sym_int()));
  if (v.is_int_list()) {
    for (const SymInt& s : v.int_list()) h = mix(h, symint_hash(s));
    return h;
  }
  if (v.is_double()) return mix(h, std::bit_cast<uint64_t>(v.to_double()));
  if (v.is_bool()) return mix(h, v.to_bool());
  if (v.is_string()) return mix(h, std::hash<std::string>()(v.str_value()));
  if (v.is_dtype()) return mix(h, static_cast<uint64_t>(v.dtype()));
  if (v.is_device()) return mix(h, static_cast<uint64_t>(v.device().type) * 256 + v.device().index);
  if (v.is_memory_format()) return mix(h, static_cast<uint64_t>(v.memory_format()));
  if (v.is_double_list()) {
    for (double d : v.double_list()) h = mix(h, std::bit_cast<uint64_t>(d));
  }
  return h;
}

uint64_t meta_hash(const TensorMeta& m) {
  uint64_t h =
      mix(static_cast<uint64_t>(m.dtype), static_cast<uint64_t>(m.device.type) * 256 + m.device.index);
  for (const SymInt& s : m.sizes) h = mix(h, symint_hash(s));
  for (const SymInt& s : m.strides) h = mix(h, symint_hash(s));
  return mix(h, symint_hash(m.offset));
}

bool same_tensor_position(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  const TraceState *x = trace_of(a), *y = trace_of(b);
  return x && y && x->node == y->node && x->output == y->output;
}

bool same_bits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

bool same_arg(const Value& a, const Value& b) {
  if (a.storage().index() != b.storage().index()) return false;
  if (a.is_tensor()) return same_tensor_position(a.tensor(), b.tensor());
  if (a.is_tensor_list()) {
    const auto &x = a.tensor_list(), &y = b.tensor_list();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!same_tensor_position(x[i], y[i])) return false;
    return true;
  }
  if (a.is_scalar()) {
    const Scalar x = a.scalar(), y = b.scalar();
    if (x.kind() != y.kind()) return false;
    return x.is_floating() ? same_bits(x.to_double(), y.to_double()) : x.to_int() == y.to_int();
  }
  if (a.is_double()) return same_bits(a.to_double(), b.to_double());
  if (a.is_double_list()) {
    const auto &x = a.double_list(), &y = b.double_list();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!same_bits(x[i], y[i])) return false;
    return true;
  }
  return graph_detail::same_value(a, b);
}

}  // namespace

uint64_t structure_hash(const Graph& g) {
  uint64_t h = static_cast<uint64_t>(g.num_nodes());
  for (const Node& n : g.nodes()) {
    h = mix(h, static_cast<uint64_t>(n.kind) * 65536 + static_cast<uint64_t>(n.op));
    if (n.kind == NodeKind::kInput || n.kind == NodeKind::kConstant) {
      h = mix(mix(h, meta_hash(n.meta())), n.output().impl()->wrapped_number);
      continue;
    }
    for (const Value& v : n.args) h = mix(h, value_hash(v));
  }
  return h;
}

bool same_structure(const Graph& a, const Graph& b) {
  if (a.num_nodes() != b.num_nodes()) return false;
  auto ia = a.nodes().begin(), ib = b.nodes().begin();
  for (; ia != a.nodes().end(); ++ia, ++ib) {
    const Node &x = *ia, &y = *ib;
    if (x.kind != y.kind) return false;
    if (x.kind == NodeKind::kInput || x.kind == NodeKind::kConstant) {
      if (!graph_detail::same_meta(x.meta(), y.meta()) ||
          x.output().impl()->wrapped_number != y.output().impl()->wrapped_number)
        return false;
      if (x.kind == NodeKind::kConstant && !x.constant.is_same(y.constant)) return false;
      continue;
    }
    if (x.op != y.op || x.args.size() != y.args.size()) return false;
    for (size_t i = 0; i < x.args.size(); ++i)
      if (!same_arg(x.args[i], y.args[i])) return false;
  }
  return true;
}

InputAliasing input_aliasing(const std::vector<Tensor>& inputs) {
  InputAliasing out;
  out.alias_of.assign(inputs.size(), -1);
  out.requires_grad.assign(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    out.requires_grad[i] = t.requires_grad();
    // A storage held by this tensor alone cannot be shared with another input (the common case: no scan). A
    // segment never holds the same tensor twice: the tracer lifts each tensor once.
    if (!t.has_storage() || t.storage().use_count() == 1) continue;
    for (size_t j = 0; j < i; ++j) {
      if (inputs[j].has_storage() && inputs[j].storage() == t.storage()) {
        out.alias_of[i] = static_cast<int32_t>(j);
        break;
      }
    }
  }
  return out;
}

}  // namespace sinter::capture
