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

std::string reduce_init(const std::string& op, CType t) {
  if (op == "sum" || op == "mean") return flt(t) ? lit(0, t) : "0";
  if (op == "prod") return flt(t) ? lit(1, t) : "1";
  bool max = op == "amax";
  if (flt(t)) return lit(max ? -INFINITY : INFINITY, t);
  switch (t) {
    case CType::kBool: return max ? "false" : "true";
    case CType::kI8: return max ? "(-128)" : "127";
    case CType::kU8: return max ? "0" : "255";
    case CType::kI32: return max ? "(-2147483647 - 1)" : "2147483647";
    default: return max ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
  }
}

std::string reduce_combine(const std::string& op, const std::string& acc, const std::string& v) {
  if (op == "sum" || op == "mean") return fmt::format("{} + {}", acc, v);
  if (op == "prod") return fmt::format("{} * {}", acc, v);
  // NaN propagates: once the accumulator is NaN no comparison replaces it.
  if (op == "amax") return fmt::format("(({1} > {0} || {1} != {1}) ? {1} : {0})", acc, v);
  if (op == "amin") return fmt::format("(({1} < {0} || {1} != {1}) ? {1} : {0})", acc, v);
  SINTER_INTERNAL_ASSERT(false, "codegen: unknown reduction {}", op);
  return "";
}

