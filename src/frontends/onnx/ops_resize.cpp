// Resize and Upsample. Each resized axis is one linear map from L input to O output positions: the sampling
// weights (nearest, linear, cubic, with antialias, exclude_outside and every coordinate transformation) are
// computed on the host as an [O, L] matrix and applied along that axis, so one general path serves all modes.
// Nearest sampling uses index_select instead (exact for every dtype).
#include <fmt/format.h>

#include <cmath>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

struct ResizeAttrs {
  std::string mode = "nearest", coord = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude_outside = false, antialias = false;
};

double source_coord(const ResizeAttrs& a, double x, int64_t len, int64_t out, double scale, double roi_start,
                    double roi_end) {
  const std::string& m = a.coord;
  // The spec's length_resized is len * scale, a real number when scales are given.
  double out_f = static_cast<double>(len) * scale;
  if (m == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (m == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out) / (scale * static_cast<double>(len));
    double center = static_cast<double>(len) / 2;
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  if (m == "pytorch_half_pixel") return out_f > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (m == "align_corners") return out_f == 1 ? 0.0 : x * static_cast<double>(len - 1) / (out_f - 1);
  if (m == "asymmetric") return x / scale;
  if (m == "tf_crop_and_resize") {
    double l1 = static_cast<double>(len - 1);
    return out_f > 1 ? roi_start * l1 + x * (roi_end - roi_start) * l1 / (out_f - 1)
                   : 0.5 * (roi_start + roi_end) * l1;
  }
  throw Error(fmt::format("Resize: unknown coordinate_transformation_mode '{}'", m));
}

int64_t nearest_index(const ResizeAttrs& a, double x, int64_t len) {
  double f = std::floor(x);
  double r;
  if (a.nearest == "floor") r = f;
  else if (a.nearest == "ceil") r = std::ceil(x);
  else if (a.nearest == "round_prefer_ceil") r = x - f == 0.5 ? f + 1 : std::round(x);
  else r = x - f == 0.5 ? f : std::round(x);  // round_prefer_floor
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, len - 1);
}

double cubic(double x, double A) {
  x = std::abs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

// Row `x` of the weight matrix: taps around the source coordinate with their weights.
void weights_row(const ResizeAttrs& a, double x, int64_t len, double scale, std::vector<double>& row) {
  bool linear = a.mode == "linear";
  double base = std::floor(x), ratio = x - base;
  double s = a.antialias ? std::min(scale, 1.0) : 1.0;
  // Taps base+start .. base+stop; antialias widens the filter by 1/scale when downsampling.
  int64_t start, stop;
  if (linear) {
    start = a.antialias ? static_cast<int64_t>(std::floor(-1 / s) + 1) : 0;
    stop = a.antialias ? start + (2 - 2 * start) - 1 : 1;
  } else {
    start = a.antialias ? static_cast<int64_t>(std::floor(-2 / s) + 1) : -1;
    stop = a.antialias ? 1 - start : 2;
  }
  std::vector<std::pair<int64_t, double>> taps;
  double total = 0;
  for (int64_t i = start; i <= stop; ++i) {
    double arg = (static_cast<double>(i) - ratio) * s;
    double w = linear ? std::clamp(1 - std::abs(arg), 0.0, 1.0) : cubic(arg, a.cubic_a);
    int64_t j = static_cast<int64_t>(base) + i;
    if (j < 0 || j >= len) {
      if (a.exclude_outside) continue;
      j = std::clamp<int64_t>(j, 0, len - 1);
    }
    taps.emplace_back(j, w);
    total += w;
  }
  bool normalize = a.antialias || a.exclude_outside;
  for (auto [j, w] : taps) row[j] += normalize && total != 0 ? w / total : w;
}

Tensor resize_impl(NodeCtx& c, const ResizeAttrs& a, std::vector<double> scales, std::vector<int64_t> sizes,
                   std::vector<double> roi, std::vector<int64_t> axes) {
  Tensor x = c.in(0);
  int64_t rank = x.dim();
  if (axes.empty())
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  for (int64_t& ax : axes) ax = norm_axis(ax, rank, c);
  size_t n = axes.size();
  std::vector<int64_t> in(n), out(n);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<int64_t>(x.size(axes[i]));
  if (!sizes.empty()) {
    if (sizes.size() != n) c.fail("sizes does not match the resized axes");
    std::string policy = c.attr_str("keep_aspect_ratio_policy", "stretch");
    scales.assign(n, 0);
    if (policy == "stretch") {
      for (size_t i = 0; i < n; ++i) scales[i] = static_cast<double>(sizes[i]) / static_cast<double>(in[i]), out[i] = sizes[i];
    } else {
      double s = policy == "not_larger" ? 1e300 : 0;
      for (size_t i = 0; i < n; ++i) {
        double r = static_cast<double>(sizes[i]) / static_cast<double>(in[i]);
        s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
      }
      for (size_t i = 0; i < n; ++i) scales[i] = s, out[i] = static_cast<int64_t>(std::floor(static_cast<double>(in[i]) * s + 0.5));
    }
  } else {
    if (scales.size() != n) c.fail(fmt::format("scales has {} values for {} axes", scales.size(), n));
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(std::floor(static_cast<double>(in[i]) * scales[i]));
  }
  Tensor outside;  // tf_crop_and_resize: outputs whose source lies outside the input
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = axes[i], len = in[i], o = out[i];
    if (o == len && scales[i] == 1.0 && a.coord != "tf_crop_and_resize") continue;
    double rs = roi.empty() ? 0.0 : roi[i], re = roi.empty() ? 1.0 : roi[i + n];
    std::vector<bool> out_mask(o, false);
    if (a.mode == "nearest") {
      std::vector<int64_t> idx(o);
      for (int64_t k = 0; k < o; ++k) {
        double src = source_coord(a, static_cast<double>(k), len, o, scales[i], rs, re);
        if (a.coord == "tf_crop_and_resize" && (src < 0 || src > static_cast<double>(len - 1))) out_mask[k] = true;
        idx[k] = nearest_index(a, src, len);
      }
      x = index_select(x, axis, c.here(on_host([&] { return from_vector(idx, {o}); })));
    } else {
      std::vector<double> w(o * len, 0.0);
      for (int64_t k = 0; k < o; ++k) {
        double src = source_coord(a, static_cast<double>(k), len, o, scales[i], rs, re);
        if (a.coord == "tf_crop_and_resize" && (src < 0 || src > static_cast<double>(len - 1))) {
          out_mask[k] = true;
          continue;
        }
        std::vector<double> row(len, 0.0);
        weights_row(a, src, len, scales[i], row);
        std::copy(row.begin(), row.end(), w.begin() + k * len);
      }
      DType d = x.dtype();
      Tensor wt = c.here(on_host([&] { return from_vector(w, {o, len}); }));
      Tensor moved = movedim(cast_to(x, kFloat64), {axis}, {-1});
      x = cast_to(movedim(matmul(moved, transpose(wt, 0, 1)), {-1}, {axis}), d);
    }
    if (a.coord == "tf_crop_and_resize") {
      std::vector<int64_t> m(out_mask.begin(), out_mask.end());
      std::vector<int64_t> shape(rank, 1);
      shape[axis] = o;
      Tensor mt = c.here(on_host([&] { return reshape(from_vector(m, {o}), SymIntList(shape)); }));
      Tensor mb = ne(mt, Scalar(0));
      outside = outside.defined() ? logical_or(outside, mb) : mb;
    }
  }
  if (outside.defined())
    x = where(outside, full({}, Scalar(a.extrapolation), c.options(x.dtype())), x);
  return x.is_same(c.in(0)) ? clone(x) : x;
}

