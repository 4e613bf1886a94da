// ONNX operators composed from sinter's ops that fit no other family: the signal windows (HannWindow,
// HammingWindow, BlackmanWindow), CenterCropPad, MaxUnpool, and Det (LU with partial pivoting, unrolled over the
// static matrix size, so it is ordinary tensor ops under capture).
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

// w[n] = sum_k a_k cos(2 pi k n / N), N = size (periodic) or size - 1 (symmetric); computed in float64 and
// returned in output_datatype (float32 by default).
std::vector<Tensor> window(NodeCtx& c, std::vector<double> coef) {
  int64_t size = c.int_at(0);
  if (size < 0) c.fail(fmt::format("size {} is negative", size));
  DType d = to_dtype(static_cast<int32_t>(c.attr_int("output_datatype", proto::kDtFloat)), "output_datatype");
  double denom = static_cast<double>(c.attr_int("periodic", 1) != 0 ? size : size - 1);
  Tensor n = arange(Scalar(size), c.options(kFloat64));
  Tensor w = full({size}, Scalar(coef[0]), c.options(kFloat64));
  for (size_t k = 1; k < coef.size(); ++k) {
    Tensor phase = mul(n, Scalar(2 * std::numbers::pi * static_cast<double>(k) / denom));
    w = add(w, mul(cos(phase), Scalar(coef[k])));
  }
  return {to_copy(w, d)};
}

// CenterCropPad: along each axis, crop the centre (the extra element of an odd difference comes off the end) or
// pad with zeros around it (the extra zero goes at the end).
std::vector<Tensor> center_crop_pad(NodeCtx& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> shape = c.ints(1);
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (axes.empty())
    for (int64_t k = 0; k < x.dim(); ++k) axes.push_back(k);
  if (axes.size() != shape.size())
    c.fail(fmt::format("shape has {} entries for {} axes", shape.size(), axes.size()));
  SymIntList pads(static_cast<size_t>(2 * x.dim()), SymInt(0));  // torch order: last dim first
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = norm_axis(axes[i], x.dim(), c);
    int64_t dim = static_cast<int64_t>(x.size(a)), want = shape[i];
    if (want < 0) c.fail(fmt::format("shape entry {} is negative", want));
    if (want < dim) {
      x = narrow(x, a, (dim - want) / 2, want);
    } else if (want > dim) {
      int64_t before = (want - dim) / 2;
      size_t slot = static_cast<size_t>(2 * (x.dim() - 1 - a));
      pads[slot] = before;
      pads[slot + 1] = want - dim - before;
    }
  }
  bool any = false;
  for (const SymInt& p : pads) any = any || p != 0;
  return {any ? pad(x, pads) : x};
}

// MaxUnpool: X's values written at their flat `indices` (as MaxPool returns them) into zeros of the unpooled
// shape ((in - 1) * stride - pads + kernel per spatial dim), then padded with zeros at the end of each spatial dim
// to output_shape when that is given.
std::vector<Tensor> max_unpool(NodeCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& idx = c.in(1);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  size_t sd = kernel.size();
  if (sd == 0 || static_cast<int64_t>(sd) != x.dim() - 2) c.fail("kernel_shape must name every spatial dim");
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(sd, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * sd, 0));
  if (strides.size() != sd || pads.size() != 2 * sd) c.fail("strides and pads must match kernel_shape");
  SymIntList inferred{x.size(0), x.size(1)};
  for (size_t k = 0; k < sd; ++k)
    inferred.push_back((x.size(static_cast<int64_t>(k) + 2) - 1) * strides[k] - (pads[k] + pads[sd + k]) + kernel[k]);
  SymInt total = 1;
  for (const SymInt& s : inferred) total = total * s;
  Tensor flat = zeros({total}, c.options(x.dtype()));
  flat = scatter(flat, 0, reshape(to_copy(idx, kInt64), {-1}), reshape(x, {-1}));
  Tensor y = reshape(flat, inferred);
  if (!c.has(2)) return {y};
  std::vector<int64_t> out = c.ints(2);
  if (out.size() != inferred.size()) c.fail(fmt::format("output_shape has {} entries for rank {}", out.size(), inferred.size()));
  SymIntList extra;
  for (size_t k = inferred.size(); k-- > 0;) {
    int64_t have = static_cast<int64_t>(inferred[k]);
    if (out[k] < have) c.fail(fmt::format("output_shape {} is smaller than the unpooled size {} in dim {}", out[k], have, k));
    extra.push_back(0);
    extra.push_back(out[k] - have);
  }
  return {pad(y, extra)};
}

// det(A) for A [..., n, n]: Gaussian elimination with partial pivoting, unrolled over n; the determinant is the
// product of the pivots times the sign of the row swaps. A zero pivot (a singular matrix) gives 0.
std::vector<Tensor> det(NodeCtx& c) {
  Tensor a = c.in(0);
  if (!is_floating(a.dtype())) c.fail("takes a floating tensor");
  if (a.dim() < 2 || a.size(-1) != a.size(-2)) c.fail(fmt::format("takes square matrices, got {}", a.sizes().str()));
  int64_t n = static_cast<int64_t>(a.size(-1));
  SymIntList batch(a.sizes().begin(), a.sizes().end() - 2);
  Tensor result = ones(batch, c.options(a.dtype()));
  Tensor rows = arange(Scalar(n), c.options(kInt64));
  for (int64_t k = 0; k < n; ++k) {
    // Swap row k with the row of the largest |a[i, k]|, i >= k.
    Tensor p = add(argmax(abs(select(narrow(a, -2, k, n - k), -1, k)), -1), Scalar(k));  // [...]
    Tensor pu = unsqueeze(p, -1);
    Tensor perm = where(eq(rows, Scalar(k)), pu, where(eq(rows, pu), Scalar(k), rows));  // [..., n]
    SymIntList full_shape = a.sizes();
    a = gather(a, -2, expand(unsqueeze(perm, -1), full_shape));
    Tensor pivot = select(select(a, -2, k), -1, k);
    result = mul(result, where(ne(p, Scalar(k)), neg(pivot), pivot));
    if (k + 1 == n) break;
    // Rows below k lose their multiple of row k.
    Tensor safe = where(eq(pivot, Scalar(0)), ones_like(pivot), pivot);
    Tensor factor = div(select(narrow(a, -2, k + 1, n - k - 1), -1, k), unsqueeze(safe, -1));  // [..., n-k-1]
    Tensor below = sub(narrow(a, -2, k + 1, n - k - 1), mul(unsqueeze(factor, -1), unsqueeze(select(a, -2, k), -2)));
    a = cat({narrow(a, -2, 0, k + 1), below}, -2);
  }
  return {result};
}

}  // namespace

void register_misc_ops(OpTable& t) {
  t["HannWindow"] = {[](NodeCtx& c) { return window(c, {0.5, -0.5}); }};
  t["HammingWindow"] = {[](NodeCtx& c) { return window(c, {25.0 / 46.0, -(1 - 25.0 / 46.0)}); }};
  t["BlackmanWindow"] = {[](NodeCtx& c) { return window(c, {0.42, -0.5, 0.08}); }};
  t["CenterCropPad"] = {center_crop_pad};
  t["MaxUnpool"] = {max_unpool};
  t["Det"] = {det};
}

}  // namespace sinter::onnx
