#include "codegen/cpp/cpp_ops.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "support/check.h"

namespace sinter::codegen::cpp {

using inductor::CType;

namespace {

bool f32(CType t) { return t == CType::kF32; }
bool f64(CType t) { return t == CType::kF64; }
bool flt(CType t) { return f32(t) || f64(t); }

// A math function: the prelude's vectorisable float version, libm's double one.
std::string math(const std::string& name, CType t, const std::string& a) {
  static const std::map<std::string, std::string> prelude = {
      {"exp", "sn_exp"},     {"expm1", "sn_expm1"}, {"exp2", "sn_exp2"},     {"log", "sn_log"},
      {"log1p", "sn_log1p"}, {"log2", "sn_log2"},   {"tanh", "sn_tanh"},     {"sigmoid", "sn_sigmoid"},
      {"erf", "sn_erf"},     {"sqrt", "sn_sqrt"},   {"rsqrt", "sn_rsqrt"},   {"abs", "sn_abs"},
      {"sin", "sn_sin"},     {"cos", "sn_cos"},     {"floor", "sn_floor"},   {"ceil", "sn_ceil"},
      {"asinh", "sn_asinh"}, {"acosh", "sn_acosh"}, {"atanh", "sn_atanh"}};
  if (f32(t)) {
    auto it = prelude.find(name);
    if (it != prelude.end()) return fmt::format("{}({})", it->second, a);
    return fmt::format("__builtin_{}f({})", name, a);
  }
  if (!flt(t)) {  // an integer operand: rounding is the identity; anything else is computed in double
    if (name == "floor" || name == "ceil" || name == "trunc" || name == "rint" || name == "round") return a;
    return math(name, CType::kF64, fmt::format("(double)({})", a));
  }
  if (name == "sigmoid") return fmt::format("(1.0 / (1.0 + __builtin_exp(-({}))))", a);
  if (name == "rsqrt") return fmt::format("(1.0 / __builtin_sqrt({}))", a);
  if (name == "abs") return fmt::format("__builtin_fabs({})", a);
  return fmt::format("__builtin_{}({})", name, a);
}

std::string lit(double v, CType t) {
  if (std::isnan(v)) return f32(t) ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (f32(t) ? "__builtin_inff()" : "__builtin_inf()");
  std::string s = f32(t) ? fmt::format("{:.9g}", v) : fmt::format("{:.17g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return f32(t) ? s + "f" : s;
}

}  // namespace

std::string const_str(inductor::SExpr c) {
  if (flt(c->type)) return lit(c->value, c->type);
  if (c->type == CType::kBool) return c->ivalue ? "true" : "false";
  if (c->ivalue == INT64_MIN) return "(-9223372036854775807LL - 1)";
  return fmt::format("(({}){}LL)", inductor::ctype_name(c->type), c->ivalue);
}

const char* storage_type(DType dt) {
  switch (dt) {
    case kFloat32: return "float";
    case kFloat64: return "double";
    case kFloat16:
    case kBFloat16: return "sn_u16";
    case kInt64: return "sn_i64";
    case kInt32: return "sn_i32";
    case kInt8: return "sn_i8";
    case kUInt8:
    case kBool: return "sn_u8";
  }
  return "?";
}

std::string load_str(DType dt, const std::string& e) {
  if (dt == kBFloat16) return fmt::format("sn_bf16_to_f32({})", e);
  if (dt == kFloat16) return fmt::format("sn_f16_to_f32({})", e);
  if (dt == kBool) return fmt::format("({} != 0)", e);
  return e;
}

std::string store_str(DType dt, const std::string& v) {
  if (dt == kBFloat16) return fmt::format("sn_f32_to_bf16({})", v);
  if (dt == kFloat16) return fmt::format("sn_f32_to_f16({})", v);
  if (dt == kBool) return fmt::format("(sn_u8)({})", v);
  return fmt::format("({})({})", storage_type(dt), v);
}

std::string reduce_init(inductor::ReduceOp op, CType t) {
  using inductor::ReduceOp;
  bool max = op == ReduceOp::amax;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return flt(t) ? lit(0, t) : "0";
    case ReduceOp::prod: return flt(t) ? lit(1, t) : "1";
    case ReduceOp::amax:
    case ReduceOp::amin: break;
  }
  if (flt(t)) return lit(max ? -INFINITY : INFINITY, t);
  switch (t) {
    case CType::kBool: return max ? "false" : "true";
    case CType::kI8: return max ? "(-128)" : "127";
    case CType::kU8: return max ? "0" : "255";
    case CType::kI32: return max ? "(-2147483647 - 1)" : "2147483647";
    default: return max ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
  }
}

std::string reduce_combine(inductor::ReduceOp op, const std::string& acc, const std::string& v) {
  using inductor::ReduceOp;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return fmt::format("{} + {}", acc, v);
    case ReduceOp::prod: return fmt::format("{} * {}", acc, v);
    // NaN propagates: once the accumulator is NaN no comparison replaces it.
    case ReduceOp::amax: return fmt::format("(({1} > {0} || {1} != {1}) ? {1} : {0})", acc, v);
    case ReduceOp::amin: return fmt::format("(({1} < {0} || {1} != {1}) ? {1} : {0})", acc, v);
  }
  return "";
}

