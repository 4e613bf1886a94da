// Expression nodes: the intern table, the simplifying factories, printing/parsing, evaluation and rewriting.
// Simplification happens only in the factories, so every node reachable anywhere is already in normal form
// and equality is pointer equality.
#include "symbolic/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <optional>

#include "sinter/error.h"

namespace sinter::sym {
namespace {

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(fmt::format("int64 overflow in size arithmetic: {} + {}", a, b));
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(fmt::format("int64 overflow in size arithmetic: {} * {}", a, b));
  return r;
}

int64_t checked_floordiv(int64_t a, int64_t b) {
  if (b == 0) throw Error(fmt::format("division by zero in size arithmetic: {} // 0", a));
  if (b == -1) return checked_mul(a, -1);
  return SymInt::floordiv(a, b);
}

int64_t checked_mod(int64_t a, int64_t b) {
  if (b == 0) throw Error(fmt::format("modulo by zero in size arithmetic: {} % 0", a));
  return b == -1 ? 0 : SymInt::pymod(a, b);
}

size_t hash_node(Kind kind, int64_t value, const std::vector<ExprPtr>& args) {
  size_t h = std::hash<int64_t>()(value) * 0x9E3779B97F4A7C15ull + static_cast<size_t>(kind);
  for (const ExprPtr& a : args) h = (h ^ a->hash()) * 0x100000001B3ull + (h >> 29);
  return h;
}

struct InternTable {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<std::weak_ptr<const Expr>>> buckets;
  size_t inserts_since_sweep = 0;
};

// Leaked on purpose: expressions held by other static objects may be released during shutdown.
InternTable& table() {
  static InternTable* t = new InternTable;
  return *t;
}

// A product seen as coefficient * factors. A sum is reduced to its content (gcd of its coefficients, with the
// sign of its first term) times a primitive sum, so 2*(s0 + 1)*s1 and (2*s0 + 2)*s1 have one normal form.
struct Product {
  int64_t coeff = 1;
  std::vector<ExprPtr> factors;
};

int64_t content(const ExprPtr& e);
ExprPtr divide_exact(const ExprPtr& term, const ExprPtr& divisor);

Product split_product(const ExprPtr& e) {
  switch (e->kind()) {
    case Kind::kConst: return {e->value(), {}};
    case Kind::kMul: return {e->value(), e->args()};
    case Kind::kAdd: {
      int64_t g = content(e);
      if (g == 1) return {1, {e}};
      return {g, {divide_exact(e, make_const(g))}};
    }
    default: return {1, {e}};
  }
}

// gcd of the coefficients and constant of a sum (sign of the first term), or a product's coefficient.
int64_t content(const ExprPtr& e) {
  if (e->kind() == Kind::kMul) return e->value();
  if (e->kind() != Kind::kAdd) return e->is_const() ? e->value() : 1;
  int64_t g = std::abs(e->value());
  for (const ExprPtr& t : e->args()) g = std::gcd(g, std::abs(content(t)));
  return content(e->args()[0]) < 0 ? -g : g;
}

// The terms of a sum with its constant last (a lone expression is one term).
std::vector<ExprPtr> summands(const ExprPtr& e) {
  if (e->kind() != Kind::kAdd) return {e};
  std::vector<ExprPtr> out = e->args();
  if (e->value() != 0) out.push_back(make_const(e->value()));
  return out;
}

ExprPtr make_product(int64_t coeff, const std::vector<ExprPtr>& factors) {
  ExprPtr out = make_const(coeff);
  for (const ExprPtr& f : factors) out = make_mul(out, f);
  return out;
}

// term / divisor when it is provably exact (coefficient divisible, divisor's factors a sub-multiset of the
// term's); nullptr otherwise. A sum divides term by term.
ExprPtr divide_exact(const ExprPtr& term, const ExprPtr& divisor) {
  if (term->kind() == Kind::kAdd) {
    std::vector<ExprPtr> parts;
    for (const ExprPtr& t : summands(term)) {
      ExprPtr q = divide_exact(t, divisor);
      if (!q) return nullptr;
      parts.push_back(q);
    }
    return make_add(parts);
  }
  if (term->is_const(0)) return term;
  Product t = split_product(term), d = split_product(divisor);
  if (d.coeff == 0 || t.coeff % d.coeff != 0) return nullptr;
  for (const ExprPtr& f : d.factors) {
    auto it = std::find(t.factors.begin(), t.factors.end(), f);
    if (it == t.factors.end()) return nullptr;
    t.factors.erase(it);
  }
  return make_product(t.coeff / d.coeff, t.factors);
}

struct Term {
  int64_t coeff;
  ExprPtr base;  // never Const or Add; a product with coefficient 1
};

Term split_term(const ExprPtr& e) {
  if (e->kind() != Kind::kMul) return {1, e};
  if (e->args().size() == 1) return {e->value(), e->args()[0]};
  return {e->value(), e->value() == 1 ? e : intern(Kind::kMul, 1, e->args())};
}

ExprPtr build_term(int64_t coeff, const ExprPtr& base) {
  if (coeff == 1) return base;
  if (base->kind() == Kind::kMul) return intern(Kind::kMul, coeff, base->args());
  return intern(Kind::kMul, coeff, {base});
}

bool less(const ExprPtr& a, const ExprPtr& b) { return compare(*a, *b) < 0; }

ExprPtr make_min_max(Kind kind, const ExprPtr& a, const ExprPtr& b) {
  std::vector<ExprPtr> ops;
  std::optional<int64_t> c;
  for (const ExprPtr& e : {a, b}) {
    for (const ExprPtr& x : e->kind() == kind ? e->args() : std::vector<ExprPtr>{e}) {
      if (!x->is_const())
        ops.push_back(x);
      else
        c = !c ? x->value() : kind == Kind::kMin ? std::min(*c, x->value()) : std::max(*c, x->value());
    }
  }
  if (c) ops.push_back(make_const(*c));
  std::sort(ops.begin(), ops.end(), less);
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  // Drop an operand that another one dominates by a constant difference: Min(s0, s0 + 2) is s0.
  std::vector<ExprPtr> kept;
  for (size_t i = 0; i < ops.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < ops.size() && !dominated; ++j) {
      if (i == j) continue;
      ExprPtr d = make_sub(ops[i], ops[j]);
      dominated = d->is_const() && (kind == Kind::kMin ? d->value() > 0 : d->value() < 0);
    }
    if (!dominated) kept.push_back(ops[i]);
  }
  if (kept.size() == 1) return kept[0];
  return intern(kind, 0, std::move(kept));
}

}  // namespace

