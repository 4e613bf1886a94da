// The index family: joining (cat, stack), gather/scatter, advanced indexing, masks, pad, repeat, roll, flip,
// tril/triu. Each group lives in its own file; this attaches them all to the op table.
#include "ops/index_ops.h"

namespace sinter {

void register_index_ops(OpTable& t) {
  register_cat_ops(t);
  register_reorder_ops(t);
  register_pad_ops(t);
  register_gather_ops(t);
  register_advanced_ops(t);
  register_nonzero_ops(t);
}

}  // namespace sinter
