// Shape ONNX operators: Shape/Size (known on the host whenever sizes are static), Reshape, Flatten, Transpose,
// Squeeze/Unsqueeze, Concat, Split, Slice, Expand, Tile, Pad, the constant makers (Constant, ConstantOfShape,
// Range, EyeLike), DepthToSpace/SpaceToDepth. Opset changes handled: axes/splits/pads as inputs instead of
// attributes (Squeeze/Unsqueeze/Split 13, Slice 10, Pad 11, Reshape 5).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

std::vector<int64_t> static_sizes(const Tensor& x) {
  std::vector<int64_t> s;
  for (const SymInt& d : x.sizes()) s.push_back(static_cast<int64_t>(d));  // a symbolic size specialises
  return s;
}

Tensor host_ints(const std::vector<int64_t>& v) {
  return on_host([&] { return from_vector(v, {static_cast<int64_t>(v.size())}); });
}

// axes from the attribute (old opsets) or input `input` (new ones).
std::vector<int64_t> axes_of(NodeCtx& c, size_t input, int64_t since) {
  if (c.opset() >= since) return c.has(input) ? c.ints(input) : std::vector<int64_t>{};
  return c.attr_ints("axes");
}

Tensor reshape_onnx(const Tensor& x, std::vector<int64_t> shape, bool allowzero, NodeCtx& c) {
  SymIntList target;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (static_cast<int64_t>(i) >= x.dim()) c.fail("shape 0 copies a dimension the input does not have");
      target.push_back(x.size(static_cast<int64_t>(i)));
    } else {
      target.push_back(shape[i]);
    }
  }
  return reshape(x, target);
}

std::vector<Tensor> split_onnx(NodeCtx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = norm_axis(c.attr_int("axis", 0), x.dim(), c);
  int64_t n = static_cast<int64_t>(x.size(axis));
  std::vector<int64_t> sizes;
  if (c.opset() >= 13 && c.has(1)) sizes = c.ints(1);
  else if (c.opset() < 13) sizes = c.attr_ints("split");
  if (c.opset() < 2 && c.has(1)) sizes = c.ints(1);
  if (sizes.empty()) {
    int64_t parts = c.has_attr("num_outputs") ? c.attr_int("num_outputs", 1) : static_cast<int64_t>(c.node().outputs.size());
    if (parts <= 0) c.fail("num_outputs must be positive");
    int64_t chunk = (n + parts - 1) / parts;
    for (int64_t k = 0, left = n; k < parts; ++k, left -= chunk) sizes.push_back(std::max<int64_t>(0, std::min(chunk, left)));
  }
  SymIntList s(sizes.begin(), sizes.end());
  return split(x, s, axis);
}

Tensor slice_onnx(NodeCtx& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  } else {
    starts = c.ints(1);
    ends = c.ints(2);
    if (c.has(3)) axes = c.ints(3);
    if (c.has(4)) steps = c.ints(4);
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps must have the same length");
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = norm_axis(axes[i], x.dim(), c);
    int64_t dim = static_cast<int64_t>(x.size(axis));
    int64_t step = steps[i];
    if (step == 0) c.fail("slice step 0");
    auto clampi = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); };
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0 && e > INT64_MIN / 2) e += dim;
    if (step > 0) {
      s = clampi(s, 0, dim);
      e = clampi(e, 0, dim);
      x = slice(x, axis, SymInt(s), SymInt(std::max(s, e)), step);
    } else {
      s = clampi(s, 0, dim - 1);
      e = clampi(e, -1, dim - 1);
      // Walk backwards: flip, then slice forwards over the mirrored range.
      Tensor f = flip(x, {axis});
      int64_t fs = dim - 1 - s, fe = dim - 1 - e;
      x = slice(f, axis, SymInt(fs), SymInt(std::max(fs, fe)), -step);
    }
  }
  return x;
}

