// The index family's files, each registering its own rows (register_index_ops in index_ops.cpp calls them all),
// and the helpers one file of the family lends another.
#pragma once
#include <vector>

#include "ops/op_table.h"

namespace sinter {

void register_cat_ops(OpTable& t);       // shape_ops_cat.cpp: cat, stack
void register_reorder_ops(OpTable& t);   // shape_ops_reorder.cpp: flip, roll, repeat, tril, triu
void register_pad_ops(OpTable& t);       // shape_ops_pad.cpp: pad
void register_gather_ops(OpTable& t);    // index_gather.cpp: gather, scatter*, index_select
void register_advanced_ops(OpTable& t);  // index_advanced.cpp: index.Tensor, index_put, index_put_
void register_nonzero_ops(OpTable& t);   // index_nonzero.cpp: nonzero, masked_select

// Row-major coordinates of the nonzero elements of `t` (any dtype): *count rows of t.dim() values each.
std::vector<int64_t> nonzero_coords(const Tensor& t, int64_t* count);

}  // namespace sinter
