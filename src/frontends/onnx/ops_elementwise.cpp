// Elementwise ONNX operators: unary math and activations, binary arithmetic and comparisons (multidirectional
// broadcasting, as PyTorch's), variadic Sum/Mean/Max/Min, Cast, Clip, Where. ONNX never promotes dtypes, so
// results are cast back to the input's dtype wherever PyTorch's promotion would widen them.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

using Unary = Tensor (*)(const Tensor&, Loc);

ImportFn unary(Unary f) {
  return [f](NodeCtx& c) { return std::vector<Tensor>{f(c.in(0), Loc::current())}; };
}
ImportFn unary_fn(std::function<Tensor(const Tensor&, NodeCtx&)> f) {
  return [f](NodeCtx& c) { return std::vector<Tensor>{f(c.in(0), c)}; };
}
ImportFn binary_fn(std::function<Tensor(const Tensor&, const Tensor&, NodeCtx&)> f) {
  return [f](NodeCtx& c) { return std::vector<Tensor>{f(c.in(0), c.in(1), c)}; };
}

Tensor scalar_like(double v, const Tensor& like) { return full({}, v, TensorOptions(like.dtype()).device(like.device())); }

// Old opsets (< 7) broadcast only with broadcast=1 and an axis: align b's dims at `axis` of a.
Tensor legacy_broadcast(const Tensor& a, const Tensor& b, NodeCtx& c) {
  if (c.opset() >= 7 || !c.has_attr("broadcast") || c.attr_int("broadcast", 0) == 0 || !c.has_attr("axis")) return b;
  int64_t axis = norm_axis(c.attr_int("axis", 0), a.dim(), c);
  Tensor r = b;
  for (int64_t k = axis + b.dim(); k < a.dim(); ++k) r = unsqueeze(r, -1);
  return r;
}

Tensor arith(const Tensor& a, const Tensor& b0, NodeCtx& c) {
  Tensor b = legacy_broadcast(a, b0, c);
  const std::string& op = c.node().op_type;
  DType d = a.dtype();
  Tensor r;
  if (op == "Add") r = add(a, b);
  else if (op == "Sub") r = sub(a, b);
  else if (op == "Mul") r = mul(a, b);
  else if (is_integral(d, true)) r = div(a, b, std::optional<std::string>("trunc"));  // C-style, as ONNX's ints
  else r = div(a, b);
  // Emulated types wrap at their declared width (uint16 65535 + 1 is 0), as ONNX's reference does.
  if (emulated_type(c.type(0))) return wrap_to_type(r, c.type(0));
  return cast_to(r, d);
}

Tensor onnx_pow(const Tensor& a, const Tensor& b, NodeCtx& c) {
  Tensor e = legacy_broadcast(a, b, c);
  if (c.type(1) == proto::kDtUInt64) e = uint64_to_floating(e, is_floating(a.dtype()) ? a.dtype() : kFloat64);
  if (is_integral(a.dtype(), false) && is_floating(e.dtype())) return cast_to(pow(to_copy(a, e.dtype()), e), a.dtype());
  if (is_floating(a.dtype()) && e.dtype() != a.dtype()) e = to_copy(e, a.dtype());
  // A known one-element exponent that does not widen the result (GPT-2's pow(x, 3.0)) is a Scalar: the compiler
  // then writes x*x*x, sqrt or a reciprocal where PyTorch's pow does, not a call of powf per element.
  // Only exponents every float dtype holds exactly (halves up to 16), so that no rounding to a's dtype is skipped.
  if (is_floating(a.dtype()) && c.known(1) && c.type(1) != proto::kDtUInt64 && e.numel() == 1 && e.dim() <= a.dim()) {
    const double v = c.double_at(1);
    if (std::abs(v) <= 16 && v * 2 == std::nearbyint(v * 2)) return pow(a, Scalar(v));
  }
  return cast_to(pow(a, e), a.dtype());
}

Tensor onnx_mod(const Tensor& a, const Tensor& b, NodeCtx& c) {
  bool f = c.attr_int("fmod", 0) != 0;
  if (is_floating(a.dtype()) && !f) c.fail("Mod on floating point tensors needs fmod=1");
  // Unsigned values are never negative, so fmod and remainder agree; uint64 needs the unsigned remainder.
  if (c.type(0) == proto::kDtUInt64) return uint64_mod(a, b);
  return cast_to(f ? fmod(a, b) : remainder(a, b), a.dtype());
}

