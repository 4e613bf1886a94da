// One fuzz case: run a program eagerly on each size variant, then compiled under each configuration (backend x
// dynamic policy) on the same variants in order (so recompiles and symbolic entries are exercised), and compare.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <utility>

#include "fuzz.h"

namespace sinter::tools::fuzz {
namespace {

template <size_t>
using TensorAt = const Tensor&;

// The compiled program: a call, and how many calls so far ran eagerly instead (CompileStats::eager_fallbacks).
struct CallFn {
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> call;
  std::function<int()> fallbacks;
  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const { return call(in); }
};

template <size_t... I>
CallFn compiled_call(const Program& p, const Context& ctx, const CompileOptions& o, std::index_sequence<I...>) {
  auto f = [&p, &ctx](TensorAt<I>... a) { return run_program(p, ctx, std::vector<Tensor>{a...}); };
  auto c = compile(f, o);
  return {[c](const std::vector<Tensor>& in) { return c(in.at(I)...); }, [c] { return c.stats().eager_fallbacks; }};
}

CallFn make_compiled(const Program& p, const Context& ctx, const CompileOptions& o) {
  switch (p.num_args()) {
    case 1: return compiled_call(p, ctx, o, std::make_index_sequence<1>());
    case 2: return compiled_call(p, ctx, o, std::make_index_sequence<2>());
    case 3: return compiled_call(p, ctx, o, std::make_index_sequence<3>());
    case 4: return compiled_call(p, ctx, o, std::make_index_sequence<4>());
    case 5: return compiled_call(p, ctx, o, std::make_index_sequence<5>());
    case 6: return compiled_call(p, ctx, o, std::make_index_sequence<6>());
    case 7: return compiled_call(p, ctx, o, std::make_index_sequence<7>());
    case 8: return compiled_call(p, ctx, o, std::make_index_sequence<8>());
    default: throw Error(fmt::format("fuzz: {} arguments (at most 8)", p.num_args()));
  }
}

void mark_inputs(const Program& p, const std::vector<Tensor>& args) {
  size_t ai = 0;
  for (const auto& in : p.inputs) {
    if (in.is_param) continue;
    for (int d : in.dynamic) mark_dynamic(args.at(ai), d);
    ++ai;
  }
}

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}

int precision_of(DType t);
double machine_epsilon(int precision);

struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(DType t) {
  switch (t) {
    case kFloat64: return {1e-7, 1e-9};
    case kFloat32: return {1e-4, 1e-5};
    case kFloat16: return {1e-2, 1e-3};
    case kBFloat16: return {5e-2, 1e-2};
    default: return {0, 0};
  }
}

// Empty when equal; otherwise what differs. exact: bitwise (NaN equals NaN, -0 differs from 0).
// kind: set to "mismatch" (values), "meta-mismatch" (dtype or sizes) or "stride-mismatch".
// magnitude: the largest value the result was computed from (Taint::magnitude); a tolerant comparison allows an
// absolute error of a few roundings at that scale, which cancellation leaves in a small result.
std::string compare_tensor(const Tensor& want, const Tensor& got, bool exact, std::string* kind, int precision,
                           double magnitude = 0) {
  *kind = "meta-mismatch";
  if (!got.defined()) return "compiled output is undefined";
  if (want.dtype() != got.dtype()) {
    return fmt::format("dtype {} vs eager {}", dtype_name(got.dtype()), dtype_name(want.dtype()));
  }
  auto ws = want.sizes().hints(), gs = got.sizes().hints();
  if (ws != gs) {
    return fmt::format("sizes [{}] vs eager [{}]", fmt::join(gs, ", "), fmt::join(ws, ", "));
  }
  int64_t n = 1;
  for (int64_t s : ws) n *= s;
  if (n > 0) {
    auto wst = want.strides().hints(), gst = got.strides().hints();
    for (size_t d = 0; d < ws.size(); ++d) {
      if (ws[d] > 1 && wst[d] != gst[d]) {
        *kind = "stride-mismatch";
        return fmt::format("strides [{}] vs eager [{}] (sizes [{}])", fmt::join(gst, ", "), fmt::join(wst, ", "),
                           fmt::join(ws, ", "));
      }
    }
  }
  if (n == 0) return "";
  *kind = "mismatch";
  std::vector<double> w = want.to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> g = got.to(kFloat64).contiguous().to_vector<double>();
  // The tolerance of the least precise float the result depends on (see Taint).
  static const DType by_precision[] = {kBFloat16, kFloat16, kFloat32, kFloat64};
  DType tol_dtype = want.dtype();
  if (is_floating(tol_dtype) && precision < precision_of(tol_dtype)) tol_dtype = by_precision[precision];
  Tolerance tol = exact || !is_floating(want.dtype()) ? Tolerance{0, 0} : tolerance(tol_dtype);
  if (tol.rtol > 0) tol.atol = std::max(tol.atol, 2 * machine_epsilon(precision_of(tol_dtype)) * magnitude);
  for (int64_t i = 0; i < n; ++i) {
    double a = w[i], b = g[i];
    bool same;
    if (exact) same = std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
    else if (std::isnan(a) || std::isnan(b)) same = std::isnan(a) && std::isnan(b);
    else if (std::isinf(a) || std::isinf(b)) same = a == b;
    else same = std::abs(a - b) <= tol.atol + tol.rtol * std::abs(a);
    if (!same) {
      int64_t bad = 0;
      for (int64_t j = 0; j < n; ++j) {
        double x = w[j], y = g[j];
        bool eq = (std::isnan(x) && std::isnan(y)) || x == y ||
                  (!exact && std::abs(x - y) <= tol.atol + tol.rtol * std::abs(x));
        bad += !eq;
      }
      return fmt::format("element {} is {} vs eager {} ({} of {} elements differ, dtype {})", i, b, a, bad, n,
                         dtype_name(want.dtype()));
    }
  }
  return "";
}

// Inductor computes float16/bfloat16 in float32 inside a fused kernel and rounds only where it writes a buffer
// (DESIGN.md), so its results differ from eager's op-by-op rounding by about the low-precision epsilon, wherever
// a low-precision value flowed. Through a discontinuous op (floor, a comparison, fmod, argmax, a cast to an
// integer) that difference can flip a result entirely: such outputs are reported apart ("lowp-mismatch"). In
// float32 a flip needs an input within rounding of the discontinuity (0.99999994 cast to an integer, a quotient
// of remainder next to an integer): such outputs are "rounding-amplified", as are outputs eager itself computes
// further from the float64 result than the tolerance (rounding_amplified below).
// The sign of a NaN is unspecified (IEEE 754 leaves it to the implementation, and a vectorized kernel makes
// other NaNs than the C library): a copysign or signbit that reads a NaN's sign gives results eager and compiled
// code may disagree on ("nan-sign").
struct Taint {
  int precision = 3;  // the least precise float a value depends on: 0 bfloat16, 1 float16, 2 float32, 3 float64
  bool discontinuous = false;
  bool nan_sign = false;
  // The largest finite magnitude among the float values this one was computed from (itself included): rounding
  // errors are relative to it, so a result of cancellation (4.0 - 3.98) carries an error of its scale.
  double magnitude = 0;
};

bool has_nan(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.numel().hint() > 0 && any(isnan(t)).item<bool>();
}

double max_finite_abs(const Tensor& t) {
  if (!t.defined() || !is_floating(t.dtype()) || t.numel().hint() == 0) return 0;
  Tensor a = abs(t.to(kFloat64));
  return amax(where(isfinite(a), a, zeros_like(a)), {}, false).item<double>();
}

int precision_of(DType t) {
  if (t == kBFloat16) return 0;
  if (t == kFloat16) return 1;
  if (t == kFloat32) return 2;
  return 3;
}

double machine_epsilon(int precision) {
  static const double eps[] = {0x1p-7, 0x1p-10, 0x1p-23, 0x1p-52};
  return eps[precision];
}

bool is_discontinuous(const Step& s, const std::vector<Tensor>& values, int id) {
  static const std::vector<std::string> ops = {
      "floor", "ceil", "round", "trunc", "frac", "sign", "signbit", "fmod", "remainder", "floor_divide", "div_mode",
      "fmod_s", "remainder_s", "floor_divide_s", "eq", "ne", "lt", "le", "gt", "ge", "eq_s", "ne_s", "lt_s",
      "le_s", "gt_s", "ge_s", "argmax", "argmin", "max_dim", "min_dim", "isnan", "isinf", "isfinite", "break_narrow",
      "break_scale", "where", "where_ts", "where_st", "masked_fill", "masked_fill_", "all", "any", "logical_and",
      "logical_or", "logical_xor", "logical_not", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor",
      "bitwise_and_s", "copysign", "max_pool2d", "amax", "amin", "maximum", "minimum", "clamp", "clamp_", "clamp_t",
      "relu", "relu6", "hardtanh", "nan_to_num", "sort", "cummax",
      // Not discontinuous but amplifying: a low-precision exponent's rounding scales the result by base^eps.
      "pow"};
  if (std::find(ops.begin(), ops.end(), s.op) != ops.end()) return true;
  // A cast to an integer or bool is discontinuous.
  return s.op == "to" && !is_floating(values.at(id).dtype());
}

// Whether a float32 rounding-level change of the eager inputs of step `s` could flip its result: a value next to
// an integer (casts to integers, floor, ceil, trunc, frac, round, and the quotient of fmod, remainder,
// floor_divide and div_mode), operands of a comparison next to each other, a value next to 0 (sign, signbit, the
// count of break_narrow), values next to a tie (argmax, argmin, max_dim, min_dim, sort, cummax).
bool near_discontinuity(const Step& s, const std::vector<Tensor>& values, int id, double magnitude) {
  constexpr double kNear = 1e-4;  // relative; float32 rounding accumulated over a few ops stays well inside
  auto arg = [&](size_t k) { return values.at(s.args.at(k)).to(kFloat64); };
  auto floating_arg = [&](size_t k) { return k < s.args.size() && is_floating(values.at(s.args[k]).dtype()); };
  auto any_true = [](const Tensor& b) { return b.numel().hint() > 0 && any(b).item<bool>(); };
  auto near_integer = [&](const Tensor& q) {
    Tensor d = abs(q - round(q));
    return any_true(isfinite(q) & le(d, mul(maximum(abs(q), ones_like(q)), kNear)));
  };
  auto near_zero = [&](const Tensor& x) { return any_true(le(abs(x), kNear * std::max(magnitude, 1e-30))); };
  auto near_ties = [&](const Tensor& x) {
    if (x.numel().hint() < 2) return false;
    Tensor v = std::get<0>(sort(x.reshape({-1}), 0));
    int64_t n = v.numel().hint();
    Tensor gap = abs(v.slice(0, 1, n) - v.slice(0, 0, n - 1));
    return any_true(le(gap, kNear * std::max(max_finite_abs(x), 1e-30)));
  };
  const std::string& op = s.op;
  auto is = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (op == n) return true;
    return false;
  };
  if (op == "to") return !is_floating(values.at(id).dtype()) && floating_arg(0) && near_integer(arg(0));
  if (is({"floor", "ceil", "trunc", "frac"})) return floating_arg(0) && near_integer(arg(0));
  if (op == "round") return floating_arg(0) && near_integer(mul(arg(0), 2.0));
  if (is({"fmod", "remainder", "floor_divide", "div_mode"}))
    return (floating_arg(0) || floating_arg(1)) && near_integer(div(arg(0), arg(1)));
  if (is({"fmod_s", "remainder_s", "floor_divide_s"}))
    return floating_arg(0) && !s.reals.empty() && near_integer(div(arg(0), s.reals[0]));
  if (is({"eq", "ne", "lt", "le", "gt", "ge"})) {
    if (!floating_arg(0) && !floating_arg(1)) return false;
    Tensor a = arg(0), b = arg(1);
    return any_true(le(abs(a - b), mul(abs(a) + abs(b), kNear)) & isfinite(a) & isfinite(b));
  }
  if (is({"eq_s", "ne_s", "lt_s", "le_s", "gt_s", "ge_s"})) {
    if (!floating_arg(0) || s.reals.empty()) return false;
    Tensor a = arg(0);
    return any_true(le(abs(a - s.reals[0]), add(abs(a), std::abs(s.reals[0])) * kNear) & isfinite(a));
  }
  if (is({"sign", "signbit"})) return floating_arg(0) && near_zero(arg(0));
  // A singularity at zero: an argument within rounding of 0 (a sum that cancels) is 0 in one rounding, +-tiny in
  // another, and its log is -inf, a large negative number or NaN accordingly.
  if (is({"log", "log2", "log10", "reciprocal", "rsqrt"})) return floating_arg(0) && near_zero(arg(0));
  if (op == "break_narrow") return floating_arg(1) && near_zero(arg(1));
  if (is({"argmax", "argmin", "max_dim", "min_dim", "sort", "cummax"})) return floating_arg(0) && near_ties(arg(0));
  return false;
}

