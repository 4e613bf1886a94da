// Neural-network ONNX operators: Conv/ConvTranspose (1-D and 2-D, asymmetric pads, auto_pad), pooling of any
// rank (as separable 1-D windows, so pads, dilations and ceil_mode follow ONNX exactly), the normalisations,
// Gemm/MatMul/Einsum, LRN.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

std::vector<int64_t> spatial_sizes(const Tensor& x) {
  std::vector<int64_t> s;
  for (int64_t k = 2; k < x.dim(); ++k) s.push_back(static_cast<int64_t>(x.size(k)));
  return s;
}

struct Window {
  std::vector<int64_t> kernel, strides, dilations, begin, end;
};

// Resolves kernel/strides/dilations/pads/auto_pad for `n` spatial dims of input sizes `in`.
Window window_of(NodeCtx& c, const std::vector<int64_t>& in, std::vector<int64_t> kernel) {
  size_t n = in.size();
  Window w;
  w.kernel = kernel;
  w.strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n || pads.size() != 2 * n)
    c.fail(fmt::format("kernel/strides/dilations/pads do not match {} spatial dims", n));
  for (size_t i = 0; i < n; ++i)
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0) c.fail("kernel, strides and dilations must be positive");
  w.begin.assign(pads.begin(), pads.begin() + n);
  w.end.assign(pads.begin() + n, pads.end());
  std::string auto_pad = c.attr_str("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    w.begin.assign(n, 0);
    w.end.assign(n, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t out = (in[i] + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - in[i]);
      w.begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.end[i] = total - w.begin[i];
    }
  }
  return w;
}

// Pads the spatial dims (2..) of x by begin/end with `value`.
Tensor pad_spatial(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end, double value) {
  bool any = false;
  SymIntList p;
  for (int64_t i = static_cast<int64_t>(begin.size()) - 1; i >= 0; --i) {
    p.push_back(begin[i]), p.push_back(end[i]);
    any = any || begin[i] != 0 || end[i] != 0;
  }
  return any ? pad(x, p, "constant", value) : x;
}

// conv3d as a sum over depth taps of 2-D convolutions, each over every output depth at once (depth folded into
// the batch): out[:, :, d] = sum_j conv2d(x[:, :, d*sd + j*dd], w[:, :, j]).
Tensor conv3d_by_taps(Tensor x, const Tensor& w, const Tensor& b, const Window& win, int64_t group) {
  x = pad_spatial(x, {win.begin[0], 0, 0}, {win.end[0], 0, 0}, 0.0);
  std::vector<int64_t> hb{win.begin[1], win.begin[2]}, he{win.end[1], win.end[2]};
  if (hb != he) x = pad_spatial(x, {0, hb[0], hb[1]}, {0, he[0], he[1]}, 0.0), hb = he = {0, 0};
  int64_t n = static_cast<int64_t>(x.size(0)), ch = static_cast<int64_t>(x.size(1)), depth = static_cast<int64_t>(x.size(2));
  int64_t kd = static_cast<int64_t>(w.size(2)), sd = win.strides[0], dd = win.dilations[0];
  int64_t out_d = (depth - (kd - 1) * dd - 1) / sd + 1;
  Tensor acc;
  for (int64_t j = 0; j < kd; ++j) {
    Tensor xs = slice(x, 2, SymInt(j * dd), SymInt(j * dd + (out_d - 1) * sd + 1), sd);  // [N, C, out_d, H, W]
    Tensor flat = reshape(contiguous(permute(xs, {0, 2, 1, 3, 4})), {n * out_d, ch, xs.size(3), xs.size(4)});
    Tensor y = conv2d(flat, select(w, 2, j), Tensor(), SymIntList{win.strides[1], win.strides[2]}, SymIntList{hb[0], hb[1]},
                      SymIntList{win.dilations[1], win.dilations[2]}, group);
    acc = acc.defined() ? add(acc, y) : y;
  }
  Tensor y = permute(reshape(acc, {n, out_d, acc.size(1), acc.size(2), acc.size(3)}), {0, 2, 1, 3, 4});
  if (b.defined()) y = add(y, reshape(b, {1, -1, 1, 1, 1}));
  return contiguous(y);
}

