// Pointwise ops as scalar expressions. Each op computes in the C type of its output dtype (float for f16/bf16)
// after casting its operands, as PyTorch's kernels do; comparisons compute in the promoted operand type; weak
// scalars take the type of the tensor they meet.
#include <optional>
#include <set>
#include <string>

#include "inductor/lower.h"
#include "inductor/lower_pointwise.h"
#include "ops/op_table.h"
#include "ops/shape_util.h"
#include "support/check.h"

namespace sinter::inductor {
namespace {

// Unary rows whose schema name is also the scalar op codegen prints.
const std::set<std::string, std::less<>>& unary_ops() {
  static const std::set<std::string, std::less<>> s = {
      "abs",   "neg",   "sign",  "sqrt",    "rsqrt",   "exp",        "exp2",        "expm1",    "log",
      "log2",  "log10", "log1p", "sin",     "cos",     "tan",        "asin",        "acos",     "atan",
      "sinh",  "cosh",  "tanh",  "asinh",   "acosh",   "atanh",      "sigmoid",     "relu",     "erf",
      "erfc",  "floor", "ceil",  "round",   "trunc",   "frac",       "reciprocal",  "logical_not",
      "bitwise_not", "isnan", "isinf", "isfinite", "signbit"};
  return s;
}

const std::set<std::string, std::less<>>& other_ops() {
  static const std::set<std::string, std::less<>> s = {
      "threshold",
      "add",       "sub",       "rsub",       "mul",        "div",         "fmod",        "remainder",
      "eq",        "ne",        "lt",         "le",         "gt",          "ge",          "bitwise_and",
      "bitwise_or", "bitwise_xor", "floor_divide", "pow",   "atan2",       "maximum",     "minimum",
      "logical_and", "logical_or", "logical_xor", "hypot",  "copysign",    "where",       "clamp",
      "masked_fill", "_to_copy",   "clone"};
  return s;
}

bool bool_result(std::string_view name) {
  return name == "isnan" || name == "isinf" || name == "isfinite" || name == "signbit" || name == "logical_not";
}

struct Builder {
  PointwiseContext& cx;
  const Node& n;
  const std::vector<ExprPtr>& osz;
  const std::vector<ExprPtr>& idx;
  CType out;