std::vector<Taint> taints(const Program& p, const std::vector<Tensor>& values) {
  std::vector<Taint> t(values.size());
  size_t n_in = p.inputs.size();
  for (size_t i = 0; i < values.size(); ++i) {
    t[i].precision = is_floating(values[i].dtype()) ? precision_of(values[i].dtype()) : 3;
    t[i].magnitude = max_finite_abs(values[i]);
    if (i < n_in) continue;
    const Step& s = p.steps[i - n_in];
    for (int a : s.args) {
      t[i].precision = std::min(t[i].precision, t[a].precision);
      t[i].discontinuous |= t[a].discontinuous;
      t[i].nan_sign |= t[a].nan_sign;
      t[i].magnitude = std::max(t[i].magnitude, t[a].magnitude);
    }
    const int sign_arg = s.op == "copysign" ? 1 : s.op == "signbit" ? 0 : -1;
    if (sign_arg >= 0 && has_nan(values.at(s.args.at(sign_arg)))) t[i].nan_sign = true;
    if (t[i].precision < 2 && is_discontinuous(s, values, static_cast<int>(i))) t[i].discontinuous = true;
    if (t[i].precision == 2 && near_discontinuity(s, values, static_cast<int>(i), t[i].magnitude))
      t[i].discontinuous = true;
    // In-place steps write their first argument's storage: whatever reads it later sees the taint. (Crudely: the
    // program's arguments after the call take the taint of every value, below.)
  }
  return t;
}