std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b, NodeCtx& c) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) c.fail(fmt::format("shapes cannot broadcast ({} vs {})", x, y));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Tensor pad_onnx(NodeCtx& c) {
  const Tensor& x = c.in(0);
  std::string mode = c.attr_str("mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  if (c.opset() < 11) {
    pads = c.attr_ints(c.opset() < 2 ? "paddings" : "pads");
    value = c.attr_float("value", 0.0);
  } else {
    pads = c.ints(1);
    if (c.has(2)) value = c.double_at(2);
  }
  int64_t rank = x.dim();
  std::vector<int64_t> axes;
  if (c.opset() >= 18 && c.has(3)) {
    for (int64_t a : c.ints(3)) axes.push_back(norm_axis(a, rank, c));
  } else {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (pads.size() != 2 * axes.size()) c.fail(fmt::format("pads has {} values, expected {}", pads.size(), 2 * axes.size()));
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) begin[axes[i]] = pads[i], end[axes[i]] = pads[i + axes.size()];
  if (mode == "wrap") {
    // Circular: concatenate slices from the other end, one axis at a time.
    Tensor r = x;
    for (int64_t a = 0; a < rank; ++a) {
      if (begin[a] == 0 && end[a] == 0) continue;
      int64_t n = static_cast<int64_t>(r.size(a));
      if (begin[a] < 0 || end[a] < 0) c.unsupported("negative pads in wrap mode");
      std::vector<Tensor> parts;
      if (begin[a] > 0) parts.push_back(slice(r, a, SymInt(n - begin[a]), SymInt(n)));
      parts.push_back(r);
      if (end[a] > 0) parts.push_back(slice(r, a, SymInt(0), SymInt(end[a])));
      r = cat(parts, a);
    }
    return r;
  }
  std::string tmode = mode == "edge" ? "replicate" : mode;
  if (tmode != "constant" && tmode != "reflect" && tmode != "replicate") c.fail(fmt::format("unknown pad mode '{}'", mode));
  // torch's pad takes the last dim first; non-constant modes pad at most the last 3 dims of a batched input,
  // so pad the dims that need it one trailing window at a time.
  SymIntList p;
  for (int64_t a = rank - 1; a >= 0; --a) p.push_back(begin[a]), p.push_back(end[a]);
  while (p.size() > 2 && p[p.size() - 1].hint() == 0 && p[p.size() - 2].hint() == 0) p.resize(p.size() - 2);
  if (tmode == "constant") {
    if (p.empty()) return clone(x);
    Tensor r = pad(x, p, "constant", value);
    return r;
  }
  Tensor r = x;
  for (int64_t a = rank - 1; a >= 0; --a) {
    if (begin[a] == 0 && end[a] == 0) continue;
    // Move axis a last, pad it as a 2-D [rows, len] problem, move it back.
    Tensor m = movedim(r, {a}, {-1});
    SymIntList sz = m.sizes();
    Tensor flat = reshape(m, {-1, 1, sz.back()});
    Tensor padded = pad(flat, {begin[a], end[a]}, tmode);
    SymIntList nsz(sz.begin(), sz.end() - 1);
    nsz.push_back(padded.size(-1));
    r = movedim(reshape(padded, nsz), {-1}, {a});
  }
  return r;
}

Tensor constant_of(NodeCtx& c) {
  if (Tensor v = c.attr_tensor("value"); v.defined()) return v;
  if (c.has_attr("value_float")) return on_host([&] { return scalar_tensor(Scalar(c.attr_float("value_float", 0)), kFloat32); });
  if (c.has_attr("value_floats")) {
    std::vector<float> f;
    for (double d : c.attr_floats("value_floats")) f.push_back(static_cast<float>(d));
    return on_host([&] { return from_vector(f, {static_cast<int64_t>(f.size())}); });
  }
  if (c.has_attr("value_int")) return on_host([&] { return scalar_tensor(Scalar(c.attr_int("value_int", 0)), kInt64); });
  if (c.has_attr("value_ints")) return host_ints(c.attr_ints("value_ints"));
  c.unsupported("Constant without a tensor, float or int value (strings and sparse values are not supported)");
}

}  // namespace

