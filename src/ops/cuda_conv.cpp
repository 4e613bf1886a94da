// conv1d and conv2d on CUDA tensors: through cuDNN where it serves the call (ops/cuda_dnn.h), else as an
// implicit GEMM built from pieces that already run on the device: the input, zero-padded into a buffer of its own
// when the conv pads (copies that each write one dense span, which is all the device's copy kernel writes),
// viewed through strides as its im2col (one row per output pixel and one column per (tap, input channel), or the
// transpose), made dense by the copy kernel unless the view already is a matrix (a 1x1 conv), then multiplied
// with the weight by matmul_into (cuBLAS), the bias broadcast into the product first and accumulated onto
// (beta = 1), so a reduced float is rounded once, as the CPU kernel rounds it. The output's layout picks the
// formulation, so the product is written straight into the output: contiguous outputs are per image and group
// W [Og, K] @ col [K, OH*OW] (K = (c, ki, kj), as the weight is stored), channels-last ones col [OH*OW, K] @
// W^T [K, Og] (K = (ki, kj, c), channel-innermost reads); a grouped channels-last output, whose group's channels
// are not a dense matrix, gets the product in a buffer copied into it. Where cuBLAS does not serve the dtype the
// op's CPU kernel runs through the fallback (ops/cuda_fallback.h), as the matrix products decide
// (linalg_matmul.cpp).
#include <algorithm>
#include <optional>

#include "ops/conv_kernels.h"
#include "ops/copy.h"
#include "ops/cuda_blas.h"
#include "ops/cuda_dnn.h"
#include "ops/cuda_fallback.h"
#include "ops/linalg_util.h"
#include "sinter/cuda.h"
#include "tensor/cuda_device.h"
#include "tensor/cuda_graph.h"