// The program run in float64 on the same input values (every float input, parameter, module weight and float
// cast made float64): the exact result the float outputs approximate. Empty when it cannot run so.
// With `jitter` (a seed, and each value's precision as Taint has it), every float step result is first moved by
// a random relative amount of up to its precision's epsilon, about the rounding error a float32 (or lower) kernel
// leaves there: how far that moves an output is how far two correct roundings of the program may lie apart.
struct Jitter {
  uint64_t seed = 0;
  std::vector<int> precision;  // per value id
};
std::vector<Tensor> reference64(const Program& p, int v, const Jitter* jitter = nullptr) {
  try {
    Program q = p;
    for (Step& s : q.steps)
      if (s.op == "to" && is_floating(static_cast<DType>(s.ints.at(0)))) s.ints[0] = static_cast<int64_t>(kFloat64);
    auto widen = [](const Tensor& t) { return is_floating(t.dtype()) ? t.to(kFloat64) : t; };
    Context ctx = make_context(p);
    for (Tensor& t : ctx.params) t = widen(t);
    for (auto& m : ctx.modules) m->to(kFloat64);
    std::vector<Tensor> args = make_inputs(p, v);
    for (Tensor& t : args) t = widen(t);
    StepHook after;
    std::mt19937_64 rng(jitter ? jitter->seed : 0);
    if (jitter) {
      after = [&](size_t id, const Tensor& r) {
        if (!r.defined() || !is_floating(r.dtype()) || id >= jitter->precision.size() ||
            jitter->precision[id] >= 3)
          return r;
        std::vector<double> u(static_cast<size_t>(r.numel().hint()));
        std::uniform_real_distribution<double> unit(-1.0, 1.0);
        for (double& x : u) x = 1 + machine_epsilon(jitter->precision[id]) * unit(rng);
        return mul(r, from_vector<double>(u, r.sizes(), r.dtype()));
      };
    }
    std::vector<Tensor> out = run_program(q, ctx, args, nullptr, after);
    out.insert(out.end(), args.begin(), args.end());
    return out;
  } catch (const std::exception&) {
    return {};
  }
}

