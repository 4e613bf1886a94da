// Range and divisibility analysis of expressions, and the ShapeEnv: symbols, ranges, guards and what the
// guards let later decisions take for granted.
#include "symbolic/shape_env.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <numeric>
#include <tuple>

#include "sinter/error.h"
#include "support/log.h"

namespace sinter::sym {
namespace {

// gcd(a provable divisor of e, k): a divisor of k. Complete for products: per prime, the greedy split takes
// the minimum exponent, so it reaches k whenever k divides the product of the known divisors.
int64_t known_divisor(const Expr& e, int64_t k, std::span<const int64_t> symbol_divisors) {
  switch (e.kind()) {
    case Kind::kConst: return std::gcd(std::abs(e.value()), k);
    case Kind::kSymbol: {
      int64_t id = e.symbol_id();
      return id < static_cast<int64_t>(symbol_divisors.size()) && symbol_divisors[id] > 0
                 ? std::gcd(symbol_divisors[id], k)
                 : 1;
    }
    case Kind::kAdd: {
      int64_t g = std::gcd(std::abs(e.value()), k);
      for (const ExprPtr& t : e.args()) g = std::gcd(g, known_divisor(*t, k, symbol_divisors));
      return g;
    }
    case Kind::kMul: {
      int64_t g = std::gcd(std::abs(e.value()), k);
      for (const ExprPtr& f : e.args()) g *= known_divisor(*f, k / g, symbol_divisors);
      return g;
    }
    case Kind::kMin:
    case Kind::kMax: {
      int64_t g = k;
      for (const ExprPtr& a : e.args()) g = std::gcd(g, known_divisor(*a, k, symbol_divisors));
      return g;
    }
    default: return 1;
  }
}

bool is_pos_inf(int64_t v) { return v >= kInf; }
bool is_neg_inf(int64_t v) { return v <= -kInf; }

// Saturating sum for one end of a range: an infinite operand wins toward that end.
int64_t add_end(int64_t a, int64_t b, bool upper) {
  if (upper ? (is_pos_inf(a) || is_pos_inf(b)) : (is_neg_inf(a) || is_neg_inf(b)))
    return upper ? kInf : -kInf;
  if (is_pos_inf(a) || is_pos_inf(b)) return kInf;
  if (is_neg_inf(a) || is_neg_inf(b)) return -kInf;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? kInf : -kInf;
  return r;
}

int64_t mul_sat(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  int64_t r;
  if (is_pos_inf(a) || is_neg_inf(a) || is_pos_inf(b) || is_neg_inf(b) || __builtin_mul_overflow(a, b, &r))
    return negative ? -kInf : kInf;
  return r;
}

Range mul_range(Range a, Range b) {
  int64_t c[4] = {mul_sat(a.min, b.min), mul_sat(a.min, b.max), mul_sat(a.max, b.min), mul_sat(a.max, b.max)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

// floor(a / b) for b > 0 with infinite ends.
int64_t div_end(int64_t a, int64_t b) {
  if (is_pos_inf(b)) return a >= 0 ? 0 : (is_neg_inf(a) ? -kInf : -1);
  if (is_pos_inf(a) || is_neg_inf(a)) return a;
  return SymInt::floordiv(a, b);
}

Range floordiv_range(Range a, Range b) {
  if (b.max < 0) {  // floor(a / b) == floor(-a / -b)
    a = {-a.max, -a.min};
    b = {-b.max, -b.min};
  }
  if (b.min <= 0) return {};
  return {a.min >= 0 ? div_end(a.min, b.max) : div_end(a.min, b.min),
          a.max >= 0 ? div_end(a.max, b.min) : div_end(a.max, b.max)};
}

Range mod_range(Range a, Range b) {
  if (b.min > 0) {
    int64_t top = is_pos_inf(b.max) ? kInf : b.max - 1;
    if (a.min >= 0 && a.max < b.min) return a;  // already reduced
    return {0, a.min >= 0 ? std::min(a.max, top) : top};
  }
  if (b.max < 0) return {is_neg_inf(b.min) ? -kInf : b.min + 1, 0};
  return {};
}

}  // namespace

bool is_divisible(const ExprPtr& e, int64_t k, std::span<const int64_t> symbol_divisors) {
  if (k <= 0) throw Error(fmt::format("is_divisible needs a positive divisor, got {}", k));
  return known_divisor(*e, k, symbol_divisors) == k;
}

Range bound(const Expr& e, std::span<const Range> symbol_ranges) {
  switch (e.kind()) {
    case Kind::kConst: return {e.value(), e.value()};
    case Kind::kSymbol:
      return e.value() < static_cast<int64_t>(symbol_ranges.size()) ? symbol_ranges[e.value()] : Range{};
    case Kind::kAdd: {
      Range r{e.value(), e.value()};
      for (const ExprPtr& t : e.args()) {
        Range b = bound(*t, symbol_ranges);
        r = {add_end(r.min, b.min, false), add_end(r.max, b.max, true)};
      }
      return r;
    }
    case Kind::kMul: {
      Range r{e.value(), e.value()};
      for (const ExprPtr& f : e.args()) r = mul_range(r, bound(*f, symbol_ranges));
      return r;
    }
    case Kind::kFloorDiv:
      return floordiv_range(bound(*e.args()[0], symbol_ranges), bound(*e.args()[1], symbol_ranges));
    case Kind::kMod: return mod_range(bound(*e.args()[0], symbol_ranges), bound(*e.args()[1], symbol_ranges));
    case Kind::kMin:
    case Kind::kMax: {
      Range r = bound(*e.args()[0], symbol_ranges);
      for (size_t i = 1; i < e.args().size(); ++i) {
        Range b = bound(*e.args()[i], symbol_ranges);
        r = e.kind() == Kind::kMin ? Range{std::min(r.min, b.min), std::min(r.max, b.max)}
                                   : Range{std::max(r.min, b.min), std::max(r.max, b.max)};
      }
      return r;
    }
  }
  throw InternalError("unknown expression kind");
}

namespace {

thread_local ShapeEnv* current_env = nullptr;

const char* rel_text(Rel rel) {
  switch (rel) {
    case Rel::kEq: return "==";
    case Rel::kNe: return "!=";
    case Rel::kLt: return "<";
    case Rel::kLe: return "<=";
  }
  return "?";
}

bool compare_values(Rel rel, int64_t a, int64_t b) {
  switch (rel) {
    case Rel::kEq: return a == b;
    case Rel::kNe: return a != b;
    case Rel::kLt: return a < b;
    case Rel::kLe: return a <= b;
  }
  return false;
}

// Constant on the right reads like the host code that made the guard: Lt(16, s0) prints "s0 > 16".
std::string guard_text(Rel rel, const ExprPtr& lhs, const ExprPtr& rhs) {
  if (lhs->is_const() && !rhs->is_const()) {
    const char* flipped = rel == Rel::kLt ? ">" : rel == Rel::kLe ? ">=" : rel_text(rel);
    return fmt::format("{} {} {}", rhs->str(), flipped, lhs->str());
  }
  return fmt::format("{} {} {}", lhs->str(), rel_text(rel), rhs->str());
}

// The symbols of two expressions, ascending (without building l + r, which can overflow: s0 + INT64_MAX).
std::vector<int64_t> symbols_of(const ExprPtr& l, const ExprPtr& r) {
  std::vector<int64_t> a = free_symbols(l), b = free_symbols(r), out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

std::string bound_text(int64_t v) { return v >= kInf ? "inf" : v <= -kInf ? "-inf" : fmt::format("{}", v); }

Range intersect(Range a, Range b) { return {std::max(a.min, b.min), std::min(a.max, b.max)}; }

}  // namespace

ExprPtr expr_of(const SymInt& v) { return v.is_symbolic() ? v.expr() : make_const(v.hint()); }

bool Guard::holds(std::span<const int64_t> values) const {
  try {
    return compare_values(rel, evaluate(*lhs, values), evaluate(*rhs, values));
  } catch (const Error&) {  // a size that divides by zero or overflows cannot satisfy the guard
    return false;
  }
}

SymInt ShapeEnv::create_symbol(int64_t hint, int64_t min, int64_t max, std::string source) {
  std::string of = source.empty() ? "" : " of " + source;
  if (hint < 0) throw Error(fmt::format("size{} cannot be negative, got {}", of, hint));
  if (hint == 0 || hint == 1) return SymInt(hint);
  min = std::max<int64_t>(min, 2);
  if (min > max) throw Error(fmt::format("empty size range [{}, {}]{}", min, bound_text(max), of));
  if (!(min <= hint && hint <= max))
    throw Error(
        fmt::format("size{} is {}, outside its declared range [{}, {}]", of, hint, min, bound_text(max)));
  int64_t id = num_symbols();
  hints_.push_back(hint);
  ranges_.push_back({min, max});
  divisors_.push_back(1);
  info_.push_back({{min, max}, std::move(source)});
  return SymInt(make_symbol(id), hint);
}

void ShapeEnv::set_range(int64_t id, int64_t min, int64_t max) {
  if (id < 0 || id >= num_symbols()) throw Error(fmt::format("no symbol s{} in this ShapeEnv", id));
  Range r = intersect(info_[id].declared, {std::max<int64_t>(min, 2), max});
  if (!r.contains(hints_[id]))
    throw Error(fmt::format("s{} is {} in the example, outside the range [{}, {}] being set", id, hints_[id],
                            bound_text(r.min), bound_text(r.max)));
  info_[id].declared = r;
  ranges_[id] = intersect(ranges_[id], r);
}

namespace {

// The expression `e` was with its arguments replaced by `args`, through the factories (so it stays canonical).
ExprPtr with_args(const ExprPtr& e, const std::vector<ExprPtr>& args) {
  switch (e->kind()) {
    case Kind::kAdd: {
      std::vector<ExprPtr> ops = args;
      ops.push_back(make_const(e->value()));
      return make_add(ops);
    }
    case Kind::kMul: {
      ExprPtr r = make_const(e->value());
      for (const ExprPtr& a : args) r = make_mul(r, a);
      return r;
    }
    case Kind::kFloorDiv: return make_floordiv(args[0], args[1]);
    case Kind::kMod: return make_mod(args[0], args[1]);
    case Kind::kMin:
    case Kind::kMax: {
      ExprPtr r = args[0];
      for (size_t i = 1; i < args.size(); ++i)
        r = e->kind() == Kind::kMin ? make_min(r, args[i]) : make_max(r, args[i]);
      return r;
    }
    default: return e;
  }
}

// Drops the Min and Max operands that the ranges show never decide: Max(1, s1) is s1 while s1 >= 2. Contiguous
// strides are spelled with Max(1, size) (a size-0 dim must not zero the strides), and symbols are at least 2
// (sizes 0 and 1 are specialised), so without this a symbolic stride and the size it equals compare as
// different expressions, and every layout decision that compares them (is this dense, is this the graph's
// layout) fails for symbolic shapes. Only each operand's own range is used, so nothing can overflow.
ExprPtr fold_min_max(const ExprPtr& e, std::span<const Range> ranges) {
  if (e->args().empty()) return e;
  std::vector<ExprPtr> args;
  bool changed = false;
  for (const ExprPtr& a : e->args()) {
    args.push_back(fold_min_max(a, ranges));
    changed = changed || args.back() != a;
  }
  if (e->kind() == Kind::kMin || e->kind() == Kind::kMax) {
    bool is_min = e->kind() == Kind::kMin;
    std::vector<Range> r;
    for (const ExprPtr& a : args) r.push_back(bound(*a, ranges));
    std::vector<ExprPtr> kept;
    for (size_t j = 0; j < args.size(); ++j) {
      bool dominated = false;  // another operand always decides instead (of two equal ones, the earlier stays)
      for (size_t k = 0; k < args.size() && !dominated; ++k) {
        if (k == j) continue;
        bool level = is_min ? r[k].max <= r[j].min : r[k].min >= r[j].max;
        bool mutual = is_min ? r[j].max <= r[k].min : r[j].min >= r[k].max;
        dominated = level && (!mutual || k < j);
      }
      if (!dominated) kept.push_back(args[j]);
    }
    if (kept.size() != args.size()) {
      args = std::move(kept);
      changed = true;
    }
    if (args.size() == 1) return args[0];
  }
  return changed ? with_args(e, args) : e;
}

}  // namespace

ExprPtr ShapeEnv::simplify(const ExprPtr& e) const { return fold_min_max(substitute(e, replacements_), ranges_); }

Range ShapeEnv::bound(const ExprPtr& e) const { return sym::bound(*simplify(e), ranges_); }

bool ShapeEnv::is_divisible(const ExprPtr& e, int64_t k) const {
  return sym::is_divisible(simplify(e), k, divisors_);
}

namespace {

// `l rel r` decided by the two sides' ranges alone, before anything builds l - r (which overflows for a bound
// such as INT64_MAX or INT64_MIN). An infinite upper end is INT64_MAX, a true bound of every int64 value, so
// `s0 <= INT64_MAX` is known; an infinite lower end is taken as INT64_MIN.
std::optional<bool> known_by_ranges(Rel rel, Range l, Range r) {
  auto low = [](int64_t v) { return v <= -kInf ? static_cast<__int128>(std::numeric_limits<int64_t>::min()) : v; };
  __int128 lmin = low(l.min), lmax = l.max, rmin = low(r.min), rmax = r.max;
  switch (rel) {
    case Rel::kLt:
      if (lmax < rmin) return true;
      if (lmin >= rmax) return false;
      break;
    case Rel::kLe:
      if (lmax <= rmin) return true;
      if (lmin > rmax) return false;
      break;
    case Rel::kEq:
    case Rel::kNe:
      if (lmax < rmin || rmax < lmin) return rel == Rel::kNe;
      break;
  }
  return std::nullopt;
}

}  // namespace

std::optional<bool> ShapeEnv::statically_known(Rel rel, const ExprPtr& a, const ExprPtr& b) const {
  ExprPtr l = simplify(a), r = simplify(b);
  if (std::optional<bool> k = known_by_ranges(rel, sym::bound(*l, ranges_), sym::bound(*r, ranges_))) return k;
  try {
    return known_by_difference(rel, l, r);
  } catch (const Error&) {  // l - r overflows int64: not decidable here
    return std::nullopt;
  }
}

std::optional<bool> ShapeEnv::known_by_difference(Rel rel, const ExprPtr& l, const ExprPtr& r) const {
  bool equality = rel == Rel::kEq || rel == Rel::kNe;
  // x % k == 0 when x is provably a multiple of k
  if (equality && r->is_const(0) && l->kind() == Kind::kMod && l->args()[1]->is_const() &&
      l->args()[1]->value() > 0 && sym::is_divisible(l->args()[0], l->args()[1]->value(), divisors_))
    return rel == Rel::kEq;
  // Bound l - r, also expanded: (s0 + 1)*s1 - s0*s1 is unbounded as written but s1 when expanded.
  ExprPtr d = make_sub(l, r);
  Range range = sym::bound(*d, ranges_);
  if (ExprPtr x = expand(d); x != d) range = intersect(range, sym::bound(*x, ranges_));
  std::optional<bool> known;
  if (equality) {
    if (range.min == 0 && range.max == 0)
      known = rel == Rel::kEq;
    else if (!range.contains(0))
      known = rel == Rel::kNe;
  } else if (range.max < (rel == Rel::kLt ? 0 : 1)) {
    known = true;
  } else if (range.min >= (rel == Rel::kLt ? 0 : 1)) {
    known = false;
  }
  return known ? known : implied_by_guards(rel, d);
}

namespace {

// e as part + constant, the part without a constant term: 2*s0*s1 - 100 is (2*s0*s1, -100).
std::pair<ExprPtr, int64_t> split_constant(const ExprPtr& e) {
  int64_t c = e->kind() == Kind::kAdd || e->is_const() ? e->value() : 0;
  return {c == 0 ? e : make_add(e, make_const(-c)), c};
}

}  // namespace

// Recorded guards as facts `part + c rel 0` with < folded into <= (a < b is a - b + 1 <= 0). A new relation
// whose part is a fact's part or its negation is decided by the constants, so s0*s1 > 50 and s0*s1 != 7
// follow from s0*s1 > 100 though ranges know nothing of products.
std::optional<bool> ShapeEnv::implied_by_guards(Rel rel, const ExprPtr& difference) const {
  auto [part, c] = split_constant(rel == Rel::kLt ? make_add(difference, make_const(1)) : difference);
  Rel q = rel == Rel::kLt ? Rel::kLe : rel;  // the query: v q 0 for v = part + c
  ExprPtr negated = make_neg(part);
  for (const Fact& f : facts_) {
    bool same = f.part == part;
    if (!same && f.part != negated) continue;
    // same: part = v - c, so the fact reads v - k rel 0 with k = c - f.c;
    // flipped: -part = c - v, so it reads k - v rel 0 with k = c + f.c.
    __int128 k = same ? static_cast<__int128>(c) - f.c : static_cast<__int128>(c) + f.c;
    switch (f.rel) {
      case Rel::kEq:  // v == k
        return q == Rel::kEq ? k == 0 : q == Rel::kNe ? k != 0 : k <= 0;
      case Rel::kNe:  // v != k
        if (q != Rel::kLe && k == 0) return q == Rel::kNe;
        break;
      case Rel::kLe:  // same: v <= k; flipped: v >= k
        if (same && k <= 0 && (q == Rel::kLe || k < 0)) return q != Rel::kEq;
        if (!same && k > 0) return q == Rel::kNe;
        break;
      case Rel::kLt: break;  // never stored
    }
  }
  return std::nullopt;
}

bool ShapeEnv::evaluate_comparison(Rel rel, const SymInt& a, const SymInt& b) {
  bool result = compare_values(rel, a.hint(), b.hint());
  ExprPtr l = expr_of(a), r = expr_of(b);
  if (result) {
    add_guard(rel, l, r);
  } else {  // record the negation, which is what the example satisfies
    switch (rel) {
      case Rel::kEq: add_guard(Rel::kNe, l, r); break;
      case Rel::kNe: add_guard(Rel::kEq, l, r); break;
      case Rel::kLt: add_guard(Rel::kLe, r, l); break;
      case Rel::kLe: add_guard(Rel::kLt, r, l); break;
    }
  }
  return result;
}

int64_t ShapeEnv::specialize(const SymInt& v) {
  if (!v.is_symbolic()) return v.hint();
  // A conversion cannot take a source location: name the op it happened in, or the last op before it.
  std::string where;
  if (site_.loc.line() != 0 && site_.op)
    where = fmt::format(" {} {} at {}:{}", site_.in_op ? "in" : "in host code after", site_.op,
                        site_.loc.file_name(), site_.loc.line());
  else if (site_.loc.line() != 0)
    where = fmt::format(" at {}:{}", site_.loc.file_name(), site_.loc.line());
  size_t before = guards_.size();
  add_guard(Rel::kEq, v.expr(), make_const(v.hint()), fmt::format("specialised by int64_t(SymInt){}", where));
  if (guards_.size() > before)
    SINTER_LOG(kDynamic, "{}: a symbolic size became a constant (pass it on as a SymInt to keep it symbolic)",
               guards_.back().text);
  return v.hint();
}

void ShapeEnv::add_guard(Rel rel, const ExprPtr& lhs, const ExprPtr& rhs, const std::string& note) {
  ExprPtr l = simplify(lhs), r = simplify(rhs);
  for (int64_t id : symbols_of(l, r))
    if (id >= num_symbols())
      throw InternalError(fmt::format("guard on s{}, a symbol of another ShapeEnv", id));
  std::string text = guard_text(rel, l, r);
  if (!compare_values(rel, evaluate(*l, hints_), evaluate(*r, hints_)))
    throw InternalError(fmt::format("guard {} does not hold for the example's sizes", text));
  if (std::optional<bool> known = statically_known(rel, l, r)) {
    if (!*known) throw InternalError(fmt::format("guard {} holds for the example but is known false", text));
    return;
  }
  // One spelling per relation, so s1 == s0 and s0 == s1 are one guard: constants right, else canonical order.
  if ((rel == Rel::kEq || rel == Rel::kNe) && (l->is_const() || (!r->is_const() && compare(*l, *r) > 0))) {
    std::swap(l, r);
    text = guard_text(rel, l, r);
  }
  if (!note.empty()) text += " (" + note + ")";
  guards_.push_back({rel, l, r, std::move(text)});
  try {
    ExprPtr d = make_sub(l, r);
    auto [part, c] = split_constant(rel == Rel::kLt ? make_add(d, make_const(1)) : d);
    facts_.push_back({rel == Rel::kLt ? Rel::kLe : rel, part, c});
  } catch (const Error&) {  // l - r overflows int64: the guard holds no fact that later queries could use
  }
  learn(guards_.back());
}

// Takes what a new guard establishes into the ranges, divisors and replacements used by later decisions.
void ShapeEnv::learn(const Guard& g) {
  const ExprPtr &l = g.lhs, &r = g.rhs;
  if (g.rel == Rel::kEq) {
    // s % k == 0: remember k as a divisor of s
    if (r->is_const(0) && l->kind() == Kind::kMod && l->args()[0]->is_symbol() && l->args()[1]->is_const() &&
        l->args()[1]->value() > 0) {
      int64_t& d = divisors_[l->args()[0]->symbol_id()];
      d = std::lcm(d, l->args()[1]->value());
      return;
    }
    // A symbol equal to an expression without it is replaced by it from now on (of two symbols, the newer).
    auto absent = [](const ExprPtr& s, const ExprPtr& e) {
      std::vector<int64_t> ids = free_symbols(e);
      return !std::binary_search(ids.begin(), ids.end(), s->symbol_id());
    };
    if (r->is_symbol() && (!l->is_symbol() || r->symbol_id() > l->symbol_id()) && absent(r, l))
      replace(r->symbol_id(), l);
    else if (l->is_symbol() && absent(l, r))
      replace(l->symbol_id(), r);
    return;
  }
  // A symbol against a constant narrows the symbol's range.
  bool sym_left = l->is_symbol() && r->is_const(), sym_right = r->is_symbol() && l->is_const();
  if (!sym_left && !sym_right) return;
  Range& range = ranges_[(sym_left ? l : r)->symbol_id()];
  int64_t c = (sym_left ? r : l)->value();
  if (g.rel == Rel::kNe) {
    if (c == range.min) ++range.min;
    if (c == range.max) --range.max;
  } else if (sym_left) {  // s < c, s <= c
    range.max = std::min(range.max, g.rel == Rel::kLt ? c - 1 : c);
  } else {  // c < s, c <= s
    range.min = std::max(range.min, g.rel == Rel::kLt ? c + 1 : c);
  }
}

void ShapeEnv::replace(int64_t id, const ExprPtr& value) {
  std::unordered_map<int64_t, ExprPtr> one = {{id, value}};
  for (auto& [k, v] : replacements_) v = substitute(v, one);
  replacements_[id] = value;
  // Keep facts in the vocabulary that simplified queries use; one whose constants overflow int64 once
  // substituted is dropped (facts only help decide later queries, the guard itself stays).
  std::erase_if(facts_, [&](Fact& f) {
    try {
      std::tie(f.part, f.c) = split_constant(substitute(make_add(f.part, make_const(f.c)), one));
      return false;
    } catch (const Error&) {
      return true;
    }
  });
  if (value->is_const()) {
    ranges_[id] = {value->value(), value->value()};
  } else if (value->is_symbol()) {  // what was known of the replaced symbol now bounds its replacement
    int64_t to = value->symbol_id();
    ranges_[to] = intersect(ranges_[to], ranges_[id]);
    divisors_[to] = std::lcm(divisors_[to], divisors_[id]);
  }
}

std::string ShapeEnv::range_text(int64_t id) const {
  Range r = info_[id].declared;
  if (r.max >= kInf) return fmt::format("s{} >= {}", id, r.min);
  return fmt::format("{} <= s{} <= {}", r.min, id, r.max);
}

std::string ShapeEnv::values_text(const Guard& g, std::span<const int64_t> values) const {
  std::string out;
  for (int64_t id : symbols_of(g.lhs, g.rhs)) {
    if (!out.empty()) out += ", ";
    out += fmt::format("s{} = {}", id, values[id]);
    if (!info_[id].source.empty()) out += fmt::format(" ({})", info_[id].source);
  }
  return out;
}

std::string ShapeEnv::guards_str() const {
  std::string out;
  for (int64_t id = 0; id < num_symbols(); ++id) out += range_text(id) + "\n";
  for (const Guard& g : guards_) out += g.text + "\n";
  return out;
}

GuardCheck ShapeEnv::evaluate_guards(std::span<const int64_t> values) const {
  if (static_cast<int64_t>(values.size()) < num_symbols())
    throw InternalError(
        fmt::format("evaluate_guards got {} values for {} symbols", values.size(), num_symbols()));
  for (int64_t id = 0; id < num_symbols(); ++id) {
    if (info_[id].declared.contains(values[id])) continue;
    std::string text = range_text(id), source = info_[id].source.empty() ? "" : " (" + info_[id].source + ")";
    return {false, text, fmt::format("{} is false for s{} = {}{}", text, id, values[id], source)};
  }
  for (const Guard& g : guards_)
    if (!g.holds(values))
      return {false, g.text, fmt::format("{} is false for {}", g.text, values_text(g, values))};
  return {};
}

ShapeEnv* current_shape_env() { return current_env; }

ShapeEnvScope::ShapeEnvScope(ShapeEnv* env) : previous_(current_env) { current_env = env; }
ShapeEnvScope::~ShapeEnvScope() { current_env = previous_; }

}  // namespace sinter::sym
