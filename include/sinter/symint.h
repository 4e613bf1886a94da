// SymInt: a size that is a plain int64 outside capture and may be a symbolic expression (s0, 2*s1+3) inside it.
// Comparing a symbolic SymInt gives a bool (the example's answer) and records a guard; arithmetic stays symbolic;
// converting to int64_t specialises the size (an equality guard). The symbolic half lives in src/symbolic.
#pragma once
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sinter {

namespace sym {
class Expr;  // an immutable, hash-consed integer expression (src/symbolic/expr.h)
}
using ExprPtr = std::shared_ptr<const sym::Expr>;

class SymInt {
 public:
  constexpr SymInt() = default;
  template <std::integral I>
  constexpr SymInt(I v) : hint_(static_cast<int64_t>(v)) {}
  // A symbolic value: `expr` evaluated at the example's symbol values gives `hint`.
  SymInt(ExprPtr expr, int64_t hint);

  bool is_symbolic() const { return expr_ != nullptr; }
  // The concrete value, or for a symbol the example's value; reading it records no guard.
  int64_t hint() const { return hint_; }
  const ExprPtr& expr() const { return expr_; }
  // Converting specialises: a symbolic size records the guard `expr == hint` and becomes that constant.
  operator int64_t() const { return expr_ ? specialize() : hint_; }
  int64_t guard_int() const { return static_cast<int64_t>(*this); }
  std::string str() const;

  // Concrete arithmetic wraps (two's complement, computed unsigned) instead of overflowing: size checks
  // downstream reject absurd results with an Error, never undefined behaviour.
  friend SymInt operator+(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? SymInt(wrap(uint64_t(a.hint_) + uint64_t(b.hint_))) : binary(kAdd, a, b); }
  friend SymInt operator-(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? SymInt(wrap(uint64_t(a.hint_) - uint64_t(b.hint_))) : binary(kSub, a, b); }
  friend SymInt operator*(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? SymInt(wrap(uint64_t(a.hint_) * uint64_t(b.hint_))) : binary(kMul, a, b); }
  // Division and modulo round towards negative infinity, as Python's // and % do.
  friend SymInt operator/(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? SymInt(floordiv(a.hint_, b.hint_)) : binary(kFloorDiv, a, b); }
  friend SymInt operator%(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? SymInt(pymod(a.hint_, b.hint_)) : binary(kMod, a, b); }
  SymInt operator-() const { return SymInt(0) - *this; }
  SymInt& operator+=(const SymInt& o) { return *this = *this + o; }
  SymInt& operator-=(const SymInt& o) { return *this = *this - o; }
  SymInt& operator*=(const SymInt& o) { return *this = *this * o; }
  friend SymInt sym_min(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? SymInt(a.hint_ < b.hint_ ? a.hint_ : b.hint_) : binary(kMin, a, b); }
  friend SymInt sym_max(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? SymInt(a.hint_ > b.hint_ ? a.hint_ : b.hint_) : binary(kMax, a, b); }

  // Comparisons answer for the example and, when symbolic, record the answer as a guard.
  friend bool operator==(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? a.hint_ == b.hint_ : compare(kEq, a, b); }
  friend bool operator!=(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? a.hint_ != b.hint_ : compare(kNe, a, b); }
  friend bool operator<(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? a.hint_ < b.hint_ : compare(kLt, a, b); }
  friend bool operator<=(const SymInt& a, const SymInt& b) { return both_concrete(a, b) ? a.hint_ <= b.hint_ : compare(kLe, a, b); }
  friend bool operator>(const SymInt& a, const SymInt& b) { return b < a; }
  friend bool operator>=(const SymInt& a, const SymInt& b) { return b <= a; }

  // Mixed forms with plain integers, so `n == 3` or `n + 1` picks no ambiguous built-in conversion.
#define SINTER_SYMINT_MIXED(op, R)                                                  \
  template <std::integral I>                                                        \
  friend R operator op(const SymInt& a, I b) { return a op SymInt(b); }             \
  template <std::integral I>                                                        \
  friend R operator op(I a, const SymInt& b) { return SymInt(a) op b; }
  SINTER_SYMINT_MIXED(+, SymInt)
  SINTER_SYMINT_MIXED(-, SymInt)
  SINTER_SYMINT_MIXED(*, SymInt)
  SINTER_SYMINT_MIXED(/, SymInt)
  SINTER_SYMINT_MIXED(%, SymInt)
  SINTER_SYMINT_MIXED(==, bool)
  SINTER_SYMINT_MIXED(!=, bool)
  SINTER_SYMINT_MIXED(<, bool)
  SINTER_SYMINT_MIXED(<=, bool)
  SINTER_SYMINT_MIXED(>, bool)
  SINTER_SYMINT_MIXED(>=, bool)
#undef SINTER_SYMINT_MIXED

  enum BinaryOp : uint8_t { kAdd, kSub, kMul, kFloorDiv, kMod, kMin, kMax };
  enum CompareOp : uint8_t { kEq, kNe, kLt, kLe };

  static constexpr int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
  static constexpr int64_t pymod(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }

 private:
  static bool both_concrete(const SymInt& a, const SymInt& b) { return !a.expr_ && !b.expr_; }
  static constexpr int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }
  // Out of line, in src/symbolic: only reached when an operand is symbolic.
  static SymInt binary(BinaryOp op, const SymInt& a, const SymInt& b);
  static bool compare(CompareOp op, const SymInt& a, const SymInt& b);
  int64_t specialize() const;

  int64_t hint_ = 0;
  ExprPtr expr_;
};

