// Shared helpers of the graph IR: structural comparisons, type text, proxies (see graph_util.h).
#include "graph/graph_util.h"

#include <fmt/format.h>

#include <bit>

#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace sinter::graph_detail {
namespace {

struct ShortName {
  std::string_view name;
  DType dtype;
};
constexpr ShortName kShortNames[] = {{"f32", kFloat32}, {"f64", kFloat64}, {"f16", kFloat16},
                                     {"bf16", kBFloat16}, {"i64", kInt64}, {"i32", kInt32},
                                     {"i8", kInt8},       {"u8", kUInt8},  {"b8", kBool}};

std::string int_str(const SymInt& v) { return v.str(); }

std::string list_str(const SymIntList& l) {
  std::string out;
  for (size_t i = 0; i < l.size(); ++i) {
    if (i) out += ", ";
    out += int_str(l[i]);
  }
  return out;
}

}  // namespace

std::string_view short_dtype_name(DType t) {
  for (const ShortName& s : kShortNames)
    if (s.dtype == t) return s.name;
  return "?";
}

std::optional<DType> dtype_from_short_name(std::string_view name) {
  for (const ShortName& s : kShortNames)
    if (s.name == name) return s.dtype;
  return std::nullopt;
}

SymIntList dense_strides(const SymIntList& sizes) {
  SymIntList strides(sizes.size(), SymInt(1));
  SymInt s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    // As contiguous_strides (the shape rules' layout): a size counts as at least 1. A symbol is >= 2 (a ShapeEnv
    // never makes 0 or 1 symbolic); an expression of symbols may be 0 ((s0 - 3)//2 + 1 at s0 = 2) and gives
    // Max(1, size), the form the rules' metas carry. Builds expressions only: no guard.
    const SymInt& n = sizes[d];
    if (!n.is_symbolic()) s = s * SymInt(std::max<int64_t>(n.hint(), 1));
    else if (n.expr()->is_symbol()) s = s * n;
    else s = s * sym_max(n, SymInt(1));
  }
  return strides;
}

bool same_symint(const SymInt& a, const SymInt& b) {
  if (a.is_symbolic() != b.is_symbolic()) return false;
  if (!a.is_symbolic()) return a.hint() == b.hint();
  return a.expr() == b.expr() || sym::compare(*a.expr(), *b.expr()) == 0;
}

bool same_symints(const SymIntList& a, const SymIntList& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_symint(a[i], b[i])) return false;
  return true;
}

bool same_meta(const TensorMeta& a, const TensorMeta& b) {
  return a.dtype == b.dtype && a.device == b.device && same_symints(a.sizes, b.sizes) &&
         same_symints(a.strides, b.strides) && same_symint(a.offset, b.offset);
}

bool known_equal(const SymInt& a, const SymInt& b, const sym::ShapeEnv* env) {
  if (same_symint(a, b)) return true;
  if (!env || (!a.is_symbolic() && !b.is_symbolic())) return false;
  auto as_expr = [](const SymInt& v) { return v.is_symbolic() ? v.expr() : sym::make_const(v.hint()); };
  std::optional<bool> eq = env->statically_known(sym::Rel::kEq, as_expr(a), as_expr(b));
  return eq && *eq;
}

bool same_value(const Value& a, const Value& b) {
  if (a.storage().index() != b.storage().index()) return false;
  if (a.is_none()) return true;
  if (a.is_tensor()) return a.tensor().is_same(b.tensor());
  if (a.is_tensor_list()) {
    const auto &x = a.tensor_list(), &y = b.tensor_list();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!x[i].is_same(y[i])) return false;
    return true;
  }
  // Numbers by their bits: 0.0 and -0.0 are different arguments (x / -0.0 is not x / 0.0); NaN equals NaN here.
  auto same_double = [](double x, double y) {
    return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y) || (x != x && y != y);
  };
  if (a.is_scalar()) {
    const Scalar &x = a.scalar(), &y = b.scalar();
    if (x.is_floating() != y.is_floating() || x.is_bool() != y.is_bool()) return false;
    return x.is_floating() ? same_double(x.to_double(), y.to_double()) : x.to_int() == y.to_int();
  }
  if (a.is_int()) return same_symint(a.sym_int(), b.sym_int());
  if (a.is_int_list()) return same_symints(a.int_list(), b.int_list());
  if (a.is_double()) return same_double(a.to_double(), b.to_double());
  if (a.is_bool()) return a.to_bool() == b.to_bool();
  if (a.is_string()) return a.str_value() == b.str_value();
  if (a.is_dtype()) return a.dtype() == b.dtype();
  if (a.is_device()) return a.device() == b.device();
  if (a.is_memory_format()) return a.memory_format() == b.memory_format();
  if (a.is_double_list()) return a.double_list() == b.double_list();
  return false;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

std::string meta_str(const TensorMeta& m) {
  std::string out = fmt::format("{}[{}]", short_dtype_name(m.dtype), list_str(m.sizes));
  if (!same_symints(m.strides, dense_strides(m.sizes))) out += fmt::format("{{{}}}", list_str(m.strides));
  if (m.offset.is_symbolic()) out += fmt::format("+({})", m.offset.str());
  else if (m.offset.hint() != 0) out += fmt::format("+{}", m.offset.hint());
  if (!m.device.is_cpu()) out += fmt::format("@{}", m.device.str());
  return out;
}

Tensor make_proxy(const TensorMeta& meta, int node, int output, uint64_t serial) {
  Tensor t = empty_from_meta(meta, /*with_data=*/false);
  t.impl()->trace = std::make_shared<TraceState>(TraceState{node, output, serial});
  return t;
}

Tensor adopt_as_proxy(Tensor fresh, int node, int output, uint64_t serial) {
  fresh.impl()->trace = std::make_shared<TraceState>(TraceState{node, output, serial});
  return fresh;
}

Value map_tensors(const Value& v, const std::function<Tensor(const Tensor&)>& fn) {
  if (v.is_tensor()) return v.tensor().defined() ? Value(fn(v.tensor())) : v;
  if (v.is_tensor_list()) {
    std::vector<Tensor> out;
    out.reserve(v.tensor_list().size());
    for (const Tensor& t : v.tensor_list()) out.push_back(t.defined() ? fn(t) : Tensor());
    return Value(std::move(out));
  }
  return v;
}

void rethrow_with(const std::string& prefix, const std::exception& e) {
  std::string message = fmt::format("{}: {}", prefix, e.what());
  if (dynamic_cast<const InternalError*>(&e)) throw InternalError(message);
  throw Error(message);
}

}  // namespace sinter::graph_detail
