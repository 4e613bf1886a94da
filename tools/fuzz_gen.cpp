// The fuzzer's generator: random well-typed programs. Every step is run eagerly on every size variant while it is
// generated, and kept only when eager accepts it on all of them (a sinter::Error in eager is the oracle saying
// the step is ill-typed, never a finding), so the program that comes out runs eagerly on each variant.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "fuzz_program.h"

namespace sinter::tools::fuzz {
namespace {

// Feature names (GenOptions::disabled). Each gates the steps or inputs named beside it.
const std::vector<std::string> kFeatures = {
    "unary",    // pointwise unary ops (with parameters: gelu, clamp, ...)
    "binary",   // pointwise binary ops, tensor or scalar operand, broadcasting
    "compare",  // comparisons and logical ops (bool results)
    "where",    // where, lerp, addcmul, addcdiv, clamp with tensors, masked_fill
    "cast",     // to(dtype)
    "reduce",   // sum, mean, amax, var, std, prod, argmax, max(dim), all/any, logsumexp
    "softmax",  // softmax, log_softmax, cumsum, cumprod
    "view",     // slice, narrow, select, chunk, split, unbind, reshape, view, flatten, unflatten, transpose, ...
    "sizedep",  // lengths computed from sizes (x.size(d) / 2)
    "inplace",  // add_, mul_, fill_, masked_fill_, copy_, clamp_, ... on values and views
    "inplace_input",  // in-place ops whose target is (a view of) an input
    "cat",      // cat, stack
    "matmul",   // matmul
    "conv",     // conv2d (weights the function closes over), pooling
    "sdpa",     // scaled_dot_product_attention
    "index",    // index_select, gather
    "break",    // graph breaks: item() feeding a scalar or a narrow length
    "module",   // nn::Linear, nn::LayerNorm
    "dynamic",  // mark_dynamic on inputs
    "freeze",   // CompileOptions::freeze
    "layout",   // non-contiguous inputs (transposed, permuted, step-sliced, expanded, offset)
    "specials", // inf, nan, -0 and large values in input data
    "zero",     // sizes 0
    "lowp",     // float16 and bfloat16
    "intdtype", // int64, int32 and bool inputs
    "misc",     // flip, roll, tril, triu, repeat, pad, clone, contiguous
    "rank0",    // 0-dim inputs
};

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t below(int64_t n) { return n <= 0 ? 0 : static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  int64_t range(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }  // inclusive
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(static_cast<int64_t>(v.size()))]; }

 private:
  uint64_t state_;
};

class Generator {
 public:
  Generator(uint64_t seed, uint64_t case_id, const GenOptions& o)
      : rng_(seed * 0x100000001b3ULL ^ (case_id + 1) * 0x9e3779b97f4a7c15ULL), opt_(o) {
    p_.seed = seed;
    p_.case_id = case_id;
    p_.data_seed = rng_.next() >> 16;
  }

  Program run() {
    p_.specials = on("specials") && rng_.chance(0.25);
    make_classes();
    make_inputs_and_scenarios();
    nv_ = p_.num_variants();
    ctx_ = make_context(p_);
    vals_.assign(nv_, {});
    for (int v = 0; v < nv_; ++v) {
      std::vector<Tensor> args = fuzz::make_inputs(p_, v);
      size_t ai = 0, pi = 0;
      for (const auto& in : p_.inputs) vals_[v].push_back(in.is_param ? ctx_.params.at(pi++) : args.at(ai++));
    }
    int target = static_cast<int>(rng_.range(1, std::max(1, opt_.max_steps)));
    for (int s : pending_) try_step(scenario_steps_[s]);
    for (int attempts = 0; static_cast<int>(p_.steps.size()) < target && attempts < target * 25; ++attempts) {
      Step s;
      if (draw_step(s)) try_step(s);
    }
    choose_outputs();
    p_.freeze = on("freeze") && (!ctx_.params.empty() || !p_.modules.empty()) && rng_.chance(0.3);
    return p_;
  }

 private:
  bool on(const std::string& f) const { return feature_enabled(opt_, f); }