Tensor conv(NodeCtx& c) {
  Tensor x = c.in(0), w = c.in(1);
  Tensor b = c.has(2) ? c.in(2) : Tensor();
  std::vector<int64_t> in = spatial_sizes(x);
  size_t n = in.size();
  std::vector<int64_t> kernel;
  for (int64_t k = 2; k < w.dim(); ++k) kernel.push_back(static_cast<int64_t>(w.size(k)));
  Window win = window_of(c, in, kernel);
  int64_t group = c.attr_int("group", 1);
  if (n == 0 || n > 3) c.unsupported(fmt::format("Conv with {} spatial dims (1-D, 2-D and 3-D are supported)", n));
  if (n == 3) return conv3d_by_taps(x, w, b, win, group);
  bool symmetric = win.begin == win.end;
  SymIntList padding(win.begin.begin(), win.begin.end());
  if (!symmetric) {
    x = pad_spatial(x, win.begin, win.end, 0.0);
    padding.assign(n, SymInt(0));
  }
  SymIntList stride(win.strides.begin(), win.strides.end()), dilation(win.dilations.begin(), win.dilations.end());
  if (n == 1) return conv1d(x, w, b, stride, padding, dilation, group);
  return conv2d(x, w, b, stride, padding, dilation, group);
}

// Unpadded transposed conv3d as a sum over depth taps of transposed 2-D convolutions (depth folded into the
// batch): input depth d scatters through tap j to output depth d*sd + j*dd, so each tap's result is spread to
// stride sd with zeros between, shifted by j*dd and padded to the full depth `full_d`.
Tensor conv_transpose3d_by_taps(const Tensor& x, const Tensor& w, const std::vector<int64_t>& strides,
                                const std::vector<int64_t>& dil, int64_t group, int64_t full_d) {
  int64_t n = static_cast<int64_t>(x.size(0)), ch = static_cast<int64_t>(x.size(1)), depth = static_cast<int64_t>(x.size(2));
  int64_t kd = static_cast<int64_t>(w.size(2)), sd = strides[0], dd = dil[0];
  Tensor flat = reshape(contiguous(permute(x, {0, 2, 1, 3, 4})), {n * depth, ch, x.size(3), x.size(4)});
  int64_t spread = (depth - 1) * sd + 1;
  Tensor acc;
  for (int64_t j = 0; j < kd; ++j) {
    Tensor y = conv_transpose2d(flat, select(w, 2, j), Tensor(), SymIntList{strides[1], strides[2]}, {0}, {0}, group,
                                SymIntList{dil[1], dil[2]});  // [N*D, O, H', W']
    Tensor y5 = permute(reshape(y, {n, depth, y.size(1), y.size(2), y.size(3)}), {0, 2, 1, 3, 4});  // [N, O, D, H', W']
    if (sd > 1) {
      Tensor gaps = pad(unsqueeze(y5, 3), SymIntList{0, 0, 0, 0, 0, sd - 1}, "constant", 0.0);  // [N, O, D, sd, H', W']
      y5 = slice(reshape(gaps, {n, y.size(1), depth * sd, y.size(2), y.size(3)}), 2, SymInt(0), SymInt(spread));
    }
    Tensor placed = pad(y5, SymIntList{0, 0, 0, 0, j * dd, full_d - j * dd - spread}, "constant", 0.0);
    acc = acc.defined() ? add(acc, placed) : placed;
  }
  return acc;
}