// A list of sizes. Built from braces ({2, -1}), a vector of SymInt or a vector of int64_t.
class SymIntList : public std::vector<SymInt> {
 public:
  SymIntList() = default;
  SymIntList(std::initializer_list<SymInt> v) : std::vector<SymInt>(v) {}
  // One size where a list goes (x.view(-1), zeros(5)), as LibTorch's IntArrayRef.
  SymIntList(int64_t size) : std::vector<SymInt>{SymInt(size)} {}  // NOLINT
  SymIntList(int size) : std::vector<SymInt>{SymInt(size)} {}      // NOLINT
  SymIntList(const SymInt& size) : std::vector<SymInt>{size} {}    // NOLINT
  SymIntList(std::vector<SymInt> v) : std::vector<SymInt>(std::move(v)) {}
  SymIntList(const std::vector<int64_t>& v) : std::vector<SymInt>(v.begin(), v.end()) {}
  SymIntList(size_t n, const SymInt& fill) : std::vector<SymInt>(n, fill) {}
  template <class It>
  SymIntList(It first, It last) : std::vector<SymInt>(first, last) {}
  // The example's values, recording no guard.
  std::vector<int64_t> hints() const;
  // Specialised values (guards recorded for symbolic entries).
  std::vector<int64_t> guard_ints() const;
  std::vector<int64_t> vec() const { return guard_ints(); }  // LibTorch's IntArrayRef::vec()
  bool any_symbolic() const;
  std::string str() const;  // "[2, s0, 3]"
};
std::ostream& operator<<(std::ostream& os, const SymIntList& list);  // as str()

// A list of dims (or other plain ints): braces, a single int, or a vector.
class DimList : public std::vector<int64_t> {
 public:
  DimList() = default;
  DimList(int64_t d) : std::vector<int64_t>{d} {}
  DimList(int d) : std::vector<int64_t>{d} {}
  DimList(std::initializer_list<int64_t> v) : std::vector<int64_t>(v) {}
  DimList(std::vector<int64_t> v) : std::vector<int64_t>(std::move(v)) {}
};

// Product of sizes; symbolic if any size is.
SymInt sym_product(const std::vector<SymInt>& sizes);

}  // namespace sinter