ExprPtr intern(Kind kind, int64_t value, std::vector<ExprPtr> args) {
  size_t h = hash_node(kind, value, args);
  InternTable& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto& bucket = t.buckets[h];
  for (size_t i = 0; i < bucket.size();) {
    ExprPtr p = bucket[i].lock();
    if (!p) {
      bucket[i] = std::move(bucket.back());
      bucket.pop_back();
      continue;
    }
    if (p->kind() == kind && p->value() == value && p->args() == args) return p;
    ++i;
  }
  auto p = std::make_shared<const Expr>(Expr::Key{}, kind, value, std::move(args), h);
  bucket.push_back(p);
  // Amortised sweep of dead entries so the table does not grow with every expression ever built.
  if (++t.inserts_since_sweep > t.buckets.size()) {
    t.inserts_since_sweep = 0;
    for (auto it = t.buckets.begin(); it != t.buckets.end();) {
      std::erase_if(it->second, [](const std::weak_ptr<const Expr>& w) { return w.expired(); });
      it = it->second.empty() ? t.buckets.erase(it) : std::next(it);
    }
  }
  return p;
}

ExprPtr make_const(int64_t v) { return intern(Kind::kConst, v, {}); }

ExprPtr make_symbol(int64_t id) {
  if (id < 0) throw InternalError(fmt::format("negative symbol id {}", id));
  return intern(Kind::kSymbol, id, {});
}

ExprPtr make_add(const ExprPtr& a, const ExprPtr& b) { return make_add(std::vector<ExprPtr>{a, b}); }