  // ---- sizes and inputs ----
  int64_t draw_size() {
    if (on("zero") && rng_.chance(0.05)) return 0;
    if (rng_.chance(0.1)) return 1;
    return rng_.range(2, 6);
  }
  int add_class(int64_t base, bool vary) {
    SizeClass c;
    c.sizes.push_back(base);
    for (int v = 1; v < 3; ++v) {
      int64_t s = base;
      if (vary) {
        if (rng_.chance(0.12)) s = on("zero") && rng_.chance(0.3) ? 0 : 1;  // a specialised size: a recompile
        else s = rng_.range(2, 8);
      }
      c.sizes.push_back(s);
    }
    p_.classes.push_back(c);
    return static_cast<int>(p_.classes.size() - 1);
  }
  void make_classes() {
    int n = static_cast<int>(rng_.range(1, 4));
    for (int i = 0; i < n; ++i) {
      int64_t base = draw_size();
      add_class(base, base >= 2 && rng_.chance(0.7));
    }
  }
  bool all_at_least_2(int c) const {
    for (int64_t s : p_.classes[c].sizes) {
      if (s < 2) return false;
    }
    return true;
  }
  DType draw_dtype() {
    int64_t r = rng_.below(100);
    if (r < 50) return kFloat32;
    if (r < 60) return kFloat64;
    if (r < 70 && on("lowp")) return kFloat16;
    if (r < 80 && on("lowp")) return kBFloat16;
    if (r < 88 && on("intdtype")) return kInt64;
    if (r < 94 && on("intdtype")) return kInt32;
    if (on("intdtype")) return kBool;
    return kFloat32;
  }
  void add_input(InputSpec in) {
    int64_t rank = static_cast<int64_t>(in.dims.size());
    if (on("layout") && rank >= 1 && rng_.chance(0.35)) {
      int64_t kind = rng_.below(5);
      if (kind == 0 && rank >= 2) {
        int64_t a = rng_.below(rank), b = rng_.below(rank);
        if (a != b) in.layout = Layout::kTranspose, in.layout_args = {a, b};
      } else if (kind == 1 && rank >= 3) {
        std::vector<int64_t> perm(rank);
        for (int64_t i = 0; i < rank; ++i) perm[i] = i;
        for (int64_t i = rank - 1; i > 0; --i) std::swap(perm[i], perm[rng_.below(i + 1)]);
        in.layout = Layout::kPermute, in.layout_args = perm;
      } else if (kind == 2) {
        in.layout = Layout::kStep, in.layout_args = {rng_.below(rank), rng_.range(2, 3)};
      } else if (kind == 3) {
        in.layout = Layout::kExpand, in.layout_args = {rng_.below(rank)};
      } else if (kind == 4) {
        in.layout = Layout::kOffset;
      }
    }
    if (on("dynamic") && !in.is_param && rank >= 1 && rng_.chance(0.2)) {
      int64_t d = rng_.below(rank);
      if (in.dims[d] >= 0 && all_at_least_2(in.dims[d])) in.dynamic.push_back(static_cast<int>(d));
    }
    p_.inputs.push_back(in);
  }
  std::vector<int> draw_dims(int64_t rank) {
    std::vector<int> dims;
    for (int64_t d = 0; d < rank; ++d) dims.push_back(rng_.chance(0.15) ? -1 : static_cast<int>(rng_.below(p_.classes.size())));
    return dims;
  }
  int static_class(int64_t lo, int64_t hi) { return add_class(rng_.range(lo, hi), false); }
  int dynamic_class(int64_t lo, int64_t hi) {
    SizeClass c;
    for (int v = 0; v < 3; ++v) c.sizes.push_back(rng_.range(lo, hi));
    p_.classes.push_back(c);
    return static_cast<int>(p_.classes.size() - 1);
  }
  int value_count() const { return static_cast<int>(p_.inputs.size() + p_.steps.size()); }

