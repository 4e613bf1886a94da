// Symbolic integer expressions for sizes: immutable, hash-consed nodes built only through simplifying
// factories, so two equal expressions are the same pointer. Used by SymInt during capture, by guards, and
// by the loop IR's index arithmetic. The text form ("2*s0 + 3", "(s0 + 1)//2", "Min(s0, s1)") parses back.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sinter/symint.h"

namespace sinter::sym {

// Kinds are listed in canonical order: terms of a sum, factors of a product and arguments of Min/Max are
// sorted by kind first, so printing is deterministic across runs.
enum class Kind : uint8_t { kConst, kSymbol, kAdd, kMul, kFloorDiv, kMod, kMin, kMax };

// Node layout (the factories keep these invariants; nothing else builds nodes):
//   kConst     value() is the constant; no args.
//   kSymbol    value() is the symbol id; printed as "s<id>".
//   kAdd       value() is the constant term; args() are >= 1 terms, none Const or Add; one term only with a
//              nonzero constant. Like terms are collected (s0 + s0 is 2*s0).
//   kMul       value() is the coefficient (never 0); args() are >= 1 factors, none Const or Mul; one
//              factor only with a coefficient other than 1, and then that factor is not an Add (constants
//              distribute: 2*(s0 + 1) is 2*s0 + 2). A sum among several factors has a positive first term
//              and coprime coefficients; its content moves into the coefficient.
//   kFloorDiv  args() = {a, b}: floor(a / b), Python's //.
//   kMod       args() = {a, b}: a - b*floor(a / b), Python's %.
//   kMin/kMax  args() are >= 2 distinct operands, flattened and sorted.
class Expr {
  struct Key {  // only the intern table can make one, so only it constructs nodes
    explicit Key() = default;
  };

 public:
  Expr(Key, Kind kind, int64_t value, std::vector<ExprPtr> args, size_t hash)
      : kind_(kind), value_(value), args_(std::move(args)), hash_(hash) {}

  Kind kind() const { return kind_; }
  int64_t value() const { return value_; }
  const std::vector<ExprPtr>& args() const { return args_; }
  size_t hash() const { return hash_; }  // structural, the same in every run

  bool is_const() const { return kind_ == Kind::kConst; }
  bool is_const(int64_t v) const { return kind_ == Kind::kConst && value_ == v; }
  bool is_symbol() const { return kind_ == Kind::kSymbol; }
  int64_t symbol_id() const { return value_; }
  std::string str() const;

 private:
  friend ExprPtr intern(Kind kind, int64_t value, std::vector<ExprPtr> args);
  Kind kind_;
  int64_t value_;
  std::vector<ExprPtr> args_;
  size_t hash_;
};

// Builds or finds the unique node (thread-safe). Only the factories below call it.
ExprPtr intern(Kind kind, int64_t value, std::vector<ExprPtr> args);

// Factories. They simplify as they build and throw sinter::Error on division by a constant zero or on
// int64 overflow while folding constants.
ExprPtr make_const(int64_t v);
ExprPtr make_symbol(int64_t id);
ExprPtr make_add(const ExprPtr& a, const ExprPtr& b);
ExprPtr make_add(std::span<const ExprPtr> operands);
ExprPtr make_sub(const ExprPtr& a, const ExprPtr& b);
ExprPtr make_neg(const ExprPtr& a);
ExprPtr make_mul(const ExprPtr& a, const ExprPtr& b);
ExprPtr make_floordiv(const ExprPtr& a, const ExprPtr& b);
ExprPtr make_mod(const ExprPtr& a, const ExprPtr& b);
ExprPtr make_min(const ExprPtr& a, const ExprPtr& b);
ExprPtr make_max(const ExprPtr& a, const ExprPtr& b);

// A total order on expressions that does not depend on addresses: <0, 0 or >0.
int compare(const Expr& a, const Expr& b);

// Text. parse_expr accepts what str() prints (and ordinary spacing variants) and throws sinter::Error on
// anything else; parse_expr(e->str()) == e.
std::string to_string(const ExprPtr& e);
// The same text with each symbol spelled by `namer` (given its id) instead of s<id>.
using SymbolNamer = std::function<std::string(int64_t)>;
std::string to_string(const ExprPtr& e, const SymbolNamer& namer);
ExprPtr parse_expr(std::string_view text);

// Values of symbols, indexed by symbol id (s3's value is values[3]).
using SymbolValues = std::vector<int64_t>;
// Throws sinter::Error for a missing symbol, division by zero or overflow.
int64_t evaluate(const Expr& e, std::span<const int64_t> values);

// Symbol ids that occur in e, ascending.
std::vector<int64_t> free_symbols(const ExprPtr& e);
// Replaces symbols by expressions (rebuilding through the factories); returns e itself when nothing changes.
ExprPtr substitute(const ExprPtr& e, const std::unordered_map<int64_t, ExprPtr>& replacements);
// Multiplies out products of sums (capped in size). The factories leave (s0 + 1)*s1 unexpanded because a
// product keeps division exact ((s0 + 1)*s1 // s1 is s0 + 1); comparisons expand to see that two forms agree.
ExprPtr expand(const ExprPtr& e);

}  // namespace sinter::sym