  SPool& p() { return cx.pool(); }
  CType arg_type(int i) {
    const Value& v = n.args[i];
    if (v.is_tensor()) return compute_type(v.tensor().dtype());
    return out;
  }
  // Argument i (tensor or scalar) as type t.
  SExpr arg(int i, CType t) {
    const Value& v = n.args[i];
    if (v.is_tensor()) return p().cast(cx.load_arg(v.tensor(), osz, idx), t);
    Scalar s = v.is_scalar() ? v.scalar() : v.is_double() ? Scalar(v.to_double()) : Scalar(v.to_int());
    if (s.is_floating()) return p().constant(s.to_double(), t);
    return p().iconstant(s.to_int(), t);
  }
  SExpr k(double v) { return p().constant(v, out); }
  SExpr op(SOp o, std::vector<SExpr> a) { return p().op(o, std::move(a), out); }
  SExpr op(SOp o, std::vector<SExpr> a, CType t) { return p().op(o, std::move(a), t); }
  // The scalar op spelled as the graph op `name` (the tables above list only such names).
  SExpr op(std::string_view name, std::vector<SExpr> a, CType t) { return op(named(name), std::move(a), t); }
  SExpr op(std::string_view name, std::vector<SExpr> a) { return op(named(name), std::move(a), out); }
  static SOp named(std::string_view name) {
    std::optional<SOp> o = scalar_op_named(name);
    SINTER_INTERNAL_ASSERT(o.has_value(), "inductor: no scalar op named {}", name);
    return *o;
  }
  // x * alpha, leaving it alone when alpha is 1.
  SExpr scaled(SExpr x, std::string_view alpha_name) {
    const Value& a = n.arg(alpha_name);
    Scalar s = a.scalar();
    if (s.to_double() == 1) return x;
    return op(SOp::mul, {x, s.is_floating() ? k(s.to_double()) : p().iconstant(s.to_int(), out)});
  }
};

}  // namespace

bool is_lowerable_pointwise(OpId id) {
  const Schema& s = op_def(id).schema;
  if (s.is_view() || s.is_inplace() || s.returns.size() != 1) return false;
  if (unary_ops().count(s.name)) return true;
  if (!other_ops().count(s.name)) return false;
  if (s.name == "div" && (s.overload == "Tensor_mode" || s.overload == "Scalar_mode")) return true;
  return true;
}

SExpr lower_pointwise(PointwiseContext& cx, const Node& n, const std::vector<ExprPtr>& out_sizes,
                      const std::vector<ExprPtr>& idx) {
  const Schema& s = op_def(n.op).schema;
  const std::string& name = s.name;
  Builder b{cx, n, out_sizes, idx, compute_type(n.meta().dtype)};
  CType t = b.out;
  if (unary_ops().count(name)) {
    if (bool_result(name)) {
      CType at = name == "logical_not" ? CType::kBool : b.arg_type(0);
      return b.op(name, {b.arg(0, at)}, CType::kBool);
    }
    return b.op(name, {b.arg(0, t)});
  }
  if (name == "threshold") {  // x <= threshold ? value : x (so NaN stays NaN)
    SExpr x = b.arg(0, t);
    return b.op(SOp::where, {b.op(SOp::le, {x, b.arg(1, t)}, CType::kBool), b.arg(2, t), x});
  }
  if (name == "add" || name == "sub") return b.op(name, {b.arg(0, t), b.scaled(b.arg(1, t), "alpha")});
  if (name == "rsub") return b.op(SOp::sub, {b.arg(1, t), b.scaled(b.arg(0, t), "alpha")});
  if (name == "mul" || name == "atan2" || name == "maximum" || name == "minimum" || name == "hypot" ||
      name == "copysign" || name == "fmod" || name == "remainder" || name == "bitwise_and" ||
      name == "bitwise_or" || name == "bitwise_xor")
    return b.op(name, {b.arg(0, t), b.arg(1, t)});
  if (name == "floor_divide") return b.op(SOp::div_floor, {b.arg(0, t), b.arg(1, t)});
  if (name == "div") {
    int mi = s.find_arg("rounding_mode");
    std::string mode = mi >= 0 && !n.args[mi].is_none() ? n.args[mi].str_value() : "";
    SOp o = mode == "trunc" ? SOp::div_trunc : mode == "floor" ? SOp::div_floor : SOp::div;
    return b.op(o, {b.arg(0, t), b.arg(1, t)});
  }
  if (name == "eq" || name == "ne" || name == "lt" || name == "le" || name == "gt" || name == "ge") {
    CType ct = compute_type(result_type_of(n.args, {0, 1}));
    return b.op(name, {b.arg(0, ct), b.arg(1, ct)}, CType::kBool);
  }
  if (name == "logical_and" || name == "logical_or" || name == "logical_xor")
    return b.op(name, {b.arg(0, CType::kBool), b.arg(1, CType::kBool)}, CType::kBool);
  if (name == "pow") {
    const Value& e = n.args[1];
    if (!e.is_tensor() && is_float(t)) {
      double v = e.to_double();
      SExpr x = b.arg(0, t);
      if (v == 2) return b.op(SOp::mul, {x, x});
      if (v == 1) return x;
      if (v == 0.5) return b.op(SOp::sqrt, {x});
      if (v == -1) return b.op(SOp::reciprocal, {x});
      if (v == 3) return b.op(SOp::mul, {b.op(SOp::mul, {x, x}), x});
      // The same special exponents as eager's pow_tensor_scalar (src/ops/pointwise_binary.cpp), in the same
      // form: pow(-0.0, -0.5) is 1 / sqrt(-0.0) = -inf there, as in PyTorch, where std::pow gives +inf.
      if (v == -0.5) return b.op(SOp::reciprocal, {b.op(SOp::sqrt, {x})});
      if (v == -2) return b.op(SOp::reciprocal, {b.op(SOp::mul, {x, x})});
    }
    return b.op(SOp::pow, {b.arg(0, t), b.arg(1, t)});
  }
  if (name == "where") return b.op(SOp::where, {b.arg(0, CType::kBool), b.arg(1, t), b.arg(2, t)});
  if (name == "masked_fill") return b.op(SOp::where, {b.arg(1, CType::kBool), b.arg(2, t), b.arg(0, t)});
  if (name == "clamp") {
    SExpr x = b.arg(0, t);
    if (!n.args[1].is_none()) x = b.op(SOp::clamp_lo, {x, b.arg(1, t)});
    if (!n.args[2].is_none()) x = b.op(SOp::clamp_hi, {x, b.arg(2, t)});
    return x;
  }
  if (name == "_to_copy") {
    DType from = n.args[0].tensor().dtype();
    return cx.pool().convert(b.arg(0, compute_type(from)), from, n.meta().dtype);
  }
  if (name == "clone") return b.arg(0, t);
  SINTER_INTERNAL_ASSERT(false, "inductor: no scalar form for {}", n.op_name());
  return nullptr;
}

}  // namespace sinter::inductor