namespace {

// Integer division and remainder: a divisor of -1 is split off because INT_MIN / -1 (and INT_MIN % -1) traps on
// x86 for 32- and 64-bit operands, while PyTorch wraps (the negation is done in unsigned arithmetic to wrap
// without UB). A zero divisor raises the kernel's error flag (the runtime throws ZeroDivisionError, as eager
// does) instead of executing a trapping division.
std::string integer_division(inductor::SOp op, const char* T, const std::vector<std::string>& a) {
  using inductor::SOp;
  std::string neg = fmt::format("({})(0ULL - (sn_u64)({}))", T, a[0]);
  std::string q = op == SOp::div_trunc   ? fmt::format("{} / {}", a[0], a[1])
                  : op == SOp::div_floor ? fmt::format("({})sn_ifloordiv({}, {})", T, a[0], a[1])
                  : op == SOp::fmod      ? fmt::format("{} % {}", a[0], a[1])
                                         : fmt::format("({})sn_imod({}, {})", T, a[0], a[1]);
  bool quotient = op == SOp::div_trunc || op == SOp::div_floor;
  return fmt::format("({1} == 0 ? (a_->error[0] = 1, ({0})0) : ({1} == -1 ? {2} : {3}))", T, a[1],
                     quotient ? neg : fmt::format("({})0", T), q);
}

}  // namespace

