// Reductions built from moments, transformed sums or two engine passes: var/std (never E[x^2] - E[x]^2: each
// run in cache takes its mean, then its squared deviations, and runs combine by Chan's formula), vector norms
// for any p, and logsumexp (max, then the sum of exps shifted by it).
#include <cmath>
#include <limits>

#include "ops/reduce_engine.h"
#include "ops/reduce_internal.h"

namespace sinter {

namespace {

using namespace reduce;

struct Square {
  template <class C>
  C operator()(C x, int64_t) const {
    return x * x;
  }
};
struct Abs {
  template <class C>
  C operator()(C x, int64_t) const {
    return std::abs(x);
  }
};
struct NonZero {
  template <class C>
  C operator()(C x, int64_t) const {
    return x != 0 ? C(1) : C(0);
  }
};
template <class C>
struct PowAbs {
  C p;
  C operator()(C x, int64_t) const { return std::pow(std::abs(x), p); }
};
template <class C>
struct ExpShifted {
  const C* shift;
  C operator()(C x, int64_t q) const { return exp_fast(x - shift[q]); }
};
// Rows of exp(x - shift): compute-bound, so out of line and compiled for wider vectors too.
template <class C>
SINTER_CLONES C sum_exp(const C* p, int64_t n, C shift) {
  return static_cast<C>(exp_sum<false>(p, static_cast<C*>(nullptr), n, shift));
}
template <class CT>
struct SumExpOp : SumOp<CT, ExpShifted<CT>> {
  CT row(const CT* p, int64_t n, int64_t q) const { return sum_exp(p, n, this->f.shift[q]); }
};

void check_floating(const Tensor& self, const char* what) {
  SINTER_CHECK(is_floating(self.dtype()), "{} needs a floating input, got {}", what,
               dtype_name(self.dtype()));
}

// ---- var.correction / std.correction (self, dim?, *, correction?, keepdim) ----

ShapeResult var_shape(OpId op, const Args& a) {
  const Tensor& self = a[0].tensor();
  check_floating(self, op == OpId::var_correction ? "var" : "std");
  std::vector<bool> mask = reduce_dim_mask(a[1], self.dim());
  return dense_meta(reduced_sizes(self.sizes(), mask, a[3].to_bool()), self.dtype(), self.device());
}

// Count, mean and sum of squared deviations of a set of values.
template <class C>
struct Moments {
  C mean = 0, m2 = 0;
  int64_t n = 0;
};

// One pass over memory for rows along the contiguous dim: each contiguous run is taken in two passes while it
// is in cache (mean, then squared deviations: no cancellation), and runs combine with Chan's formula.
template <class CT>
struct MomentsOp {
  using C = CT;
  using Acc = Moments<C>;
  static constexpr int64_t kBlock = 4096;
  Acc identity() const { return {}; }
  Acc row(const C* p, int64_t n, int64_t) const {
    Acc acc;
    for (int64_t b = 0; b < n; b += kBlock) {  // blocks small enough to stay in L1 between the two passes
      const int64_t len = std::min(kBlock, n - b);
      const C mean = lane_sum<C>(p + b, len, [](C x) { return x; }) / static_cast<C>(len);
      acc = merge(acc, {mean, lane_sum<C>(p + b, len, [mean](C x) { return (x - mean) * (x - mean); }), len});
    }
    return acc;
  }
  // Welford's update, for completeness of the op; var takes the two-pass route when rows are not contiguous.
  void rows(Acc* acc, const C* p, int64_t n, int64_t) const {
    for (int64_t j = 0; j < n; ++j) {
      Acc& a = acc[j];
      a.n += 1;
      const C delta = p[j] - a.mean;
      a.mean += delta / static_cast<C>(a.n);
      a.m2 += delta * (p[j] - a.mean);
    }
  }
  Acc merge(const Acc& a, const Acc& b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const int64_t n = a.n + b.n;
    const C delta = b.mean - a.mean, fb = static_cast<C>(b.n) / static_cast<C>(n);
    return {a.mean + delta * fb, a.m2 + b.m2 + delta * delta * static_cast<C>(a.n) * fb, n};
  }
};

void var_kernel(OpId op, const Args& a, std::vector<Tensor>& outs) {
  const Tensor& self = a[0].tensor();
  const double correction = a[2].is_none() ? 1.0 : a[2].scalar().to_double();
  const bool is_std = op == OpId::std_correction;
  ReducePlan plan = make_plan(self, reduce_dim_mask(a[1], self.dim()));
  visit_float_compute(self.dtype(), [&]<class C>() {
    // As PyTorch: the divisor is clamped at 0, so correction >= N gives inf (or NaN for 0 / 0).
    const C divisor = static_cast<C>(std::max(0.0, static_cast<double>(plan.R) - correction));
    auto finish = [divisor, is_std](C m2) { return is_std ? std::sqrt(m2 / divisor) : m2 / divisor; };
    if (plan.I == 1) {
      reduce_to(MomentsOp<C>{}, plan, outs[0], [&](const Moments<C>& m, int64_t) { return finish(m.m2); });
      return;
    }
    // Rows of I accumulate elementwise: mean first, then squared deviations from it (two passes).
    const C n = static_cast<C>(plan.R);
    std::vector<C> mean = run(SumOp<C>{}, plan);
    for (C& m : mean) m /= n;
    reduce_to(SumOp<C, SquaredDeviation<C>>{{mean.data()}}, plan, outs[0],
              [&](C m2, int64_t) { return finish(m2); });
  });
}

// ---- norm.ScalarOpt_dim (self, p?, dim, keepdim) ----

double norm_p(const Value& p) { return p.is_none() ? 2.0 : p.scalar().to_double(); }

ShapeResult norm_shape(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  check_floating(self, "norm");
  std::vector<bool> mask = reduce_dim_mask(a[2], self.dim());
  if (std::isinf(norm_p(a[1]))) check_nonempty_dims(self, mask);
  return dense_meta(reduced_sizes(self.sizes(), mask, a[3].to_bool()), self.dtype(), self.device());
}

void norm_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  const Tensor& self = a[0].tensor();
  const double p = norm_p(a[1]);
  ReducePlan plan = make_plan(self, reduce_dim_mask(a[2], self.dim()));
  visit_float_compute(self.dtype(), [&]<class C>() {
    const Tensor& out = outs[0];
    if (p == 2) {
      reduce_to(SumOp<C, Square>{}, plan, out, [](C v, int64_t) { return std::sqrt(v); });
    } else if (p == 1) {
      reduce_to(SumOp<C, Abs>{}, plan, out, AsIs{});
    } else if (p == std::numeric_limits<double>::infinity()) {
      reduce_to(ExtremeOp<C, true, Abs>{}, plan, out, AsIs{});
    } else if (p == -std::numeric_limits<double>::infinity()) {
      reduce_to(ExtremeOp<C, false, Abs>{}, plan, out, AsIs{});
    } else if (p == 0) {
      reduce_to(SumOp<C, NonZero>{}, plan, out, AsIs{});
    } else {
      const C inv_p = static_cast<C>(1.0 / p);
      reduce_to(SumOp<C, PowAbs<C>>{{static_cast<C>(p)}}, plan, out,
                [inv_p](C v, int64_t) { return std::pow(v, inv_p); });
    }
  });
}

// ---- logsumexp (self, dim, keepdim): integer inputs give the default float dtype ----

ShapeResult logsumexp_shape(OpId, const Args& a) {
  const Tensor& self = a[0].tensor();
  std::vector<bool> mask = reduce_dim_mask(a[1], self.dim());
  DType out = is_floating(self.dtype()) ? self.dtype() : kFloat32;
  return dense_meta(reduced_sizes(self.sizes(), mask, a[2].to_bool()), out, self.device());
}

void logsumexp_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  Tensor self = a[0].tensor();
  if (!is_floating(self.dtype())) self = self.to(kFloat32);
  ReducePlan plan = make_plan(self, reduce_dim_mask(a[1], self.dim()));
  visit_float_compute(self.dtype(), [&]<class C>() {
    // Shift by the max so exp cannot overflow; an infinite max shifts by 0 instead (as PyTorch), so rows of
    // -inf give -inf and rows holding +inf give +inf rather than NaN.
    std::vector<C> shift = run(ExtremeOp<C, true>{}, plan);
    for (C& m : shift)
      if (std::isinf(m)) m = 0;
    SumExpOp<C> op;
    op.f.shift = shift.data();
    reduce_to(op, plan, outs[0], [&](C s, int64_t q) { return std::log(s) + shift[q]; });
  });
}

}  // namespace

void register_reduce_stats(OpTable& t) {
  t.set(OpId::var_correction, var_shape, var_kernel);
  t.set(OpId::std_correction, var_shape, var_kernel);
  t.set(OpId::norm_ScalarOpt_dim, norm_shape, norm_kernel);
  t.set(OpId::logsumexp, logsumexp_shape, logsumexp_kernel);
}

}  // namespace sinter