std::string op_str(const std::string& op, CType t, const std::vector<std::string>& a,
                   const std::vector<CType>& at) {
  const char* T = inductor::ctype_name(t);
  auto k = [&](double v) { return lit(v, t); };
  if (op == "cast") {
    if (t == CType::kBool) return fmt::format("({} != 0)", a[0]);
    // Float to integer as eager's conversion: NaN -> 0, beyond int64's range saturated, then truncated toward
    // zero to int64 and wrapped to the target width (a plain C cast is undefined for these values).
    if (!flt(t) && flt(at[0])) return fmt::format("({})sn_f2i({})", T, a[0]);
    return fmt::format("({})({})", T, a[0]);
  }
  if (op == "round_f16") return fmt::format("sn_f16_to_f32(sn_f32_to_f16({}))", a[0]);
  if (op == "round_bf16") return fmt::format("sn_bf16_to_f32(sn_f32_to_bf16({}))", a[0]);
  // Binary arithmetic.
  if (op == "add") return fmt::format("{} + {}", a[0], a[1]);
  if (op == "sub") return fmt::format("{} - {}", a[0], a[1]);
  if (op == "mul") return t == CType::kBool ? fmt::format("{} && {}", a[0], a[1]) : fmt::format("{} * {}", a[0], a[1]);
  if (op == "div") return fmt::format("{} / {}", a[0], a[1]);
  // Integer division: a divisor of -1 is split off because INT_MIN / -1 (and INT_MIN % -1) traps on x86 for 32-
  // and 64-bit operands, while PyTorch wraps (the negation is done in unsigned arithmetic to wrap without UB).
  if (!flt(t) && (op == "div_trunc" || op == "div_floor" || op == "fmod" || op == "remainder")) {
    std::string neg = fmt::format("({})(0ULL - (sn_u64)({}))", T, a[0]);
    std::string q = op == "div_trunc" ? fmt::format("{} / {}", a[0], a[1])
                    : op == "div_floor" ? fmt::format("({})sn_ifloordiv({}, {})", T, a[0], a[1])
                    : op == "fmod"      ? fmt::format("{} % {}", a[0], a[1])
                                        : fmt::format("({})sn_imod({}, {})", T, a[0], a[1]);
    bool quotient = op == "div_trunc" || op == "div_floor";
    // A zero divisor raises the kernel's error flag (the runtime throws ZeroDivisionError, as eager does)
    // instead of executing a trapping division.
    return fmt::format("({1} == 0 ? (a_->error[0] = 1, ({0})0) : ({1} == -1 ? {2} : {3}))", T, a[1],
                       quotient ? neg : fmt::format("({})0", T), q);
  }
  if (op == "div_trunc") return math("trunc", t, a[0] + " / " + a[1]);
  if (op == "fmod") return fmt::format("__builtin_fmod{}({}, {})", f32(t) ? "f" : "", a[0], a[1]);
  // Floating remainder and floor division as PyTorch computes them (from fmod, so 1 // 0.1 == 9 and -1 % inf ==
  // inf, where floor(a / b) would round the quotient first). GNU statement expressions (g++ and clang++) keep the
  // temporaries local to the one SSA value they define.
  if (op == "remainder")
    return fmt::format("({{ const {0} m_ = {1}; (m_ != 0 && (({2} < 0) != (m_ < 0))) ? m_ + {2} : m_; }})", T,
                       op_str("fmod", t, a, at), a[1]);
  if (op == "div_floor") {
    std::string fl = f32(t) ? "__builtin_floorf" : "__builtin_floor", cs = f32(t) ? "__builtin_copysignf" : "__builtin_copysign";
    return fmt::format(
        "({{ const {0} m_ = {1}; {0} d_ = ({2} - m_) / {3}; if (m_ != 0 && (({3} < 0) != (m_ < 0))) d_ -= 1; "
        "const {0} f_ = {4}(d_); {3} == 0 ? {2} / {3} : (d_ == 0 ? {5}(0, {2} / {3}) : (d_ - f_ > {6} ? f_ + 1 : f_)); }})",
        T, op_str("fmod", t, a, at), a[0], a[1], fl, cs, k(0.5));
  }
  if (op == "pow" && !flt(t)) {
    // Integer power by squaring in wrapping 64-bit arithmetic; negative exponents give 0 except for bases 1 and -1
    // (PyTorch's integer pow), where a double pow would lose precision above 2^53 and overflow undefinedly.
    return fmt::format(
        "({{ sn_u64 b_ = (sn_u64)(sn_i64)({1}), a_ = (sn_u64)(sn_i64)({0}), r_ = 1; "
        "if ((sn_i64)b_ < 0) r_ = a_ == 1 ? 1 : (a_ == (sn_u64)-1 ? ((b_ & 1) ? (sn_u64)-1 : 1) : 0); "
        "else for (; b_; b_ >>= 1) {{ if (b_ & 1) r_ *= a_; a_ *= a_; }} ({2})(sn_i64)r_; }})",
        a[0], a[1], T);
  }
  if (op == "pow") return f32(t) ? fmt::format("sn_pow({}, {})", a[0], a[1]) : fmt::format("__builtin_pow({}, {})", a[0], a[1]);
  if (op == "atan2" || op == "hypot" || op == "copysign")
    return fmt::format("__builtin_{}{}({}, {})", op, f32(t) ? "f" : "", a[0], a[1]);
  if (op == "maximum" || op == "minimum") {
    if (f32(t)) return fmt::format("{}({}, {})", op == "maximum" ? "sn_max" : "sn_min", a[0], a[1]);
    const char* cmp = op == "maximum" ? ">" : "<";
    if (flt(t)) return fmt::format("(({0} {2} {1} || {0} != {0}) ? {0} : {1})", a[0], a[1], cmp);
    return fmt::format("({0} {2} {1} ? {0} : {1})", a[0], a[1], cmp);
  }
  // A NaN bound gives NaN, as PyTorch's clamp (a NaN x stays NaN because both comparisons are false).
  if (op == "clamp_lo")
    return flt(t) ? fmt::format("(({0} < {1} || {1} != {1}) ? {1} : {0})", a[0], a[1])
                  : fmt::format("({0} < {1} ? {1} : {0})", a[0], a[1]);
  if (op == "clamp_hi")
    return flt(t) ? fmt::format("(({0} > {1} || {1} != {1}) ? {1} : {0})", a[0], a[1])
                  : fmt::format("({0} > {1} ? {1} : {0})", a[0], a[1]);
  static const std::map<std::string, const char*> cmp = {{"eq", "=="}, {"ne", "!="}, {"lt", "<"},
                                                         {"le", "<="}, {"gt", ">"},  {"ge", ">="}};
  if (auto it = cmp.find(op); it != cmp.end()) return fmt::format("{} {} {}", a[0], it->second, a[1]);
  if (op == "logical_and") return fmt::format("{} && {}", a[0], a[1]);
  if (op == "logical_or") return fmt::format("{} || {}", a[0], a[1]);
  if (op == "logical_xor") return fmt::format("{} != {}", a[0], a[1]);
  if (op == "bitwise_and") return fmt::format("({})({} & {})", T, a[0], a[1]);
  if (op == "bitwise_or") return fmt::format("({})({} | {})", T, a[0], a[1]);
  if (op == "bitwise_xor") return fmt::format("({})({} ^ {})", T, a[0], a[1]);
  if (op == "where") return fmt::format("{} ? {} : {}", a[0], a[1], a[2]);
  // Unary.
  const std::string& x = a.empty() ? std::string() : a[0];
  if (op == "neg") return "-(" + x + ")";
  if (op == "abs") return flt(t) ? math("abs", t, x) : fmt::format("({0} < 0 ? ({1})-{0} : {0})", x, T);
  if (op == "sign") {
    if (t == CType::kBool) return x;
    return fmt::format("({})(({} > 0) - ({} < 0))", T, x, x);
  }
  if (op == "relu") return fmt::format("({0} < 0 ? ({1})0 : {0})", x, T);
  if (op == "reciprocal") return fmt::format("{} / {}", k(1), x);
  if (op == "logical_not") return "!" + x;
  if (op == "bitwise_not") return t == CType::kBool ? "!" + x : fmt::format("({})~{}", T, x);
  if (op == "isnan") return fmt::format("{0} != {0}", x);
  if (op == "isinf") return flt(at[0]) ? fmt::format("({0} - {0} != 0 && {0} == {0})", x) : "false";
  if (op == "isfinite") return flt(at[0]) ? fmt::format("({0} - {0} == 0)", x) : "true";
  if (op == "signbit") {
    if (!flt(at[0])) return fmt::format("({} < 0)", x);
    return fmt::format("{}({})", f32(at[0]) ? "sn_signbit" : "sn_signbit_d", x);
  }
  if (op == "log10") return fmt::format("{} * {}", math("log", t, x), k(0.43429448190325182765));
  if (op == "erfc" || op == "round" || op == "trunc" || op == "tan" || op == "asin" || op == "acos" ||
      op == "atan" || op == "sinh" || op == "cosh" || op == "asinh" || op == "acosh" || op == "atanh")
    return math(op == "round" ? "rint" : op, t, x);
  if (op == "frac") return fmt::format("{} - {}", x, math("trunc", t, x));
  // Plain math functions with the same name everywhere.
  return math(op, t, x);
}

}  // namespace sinter::codegen::cpp
