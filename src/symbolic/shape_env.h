// What is known about symbols, and the ShapeEnv that knows it: the symbols of one capture (s0, s1, ...) with
// their example values and ranges, and the guards that host code's comparisons on them imply. Capture
// installs one with ShapeEnvScope; SymInt's comparisons and specialisations then record into it. A compiled
// entry is reused when evaluate_guards() holds for new sizes.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sinter/symint.h"
#include "symbolic/expr.h"

namespace sinter::sym {

// ---- What can be known about symbols: ranges and divisors. ----

// True when e is provably a multiple of k > 0 for every value of its symbols, e.g. 4*s0 + 8 by 4.
// `symbol_divisors[id]`, where given, is a known divisor of that symbol (from a guard like s0 % 8 == 0).
bool is_divisible(const ExprPtr& e, int64_t k, std::span<const int64_t> symbol_divisors = {});

// Inclusive integer ranges; kInf / -kInf mark an unbounded end.
inline constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
struct Range {
  int64_t min = -kInf;
  int64_t max = kInf;
  bool contains(int64_t v) const { return min <= v && v <= max; }
  friend bool operator==(const Range&, const Range&) = default;
};
// Bounds e given each symbol's range (indexed by id; a symbol past the end is unbounded). Sound, not tight:
// each term is bounded on its own, so s0 - s1 with both in [2, inf) is unbounded.
Range bound(const Expr& e, std::span<const Range> symbol_ranges);

// ---- Guards and the ShapeEnv. ----

// A guard relation; Gt/Ge are written as Lt/Le with the operands swapped.
enum class Rel : uint8_t { kEq, kNe, kLt, kLe };

struct Guard {
  Rel rel;
  ExprPtr lhs, rhs;
  std::string text;  // readable, constant on the right where possible: "s0 > 16", "s0 == 2*s1"
  bool holds(std::span<const int64_t> values) const;  // false (not a throw) on division by zero
};

// The answer of evaluate_guards: converts to true when every guard holds.
struct GuardCheck {
  bool ok = true;
  std::string failed;   // the guard that failed, as recorded ("s0 > 16")
  std::string message;  // with the values: "s0 > 16 is false for s0 = 12 (x.size(0))"
  explicit operator bool() const { return ok; }
};

// The expression of a size, a constant for a concrete one.
ExprPtr expr_of(const SymInt& v);

// Where capture is in the user's code: the last op the tracer recorded (its located call) and whether its shape
// rule is running now. Names the origin of a specialisation, since a conversion to int64_t cannot take a
// source location of its own.
struct TraceSite {
  std::source_location loc;  // line 0: unknown
  const char* op = nullptr;  // the op's name, or null before the first op
  bool in_op = false;        // inside that op's shape rule (else in host code after it)
};

// Not thread-safe: one capture (one thread) uses one ShapeEnv at a time.
class ShapeEnv {
 public:
  // Makes a new symbol s<N> whose example value is `hint`, valid for sizes in [min, max].
  // Sizes 0 and 1 are never made symbolic: a hint of 0 or 1 returns that concrete value and creates no symbol
  // (PyTorch's 0/1 specialisation: broadcasting and empty tensors behave differently at those sizes). For the
  // same reason a symbol's range never includes 0 or 1: min is raised to 2. A hint outside [min, max] is the
  // user's mistake (an example that breaks the declared range) and throws sinter::Error. `source` names where
  // the size came from ("x.size(0)") for guard failure messages.
  SymInt create_symbol(int64_t hint, int64_t min = 2, int64_t max = kInf, std::string source = {});

  // Narrows a symbol's declared range (as mark_dynamic's {.min, .max} does); evaluate_guards checks it.
  void set_range(int64_t id, int64_t min, int64_t max);

  int64_t num_symbols() const { return static_cast<int64_t>(hints_.size()); }
  int64_t hint(int64_t id) const { return hints_.at(id); }
  const std::string& source(int64_t id) const { return info_.at(id).source; }
  Range declared_range(int64_t id) const { return info_.at(id).declared; }
  // The declared range narrowed by the guards recorded so far (s0 > 16 raises min to 17).
  Range range(int64_t id) const { return ranges_.at(id); }
  const SymbolValues& hints() const { return hints_; }

