// Reductions and row-wise ONNX operators: Reduce* (axes as an attribute before opset 13 for ReduceSum and 18
// for the others, an input after; noop_with_empty_axes; empty reductions give the identity element),
// ArgMax/ArgMin (select_last_index), Softmax/LogSoftmax/Hardmax (the 2-D coercion before opset 13), CumSum, TopK.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

enum class Red { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

Tensor reduce(NodeCtx& c, Red kind) {
  Tensor x = c.in(0);
  DType d = x.dtype();
  bool keep = c.attr_int("keepdims", 1) != 0;
  int64_t since = kind == Red::kSum ? 13 : 18;
  std::vector<int64_t> axes;
  bool from_input = c.opset() >= since;
  if (from_input) {
    if (c.has(1)) axes = c.ints(1);
  } else {
    axes = c.attr_ints("axes");
  }
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0) return x;
  DimList dims;
  if (axes.empty())
    for (int64_t k = 0; k < x.dim(); ++k) dims.push_back(k);
  for (int64_t a : axes) dims.push_back(norm_axis(a, x.dim(), c));
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  int64_t count = 1;
  for (int64_t k : dims) count *= static_cast<int64_t>(x.size(k));
  if (count == 0 && x.dim() > 0) {
    // An empty reduction gives the identity element of the operation.
    SymIntList shape;
    for (int64_t k = 0; k < x.dim(); ++k) {
      bool reduced = std::find(dims.begin(), dims.end(), k) != dims.end();
      if (!reduced) shape.push_back(x.size(k));
      else if (keep) shape.push_back(1);
    }
    double inf = std::numeric_limits<double>::infinity();
    double v = kind == Red::kProd ? 1.0
               : kind == Red::kMax ? (is_floating(d) ? -inf : d == kUInt8 ? 0.0 : -2147483648.0)
               : kind == Red::kMin ? (is_floating(d) ? inf : d == kUInt8 ? 255.0 : 2147483647.0)
               : kind == Red::kLogSum || kind == Red::kLogSumExp ? -inf
               : kind == Red::kMean ? std::nan("")
                                    : 0.0;
    return full(shape, Scalar(v), c.options(d));
  }
  OptDims od(dims);
  Tensor r;
  switch (kind) {
    case Red::kSum: r = sum(x, od, keep); break;
    case Red::kMean: r = mean(x, od, keep); break;
    case Red::kMax: r = amax(x, dims, keep); break;
    case Red::kMin: r = amin(x, dims, keep); break;
    case Red::kProd: {
      r = x;
      for (auto it = dims.rbegin(); it != dims.rend(); ++it) r = prod(r, *it, keep);
      break;
    }
    case Red::kL1: r = sum(abs(x), od, keep); break;
    case Red::kL2: r = sqrt(sum(mul(x, x), od, keep)); break;
    case Red::kLogSum: r = log(sum(x, od, keep)); break;
    case Red::kLogSumExp: r = logsumexp(x, dims, keep); break;
    case Red::kSumSquare: r = sum(mul(x, x), od, keep); break;
  }
  return cast_to(r, d);
}

Tensor arg_reduce(NodeCtx& c, bool is_max) {
  Tensor x = c.in(0);
  int64_t axis = norm_axis(c.attr_int("axis", 0), x.dim(), c);
  bool keep = c.attr_int("keepdims", 1) != 0;
  if (c.attr_int("select_last_index", 0) != 0) {
    int64_t n = static_cast<int64_t>(x.size(axis));
    Tensor f = flip(x, {axis});
    Tensor idx = is_max ? argmax(f, axis, keep) : argmin(f, axis, keep);
    return rsub(idx, Scalar(n - 1));
  }
  return is_max ? argmax(x, axis, keep) : argmin(x, axis, keep);
}

// Softmax-like ops. Before opset 13 the input is coerced to 2-D at `axis` (default 1) and normalised per row.
ImportFn softmax_like(const std::string& kind) {
  return [kind](NodeCtx& c) {
    Tensor x = c.in(0);
    auto apply = [&](const Tensor& v, int64_t dim) {
      if (kind == "Softmax") return softmax(v, dim);
      if (kind == "LogSoftmax") return log_softmax(v, dim);
      Tensor idx = argmax(v, dim, true);
      Tensor pos = arange(Scalar(static_cast<int64_t>(v.size(dim))), c.options(kInt64));
      std::vector<int64_t> shape(v.dim(), 1);
      shape[dim] = -1;
      return to_copy(eq(reshape(pos, SymIntList(shape)), idx), v.dtype());
    };
    if (c.opset() >= 13) {
      if (x.dim() == 0) return std::vector<Tensor>{apply(reshape(x, {1}), 0).reshape({})};
      return std::vector<Tensor>{apply(x, norm_axis(c.attr_int("axis", -1), x.dim(), c))};
    }
    int64_t axis = c.attr_int("axis", 1);
    if (axis < 0) axis += x.dim();
    SymInt outer = 1, inner = 1;
    for (int64_t k = 0; k < x.dim(); ++k) (k < axis ? outer : inner) *= x.size(k);
    return std::vector<Tensor>{reshape(apply(reshape(x, {outer, inner}), 1), x.sizes())};
  };
}

Tensor cumsum_onnx(NodeCtx& c) {
  Tensor x = c.in(0);
  int64_t axis = norm_axis(c.int_at(1), x.dim(), c);
  bool exclusive = c.attr_int("exclusive", 0) != 0, reverse = c.attr_int("reverse", 0) != 0;
  Tensor v = reverse ? flip(x, {axis}) : x;
  Tensor r = cumsum(v, axis);
  if (exclusive) r = sub(r, v);
  if (reverse) r = flip(r, {axis});
  return cast_to(r, x.dtype());
}

std::vector<Tensor> topk_onnx(NodeCtx& c) {
  Tensor x = c.in(0);
  int64_t k = c.opset() >= 10 ? c.int_at(1) : c.attr_int("k", 1);
  int64_t axis = norm_axis(c.attr_int("axis", -1), x.dim(), c);
  bool largest = c.attr_int("largest", 1) != 0;
  // ONNX orders equal values by index; a stable sort gives that: sort descending by value for largest.
  auto [values, indices] = topk(x, k, axis, largest, true);
  return {values, indices};
}

}  // namespace

void register_reduce_ops(OpTable& t) {
  const std::pair<const char*, Red> reds[] = {
      {"ReduceSum", Red::kSum},   {"ReduceMean", Red::kMean},         {"ReduceMax", Red::kMax},
      {"ReduceMin", Red::kMin},   {"ReduceProd", Red::kProd},         {"ReduceL1", Red::kL1},
      {"ReduceL2", Red::kL2},     {"ReduceLogSum", Red::kLogSum},     {"ReduceLogSumExp", Red::kLogSumExp},
      {"ReduceSumSquare", Red::kSumSquare}};
  for (const auto& [name, kind] : reds) {
    Red k = kind;
    t[name] = {[k](NodeCtx& c) { return std::vector<Tensor>{reduce(c, k)}; }};
  }
  t["ArgMax"] = {[](NodeCtx& c) { return std::vector<Tensor>{arg_reduce(c, true)}; }};
  t["ArgMin"] = {[](NodeCtx& c) { return std::vector<Tensor>{arg_reduce(c, false)}; }};
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) t[op] = {softmax_like(op)};
  t["CumSum"] = {[](NodeCtx& c) { return std::vector<Tensor>{cumsum_onnx(c)}; }};
  t["TopK"] = {topk_onnx};
}

}  // namespace sinter::onnx
