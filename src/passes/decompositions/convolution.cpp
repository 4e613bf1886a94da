// conv2d_weight_grad on the CPU: its math (a padded input, KH*KW strided slices stacked into im2col patches, one
// batched matrix product), recorded into the graph so that the patch copies fuse; on CUDA the op stays a library
// call (cuDNN's backward filter). conv2d of a 1x1 image by a 1x1 kernel on the CPU: a linear layer.
#include "ops/linalg_util.h"
#include "ops/shape_util.h"
#include "passes/decompositions/builder.h"

namespace sinter::passes::decomp {

std::optional<std::vector<Tensor>> conv2d_weight_grad(Builder& b, const Node& n) {
  if (n.meta().device.is_cuda()) return std::nullopt;
  return record(b, n, [&] {
    Tensor gw = conv2d_weight_grad_math(n.args);
    // In the op's layout (channels-last beside a channels-last input), as the kernel writes it.
    const bool cl = !n.output().is_contiguous() && n.output().is_contiguous(MemoryFormat::kChannelsLast);
    return std::vector<Tensor>{cl ? gw.contiguous(MemoryFormat::kChannelsLast) : gw};
  });
}

// conv2d over a 1x1 image with a 1x1 kernel and no padding (the fully connected layers of a squeeze-and-excitation
// block after its global pooling, a classifier head written as a conv): linear(x.view(N, C), w.view(O, C),
// b).view(N, O, 1, 1), a GEMM whose element-wise consumers fuse as its epilogue, where the conv kernel would set
// up its im2col machinery for a matrix-vector product. Static sizes, one group, floating dtypes, the CPU.
std::optional<std::vector<Tensor>> conv2d(Builder& b, const Node& n) {
  const Tensor& x = n.args[0].tensor();
  const Tensor& w = n.args[1].tensor();
  const Tensor& out = n.output();
  auto is = [](const SymInt& s, int64_t v) { return !s.is_symbolic() && s.hint() == v; };
  auto fixed = [](const SymIntList& l) {
    for (const SymInt& s : l)
      if (s.is_symbolic()) return false;
    return true;
  };
  if (!out.device().is_cpu() || !is_floating(out.dtype()) || x.dim() != 4 || w.dim() != 4 || out.dim() != 4 ||
      !fixed(x.sizes()) || !fixed(w.sizes()) || n.arg("groups").to_int() != 1)
    return std::nullopt;
  if (!is(x.sizes()[2], 1) || !is(x.sizes()[3], 1) || !is(w.sizes()[2], 1) || !is(w.sizes()[3], 1) ||
      !is(out.sizes()[2], 1) || !is(out.sizes()[3], 1))
    return std::nullopt;
  for (int64_t p : n.args[4].to_int_list())
    if (p != 0) return std::nullopt;
  const int64_t N = x.sizes()[0].hint(), C = x.sizes()[1].hint(), O = w.sizes()[0].hint();
  const SymIntList xs{N, C}, ws{O, C};
  if (!compute_view_strides(x.sizes(), x.strides(), xs) || !compute_view_strides(w.sizes(), w.strides(), ws))
    return std::nullopt;
  Tensor y = b.op(OpId::linear, {b.op(OpId::view, {x, xs}), b.op(OpId::view, {w, ws}), n.args[2]});
  return std::vector<Tensor>{b.op(OpId::view, {y, SymIntList{N, O, 1, 1}})};
}

}  // namespace sinter::passes::decomp