  // Rewrites e with what the guards established (a symbol specialised to a constant, or equal to another
  // symbol); returns e when nothing applies.
  ExprPtr simplify(const ExprPtr& e) const;
  // Bounds e with the current ranges.
  Range bound(const ExprPtr& e) const;
  // True when e is provably a multiple of k, using divisibility guards such as s0 % 8 == 0. Records nothing.
  bool is_divisible(const ExprPtr& e, int64_t k) const;
  // `a rel b` when ranges, divisors and guards decide it for all allowed values; records nothing.
  std::optional<bool> statically_known(Rel rel, const ExprPtr& a, const ExprPtr& b) const;

  // What SymInt's comparisons call: answers from the hints and, unless statically known, records the answer
  // as a guard (the relation itself, or its negation when false).
  bool evaluate_comparison(Rel rel, const SymInt& a, const SymInt& b);
  // What converting a symbolic SymInt to int64 calls: records `expr == hint` and returns the hint. The guard's
  // text names where it happened (see TraceSite), and SINTER_LOGS=dynamic logs it.
  int64_t specialize(const SymInt& v);
  void set_site(const TraceSite& site) { site_ = site; }
  const TraceSite& site() const { return site_; }
  // Records `lhs rel rhs`, which must hold for the hints (sinter::InternalError otherwise). Deduplicated; a
  // relation that is statically known true is not recorded.
  void add_guard(Rel rel, const ExprPtr& lhs, const ExprPtr& rhs, const std::string& note = {});

  const std::vector<Guard>& guards() const { return guards_; }
  // The symbols' ranges and the guards, one per line, as checked by evaluate_guards.
  std::string guards_str() const;
  // Checks the symbols' declared ranges, then the guards in recording order, for new symbol values (indexed
  // by symbol id, one per symbol). The first failure is reported.
  GuardCheck evaluate_guards(std::span<const int64_t> values) const;

 private:
  struct SymbolInfo {
    Range declared;  // what the user allowed; checked by evaluate_guards
    std::string source;
  };
  void learn(const Guard& g);
  void replace(int64_t id, const ExprPtr& value);
  std::optional<bool> known_by_difference(Rel rel, const ExprPtr& l, const ExprPtr& r) const;
  std::optional<bool> implied_by_guards(Rel rel, const ExprPtr& difference) const;
  std::string range_text(int64_t id) const;
  std::string values_text(const Guard& g, std::span<const int64_t> values) const;

  // Per symbol, indexed by id. Kept as parallel vectors because the analyses take them as spans.
  SymbolValues hints_;
  std::vector<Range> ranges_;      // declared, narrowed by guards; used for static decisions
  std::vector<int64_t> divisors_;  // a known divisor (from a guard like s0 % 8 == 0), else 1
  std::vector<SymbolInfo> info_;
  std::vector<Guard> guards_;
  struct Fact {  // a guard as `part + c rel 0`, rel one of Eq, Ne, Le
    Rel rel;
    ExprPtr part;
    int64_t c;
  };
  std::vector<Fact> facts_;
  std::unordered_map<int64_t, ExprPtr> replacements_;  // symbol id -> what a guard proved it equal to
  TraceSite site_;
};

// The ShapeEnv of the capture running on this thread, or nullptr outside capture.
ShapeEnv* current_shape_env();

// Makes `env` this thread's current ShapeEnv for the scope's lifetime; nests, restoring the previous one.
class ShapeEnvScope {
 public:
  explicit ShapeEnvScope(ShapeEnv* env);
  ~ShapeEnvScope();
  ShapeEnvScope(const ShapeEnvScope&) = delete;
  ShapeEnvScope& operator=(const ShapeEnvScope&) = delete;

 private:
  ShapeEnv* previous_;
};

}  // namespace sinter::sym