std::vector<Tensor> resize(NodeCtx& c) {
  ResizeAttrs a;
  a.mode = c.attr_str("mode", "nearest");
  if (a.mode == "bilinear") a.mode = "linear";
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes, axes;
  if (c.node().op_type == "Upsample" || c.opset() < 11) {
    a.coord = "asymmetric";
    a.nearest = "floor";
    if (c.node().op_type == "Upsample" && c.opset() < 9) {
      scales = c.attr_floats("scales");
      if (scales.empty()) scales = {1.0, 1.0, c.attr_float("height_scale", 1.0), c.attr_float("width_scale", 1.0)};
    } else {
      scales = c.doubles(1);
    }
  } else {
    a.coord = c.attr_str("coordinate_transformation_mode", "half_pixel");
    a.nearest = c.attr_str("nearest_mode", "round_prefer_floor");
    a.cubic_a = c.attr_float("cubic_coeff_a", -0.75);
    a.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
    a.extrapolation = c.attr_float("extrapolation_value", 0.0);
    a.antialias = c.attr_int("antialias", 0) != 0;
    axes = c.attr_ints("axes");
    if (c.has(1)) roi = c.doubles(1);
    if (c.has(2)) scales = c.doubles(2);
    if (c.has(3)) sizes = c.ints(3);
    if (scales.empty() == sizes.empty()) c.fail("exactly one of scales and sizes must be given");
  }
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic") c.fail(fmt::format("unknown mode '{}'", a.mode));
  if (a.coord != "tf_crop_and_resize") roi.clear();
  else if (roi.empty()) c.fail("tf_crop_and_resize needs roi");
  size_t n = axes.empty() ? static_cast<size_t>(c.in(0).dim()) : axes.size();
  if (!roi.empty() && roi.size() != 2 * n) c.fail("roi must have 2 values per resized axis");
  return {resize_impl(c, a, scales, sizes, roi, axes)};
}

}  // namespace

void register_resize_ops(OpTable& t) {
  t["Resize"] = {resize};
  t["Upsample"] = {resize};
}

}  // namespace sinter::onnx