ImportFn compare(Tensor (*f)(const Tensor&, const Tensor&, Loc), bool ordering = false) {
  return [f, ordering](NodeCtx& c) {
    Tensor a = c.in(0), b = legacy_broadcast(c.in(0), c.in(1), c);
    // uint64 bit patterns order as unsigned once their sign bits are flipped.
    if (ordering && c.type(0) == proto::kDtUInt64) {
      Scalar top(std::numeric_limits<int64_t>::min());
      a = bitwise_xor(a, top), b = bitwise_xor(b, top);
    }
    return std::vector<Tensor>{f(a, b, Loc::current())};
  };
}

ImportFn variadic(const std::string& kind) {
  return [kind](NodeCtx& c) {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < c.num_inputs(); ++i)
      if (c.has(i)) xs.push_back(c.in(i));
    if (xs.empty()) c.fail("needs at least one input");
    DType d = xs[0].dtype();
    int32_t type = 0;
    for (size_t i = 0; i < c.num_inputs() && type == 0; ++i)
      if (c.has(i)) type = c.type(i);
    bool u64 = type == proto::kDtUInt64;
    Tensor r = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) {
      if (kind == "Max") r = u64 ? uint64_max(r, xs[i], true) : maximum(r, xs[i]);
      else if (kind == "Min") r = u64 ? uint64_max(r, xs[i], false) : minimum(r, xs[i]);
      else r = add(r, xs[i]);
    }
    if (xs.size() == 1) r = clone(r);
    if (kind == "Mean") r = div(r, Scalar(static_cast<double>(xs.size())));
    if (kind == "Sum" && emulated_type(type)) return std::vector<Tensor>{wrap_to_type(r, type)};
    return std::vector<Tensor>{cast_to(r, d)};
  };
}

Tensor clip(NodeCtx& c) {
  Tensor x = c.in(0);
  if (c.opset() < 11) {
    std::optional<Scalar> lo, hi;
    if (c.has_attr("min")) lo = Scalar(c.attr_float("min", 0));
    if (c.has_attr("max")) hi = Scalar(c.attr_float("max", 0));
    return (lo || hi) ? clamp(x, lo, hi) : clone(x);
  }
  Tensor r = x;
  if (c.has(1)) r = maximum(r, cast_to(c.in(1), x.dtype()));
  if (c.has(2)) r = minimum(r, cast_to(c.in(2), x.dtype()));
  return r.is_same(x) ? clone(x) : r;
}

Tensor cast(const Tensor& x, DType to);

// Cast between ONNX types where either side is emulated: a uint64 source converts as unsigned; an emulated target
// takes integers modulo its width (floats are truncated first, as ONNX's reference does by numpy's astype).
Tensor emulated_cast(const Tensor& x, int32_t from, int32_t to) {
  DType dto = to_dtype(to, "Cast 'to'");
  if (from == proto::kDtUInt64 && is_floating(dto)) return uint64_to_floating(x, dto);
  if (!emulated_type(to)) return cast(x, dto);
  if (x.dtype() == kBool) return cast(x, dto);
  Tensor v = x;
  if (is_floating(x.dtype())) {
    Tensor t = trunc(cast(x, kFloat64));
    // Above 2^63 a uint64 target needs the value less 2^64 (its bit pattern as int64).
    if (to == proto::kDtUInt64) t = where(ge(t, Scalar(9223372036854775808.0)), sub(t, Scalar(18446744073709551616.0)), t);
    v = cast(t, kInt64);
  }
  return wrap_to_type(v, to);
}

Tensor cast(const Tensor& x, DType to) {
  if (x.dtype() == to) return clone(x);
  // ONNX casts float -> integer by truncation, and out-of-range values are undefined; float -> bool is x != 0.
  return to_copy(x, to);
}

// Cast, where a float becoming bfloat16 is truncated (its float32 bits cut to the top 16), as ONNX's reference
// implementation and test data do (PyTorch rounds to nearest). Without a bit view, and with exact float32 steps
// only (so no fused kernel can change the result by keeping an intermediate in float32): p = 2^floor(log2|x|),
// corrected where log2 rounded across a power of two; one bfloat16 step at |x| is p * 2^-7 (at least 2^-133), and
// |x| - fmod(|x|, step) drops exactly the bits below it. Zero, infinities and NaN pass through.
Tensor onnx_cast(const Tensor& x, DType to) {
  if (to != kBFloat16 || !is_floating(x.dtype()) || x.dtype() == kBFloat16) return cast(x, to);
  Tensor xf = cast(x, kFloat32);
  Tensor a = abs(xf);
  Tensor p = exp2(clamp_max(floor(log2(a)), Scalar(127.0)));  // log2 of the largest floats rounds to 128
  p = where(gt(p, a), mul(p, Scalar(0.5)), p);
  p = where(le(mul(p, Scalar(2.0)), a), mul(p, Scalar(2.0)), p);
  Tensor step = maximum(mul(p, Scalar(1.0 / 128)), full({}, Scalar(std::ldexp(1.0, -133)), TensorOptions(kFloat32).device(x.device())));
  Tensor t = sub(a, fmod(a, step));  // (bfloat16's subnormal step is 2^-133)
  t = where(logical_or(eq(a, Scalar(0.0)), logical_not(isfinite(a))), a, t);
  return cast(where(lt(xf, Scalar(0.0)), neg(t), t), kBFloat16);
}

}  // namespace

