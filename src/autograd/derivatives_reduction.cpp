// Derivative rows of the reductions, scans, softmaxes and sorts.
#include <cmath>
#include <limits>

#include "autograd/derivatives.h"
#include "ops/dispatch.h"
#include "sinter/ops.h"
#include "support/check.h"

namespace sinter::autograd {
namespace {

using C = BackwardContext;

// The reduced dims of a `dim` argument (None or empty: every dim), normalised to [0, rank).
std::vector<int64_t> reduced_dims(const Value& dim, int64_t rank) {
  std::vector<int64_t> out;
  if (!dim.is_none())
    for (int64_t d : dim.to_int_list()) out.push_back(d < 0 ? d + rank : d);
  if (out.empty())
    for (int64_t d = 0; d < rank; ++d) out.push_back(d);
  return out;
}

// A reduction's output (or its gradient) with the reduced dims put back as size 1, so it broadcasts to the input.
Tensor unsqueeze_reduced(Tensor t, const std::vector<int64_t>& dims, bool keepdim, int64_t rank) {
  if (keepdim || rank == 0) return t;
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t d : sorted) t = t.unsqueeze(d);
  return t;
}

Tensor expand_to(const Tensor& g, const SymIntList& sizes) { return g.expand(sizes); }

int64_t reduced_count(const SymIntList& sizes, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= sizes[d].guard_int();
  return n;
}

// Gradient of amax/amin-like reductions: split evenly among the elements equal to the result.
Tensor evenly_to_extremes(const Tensor& g, const Tensor& x, const Tensor& result, const std::vector<int64_t>& dims,
                          bool keepdim) {
  Tensor r = unsqueeze_reduced(result, dims, keepdim, x.dim());
  Tensor hits = (x == r).to(g.dtype());
  Tensor count = sum(hits, DimList(dims), /*keepdim=*/true);
  return unsqueeze_reduced(g, dims, keepdim, x.dim()) * hits / count;
}

// The product of every other element along `dim` (exact with zeros): exclusive cumulative products from both ends.
Tensor prod_of_others(const Tensor& x, int64_t dim) {
  const int64_t n = x.size(dim).guard_int();
  if (n == 0) return x;
  Tensor one = ones_like(x.narrow(dim, 0, 1));
  Tensor left = cat({one, cumprod(x.narrow(dim, 0, n - 1), dim)}, dim);
  Tensor xr = flip(x, {dim});
  Tensor right = flip(cat({one, cumprod(xr.narrow(dim, 0, n - 1), dim)}, dim), {dim});
  return left * right;
}

Tensor reverse_cumsum(const Tensor& g, int64_t dim) { return flip(cumsum(flip(g, {dim}), dim), {dim}); }

// cumprod's derivative, d y[j] / d x[k] = prod(x[i] : i <= j, i != k), without reading data on the host (so it
// traces into a joint graph) and right where x has zeros. Per slice along dim, with z its first zero: before z,
// (reverse_cumsum(g * y) / x)[k]; at z, prod(x[i] : i < z) * sum(g[j] * prod(x[i] : z < i <= j) : j >= z);
// after z, 0 (every product it sums holds x[z]). Its own derivative (a double backward) is exact away from zeros:
// it does not see how the values after z depend on x[z].
Tensor cumprod_grad(const Tensor& x, const Tensor& g, const Tensor& y, int64_t dim) {
  Tensor is_zero = x == 0.0;
  Tensor zeros_so_far = cumsum(is_zero, dim);
  Tensor before = zeros_so_far == 0;
  Tensor first = logical_and(is_zero, zeros_so_far == 1);
  Tensor safe = where(before, x, 1.0);
  Tensor before_zero = reverse_cumsum(g * y, dim) / safe;
  Tensor tail = cumprod(where(logical_or(before, first), 1.0, x), dim);
  Tensor at_zero = cumprod(safe, dim) * sum(where(before, 0.0, g * tail), {dim}, true);
  return where(before, before_zero, where(first, at_zero, 0.0));
}

// Gradient of the values of a (values, indices) result along dim: scattered back to where they came from.
Tensor scatter_back(const Tensor& g, const Tensor& indices, const GradMeta& self, int64_t dim, bool keepdim) {
  Tensor gi = g, ii = indices;
  if (!keepdim && static_cast<int64_t>(self.sizes.size()) > g.dim()) {
    gi = gi.unsqueeze(dim);
    ii = ii.unsqueeze(dim);
  }
  if (self.sizes.empty()) return gi.reshape({});
  return scatter(zeros(self.sizes, TensorOptions(g.dtype(), g.device())), dim, ii, gi);
}

Tensor norm_grad(const C& c) {
  Tensor x = c.t("self"), result = c.result(), g = c.grad();
  const int64_t rank = x.dim();
  const double p = c.arg("p").is_none() ? 2.0 : c.arg("p").to_double();
  std::vector<int64_t> dims = reduced_dims(c.arg("dim"), rank);
  const bool keepdim = c.b("keepdim");
  Tensor gk = unsqueeze_reduced(g, dims, keepdim, rank), rk = unsqueeze_reduced(result, dims, keepdim, rank);
  if (p == 0) return zeros_like(x);
  if (p == 1) return gk * sign(x);
  if (std::isinf(p)) {
    Tensor hits = (abs(x) == rk).to(g.dtype());
    return gk * sign(x) * hits / sum(hits, DimList(dims), true);
  }
  if (p == 2) return where(rk == 0.0, zeros_like(x), gk * x / rk);
  return where(rk == 0.0, zeros_like(x), gk * x * pow(abs(x), p - 2) / pow(rk, p - 1));
}

void variance_grads(C& c, bool is_std) {
  Tensor x = c.t("self"), g = c.grad();
  const int64_t rank = x.dim();
  std::vector<int64_t> dims = reduced_dims(c.arg("dim"), rank);
  const bool keepdim = c.b("keepdim");
  const double correction = c.arg("correction").is_none() ? 1.0 : c.arg("correction").to_double();
  const double n = static_cast<double>(reduced_count(x.sizes(), dims));
  Tensor centered = x - mean(x, DimList(dims), true);
  Tensor gk = unsqueeze_reduced(g, dims, keepdim, rank);
  if (!is_std) return c.set("self", gk * centered * (2.0 / (n - correction)));
  Tensor rk = unsqueeze_reduced(c.result(), dims, keepdim, rank);
  c.set("self", gk * centered / (rk * (n - correction)));
}

}  // namespace

