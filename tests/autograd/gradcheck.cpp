#include "autograd/gradcheck.h"

#include <cmath>

#include "sinter/autograd.h"

namespace sinter::testing {
namespace {

std::vector<Tensor> as_leaves(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) {
    if (t.defined() && is_floating(t.dtype())) {
      Tensor leaf = t.to(kFloat64).detach();
      leaf.requires_grad_(true);
      out.push_back(leaf);
    } else {
      out.push_back(t);
    }
  }
  return out;
}

double projected(const GradFn& fn, const std::vector<Tensor>& inputs, const Tensor& v) {
  NoGradGuard no_grad;
  return sum(fn(inputs).to(kFloat64) * v).item<double>();
}

::testing::AssertionResult check_once(const GradFn& fn, std::vector<Tensor> inputs, double eps, double atol,
                                      double rtol, const std::string& layout) {
  Tensor out = fn(inputs);
  // An output that does not require grad is constant in the inputs (the gradient of a linear function, to second
  // order): its analytic gradients are zeros, which the finite differences must confirm.
  Tensor v = random(out.sizes(), kFloat64, 7);
  std::vector<Tensor> wrt;
  std::vector<size_t> index;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) {
      wrt.push_back(inputs[i]);
      index.push_back(i);
    }
  std::vector<Tensor> grads(wrt.size());
  if (out.requires_grad())
    grads = autograd::grad({sum(out.to(kFloat64) * v)}, wrt, {}, {}, false, /*allow_unused=*/true);
  for (size_t k = 0; k < wrt.size(); ++k) {
    Tensor x = inputs[index[k]];
    Tensor analytic = grads[k].defined() ? grads[k].contiguous() : zeros_like(x);
    if (analytic.sizes() != x.sizes())
      return ::testing::AssertionFailure() << "input " << index[k] << ": gradient of shape " << analytic.sizes().str()
                                           << " for shape " << x.sizes().str();
    const int64_t n = x.numel().hint();
    std::vector<double> a = analytic.to(kFloat64).to_vector<double>();
    for (int64_t j = 0; j < n; ++j) {
      // Perturb element j of the input's (strided) data in place.
      Tensor flat_index = x;
      std::vector<int64_t> coord(x.dim());
      int64_t rest = j;
      for (int64_t d = x.dim() - 1; d >= 0; --d) {
        coord[d] = rest % x.size(d).hint();
        rest /= x.size(d).hint();
      }
      double* p = x.data_ptr<double>();
      for (int64_t d = 0; d < x.dim(); ++d) p += coord[d] * x.stride(d).hint();
      const double orig = *p;
      *p = orig + eps;
      const double up = projected(fn, inputs, v);
      *p = orig - eps;
      const double down = projected(fn, inputs, v);
      *p = orig;
      const double numeric = (up - down) / (2 * eps);
      if (!(std::abs(a[j] - numeric) <= atol + rtol * std::abs(numeric)))
        return ::testing::AssertionFailure() << "input " << index[k] << " " << x.sizes().str() << " element " << j
                                             << " (" << layout << "): analytic " << a[j] << ", numeric " << numeric;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

::testing::AssertionResult gradcheck(const GradFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                                     double rtol) {
  std::vector<Tensor> leaves = as_leaves(inputs);
  ::testing::AssertionResult r = check_once(fn, leaves, eps, atol, rtol, "contiguous");
  if (!r) return r;
  std::vector<Tensor> strided;
  for (const Tensor& t : leaves) {
    if (t.defined() && t.requires_grad() && t.dim() > 0) {
      Tensor nc = non_contiguous(t.detach());
      nc.requires_grad_(true);
      strided.push_back(nc);
    } else {
      strided.push_back(t);
    }
  }
  return check_once(fn, strided, eps, atol, rtol, "non-contiguous");
}

::testing::AssertionResult gradgradcheck(const GradFn& fn, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> leaves = as_leaves(inputs);
  // The gradient as a function of the inputs, itself differentiable.
  GradFn first = [fn](const std::vector<Tensor>& xs) {
    AutoGradMode on(true);  // also when the finite differences evaluate it under NoGradGuard
    std::vector<Tensor> wrt;
    for (const Tensor& x : xs)
      if (x.defined() && x.requires_grad()) wrt.push_back(x);
    Tensor out = fn(xs);
    Tensor v = random(out.sizes(), kFloat64, 11);
    std::vector<Tensor> g = autograd::grad({sum(out * v)}, wrt, {}, {}, /*create_graph=*/true, true);
    Tensor total;
    for (const Tensor& t : g)
      if (t.defined()) total = total.defined() ? total + sum(t * t) : sum(t * t);
    return total;
  };
  return check_once(first, leaves, 1e-6, 1e-4, 1e-3, "second order");
}

void check_samples(const std::vector<GradSample>& samples) {
  for (const GradSample& s : samples) {
    SCOPED_TRACE(s.what);
    try {
      EXPECT_TRUE(gradcheck(s.fn, s.inputs, s.eps));
      if (s.second_order) EXPECT_TRUE(gradgradcheck(s.fn, s.inputs));
    } catch (const std::exception& e) {
      ADD_FAILURE() << s.what << " threw: " << e.what();
    }
  }
}

Tensor away_from_zero(const SymIntList& sizes, uint64_t seed) {
  Tensor u = random(sizes, kFloat64, seed);
  NoGradGuard no_grad;
  return sign(u) * (0.2 + tanh(abs(u)));  // distinct values (no ties for max and sort), |x| < 1.2
}

Tensor positive(const SymIntList& sizes, uint64_t seed, double lo, double hi) {
  return random_positive(sizes, kFloat64, lo, hi, seed);
}

}  // namespace sinter::testing
