// The pointwise half of lowering: one graph op at one index -> a scalar expression. The table of which ops have
// a scalar form lives here (is_lowerable_pointwise); codegen knows how to print each scalar op it produces.
#pragma once
#include "inductor/loop_ir.h"

namespace sinter::inductor {

// What lower_pointwise needs from the lowering in progress.
class PointwiseContext {
 public:
  virtual ~PointwiseContext() = default;
  // The value of graph tensor `t` broadcast to `out_sizes`, at output index `idx`.
  virtual SExpr load_arg(const Tensor& t, const std::vector<ExprPtr>& out_sizes, const std::vector<ExprPtr>& idx) = 0;
  virtual SPool& pool() = 0;
};

// The value of pointwise op node `n` (whose output has `out_sizes`) at index `idx`.
SExpr lower_pointwise(PointwiseContext& cx, const Node& n, const std::vector<ExprPtr>& out_sizes,
                      const std::vector<ExprPtr>& idx);

}  // namespace sinter::inductor