void add_reduction_rows(std::vector<DerivativeRow>& rows) {
  auto row = [&](OpId op, const char* saves, BackwardFormula f) { rows.push_back({op, saves, f}); };
  row(OpId::sum, "", [](C& c) { c.set("self", expand_to(c.grad(), c.meta("self").sizes)); });
  row(OpId::sum_dim_IntList, "", [](C& c) {
    const SymIntList& sizes = c.meta("self").sizes;
    const int64_t rank = static_cast<int64_t>(sizes.size());
    std::vector<int64_t> dims = reduced_dims(c.arg("dim"), rank);
    c.set("self", expand_to(unsqueeze_reduced(c.grad(), dims, c.b("keepdim"), rank), sizes));
  });
  row(OpId::mean, "", [](C& c) {
    const SymIntList& sizes = c.meta("self").sizes;
    c.set("self", expand_to(c.grad(), sizes) / static_cast<double>(sym_product(sizes).guard_int()));
  });
  row(OpId::mean_dim, "", [](C& c) {
    const SymIntList& sizes = c.meta("self").sizes;
    const int64_t rank = static_cast<int64_t>(sizes.size());
    std::vector<int64_t> dims = reduced_dims(c.arg("dim"), rank);
    Tensor g = unsqueeze_reduced(c.grad(), dims, c.b("keepdim"), rank);
    c.set("self", expand_to(g, sizes) / static_cast<double>(reduced_count(sizes, dims)));
  });
  row(OpId::prod, "self", [](C& c) {
    Tensor x = c.t("self");
    if (x.dim() == 0) return c.set("self", c.grad());
    Tensor flat = x.reshape({-1});
    c.set("self", (c.grad() * prod_of_others(flat, 0)).reshape(x.sizes()));
  });
  row(OpId::prod_dim_int, "self", [](C& c) {
    Tensor x = c.t("self");
    if (x.dim() == 0) return c.set("self", c.grad());
    int64_t dim = c.i("dim");
    if (dim < 0) dim += x.dim();
    Tensor g = unsqueeze_reduced(c.grad(), {dim}, c.b("keepdim"), x.dim());
    c.set("self", g * prod_of_others(x, dim));
  });
  for (OpId op : {OpId::amax, OpId::amin})
    row(op, "self, result", [](C& c) {
      Tensor x = c.t("self");
      c.set("self", evenly_to_extremes(c.grad(), x, c.result(), reduced_dims(c.arg("dim"), x.dim()), c.b("keepdim")));
    });
  for (OpId op : {OpId::max, OpId::min})
    row(op, "self, result", [](C& c) {
      Tensor x = c.t("self");
      c.set("self", evenly_to_extremes(c.grad(), x, c.result(), reduced_dims(Value(), x.dim()), false));
    });
  for (OpId op : {OpId::max_dim, OpId::min_dim})
    row(op, "result", [](C& c) {
      const GradMeta& m = c.meta("self");
      int64_t dim = c.i("dim");
      if (dim < 0) dim += static_cast<int64_t>(m.sizes.size());
      c.set("self", scatter_back(c.grad(0), c.result(1), m, dim, c.b("keepdim")));
    });
  row(OpId::var_correction, "self", [](C& c) { variance_grads(c, false); });
  row(OpId::std_correction, "self, result", [](C& c) { variance_grads(c, true); });
  row(OpId::norm_ScalarOpt_dim, "self, result", [](C& c) { c.set("self", norm_grad(c)); });
  row(OpId::logsumexp, "self, result", [](C& c) {
    Tensor x = c.t("self");
    std::vector<int64_t> dims = reduced_dims(c.arg("dim"), x.dim());
    const bool keepdim = c.b("keepdim");
    Tensor r = unsqueeze_reduced(c.result(), dims, keepdim, x.dim());
    c.set("self", unsqueeze_reduced(c.grad(), dims, keepdim, x.dim()) * exp(x - r));
  });
  row(OpId::cumsum, "", [](C& c) {
    const int64_t rank = static_cast<int64_t>(c.meta("self").sizes.size());
    if (rank == 0) return c.set("self", c.grad());
    int64_t dim = c.i("dim");
    c.set("self", reverse_cumsum(c.grad(), dim < 0 ? dim + rank : dim));
  });
  row(OpId::cumprod, "self, result", [](C& c) {
    Tensor x = c.t("self");
    if (x.dim() == 0) return c.set("self", c.grad());
    int64_t dim = c.i("dim");
    if (dim < 0) dim += x.dim();
    c.set("self", cumprod_grad(x, c.grad(), c.result(), dim));
  });
  row(OpId::softmax_int, "result", [](C& c) {
    Tensor y = c.result(), g = c.grad().to(y.dtype());
    c.set("self", y * (g - sum(g * y, {c.i("dim")}, true)));
  });
  row(OpId::log_softmax_int, "result", [](C& c) {
    Tensor y = c.result(), g = c.grad().to(y.dtype());
    c.set("self", g - exp(y) * sum(g, {c.i("dim")}, true));
  });
  row(OpId::sort, "result", [](C& c) {
    const GradMeta& m = c.meta("self");
    int64_t dim = c.i("dim");
    if (dim < 0) dim += static_cast<int64_t>(m.sizes.size());
    c.set("self", scatter_back(c.grad(0), c.result(1), m, dim, true));
  });
  row(OpId::topk, "result", [](C& c) {
    const GradMeta& m = c.meta("self");
    int64_t dim = c.i("dim");
    if (dim < 0) dim += static_cast<int64_t>(m.sizes.size());
    c.set("self", scatter_back(c.grad(0), c.result(1), m, dim, true));
  });
}

}  // namespace sinter::autograd