ExprPtr make_add(std::span<const ExprPtr> operands) {
  int64_t c = 0;
  std::vector<Term> terms;
  for (const ExprPtr& e : operands) {
    if (e->is_const()) {
      c = checked_add(c, e->value());
    } else if (e->kind() == Kind::kAdd) {
      c = checked_add(c, e->value());
      for (const ExprPtr& t : e->args()) terms.push_back(split_term(t));
    } else {
      terms.push_back(split_term(e));
    }
  }
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term& x, const Term& y) { return less(x.base, y.base); });
  std::vector<ExprPtr> out;
  for (size_t i = 0; i < terms.size();) {
    int64_t coeff = 0;
    size_t j = i;
    for (; j < terms.size() && terms[j].base == terms[i].base; ++j)
      coeff = checked_add(coeff, terms[j].coeff);
    if (coeff != 0) out.push_back(build_term(coeff, terms[i].base));
    i = j;
  }
  if (out.empty()) return make_const(c);
  if (out.size() == 1 && c == 0) return out[0];
  return intern(Kind::kAdd, c, std::move(out));
}

ExprPtr make_sub(const ExprPtr& a, const ExprPtr& b) { return make_add(a, make_neg(b)); }
ExprPtr make_neg(const ExprPtr& a) { return make_mul(make_const(-1), a); }

ExprPtr make_mul(const ExprPtr& a, const ExprPtr& b) {
  if (b->is_const() && !a->is_const()) return make_mul(b, a);
  if (a->is_const() && b->kind() == Kind::kAdd) {  // c*(x + y + k) -> c*x + c*y + c*k
    if (a->value() == 0 || a->value() == 1) return a->value() == 0 ? a : b;
    std::vector<ExprPtr> scaled;
    for (const ExprPtr& t : summands(b)) scaled.push_back(make_mul(a, t));
    return make_add(scaled);
  }
  int64_t coeff = 1;
  std::vector<ExprPtr> factors;
  for (const ExprPtr& e : {a, b}) {
    Product p = split_product(e);
    coeff = checked_mul(coeff, p.coeff);
    factors.insert(factors.end(), p.factors.begin(), p.factors.end());
  }
  if (coeff == 0 || factors.empty()) return make_const(coeff);
  if (factors.size() == 1) {
    if (coeff == 1) return factors[0];
    if (factors[0]->kind() == Kind::kAdd) return make_mul(make_const(coeff), factors[0]);
  }
  std::sort(factors.begin(), factors.end(), less);
  return intern(Kind::kMul, coeff, std::move(factors));
}

ExprPtr make_floordiv(const ExprPtr& a, const ExprPtr& b) {
  if (b->is_const(0)) throw Error(fmt::format("division by zero in size expression ({})//0", a->str()));
  if (a->is_const() && b->is_const()) return make_const(checked_floordiv(a->value(), b->value()));
  if (b->is_const(1)) return a;
  if (b->is_const(-1)) return make_neg(a);
  if (a->is_const(0)) return a;
  if (a == b) return make_const(1);
  if (b->is_const() && b->value() > 0) {
    int64_t k = b->value();
    // (x//c)//k -> x//(c*k) for positive c, k
    if (a->kind() == Kind::kFloorDiv && a->args()[1]->is_const() && a->args()[1]->value() > 0)
      return make_floordiv(a->args()[0], make_const(checked_mul(a->args()[1]->value(), k)));
    // (g*x)//(g*m) -> x//m
    int64_t g = std::gcd(std::abs(content(a)), k);
    if (g > 1) return make_floordiv(divide_exact(a, make_const(g)), make_const(k / g));
  }
  // (b*m + r)//b -> m + r//b, for the terms that b divides exactly
  std::vector<ExprPtr> quotients, rest;
  for (const ExprPtr& t : summands(a)) {
    if (ExprPtr q = divide_exact(t, b))
      quotients.push_back(q);
    else
      rest.push_back(t);
  }
  if (!quotients.empty()) return make_add(make_add(quotients), make_floordiv(make_add(rest), b));
  return intern(Kind::kFloorDiv, 0, {a, b});
}

