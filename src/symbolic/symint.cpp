// The out-of-line half of SymInt. Concrete values never reach the symbolic paths here: the header answers
// them inline. Symbolic arithmetic builds expressions through the simplifying factories; comparisons and
// specialisation record guards in the thread's current ShapeEnv, or answer from the hints outside capture.
#include "sinter/symint.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "sinter/error.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace sinter {

namespace {

// The example's value of a symbolic result, with the checks that size arithmetic must not skip.
int64_t hint_of(SymInt::BinaryOp op, int64_t a, int64_t b) {
  int64_t r = 0;
  bool overflow = false;
  switch (op) {
    case SymInt::kAdd: overflow = __builtin_add_overflow(a, b, &r); break;
    case SymInt::kSub: overflow = __builtin_sub_overflow(a, b, &r); break;
    case SymInt::kMul: overflow = __builtin_mul_overflow(a, b, &r); break;
    case SymInt::kFloorDiv:
    case SymInt::kMod:
      if (b == 0)
        throw Error(
            fmt::format("size arithmetic divides by zero: {} {} 0", a, op == SymInt::kMod ? "%" : "//"));
      if (op == SymInt::kMod) return b == -1 ? 0 : SymInt::pymod(a, b);
      if (b != -1) return SymInt::floordiv(a, b);
      overflow = __builtin_sub_overflow(int64_t{0}, a, &r);  // a // -1 is -a
      break;
    case SymInt::kMin: return std::min(a, b);
    case SymInt::kMax: return std::max(a, b);
  }
  if (overflow) throw Error(fmt::format("int64 overflow in size arithmetic ({} and {})", a, b));
  return r;
}

}  // namespace

SymInt::SymInt(ExprPtr expr, int64_t hint) : hint_(hint), expr_(std::move(expr)) {
  // A constant expression is a concrete size; keeping it symbolic would only slow every later operation.
  if (expr_ && expr_->is_const()) {
    if (expr_->value() != hint)
      throw InternalError(fmt::format("SymInt of constant {} with hint {}", expr_->value(), hint));
    expr_.reset();
  }
}

SymInt SymInt::binary(BinaryOp op, const SymInt& a, const SymInt& b) {
  int64_t hint = hint_of(op, a.hint(), b.hint());
  ExprPtr x = sym::expr_of(a), y = sym::expr_of(b), e;
  switch (op) {
    case kAdd: e = sym::make_add(x, y); break;
    case kSub: e = sym::make_sub(x, y); break;
    case kMul: e = sym::make_mul(x, y); break;
    case kFloorDiv: e = sym::make_floordiv(x, y); break;
    case kMod: e = sym::make_mod(x, y); break;
    case kMin: e = sym::make_min(x, y); break;
    case kMax: e = sym::make_max(x, y); break;
  }
  if (sym::ShapeEnv* env = sym::current_shape_env()) e = env->simplify(e);
  return SymInt(std::move(e), hint);
}

bool SymInt::compare(CompareOp op, const SymInt& a, const SymInt& b) {
  static constexpr sym::Rel kRel[] = {sym::Rel::kEq, sym::Rel::kNe, sym::Rel::kLt, sym::Rel::kLe};
  if (sym::ShapeEnv* env = sym::current_shape_env()) return env->evaluate_comparison(kRel[op], a, b);
  switch (op) {
    case kEq: return a.hint() == b.hint();
    case kNe: return a.hint() != b.hint();
    case kLt: return a.hint() < b.hint();
    case kLe: return a.hint() <= b.hint();
  }
  return false;
}

int64_t SymInt::specialize() const {
  if (sym::ShapeEnv* env = sym::current_shape_env()) return env->specialize(*this);
  return hint_;
}

std::string SymInt::str() const { return expr_ ? expr_->str() : fmt::format("{}", hint_); }

std::vector<int64_t> SymIntList::hints() const {
  std::vector<int64_t> out;
  out.reserve(size());
  for (const SymInt& s : *this) out.push_back(s.hint());
  return out;
}

std::vector<int64_t> SymIntList::guard_ints() const {
  std::vector<int64_t> out;
  out.reserve(size());
  for (const SymInt& s : *this) out.push_back(s.guard_int());
  return out;
}

bool SymIntList::any_symbolic() const {
  for (const SymInt& s : *this)
    if (s.is_symbolic()) return true;
  return false;
}

std::string SymIntList::str() const {
  std::string out = "[";
  for (size_t i = 0; i < size(); ++i) out += (i ? ", " : "") + (*this)[i].str();
  return out + "]";
}

std::ostream& operator<<(std::ostream& os, const SymIntList& list) { return os << list.str(); }

SymInt sym_product(const std::vector<SymInt>& sizes) {
  SymInt p = 1;
  for (const SymInt& s : sizes) p = p * s;
  return p;
}

}  // namespace sinter