// Per result of reference64: how far float32-scale rounding jitter moves each element, the largest of a few
// jittered runs (undefined where a run failed or the result is not float).
std::vector<Tensor> rounding_spread(const Program& p, int v, const std::vector<Taint>& taint,
                                    const std::vector<Tensor>& exact) {
  Jitter j;
  for (const Taint& t : taint) j.precision.push_back(t.precision);
  std::vector<Tensor> spread(exact.size());
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    j.seed = seed;
    std::vector<Tensor> moved = reference64(p, v, &j);
    if (moved.size() != exact.size()) return {};
    for (size_t k = 0; k < exact.size(); ++k) {
      if (!exact[k].defined() || !is_floating(exact[k].dtype())) continue;
      Tensor d = abs(moved[k].to(kFloat64) - exact[k].to(kFloat64));
      d = where(isnan(d), zeros_like(d), d);
      spread[k] = spread[k].defined() ? maximum(spread[k], d) : d;
    }
  }
  return spread;
}

// Whether every element where `got` and `want` (eager) differ is one where eager is itself further from the
// float64 result `exact` than the output's tolerance (the program amplifies rounding there: a remainder of a
// large value, a variance of nearly equal values, an overflow of a low-precision intermediate), or where got is
// about as close to `exact` as eager is, or where the two lie within twice what rounding jitter moves the element
// (`spread`, from rounding_spread): which of two roundings is right is beyond a float comparison
// ("rounding-amplified").
bool rounding_amplified(const Tensor& want, const Tensor& got, const Tensor& exact, const Tensor& spread) {
  if (!exact.defined() || !is_floating(want.dtype()) || exact.sizes().hints() != want.sizes().hints()) return false;
  std::vector<double> w = want.to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> g = got.to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> r = exact.to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> jit = spread.defined() && spread.sizes().hints() == want.sizes().hints()
                                ? spread.contiguous().to_vector<double>()
                                : std::vector<double>(w.size(), 0.0);
  Tolerance tol = tolerance(want.dtype());
  auto close = [&](double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return std::abs(a - b) <= tol.atol + tol.rtol * std::abs(b);
  };
  bool any = false;
  for (size_t i = 0; i < w.size(); ++i) {
    if (close(g[i], w[i])) continue;
    // Within what rounding jitter of the intermediate values moves this element (a remainder by a divisor that
    // cancellation made small, a difference of nearly equal values): either rounding is as right as the other.
    if (std::abs(g[i] - w[i]) <= 2 * jit[i]) {
      any = true;
      continue;
    }
    // Compiled code at least about as accurate as eager (inductor's gelu is more accurate in the tail, where
    // eager's 1 + erf cancels) differs from eager only by eager's own error.
    const double eager_error = std::abs(w[i] - r[i]), error = std::abs(g[i] - r[i]);
    const bool as_accurate = std::isfinite(error) && error <= 2 * eager_error + tol.atol / 10;
    if (close(w[i], r[i]) && !as_accurate) return false;  // eager is accurate here and compiled is not
    any = true;
  }
  return any;
}

}  // namespace

