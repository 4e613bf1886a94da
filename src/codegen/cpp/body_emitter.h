// Prints the scalar bodies of a planned kernel as C-family statements (one `const T tN = ...;` per node, operands
// first), for the C++ printer and the CUDA printer alike: both spell ops, loads and stores through cpp_ops.h.
// Holds what a printer tracks while it walks a kernel: the SSA names of the current loop body, the variable that
// holds each loop node's value, the stage whose forwarded loads and hoisted reciprocals apply.
#pragma once
#include <fmt/format.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "inductor/kernel_plan.h"

namespace sinter::codegen::cpp {

class BodyEmitter {
 public:
  BodyEmitter(const inductor::LoopProgram& p, const inductor::KernelPlan& k);

  // Emits `root` and the operands it needs that have no name yet into `out`; returns the name of its value.
  std::string emit(inductor::SExpr root, std::string& out, const std::string& ind);
  // `root`'s value (named `v` by emit) as stored into a buffer of `dt`: a body that ends by rounding to `dt` stores
  // its operand, rounded once (rounding a value already rounded to `dt` gives the same bits, NaN included).
  std::string stored(inductor::SExpr root, const std::string& v, DType dt) const;
  std::string var(int k) const { return fmt::format("v{}", k); }
  std::string idx(const ExprPtr& e) const;
  std::string buf(int b) const { return fmt::format("b{}", k_.argument(b)); }
  const char* index_type() const { return k_.index32 ? "sn_i32" : "sn_i64"; }
  // Declarations binding `dims`' loop variables from one flat index (row-major, the last dim fastest).
  std::string unravel(const std::vector<inductor::LoopDim>& dims, const std::string& flat, const std::string& ind) const;

  const inductor::LoopProgram& p_;
  const inductor::KernelPlan& k_;
  const inductor::StagePlan* stage_ = nullptr;            // the stage being printed
  std::unordered_map<inductor::SExpr, std::string> names_;  // SSA names in the current loop body
  std::unordered_map<int, std::string> values_;            // loop node -> the variable holding its value here
  // Loads the printer has already read (into a vector or a register array): load -> the element, in memory's type.
  std::unordered_map<inductor::SExpr, std::string> load_elements_;
  int tmp_ = 0;

 private:
  void emit_node(inductor::SExpr e, std::string& out, const std::string& ind);
  std::vector<std::string> var_names_;
};

}  // namespace sinter::codegen::cpp