  void make_inputs_and_scenarios() {
    int n = static_cast<int>(rng_.range(1, 3));
    for (int i = 0; i < n; ++i) {
      int64_t r = rng_.below(100);
      int64_t rank = r < 8 ? 0 : r < 30 ? 1 : r < 65 ? 2 : r < 88 ? 3 : 4;
      if (rank == 0 && !on("rank0")) rank = 1;
      InputSpec in;
      in.dtype = draw_dtype();
      // A broadcasting partner: a suffix of the first input's dims, some of them 1.
      if (i > 0 && rng_.chance(0.5)) {
        const auto& first = p_.inputs[0].dims;
        size_t keep = static_cast<size_t>(rng_.below(static_cast<int64_t>(first.size()) + 1));
        if (keep == 0 && !on("rank0")) keep = std::min<size_t>(1, first.size());
        in.dims.assign(first.end() - keep, first.end());
        for (int& d : in.dims) {
          if (rng_.chance(0.25)) d = -1;
        }
      } else {
        in.dims = draw_dims(rank);
      }
      add_input(in);
    }
    if (on("index") && rng_.chance(0.25)) {
      InputSpec idx;
      idx.dtype = kInt64;
      idx.dims = {static_cast<int>(rng_.below(p_.classes.size()))};
      idx.index_bound = rng_.range(1, 2);
      p_.inputs.push_back(idx);
    }
    if (on("conv") && rng_.chance(0.12)) {
      // x [N, C, H, W] and a weight [Co, C, k, k] (and a bias) the function closes over.
      int cn = add_class(rng_.range(1, 2), rng_.chance(0.5)), cc = static_class(1, 3);
      int ch = dynamic_class(3, 8), cw = rng_.chance(0.5) ? ch : dynamic_class(3, 8);
      int co = static_class(1, 4), ck = static_class(1, 3);
      int x = value_count();
      InputSpec xs;
      xs.dtype = rng_.chance(0.8) ? kFloat32 : kFloat64;
      xs.dims = {cn, cc, ch, cw};
      add_input(xs);
      InputSpec w;
      w.dtype = xs.dtype, w.is_param = true, w.dims = {co, cc, ck, ck};
      p_.inputs.push_back(w);
      Step s{"conv2d", {x, x + 1}, {rng_.range(1, 2), rng_.range(0, 1), rng_.range(1, 2), 1}, {}};
      if (rng_.chance(0.5)) {
        InputSpec b;
        b.dtype = xs.dtype, b.is_param = true, b.dims = {co};
        p_.inputs.push_back(b);
        s.args.push_back(x + 2);
      }
      scenario_steps_.push_back(s);
      pending_.push_back(static_cast<int>(scenario_steps_.size() - 1));
    }
    if (on("sdpa") && rng_.chance(0.1)) {
      int cb = add_class(rng_.range(1, 3), rng_.chance(0.5)), cl = dynamic_class(1, 6);
      int cs = rng_.chance(0.5) ? cl : dynamic_class(1, 6), ce = static_class(1, 8);
      DType dt = rng_.chance(0.8) ? kFloat32 : kFloat64;
      int q = value_count();
      // With enable_gqa (a third of the time): heads, the query's a multiple of the key/value's.
      const bool gqa = rng_.chance(0.33);
      std::vector<int> qd{cb, cl, ce}, kd{cb, cs, ce};
      if (gqa) {
        int64_t kv_heads = rng_.range(1, 2);
        qd.insert(qd.begin() + 1, add_class(kv_heads * rng_.range(1, 3), false));
        kd.insert(kd.begin() + 1, add_class(kv_heads, false));
      }
      for (const std::vector<int>& dims : {qd, kd, kd}) {
        InputSpec in;
        in.dtype = dt, in.dims = dims;
        add_input(in);
      }
      scenario_steps_.push_back(Step{"sdpa", {q, q + 1, q + 2}, {rng_.below(2), gqa ? 1 : 0}, {}});
      pending_.push_back(static_cast<int>(scenario_steps_.size() - 1));
    }
    // Params keep the input numbering: arguments and params may interleave (values are numbered in order).
  }

