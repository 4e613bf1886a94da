// The pointwise family's registration: unary ops and activations, binary ops, ternary ops and the in-place
// forms, each part in its own file (pointwise_unary.cpp, pointwise_binary.cpp, pointwise_ternary.cpp) over the
// elementwise loop utility in loops.h.
#include "ops/pointwise_common.h"

namespace sinter {

void register_pointwise_ops(OpTable& t) {
  pointwise::register_pointwise_unary(t);
  pointwise::register_pointwise_binary(t);
  pointwise::register_pointwise_ternary(t);
}

}  // namespace sinter