std::string op_str(inductor::SOp op, CType t, const std::vector<std::string>& a, const std::vector<CType>& at) {
  using inductor::SOp;
  const char* T = inductor::ctype_name(t);
  auto k = [&](double v) { return lit(v, t); };
  const std::string x = a.empty() ? std::string() : a[0];
  const std::string name(inductor::scalar_op_name(op));
  switch (op) {
    case SOp::cast:
      if (t == CType::kBool) return fmt::format("({} != 0)", x);
      // Float to integer as eager's conversion: NaN -> 0, beyond int64's range saturated, then truncated toward
      // zero to int64 and wrapped to the target width (a plain C cast is undefined for these values).
      if (!flt(t) && flt(at[0])) return fmt::format("({})sn_f2i({})", T, x);
      return fmt::format("({})({})", T, x);
    case SOp::round_f16: return fmt::format("sn_f16_to_f32(sn_f32_to_f16({}))", x);
    case SOp::round_bf16: return fmt::format("sn_bf16_to_f32(sn_f32_to_bf16({}))", x);
    case SOp::add: return fmt::format("{} + {}", a[0], a[1]);
    case SOp::sub: return fmt::format("{} - {}", a[0], a[1]);
    case SOp::mul: return t == CType::kBool ? fmt::format("{} && {}", a[0], a[1]) : fmt::format("{} * {}", a[0], a[1]);
    case SOp::div: return fmt::format("{} / {}", a[0], a[1]);
    case SOp::div_trunc:
      if (!flt(t)) return integer_division(op, T, a);
      return math("trunc", t, a[0] + " / " + a[1]);
    case SOp::fmod:
      if (!flt(t)) return integer_division(op, T, a);
      return fmt::format("__builtin_fmod{}({}, {})", f32(t) ? "f" : "", a[0], a[1]);
    // Floating remainder and floor division as PyTorch computes them (prelude functions over fmod).
    case SOp::remainder:
      if (!flt(t)) return integer_division(op, T, a);
      return fmt::format("sn_remainder{}({}, {})", f32(t) ? "" : "_d", a[0], a[1]);
    case SOp::div_floor:
      if (!flt(t)) return integer_division(op, T, a);
      return fmt::format("sn_div_floor{}({}, {})", f32(t) ? "" : "_d", a[0], a[1]);
    case SOp::pow:
      // Integer pow: the prelude's sn_ipow (wrapping, PyTorch's rule for negative exponents).
      if (!flt(t))
        return fmt::format("({})sn_ipow((sn_i64)({}), (sn_i64)({}))", T, a[0], a[1]);
      return f32(t) ? fmt::format("sn_pow({}, {})", a[0], a[1]) : fmt::format("__builtin_pow({}, {})", a[0], a[1]);
    case SOp::atan2:
    case SOp::hypot:
    case SOp::copysign: return fmt::format("__builtin_{}{}({}, {})", name, f32(t) ? "f" : "", a[0], a[1]);
    case SOp::maximum:
    case SOp::minimum: {
      if (f32(t)) return fmt::format("{}({}, {})", op == SOp::maximum ? "sn_max" : "sn_min", a[0], a[1]);
      const char* cmp = op == SOp::maximum ? ">" : "<";
      if (flt(t)) return fmt::format("(({0} {2} {1} || {0} != {0}) ? {0} : {1})", a[0], a[1], cmp);
      return fmt::format("({0} {2} {1} ? {0} : {1})", a[0], a[1], cmp);
    }
    // As eager's clamp (max_nan, then min_nan): a NaN x or bound gives NaN, and where x equals the bound the
    // bound is taken, as PyTorch's vectorised clamp does (clamp(-0.0, min=-0.0, max=0.0) is +0.0; taking x
    // there gave -0.0, found by sinter fuzz through atan2).
    case SOp::clamp_lo:
      return flt(t) ? fmt::format("(({0} > {1} || {0} != {0}) ? {0} : {1})", a[0], a[1])
                    : fmt::format("({0} > {1} ? {0} : {1})", a[0], a[1]);
    case SOp::clamp_hi:
      return flt(t) ? fmt::format("(({0} < {1} || {0} != {0}) ? {0} : {1})", a[0], a[1])
                    : fmt::format("({0} < {1} ? {0} : {1})", a[0], a[1]);
    case SOp::eq: return fmt::format("{} == {}", a[0], a[1]);
    case SOp::ne: return fmt::format("{} != {}", a[0], a[1]);
    case SOp::lt: return fmt::format("{} < {}", a[0], a[1]);
    case SOp::le: return fmt::format("{} <= {}", a[0], a[1]);
    case SOp::gt: return fmt::format("{} > {}", a[0], a[1]);
    case SOp::ge: return fmt::format("{} >= {}", a[0], a[1]);
    case SOp::logical_and: return fmt::format("{} && {}", a[0], a[1]);
    case SOp::logical_or: return fmt::format("{} || {}", a[0], a[1]);
    case SOp::logical_xor: return fmt::format("{} != {}", a[0], a[1]);
    case SOp::logical_not: return "!" + x;
    case SOp::bitwise_and: return fmt::format("({})({} & {})", T, a[0], a[1]);
    case SOp::bitwise_or: return fmt::format("({})({} | {})", T, a[0], a[1]);
    case SOp::bitwise_xor: return fmt::format("({})({} ^ {})", T, a[0], a[1]);
    case SOp::bitwise_not: return t == CType::kBool ? "!" + x : fmt::format("({})~{}", T, x);
    case SOp::where: return fmt::format("{} ? {} : {}", a[0], a[1], a[2]);
    case SOp::isnan: return fmt::format("{0} != {0}", x);
    case SOp::isinf: return flt(at[0]) ? fmt::format("({0} - {0} != 0 && {0} == {0})", x) : "false";
    case SOp::isfinite: return flt(at[0]) ? fmt::format("({0} - {0} == 0)", x) : "true";
    case SOp::signbit:
      if (!flt(at[0])) return fmt::format("({} < 0)", x);
      return fmt::format("{}({})", f32(at[0]) ? "sn_signbit" : "sn_signbit_d", x);
    case SOp::neg: return "-(" + x + ")";
    case SOp::abs: return flt(t) ? math("abs", t, x) : fmt::format("({0} < 0 ? ({1})-{0} : {0})", x, T);
    case SOp::sign:
      if (t == CType::kBool) return x;
      return fmt::format("({})(({} > 0) - ({} < 0))", T, x, x);
    case SOp::relu: return fmt::format("({0} < 0 ? ({1})0 : {0})", x, T);
    case SOp::reciprocal: return fmt::format("{} / {}", k(1), x);
    case SOp::round: return math("rint", t, x);
    case SOp::frac: return fmt::format("{} - {}", x, math("trunc", t, x));
    case SOp::log10: return fmt::format("{} * {}", math("log", t, x), k(0.43429448190325182765));
    // Math functions: the prelude's vectorisable float version where there is one, else the builtin.
    case SOp::floor:
    case SOp::ceil:
    case SOp::trunc:
    case SOp::sqrt:
    case SOp::rsqrt:
    case SOp::exp:
    case SOp::exp2:
    case SOp::expm1:
    case SOp::log:
    case SOp::log2:
    case SOp::log1p:
    case SOp::sin:
    case SOp::cos:
    case SOp::tan:
    case SOp::asin:
    case SOp::acos:
    case SOp::atan:
    case SOp::sinh:
    case SOp::cosh:
    case SOp::tanh:
    case SOp::asinh:
    case SOp::acosh:
    case SOp::atanh:
    case SOp::sigmoid:
    case SOp::erf:
    case SOp::erfc: return math(name, t, x);
    case SOp::pending: break;
  }
  SINTER_INTERNAL_ASSERT(false, "codegen: scalar op {} has no C++ form", name);
  return "";
}

