// Helpers shared by the graph's builder, printer, parser, verifier, interpreter and rewriter: structural
// comparison of values and metas (never through SymInt's comparisons, which would record guards), the type
// text (f32[s0, 768]{768, 1}), proxies, and walking the tensors inside a Value.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "ops/op_table.h"
#include "sinter/graph.h"

namespace sinter::sym {
class ShapeEnv;
}

namespace sinter::graph_detail {

// "f32", "bf16", "i64", "b8", ...
std::string_view short_dtype_name(DType t);
std::optional<DType> dtype_from_short_name(std::string_view name);

// Dense row-major strides, as the shape rules write them: a symbol is taken as >= 2 (a ShapeEnv never makes 0 or 1
// symbolic), so no Max(1, s0) term; an expression of symbols, which may be 0, as Max(1, expr).
SymIntList dense_strides(const SymIntList& sizes);

// Structural equality: concrete values by value, symbolic ones by (hash-consed) expression.
bool same_symint(const SymInt& a, const SymInt& b);
bool same_symints(const SymIntList& a, const SymIntList& b);
bool same_meta(const TensorMeta& a, const TensorMeta& b);
// Structurally equal, or equal by what the graph's ShapeEnv knows (its guards made s3 == s0, so s2*s3 and
// s0*s2 are one size). `env` may be null.
bool known_equal(const SymInt& a, const SymInt& b, const sym::ShapeEnv* env);
// Same kind and same contents; tensors by identity.
bool same_value(const Value& a, const Value& b);

// The parts with the separator between them.
std::string join(const std::vector<std::string>& parts, std::string_view separator);

// The type text of a meta: dtype[sizes]{strides}+offset@device, the optional parts only when not the default.
std::string meta_str(const TensorMeta& m);

// A data-less tensor of `meta` standing for output `output` of node `node` of graph `serial`.
Tensor make_proxy(const TensorMeta& meta, int node, int output, uint64_t serial);
// Makes a fresh data-less tensor (held nowhere else) the proxy of output `output` of node `node`.
Tensor adopt_as_proxy(Tensor fresh, int node, int output, uint64_t serial);
// The proxy's trace when it is one, else null.
inline const TraceState* trace_of(const Tensor& t) { return t.defined() ? t.impl()->trace.get() : nullptr; }

// Calls fn on every defined tensor inside a Value (a Tensor, or the entries of a Tensor[] / Tensor?[]).
template <class F>
void for_each_tensor(const Value& v, F&& fn) {
  if (v.is_tensor()) {
    if (v.tensor().defined()) fn(v.tensor());
  } else if (v.is_tensor_list()) {
    for (const Tensor& t : v.tensor_list())
      if (t.defined()) fn(t);
  }
}
template <class F>
void for_each_tensor(const Args& args, F&& fn) {
  for (const Value& v : args) for_each_tensor(v, fn);
}
// The Value with every defined tensor replaced by fn(tensor); other values unchanged.
Value map_tensors(const Value& v, const std::function<Tensor(const Tensor&)>& fn);

// One node as the printer writes it ("%3 = gelu(%2)  # f32[2, 3]"), for messages.
std::string node_str(const Graph& g, const Node& n);

// Throws Error unless `op` returns exactly one tensor (add_op1 and insert_op1_before check before recording).
void check_single_output(OpId op, std::string_view alternative);

// Throws Error "<prefix>: <message of e>" keeping the message's detail; used to add node context.
[[noreturn]] void rethrow_with(const std::string& prefix, const std::exception& e);

}  // namespace sinter::graph_detail