namespace sinter {
namespace {

// The im2col of a batch chunk stays within this many bytes; larger batches run as several chunks, each one copy
// and one GEMM call (the copy of a 3x3 conv's im2col is 9 times its input).
constexpr int64_t kIm2colBudget = int64_t{512} << 20;

struct Geo {
  int64_t N, C, H, W, O, OH, OW, kh, kw, G, Cg, Og, K, P;
};

Geo geometry(const Tensor& x, const Tensor& w, const Tensor& out, const Conv2dParams& p) {
  std::vector<int64_t> xs = sizes_of(x), ws = sizes_of(w), os = sizes_of(out);
  Geo g{};
  g.N = xs[0], g.C = xs[1], g.H = xs[2], g.W = xs[3];
  g.O = os[1], g.OH = os[2], g.OW = os[3];
  g.kh = ws[2], g.kw = ws[3];
  g.G = p.groups, g.Cg = g.C / g.G, g.Og = g.O / g.G;
  g.K = g.Cg * g.kh * g.kw, g.P = g.OH * g.OW;
  return g;
}

// `base` viewed with `sizes`/`strides` (offset in elements), each run of runs[i] consecutive dims merged into
// one dim; nullopt when a run's elements are not one stride apart. Size-1 dims merge with anything.
std::optional<Tensor> merged_view(const Tensor& base, const std::vector<int64_t>& sizes,
                                  const std::vector<int64_t>& strides, const std::vector<int>& runs,
                                  int64_t offset = 0) {
  std::vector<int64_t> ms, mst;
  size_t d = 0;
  for (int run : runs) {
    int64_t size = 1, stride = 1;
    for (size_t i = d + run; i-- > d;) {  // innermost first
      if (sizes[i] == 1) continue;
      if (size == 1) stride = strides[i];
      else if (strides[i] != stride * size) return std::nullopt;
      size *= sizes[i];
    }
    ms.push_back(size), mst.push_back(stride);
    d += run;
  }
  return strided_view(base, ms, mst, offset);
}

// A dense tensor of `sizes` on `like`'s device and dtype (from the capture's pool while a CUDA graph is captured).
Tensor dense_like(const Tensor& like, const std::vector<int64_t>& sizes,
                  MemoryFormat format = MemoryFormat::kContiguous) {
  return empty_from_meta(dense_meta(SymIntList(sizes), like.dtype(), like.device(), format));
}

// The view `sizes`/`strides` of `base` with its runs merged, or, where they do not merge, a dense copy of it in
// that order, merged.
Tensor matrix_of(const Tensor& base, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                 const std::vector<int>& runs) {
  if (std::optional<Tensor> v = merged_view(base, sizes, strides, runs)) return *v;
  Tensor dense = dense_like(base, sizes);
  copy_strided(dense, strided_view(base, sizes, strides));
  return *merged_view(dense, sizes, strides_of(dense), runs);
}

// t [N, C, H, W] padded with zeros along `dim` (2 or 3) into a fresh buffer whose dims lie in memory in `order`
// (outermost first), which starts with `dim`: the padding is then two spans at the buffer's ends, zeroed, and
// t's values one dense span between them, which the device's copy kernel writes (it writes dense tensors only).
Tensor pad_outermost(const Tensor& t, int dim, int64_t before, int64_t after, const std::vector<int>& order) {
  std::vector<int64_t> sizes = sizes_of(t), strides(4);
  sizes[dim] += before + after;
  int64_t step = 1;
  for (size_t i = order.size(); i-- > 0;) strides[order[i]] = step, step *= sizes[order[i]];
  Tensor buf = empty_from_meta(TensorMeta{SymIntList(sizes), SymIntList(strides), 0, t.dtype(), t.device()});
  auto* base = static_cast<char*>(buf.data_ptr());
  size_t es = buf.element_size(), head = before * strides[dim] * es, body = t.numel().hint() * es;
  cuda::zero_async(base, head, buf.device().index);
  cuda::zero_async(base + head + body, after * strides[dim] * es, buf.device().index);
  copy_strided(strided_view(buf, sizes_of(t), strides, before * strides[dim]), t);
  return buf;
}

// x [N, C, H, W] with the conv's zero padding: x itself when there is none, else padded along the width and then
// the height, each made the outermost dim in turn; the channels stay innermost for the channels-last
// formulation, whose im2col reads them in runs, and the width for the contiguous one.
Tensor padded(const Tensor& x, const Conv2dParams& p, bool nhwc) {
  Tensor t = x;
  if (p.pad_before[1] != 0 || p.pad_after[1] != 0) {
    std::vector<int> order = nhwc ? std::vector<int>{3, 0, 2, 1} : std::vector<int>{3, 0, 1, 2};
    t = pad_outermost(t, 3, p.pad_before[1], p.pad_after[1], order);
  }
  if (p.pad_before[0] != 0 || p.pad_after[0] != 0) {
    std::vector<int> order = nhwc ? std::vector<int>{2, 0, 3, 1} : std::vector<int>{2, 0, 1, 3};
    t = pad_outermost(t, 2, p.pad_before[0], p.pad_after[0], order);
  }
  return t;
}

// The im2col of xp (padded, any strides) as [N, G, K, P] (contiguous formulation, K = (c, ki, kj)) or
// [N, G, P, K] (channels-last, K = (ki, kj, c)).
Tensor im2col(const Tensor& xp, const Geo& g, const Conv2dParams& p, bool nhwc) {
  std::vector<int64_t> s = strides_of(xp);
  int64_t sn = s[0], sc = s[1], sh = s[2], sw = s[3];
  int64_t tap_h = p.dilation[0] * sh, tap_w = p.dilation[1] * sw, out_h = p.stride[0] * sh, out_w = p.stride[1] * sw;
  if (nhwc)
    return matrix_of(xp, {g.N, g.G, g.OH, g.OW, g.kh, g.kw, g.Cg}, {sn, g.Cg * sc, out_h, out_w, tap_h, tap_w, sc},
                     {1, 1, 2, 3});
  return matrix_of(xp, {g.N, g.G, g.Cg, g.kh, g.kw, g.OH, g.OW}, {sn, g.Cg * sc, sc, tap_h, tap_w, out_h, out_w},
                   {1, 1, 3, 2});
}

// The weight [O, Cg, kh, kw] as [1, G, Og, K], K ordered as the im2col's: a view of a contiguous weight
// (contiguous formulation) or of a channels-last one (channels-last formulation), else a dense copy.
Tensor weight_rows(const Tensor& w, const Geo& g, bool nhwc) {
  std::vector<int64_t> s = strides_of(w);
  if (nhwc)
    return matrix_of(w, {1, g.G, g.Og, g.kh, g.kw, g.Cg}, {0, g.Og * s[0], s[0], s[2], s[3], s[1]}, {1, 1, 1, 3});
  return matrix_of(w, {1, g.G, g.Og, g.Cg, g.kh, g.kw}, {0, g.Og * s[0], s[0], s[1], s[2], s[3]}, {1, 1, 1, 3});
}

// One batch chunk: x [N, C, H, W], out [N, O, OH, OW] (any layout; one in which the product is no dense block
// gets it through a buffer).
void conv_chunk(const Tensor& x, const Tensor& wr, const Tensor& bias, const Conv2dParams& p, const Tensor& out,
                const Geo& g, bool nhwc) {
  // The product per image and group as [Og, OH, OW] or [OH, OW, Og], and the same with the pixels merged.
  std::vector<int64_t> sizes = nhwc ? std::vector<int64_t>{g.N, g.G, g.OH, g.OW, g.Og}
                                    : std::vector<int64_t>{g.N, g.G, g.Og, g.OH, g.OW};
  std::vector<int> runs = nhwc ? std::vector<int>{1, 1, 2, 1} : std::vector<int>{1, 1, 1, 2};
  std::vector<int64_t> os = strides_of(out);
  std::vector<int64_t> out_strides = nhwc ? std::vector<int64_t>{os[0], g.Og * os[1], os[2], os[3], os[1]}
                                          : std::vector<int64_t>{os[0], g.Og * os[1], os[1], os[2], os[3]};
  std::optional<Tensor> direct = merged_view(out, sizes, out_strides, runs);
  bool into_out = direct && direct->is_contiguous();
  Tensor buffer = into_out ? Tensor() : dense_like(out, sizes);
  Tensor y = into_out ? *direct : *merged_view(buffer, sizes, strides_of(buffer), runs);
  double beta = 0;
  if (bias.defined()) {  // [O] broadcast over images and pixels
    int64_t bs = bias.strides()[0].hint();
    copy_strided(y, nhwc ? strided_view(bias, {g.N, g.G, g.P, g.Og}, {0, g.Og * bs, 0, bs})
                         : strided_view(bias, {g.N, g.G, g.Og, g.P}, {0, g.Og * bs, bs, 0}));
    beta = 1;
  }
  if (g.K > 0) {
    Tensor col = im2col(padded(x, p, nhwc), g, p, nhwc);
    if (nhwc) {
      std::vector<int64_t> s = strides_of(wr);
      Tensor wt = strided_view(wr, {1, g.G, g.K, g.Og}, {s[0], s[1], s[3], s[2]});
      // One group: the images' pixels as the rows of one product, which cuBLAS blocks better than a batch.
      std::optional<Tensor> rows = merged_view(col, sizes_of(col), strides_of(col), {3, 1});
      std::optional<Tensor> out_rows = merged_view(y, sizes_of(y), strides_of(y), {3, 1});
      if (g.G == 1 && rows && out_rows)
        matmul_into(*rows, strided_view(wt, {g.K, g.Og}, {s[3], s[2]}), *out_rows, 1, beta);
      else
        matmul_into(col, wt, y, 1, beta);
    } else {
      matmul_into(wr, col, y, 1, beta);
    }
  } else if (!bias.defined()) {  // no input channels: a sum over nothing
    cuda::zero_async(y.data_ptr(), static_cast<size_t>(y.numel().hint()) * y.element_size(), y.device().index);
  }
  if (!into_out) copy_strided(strided_view(out, sizes, out_strides), buffer);
}

// out = conv2d(x, w) + bias on one CUDA device, every operand of the dtype cuBLAS serves (matmul_into's
// contract; on the simulated device, while a CUDA graph is captured, it records the CPU GEMM).
void conv2d_im2col(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p, const Tensor& out) {
  if (out.numel().hint() == 0) return;
  Geo g = geometry(x, w, out, p);
  // Channels-last products for a channels-last output: the output rows are then contiguous channel vectors.
  bool nhwc = !out.is_contiguous() && out.is_contiguous(MemoryFormat::kChannelsLast);
  Tensor wr = g.K > 0 ? weight_rows(w, g, nhwc) : Tensor();
  int64_t per_image = std::max<int64_t>(1, g.G * g.P * g.K * static_cast<int64_t>(out.element_size()));
  int64_t chunk = std::clamp<int64_t>(kIm2colBudget / per_image, 1, g.N);
  std::vector<int64_t> xs = sizes_of(x), xst = strides_of(x), os = sizes_of(out), ost = strides_of(out);
  for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
    int64_t n = std::min(chunk, g.N - n0);
    xs[0] = os[0] = n;
    Geo gc = g;
    gc.N = n;
    conv_chunk(strided_view(x, xs, xst, n0 * xst[0]), wr, bias, p, strided_view(out, os, ost, n0 * ost[0]), gc,
               nhwc);
  }
}

}  // namespace

// cuDNN where it serves the call (ops/cuda_dnn.h); else the matrix products' rule (linalg_matmul.cpp's
// cuda_kernel): cuBLAS where it serves the dtype, and the simulated device while it captures a CUDA graph, which
// records the copies and the CPU GEMM for the replays; otherwise (no cuBLAS, the simulated device running
// eagerly) the CPU kernel.
void conv_cuda_kernel(OpId op, const Args& args, std::vector<Tensor>& outs) {
  DType dt = outs.at(0).dtype();
  if (cuda::dnn_supported(dt)) {
    Conv2dCall c = conv2d_call(op, args, outs[0]);
    if (cuda::dnn_conv2d(c.input, c.weight, c.bias, c.p, c.out)) return;
  }
  if (cuda::gemm_supported(dt) || (cuda::is_simulated() && cuda::capturing() && is_floating(dt))) {
    Conv2dCall c = conv2d_call(op, args, outs[0]);
    return conv2d_im2col(c.input, c.weight, c.bias, c.p, c.out);
  }
  run_without_cuda_kernel(op_def(op).kernels[static_cast<int>(DeviceType::kCPU)], op, args, outs, false,
                          outs[0].device());
}

}  // namespace sinter
