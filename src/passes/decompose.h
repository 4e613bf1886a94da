// Decomposition: composite ops (gelu, softmax, layer_norm, var, ...) become the primitives the lowering handles
// natively (pointwise ops, sum/mean/amax reductions, views, externs). One table, in decompose.cpp, lists every
// op that decomposes; ops not in it are left alone. `linear`, `addmm`, `mm`, `bmm`, `matmul`, `conv2d` and
// `scaled_dot_product_attention` are never decomposed: they lower to library calls.
#pragma once
#include <vector>

#include "sinter/graph.h"

namespace sinter::passes {

// Replaces every node whose op has a decomposition (and whose form it covers) by primitive ops computing the same
// values to float rounding. Returns whether it changed the graph. With `exact_recompute` (the target's kernels
// round each op as eager, so a value a fused kernel recomputes equals itself), var and std decompose too, into
// a two-pass form shifted by the row's first element (decompositions/reductions.cpp).
bool decompose(Graph& g, bool exact_recompute = false);

// The ops the table decomposes (some only in certain forms: dropout without drawing, batch_norm in eval).
std::vector<OpId> decomposed_ops();

}  // namespace sinter::passes
