// conv1d, conv2d (int or "valid"/"same" padding) and conv_transpose2d: argument checks and output sizes as
// PyTorch computes them, over SymInt sizes. conv1d runs as a conv2d of height 1; an unbatched input as a
// batch of one. The output is channels-last when the input (or weight) is, as in PyTorch.
#include <fmt/ranges.h>

#include "ops/conv_kernels.h"
#include "ops/cuda_dnn.h"
#include "ops/cuda_fallback.h"
#include "ops/linalg_util.h"

namespace sinter {
namespace {

bool is_1d(OpId op) { return op == OpId::conv1d || op == OpId::conv1d_padding; }

struct ConvArgs {
  Conv2dParams p;
  int64_t spatial = 2;  // 1 for conv1d
  bool batched = true;
  std::vector<int64_t> kernel;  // per spatial dim
};

std::vector<int64_t> spatial_list(const Value& v, int64_t n, std::string_view name) {
  std::vector<int64_t> l = v.to_int_list();
  if (l.size() == 1 && n > 1) l.assign(n, l[0]);
  SINTER_CHECK(static_cast<int64_t>(l.size()) == n, "{} must have {} entries, got {}", name, n, l.size());
  return l;
}

// Shared checks of conv and conv_transpose (PyTorch's wording); fills everything but the padding.
ConvArgs check_common(const Args& args, int64_t spatial, bool transposed, int dilation_arg, int groups_arg) {
  const Tensor& x = args[0].tensor();
  const Tensor& w = args[1].tensor();
  ConvArgs c;
  c.spatial = spatial;
  SINTER_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2,
               "expected {}-D (unbatched) or {}-D (batched) input, but got input of shape {}", spatial + 1,
               spatial + 2, x.sizes().str());
  c.batched = x.dim() == spatial + 2;
  SINTER_CHECK(w.dim() == spatial + 2, "expected weight to be {}-D, but got weight of shape {}", spatial + 2,
               w.sizes().str());
  check_floating_input(x, "input");
  SINTER_CHECK(x.dtype() == w.dtype(), "input type ({}) and weight type ({}) should be the same",
               dtype_name(x.dtype()), dtype_name(w.dtype()));
  std::vector<int64_t> stride = spatial_list(args[3], spatial, "stride");
  std::vector<int64_t> dilation = spatial_list(args[dilation_arg], spatial, "dilation");
  int64_t groups = args[groups_arg].to_int();
  SINTER_CHECK(groups > 0, "non-positive groups is not supported (got groups={})", groups);
  for (int64_t s : stride)
    SINTER_CHECK(s > 0, "non-positive stride is not supported (got {})", fmt::join(stride, ", "));
  for (int64_t d : dilation)
    SINTER_CHECK(d > 0, "non-positive dilation is not supported (got {})", fmt::join(dilation, ", "));
  int64_t off = 2 - spatial;  // conv1d fills the height slot with a trivial dim
  for (int64_t i = 0; i < spatial; ++i) {
    c.p.stride[i + off] = stride[i];
    c.p.dilation[i + off] = dilation[i];
    c.kernel.push_back(w.sizes()[2 + i].guard_int());
  }
  c.p.groups = groups;
  const SymInt& cin = x.sizes()[c.batched ? 1 : 0];
  if (!transposed) {
    SINTER_CHECK(
        w.sizes()[0] % groups == 0,
        "given groups={}, expected weight to be divisible by {} at dimension 0, but got weight of shape {}",
        groups, groups, w.sizes().str());
    SINTER_CHECK(
        cin == w.sizes()[1] * groups,
        "given groups={}, weight of shape {}, expected input of shape {} to have {} channels, but got {} "
        "channels instead",
        groups, w.sizes().str(), x.sizes().str(), (w.sizes()[1] * groups).str(), cin.str());
  } else {
    SINTER_CHECK(
        cin == w.sizes()[0],
        "given transposed=1, weight of shape {}, expected input of shape {} to have {} channels, but got {} "
        "channels instead",
        w.sizes().str(), x.sizes().str(), w.sizes()[0].str(), cin.str());
    SINTER_CHECK(cin % groups == 0,
                 "given groups={}, expected the input channels ({}) to be divisible by groups", groups,
                 cin.str());
  }
  if (!args[2].is_none()) {
    const Tensor& b = args[2].tensor();
    SymInt out_channels = transposed ? w.sizes()[1] * groups : w.sizes()[0];
    SINTER_CHECK(b.dim() == 1 && b.sizes()[0] == out_channels,
                 "given weight of shape {}, expected bias to be 1-D with {} elements, but got bias of shape "
                 "{} instead",
                 w.sizes().str(), out_channels.str(), b.sizes().str());
    SINTER_CHECK(b.dtype() == x.dtype(), "input type ({}) and bias type ({}) should be the same",
                 dtype_name(x.dtype()), dtype_name(b.dtype()));
  }
  return c;
}

ConvArgs conv_args(OpId op, const Args& args) {
  int64_t spatial = is_1d(op) ? 1 : 2;
  ConvArgs c = check_common(args, spatial, false, 5, 6);
  int64_t off = 2 - spatial;
  if (op == OpId::conv1d_padding || op == OpId::conv2d_padding) {
    const std::string& mode = args[4].str_value();
    SINTER_CHECK(mode == "valid" || mode == "same",
                 "invalid padding string '{}' (expected 'valid' or 'same')", mode);
    if (mode == "same") {
      for (int64_t i = 0; i < spatial; ++i)
        SINTER_CHECK(c.p.stride[i + off] == 1, "padding='same' is not supported for strided convolutions");
      // Total padding d*(k-1), split with the odd one out on the right/bottom, as PyTorch does.
      for (int64_t i = 0; i < spatial; ++i) {
        int64_t total = c.p.dilation[i + off] * (c.kernel[i] - 1);
        c.p.pad_before[i + off] = total / 2;
        c.p.pad_after[i + off] = total - total / 2;
      }
    }
  } else {
    std::vector<int64_t> pad = spatial_list(args[4], spatial, "padding");
    for (int64_t i = 0; i < spatial; ++i) {
      SINTER_CHECK(pad[i] >= 0, "negative padding is not supported (got {})", fmt::join(pad, ", "));
      c.p.pad_before[i + off] = c.p.pad_after[i + off] = pad[i];
    }
  }
  return c;
}

// Channels-last output when the input or the weight is laid out channels-last (and not also contiguous).
bool prefers_channels_last(const Tensor& x, const Tensor& w) {
  auto cl = [](const Tensor& t) {
    return t.dim() == 4 && !t.is_contiguous() && t.is_contiguous(MemoryFormat::kChannelsLast);
  };
  return cl(x) || cl(w);
}

ShapeResult conv_shape(OpId op, const Args& args) {
  const Tensor& x = args[0].tensor();
  const Tensor& w = args[1].tensor();
  ConvArgs c = conv_args(op, args);
  int64_t off = 2 - c.spatial, first = c.batched ? 2 : 1;
  SymIntList out;
  if (c.batched) out.push_back(x.sizes()[0]);
  out.push_back(w.sizes()[0]);
  std::vector<std::string> padded, kernel;
  bool fits = true;
  for (int64_t i = 0; i < c.spatial; ++i) {
    SymInt in = x.sizes()[first + i] + c.p.pad_before[i + off] + c.p.pad_after[i + off];
    int64_t span = c.p.dilation[i + off] * (c.kernel[i] - 1) + 1;
    fits = fits && in >= span;
    padded.push_back(in.str());
    kernel.push_back(std::to_string(span));
    out.push_back((in - span) / c.p.stride[i + off] + 1);
  }
  SINTER_CHECK(
      fits,
      "calculated padded input size per channel: ({}); kernel size (with dilation): ({}); the kernel size "
      "can't be greater than the padded input size",
      fmt::join(padded, " x "), fmt::join(kernel, " x "));
  Device device = common_device(args);
  if (c.spatial == 2 && c.batched && prefers_channels_last(x, w))
    return dense_meta(out, x.dtype(), device, MemoryFormat::kChannelsLast);
  return dense_meta(out, x.dtype(), device);
}

// `t` as [N, C, H, W]: a batch of one for unbatched inputs, a height of 1 for 1-D convs.
Tensor as_4d(const Tensor& t, bool batched, bool one_d) {
  std::vector<int64_t> sizes = sizes_of(t), strides = strides_of(t);
  if (!batched) sizes.insert(sizes.begin(), 1), strides.insert(strides.begin(), 1);
  if (one_d) sizes.insert(sizes.begin() + 2, 1), strides.insert(strides.begin() + 2, 1);
  return strided_view(t, sizes, strides);
}

void conv_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  Conv2dCall c = conv2d_call(op, args, outs[0]);
  conv2d_forward(c.input, c.weight, c.bias, c.p, c.out);
}

}  // namespace

