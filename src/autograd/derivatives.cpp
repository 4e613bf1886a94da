// The derivative table: the rows of every family gathered once, indexed by op; in-place ops fall back to the row
// of their functional form.
#include "autograd/derivatives.h"

#include <array>
#include <mutex>

#include "sinter/ops.h"
#include "support/check.h"

namespace sinter::autograd {
namespace {

struct Table {
  std::vector<DerivativeRow> rows;
  std::array<const DerivativeRow*, kNumOps> by_op{};
};

// "add_.Tensor" -> the op "add.Tensor", when the table has one.
OpId functional_form(OpId op) {
  const Schema& s = op_def(op).schema;
  if (!s.is_inplace() || !s.name.ends_with("_")) return op;
  std::string name = s.name.substr(0, s.name.size() - 1);
  for (int i = 0; i < kNumOps; ++i) {
    const Schema& f = op_def(static_cast<OpId>(i)).schema;
    if (f.name == name && f.overload == s.overload) return static_cast<OpId>(i);
  }
  return op;
}

const Table& table() {
  static Table t;
  static std::once_flag once;
  std::call_once(once, [] {
    add_pointwise_rows(t.rows);
    add_reduction_rows(t.rows);
    add_shape_rows(t.rows);
    add_nn_rows(t.rows);
    for (const DerivativeRow& r : t.rows) {
      SINTER_INTERNAL_ASSERT(!t.by_op[static_cast<int>(r.op)], "two derivative rows for {}",
                             op_def(r.op).schema.full_name());
      t.by_op[static_cast<int>(r.op)] = &r;
    }
    for (int i = 0; i < kNumOps; ++i)
      if (!t.by_op[i]) t.by_op[i] = t.by_op[static_cast<int>(functional_form(static_cast<OpId>(i)))];
  });
  return t;
}

}  // namespace

const DerivativeRow* derivative_row(OpId op) { return table().by_op[static_cast<int>(op)]; }
const std::vector<DerivativeRow>& derivative_rows() { return table().rows; }

bool not_differentiable(OpId op) {
  switch (op) {
    case OpId::argmax:
    case OpId::argmin:
    case OpId::argsort:
    case OpId::nonzero:
    case OpId::floor_divide_Tensor:
    case OpId::floor_divide_Scalar:
      return true;
    default:
      return false;
  }
}

}  // namespace sinter::autograd
