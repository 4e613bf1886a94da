#include "codegen/cuda/vector_access.h"

#include "inductor/loop_ir.h"

namespace sinter::codegen::cuda {

namespace {

using sym::Kind;

bool has_loop_var(const ExprPtr& e) {
  for (int64_t id : sym::free_symbols(e))
    if (inductor::is_loop_var(id)) return true;
  return false;
}

// A term of an expanded sum as coefficient * factors.
std::pair<int64_t, std::vector<ExprPtr>> split_term(const ExprPtr& t) {
  if (t->kind() == Kind::kMul) return {t->value(), t->args()};
  return {1, {t}};
}

}  // namespace

bool contiguous_in(const ExprPtr& offset, int last) {
  const int64_t id = inductor::kLoopVarBase + last;
  ExprPtr next = sym::substitute(offset, {{id, sym::make_add(inductor::loop_var(last), sym::make_const(1))}});
  return sym::expand(sym::make_sub(next, offset))->is_const(1);
}

std::optional<std::vector<ExprPtr>> alignment_conditions(const ExprPtr& offset, int last, int v) {
  std::vector<ExprPtr> conditions;
  if (v == 1) return conditions;
  ExprPtr base = sym::expand(sym::substitute(offset, {{inductor::kLoopVarBase + last, sym::make_const(0)}}));
  std::vector<ExprPtr> terms;
  int64_t constant = 0;
  if (base->kind() == Kind::kConst) constant = base->value();
  else if (base->kind() == Kind::kAdd) constant = base->value(), terms = base->args();
  else terms = {base};
  if (constant % v != 0) return std::nullopt;
  for (const ExprPtr& t : terms) {
    auto [coefficient, factors] = split_term(t);
    // Loop variables take any value, so what multiplies them must be a multiple of v by itself.
    ExprPtr multiplier = sym::make_const(coefficient);
    for (const ExprPtr& f : factors) {
      if (f->is_symbol() && inductor::is_loop_var(f->symbol_id())) continue;
      if (has_loop_var(f)) return std::nullopt;  // inside a division, a modulo, a min or a max
      multiplier = sym::make_mul(multiplier, f);
    }
    if (multiplier->is_const()) {
      if (multiplier->value() % v != 0) return std::nullopt;
    } else {
      conditions.push_back(multiplier);
    }
  }
  return conditions;
}

}  // namespace sinter::codegen::cuda