Conv2dCall conv2d_call(OpId op, const Args& args, const Tensor& out) {
  ConvArgs c = conv_args(op, args);
  bool one_d = c.spatial == 1;
  Tensor bias = args[2].is_none() ? Tensor() : args[2].tensor();
  return {as_4d(args[0].tensor(), c.batched, one_d), as_4d(args[1].tensor(), true, one_d), bias,
          as_4d(out, c.batched, one_d), c.p};
}

bool conv2d_tiled(OpId op, const Args& args, const Tensor& out, blas::TileFn tile_done, void* ctx,
                  const WeightPacker& packer) {
  if (op != OpId::conv2d && op != OpId::conv2d_padding) return false;
  ConvArgs c = conv_args(op, args);
  if (!c.batched) return false;
  Tensor bias = args[2].is_none() ? Tensor() : args[2].tensor();
  return conv2d_forward_tiled(args[0].tensor(), args[1].tensor(), bias, c.p, out, tile_done, ctx, packer);
}

namespace {

// ---- conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation) ----
struct TransposeArgs {
  ConvArgs c;
  int64_t output_padding[2];
};

TransposeArgs transpose_args(const Args& args) {
  TransposeArgs t;
  t.c = check_common(args, 2, true, 7, 6);
  std::vector<int64_t> pad = spatial_list(args[4], 2, "padding");
  std::vector<int64_t> opad = spatial_list(args[5], 2, "output_padding");
  for (int i = 0; i < 2; ++i) {
    SINTER_CHECK(pad[i] >= 0, "negative padding is not supported (got {})", fmt::join(pad, ", "));
    SINTER_CHECK(
        opad[i] >= 0 && (opad[i] < t.c.p.stride[i] || opad[i] < t.c.p.dilation[i]),
        "output padding must be smaller than either stride or dilation, but got output_padding=({}), "
        "stride=({}, {}), dilation=({}, {})",
        fmt::join(opad, ", "), t.c.p.stride[0], t.c.p.stride[1], t.c.p.dilation[0], t.c.p.dilation[1]);
    t.c.p.pad_before[i] = t.c.p.pad_after[i] = pad[i];
    t.output_padding[i] = opad[i];
  }
  return t;
}

ShapeResult conv_transpose_shape(OpId, const Args& args) {
  const Tensor& x = args[0].tensor();
  const Tensor& w = args[1].tensor();
  TransposeArgs t = transpose_args(args);
  const Conv2dParams& p = t.c.p;
  int64_t first = t.c.batched ? 2 : 1;
  SymIntList out;
  if (t.c.batched) out.push_back(x.sizes()[0]);
  out.push_back(w.sizes()[1] * p.groups);
  for (int i = 0; i < 2; ++i) {
    SymInt size = (x.sizes()[first + i] - 1) * p.stride[i] - 2 * p.pad_before[i] +
                  p.dilation[i] * (t.c.kernel[i] - 1) + t.output_padding[i] + 1;
    SINTER_CHECK(size > 0,
                 "the output size of conv_transpose2d would be non-positive ({}) for input of shape {}",
                 size.str(), x.sizes().str());
    out.push_back(size);
  }
  Device device = common_device(args);
  if (t.c.batched && prefers_channels_last(x, w))
    return dense_meta(out, x.dtype(), device, MemoryFormat::kChannelsLast);
  return dense_meta(out, x.dtype(), device);
}

void conv_transpose_kernel(OpId, const Args& args, std::vector<Tensor>& outs) {
  TransposeArgs t = transpose_args(args);
  Tensor bias = args[2].is_none() ? Tensor() : args[2].tensor();
  conv_transpose2d_forward(as_4d(args[0].tensor(), t.c.batched, false), args[1].tensor(), bias, t.c.p,
                           as_4d(outs[0], t.c.batched, false));
}

// On CUDA: cuDNN's backward data where it serves the call, else the CPU kernel through the fallback.
void conv_transpose_cuda_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  if (cuda::dnn_supported(outs.at(0).dtype())) {
    TransposeArgs t = transpose_args(args);
    Tensor bias = args[2].is_none() ? Tensor() : args[2].tensor();
    if (cuda::dnn_conv_transpose2d(as_4d(args[0].tensor(), t.c.batched, false), args[1].tensor(), bias, t.c.p,
                                   as_4d(outs[0], t.c.batched, false)))
      return;
  }
  run_without_cuda_kernel(conv_transpose_kernel, op, args, outs, false, outs[0].device());
}

}  // namespace

void register_conv_ops(OpTable& t) {
  for (OpId op : {OpId::conv1d, OpId::conv1d_padding, OpId::conv2d, OpId::conv2d_padding}) {
    t.set(op, conv_shape, conv_kernel);
    t.set_kernel(op, kCUDA, conv_cuda_kernel);
  }
}

void register_conv_transpose_ops(OpTable& t) {
  t.set(OpId::conv_transpose2d, conv_transpose_shape, conv_transpose_kernel);
  t.set_kernel(OpId::conv_transpose2d, kCUDA, conv_transpose_cuda_kernel);
}

}  // namespace sinter