ExprPtr make_mod(const ExprPtr& a, const ExprPtr& b) {
  if (b->is_const(0)) throw Error(fmt::format("modulo by zero in size expression ({}) % 0", a->str()));
  if (a->is_const() && b->is_const()) return make_const(checked_mod(a->value(), b->value()));
  if (b->is_const(1) || b->is_const(-1) || a->is_const(0) || a == b) return make_const(0);
  int64_t k = b->is_const() ? b->value() : 0;
  // (x % (k*n)) % k -> x % k for positive k
  if (k > 0 && a->kind() == Kind::kMod && a->args()[1]->is_const() && a->args()[1]->value() % k == 0)
    return make_mod(a->args()[0], b);
  // (b*m + r) % b -> r % b; a constant part reduces modulo k
  std::vector<ExprPtr> rest;
  bool changed = false;
  for (const ExprPtr& t : summands(a)) {
    if (divide_exact(t, b)) {
      changed = true;
    } else if (k > 0 && t->is_const() && (t->value() < 0 || t->value() >= k)) {
      rest.push_back(make_const(SymInt::pymod(t->value(), k)));
      changed = true;
    } else {
      rest.push_back(t);
    }
  }
  if (changed) return make_mod(make_add(rest), b);
  return intern(Kind::kMod, 0, {a, b});
}

ExprPtr make_min(const ExprPtr& a, const ExprPtr& b) { return make_min_max(Kind::kMin, a, b); }
ExprPtr make_max(const ExprPtr& a, const ExprPtr& b) { return make_min_max(Kind::kMax, a, b); }

int compare(const Expr& a, const Expr& b) {
  if (&a == &b) return 0;
  if (a.kind() != b.kind()) return a.kind() < b.kind() ? -1 : 1;
  // Arguments before the value so that "s0 + 1" sorts next to "s0 + 2".
  size_t n = std::min(a.args().size(), b.args().size());
  for (size_t i = 0; i < n; ++i)
    if (int c = compare(*a.args()[i], *b.args()[i])) return c;
  if (a.args().size() != b.args().size()) return a.args().size() < b.args().size() ? -1 : 1;
  if (a.value() != b.value()) return a.value() < b.value() ? -1 : 1;
  return 0;
}

// ---- Printing and parsing ----

namespace {

void print(const Expr& e, std::string& out, const SymbolNamer* namer);

void print_operand(const Expr& e, std::string& out, const SymbolNamer* namer) {
  bool plain =
      e.is_symbol() || (e.is_const() && e.value() >= 0) || e.kind() == Kind::kMin || e.kind() == Kind::kMax;
  if (!plain) out += '(';
  print(e, out, namer);
  if (!plain) out += ')';
}

uint64_t magnitude(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

void print_product(bool negative, uint64_t coeff, const std::vector<ExprPtr>& factors, std::string& out,
                   const SymbolNamer* namer) {
  if (negative) out += '-';
  if (coeff != 1) out += fmt::format("{}*", coeff);
  for (size_t i = 0; i < factors.size(); ++i) {
    if (i) out += '*';
    // "2*s0//2" would read as (2*s0)//2, so // and % need parentheses unless they stand alone.
    Kind k = factors[i]->kind();
    bool alone = !negative && coeff == 1 && factors.size() == 1;
    bool paren = k == Kind::kAdd || ((k == Kind::kFloorDiv || k == Kind::kMod) && !alone);
    if (paren) out += '(';
    print(*factors[i], out, namer);
    if (paren) out += ')';
  }
}

// A term of a sum without its sign.
void print_magnitude(const Expr& t, std::string& out, const SymbolNamer* namer) {
  if (t.kind() == Kind::kMul)
    print_product(false, magnitude(t.value()), t.args(), out, namer);
  else
    print(t, out, namer);
}

void print(const Expr& e, std::string& out, const SymbolNamer* namer) {
  switch (e.kind()) {
    case Kind::kConst: out += fmt::format("{}", e.value()); return;
    case Kind::kSymbol: out += namer != nullptr ? (*namer)(e.value()) : fmt::format("s{}", e.value()); return;
    case Kind::kAdd:
      for (size_t i = 0; i < e.args().size(); ++i) {
        const Expr& t = *e.args()[i];
        bool negative = t.kind() == Kind::kMul && t.value() < 0;
        if (i == 0) {
          print(t, out, namer);  // a leading minus binds tighter than //, which print_product handles
        } else {
          out += negative ? " - " : " + ";
          print_magnitude(t, out, namer);
        }
      }
      if (e.value() != 0) out += fmt::format(" {} {}", e.value() < 0 ? '-' : '+', magnitude(e.value()));
      return;
    case Kind::kMul: print_product(e.value() < 0, magnitude(e.value()), e.args(), out, namer); return;
    case Kind::kFloorDiv:
    case Kind::kMod:
      print_operand(*e.args()[0], out, namer);
      out += e.kind() == Kind::kFloorDiv ? "//" : " % ";
      print_operand(*e.args()[1], out, namer);
      return;
    case Kind::kMin:
    case Kind::kMax:
      out += e.kind() == Kind::kMin ? "Min(" : "Max(";
      for (size_t i = 0; i < e.args().size(); ++i) {
        if (i) out += ", ";
        print(*e.args()[i], out, namer);
      }
      out += ')';
      return;
  }
}

// Recursive descent over Python's precedence: sum := product (('+'|'-') product)*,
// product := unary (('*'|'//'|'%') unary)*, unary := '-' unary | primary.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  ExprPtr parse() {
    ExprPtr e = sum();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text");
    return e;
  }