namespace {

// Whether e is >= 0 for all values of its symbols, by signs alone: every symbol is (sizes and integer arguments
// are at least 2, loop variables at least 0).
bool non_negative(const ExprPtr& e) {
  using sym::Kind;
  switch (e->kind()) {
    case Kind::kConst: return e->value() >= 0;
    case Kind::kSymbol: return true;
    case Kind::kAdd:
    case Kind::kMul:
      if (e->value() < 0) return false;
      [[fallthrough]];
    case Kind::kMin:
    case Kind::kMax:
      for (const ExprPtr& a : e->args())
        if (!non_negative(a)) return false;
      return true;
    case Kind::kFloorDiv:
    case Kind::kMod: return non_negative(e->args()[0]) && non_negative(e->args()[1]);
  }
  return false;
}

}  // namespace

std::string index_expr(const ExprPtr& e, const std::vector<std::string>& var_names, bool wide) {
  using sym::Kind;
  auto sub = [&](const ExprPtr& x) { return index_expr(x, var_names, wide); };
  auto constant = [&](int64_t v) { return std::to_string(v) + (wide ? "LL" : ""); };
  switch (e->kind()) {
    case Kind::kConst: return constant(e->value());
    case Kind::kSymbol: {
      int64_t id = e->symbol_id();
      if (inductor::is_loop_var(id)) {
        int k = inductor::loop_var_index(id);
        SINTER_INTERNAL_ASSERT(k < static_cast<int>(var_names.size()), "index_expr: loop variable {} unnamed", k);
        return var_names[k];
      }
      return fmt::format("s{}", id);
    }
    case Kind::kAdd: {
      std::string s = "(";
      for (size_t i = 0; i < e->args().size(); ++i) s += (i ? " + " : "") + sub(e->args()[i]);
      if (e->value() != 0) s += " + " + constant(e->value());
      return s + ")";
    }
    case Kind::kMul: {
      std::string s = e->value() == 1 ? "(" : "(" + constant(e->value());
      for (size_t i = 0; i < e->args().size(); ++i) s += (i || e->value() != 1 ? " * " : "") + sub(e->args()[i]);
      return s + ")";
    }
    // C's / and % agree with Python's // and % for non-negative operands (indices); a size such as
    // (2*s0//3 - 2)//3 + 1, an empty slice's length, divides a negative value for some sizes and takes the
    // prelude's floor forms.
    case Kind::kFloorDiv:
    case Kind::kMod: {
      std::string a = sub(e->args()[0]), b = sub(e->args()[1]);
      bool floor = e->kind() == Kind::kFloorDiv;
      if (non_negative(e->args()[0]) && non_negative(e->args()[1]))
        return fmt::format("({} {} {})", a, floor ? "/" : "%", b);
      return fmt::format("{}({}, {})", floor ? "sn_ifloordiv" : "sn_imod", a, b);
    }
    case Kind::kMin:
    case Kind::kMax: {
      std::string s = sub(e->args()[0]);
      const char* f = e->kind() == Kind::kMin ? "sn_imin" : "sn_imax";
      for (size_t i = 1; i < e->args().size(); ++i) s = fmt::format("{}({}, {})", f, s, sub(e->args()[i]));
      return s;
    }
  }
  return "?";
}

}  // namespace sinter::codegen::cpp
