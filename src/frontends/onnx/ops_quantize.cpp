// Linear quantization: QuantizeLinear (x / scale rounded half to even, plus the zero point, saturated to the
// target type), DequantizeLinear ((x - zero point) * scale, computed in float32 and returned in the scale's
// dtype), per tensor, per axis (a 1-D scale along `axis`) or blocked (opset 21: each scale covers `block_size`
// elements along `axis`), and DynamicQuantizeLinear (uint8 with a scale and zero point from the data's range).
// Targets int8, uint8, and int16/uint16 (held in int32, as the importer emulates them); float8 and int4 targets
// are rejected at load as dtypes sinter lacks.
#include <fmt/format.h>

#include "frontends/onnx/importer.h"

namespace sinter::onnx {
namespace {

// A scale or zero point made broadcastable to x.
Tensor quant_param(const Tensor& v, const Tensor& x, NodeCtx& c) {
  if (v.dim() == 0) return v;
  if (v.numel() == 1) return reshape(v, SymIntList{});
  int64_t axis = norm_axis(c.attr_int("axis", 1), x.dim(), c);
  int64_t block = c.attr_int("block_size", 0);
  if (block <= 0) {
    if (v.dim() != 1) c.fail(fmt::format("a per-axis scale or zero point must be 1-D, got {} dims", v.dim()));
    if (v.size(0) != x.size(axis))
      c.fail(fmt::format("{} scales for axis {} of size {}", v.size(0).str(), axis, x.size(axis).str()));
    SymIntList shape(static_cast<size_t>(x.dim()), SymInt(1));
    shape[axis] = v.size(0);
    return reshape(v, shape);
  }
  // Blocked: each entry repeated block times along axis (the last block may be short).
  if (v.dim() != x.dim()) c.fail("a blocked scale or zero point must have the input's rank");
  SymIntList expanded = v.sizes();
  expanded.insert(expanded.begin() + axis + 1, SymInt(block));
  SymIntList merged = v.sizes();
  merged[axis] = v.size(axis) * block;
  Tensor r = reshape(expand(unsqueeze(v, axis + 1), expanded), merged);
  if (r.size(axis) < x.size(axis)) c.fail(fmt::format("block_size {} with {} blocks does not cover axis {} of size {}",
                                                      block, v.size(axis).str(), axis, x.size(axis).str()));
  r = narrow(r, axis, 0, x.size(axis));
  for (int64_t k = 0; k < x.dim(); ++k)
    if (k != axis && r.size(k) != x.size(k)) c.fail("a blocked scale must match the input outside the blocked axis");
  return r;
}

struct Range {
  double lo, hi;
};
Range range_of(int32_t t, NodeCtx& c) {
  switch (t) {
    case proto::kDtInt8: return {-128, 127};
    case proto::kDtUInt8: return {0, 255};
    case proto::kDtInt16: return {-32768, 32767};
    case proto::kDtUInt16: return {0, 65535};
    default: c.unsupported(fmt::format("quantizing to {} is not supported", proto::data_type_name(t)));
  }
}

std::vector<Tensor> quantize_linear(NodeCtx& c) {
  const Tensor& x = c.in(0);
  int32_t target = c.has(2) ? c.type(2) : static_cast<int32_t>(c.attr_int("output_dtype", proto::kDtUInt8));
  if (target == 0) target = proto::kDtUInt8;
  Range r = range_of(target, c);
  Tensor scale = quant_param(c.in(1), x, c);
  // x / scale in x's dtype (as the reference computes it), rounded half to even; the rest in float32, exact for
  // every value that is not saturated anyway.
  Tensor q = to_copy(round(div(x, cast_to(scale, x.dtype()))), kFloat32);
  if (c.has(2)) q = add(q, to_copy(quant_param(c.in(2), x, c), kFloat32));
  q = clamp(q, Scalar(r.lo), Scalar(r.hi));
  if (emulated_type(target)) c.set_out_type(0, target);
  return {to_copy(q, to_dtype(target, "QuantizeLinear output"))};
}

std::vector<Tensor> dequantize_linear(NodeCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& s = c.in(1);
  Tensor dx = to_copy(x, kFloat32);
  if (c.has(2)) {
    if (c.type(2) != c.type(0))
      c.fail(fmt::format("zero point is {} but x is {}", proto::data_type_name(c.type(2)), proto::data_type_name(c.type(0))));
    dx = sub(dx, to_copy(quant_param(c.in(2), x, c), kFloat32));
  }
  return {cast_to(mul(dx, to_copy(quant_param(s, x, c), kFloat32)), s.dtype())};
}

// y_scale = (max(0, max x) - min(0, min x)) / 255 (1/255 when that range is empty), zero point = round(-min / scale)
// clamped to [0, 255], y = saturate(round(x / scale) + zero point).
std::vector<Tensor> dynamic_quantize_linear(NodeCtx& c) {
  const Tensor& x = c.in(0);
  if (x.dtype() != kFloat32) c.fail("takes float32");
  Tensor zero = zeros({}, c.options(kFloat32));
  Tensor hi = maximum(amax(x), zero), lo = minimum(amin(x), zero);
  Tensor range = sub(hi, lo);
  Tensor scale = div(where(eq(range, Scalar(0)), full({}, Scalar(1.0)), range), Scalar(255.0));
  Tensor zp = round(clamp(rsub(div(lo, scale), Scalar(0.0)), Scalar(0), Scalar(255)));
  Tensor y = clamp(add(round(div(x, scale)), zp), Scalar(0), Scalar(255));
  return {to_copy(y, kUInt8), scale, to_copy(zp, kUInt8)};
}

}  // namespace

void register_quantize_ops(OpTable& t) {
  t["QuantizeLinear"] = {quantize_linear};
  t["DequantizeLinear"] = {dequantize_linear};
  t["DynamicQuantizeLinear"] = {dynamic_quantize_linear};
}

}  // namespace sinter::onnx