 private:
  ExprPtr sum() {
    ExprPtr e = product();
    while (true) {
      if (eat("+"))
        e = make_add(e, product());
      else if (eat("-"))
        e = make_sub(e, product());
      else
        return e;
    }
  }

  ExprPtr product() {
    ExprPtr e = unary();
    while (true) {
      if (eat("//"))
        e = make_floordiv(e, unary());
      else if (eat("*"))
        e = make_mul(e, unary());
      else if (eat("%"))
        e = make_mod(e, unary());
      else if (peek() == '/')
        fail("'/' is not integer division; use '//'");
      else
        return e;
    }
  }

  ExprPtr unary() { return eat("-") ? make_neg(unary()) : primary(); }

  ExprPtr primary() {
    skip_space();
    if (eat("(")) {
      ExprPtr e = sum();
      expect(")");
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(peek()))) return make_const(number());
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      ++pos_;
    std::string_view name = text_.substr(start, pos_ - start);
    if (name == "Min" || name == "Max") {
      expect("(");
      ExprPtr e = sum();
      while (eat(",")) e = name == "Min" ? make_min(e, sum()) : make_max(e, sum());
      expect(")");
      return e;
    }
    if (name.size() > 1 && name[0] == 's' && std::all_of(name.begin() + 1, name.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        })) {
      pos_ = start + 1;
      return make_symbol(number());
    }
    pos_ = start;
    fail(name.empty() ? "expected a number, a symbol or '('" : "unknown name");
  }

  int64_t number() {
    int64_t v = 0;
    size_t start = pos_;
    for (; pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])); ++pos_)
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text_[pos_] - '0', &v)) {
        pos_ = start;
        fail("number out of int64 range");
      }
    return v;
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool eat(std::string_view tok) {
    skip_space();
    if (text_.substr(pos_, tok.size()) != tok) return false;
    pos_ += tok.size();
    return true;
  }
  void expect(std::string_view tok) {
    if (!eat(tok)) fail(fmt::format("expected '{}'", tok));
  }
  [[noreturn]] void fail(std::string_view what) {
    throw Error(fmt::format("cannot parse size expression '{}': {} at column {}", text_, what, pos_ + 1));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

std::string Expr::str() const {
  std::string out;
  print(*this, out, nullptr);
  return out;
}

std::string to_string(const ExprPtr& e) { return e ? e->str() : "<null>"; }

std::string to_string(const ExprPtr& e, const SymbolNamer& namer) {
  if (!e) return "<null>";
  std::string out;
  print(*e, out, &namer);
  return out;
}

ExprPtr parse_expr(std::string_view text) { return Parser(text).parse(); }

// ---- Evaluation and rewriting ----

int64_t evaluate(const Expr& e, std::span<const int64_t> values) {
  switch (e.kind()) {
    case Kind::kConst: return e.value();
    case Kind::kSymbol:
      if (e.value() >= static_cast<int64_t>(values.size()))
        throw Error(fmt::format("no value given for symbol s{}", e.value()));
      return values[e.value()];
    case Kind::kAdd: {
      int64_t acc = e.value();
      for (const ExprPtr& a : e.args()) acc = checked_add(acc, evaluate(*a, values));
      return acc;
    }
    case Kind::kMul: {
      int64_t acc = e.value();
      for (const ExprPtr& a : e.args()) acc = checked_mul(acc, evaluate(*a, values));
      return acc;
    }
    case Kind::kFloorDiv:
      return checked_floordiv(evaluate(*e.args()[0], values), evaluate(*e.args()[1], values));
    case Kind::kMod: return checked_mod(evaluate(*e.args()[0], values), evaluate(*e.args()[1], values));
    case Kind::kMin:
    case Kind::kMax: {
      int64_t acc = evaluate(*e.args()[0], values);
      for (size_t i = 1; i < e.args().size(); ++i) {
        int64_t v = evaluate(*e.args()[i], values);
        acc = e.kind() == Kind::kMin ? std::min(acc, v) : std::max(acc, v);
      }
      return acc;
    }
  }
  throw InternalError("unknown expression kind");
}

namespace {

void collect_symbols(const Expr& e, std::vector<int64_t>& out) {
  if (e.is_symbol()) out.push_back(e.symbol_id());
  for (const ExprPtr& a : e.args()) collect_symbols(*a, out);
}

// Rebuilds a node of `kind` from new arguments through the factories.
ExprPtr rebuild(Kind kind, int64_t value, const std::vector<ExprPtr>& args) {
  switch (kind) {
    case Kind::kAdd: {
      std::vector<ExprPtr> ops = args;
      ops.push_back(make_const(value));
      return make_add(ops);
    }
    case Kind::kMul: return make_product(value, args);
    case Kind::kFloorDiv: return make_floordiv(args[0], args[1]);
    case Kind::kMod: return make_mod(args[0], args[1]);
    case Kind::kMin:
    case Kind::kMax: {
      ExprPtr e = args[0];
      for (size_t i = 1; i < args.size(); ++i) e = make_min_max(kind, e, args[i]);
      return e;
    }
    default: throw InternalError("rebuild of a leaf expression");
  }
}

}  // namespace

std::vector<int64_t> free_symbols(const ExprPtr& e) {
  std::vector<int64_t> out;
  collect_symbols(*e, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ExprPtr substitute(const ExprPtr& e, const std::unordered_map<int64_t, ExprPtr>& replacements) {
  if (replacements.empty() || e->is_const()) return e;
  if (e->is_symbol()) {
    auto it = replacements.find(e->symbol_id());
    return it == replacements.end() ? e : it->second;
  }
  std::vector<ExprPtr> args;
  bool changed = false;
  for (const ExprPtr& a : e->args()) {
    args.push_back(substitute(a, replacements));
    changed |= args.back() != a;
  }
  return changed ? rebuild(e->kind(), e->value(), args) : e;
}

ExprPtr expand(const ExprPtr& e) {
  if (e->args().empty()) return e;
  std::vector<ExprPtr> args;
  for (const ExprPtr& a : e->args()) args.push_back(expand(a));
  ExprPtr r = rebuild(e->kind(), e->value(), args);
  if (r->kind() != Kind::kMul) return r;
  constexpr size_t kMaxTerms = 256;  // beyond this, keeping the product is cheaper than knowing more
  std::vector<ExprPtr> acc = {make_const(r->value())};
  for (const ExprPtr& f : r->args()) {
    std::vector<ExprPtr> next;
    for (const ExprPtr& x : acc)
      for (const ExprPtr& y : summands(f)) next.push_back(make_mul(x, y));
    if (next.size() > kMaxTerms) return r;
    acc = std::move(next);
  }
  return make_add(acc);
}

}  // namespace sinter::sym
