// Which memory accesses of a kernel the CUDA printer may turn into vector loads and stores: an access (a load's
// or a store's element offset) walks V consecutive elements as the innermost loop variable takes V consecutive
// values from a multiple of V, and its first element is V-aligned. Some of that is known when the kernel is
// printed (constant strides); what depends on sizes (a row stride s0 must be a multiple of V) and on the buffers'
// addresses is a run-time condition, printed as one uniform test at the top of the kernel, which picks between
// the vector path and the scalar one.
#pragma once
#include <optional>
#include <vector>

#include "symbolic/expr.h"

namespace sinter::codegen::cuda {

// Whether `offset` steps by exactly 1 with loop variable `last`. Every loop variable but `last` may take any value.
bool contiguous_in(const ExprPtr& offset, int last);

// For an offset contiguous in `last`: the expressions (over sizes only) that must be multiples of `v` at run time
// for the offset to be a multiple of `v` whenever `last` is; empty when that holds for every size. nullopt when
// no run-time test can show it (a loop variable other than `last` with a stride that is not a multiple of v).
std::optional<std::vector<ExprPtr>> alignment_conditions(const ExprPtr& offset, int last, int v);

}  // namespace sinter::codegen::cuda
