// The linalg family's registration: matmul family, einsum, convolution, pooling, upsampling, attention,
// losses, embedding and dropout. Each lives in its own file (linalg_util.h lists them); this calls their
// hooks.
#include "ops/linalg_util.h"

namespace sinter {

void register_linalg_ops(OpTable& t) {
  register_matmul_ops(t);
  register_einsum_ops(t);
  register_conv_ops(t);
  register_conv_transpose_ops(t);
  register_conv_weight_grad_ops(t);
  register_pool_ops(t);
  register_upsample_ops(t);
  register_attention_ops(t);
  register_loss_ops(t);
  register_embedding_dropout_ops(t);
}

}  // namespace sinter