  // ---- steps ----
  // The value's sizes in every variant.
  std::vector<std::vector<int64_t>> shapes(int id) const {
    std::vector<std::vector<int64_t>> out;
    for (int v = 0; v < nv_; ++v) out.push_back(vals_[v][id].sizes().hints());
    return out;
  }
  int64_t rank_of(int id) const { return vals_[0][id].dim(); }
  DType dtype_of_value(int id) const { return vals_[0][id].dtype(); }
  int pick_value() {
    int n = value_count();
    if (n > static_cast<int>(p_.inputs.size()) && rng_.chance(0.6)) return n - 1 - static_cast<int>(rng_.below(std::min(3, n - static_cast<int>(p_.inputs.size()))));
    return static_cast<int>(rng_.below(n));
  }
  // A value whose dtype satisfies `pred`, or -1.
  template <class P>
  int pick_value_where(P pred) {
    for (int tries = 0; tries < 12; ++tries) {
      int id = pick_value();
      if (pred(id)) return id;
    }
    std::vector<int> ok;
    for (int id = 0; id < value_count(); ++id) {
      if (pred(id)) ok.push_back(id);
    }
    return ok.empty() ? -1 : rng_.pick(ok);
  }
  int64_t draw_dim(int64_t rank, bool allow_scalar_dim = true) {
    int64_t r = std::max<int64_t>(rank, allow_scalar_dim ? 1 : 0);
    if (r == 0) return 0;
    int64_t d = rng_.below(r);
    return rng_.chance(0.3) ? d - r : d;
  }
  std::vector<int64_t> draw_dims_subset(int64_t rank) {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (rng_.chance(0.4)) dims.push_back(rng_.chance(0.2) ? d - rank : d);
    }
    if (dims.empty() && rank > 0) dims.push_back(rng_.below(rank));
    return dims;
  }
  // A scalar operand: kind (0 double, 1 int, 2 bool) into ints, value into reals.
  void draw_scalar(Step& s) {
    int64_t kind = rng_.chance(0.6) ? 0 : rng_.chance(0.85) ? 1 : 2;
    double v;
    if (kind == 0) {
      static const std::vector<double> special = {0.5, -1.5, 2.0, 0.0, -0.0, 1e-3, 3.25, 100.0, -0.5};
      v = rng_.chance(0.7) ? rng_.pick(special) : static_cast<double>(rng_.range(-40, 40)) / 8.0;
      if (on("specials") && rng_.chance(0.03)) v = rng_.chance(0.5) ? INFINITY : NAN;
    } else if (kind == 1) {
      v = static_cast<double>(rng_.range(-3, 5));
    } else {
      v = static_cast<double>(rng_.below(2));
    }
    s.ints.insert(s.ints.begin(), kind);
    s.reals.insert(s.reals.begin(), v);
  }

  bool draw_step(Step& s);
  void draw_view(Step& s, int a);
  void draw_reduce(Step& s, int a);

  // Runs the step on every variant; keeps it when eager accepts all of them and the result is small.
  bool try_step(const Step& s) {
    if (opt_.on_try) opt_.on_try(p_, s);
    std::vector<Tensor> out(nv_);
    std::vector<std::vector<Tensor>> saved = snapshot_if_inplace(s);
    for (int v = 0; v < nv_; ++v) {
      try {
        out[v] = run_step(s, vals_[v], ctx_);
        if (out[v].numel().hint() > 20000) throw Error("fuzz: too large");
        // The generator draws later steps from variant 0's ranks: a step whose rank depends on the sizes
        // (squeeze of a dim that is 1 in one variant only) would make them wrong for the others.
        if (out[v].dim() != out[0].dim()) throw Error("fuzz: rank differs between variants");
      } catch (const std::exception&) {
        restore(saved);
        return false;
      }
    }
    p_.steps.push_back(s);
    for (int v = 0; v < nv_; ++v) vals_[v].push_back(out[v]);
    return true;
  }
  // An in-place step that eager rejects on a later variant has already written the earlier ones: keep copies of
  // every value's storage to put back. (Values are tiny.)
  std::vector<std::vector<Tensor>> snapshot_if_inplace(const Step& s) {
    if (s.op.back() != '_') return {};
    std::vector<std::vector<Tensor>> snap(nv_);
    for (int v = 0; v < nv_; ++v) {
      for (const Tensor& t : vals_[v]) snap[v].push_back(t.clone());
    }
    return snap;
  }
  void restore(const std::vector<std::vector<Tensor>>& snap) {
    if (snap.empty()) return;
    // Inputs and params are the storages every other value views; writing them back restores all views of them.
    // Computed values own storages too; copy every value back (overlapping views get the same data again).
    for (int v = 0; v < nv_; ++v) {
      for (size_t i = 0; i < vals_[v].size(); ++i) {
        try {
          vals_[v][i].copy_(snap[v][i]);
        } catch (const std::exception&) {
          // expanded values cannot be written; their base is restored through another value
        }
      }
    }
  }

  void choose_outputs() {
    int n = value_count();
    if (p_.steps.empty()) {
      p_.outputs = {0};
      return;
    }
    p_.outputs = {n - 1};
    int extra = static_cast<int>(rng_.below(3));
    for (int k = 0; k < extra; ++k) {
      int id = static_cast<int>(rng_.below(n));
      if (std::find(p_.outputs.begin(), p_.outputs.end(), id) == p_.outputs.end()) p_.outputs.push_back(id);
    }
  }

  Rng rng_;
  GenOptions opt_;
  Program p_;
  int nv_ = 1;
  Context ctx_;
  std::vector<std::vector<Tensor>> vals_;  // per variant, per value id
  std::vector<Step> scenario_steps_;
  std::vector<int> pending_;
};

