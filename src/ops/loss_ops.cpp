// cross_entropy_loss (class-index or class-probability targets, weight, ignore_index, label smoothing),
// nll_loss and mse_loss, with PyTorch's reductions: 'mean' of index targets divides by the summed weights of
// the counted targets (NaN when none counts), label smoothing mixes in the weighted mean log-probability over
// classes. Per-position terms are computed in parallel, then summed in float64.
#include <cmath>
#include <limits>

#include "ops/linalg_util.h"

namespace sinter {
namespace {

enum class Reduction { kNone, kMean, kSum };

Reduction parse_reduction(const Value& v) {
  const std::string& r = v.str_value();
  if (r == "none") return Reduction::kNone;
  if (r == "mean") return Reduction::kMean;
  SINTER_CHECK(r == "sum", "'{}' is not a valid value for reduction (expected 'mean', 'sum' or 'none')", r);
  return Reduction::kSum;
}

// The input seen as [N, C, D]: N batch items, C classes, D positions per item (the product of d1, d2, ...).
struct ClassLayout {
  int64_t N = 1, C = 1, D = 1;
};

ClassLayout class_layout(const Tensor& x) {
  std::vector<int64_t> s = sizes_of(x);
  ClassLayout l;
  if (x.dim() == 1) {
    l.C = s[0];
    return l;
  }
  l.N = s[0], l.C = s[1];
  for (size_t d = 2; d < s.size(); ++d) l.D *= s[d];
  return l;
}

// PyTorch's rule: a target of the input's own shape holds class probabilities.
bool is_prob_target(OpId op, const Tensor& x, const Tensor& target) {
  return op == OpId::cross_entropy_loss && target.sizes() == x.sizes();
}

ShapeResult loss_shape(OpId op, const Args& args) {
  const Tensor& x = args[0].tensor();
  const Tensor& target = args[1].tensor();
  Reduction red = parse_reduction(args[3]);
  check_floating_input(x, "input");
  SINTER_CHECK(x.dim() >= 1, "expected an input of at least 1 dim ([C] or [N, C, ...]), got a 0-dim tensor");
  const SymInt& C = x.sizes()[x.dim() == 1 ? 0 : 1];
  SymIntList none_shape;
  if (is_prob_target(op, x, target)) {
    SINTER_CHECK(is_floating(target.dtype()),
                 "expected a floating-point target with class probabilities, got {}",
                 dtype_name(target.dtype()));
    none_shape = x.sizes();
    none_shape.erase(none_shape.begin() + (x.dim() == 1 ? 0 : 1));
  } else {
    SINTER_CHECK(is_integral(target.dtype(), false), "expected an integer target of class indices, got {}",
                 dtype_name(target.dtype()));
    SymIntList expected = x.sizes();
    expected.erase(expected.begin() + (x.dim() == 1 ? 0 : 1));
    SINTER_CHECK(target.sizes() == expected, "expected target of shape {} for input of shape {}, got {}",
                 expected.str(), x.sizes().str(), target.sizes().str());
    none_shape = expected;
  }
  if (!args[2].is_none()) {
    const Tensor& w = args[2].tensor();
    SINTER_CHECK(
        w.dim() == 1 && w.sizes()[0] == C,
        "weight should be defined either for all {} classes or no classes, but got weight of shape {}",
        C.str(), w.sizes().str());
    check_floating_input(w, "weight");
  }
  if (op == OpId::cross_entropy_loss) {
    double eps = args[5].to_double();
    SINTER_CHECK(eps >= 0 && eps <= 1, "label_smoothing must be between 0.0 and 1.0, got {}", eps);
  }
  return dense_meta(red == Reduction::kNone ? none_shape : SymIntList{}, x.dtype(), common_device(args));
}

// Sums per-position values in float64 (fixed order, so the result does not depend on the thread count).
double total(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

template <class A>
void write_result(const Tensor& out, Reduction red, const std::vector<double>& per_pos, double value) {
  visit_floating(out.dtype(), [&]<class T>() {
    T* o = out.data_ptr<T>();
    if (red == Reduction::kNone) {
      for (size_t i = 0; i < per_pos.size(); ++i) o[i] = static_cast<T>(static_cast<A>(per_pos[i]));
    } else {
      o[0] = static_cast<T>(static_cast<A>(value));
    }
  });
}

template <class A>
void class_loss(OpId op, const Args& args, const Tensor& out) {
  const Tensor& input = args[0].tensor();
  DType cd = compute_dtype(input.dtype());
  Tensor X = contiguous_as(input, cd);
  const A* x = X.data_ptr<A>();
  ClassLayout l = class_layout(input);
  int64_t P = l.N * l.D, C = l.C, D = l.D;
  Reduction red = parse_reduction(args[3]);
  std::vector<A> w(C, A(1));
  if (!args[2].is_none()) {
    Tensor W = contiguous_as(args[2].tensor(), cd);
    std::copy(W.data_ptr<A>(), W.data_ptr<A>() + C, w.begin());
  }
  bool log_softmax = op == OpId::cross_entropy_loss;
  double eps = log_softmax ? args[5].to_double() : 0.0;
  bool prob = is_prob_target(op, input, args[1].tensor());
  Tensor T;
  std::vector<int64_t> tgt;
  int64_t ignore = prob ? 0 : args[4].to_int();
  if (prob) {
    T = contiguous_as(args[1].tensor(), cd);
  } else {
    // Class indices, checked up front so that a bad one is an Error naming it.
    Tensor ti = contiguous_as(args[1].tensor(), kInt64);
    tgt.assign(ti.data_ptr<int64_t>(), ti.data_ptr<int64_t>() + P);
    for (int64_t t : tgt)
      SINTER_CHECK(t == ignore || (t >= 0 && t < C), "target {} is out of bounds for {} classes", t, C);
  }
  // Per position: the loss term, and for index targets its weight (0 when ignored) and the smoothing term.
  std::vector<double> loss(P), wsum(prob ? 0 : P), smooth(eps > 0 && !prob ? P : 0);
  parallel_for(0, P, std::max<int64_t>(1, 4096 / std::max<int64_t>(C, 1)), [&](int64_t begin, int64_t end) {
    std::vector<A> lp(C);
    for (int64_t p = begin; p < end; ++p) {
      const A* xr = x + (p / D) * C * D + p % D;  // class c at xr[c * D]
      A lse = 0;
      if (log_softmax) {
        A mx = -std::numeric_limits<A>::infinity();
        for (int64_t c = 0; c < C; ++c) mx = std::max(mx, xr[c * D]);
        A s = 0;
        for (int64_t c = 0; c < C; ++c) s += std::exp(xr[c * D] - mx);
        lse = std::isinf(mx) ? mx : mx + std::log(s);
      }
      for (int64_t c = 0; c < C; ++c) lp[c] = xr[c * D] - lse;
      if (prob) {
        const A* tr = T.data_ptr<A>() + (p / D) * C * D + p % D;
        double acc = 0;
        for (int64_t c = 0; c < C; ++c) {
          double t = static_cast<double>(tr[c * D]);
          if (eps > 0) t = t * (1 - eps) + eps / static_cast<double>(C);
          acc -= static_cast<double>(w[c]) * static_cast<double>(lp[c]) * t;
        }
        loss[p] = acc;
        continue;
      }
      int64_t t = tgt[p];
      if (t == ignore) {
        loss[p] = 0, wsum[p] = 0;
        if (!smooth.empty()) smooth[p] = 0;
        continue;
      }
      loss[p] = -static_cast<double>(w[t]) * static_cast<double>(lp[t]);
      wsum[p] = static_cast<double>(w[t]);
      if (!smooth.empty()) {
        double s = 0;
        for (int64_t c = 0; c < C; ++c) s -= static_cast<double>(w[c]) * static_cast<double>(lp[c]);
        smooth[p] = s;
      }
    }
  });
  if (prob) {
    double sum = total(loss);
    double value = red == Reduction::kMean ? (P == 0 ? std::nan("") : sum / static_cast<double>(P)) : sum;
    write_result<A>(out, red, loss, value);
    return;
  }
  if (!smooth
           .empty()) {  // (1 - eps) * nll + eps / C * smooth, as PyTorch's cross_entropy_loss_label_smoothing
    double k = eps / static_cast<double>(C);
    if (red == Reduction::kNone) {
      for (int64_t p = 0; p < P; ++p) loss[p] = (1 - eps) * loss[p] + k * smooth[p];
      write_result<A>(out, red, loss, 0);
      return;
    }
    double denom = red == Reduction::kMean ? total(wsum) : 1.0;
    write_result<A>(out, red, loss, (1 - eps) * total(loss) / denom + k * total(smooth) / denom);
    return;
  }
  double value = total(loss);
  if (red == Reduction::kMean) value /= total(wsum);  // 0/0 = NaN when every target is ignored, as PyTorch
  write_result<A>(out, red, loss, value);
}

void class_loss_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  if (compute_dtype(outs[0].dtype()) == kFloat64)
    class_loss<double>(op, args, outs[0]);
  else
    class_loss<float>(op, args, outs[0]);
}

// ---- mse_loss ----
ShapeResult mse_shape(OpId, const Args& args) {
  const Tensor& x = args[0].tensor();
  const Tensor& t = args[1].tensor();
  Reduction red = parse_reduction(args[2]);
  DType dtype = promote_types(x.dtype(), t.dtype());
  SINTER_CHECK(is_floating(dtype), "mse_loss expects floating-point input and target, got {} and {}",
               dtype_name(x.dtype()), dtype_name(t.dtype()));
  SymIntList shape = broadcast_shapes(x.sizes(), t.sizes());
  return dense_meta(red == Reduction::kNone ? shape : SymIntList{}, dtype, common_device(args));
}

template <class A>
void mse(const Args& args, const Tensor& out, DType out_dtype) {
  Reduction red = parse_reduction(args[2]);
  const Tensor& x = args[0].tensor();
  const Tensor& t = args[1].tensor();
  SymIntList shape = broadcast_shapes(x.sizes(), t.sizes());
  std::vector<int64_t> sizes = shape.hints();
  auto expanded =
      [&](const Tensor& v) {  // v broadcast to `shape` as a view, then a dense compute copy if needed
        Tensor u = unsqueeze_to(v, static_cast<int64_t>(sizes.size()));
        std::vector<int64_t> st = strides_of(u), us = sizes_of(u);
        for (size_t d = 0; d < sizes.size(); ++d)
          if (us[d] == 1) st[d] = 0;
        return contiguous_as(strided_view(u, sizes, st), compute_dtype(out_dtype));
      };
  Tensor X = expanded(x), T = expanded(t);
  const A* xp = X.data_ptr<A>();
  const A* tp = T.data_ptr<A>();
  int64_t n = sym_product(shape).hint();
  if (red == Reduction::kNone) {
    Tensor Y = out.dtype() == compute_dtype(out_dtype)
                   ? out
                   : empty_from_meta(dense_meta(shape, compute_dtype(out_dtype), kCPU));
    A* yp = Y.data_ptr<A>();
    parallel_for(0, n, kGrainElementwise, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) yp[i] = (xp[i] - tp[i]) * (xp[i] - tp[i]);
    });
    write_into(out, Y);
    return;
  }
  int64_t chunk = 1 << 16, chunks = ceil_div(n, chunk);
  std::vector<double> partial(chunks, 0.0);
  parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      double s = 0;
      for (int64_t i = c * chunk; i < std::min(n, (c + 1) * chunk); ++i) {
        double d = static_cast<double>(xp[i]) - static_cast<double>(tp[i]);
        s += d * d;
      }
      partial[c] = s;
    }
  });
  double value = total(partial);
  if (red == Reduction::kMean) value = n == 0 ? std::nan("") : value / static_cast<double>(n);
  write_result<A>(out, red, {}, value);
}

void mse_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  DType dtype = outs[0].dtype();
  if (compute_dtype(dtype) == kFloat64)
    mse<double>(args, outs[0], dtype);
  else
    mse<float>(args, outs[0], dtype);
}

}  // namespace

void register_loss_ops(OpTable& t) {
  t.set(OpId::cross_entropy_loss, loss_shape, class_loss_kernel);
  t.set(OpId::nll_loss, loss_shape, class_loss_kernel);
  t.set(OpId::mse_loss, mse_shape, mse_kernel);
}

}  // namespace sinter
