// The derivative table: the rows of every family gathered once, indexed by op; in-place ops fall back to the row
// of their functional form.
#include "autograd/derivatives.h"

#include <array>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "ops/custom_ops.h"
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

// Whether an input of sizes `in` broadcasts to `grad` (the node sums such a gradient back to the input's sizes).
bool broadcasts_to(const SymIntList& in, const SymIntList& grad) {
  if (in.size() > grad.size()) return false;
  const size_t lead = grad.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d].hint() != 1 && in[d].hint() != grad[lead + d].hint()) return false;
  return true;
}

// A custom op's row: its user's backward formula (ops/custom_ops.h) over the saved arguments. Every tensor argument
// is saved; each gradient must have its argument's sizes, or sizes they broadcast to.
void custom_formula(BackwardContext& c) {
  const OpId op = c.op();
  const Schema& s = op_def(op).schema;
  Args args;
  for (const SchemaArg& a : s.args) {
    if (a.type == ArgType::kTensor) {
      Tensor t = c.t(a.name);
      args.push_back(t.defined() ? Value(t) : Value());
    } else if (a.type == ArgType::kTensorList || a.type == ArgType::kOptionalTensorList) {
      args.push_back(c.list(a.name));
    } else {
      args.push_back(c.arg(a.name));
    }
  }
  std::vector<Tensor> grads;
  for (int i = 0; i < c.num_outputs(); ++i) grads.push_back(c.grad(i));
  std::vector<Tensor> input_grads = run_custom_backward(op, grads, args);
  size_t k = 0;
  for (const SchemaArg& a : s.args) {
    if (a.type != ArgType::kTensor) continue;
    Tensor g = std::move(input_grads[k++]);
    if (!g.defined() || !c.needs(a.name)) continue;
    const GradMeta& m = c.meta(a.name);
    SINTER_CHECK(broadcasts_to(m.sizes, g.sizes()),
                 "the backward formula of {} returned a gradient of shape {} for '{}', whose shape is {}",
                 s.full_name(), g.sizes().str(), a.name, m.sizes.str());
    c.set(a.name, std::move(g));
  }
}

// The rows of custom ops that have a backward formula, made on first use (custom ops join the op table at run
// time). Rows never move: the map's nodes are stable, the saves strings live in a deque.
const DerivativeRow* custom_row(OpId op) {
  const CustomOp* custom = custom_op(op);
  if (!custom || !custom->backward) return nullptr;
  static std::mutex mutex;
  static std::deque<std::string> saves;
  static std::unordered_map<OpId, DerivativeRow> rows;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = rows.find(op); it != rows.end()) return &it->second;
  std::string names;
  for (const SchemaArg& a : op_def(op).schema.args)
    if (a.type == ArgType::kTensor || a.type == ArgType::kTensorList || a.type == ArgType::kOptionalTensorList)
      names += (names.empty() ? "" : ", ") + a.name;
  const std::string& kept = saves.emplace_back(std::move(names));
  return &rows.emplace(op, DerivativeRow{op, kept.c_str(), custom_formula}).first->second;
}

}  // namespace

const DerivativeRow* derivative_row(OpId op) {
  if (is_custom_op(op)) return custom_row(op);
  return table().by_op[static_cast<int>(op)];
}
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