namespace {

// A CPU copy of `t` with its sizes, strides and offset (to() would make a dense copy): the span of storage its
// elements lie in, copied as one 1-d view, then viewed as `t` is.
Tensor to_host_keeping_layout(const Tensor& t) {
  int64_t lo = t.storage_offset().hint(), hi = lo;
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t extent = (t.size(d).hint() - 1) * t.stride(d).hint();
    (extent < 0 ? lo : hi) += extent;
  }
  if (t.numel().hint() == 0) return t.cpu();
  Tensor span = t.as_strided({hi - lo + 1}, {1}, lo).cpu();
  return span.as_strided(t.sizes(), t.strides(), t.storage_offset().hint() - lo);
}

}  // namespace

std::string Config::str() const {
  return fmt::format("{}/{}{}", backend, dynamic_always ? "always" : "auto", device.is_cpu() ? "" : "@" + device.str());
}

bool is_finding(const std::string& kind) { return kind != "ok" && kind != "invalid"; }

CaseResult run_case(const Program& p, const std::vector<Config>& configs) {
  int nv = p.num_variants();
  // Eager reference per variant: the outputs, then the arguments as the program left them (it may write them).
  std::vector<std::vector<Tensor>> ref(nv);
  std::vector<bool> valid(nv, false);
  std::vector<std::vector<Taint>> taint(nv);
  std::vector<std::vector<Tensor>> ref64(nv);  // float64 references, made when a comparison needs one
  std::vector<std::vector<Tensor>> spread64(nv);  // rounding_spread of each, made with it
  std::vector<bool> have64(nv, false);
  for (int v = 0; v < nv; ++v) {
    try {
      Context ctx = make_context(p);
      std::vector<Tensor> args = make_inputs(p, v);
      std::vector<Tensor> values;
      ref[v] = run_program(p, ctx, args, &values);
      taint[v] = taints(p, values);
      ref[v].insert(ref[v].end(), args.begin(), args.end());
      valid[v] = true;
    } catch (const Error& e) {
      if (v == 0) return {"invalid", "", -1, one_line(e.what())};
    } catch (const std::exception& e) {
      return {"eager-internal-error", "eager-reference", v, one_line(e.what())};
    }
  }
  for (const Config& c : configs) {
    Context ctx = make_context(p, c.device);
    CompileOptions o;
    o.backend = c.backend;
    o.dynamic = c.dynamic_always ? Dynamic::kAlways : Dynamic::kAuto;
    o.freeze = p.freeze;
    CallFn fn = make_compiled(p, ctx, o);
    // On a GPU even eager ops are other kernels (CUDA's math library, other summation orders): compared within
    // rounding, as the inductor is.
    bool exact = c.backend != "inductor" && c.device.is_cpu();
    for (int v = 0; v < nv; ++v) {
      if (!valid[v]) continue;
      std::vector<Tensor> args = make_inputs(p, v, c.device);
      mark_inputs(p, args);
      std::vector<Tensor> got;
      try {
        got = fn(args);
      } catch (const InternalError& e) {
        return {"internal-error", c.str(), v, one_line(e.what())};
      } catch (const Error& e) {
        return {"compile-error", c.str(), v, one_line(e.what())};
      } catch (const std::exception& e) {
        return {"internal-error", c.str(), v, one_line(e.what())};
      }
      // A compiled function never falls back with three variants and the default recompile limit, unless its
      // backend failed: the host compiler on generated code, which sinter must generate differently.
      if (fn.fallbacks() > 0)
        return {"compiler-fallback", c.str(), v, "a compiled graph ran on aot_eager instead (its backend failed)"};
      got.insert(got.end(), args.begin(), args.end());
      if (!c.device.is_cpu())
        for (Tensor& t : got)
          if (t.defined()) t = to_host_keeping_layout(t);
      if (got.size() != ref[v].size()) {
        return {"mismatch", c.str(), v, fmt::format("{} results vs eager {}", got.size(), ref[v].size())};
      }
      for (size_t k = 0; k < got.size(); ++k) {
        std::string kind = "mismatch", d;
        // The taint of this result: an output's own; an argument's, every value's (in-place writes reach it).
        Taint t;
        if (k < p.outputs.size()) {
          t = taint[v].at(p.outputs[k]);
        } else {
          for (const Taint& x : taint[v]) {
            t.precision = std::min(t.precision, x.precision);
            t.discontinuous |= x.discontinuous;
            t.nan_sign |= x.nan_sign;
            t.magnitude = std::max(t.magnitude, x.magnitude);
          }
        }
        try {
          d = compare_tensor(ref[v][k], got[k], exact, &kind, t.precision, t.magnitude);
          if (kind == "mismatch" && !d.empty()) {
            if (!have64[v]) {
              ref64[v] = reference64(p, v);
              spread64[v] = rounding_spread(p, v, taint[v], ref64[v]);
              have64[v] = true;
            }
            // An exact backend (aot_eager) that differs by rounding only: its kernels ran on values laid out
            // otherwise than eager's (a write into a strided input becomes a fresh dense value), and a
            // reduction's summation order follows the layout.
            std::string inexact;
            if (exact && compare_tensor(ref[v][k], got[k], false, &inexact, t.precision, t.magnitude).empty())
              kind = "rounding-mismatch";
            else if (t.nan_sign) kind = "nan-sign";
            else if (!exact && t.discontinuous) kind = t.precision < 2 ? "lowp-mismatch" : "rounding-amplified";
            else if (k < ref64[v].size() &&
                     rounding_amplified(ref[v][k], got[k], ref64[v][k],
                                        k < spread64[v].size() ? spread64[v][k] : Tensor()))
              kind = "rounding-amplified";
          }
        } catch (const std::exception& e) {
          d = std::string("comparing threw: ") + e.what();
        }
        if (!d.empty()) {
          size_t n_out = p.outputs.size();
          std::string what = k < n_out ? fmt::format("output {} (v{})", k, p.outputs[k])
                                       : fmt::format("argument {} after the call", k - n_out);
          return {kind, c.str(), v, one_line(what + ": " + d)};
        }
      }
    }
  }
  return {"ok", "", -1, ""};
}

}  // namespace sinter::tools::fuzz