Tensor conv_transpose(NodeCtx& c) {
  Tensor x = c.in(0), w = c.in(1);
  Tensor b = c.has(2) ? c.in(2) : Tensor();
  std::vector<int64_t> in = spatial_sizes(x);
  size_t n = in.size();
  if (n == 0 || n > 3) c.unsupported(fmt::format("ConvTranspose with {} spatial dims (1-D, 2-D and 3-D are supported)", n));
  int64_t group = c.attr_int("group", 1);
  std::vector<int64_t> kernel;
  for (int64_t k = 2; k < w.dim(); ++k) kernel.push_back(static_cast<int64_t>(w.size(k)));
  std::vector<int64_t> strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  std::vector<int64_t> dil = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> out_pad = c.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> out_shape = c.attr_ints("output_shape");
  std::string auto_pad = c.attr_str("auto_pad", "NOTSET");
  if (strides.size() != n || dil.size() != n || out_pad.size() != n || pads.size() != 2 * n) c.fail("attribute sizes do not match the input");
  std::vector<int64_t> full(n), begin(n), end(n);
  for (size_t i = 0; i < n; ++i) {
    full[i] = (in[i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1;
    begin[i] = pads[i], end[i] = pads[i + n];
    if (!out_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t target = !out_shape.empty() ? out_shape[out_shape.size() - n + i] : in[i] * strides[i];
      int64_t total = full[i] + out_pad[i] - target;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor division, as the ONNX spec's
      begin[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      end[i] = total - begin[i];
    } else if (auto_pad == "VALID") {
      begin[i] = end[i] = 0;
    }
  }
  // Transposed convolution without padding, then crop begin/end (and grow by output_padding): exact for any
  // asymmetric padding.
  Tensor y;
  if (n == 3) {
    y = conv_transpose3d_by_taps(x, w, strides, dil, group, full[0]);
  } else {
    bool one_d = n == 1;
    Tensor x2 = one_d ? unsqueeze(x, 2) : x, w2 = one_d ? unsqueeze(w, 2) : w;
    SymIntList s2 = one_d ? SymIntList{1, strides[0]} : SymIntList{strides[0], strides[1]};
    SymIntList d2 = one_d ? SymIntList{1, dil[0]} : SymIntList{dil[0], dil[1]};
    y = conv_transpose2d(x2, w2, Tensor(), s2, {0}, {0}, group, d2);
    if (one_d) y = squeeze(y, {2});
  }
  std::vector<int64_t> zero(n, 0);
  y = pad_spatial(y, zero, out_pad, 0.0);
  // Negative pads (an output_shape larger than the full result) grow the output with zeros.
  std::vector<int64_t> grow_b(n), grow_e(n);
  for (size_t i = 0; i < n; ++i) grow_b[i] = std::max<int64_t>(0, -begin[i]), grow_e[i] = std::max<int64_t>(0, -end[i]);
  y = pad_spatial(y, grow_b, grow_e, 0.0);
  for (size_t i = 0; i < n; ++i) {
    int64_t len = full[i] + out_pad[i] + grow_b[i] + grow_e[i];
    y = slice(y, static_cast<int64_t>(2 + i), SymInt(std::max<int64_t>(0, begin[i])), SymInt(len - std::max<int64_t>(0, end[i])));
  }
  if (b.defined()) {
    Tensor bb = b;
    for (size_t i = 0; i < n; ++i) bb = unsqueeze(bb, -1);
    y = add(y, bb);
  }
  return y;
}

// One pooling window along spatial axis `axis` of x (already padded): combines k taps with stride and dilation.
Tensor window_axis(const Tensor& x, int64_t axis, int64_t k, int64_t s, int64_t d, int64_t out, bool is_max) {
  Tensor acc;
  for (int64_t j = 0; j < k; ++j) {
    Tensor tap = slice(x, axis, SymInt(j * d), SymInt(j * d + (out - 1) * s + 1), s);
    acc = !acc.defined() ? tap : is_max ? maximum(acc, tap) : add(acc, tap);
  }
  return acc;
}

// Output length of a pooling axis as ONNX defines it (floor, or ceil where a last window must still start
// inside the input or its left padding).
int64_t pool_out(int64_t len, int64_t k, int64_t s, int64_t d, int64_t b, int64_t e, bool ceil_mode) {
  int64_t span = (k - 1) * d + 1;
  int64_t avail = len + b + e - span;
  if (avail < 0) return 0;
  int64_t out = ceil_mode ? (avail + s - 1) / s + 1 : avail / s + 1;
  if (ceil_mode && (out - 1) * s >= len + b) --out;
  return out;
}

enum class PoolKind { kMax, kAvg, kLp };

// MaxPool's Indices for every element of x [N, C, spatial...]: (n * C + c) * S + the spatial position flattened
// row-major (storage_order 0) or column-major (1), S the spatial size, as ONNX defines them (padding not counted).
Tensor flat_positions(const Tensor& x, bool column_major) {
  int64_t nc = static_cast<int64_t>(x.size(0)) * static_cast<int64_t>(x.size(1)), s = 1;
  SymIntList spatial, reversed;
  for (int64_t k = 2; k < x.dim(); ++k) spatial.push_back(x.size(k)), s *= static_cast<int64_t>(x.size(k));
  Tensor pos = arange(Scalar(s), TensorOptions(kInt64).device(x.device()));
  if (column_major) {
    reversed.assign(spatial.rbegin(), spatial.rend());
    DimList flip;
    for (int64_t k = static_cast<int64_t>(spatial.size()) - 1; k >= 0; --k) flip.push_back(k);
    pos = permute(reshape(pos, reversed), flip);
  }
  SymIntList shape{1};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  pos = reshape(pos, shape);  // [1, spatial...]
  Tensor base = mul(arange(Scalar(nc), TensorOptions(kInt64).device(x.device())), Scalar(s));
  SymIntList bshape{nc};
  for (size_t k = 0; k < spatial.size(); ++k) bshape.push_back(1);
  SymIntList full{x.size(0), x.size(1)};
  full.insert(full.end(), spatial.begin(), spatial.end());
  return reshape(add(reshape(base, bshape), pos), full);
}

std::vector<Tensor> pool(NodeCtx& c, PoolKind kind) {
  Tensor x = c.in(0);
  std::vector<int64_t> in = spatial_sizes(x);
  size_t n = in.size();
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  if (kernel.size() != n) c.fail("kernel_shape does not match the input's spatial dims");
  Window w = window_of(c, in, kernel);
  bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  bool include_pad = c.attr_int("count_include_pad", 0) != 0;
  std::vector<int64_t> out(n), extra(n);
  for (size_t i = 0; i < n; ++i) {
    out[i] = pool_out(in[i], w.kernel[i], w.strides[i], w.dilations[i], w.begin[i], w.end[i], ceil_mode);
    int64_t need = (out[i] - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1;
    extra[i] = std::max<int64_t>(0, need - (in[i] + w.begin[i] + w.end[i]));
  }
  std::vector<int64_t> end_all(n);
  for (size_t i = 0; i < n; ++i) end_all[i] = w.end[i] + extra[i];
  auto run = [&](Tensor v, bool is_max) {
    for (size_t i = 0; i < n; ++i)
      v = window_axis(v, static_cast<int64_t>(2 + i), w.kernel[i], w.strides[i], w.dilations[i], out[i], is_max);
    return v;
  };
  if (kind == PoolKind::kMax) {
    double lowest = is_floating(x.dtype()) ? -std::numeric_limits<double>::infinity()
                    : x.dtype() == kUInt8 ? 0.0 : x.dtype() == kInt8 ? -128.0 : -2147483648.0;
    Tensor padded = pad_spatial(x, w.begin, end_all, lowest);
    if (c.node().outputs.size() < 2 || c.node().outputs[1].empty()) return {run(padded, true)};
    // With Indices: carry (value, flat index) through the same separable windows, innermost axis first and
    // replacing only on a strictly larger value, so the first maximum in row-major window order wins, as the
    // reference's loops pick it.
    Tensor idx = pad_spatial(flat_positions(x, c.attr_int("storage_order", 0) != 0), w.begin, end_all, 0.0);
    Tensor v = padded;
    for (int64_t i = static_cast<int64_t>(n) - 1; i >= 0; --i) {
      int64_t axis = 2 + i;
      Tensor best_v, best_i;
      for (int64_t j = 0; j < w.kernel[i]; ++j) {
        int64_t at = j * w.dilations[i], stop = at + (out[i] - 1) * w.strides[i] + 1;
        Tensor tv = slice(v, axis, SymInt(at), SymInt(stop), w.strides[i]);
        Tensor ti = slice(idx, axis, SymInt(at), SymInt(stop), w.strides[i]);
        if (!best_v.defined()) {
          best_v = tv, best_i = ti;
          continue;
        }
        Tensor better = gt(tv, best_v);
        best_v = where(better, tv, best_v), best_i = where(better, ti, best_i);
      }
      v = best_v, idx = best_i;
    }
    return {v, idx};
  }
  if (kind == PoolKind::kLp) {
    double p = static_cast<double>(c.attr_int("p", 2));
    Tensor s = run(pad_spatial(pow(abs(x), Scalar(p)), w.begin, end_all, 0.0), false);
    return {pow(s, Scalar(1.0 / p))};
  }
  Tensor sum = run(pad_spatial(x, w.begin, end_all, 0.0), false);
  // The divisor: the window's count of input elements (and of pads, with count_include_pad), never the
  // ceil-mode overhang.
  Tensor ones = ones_like(slice(x, 1, SymInt(0), SymInt(1)));
  for (int64_t k = 0; k < 2; ++k) ones = slice(ones, k, SymInt(0), SymInt(1));
  Tensor count = include_pad ? pad_spatial(ones, w.begin, end_all, 1.0)
                             : pad_spatial(ones, w.begin, end_all, 0.0);
  return {div(sum, run(count, false))};
}

Tensor batch_norm_onnx(NodeCtx& c, std::vector<Tensor>& extra_outs) {
  Tensor x = c.in(0), scale = c.in(1), bias = c.in(2), mean = c.in(3), var = c.in(4);
  double eps = c.attr_float("epsilon", 1e-5), momentum = c.attr_float("momentum", 0.9);
  bool training = c.attr_int("training_mode", 0) != 0;
  if (c.opset() < 9 && c.attr_int("spatial", 1) == 0) c.unsupported("BatchNormalization with spatial=0");
  auto per_channel = [&](const Tensor& p) {
    Tensor r = p;
    for (int64_t k = 2; k < x.dim(); ++k) r = unsqueeze(r, -1);
    return r;
  };
  if (!training) return batch_norm(x, scale, bias, mean, var, false, 0.0, eps);
  DimList dims{0};
  for (int64_t k = 2; k < x.dim(); ++k) dims.push_back(k);
  Tensor m = sinter::mean(x, OptDims(dims));
  Tensor v = sinter::var(x, OptDims(dims), Scalar(0));
  Tensor y = add(mul(div(sub(x, per_channel(m)), sqrt(add(per_channel(v), Scalar(eps)))), per_channel(scale)),
                 per_channel(bias));
  extra_outs = {add(mul(mean, Scalar(momentum)), mul(m, Scalar(1 - momentum))),
                add(mul(var, Scalar(momentum)), mul(v, Scalar(1 - momentum)))};
  return y;
}

// LayerNormalization: mean and inverse std over dims [axis, rank), computed in float32 for half types.
std::vector<Tensor> layer_norm_onnx(NodeCtx& c) {
  Tensor x = c.in(0);
  DType d = x.dtype();
  int64_t axis = norm_axis(c.attr_int("axis", -1), x.dim(), c);
  double eps = c.attr_float("epsilon", 1e-5);
  Tensor xf = d == kFloat16 || d == kBFloat16 ? cast_to(x, kFloat32) : x;
  DimList dims;
  for (int64_t k = axis; k < x.dim(); ++k) dims.push_back(k);
  Tensor mean = sinter::mean(xf, OptDims(dims), true);
  Tensor centered = sub(xf, mean);
  Tensor inv = rsqrt(add(sinter::mean(mul(centered, centered), OptDims(dims), true), Scalar(eps)));
  Tensor y = cast_to(mul(centered, inv), d);
  y = mul(y, c.in(1));
  if (c.has(2)) y = add(y, c.in(2));
  return {cast_to(y, d), mean, inv};
}

Tensor group_norm_onnx(NodeCtx& c) {
  Tensor x = c.in(0);
  int64_t g = c.attr_int("num_groups", 1);
  double eps = c.attr_float("epsilon", 1e-5);
  int64_t n = static_cast<int64_t>(x.size(0)), ch = static_cast<int64_t>(x.size(1));
  Tensor xr = reshape(x, {n, g, -1});
  Tensor mean = sinter::mean(xr, OptDims(DimList{2}), true);
  Tensor centered = sub(xr, mean);
  Tensor var = sinter::mean(mul(centered, centered), OptDims(DimList{2}), true);
  Tensor y = reshape(div(centered, sqrt(add(var, Scalar(eps)))), x.sizes());
  Tensor scale = c.in(1), bias = c.in(2);
  if (scale.size(0).hint() != ch) {  // opset 18: one scale per group
    scale = reshape(expand(unsqueeze(scale, 1), {g, ch / g}), {ch});
    bias = reshape(expand(unsqueeze(bias, 1), {g, ch / g}), {ch});
  }
  for (int64_t k = 2; k < x.dim(); ++k) scale = unsqueeze(scale, -1), bias = unsqueeze(bias, -1);
  return add(mul(y, scale), bias);
}

Tensor lrn(NodeCtx& c) {
  Tensor x = c.in(0);
  int64_t size = c.attr_int("size", 1);
  double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75), bias = c.attr_float("bias", 1.0);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  int64_t ch = static_cast<int64_t>(x.size(1));
  Tensor sq = mul(x, x);
  SymIntList p(2 * (x.dim() - 2), SymInt(0));
  p.push_back(before), p.push_back(after);
  Tensor padded = pad(sq, p, "constant", 0.0);
  Tensor sum;
  for (int64_t j = 0; j < size; ++j) {
    Tensor tap = slice(padded, 1, SymInt(j), SymInt(j + ch));
    sum = sum.defined() ? add(sum, tap) : tap;
  }
  return div(x, pow(add(mul(sum, Scalar(alpha / static_cast<double>(size))), Scalar(bias)), Scalar(beta)));
}

Tensor gemm(NodeCtx& c) {
  Tensor a = c.in(0), b = c.in(1);
  if (c.attr_int("transA", 0)) a = transpose(a, 0, 1);
  if (c.attr_int("transB", 0)) b = transpose(b, 0, 1);
  double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  Tensor y = matmul(a, b);
  if (alpha != 1.0) y = mul(y, Scalar(alpha));
  if (c.has(2) && beta != 0.0) {
    Tensor cc = c.in(2);
    y = add(y, beta == 1.0 ? cc : mul(cc, Scalar(beta)));
  }
  return cast_to(y, c.in(0).dtype());
}

// NegativeLogLikelihoodLoss on log-probabilities [N, C, d...] and targets [N, d...].
Tensor nll(NodeCtx& c, const Tensor& logp, const Tensor& target, const Tensor& weight) {
  std::string red = c.attr_str("reduction", "mean");
  Tensor t = cast_to(target, kInt64);
  Tensor keep = ones_like(t, kBool);
  if (c.has_attr("ignore_index")) keep = ne(t, Scalar(c.attr_int("ignore_index", 0)));
  Tensor safe = where(keep, t, zeros_like(t));
  Tensor picked = squeeze(gather(logp, 1, unsqueeze(safe, 1)), {1});
  Tensor w = weight.defined() ? reshape(index_select(weight, 0, reshape(safe, {-1})), t.sizes()) : ones_like(picked);
  w = where(keep, w, zeros_like(w));
  Tensor loss = neg(mul(picked, w));
  if (red == "none") return loss;
  if (red == "sum") return sum(loss);
  if (red != "mean") c.fail(fmt::format("unknown reduction '{}'", red));
  return div(sum(loss), sum(w));
}

}  // namespace

void register_nn_ops(OpTable& t) {
  t["NegativeLogLikelihoodLoss"] = {[](NodeCtx& c) {
    return std::vector<Tensor>{nll(c, c.in(0), c.in(1), c.has(2) ? c.in(2) : Tensor())};
  }};
  t["SoftmaxCrossEntropyLoss"] = {[](NodeCtx& c) {
    Tensor logp = log_softmax(c.in(0), 1);
    return std::vector<Tensor>{nll(c, logp, c.in(1), c.has(2) ? c.in(2) : Tensor()), logp};
  }};
  t["Conv"] = {[](NodeCtx& c) { return std::vector<Tensor>{conv(c)}; }};
  t["ConvTranspose"] = {[](NodeCtx& c) { return std::vector<Tensor>{conv_transpose(c)}; }};
  t["MaxPool"] = {[](NodeCtx& c) { return pool(c, PoolKind::kMax); }};
  t["AveragePool"] = {[](NodeCtx& c) { return pool(c, PoolKind::kAvg); }};
  t["LpPool"] = {[](NodeCtx& c) { return pool(c, PoolKind::kLp); }};
  auto global = [](const char* kind) {
    return [kind = std::string(kind)](NodeCtx& c) {
      Tensor x = c.in(0);
      DimList dims;
      for (int64_t k = 2; k < x.dim(); ++k) dims.push_back(k);
      // Accumulate float32 in float64: the sum then does not depend on each channel's memory alignment
      // (vector peeling), so equal channels stay bit-identical, as in the reference implementation.
      if (kind == "avg" && x.dtype() == kFloat32) return std::vector<Tensor>{cast_to(mean(cast_to(x, kFloat64), OptDims(dims), true), kFloat32)};
      if (kind == "avg") return std::vector<Tensor>{mean(x, OptDims(dims), true)};
      if (kind == "max") return std::vector<Tensor>{amax(x, dims, true)};
      double p = static_cast<double>(c.attr_int("p", 2));
      return std::vector<Tensor>{pow(sum(pow(abs(x), Scalar(p)), OptDims(dims), true), Scalar(1.0 / p))};
    };
  };
  t["GlobalAveragePool"] = {global("avg")};
  t["GlobalMaxPool"] = {global("max")};
  t["GlobalLpPool"] = {global("lp")};
  t["BatchNormalization"] = {[](NodeCtx& c) {
    std::vector<Tensor> extra;
    Tensor y = batch_norm_onnx(c, extra);
    std::vector<Tensor> out{y};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }};
  t["InstanceNormalization"] = {[](NodeCtx& c) {
    Tensor x = c.in(0);
    return std::vector<Tensor>{group_norm(x, static_cast<int64_t>(x.size(1)), c.in(1), c.in(2), c.attr_float("epsilon", 1e-5))};
  }};
  t["LayerNormalization"] = {layer_norm_onnx};
  t["GroupNormalization"] = {[](NodeCtx& c) { return std::vector<Tensor>{group_norm_onnx(c)}; }};
  t["LRN"] = {[](NodeCtx& c) { return std::vector<Tensor>{lrn(c)}; }};
  t["LpNormalization"] = {[](NodeCtx& c) {
    Tensor x = c.in(0);
    int64_t axis = norm_axis(c.attr_int("axis", -1), x.dim(), c);
    int64_t p = c.attr_int("p", 2);
    Tensor nrm = p == 1 ? sum(abs(x), OptDims(DimList{axis}), true) : sqrt(sum(mul(x, x), OptDims(DimList{axis}), true));
    return std::vector<Tensor>{div(x, nrm)};
  }};
  t["MeanVarianceNormalization"] = {[](NodeCtx& c) {
    Tensor x = c.in(0);
    std::vector<int64_t> axes = c.attr_ints("axes", {0, 2, 3});
    DimList dims;
    for (int64_t a : axes) dims.push_back(norm_axis(a, x.dim(), c));
    Tensor m = mean(x, OptDims(dims), true);
    Tensor var = sub(mean(mul(x, x), OptDims(dims), true), mul(m, m));
    return std::vector<Tensor>{div(sub(x, m), add(sqrt(var), Scalar(1e-9)))};
  }};
  t["Gemm"] = {[](NodeCtx& c) { return std::vector<Tensor>{gemm(c)}; }};
  t["MatMul"] = {[](NodeCtx& c) { return std::vector<Tensor>{matmul(c.in(0), c.in(1))}; }};
  t["Einsum"] = {[](NodeCtx& c) {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < c.num_inputs(); ++i) xs.push_back(c.in(i));
    std::string eq = c.attr_str("equation", "");
    std::string cleaned;
    for (char ch : eq)
      if (ch != ' ') cleaned += ch;
    return std::vector<Tensor>{einsum(cleaned, xs)};
  }};
}

}  // namespace sinter::onnx