void register_elementwise(OpTable& t) {
  // ---- unary math ----
  t["Abs"] = {unary(abs)};
  t["Neg"] = {unary(neg)};
  t["Sign"] = {unary(sign)};
  t["Sqrt"] = {unary(sqrt)};
  t["Exp"] = {unary(exp)};
  t["Log"] = {unary(log)};
  t["Sin"] = {unary(sin)};
  t["Cos"] = {unary(cos)};
  t["Tan"] = {unary(tan)};
  t["Asin"] = {unary(asin)};
  t["Acos"] = {unary(acos)};
  t["Atan"] = {unary(atan)};
  t["Sinh"] = {unary(sinh)};
  t["Cosh"] = {unary(cosh)};
  t["Tanh"] = {unary(tanh)};
  t["Asinh"] = {unary(asinh)};
  t["Acosh"] = {unary(acosh)};
  t["Atanh"] = {unary(atanh)};
  t["Erf"] = {unary(erf)};
  t["Floor"] = {unary(floor)};
  t["Ceil"] = {unary(ceil)};
  t["Round"] = {unary(round)};  // half to even, as ONNX
  t["Not"] = {unary(logical_not)};
  t["BitwiseNot"] = {unary_fn([](const Tensor& x, NodeCtx& c) {
    // Held wider, ~x of a uint16/uint32 sets the bits above its width: keep the declared ones.
    return emulated_type(c.type(0)) ? wrap_to_type(bitwise_not(x), c.type(0)) : bitwise_not(x);
  })};
  t["IsNaN"] = {unary(isnan)};
  t["Reciprocal"] = {unary_fn([](const Tensor& x, NodeCtx&) { return cast_to(reciprocal(x), x.dtype()); })};
  t["IsInf"] = {unary_fn([](const Tensor& x, NodeCtx& c) {
    bool neg_ok = c.attr_int("detect_negative", 1) != 0, pos_ok = c.attr_int("detect_positive", 1) != 0;
    Tensor inf = isinf(x);
    if (neg_ok && pos_ok) return inf;
    if (!neg_ok && !pos_ok) return zeros_like(x, kBool);
    return logical_and(inf, pos_ok ? gt(x, Scalar(0)) : lt(x, Scalar(0)));
  })};
  // ---- activations ----
  t["Relu"] = {unary(relu)};
  t["Sigmoid"] = {unary(sigmoid)};
  t["Mish"] = {unary(mish)};
  t["Softsign"] = {unary_fn([](const Tensor& x, NodeCtx&) { return div(x, add(abs(x), Scalar(1))); })};
  t["Softplus"] = {unary_fn([](const Tensor& x, NodeCtx&) { return softplus(x); })};
  t["HardSigmoid"] = {unary_fn([](const Tensor& x, NodeCtx& c) {
    double alpha = c.attr_float("alpha", 0.2), beta = c.attr_float("beta", 0.5);
    return clamp(add(mul(x, Scalar(alpha)), Scalar(beta)), Scalar(0.0), Scalar(1.0));
  })};
  t["HardSwish"] = {unary(hardswish)};
  t["LeakyRelu"] = {unary_fn([](const Tensor& x, NodeCtx& c) { return leaky_relu(x, c.attr_float("alpha", 0.01)); })};
  t["Elu"] = {unary_fn([](const Tensor& x, NodeCtx& c) {
    double alpha = c.attr_float("alpha", 1.0);
    return where(gt(x, Scalar(0)), x, mul(expm1(x), Scalar(alpha)));
  })};
  t["Celu"] = {unary_fn([](const Tensor& x, NodeCtx& c) { return celu(x, c.attr_float("alpha", 1.0)); })};
  t["Selu"] = {unary_fn([](const Tensor& x, NodeCtx& c) {
    double alpha = c.attr_float("alpha", 1.67326319217681884765625);
    double gamma = c.attr_float("gamma", 1.05070102214813232421875);
    return mul(where(gt(x, Scalar(0)), x, mul(expm1(x), Scalar(alpha))), Scalar(gamma));
  })};
  t["ThresholdedRelu"] = {unary_fn([](const Tensor& x, NodeCtx& c) {
    return where(gt(x, Scalar(c.attr_float("alpha", 1.0))), x, scalar_like(0, x));
  })};
  t["Gelu"] = {unary_fn([](const Tensor& x, NodeCtx& c) { return gelu(x, c.attr_str("approximate", "none")); })};
  t["Shrink"] = {unary_fn([](const Tensor& x, NodeCtx& c) {
    double bias = c.attr_float("bias", 0.0), lambd = c.attr_float("lambd", 0.5);
    Tensor lo = cast_to(add(x, Scalar(bias)), x.dtype()), hi = cast_to(sub(x, Scalar(bias)), x.dtype());
    return where(lt(x, Scalar(-lambd)), lo, where(gt(x, Scalar(lambd)), hi, scalar_like(0, x)));
  })};
  t["PRelu"] = {binary_fn([](const Tensor& x, const Tensor& slope, NodeCtx& c) {
    Tensor s = legacy_broadcast(x, slope, c);
    // Opset < 7 slopes of shape [C] apply per channel (dim 1).
    if (c.opset() < 7 && s.dim() == 1 && x.dim() > 2 && s.size(0).hint() == x.size(1).hint())
      for (int64_t k = 2; k < x.dim(); ++k) s = unsqueeze(s, -1);
    return cast_to(where(lt(x, Scalar(0)), mul(x, s), x), x.dtype());
  })};
  t["Identity"] = {unary_fn([](const Tensor& x, NodeCtx&) { return x; })};
  // ---- binary ----
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) t[op] = {binary_fn(arith)};
  t["Pow"] = {binary_fn(onnx_pow)};
  t["Mod"] = {binary_fn(onnx_mod)};
  t["Equal"] = {compare(eq)};
  t["Less"] = {compare(lt, true)};
  t["LessOrEqual"] = {compare(le, true)};
  t["Greater"] = {compare(gt, true)};
  t["GreaterOrEqual"] = {compare(ge, true)};
  t["And"] = {compare(logical_and)};
  t["Or"] = {compare(logical_or)};
  t["Xor"] = {compare(logical_xor)};
  t["BitwiseAnd"] = {compare(bitwise_and)};
  t["BitwiseOr"] = {compare(bitwise_or)};
  t["BitwiseXor"] = {compare(bitwise_xor)};
  t["BitShift"] = {binary_fn([](const Tensor& x, const Tensor& y, NodeCtx& c) {
    int32_t type = c.type(0);
    if (!onnx_type_unsigned(type)) c.fail(fmt::format("BitShift needs an unsigned type, got {}", proto::data_type_name(type)));
    bool left = c.attr_str("direction", "") == "LEFT";
    // Shifts by the width or more give 0 (numpy's result, which ONNX's reference uses).
    if (type == proto::kDtUInt64) return uint64_shift(x, y, left);
    return small_uint_shift(x, y, onnx_type_bits(type), left);
  })};
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) t[op] = {variadic(op)};
  t["Where"] = {[](NodeCtx& c) {
    Tensor r = where(cast_to(c.in(0), kBool), c.in(1), c.in(2));
    return std::vector<Tensor>{cast_to(r, c.in(1).dtype())};
  }};
  t["Clip"] = {[](NodeCtx& c) { return std::vector<Tensor>{clip(c)}; }};
  t["Cast"] = {[](NodeCtx& c) {
    int32_t to = static_cast<int32_t>(c.attr_int("to", 1));
    DType dto = to_dtype(to, "Cast 'to'");
    c.set_out_type(0, to);
    if (emulated_type(to) || emulated_type(c.type(0))) return std::vector<Tensor>{emulated_cast(c.in(0), c.type(0), to)};
    return std::vector<Tensor>{onnx_cast(c.in(0), dto)};
  }};
  t["CastLike"] = {[](NodeCtx& c) {
    int32_t to = c.type(1);
    c.set_out_type(0, to);
    if (emulated_type(to) || emulated_type(c.type(0))) return std::vector<Tensor>{emulated_cast(c.in(0), c.type(0), to)};
    return std::vector<Tensor>{onnx_cast(c.in(0), c.in(1).dtype())};
  }};
}

}  // namespace sinter::onnx
