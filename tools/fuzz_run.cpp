// One fuzz case: run a program eagerly on each size variant, then compiled under each configuration (backend x
// dynamic policy) on the same variants in order (so recompiles and symbolic entries are exercised), and compare.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "fuzz.h"

namespace sinter::tools::fuzz {
namespace {

template <size_t>
using TensorAt = const Tensor&;

using CallFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

template <size_t... I>
CallFn compiled_call(const Program& p, const Context& ctx, const CompileOptions& o, std::index_sequence<I...>) {
  auto f = [&p, &ctx](TensorAt<I>... a) { return run_program(p, ctx, std::vector<Tensor>{a...}); };
  auto c = compile(f, o);
  return [c](const std::vector<Tensor>& in) { return c(in.at(I)...); };
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
std::string compare_tensor(const Tensor& want, const Tensor& got, bool exact, bool* meta_only) {
  *meta_only = false;
  if (!got.defined()) return "compiled output is undefined";
  if (want.dtype() != got.dtype()) {
    *meta_only = true;
    return fmt::format("dtype {} vs eager {}", dtype_name(got.dtype()), dtype_name(want.dtype()));
  }
  auto ws = want.sizes().hints(), gs = got.sizes().hints();
  if (ws != gs) {
    *meta_only = true;
    return fmt::format("sizes [{}] vs eager [{}]", fmt::join(gs, ", "), fmt::join(ws, ", "));
  }
  int64_t n = 1;
  for (int64_t s : ws) n *= s;
  if (n > 0) {
    auto wst = want.strides().hints(), gst = got.strides().hints();
    for (size_t d = 0; d < ws.size(); ++d) {
      if (ws[d] > 1 && wst[d] != gst[d]) {
        *meta_only = true;
        return fmt::format("strides [{}] vs eager [{}] (sizes [{}])", fmt::join(gst, ", "), fmt::join(wst, ", "),
                           fmt::join(ws, ", "));
      }
    }
  }
  if (n == 0) return "";
  std::vector<double> w = want.to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> g = got.to(kFloat64).contiguous().to_vector<double>();
  Tolerance tol = exact || !is_floating(want.dtype()) ? Tolerance{0, 0} : tolerance(want.dtype());
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

}  // namespace

std::string Config::str() const { return fmt::format("{}/{}", backend, dynamic_always ? "always" : "auto"); }

bool is_finding(const std::string& kind) { return kind != "ok" && kind != "invalid"; }

CaseResult run_case(const Program& p, const std::vector<Config>& configs) {
  int nv = p.num_variants();
  // Eager reference per variant: the outputs, then the arguments as the program left them (it may write them).
  std::vector<std::vector<Tensor>> ref(nv);
  std::vector<bool> valid(nv, false);
  for (int v = 0; v < nv; ++v) {
    try {
      Context ctx = make_context(p);
      std::vector<Tensor> args = make_inputs(p, v);
      ref[v] = run_program(p, ctx, args);
      ref[v].insert(ref[v].end(), args.begin(), args.end());
      valid[v] = true;
    } catch (const Error& e) {
      if (v == 0) return {"invalid", "", -1, one_line(e.what())};
    } catch (const std::exception& e) {
      return {"eager-internal-error", "eager-reference", v, one_line(e.what())};
    }
  }
  for (const Config& c : configs) {
    Context ctx = make_context(p);
    CompileOptions o;
    o.backend = c.backend;
    o.dynamic = c.dynamic_always ? Dynamic::kAlways : Dynamic::kAuto;
    o.freeze = p.freeze;
    CallFn fn = make_compiled(p, ctx, o);
    bool exact = c.backend != "inductor";
    for (int v = 0; v < nv; ++v) {
      if (!valid[v]) continue;
      std::vector<Tensor> args = make_inputs(p, v);
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
      got.insert(got.end(), args.begin(), args.end());
      if (got.size() != ref[v].size()) {
        return {"mismatch", c.str(), v, fmt::format("{} results vs eager {}", got.size(), ref[v].size())};
      }
      for (size_t k = 0; k < got.size(); ++k) {
        bool meta_only = false;
        std::string d;
        try {
          d = compare_tensor(ref[v][k], got[k], exact, &meta_only);
        } catch (const std::exception& e) {
          d = std::string("comparing threw: ") + e.what();
        }
        if (!d.empty()) {
          size_t n_out = p.outputs.size();
          std::string what = k < n_out ? fmt::format("output {} (v{})", k, p.outputs[k])
                                       : fmt::format("argument {} after the call", k - n_out);
          return {meta_only ? "meta-mismatch" : "mismatch", c.str(), v, one_line(what + ": " + d)};
        }
      }
    }
  }
  return {"ok", "", -1, ""};
}

}  // namespace sinter::tools::fuzz