const std::vector<std::string> kUnary = {
    "abs", "neg", "sign", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
    "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "relu", "silu",
    "mish", "erf", "erfc", "erfinv", "floor", "ceil", "round", "trunc", "frac", "reciprocal", "square",
    "bitwise_not", "hardsigmoid", "hardswish", "selu", "lgamma", "digamma", "relu6"};
const std::vector<std::string> kUnaryBool = {"logical_not", "isnan", "isinf", "isfinite", "signbit"};
const std::vector<std::string> kBinary = {"add", "sub", "mul", "div", "fmod", "remainder", "floor_divide", "pow",
                                          "atan2", "maximum", "minimum", "hypot", "copysign", "bitwise_and",
                                          "bitwise_or", "bitwise_xor", "div_mode"};
const std::vector<std::string> kCompare = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                                           "logical_xor"};
const std::vector<std::string> kScalarBinary = {"add_s", "sub_s", "rsub_s", "mul_s", "div_s", "fmod_s",
                                                "remainder_s", "floor_divide_s", "pow_s", "pow_rs",
                                                "bitwise_and_s"};
const std::vector<std::string> kScalarCompare = {"eq_s", "ne_s", "lt_s", "le_s", "gt_s", "ge_s"};

void Generator::draw_view(Step& s, int a) {
  int64_t r = rank_of(a);
  auto sh = shapes(a)[0];
  static const std::vector<std::string> views = {"slice", "narrow", "select", "chunk", "split", "unbind",
                                                 "reshape", "view", "flatten", "unflatten", "transpose", "permute",
                                                 "unsqueeze", "squeeze", "expand"};
  s.op = rng_.pick(views);
  s.args = {a};
  int64_t d = draw_dim(r);
  int64_t dd = d < 0 ? d + std::max<int64_t>(r, 1) : d;
  int64_t n = r > 0 && dd < r ? sh[dd] : 1;
  if (s.op == "slice") {
    int64_t start = rng_.range(-2, 2), end = rng_.chance(0.4) ? INT64_MAX : rng_.range(-2, n + 1);
    s.ints = {d, start, end, rng_.chance(0.7) ? 1 : rng_.range(2, 3)};
  } else if (s.op == "narrow") {
    int64_t mode = on("sizedep") ? rng_.below(4) : 0;
    int64_t start = rng_.range(0, std::min<int64_t>(n, 1));
    s.ints = {d, start, mode, mode == 0 ? rng_.range(0, std::max<int64_t>(0, n - start)) : start};
  } else if (s.op == "select") {
    s.ints = {d, rng_.range(-1, std::max<int64_t>(0, n - 1))};
  } else if (s.op == "chunk") {
    s.ints = {rng_.range(1, 3), d, rng_.below(2)};
  } else if (s.op == "split") {
    s.ints = {rng_.range(1, 3), d, rng_.below(2)};
  } else if (s.op == "unbind") {
    s.ints = {d, rng_.below(std::max<int64_t>(1, std::min<int64_t>(n, 2)))};
  } else if (s.op == "reshape" || s.op == "view") {
    int64_t mode = rng_.below(4);
    s.ints = {mode};
    if (mode == 3) {  // the static sizes of variant 0, shuffled into a new shape
      int64_t numel = 1;
      for (int64_t x : sh) numel *= x;
      if (numel > 1 && numel % 2 == 0 && rng_.chance(0.5)) s.ints.insert(s.ints.end(), {2, numel / 2});
      else s.ints.insert(s.ints.end(), {numel, 1});
    }
  } else if (s.op == "flatten") {
    int64_t a0 = r > 0 ? rng_.below(r) : 0;
    s.ints = {a0, r > 0 ? rng_.range(a0, r - 1) : -1};
  } else if (s.op == "unflatten") {
    s.ints = {d, rng_.below(2), rng_.range(1, 3)};
  } else if (s.op == "transpose") {
    s.ints = {draw_dim(r), draw_dim(r)};
  } else if (s.op == "permute") {
    std::vector<int64_t> perm(r);
    for (int64_t i = 0; i < r; ++i) perm[i] = i;
    for (int64_t i = r - 1; i > 0; --i) std::swap(perm[i], perm[rng_.below(i + 1)]);
    s.ints = perm;
  } else if (s.op == "unsqueeze") {
    s.ints = {rng_.range(-(r + 1), r)};
  } else if (s.op == "squeeze") {
    if (rng_.chance(0.7) && r > 0) s.ints = {d};
  } else if (s.op == "expand") {
    s.ints.clear();
    if (rng_.chance(0.4)) s.ints.push_back(rng_.range(1, 3));
    for (int64_t i = 0; i < r; ++i) s.ints.push_back(sh[i] == 1 && rng_.chance(0.6) ? rng_.range(2, 4) : -1);
  }
}

