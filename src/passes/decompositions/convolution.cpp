// conv2d_weight_grad on the CPU: its math (a padded input, KH*KW strided slices stacked into im2col patches, one
// batched matrix product), recorded into the graph so that the patch copies fuse; on CUDA the op stays a library
// call (cuDNN's backward filter).
#include "ops/linalg_util.h"
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

}  // namespace sinter::passes::decomp
