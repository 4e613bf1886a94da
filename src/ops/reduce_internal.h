// What the reduction family's files share: dim-list handling for shape rules (PyTorch's wrapping, duplicate
// and empty-list rules) and the registration hooks of each file, all called from register_reduction_ops.
#pragma once
#include <optional>
#include <vector>

#include "ops/op_table.h"
#include "ops/shape_util.h"

namespace sinter {

// Wraps a possibly negative dim; a 0-dim tensor accepts 0 and -1, as in PyTorch. The error names the range.
int64_t reduce_wrap_dim(int64_t dim, int64_t ndim);
// The reduced dims of a `dim` argument: None means all; an empty list means all unless `empty_is_none`
// (all.dims/any.dims, where PyTorch reduces nothing). Duplicates are an error.
std::vector<bool> reduce_dim_mask(const Value& dim, int64_t ndim, bool empty_is_none = false);
std::vector<bool> reduce_dim_mask(const std::vector<int64_t>& dims, int64_t ndim, bool empty_is_none = false);
// Output sizes: reduced dims dropped, or kept as 1 with keepdim.
SymIntList reduced_sizes(const SymIntList& sizes, const std::vector<bool>& mask, bool keepdim);
// Number of elements reduced into each output.
SymInt reduced_count(const SymIntList& sizes, const std::vector<bool>& mask);
// For reductions without an identity (amax, max.dim, ...): every reduced dim must be non-empty.
void check_nonempty_dims(const Tensor& self, const std::vector<bool>& mask);
// An optional ScalarType argument.
std::optional<DType> opt_dtype(const Value& v);

// Registration of each file's rows.
void register_reduce_basic(OpTable& t);  // sum, mean, prod, amax, amin, max, min, all, any
void register_reduce_stats(OpTable& t);  // var, std, norm, logsumexp
void register_reduce_arg(OpTable& t);    // max.dim, min.dim, argmax, argmin
void register_reduce_scan(OpTable& t);   // cumsum, cumprod
void register_softmax_ops(OpTable& t);   // softmax, log_softmax
void register_sort_ops(OpTable& t);      // sort, argsort, topk
void register_norm_ops(OpTable& t);      // layer_norm, group_norm, rms_norm, batch_norm

}  // namespace sinter
