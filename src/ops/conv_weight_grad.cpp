// conv2d_weight_grad(input, weight_size, grad_output, stride, padding, dilation, groups): the gradient of a conv2d
// with respect to its weight (torch.nn.grad.conv2d_weight). Its math, in sinter ops, is one matrix product per
// group of the gradient [out channels, N*OH*OW] with the input's patches [N*OH*OW, in channels * KH*KW] (im2col,
// stacked from KH*KW strided slices of the padded input), as PyTorch's slow_conv2d backward does; the inductor
// records that math into a CPU graph (so it fuses), the CPU kernel runs it eagerly, and on CUDA cuDNN's backward
// filter serves the call where it can.
#include "ops/autocast.h"
#include "ops/cuda_dnn.h"
#include "ops/cuda_fallback.h"
#include "ops/dispatch.h"
#include "ops/linalg_util.h"
#include "sinter/autograd.h"
#include "sinter/ops.h"

namespace sinter {

namespace {

struct WeightGradArgs {
  Conv2dParams p;
  std::vector<int64_t> kernel;  // kh, kw
  bool exact = true;            // grad_output has the conv's output sizes (cuDNN takes only that)
};

std::vector<int64_t> pair_of(const Value& v, std::string_view name) {
  std::vector<int64_t> l = v.to_int_list();
  if (l.size() == 1) l.push_back(l[0]);
  SINTER_CHECK(l.size() == 2, "conv2d_weight_grad: {} must have 2 entries, got {}", name, l.size());
  return l;
}

WeightGradArgs weight_grad_args(const Args& a) {
  const Tensor& x = a[0].tensor();
  const Tensor& g = a[2].tensor();
  const SymIntList& ws = a[1].int_list();
  SINTER_CHECK(x.dim() == 4 && g.dim() == 4 && ws.size() == 4,
               "conv2d_weight_grad expects a 4-D input and grad_output and a 4-D weight size, got input {}, "
               "grad_output {}, weight size {}",
               x.sizes().str(), g.sizes().str(), ws.str());
  check_floating_input(x, "input");
  SINTER_CHECK(x.dtype() == g.dtype(), "conv2d_weight_grad: input ({}) and grad_output ({}) must have one dtype",
               dtype_name(x.dtype()), dtype_name(g.dtype()));
  WeightGradArgs w;
  std::vector<int64_t> stride = pair_of(a[3], "stride"), pad = pair_of(a[4], "padding"),
                       dilation = pair_of(a[5], "dilation");
  w.p.groups = a[6].to_int();
  SINTER_CHECK(w.p.groups > 0, "conv2d_weight_grad: groups must be positive, got {}", w.p.groups);
  for (int i = 0; i < 2; ++i) {
    SINTER_CHECK(stride[i] > 0 && dilation[i] > 0 && pad[i] >= 0,
                 "conv2d_weight_grad: stride and dilation must be positive and padding non-negative");
    w.p.stride[i] = stride[i];
    w.p.dilation[i] = dilation[i];
    w.p.pad_before[i] = w.p.pad_after[i] = pad[i];
    w.kernel.push_back(ws[2 + i].guard_int());
  }
  const int64_t groups = w.p.groups;
  SINTER_CHECK(ws[0] == g.sizes()[1] && ws[0] % groups == 0 && ws[1] * groups == x.sizes()[1] &&
                   x.sizes()[0] == g.sizes()[0],
               "conv2d_weight_grad: weight size {} with groups {} does not fit input {} and grad_output {}", ws.str(),
               groups, x.sizes().str(), g.sizes().str());
  // The conv of the input may have more rows than grad_output (a conv_transpose2d's output padding past its
  // stride adds rows no output reads): those rows get no gradient.
  for (int i = 0; i < 2; ++i) {
    const SymInt out = (x.sizes()[2 + i] + 2 * pad[i] - dilation[i] * (w.kernel[i] - 1) - 1) / stride[i] + 1;
    SINTER_CHECK(out >= g.sizes()[2 + i] && g.sizes()[2 + i] > 0,
                 "conv2d_weight_grad: grad_output {} is larger than the output of a conv2d of input {} with weight "
                 "size {} ({} at dim {})",
                 g.sizes().str(), x.sizes().str(), ws.str(), out.str(), 2 + i);
    w.exact = w.exact && out == g.sizes()[2 + i];
  }
  return w;
}

ShapeResult weight_grad_shape(OpId, const Args& a) {
  (void)weight_grad_args(a);
  const Tensor& x = a[0].tensor();
  // Channels-last with a channels-last input, as the filter layout cuDNN's NHWC engines write.
  const bool cl = !x.is_contiguous() && x.is_contiguous(MemoryFormat::kChannelsLast);
  return dense_meta(a[1].int_list(), x.dtype(), common_device(a),
                    cl ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous);
}

void weight_grad_cpu_kernel(OpId, const Args& a, std::vector<Tensor>& outs) {
  HookScope none(nullptr);  // the ops below are this kernel's, not the caller's graph
  NoGradGuard no_grad;
  AutocastExcluded plain;
  write_into(outs[0], conv2d_weight_grad_math(a));
}

// On CUDA: cuDNN's backward filter where it serves the call, else the math with CUDA ops.
void weight_grad_cuda_kernel(OpId op, const Args& a, std::vector<Tensor>& outs) {
  if (cuda::dnn_supported(outs.at(0).dtype())) {
    const WeightGradArgs w = weight_grad_args(a);
    if (w.exact && cuda::dnn_conv2d_weight_grad(a[0].tensor(), a[2].tensor(), w.p, outs[0])) return;
  }
  weight_grad_cpu_kernel(op, a, outs);
}

}  // namespace

Tensor conv2d_weight_grad_math(const Args& a) {
  const WeightGradArgs w = weight_grad_args(a);
  const Tensor& x = a[0].tensor();
  const Tensor& g = a[2].tensor();
  const Conv2dParams& p = w.p;
  const SymInt n = x.sizes()[0], oh = g.sizes()[2], ow = g.sizes()[3];
  const int64_t cin = x.size(1).guard_int(), cout = g.size(1).guard_int(), groups = p.groups;
  const int64_t cg = cin / groups, og = cout / groups, kh = w.kernel[0], kw = w.kernel[1];
  const int64_t toh = oh.guard_int(), tow = ow.guard_int();
  Tensor xp = p.pad_before[0] > 0 || p.pad_before[1] > 0
                  ? pad(x, {p.pad_before[1], p.pad_before[1], p.pad_before[0], p.pad_before[0]})
                  : x;
  std::vector<Tensor> taps;  // taps[i * kw + j][n, c, y, x] = xp[n, c, y * stride + i * dilation, x * stride + j * dilation]
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      const int64_t y0 = i * p.dilation[0], x0 = j * p.dilation[1];
      taps.push_back(xp.slice(2, y0, y0 + (toh - 1) * p.stride[0] + 1, p.stride[0])
                         .slice(3, x0, x0 + (tow - 1) * p.stride[1] + 1, p.stride[1]));
    }
  Tensor cols = stack(taps, 2)  // [n, cin, kh*kw, oh, ow]
                    .reshape({n, groups, cg * kh * kw, oh, ow})
                    .permute({1, 0, 3, 4, 2})
                    .reshape({groups, n * oh * ow, cg * kh * kw});
  Tensor gg = g.reshape({n, groups, og, oh, ow}).permute({1, 2, 0, 3, 4}).reshape({groups, og, n * oh * ow});
  return bmm(gg, cols).reshape({cout, cg, kh, kw});
}

void register_conv_weight_grad_ops(OpTable& t) {
  t.set(OpId::conv2d_weight_grad, weight_grad_shape, weight_grad_cpu_kernel);
  t.set_kernel(OpId::conv2d_weight_grad, kCUDA, weight_grad_cuda_kernel);
}

}  // namespace sinter
