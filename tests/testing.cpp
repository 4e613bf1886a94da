#include "testing.h"

#include <algorithm>

namespace sinter::testing {

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 1e-5;
    case DType::kFloat64: return 1e-12;
    case DType::kFloat16:
    case DType::kBFloat16: return 1e-2;
    default: return 0;
  }
}

namespace {
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

double rel_error(const Tensor& actual, const Tensor& expected) {
  std::vector<double> a = values(actual), e = values(expected);
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < e.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (std::isinf(a[i]) && a[i] == e[i]) continue;
    double d = a[i] - e[i];
    num += d * d;
    den += e[i] * e[i];
  }
  if (num == 0) return 0;
  if (!std::isfinite(num)) return INFINITY;
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

double max_abs_error(const Tensor& actual, const Tensor& expected) {
  std::vector<double> a = values(actual), e = values(expected);
  double m = 0;
  for (size_t i = 0; i < a.size() && i < e.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (a[i] == e[i]) continue;
    m = std::max(m, std::fabs(a[i] - e[i]));
  }
  return m;
}

::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, double rtol) {
  if (actual.sizes().hints() != expected.sizes().hints())
    return ::testing::AssertionFailure() << "sizes differ: " << actual.sizes().str() << " vs "
                                         << expected.sizes().str();
  if (rtol < 0) rtol = std::max(tolerance(actual.dtype()), tolerance(expected.dtype()));
  std::vector<double> a = values(actual), e = values(expected);
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) != std::isnan(e[i]))
      return ::testing::AssertionFailure() << "NaN mismatch at flat index " << i << ": " << a[i] << " vs " << e[i];
    if (std::isinf(e[i]) && a[i] != e[i])
      return ::testing::AssertionFailure() << "inf mismatch at flat index " << i << ": " << a[i] << " vs " << e[i];
  }
  double err = rel_error(actual, expected);
  if (rtol == 0 ? err != 0 : err > rtol) {
    size_t worst = 0;
    double wd = -1;
    for (size_t i = 0; i < a.size(); ++i) {
      double d = std::fabs(a[i] - e[i]);
      if (std::isfinite(d) && d > wd) {
        wd = d;
        worst = i;
      }
    }
    return ::testing::AssertionFailure() << "relative error " << err << " > " << rtol << " (worst at flat index "
                                         << worst << ": " << (a.empty() ? 0 : a[worst]) << " vs "
                                         << (e.empty() ? 0 : e[worst]) << ")";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult equal(const Tensor& actual, const Tensor& expected) {
  return close(actual, expected, 0);
}

Tensor random(const SymIntList& sizes, DType dtype, uint64_t seed) {
  GeneratorState saved = get_rng_state();
  manual_seed(seed * 7919 + 17);
  Tensor out;
  if (is_floating(dtype)) out = randn(sizes, TensorOptions(kFloat64)).to(dtype);
  else if (dtype == kBool) out = randint(0, 2, sizes, TensorOptions(kInt64)).to(kBool);
  else if (dtype == kUInt8) out = randint(0, 10, sizes, TensorOptions(kInt64)).to(dtype);
  else out = randint(-10, 10, sizes, TensorOptions(kInt64)).to(dtype);
  set_rng_state(saved);
  return out;
}

Tensor random_positive(const SymIntList& sizes, DType dtype, double lo, double hi, uint64_t seed) {
  GeneratorState saved = get_rng_state();
  manual_seed(seed * 7919 + 29);
  Tensor out = rand(sizes, TensorOptions(kFloat64));
  out = (out * (hi - lo) + lo).to(dtype);
  set_rng_state(saved);
  return out;
}

Tensor non_contiguous(const Tensor& t) {
  if (t.dim() == 0) return t;
  // Every second element of a buffer twice as long in the last dim: same values, stride 2.
  SymIntList big = t.sizes();
  big.back() = big.back() * 2;
  Tensor buffer = zeros(big, TensorOptions(t.dtype()));
  Tensor view = buffer.slice(-1, 0, std::nullopt, 2);
  view.copy_(t);
  return view;
}

}  // namespace sinter::testing
