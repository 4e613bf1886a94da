// Dimension arguments, shared by the tensor layer (size(d), stride(d)) and every op.
#pragma once
#include <cstdint>

namespace sinter {

// Normalises a possibly negative dim; throws an Error naming the valid range (a 0-dim tensor accepts 0 and -1,
// as in PyTorch).
int64_t wrap_dim(int64_t dim, int64_t ndim);

}  // namespace sinter