void Generator::draw_reduce(Step& s, int a) {
  int64_t r = rank_of(a);
  static const std::vector<std::string> reds = {"sum", "mean", "amax", "amin", "var", "std", "prod", "argmax",
                                                "argmin", "max_dim", "min_dim", "all", "any", "logsumexp"};
  s.op = rng_.pick(reds);
  s.args = {a};
  int64_t keep = rng_.below(2);
  if (s.op == "sum" || s.op == "mean" || s.op == "all" || s.op == "any") {
    int64_t all = rng_.chance(0.3);
    s.ints = {all, keep};
    if (!all) {
      auto dims = draw_dims_subset(r);
      s.ints.insert(s.ints.end(), dims.begin(), dims.end());
    }
  } else if (s.op == "amax" || s.op == "amin" || s.op == "logsumexp") {
    s.ints = {keep};
    auto dims = draw_dims_subset(r);
    s.ints.insert(s.ints.end(), dims.begin(), dims.end());
  } else if (s.op == "var" || s.op == "std") {
    s.ints = {keep, rng_.below(2)};
    auto dims = draw_dims_subset(r);
    s.ints.insert(s.ints.end(), dims.begin(), dims.end());
  } else if (s.op == "prod" || s.op == "argmax" || s.op == "argmin") {
    s.ints = {rng_.chance(0.3) ? 1 : 0, draw_dim(r), keep};
  } else {
    s.ints = {draw_dim(r), keep, rng_.below(2)};
  }
}