void register_shape_ops(OpTable& t) {
  // Shape and Size are known on the host whenever the sizes are concrete; a symbolic size specialises.
  t["Shape"] = {[](NodeCtx& c) {
    std::vector<int64_t> s = static_sizes(c.in(0));
    int64_t r = static_cast<int64_t>(s.size());
    int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, start, r);
    return std::vector<Tensor>{host_ints(std::vector<int64_t>(s.begin() + start, s.begin() + end))};
  }, false, false, true};
  t["Size"] = {[](NodeCtx& c) {
    int64_t n = 1;
    for (int64_t d : static_sizes(c.in(0))) n *= d;
    return std::vector<Tensor>{on_host([&] { return scalar_tensor(Scalar(n), kInt64); })};
  }, false, false, true};
  t["Reshape"] = {[](NodeCtx& c) {
    std::vector<int64_t> shape = c.opset() < 5 ? c.attr_ints("shape") : c.ints(1);
    return std::vector<Tensor>{reshape_onnx(c.in(0), shape, c.attr_int("allowzero", 0) != 0, c)};
  }};
  t["Flatten"] = {[](NodeCtx& c) {
    const Tensor& x = c.in(0);
    int64_t axis = c.attr_int("axis", 1);
    if (axis < 0) axis += x.dim();
    if (axis < 0 || axis > x.dim()) c.fail("axis out of range");
    SymInt outer = 1, inner = 1;
    for (int64_t k = 0; k < x.dim(); ++k) (k < axis ? outer : inner) *= x.size(k);
    return std::vector<Tensor>{reshape(x, {outer, inner})};
  }};
  t["Transpose"] = {[](NodeCtx& c) {
    const Tensor& x = c.in(0);
    std::vector<int64_t> perm = c.attr_ints("perm");
    if (perm.empty())
      for (int64_t k = x.dim() - 1; k >= 0; --k) perm.push_back(k);
    return std::vector<Tensor>{permute(x, DimList(perm))};
  }};
  t["Squeeze"] = {[](NodeCtx& c) {
    const Tensor& x = c.in(0);
    std::vector<int64_t> axes = axes_of(c, 1, 13);
    if (axes.empty()) return std::vector<Tensor>{squeeze(x)};
    DimList dims;
    for (int64_t a : axes) dims.push_back(norm_axis(a, x.dim(), c));
    return std::vector<Tensor>{squeeze(x, dims)};
  }};
  t["Unsqueeze"] = {[](NodeCtx& c) {
    Tensor x = c.in(0);
    std::vector<int64_t> axes = axes_of(c, 1, 13);
    int64_t out_rank = x.dim() + static_cast<int64_t>(axes.size());
    for (int64_t& a : axes) a = norm_axis(a, out_rank, c);
    std::sort(axes.begin(), axes.end());
    for (int64_t a : axes) x = unsqueeze(x, a);
    return std::vector<Tensor>{x};
  }};
  t["Concat"] = {[](NodeCtx& c) {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < c.num_inputs(); ++i)
      if (c.has(i)) xs.push_back(c.in(i));
    if (xs.empty()) c.fail("needs at least one input");
    int64_t axis = norm_axis(c.attr_int("axis", 1), xs[0].dim(), c);
    return std::vector<Tensor>{cat(xs, axis)};
  }};
  t["Split"] = {split_onnx};
  t["Slice"] = {[](NodeCtx& c) { return std::vector<Tensor>{slice_onnx(c)}; }};
  t["Expand"] = {[](NodeCtx& c) {
    const Tensor& x = c.in(0);
    std::vector<int64_t> shape = broadcast_shape(static_sizes(x), c.ints(1), c);
    return std::vector<Tensor>{expand(x, SymIntList(shape.begin(), shape.end()))};
  }};
  t["Tile"] = {[](NodeCtx& c) {
    std::vector<int64_t> reps = c.ints(1);
    return std::vector<Tensor>{repeat(c.in(0), SymIntList(reps.begin(), reps.end()))};
  }};
  t["Pad"] = {[](NodeCtx& c) { return std::vector<Tensor>{pad_onnx(c)}; }};
  t["Constant"] = {[](NodeCtx& c) { return std::vector<Tensor>{constant_of(c)}; }};
  t["ConstantOfShape"] = {[](NodeCtx& c) {
    std::vector<int64_t> shape = c.ints(0);
    Tensor v = c.attr_tensor("value");
    DType d = v.defined() ? v.dtype() : kFloat32;
    Scalar fill = v.defined() ? on_host([&] { return v.reshape({-1})[0].item_scalar(); }) : Scalar(0.0);
    return std::vector<Tensor>{full(SymIntList(shape.begin(), shape.end()), fill, c.options(d))};
  }};
  t["Range"] = {[](NodeCtx& c) {
    DType d = c.in(0).dtype();
    if (is_floating(d)) {
      double start = c.double_at(0), limit = c.double_at(1), delta = c.double_at(2);
      if (delta == 0) c.fail("delta 0");
      int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
      // start + i*delta, as ONNX defines it (arange's accumulated bound can differ by one element).
      Tensor idx = arange(Scalar(n), c.options(kFloat64));
      return std::vector<Tensor>{cast_to(add(mul(idx, Scalar(delta)), Scalar(start)), d)};
    }
    int64_t start = c.int_at(0), limit = c.int_at(1), delta = c.int_at(2);
    if (delta == 0) c.fail("delta 0");
    int64_t n = std::max<int64_t>(0, (limit - start + delta + (delta > 0 ? -1 : 1)) / delta);
    Tensor idx = arange(Scalar(n), c.options(kInt64));
    return std::vector<Tensor>{cast_to(add(mul(idx, Scalar(delta)), Scalar(start)), d)};
  }};
  t["EyeLike"] = {[](NodeCtx& c) {
    const Tensor& x = c.in(0);
    if (x.dim() != 2) c.fail("EyeLike needs a 2-D input");
    DType d = c.has_attr("dtype") ? to_dtype(static_cast<int32_t>(c.attr_int("dtype", 1)), "EyeLike dtype") : x.dtype();
    int64_t k = c.attr_int("k", 0);
    Tensor rows = unsqueeze(arange(Scalar(x.size(0).hint()), c.options(kInt64)), 1);
    Tensor cols = unsqueeze(arange(Scalar(x.size(1).hint()), c.options(kInt64)), 0);
    return std::vector<Tensor>{to_copy(eq(sub(cols, rows), Scalar(k)), d)};
  }};
  t["DepthToSpace"] = {[](NodeCtx& c) {
    const Tensor& x = c.in(0);
    int64_t b = c.attr_int("blocksize", 1);
    std::vector<int64_t> s = static_sizes(x);
    if (s.size() != 4) c.fail("needs a 4-D input");
    int64_t n = s[0], ch = s[1], h = s[2], w = s[3];
    Tensor r;
    if (c.attr_str("mode", "DCR") == "DCR") {
      r = permute(reshape(x, {n, b, b, ch / (b * b), h, w}), {0, 3, 4, 1, 5, 2});
    } else {
      r = permute(reshape(x, {n, ch / (b * b), b, b, h, w}), {0, 1, 4, 2, 5, 3});
    }
    return std::vector<Tensor>{reshape(r, {n, ch / (b * b), h * b, w * b})};
  }};
  t["SpaceToDepth"] = {[](NodeCtx& c) {
    const Tensor& x = c.in(0);
    int64_t b = c.attr_int("blocksize", 1);
    std::vector<int64_t> s = static_sizes(x);
    if (s.size() != 4) c.fail("needs a 4-D input");
    int64_t n = s[0], ch = s[1], h = s[2], w = s[3];
    Tensor r = permute(reshape(x, {n, ch, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
    return std::vector<Tensor>{reshape(r, {n, ch * b * b, h / b, w / b})};
  }};
}

}  // namespace sinter::onnx
