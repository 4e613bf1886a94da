// Binary pointwise ops (add/sub with alpha, mul, the divisions, pow, comparisons, bitwise and logical ops, ...):
// PyTorch's dtype rules per op (true division and atan2 of integers give float32, comparisons give bool,
// bitwise ops refuse floats) and one functor per op over the compute types. Scalars are constant operands.
#include <cmath>

#include "ops/pointwise_common.h"
#include "ops/pointwise_math.h"

namespace sinter::pointwise {
namespace {

enum class Kind {
  kArith,        // result = common dtype (add, sub, mul, maximum, minimum)
  kTrueDiv,      // integers -> float32
  kIntDiv,       // common dtype, not bool; integer divisors are checked for zero (fmod, remainder, floor/trunc div)
  kPow,          // common dtype, not bool
  kFloatResult,  // integers -> float32 (atan2, copysign)
  kFloatOnly,    // floating common dtype only (hypot)
  kCompare,      // bool result, computed in the common dtype
  kLogical,      // bool result, computed in bool
  kBitwise,      // integers and bool only
};

enum class DivMode { kTrue, kTrunc, kFloor };

DivMode div_mode(OpId op, const Args& args) {
  switch (op) {
    case OpId::floor_divide_Tensor:
    case OpId::floor_divide_Scalar: return DivMode::kFloor;
    case OpId::div_Tensor_mode:
    case OpId::div_Scalar_mode: {
      if (args[2].is_none()) return DivMode::kTrue;
      const std::string& m = args[2].str_value();
      if (m == "trunc") return DivMode::kTrunc;
      if (m == "floor") return DivMode::kFloor;
      detail::throw_user_error(
          fmt::format("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{}'", m));
    }
    default: return DivMode::kTrue;
  }
}

Kind kind_of(OpId op, const Args& args) {
  switch (op) {
    case OpId::div_Tensor:
    case OpId::div_Scalar: return Kind::kTrueDiv;
    case OpId::div_Tensor_mode:
    case OpId::div_Scalar_mode: return div_mode(op, args) == DivMode::kTrue ? Kind::kTrueDiv : Kind::kIntDiv;
    case OpId::fmod_Tensor:
    case OpId::fmod_Scalar:
    case OpId::remainder_Tensor:
    case OpId::remainder_Scalar:
    case OpId::floor_divide_Tensor:
    case OpId::floor_divide_Scalar: return Kind::kIntDiv;
    case OpId::pow_Tensor_Tensor:
    case OpId::pow_Tensor_Scalar:
    case OpId::pow_Scalar: return Kind::kPow;
    case OpId::atan2:
    case OpId::copysign: return Kind::kFloatResult;
    case OpId::hypot: return Kind::kFloatOnly;
    case OpId::eq_Tensor: case OpId::eq_Scalar: case OpId::ne_Tensor: case OpId::ne_Scalar:
    case OpId::lt_Tensor: case OpId::lt_Scalar: case OpId::le_Tensor: case OpId::le_Scalar:
    case OpId::gt_Tensor: case OpId::gt_Scalar: case OpId::ge_Tensor: case OpId::ge_Scalar: return Kind::kCompare;
    case OpId::logical_and:
    case OpId::logical_or:
    case OpId::logical_xor: return Kind::kLogical;
    case OpId::bitwise_and_Tensor: case OpId::bitwise_and_Scalar: case OpId::bitwise_or_Tensor:
    case OpId::bitwise_or_Scalar: case OpId::bitwise_xor_Tensor: case OpId::bitwise_xor_Scalar: return Kind::kBitwise;
    default: return Kind::kArith;
  }
}

bool is_add_like(OpId op) {
  return op == OpId::add_Tensor || op == OpId::add_Scalar || op == OpId::sub_Tensor || op == OpId::sub_Scalar ||
         op == OpId::rsub_Scalar;
}

DType operand_dtype(const Value& v) { return v.is_tensor() ? v.tensor().dtype() : v.scalar().default_dtype(); }

struct Types {
  DType out;      // the output's dtype
  DType compute;  // the dtype the functor computes in (before the compute-type mapping)
};

// PyTorch's dtype rules and argument checks for each binary op.
Types binary_types(OpId op, const Args& args) {
  const DType common = result_type_of(args, {0, 1});
  const Kind kind = kind_of(op, args);
  if (is_add_like(op)) {
    if (op != OpId::add_Tensor && op != OpId::add_Scalar) {
      bool a = operand_dtype(args[0]) == kBool, b = operand_dtype(args[1]) == kBool;
      SINTER_CHECK(!(a && b),
                   "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                   "`logical_xor()` operator instead.");
      SINTER_CHECK(!(a || b),
                   "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert "
                   "a mask, use the `~` or `logical_not()` operator instead.");
    }
    const Scalar alpha = args[2].scalar();
    SINTER_CHECK(!alpha.is_bool() || common == kBool, "Boolean alpha only supported for Boolean results.");
    SINTER_CHECK(is_floating(common) || !alpha.is_floating(),
                 "For integral input tensors, argument alpha must not be a floating point number.");
  }
  switch (kind) {
    case Kind::kArith: return {common, common};
    case Kind::kTrueDiv:
    case Kind::kFloatResult: {
      DType d = is_floating(common) ? common : kFloat32;
      return {d, d};
    }
    case Kind::kIntDiv:
    case Kind::kPow:
      if (common == kBool) unsupported_dtype(op, common, "numbers, not bool");
      if (op == OpId::pow_Tensor_Scalar) {
        const Scalar e = args[1].scalar();
        SINTER_CHECK(!(is_integral(args[0].tensor().dtype(), true) && !e.is_floating() && e.to_int() < 0),
                     "Integers to negative integer powers are not allowed.");
      }
      return {common, common};
    case Kind::kFloatOnly:
      if (!is_floating(common)) unsupported_dtype(op, common, "floating tensors");
      return {common, common};
    case Kind::kCompare: return {kBool, common};
    case Kind::kLogical: return {kBool, kBool};
    case Kind::kBitwise:
      if (is_floating(common)) unsupported_dtype(op, common, "integer or bool tensors");
      return {common, common};
  }
  return {common, common};
}

ShapeResult binary_shape(OpId op, const Args& args) {
  return pointwise_result(args, {0, 1}, binary_types(op, args).out);
}

// pow(tensor, scalar): PyTorch's shortcuts for common exponents (sqrt for 0.5, products for 2 and 3, ...).
void pow_tensor_scalar(loops::Loop& loop, DType compute, const Scalar& e) {
  if (!is_floating(compute)) {
    const int64_t n = e.to_int();
    if (compute == kBool) return;  // refused by the rule
    return loop.run<int64_t, int64_t>([n](int64_t v) { return pmath::pow_int(v, n); });
  }
  const double x = e.to_double();
  loops::visit_compute_floating(compute, [&]<class C>() {
    if (x == 2) return loop.run<C, C>([](C v) { return v * v; });
    if (x == 3) return loop.run<C, C>([](C v) { return v * v * v; });
    if (x == 0.5) return loop.run<C, C>([](C v) { return std::sqrt(v); });
    if (x == -0.5) return loop.run<C, C>([](C v) { return C(1) / std::sqrt(v); });
    if (x == -1) return loop.run<C, C>([](C v) { return C(1) / v; });
    if (x == -2) return loop.run<C, C>([](C v) { return C(1) / (v * v); });
    const C p = static_cast<C>(x);
    loop.run<C, C>([p](C v) { return std::pow(v, p); });
  });
}

void binary_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  const Tensor& out = outs[0];
  const Types types = binary_types(op, args);
  const Kind kind = kind_of(op, args);
  const DType ct = types.compute;
  loops::Loop loop(out);
  if (op == OpId::pow_Tensor_Scalar) {
    loop.input(loops::unalias_input(out, args[0].tensor()));
    return pow_tensor_scalar(loop, ct, args[1].scalar());
  }
  add_operand(loop, out, args[0]);
  add_operand(loop, out, args[1]);
  if (kind == Kind::kIntDiv && !is_floating(ct)) SINTER_CHECK(!has_zero(args[1]), "ZeroDivisionError");

  // f(a, b) in the compute type C for every compute type, or for the numeric (non-bool) ones.
  auto all = [&](auto f) { loops::visit_compute(ct, [&]<class C>() { loop.run<C, C, C>(f); }); };
  auto numeric = [&](auto f) {
    loops::visit_compute(ct, [&]<class C>() {
      if constexpr (!std::is_same_v<C, bool>) loop.run<C, C, C>(f);
    });
  };
  auto floating = [&](auto f) { loops::visit_compute_floating(ct, [&]<class C>() { loop.run<C, C, C>(f); }); };
  auto compare = [&](auto f) { loops::visit_compute(ct, [&]<class C>() { loop.run<bool, C, C>(f); }); };

  switch (op) {
    case OpId::add_Tensor:
    case OpId::add_Scalar:
    case OpId::sub_Tensor:
    case OpId::sub_Scalar:
    case OpId::rsub_Scalar: {
      const Scalar alpha = args[2].scalar();
      return loops::visit_compute(ct, [&]<class C>() {
        const C al = scalar_as<C>(alpha);
        if (op == OpId::add_Tensor || op == OpId::add_Scalar)
          loop.run<C, C, C>([al](C a, C b) { return pmath::add_(a, pmath::mul_(al, b)); });
        else if constexpr (!std::is_same_v<C, bool>) {
          if (op == OpId::rsub_Scalar)
            loop.run<C, C, C>([al](C a, C b) { return pmath::sub_(b, pmath::mul_(al, a)); });
          else
            loop.run<C, C, C>([al](C a, C b) { return pmath::sub_(a, pmath::mul_(al, b)); });
        }
      });
    }
    case OpId::mul_Tensor:
    case OpId::mul_Scalar: return all([](auto a, auto b) { return pmath::mul_(a, b); });
    case OpId::maximum:
      return all([](auto a, auto b) -> decltype(a) {
        if constexpr (std::is_same_v<decltype(a), bool>) return a || b;
        else return pmath::max_nan(a, b);
      });
    case OpId::minimum:
      return all([](auto a, auto b) -> decltype(a) {
        if constexpr (std::is_same_v<decltype(a), bool>) return a && b;
        else return pmath::min_nan(a, b);
      });
    case OpId::pow_Tensor_Tensor:
    case OpId::pow_Scalar:
      return numeric([](auto a, auto b) -> decltype(a) {
        if constexpr (pmath::kIsFloat<decltype(a)>) return std::pow(a, b);
        else return pmath::pow_int(a, b);
      });
    case OpId::atan2: return floating([](auto a, auto b) { return std::atan2(a, b); });
    case OpId::copysign: return floating([](auto a, auto b) { return std::copysign(a, b); });
    case OpId::hypot: return floating([](auto a, auto b) { return std::hypot(a, b); });
    case OpId::fmod_Tensor:
    case OpId::fmod_Scalar:
      return numeric([](auto a, auto b) -> decltype(a) {
        if constexpr (pmath::kIsFloat<decltype(a)>) return std::fmod(a, b);
        else return pmath::fmod_int(a, b);
      });
    case OpId::remainder_Tensor:
    case OpId::remainder_Scalar:
      return numeric([](auto a, auto b) -> decltype(a) {
        if constexpr (pmath::kIsFloat<decltype(a)>) return pmath::remainder_float(a, b);
        else return pmath::remainder_int(a, b);
      });
    case OpId::eq_Tensor: case OpId::eq_Scalar: return compare([](auto a, auto b) { return a == b; });
    case OpId::ne_Tensor: case OpId::ne_Scalar: return compare([](auto a, auto b) { return a != b; });
    case OpId::lt_Tensor: case OpId::lt_Scalar: return compare([](auto a, auto b) { return a < b; });
    case OpId::le_Tensor: case OpId::le_Scalar: return compare([](auto a, auto b) { return a <= b; });
    case OpId::gt_Tensor: case OpId::gt_Scalar: return compare([](auto a, auto b) { return a > b; });
    case OpId::ge_Tensor: case OpId::ge_Scalar: return compare([](auto a, auto b) { return a >= b; });
    case OpId::logical_and: return loop.run<bool, bool, bool>([](bool a, bool b) { return a && b; });
    case OpId::logical_or: return loop.run<bool, bool, bool>([](bool a, bool b) { return a || b; });
    case OpId::logical_xor: return loop.run<bool, bool, bool>([](bool a, bool b) { return a != b; });
    default: break;
  }
  if (kind == Kind::kBitwise) {
    const std::string_view name = base_name(op);
    if (ct == kBool) {
      if (name == "bitwise_and") return loop.run<bool, bool, bool>([](bool a, bool b) { return a && b; });
      if (name == "bitwise_or") return loop.run<bool, bool, bool>([](bool a, bool b) { return a || b; });
      return loop.run<bool, bool, bool>([](bool a, bool b) { return a != b; });
    }
    if (name == "bitwise_and") return loop.run<int64_t, int64_t, int64_t>([](int64_t a, int64_t b) { return a & b; });
    if (name == "bitwise_or") return loop.run<int64_t, int64_t, int64_t>([](int64_t a, int64_t b) { return a | b; });
    return loop.run<int64_t, int64_t, int64_t>([](int64_t a, int64_t b) { return a ^ b; });
  }
  switch (div_mode(op, args)) {  // div, div with rounding_mode, floor_divide
    case DivMode::kTrue: return floating([](auto a, auto b) { return a / b; });
    case DivMode::kTrunc:
      return numeric([](auto a, auto b) -> decltype(a) {
        if constexpr (pmath::kIsFloat<decltype(a)>) return std::trunc(a / b);
        else return pmath::div_trunc_int(a, b);
      });
    case DivMode::kFloor:
      return numeric([](auto a, auto b) -> decltype(a) {
        if constexpr (pmath::kIsFloat<decltype(a)>) return pmath::div_floor_float(a, b);
        else return pmath::div_floor_int(a, b);
      });
  }
}

}  // namespace

void register_pointwise_binary(OpTable& t) {
  for (OpId op : {OpId::add_Tensor, OpId::add_Scalar, OpId::sub_Tensor, OpId::sub_Scalar, OpId::rsub_Scalar,
                  OpId::div_Tensor_mode, OpId::div_Scalar_mode, OpId::pow_Tensor_Tensor, OpId::pow_Tensor_Scalar,
                  OpId::pow_Scalar, OpId::atan2, OpId::maximum, OpId::minimum, OpId::logical_and, OpId::logical_or,
                  OpId::logical_xor, OpId::hypot, OpId::copysign})
    t.set(op, binary_shape, binary_kernel);
#define SINTER_SET_BINARY(X, name)                         \
  t.set(OpId::name##_Tensor, binary_shape, binary_kernel); \
  t.set(OpId::name##_Scalar, binary_shape, binary_kernel);
  SINTER_BINARY_TS_OPS(unused, SINTER_SET_BINARY)
#undef SINTER_SET_BINARY
  for (OpId op : {OpId::add__Tensor, OpId::add__Scalar, OpId::sub__Tensor, OpId::sub__Scalar, OpId::mul__Tensor,
                  OpId::mul__Scalar, OpId::div__Tensor, OpId::div__Scalar, OpId::pow__Scalar})
    t.set(op, inplace_shape, inplace_kernel);
}

}  // namespace sinter::pointwise