bool Generator::draw_step(Step& s) {
  struct Choice {
    const char* feature;
    int weight;
  };
  static const std::vector<Choice> choices = {
      {"unary", 14}, {"binary", 16}, {"compare", 6}, {"where", 6}, {"cast", 5}, {"reduce", 9}, {"softmax", 4},
      {"view", 16}, {"inplace", 9}, {"cat", 3}, {"matmul", 3}, {"conv", 2}, {"index", 2}, {"break", 2},
      {"module", 2}, {"misc", 4}};
  int total = 0;
  for (const auto& c : choices) total += on(c.feature) ? c.weight : 0;
  if (total == 0) return false;
  int64_t r = rng_.below(total);
  std::string f;
  for (const auto& c : choices) {
    if (!on(c.feature)) continue;
    if (r < c.weight) {
      f = c.feature;
      break;
    }
    r -= c.weight;
  }
  int a = pick_value();
  auto is_bool = [&](int id) { return dtype_of_value(id) == kBool; };
  auto is_float = [&](int id) { return is_floating(dtype_of_value(id)); };
  if (f == "unary") {
    int64_t k = rng_.below(10);
    s.args = {a};
    if (k < 7) s.op = rng_.pick(kUnary);
    else if (k == 7) s.op = rng_.pick(kUnaryBool);
    else {
      static const std::vector<std::string> param_ops = {"gelu", "leaky_relu", "softplus", "hardtanh", "clamp",
                                                         "nan_to_num"};
      s.op = rng_.pick(param_ops);
      if (s.op == "gelu") s.ints = {rng_.below(2)};
      if (s.op == "leaky_relu") s.reals = {rng_.chance(0.5) ? 0.01 : 0.2};
      if (s.op == "softplus") s.reals = {rng_.chance(0.5) ? 1.0 : 2.0, rng_.chance(0.5) ? 20.0 : 1.0};
      if (s.op == "hardtanh") s.reals = {-1.0, rng_.chance(0.5) ? 1.0 : 2.5};
      if (s.op == "clamp") s.ints = {rng_.below(3)}, s.reals = {-0.75, rng_.chance(0.5) ? 1.5 : 0.25};
      if (s.op == "nan_to_num") s.reals = {0.5, 100.0, -100.0};
    }
  } else if (f == "binary" || f == "compare") {
    bool scalar = rng_.chance(0.35);
    if (scalar) {
      s.op = rng_.pick(f == "binary" ? kScalarBinary : kScalarCompare);
      s.args = {a};
      draw_scalar(s);
    } else {
      s.op = rng_.pick(f == "binary" ? kBinary : kCompare);
      s.args = {a, pick_value()};
      if (s.op == "add" || s.op == "sub") {
        s.ints = {rng_.chance(0.8) ? 1 : 0}, s.reals = {s.ints[0] ? 2.0 : 0.5};
        if (rng_.chance(0.7)) s.ints = {1}, s.reals = {1};
      }
      if (s.op == "div_mode") s.ints = {rng_.below(2)};
    }
  } else if (f == "where") {
    static const std::vector<std::string> ops = {"where", "where_ts", "where_st", "lerp", "addcmul", "addcdiv",
                                                 "clamp_t", "masked_fill"};
    s.op = rng_.pick(ops);
    int c = pick_value_where(is_bool);
    if (s.op == "where") {
      if (c < 0) return false;
      s.args = {c, a, pick_value()};
    } else if (s.op == "where_ts" || s.op == "where_st") {
      if (c < 0) return false;
      s.args = {c, a};
      draw_scalar(s);
    } else if (s.op == "lerp") {
      int b = pick_value_where(is_float);
      if (b < 0) return false;
      s.args = {a, b}, s.reals = {rng_.chance(0.5) ? 0.25 : 0.75};
    } else if (s.op == "addcmul" || s.op == "addcdiv") {
      s.args = {a, pick_value(), pick_value()}, s.reals = {rng_.chance(0.5) ? 1.0 : 0.5};
    } else if (s.op == "clamp_t") {
      s.args = {a, pick_value(), pick_value()};
    } else {
      if (c < 0) return false;
      s.args = {a, c};
      draw_scalar(s);
    }
  } else if (f == "cast") {
    std::vector<DType> to = {kFloat32, kFloat64, kInt64, kInt32, kBool};
    if (on("lowp")) to.insert(to.end(), {kFloat16, kBFloat16, kFloat16});
    s.op = "to", s.args = {a}, s.ints = {static_cast<int64_t>(rng_.pick(to))};
  } else if (f == "reduce") {
    draw_reduce(s, a);
  } else if (f == "softmax") {
    static const std::vector<std::string> ops = {"softmax", "log_softmax", "cumsum", "cumprod"};
    s.op = rng_.pick(ops), s.args = {a}, s.ints = {draw_dim(rank_of(a))};
  } else if (f == "view") {
    draw_view(s, a);
  } else if (f == "inplace") {
    // The target: a fresh view of a value (or the value), so writes go through views into bases.
    int t = a;
    for (size_t i = 0; i < p_.inputs.size() && !on("inplace_input"); ++i) {
      if (vals_[0][t].storage() == vals_[0][i].storage()) return false;
    }
    // Never write the tensors the function closes over: they are shared by every call (and by eager and
    // compiled runs), so a write would carry over from one run into the next.
    for (const Tensor& param : ctx_.params) {
      if (vals_[0][t].storage() == param.storage()) return false;
    }
    static const std::vector<std::string> ops = {"add_", "add_s_", "sub_", "mul_", "mul_s_", "div_s_", "fill_",
                                                 "zero_", "masked_fill_", "copy_", "clamp_", "relu_", "neg_",
                                                 "sin_", "abs_", "sqrt_", "floor_", "sigmoid_", "logical_not_"};
    s.op = rng_.pick(ops);
    s.args = {t};
    if (s.op == "add_" || s.op == "sub_" || s.op == "mul_" || s.op == "copy_") s.args.push_back(pick_value());
    if (s.op == "add_") s.ints = {1}, s.reals = {1};
    if (s.op == "add_s_" || s.op == "mul_s_" || s.op == "div_s_" || s.op == "fill_") draw_scalar(s);
    if (s.op == "masked_fill_") {
      int c = pick_value_where(is_bool);
      if (c < 0) return false;
      s.args.push_back(c);
      draw_scalar(s);
    }
    if (s.op == "clamp_") s.reals = {-1.0, rng_.chance(0.5) ? 0.5 : 2.0};
  } else if (f == "cat") {
    s.op = rng_.chance(0.7) ? "cat" : "stack";
    s.args = {a, rng_.chance(0.5) ? a : pick_value()};
    if (rng_.chance(0.3)) s.args.push_back(pick_value());
    s.ints = {draw_dim(rank_of(a) + (s.op == "stack"))};
  } else if (f == "matmul") {
    // A partner whose leading matrix dim matches a's last dim in every variant.
    auto sa = shapes(a);
    if (sa[0].empty()) return false;
    int b = pick_value_where([&](int id) {
      auto sb = shapes(id);
      if (sb[0].empty()) return false;
      for (int v = 0; v < nv_; ++v) {
        int64_t inner = sb[v].size() == 1 ? sb[v][0] : sb[v][sb[v].size() - 2];
        if (inner != sa[v].back()) return false;
      }
      return true;
    });
    if (b < 0) return false;
    s.op = "matmul", s.args = {a, b};
  } else if (f == "conv") {
    static const std::vector<std::string> ops = {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"};
    s.op = rng_.pick(ops), s.args = {a};
    if (s.op == "adaptive_avg_pool2d") s.ints = {rng_.range(1, 3), rng_.range(1, 3)};
    else {
      int64_t k = rng_.range(1, 3);
      s.ints = {k, rng_.range(1, 2), rng_.range(0, k / 2), rng_.below(2)};
    }
  } else if (f == "index") {
    int idx = pick_value_where([&](int id) { return dtype_of_value(id) == kInt64; });
    if (idx < 0) return false;
    s.op = rng_.chance(0.5) ? "index_select" : "gather";
    s.args = {a, idx}, s.ints = {draw_dim(rank_of(a))};
  } else if (f == "break") {
    s.op = rng_.chance(0.6) ? "break_scale" : "break_narrow";
    s.args = {a, pick_value()};
    if (s.op == "break_narrow") s.ints = {draw_dim(rank_of(a))};
  } else if (f == "module") {
    // Linear or LayerNorm over a's last dim, which must be the same in every variant.
    auto sa = shapes(a);
    if (sa[0].empty() || !is_float(a)) return false;
    for (int v = 1; v < nv_; ++v) {
      if (sa[v].back() != sa[0].back()) return false;
    }
    int64_t in = sa[0].back();
    // Mostly narrow; sometimes 8 or more outputs, which compiled code runs on sinter's tiled GEMM (its weight
    // packed once when the program is frozen).
    if (rng_.chance(0.6))
      p_.modules.push_back({"Linear", {in, rng_.chance(0.3) ? rng_.range(8, 24) : rng_.range(1, 5), rng_.below(2)}});
    else p_.modules.push_back({"LayerNorm", {in, rng_.below(2)}});
    const auto& m = p_.modules.back();
    if (m.kind == "Linear") ctx_.modules.push_back(std::make_shared<nn::Linear>(m.ints[0], m.ints[1], m.ints[2] != 0));
    else ctx_.modules.push_back(std::make_shared<nn::LayerNorm>(m.ints[0], 1e-5, m.ints[1] != 0));
    s.op = "module", s.args = {a}, s.ints = {static_cast<int64_t>(p_.modules.size() - 1)};
    if (!try_step(s)) {
      p_.modules.pop_back();
      ctx_.modules.pop_back();
    }
    return false;  // already tried
  } else if (f == "misc") {
    static const std::vector<std::string> ops = {"flip", "roll", "tril", "triu", "repeat", "pad", "clone",
                                                 "contiguous"};
    s.op = rng_.pick(ops), s.args = {a};
    int64_t rk = rank_of(a);
    if (s.op == "flip") s.ints = draw_dims_subset(rk);
    if (s.op == "roll") s.ints = {rng_.range(-2, 3), draw_dim(rk)};
    if (s.op == "tril" || s.op == "triu") s.ints = {rng_.range(-1, 1)};
    if (s.op == "repeat") {
      for (int64_t i = 0; i < rk + rng_.below(2); ++i) s.ints.push_back(rng_.range(1, 2));
    }
    if (s.op == "pad") s.ints = {rng_.range(0, 2), rng_.range(-1, 2)}, s.reals = {rng_.chance(0.5) ? 0.0 : 1.5};
  }
  return !s.op.empty();
}

}  // namespace

bool feature_enabled(const GenOptions& o, const std::string& feature) {
  return std::find(o.disabled.begin(), o.disabled.end(), feature) == o.disabled.end();
}

std::vector<std::string> all_features() { return kFeatures; }

Program generate(uint64_t seed, uint64_t case_id, const GenOptions& options) {
  return Generator(seed, case_id, options).run();
}

}  // namespace sinter::tools::fuzz
