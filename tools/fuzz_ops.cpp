// The fuzzer's steps: how each one runs (on real or traced tensors) and how it reads as C++. The meaning of a
// step's ints and reals is written beside each op; tools/fuzz_gen.cpp draws them.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <unordered_map>

#include "fuzz_program.h"

namespace sinter::tools::fuzz {
namespace {

using Values = std::vector<Tensor>;
using UnaryFn = Tensor (*)(const Tensor&, Loc);
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, Loc);
using BinaryScalarFn = Tensor (*)(const Tensor&, const Scalar&, Loc);

const std::unordered_map<std::string, UnaryFn>& unary_table() {
  static const std::unordered_map<std::string, UnaryFn> t = {
#define U(n) {#n, static_cast<UnaryFn>(&sinter::n)},
      U(abs) U(neg) U(sign) U(sqrt) U(rsqrt) U(exp) U(exp2) U(expm1) U(log) U(log2) U(log10) U(log1p) U(sin) U(cos)
      U(tan) U(asin) U(acos) U(atan) U(sinh) U(cosh) U(tanh) U(asinh) U(acosh) U(atanh) U(sigmoid) U(relu) U(silu)
      U(mish) U(erf) U(erfc) U(erfinv) U(floor) U(ceil) U(round) U(trunc) U(frac) U(reciprocal) U(square)
      U(logical_not) U(bitwise_not) U(isnan) U(isinf) U(isfinite) U(hardsigmoid) U(hardswish) U(selu) U(lgamma)
      U(digamma) U(signbit) U(relu6)
#undef U
  };
  return t;
}

const std::unordered_map<std::string, BinaryFn>& binary_table() {
  static const std::unordered_map<std::string, BinaryFn> t = {
#define B(n) {#n, static_cast<BinaryFn>(&sinter::n)},
      B(mul) B(div) B(fmod) B(remainder) B(eq) B(ne) B(lt) B(le) B(gt) B(ge) B(bitwise_and) B(bitwise_or)
      B(bitwise_xor) B(floor_divide) B(atan2) B(maximum) B(minimum) B(logical_and) B(logical_or) B(logical_xor)
      B(hypot) B(copysign)
#undef B
  };
  return t;
}

const std::unordered_map<std::string, BinaryScalarFn>& binary_scalar_table() {
  static const std::unordered_map<std::string, BinaryScalarFn> t = {
#define B(n) {#n "_s", static_cast<BinaryScalarFn>(&sinter::n)},
      B(mul) B(div) B(fmod) B(remainder) B(eq) B(ne) B(lt) B(le) B(gt) B(ge) B(bitwise_and) B(bitwise_or)
      B(bitwise_xor) B(floor_divide)
#undef B
  };
  return t;
}

// A scalar is stored as a kind (ints[k]: 0 double, 1 int, 2 bool) and a value (reals[k]).
Scalar scalar_at(const Step& s, size_t k) {
  int64_t kind = s.ints.at(k);
  double v = s.reals.at(k);
  if (kind == 1) return Scalar(static_cast<int64_t>(v));
  if (kind == 2) return Scalar(v != 0);
  return Scalar(v);
}

std::string real_cpp(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string scalar_cpp(const Step& s, size_t k) {
  int64_t kind = s.ints.at(k);
  double v = s.reals.at(k);
  if (kind == 1) return fmt::format("{}", static_cast<int64_t>(v));
  if (kind == 2) return v != 0 ? "true" : "false";
  return real_cpp(v);
}

DimList dims_from(const Step& s, size_t first) { return DimList(std::vector<int64_t>(s.ints.begin() + first, s.ints.end())); }

std::string list_cpp(const std::vector<int64_t>& v) {
  return fmt::format("{{{}}}", fmt::join(v, ", "));
}
std::string dims_cpp(const Step& s, size_t first) {
  return list_cpp(std::vector<int64_t>(s.ints.begin() + first, s.ints.end()));
}

int64_t wrap_dim(int64_t d, int64_t rank) { return d < 0 ? d + std::max<int64_t>(rank, 1) : d; }

// x.size(d), with the range check PyTorch makes (an IndexError there): the programs' host code asks for sizes.
SymInt checked_size(const Tensor& x, int64_t d) {
  int64_t r = std::max<int64_t>(x.dim(), 1);
  SINTER_CHECK(x.dim() > 0 && d >= -r && d < r, "fuzz: size({}) of a tensor of rank {}", d, x.dim());
  return x.size(d);
}

// Size-dependent lengths (x.size(d) / 2 ...): computed on SymInts, so symbolic entries keep them symbolic.
SymInt size_expr(const Tensor& x, int64_t dim, int64_t mode, int64_t value) {
  if (mode == 0) return value;
  SymInt n = checked_size(x, dim);
  if (mode == 1) return n / 2;
  if (mode == 2) return n - value;
  return n - 1;
}
std::string size_expr_cpp(const std::string& x, int64_t dim, int64_t mode, int64_t value) {
  if (mode == 0) return fmt::format("{}", value);
  if (mode == 1) return fmt::format("{}.size({}) / 2", x, dim);
  if (mode == 2) return fmt::format("{}.size({}) - {}", x, dim, value);
  return fmt::format("{}.size({}) - 1", x, dim);
}

// reshape / view targets: 0 {-1}; 1 {size(0), -1}; 2 {-1, size(last)}; 3 the literal sizes in ints[1..].
SymIntList shape_target(const Tensor& x, const Step& s) {
  switch (s.ints.at(0)) {
    case 0: return {-1};
    case 1: return {checked_size(x, 0), -1};
    case 2: return {-1, checked_size(x, -1)};
    default: return SymIntList(std::vector<int64_t>(s.ints.begin() + 1, s.ints.end()));
  }
}
std::string shape_target_cpp(const std::string& x, const Step& s) {
  switch (s.ints.at(0)) {
    case 0: return "{-1}";
    case 1: return fmt::format("{{{}.size(0), -1}}", x);
    case 2: return fmt::format("{{-1, {}.size(-1)}}", x);
    default: return dims_cpp(s, 1);
  }
}

// unflatten(dim, ...): 0 {k, -1}; 1 {-1, k}.
SymIntList unflatten_target(const Step& s) {
  int64_t k = s.ints.at(2);
  return s.ints.at(1) == 0 ? SymIntList{k, -1} : SymIntList{-1, k};
}

// A host value read in the middle of the program (a graph break) that feeds a scalar.
double break_scale(const Tensor& b) {
  double v = sinter::sum(b.to(kFloat64)).item<double>();
  if (!std::isfinite(v)) v = 0;
  return 1.0 / (1.0 + std::abs(v));
}

using RunFn = std::function<Tensor(const Values& a, const Step& s, const Context& ctx)>;
using CppFn = std::function<std::string(const std::vector<std::string>& a, const Step& s)>;
struct OpImpl {
  RunFn run;
  CppFn cpp;
};

std::unordered_map<std::string, OpImpl> build_ops() {
  std::unordered_map<std::string, OpImpl> m;
  auto add = [&](const std::string& name, RunFn run, CppFn cpp) { m[name] = {std::move(run), std::move(cpp)}; };
  using S = const Step&;
  using A = const Values&;
  using N = const std::vector<std::string>&;
  using C = const Context&;

  // ---- pointwise with parameters ----
  add("gelu", [](A a, S s, C) { return gelu(a[0], s.ints.at(0) ? "tanh" : "none"); },
      [](N a, S s) { return fmt::format("gelu({}, \"{}\")", a[0], s.ints.at(0) ? "tanh" : "none"); });
  add("leaky_relu", [](A a, S s, C) { return leaky_relu(a[0], s.reals.at(0)); },
      [](N a, S s) { return fmt::format("leaky_relu({}, {})", a[0], real_cpp(s.reals.at(0))); });
  add("softplus", [](A a, S s, C) { return softplus(a[0], s.reals.at(0), s.reals.at(1)); },
      [](N a, S s) { return fmt::format("softplus({}, {}, {})", a[0], real_cpp(s.reals.at(0)), real_cpp(s.reals.at(1))); });
  add("hardtanh", [](A a, S s, C) { return hardtanh(a[0], s.reals.at(0), s.reals.at(1)); },
      [](N a, S s) { return fmt::format("hardtanh({}, {}, {})", a[0], real_cpp(s.reals.at(0)), real_cpp(s.reals.at(1))); });
  add("nan_to_num", [](A a, S s, C) { return nan_to_num(a[0], s.reals.at(0), s.reals.at(1), s.reals.at(2)); },
      [](N a, S s) {
        return fmt::format("nan_to_num({}, {}, {}, {})", a[0], real_cpp(s.reals.at(0)), real_cpp(s.reals.at(1)),
                           real_cpp(s.reals.at(2)));
      });
  // clamp: ints[0] 0 both, 1 min only, 2 max only; reals min, max.
  add("clamp", [](A a, S s, C) {
        OptScalar lo = s.ints.at(0) == 2 ? OptScalar{} : OptScalar{s.reals.at(0)};
        OptScalar hi = s.ints.at(0) == 1 ? OptScalar{} : OptScalar{s.reals.at(1)};
        return clamp(a[0], lo, hi);
      },
      [](N a, S s) {
        std::string lo = s.ints.at(0) == 2 ? "std::nullopt" : real_cpp(s.reals.at(0));
        std::string hi = s.ints.at(0) == 1 ? "std::nullopt" : real_cpp(s.reals.at(1));
        return fmt::format("clamp({}, {}, {})", a[0], lo, hi);
      });
  // ---- binary ----
  add("add", [](A a, S s, C) { return sinter::add(a[0], a[1], scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("add({}, {}, {})", a[0], a[1], scalar_cpp(s, 0)); });
  add("sub", [](A a, S s, C) { return sinter::sub(a[0], a[1], scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("sub({}, {}, {})", a[0], a[1], scalar_cpp(s, 0)); });
  add("add_s", [](A a, S s, C) { return sinter::add(a[0], scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("add({}, {})", a[0], scalar_cpp(s, 0)); });
  add("sub_s", [](A a, S s, C) { return sinter::sub(a[0], scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("sub({}, {})", a[0], scalar_cpp(s, 0)); });
  add("rsub_s", [](A a, S s, C) { return rsub(a[0], scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("rsub({}, {})", a[0], scalar_cpp(s, 0)); });
  add("pow", [](A a, S, C) { return sinter::pow(a[0], a[1]); },
      [](N a, S) { return fmt::format("pow({}, {})", a[0], a[1]); });
  add("pow_s", [](A a, S s, C) { return sinter::pow(a[0], scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("pow({}, {})", a[0], scalar_cpp(s, 0)); });
  add("pow_rs", [](A a, S s, C) { return sinter::pow(scalar_at(s, 0), a[0]); },
      [](N a, S s) { return fmt::format("pow(Scalar({}), {})", scalar_cpp(s, 0), a[0]); });
  // div with a rounding mode: ints[0] 0 trunc, 1 floor.
  add("div_mode", [](A a, S s, C) { return sinter::div(a[0], a[1], std::string(s.ints.at(0) ? "floor" : "trunc")); },
      [](N a, S s) {
        return fmt::format("div({}, {}, std::string(\"{}\"))", a[0], a[1], s.ints.at(0) ? "floor" : "trunc");
      });
  // ---- ternary ----
  add("where", [](A a, S, C) { return where(a[0], a[1], a[2]); },
      [](N a, S) { return fmt::format("where({}, {}, {})", a[0], a[1], a[2]); });
  add("where_ts", [](A a, S s, C) { return where(a[0], a[1], scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("where({}, {}, Scalar({}))", a[0], a[1], scalar_cpp(s, 0)); });
  add("where_st", [](A a, S s, C) { return where(a[0], scalar_at(s, 0), a[1]); },
      [](N a, S s) { return fmt::format("where({}, Scalar({}), {})", a[0], scalar_cpp(s, 0), a[1]); });
  add("lerp", [](A a, S s, C) { return lerp(a[0], a[1], s.reals.at(0)); },
      [](N a, S s) { return fmt::format("lerp({}, {}, {})", a[0], a[1], real_cpp(s.reals.at(0))); });
  add("addcmul", [](A a, S s, C) { return addcmul(a[0], a[1], a[2], s.reals.at(0)); },
      [](N a, S s) { return fmt::format("addcmul({}, {}, {}, {})", a[0], a[1], a[2], real_cpp(s.reals.at(0))); });
  add("addcdiv", [](A a, S s, C) { return addcdiv(a[0], a[1], a[2], s.reals.at(0)); },
      [](N a, S s) { return fmt::format("addcdiv({}, {}, {}, {})", a[0], a[1], a[2], real_cpp(s.reals.at(0))); });
  add("clamp_t", [](A a, S, C) { return clamp(a[0], a[1], a[2]); },
      [](N a, S) { return fmt::format("clamp({}, {}, {})", a[0], a[1], a[2]); });
  add("masked_fill", [](A a, S s, C) { return masked_fill(a[0], a[1], scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("masked_fill({}, {}, {})", a[0], a[1], scalar_cpp(s, 0)); });
  // ---- casts and copies ----
  add("to", [](A a, S s, C) { return a[0].to(static_cast<DType>(s.ints.at(0))); },
      [](N a, S s) { return fmt::format("{}.to({})", a[0], dtype_enum_name(static_cast<DType>(s.ints.at(0)))); });
  add("clone", [](A a, S, C) { return a[0].clone(); }, [](N a, S) { return fmt::format("{}.clone()", a[0]); });
  add("contiguous", [](A a, S, C) { return a[0].contiguous(); },
      [](N a, S) { return fmt::format("{}.contiguous()", a[0]); });
  // ---- reductions: sum/mean ints [all, keepdim, dims...] ----
  for (std::string name : {"sum", "mean"}) {
    bool is_sum = name == "sum";
    add(name, [is_sum](A a, S s, C) {
          if (s.ints.at(0)) return is_sum ? sinter::sum(a[0]) : sinter::mean(a[0]);
          OptDims d = dims_from(s, 2);
          return is_sum ? sinter::sum(a[0], d, s.ints.at(1) != 0) : sinter::mean(a[0], d, s.ints.at(1) != 0);
        },
        [name](N a, S s) {
          if (s.ints.at(0)) return fmt::format("{}({})", name, a[0]);
          return fmt::format("{}({}, DimList{}, {})", name, a[0], dims_cpp(s, 2), s.ints.at(1) ? "true" : "false");
        });
  }
  // amax/amin/logsumexp: ints [keepdim, dims...]
  add("amax", [](A a, S s, C) { return amax(a[0], dims_from(s, 1), s.ints.at(0) != 0); },
      [](N a, S s) { return fmt::format("amax({}, {}, {})", a[0], dims_cpp(s, 1), s.ints.at(0) ? "true" : "false"); });
  add("amin", [](A a, S s, C) { return amin(a[0], dims_from(s, 1), s.ints.at(0) != 0); },
      [](N a, S s) { return fmt::format("amin({}, {}, {})", a[0], dims_cpp(s, 1), s.ints.at(0) ? "true" : "false"); });
  add("logsumexp", [](A a, S s, C) { return logsumexp(a[0], dims_from(s, 1), s.ints.at(0) != 0); },
      [](N a, S s) {
        return fmt::format("logsumexp({}, {}, {})", a[0], dims_cpp(s, 1), s.ints.at(0) ? "true" : "false");
      });
  // var/std: ints [keepdim, correction, dims...]
  for (std::string name : {"var", "std"}) {
    bool is_var = name == "var";
    add(name, [is_var](A a, S s, C) {
          OptDims d = dims_from(s, 2);
          OptScalar corr = Scalar(s.ints.at(1));
          return is_var ? sinter::var(a[0], d, corr, s.ints.at(0) != 0) : sinter::std(a[0], d, corr, s.ints.at(0) != 0);
        },
        [name](N a, S s) {
          return fmt::format("{}({}, DimList{}, {}, {})", name, a[0], dims_cpp(s, 2), s.ints.at(1),
                             s.ints.at(0) ? "true" : "false");
        });
  }
  // prod/argmax/argmin: ints [all, dim, keepdim]
  add("prod", [](A a, S s, C) { return s.ints.at(0) ? prod(a[0]) : prod(a[0], s.ints.at(1), s.ints.at(2) != 0); },
      [](N a, S s) {
        if (s.ints.at(0)) return fmt::format("prod({})", a[0]);
        return fmt::format("prod({}, {}, {})", a[0], s.ints.at(1), s.ints.at(2) ? "true" : "false");
      });
  for (std::string name : {"argmax", "argmin"}) {
    bool is_max = name == "argmax";
    add(name, [is_max](A a, S s, C) {
          std::optional<int64_t> d;
          if (!s.ints.at(0)) d = s.ints.at(1);
          return is_max ? argmax(a[0], d, s.ints.at(2) != 0) : argmin(a[0], d, s.ints.at(2) != 0);
        },
        [name](N a, S s) {
          if (s.ints.at(0)) return fmt::format("{}({})", name, a[0]);
          return fmt::format("{}({}, {}, {})", name, a[0], s.ints.at(1), s.ints.at(2) ? "true" : "false");
        });
  }
  // max/min along a dim: ints [dim, keepdim, which (0 values, 1 indices)]
  for (std::string name : {"max_dim", "min_dim"}) {
    bool is_max = name == "max_dim";
    add(name, [is_max](A a, S s, C) {
          auto r = is_max ? sinter::max(a[0], s.ints.at(0), s.ints.at(1) != 0)
                          : sinter::min(a[0], s.ints.at(0), s.ints.at(1) != 0);
          return s.ints.at(2) ? std::get<1>(r) : std::get<0>(r);
        },
        [is_max](N a, S s) {
          return fmt::format("std::get<{}>({}({}, {}, {}))", s.ints.at(2), is_max ? "max" : "min", a[0], s.ints.at(0),
                             s.ints.at(1) ? "true" : "false");
        });
  }
  // all/any: ints [all, keepdim, dims...]
  for (std::string name : {"all", "any"}) {
    bool is_all = name == "all";
    add(name, [is_all](A a, S s, C) {
          if (s.ints.at(0)) return is_all ? sinter::all(a[0]) : sinter::any(a[0]);
          return is_all ? sinter::all(a[0], dims_from(s, 2), s.ints.at(1) != 0)
                        : sinter::any(a[0], dims_from(s, 2), s.ints.at(1) != 0);
        },
        [name](N a, S s) {
          if (s.ints.at(0)) return fmt::format("{}({})", name, a[0]);
          return fmt::format("{}({}, {}, {})", name, a[0], dims_cpp(s, 2), s.ints.at(1) ? "true" : "false");
        });
  }
  // softmax family and scans: ints [dim]
  add("softmax", [](A a, S s, C) { return softmax(a[0], s.ints.at(0)); },
      [](N a, S s) { return fmt::format("softmax({}, {})", a[0], s.ints.at(0)); });
  add("log_softmax", [](A a, S s, C) { return log_softmax(a[0], s.ints.at(0)); },
      [](N a, S s) { return fmt::format("log_softmax({}, {})", a[0], s.ints.at(0)); });
  add("cumsum", [](A a, S s, C) { return cumsum(a[0], s.ints.at(0)); },
      [](N a, S s) { return fmt::format("cumsum({}, {})", a[0], s.ints.at(0)); });
  add("cumprod", [](A a, S s, C) { return cumprod(a[0], s.ints.at(0)); },
      [](N a, S s) { return fmt::format("cumprod({}, {})", a[0], s.ints.at(0)); });
  // ---- views ----
  // slice: ints [dim, start, end, step]
  add("slice", [](A a, S s, C) { return a[0].slice(s.ints.at(0), s.ints.at(1), s.ints.at(2), s.ints.at(3)); },
      [](N a, S s) {
        std::string end = s.ints.at(2) == INT64_MAX ? "INT64_MAX" : fmt::format("{}", s.ints.at(2));
        return fmt::format("{}.slice({}, {}, {}, {})", a[0], s.ints.at(0), s.ints.at(1), end, s.ints.at(3));
      });
  // narrow: ints [dim, start, length mode, length value] (mode: 0 value, 1 size/2, 2 size - value, 3 size - 1)
  add("narrow", [](A a, S s, C) {
        return a[0].narrow(s.ints.at(0), s.ints.at(1), size_expr(a[0], s.ints.at(0), s.ints.at(2), s.ints.at(3)));
      },
      [](N a, S s) {
        return fmt::format("{}.narrow({}, {}, {})", a[0], s.ints.at(0), s.ints.at(1),
                           size_expr_cpp(a[0], s.ints.at(0), s.ints.at(2), s.ints.at(3)));
      });
  add("select", [](A a, S s, C) { return a[0].select(s.ints.at(0), s.ints.at(1)); },
      [](N a, S s) { return fmt::format("{}.select({}, {})", a[0], s.ints.at(0), s.ints.at(1)); });
  // chunk/split/unbind pick one piece: ints [n or size, dim, piece] / [dim, piece]
  add("chunk", [](A a, S s, C) { return a[0].chunk(s.ints.at(0), s.ints.at(1)).at(s.ints.at(2)); },
      [](N a, S s) { return fmt::format("{}.chunk({}, {})[{}]", a[0], s.ints.at(0), s.ints.at(1), s.ints.at(2)); });
  add("split", [](A a, S s, C) { return a[0].split(SymInt(s.ints.at(0)), s.ints.at(1)).at(s.ints.at(2)); },
      [](N a, S s) {
        return fmt::format("{}.split(SymInt({}), {})[{}]", a[0], s.ints.at(0), s.ints.at(1), s.ints.at(2));
      });
  add("unbind", [](A a, S s, C) { return a[0].unbind(s.ints.at(0)).at(s.ints.at(1)); },
      [](N a, S s) { return fmt::format("{}.unbind({})[{}]", a[0], s.ints.at(0), s.ints.at(1)); });
  add("reshape", [](A a, S s, C) { return a[0].reshape(shape_target(a[0], s)); },
      [](N a, S s) { return fmt::format("{}.reshape({})", a[0], shape_target_cpp(a[0], s)); });
  add("view", [](A a, S s, C) { return a[0].view(shape_target(a[0], s)); },
      [](N a, S s) { return fmt::format("{}.view({})", a[0], shape_target_cpp(a[0], s)); });
  add("flatten", [](A a, S s, C) { return a[0].flatten(s.ints.at(0), s.ints.at(1)); },
      [](N a, S s) { return fmt::format("{}.flatten({}, {})", a[0], s.ints.at(0), s.ints.at(1)); });
  add("unflatten", [](A a, S s, C) { return a[0].unflatten(s.ints.at(0), unflatten_target(s)); },
      [](N a, S s) {
        int64_t k = s.ints.at(2);
        return fmt::format("{}.unflatten({}, {})", a[0], s.ints.at(0),
                           s.ints.at(1) == 0 ? fmt::format("{{{}, -1}}", k) : fmt::format("{{-1, {}}}", k));
      });
  add("transpose", [](A a, S s, C) { return a[0].transpose(s.ints.at(0), s.ints.at(1)); },
      [](N a, S s) { return fmt::format("{}.transpose({}, {})", a[0], s.ints.at(0), s.ints.at(1)); });
  add("permute", [](A a, S s, C) { return a[0].permute(dims_from(s, 0)); },
      [](N a, S s) { return fmt::format("{}.permute({})", a[0], dims_cpp(s, 0)); });
  add("unsqueeze", [](A a, S s, C) { return a[0].unsqueeze(s.ints.at(0)); },
      [](N a, S s) { return fmt::format("{}.unsqueeze({})", a[0], s.ints.at(0)); });
  add("squeeze", [](A a, S s, C) { return s.ints.empty() ? a[0].squeeze() : a[0].squeeze(dims_from(s, 0)); },
      [](N a, S s) {
        return s.ints.empty() ? fmt::format("{}.squeeze()", a[0]) : fmt::format("{}.squeeze({})", a[0], dims_cpp(s, 0));
      });
  // expand: ints are the target sizes (-1 keeps a dim; size-1 dims grow; extra leading dims are new).
  add("expand", [](A a, S s, C) { return a[0].expand(SymIntList(std::vector<int64_t>(s.ints))); },
      [](N a, S s) { return fmt::format("{}.expand({})", a[0], dims_cpp(s, 0)); });
  add("flip", [](A a, S s, C) { return a[0].flip(dims_from(s, 0)); },
      [](N a, S s) { return fmt::format("{}.flip({})", a[0], dims_cpp(s, 0)); });
  add("roll", [](A a, S s, C) { return roll(a[0], {s.ints.at(0)}, {s.ints.at(1)}); },
      [](N a, S s) { return fmt::format("roll({}, {{{}}}, {{{}}})", a[0], s.ints.at(0), s.ints.at(1)); });
  add("tril", [](A a, S s, C) { return a[0].tril(s.ints.at(0)); },
      [](N a, S s) { return fmt::format("{}.tril({})", a[0], s.ints.at(0)); });
  add("triu", [](A a, S s, C) { return a[0].triu(s.ints.at(0)); },
      [](N a, S s) { return fmt::format("{}.triu({})", a[0], s.ints.at(0)); });
  add("repeat", [](A a, S s, C) { return a[0].repeat(SymIntList(std::vector<int64_t>(s.ints))); },
      [](N a, S s) { return fmt::format("{}.repeat({})", a[0], dims_cpp(s, 0)); });
  // pad (constant): ints [left, right], reals [value]
  add("pad", [](A a, S s, C) { return pad(a[0], {s.ints.at(0), s.ints.at(1)}, "constant", s.reals.at(0)); },
      [](N a, S s) {
        return fmt::format("pad({}, {{{}, {}}}, \"constant\", {})", a[0], s.ints.at(0), s.ints.at(1),
                           real_cpp(s.reals.at(0)));
      });
  // ---- in-place, on the step's first value (often a view): the value is the written tensor ----
  add("add_", [](A a, S s, C) { Tensor t = a[0]; return t.add_(a[1], scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("{}.add_({}, {})", a[0], a[1], scalar_cpp(s, 0)); });
  add("add_s_", [](A a, S s, C) { Tensor t = a[0]; return t.add_(scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("{}.add_({})", a[0], scalar_cpp(s, 0)); });
  add("sub_", [](A a, S s, C) { Tensor t = a[0]; return t.sub_(a[1]); },
      [](N a, S) { return fmt::format("{}.sub_({})", a[0], a[1]); });
  add("mul_", [](A a, S, C) { Tensor t = a[0]; return t.mul_(a[1]); },
      [](N a, S) { return fmt::format("{}.mul_({})", a[0], a[1]); });
  add("mul_s_", [](A a, S s, C) { Tensor t = a[0]; return t.mul_(scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("{}.mul_({})", a[0], scalar_cpp(s, 0)); });
  add("div_s_", [](A a, S s, C) { Tensor t = a[0]; return t.div_(scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("{}.div_({})", a[0], scalar_cpp(s, 0)); });
  add("fill_", [](A a, S s, C) { Tensor t = a[0]; return t.fill_(scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("{}.fill_({})", a[0], scalar_cpp(s, 0)); });
  add("zero_", [](A a, S, C) { Tensor t = a[0]; return t.zero_(); },
      [](N a, S) { return fmt::format("{}.zero_()", a[0]); });
  add("masked_fill_", [](A a, S s, C) { Tensor t = a[0]; return t.masked_fill_(a[1], scalar_at(s, 0)); },
      [](N a, S s) { return fmt::format("{}.masked_fill_({}, {})", a[0], a[1], scalar_cpp(s, 0)); });
  add("copy_", [](A a, S, C) { Tensor t = a[0]; return t.copy_(a[1]); },
      [](N a, S) { return fmt::format("{}.copy_({})", a[0], a[1]); });
  add("clamp_", [](A a, S s, C) { Tensor t = a[0]; return t.clamp_(s.reals.at(0), s.reals.at(1)); },
      [](N a, S s) { return fmt::format("{}.clamp_({}, {})", a[0], real_cpp(s.reals.at(0)), real_cpp(s.reals.at(1))); });
  add("relu_", [](A a, S, C) { Tensor t = a[0]; return t.relu_(); },
      [](N a, S) { return fmt::format("{}.relu_()", a[0]); });
  add("neg_", [](A a, S, C) { Tensor t = a[0]; return t.neg_(); },
      [](N a, S) { return fmt::format("{}.neg_()", a[0]); });
#define SINTER_FUZZ_UNARY_INPLACE(name)                                  \
  add(#name "_", [](A a, S, C) { Tensor t = a[0]; return t.name##_(); }, \
      [](N a, S) { return fmt::format("{}." #name "_()", a[0]); });
  SINTER_FUZZ_UNARY_INPLACE(sin) SINTER_FUZZ_UNARY_INPLACE(abs) SINTER_FUZZ_UNARY_INPLACE(sqrt)
  SINTER_FUZZ_UNARY_INPLACE(floor) SINTER_FUZZ_UNARY_INPLACE(sigmoid) SINTER_FUZZ_UNARY_INPLACE(logical_not)
#undef SINTER_FUZZ_UNARY_INPLACE
  // ---- joins: ints [dim] ----
  add("cat", [](A a, S s, C) { return cat(a, s.ints.at(0)); },
      [](N a, S s) { return fmt::format("cat({{{}}}, {})", fmt::join(a, ", "), s.ints.at(0)); });
  add("stack", [](A a, S s, C) { return stack(a, s.ints.at(0)); },
      [](N a, S s) { return fmt::format("stack({{{}}}, {})", fmt::join(a, ", "), s.ints.at(0)); });
  // ---- linear algebra, convolution, pooling, attention ----
  add("matmul", [](A a, S, C) { return matmul(a[0], a[1]); },
      [](N a, S) { return fmt::format("matmul({}, {})", a[0], a[1]); });
  // conv2d(x, w[, b]): ints [stride, padding, dilation, groups]
  add("conv2d", [](A a, S s, C) {
        return conv2d(a[0], a[1], a.size() > 2 ? a[2] : Tensor(), {s.ints.at(0)}, {s.ints.at(1)}, {s.ints.at(2)},
                      s.ints.at(3));
      },
      [](N a, S s) {
        return fmt::format("conv2d({}, {}, {}, {{{}}}, {{{}}}, {{{}}}, {})", a[0], a[1], a.size() > 2 ? a[2] : "Tensor()",
                           s.ints.at(0), s.ints.at(1), s.ints.at(2), s.ints.at(3));
      });
  // pools: ints [kernel, stride, padding, ceil_mode]
  add("max_pool2d", [](A a, S s, C) {
        return max_pool2d(a[0], {s.ints.at(0)}, {s.ints.at(1)}, {s.ints.at(2)}, {1}, s.ints.at(3) != 0);
      },
      [](N a, S s) {
        return fmt::format("max_pool2d({}, {{{}}}, {{{}}}, {{{}}}, {{1}}, {})", a[0], s.ints.at(0), s.ints.at(1),
                           s.ints.at(2), s.ints.at(3) ? "true" : "false");
      });
  add("avg_pool2d", [](A a, S s, C) {
        return avg_pool2d(a[0], {s.ints.at(0)}, {s.ints.at(1)}, {s.ints.at(2)}, s.ints.at(3) != 0);
      },
      [](N a, S s) {
        return fmt::format("avg_pool2d({}, {{{}}}, {{{}}}, {{{}}}, {})", a[0], s.ints.at(0), s.ints.at(1), s.ints.at(2),
                           s.ints.at(3) ? "true" : "false");
      });
  add("adaptive_avg_pool2d", [](A a, S s, C) { return adaptive_avg_pool2d(a[0], {s.ints.at(0), s.ints.at(1)}); },
      [](N a, S s) { return fmt::format("adaptive_avg_pool2d({}, {{{}, {}}})", a[0], s.ints.at(0), s.ints.at(1)); });
  // sdpa(q, k, v): ints [is_causal, enable_gqa] (files written before enable_gqa have one)
  add("sdpa",
      [](A a, S s, C) {
        bool gqa = s.ints.size() > 1 && s.ints[1] != 0;
        return scaled_dot_product_attention(a[0], a[1], a[2], {}, 0.0, s.ints.at(0) != 0, std::nullopt, gqa);
      },
      [](N a, S s) {
        bool gqa = s.ints.size() > 1 && s.ints[1] != 0;
        return fmt::format("scaled_dot_product_attention({}, {}, {}, {{}}, 0.0, {}, std::nullopt, {})", a[0], a[1],
                           a[2], s.ints.at(0) ? "true" : "false", gqa ? "true" : "false");
      });
  // ---- indexing: ints [dim]; the index is an int64 input ----
  add("index_select", [](A a, S s, C) { return index_select(a[0], s.ints.at(0), a[1]); },
      [](N a, S s) { return fmt::format("index_select({}, {}, {})", a[0], s.ints.at(0), a[1]); });
  add("gather", [](A a, S s, C) { return gather(a[0], s.ints.at(0), a[1]); },
      [](N a, S s) { return fmt::format("gather({}, {}, {})", a[0], s.ints.at(0), a[1]); });
  // ---- graph breaks: a host value read in the middle feeds a scalar, or a size ----
  add("break_scale", [](A a, S, C) { return a[0] * break_scale(a[1]); },
      [](N a, S) {
        return fmt::format("{} * (1.0 / (1.0 + std::abs(sum({}.to(kFloat64)).item<double>())))  /* finite */", a[0],
                           a[1]);
      });
  // break_narrow: ints [dim]: narrow(a, dim, 0, min(count of b > 0, size))
  add("break_narrow", [](A a, S s, C) {
        int64_t n = sinter::sum(gt(a[1], 0)).item<int64_t>();
        int64_t size = checked_size(a[0], s.ints.at(0));
        return a[0].narrow(s.ints.at(0), 0, std::min(n, size));
      },
      [](N a, S s) {
        return fmt::format("{0}.narrow({1}, 0, std::min<int64_t>(sum(gt({2}, 0)).item<int64_t>(), {0}.size({1})))",
                           a[0], s.ints.at(0), a[1]);
      });
  // ---- modules: ints [module index] ----
  add("module", [](A a, S s, C ctx) {
        auto& mod = ctx.modules.at(s.ints.at(0));
        if (auto* l = dynamic_cast<nn::Linear*>(mod.get())) return l->forward(a[0]);
        return dynamic_cast<nn::LayerNorm&>(*mod).forward(a[0]);
      },
      [](N a, S s) { return fmt::format("m{}({})", s.ints.at(0), a[0]); });
  return m;
}

const std::unordered_map<std::string, OpImpl>& ops() {
  static const std::unordered_map<std::string, OpImpl> m = build_ops();
  return m;
}

}  // namespace

std::string dtype_enum_name(DType t) {
  switch (t) {
    case kFloat32: return "kFloat32";
    case kFloat64: return "kFloat64";
    case kFloat16: return "kFloat16";
    case kBFloat16: return "kBFloat16";
    case kInt64: return "kInt64";
    case kInt32: return "kInt32";
    case kInt8: return "kInt8";
    case kUInt8: return "kUInt8";
    default: return "kBool";
  }
}

bool is_known_op(const std::string& op) {
  return unary_table().count(op) || binary_table().count(op) || binary_scalar_table().count(op) || ops().count(op);
}

Tensor run_step(const Step& s, const std::vector<Tensor>& values, const Context& ctx) {
  Values a;
  for (int id : s.args) a.push_back(values.at(id));
  if (auto u = unary_table().find(s.op); u != unary_table().end()) return u->second(a.at(0), Loc::current());
  if (auto b = binary_table().find(s.op); b != binary_table().end()) return b->second(a.at(0), a.at(1), Loc::current());
  if (auto b = binary_scalar_table().find(s.op); b != binary_scalar_table().end()) {
    return b->second(a.at(0), scalar_at(s, 0), Loc::current());
  }
  auto it = ops().find(s.op);
  if (it == ops().end()) throw Error(fmt::format("fuzz: unknown op '{}'", s.op));
  return it->second.run(a, s, ctx);
}

std::string step_cpp(const Step& s, const std::vector<std::string>& names) {
  std::vector<std::string> a;
  for (int id : s.args) a.push_back(names.at(id));
  if (unary_table().count(s.op)) return fmt::format("{}({})", s.op, a.at(0));
  if (binary_table().count(s.op)) return fmt::format("{}({}, {})", s.op, a.at(0), a.at(1));
  if (binary_scalar_table().count(s.op)) {
    return fmt::format("{}({}, {})", s.op.substr(0, s.op.size() - 2), a.at(0), scalar_cpp(s, 0));
  }
  auto it = ops().find(s.op);
  if (it == ops().end()) return fmt::format("/* unknown op {} */", s.op);
  return it->second.cpp(a, s);
}

}  // namespace sinter::tools::fuzz
