// Expression factories: simplification identities, text round trips, evaluation, and the divisibility and
// range analyses over them.
#include "symbolic/expr.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "sinter/error.h"
#include "symbolic/shape_env.h"  // bound, is_divisible

namespace sinter::sym {

// gtest prints expressions as text in failure messages.
static void PrintTo(const ExprPtr& e, std::ostream* os) { *os << to_string(e); }

namespace {

ExprPtr c(int64_t v) { return make_const(v); }
ExprPtr s(int64_t id) { return make_symbol(id); }
ExprPtr p(const char* text) { return parse_expr(text); }

TEST(Expr, ConstantsFold) {
  EXPECT_EQ(make_add(c(2), c(3)), c(5));
  EXPECT_EQ(make_mul(c(4), c(-3)), c(-12));
  EXPECT_EQ(make_floordiv(c(-7), c(2)), c(-4));  // rounds toward negative infinity, as Python
  EXPECT_EQ(make_mod(c(-7), c(2)), c(1));
  EXPECT_EQ(make_min(c(3), c(5)), c(3));
  EXPECT_EQ(make_max(c(3), c(5)), c(5));
}

TEST(Expr, IdentitiesDisappear) {
  EXPECT_EQ(make_add(s(0), c(0)), s(0));
  EXPECT_EQ(make_mul(s(0), c(1)), s(0));
  EXPECT_EQ(make_mul(s(0), c(0)), c(0));
  EXPECT_EQ(make_floordiv(s(0), c(1)), s(0));
  EXPECT_EQ(make_floordiv(s(0), s(0)), c(1));
  EXPECT_EQ(make_mod(s(0), c(1)), c(0));
  EXPECT_EQ(make_mod(s(0), s(0)), c(0));
  EXPECT_EQ(make_sub(s(0), s(0)), c(0));
}

TEST(Expr, LikeTermsCollect) {
  EXPECT_EQ(make_add(s(0), s(0)), p("2*s0"));
  EXPECT_EQ(make_sub(make_mul(c(2), s(0)), s(0)), s(0));
  EXPECT_EQ(p("s0*s1 + 3*s1*s0 - s2")->str(), "-s2 + 4*s0*s1");  // canonical order: symbols before products
  EXPECT_EQ(p("(s0 + 1) + (s1 + 2) - 3")->str(), "s0 + s1");
}

TEST(Expr, EqualExpressionsAreOnePointer) {
  EXPECT_EQ(make_add(s(1), s(0)), make_add(s(0), s(1)));
  EXPECT_EQ(make_mul(s(1), make_mul(c(2), s(0))), make_mul(make_mul(s(0), c(2)), s(1)));
  EXPECT_EQ(make_min(s(1), s(0)), make_min(s(0), s(1)));
  EXPECT_NE(make_min(s(0), s(1)), make_max(s(0), s(1)));
  EXPECT_EQ(make_add(s(0), c(1))->hash(), p("1 + s0")->hash());
}

TEST(Expr, ConstantsDistributeOverSums) {
  EXPECT_EQ(p("2*(s0 + 1)")->str(), "2*s0 + 2");
  EXPECT_EQ(p("-(s0 - s1)")->str(), "-s0 + s1");
  // A sum inside a product keeps one normal form whatever its scale.
  EXPECT_EQ(p("(2*s0 + 2)*s1"), p("2*((s0 + 1)*s1)"));
  EXPECT_EQ(p("(-s0 - 1)*s1")->str(), "-s1*(s0 + 1)");
}

TEST(Expr, FloorDivOfDivisibleSumSplits) {
  EXPECT_EQ(p("(4*s0 + 8)//4")->str(), "s0 + 2");
  EXPECT_EQ(p("(2*s0 + 3)//2")->str(), "s0 + 1");
  EXPECT_EQ(p("(4*s0 + 6)//8")->str(), "(2*s0 + 3)//4");  // common factor cancels
  EXPECT_EQ(p("(2*s0)//4")->str(), "s0//2");
  EXPECT_EQ(p("(s0//2)//3")->str(), "s0//6");
  EXPECT_EQ(p("(s0*s1 + s1)//s1")->str(), "s0 + 1");
  EXPECT_EQ(p("(s0 + 1)*s1//(s0 + 1)")->str(), "s1");
  EXPECT_EQ(p("(s0 - 1)//2 + 1")->str(), "(s0 - 1)//2 + 1");  // nothing divides: stays
}

TEST(Expr, ModDropsMultiples) {
  EXPECT_EQ(p("(4*s0) % 4"), c(0));
  EXPECT_EQ(p("(s0*s1) % s1"), c(0));
  EXPECT_EQ(p("(4*s0 + 5) % 4"), c(1));
  EXPECT_EQ(p("(s0 + 5) % 4")->str(), "(s0 + 1) % 4");
  EXPECT_EQ(p("(s0 % 8) % 4")->str(), "s0 % 4");
}

TEST(Expr, MinMaxFlattenAndDropDominated) {
  EXPECT_EQ(p("Min(s0, s0 + 2)"), s(0));
  EXPECT_EQ(p("Max(s0, s0 - 1)"), s(0));
  EXPECT_EQ(p("Max(s0, s0)"), s(0));
  EXPECT_EQ(p("Min(s1, Min(7, s0), 3)")->str(), "Min(3, s0, s1)");
  EXPECT_EQ(p("Max(s0, s1)")->str(), "Max(s0, s1)");
}

TEST(Expr, DivisionByZeroAndOverflowAreErrors) {
  EXPECT_THROW(make_floordiv(s(0), c(0)), Error);
  EXPECT_THROW(make_mod(s(0), c(0)), Error);
  EXPECT_THROW(make_add(c(INT64_MAX), c(1)), Error);
  EXPECT_THROW(make_mul(c(INT64_MAX), c(2)), Error);
  EXPECT_THROW(evaluate(*p("s0//s1"), SymbolValues{4, 0}), Error);
}

TEST(Expr, PrintsReadably) {
  EXPECT_EQ(p("3 + s0*2")->str(), "2*s0 + 3");
  EXPECT_EQ(p("(s0 + 1)//2")->str(), "(s0 + 1)//2");
  EXPECT_EQ(p("Min(s1, s0)")->str(), "Min(s0, s1)");
  EXPECT_EQ(p("3 - s0")->str(), "-s0 + 3");
  EXPECT_EQ(p("s2 - s0*s1 - 1")->str(), "s2 - s0*s1 - 1");
  EXPECT_EQ(p("2*(s0//2)")->str(), "2*(s0//2)");
  EXPECT_EQ(p("s1 - s0//2")->str(), "s1 - s0//2");
  EXPECT_EQ(p("-(s0//2)")->str(), "-(s0//2)");
  EXPECT_EQ(p("-(s0//5) + s1//3")->str(), "-(s0//5) + s1//3");
  EXPECT_EQ(p("(-s0)//2")->str(), "(-s0)//2");
  EXPECT_EQ(p("s0 % (s1 + 1)")->str(), "s0 % (s1 + 1)");
  EXPECT_EQ(p("-5")->str(), "-5");
}

TEST(Expr, ParseRejectsBadText) {
  EXPECT_THROW(p("s0 +"), Error);
  EXPECT_THROW(p("s0 / 2"), Error);
  EXPECT_THROW(p("x0"), Error);
  EXPECT_THROW(p("Min(s0"), Error);
  EXPECT_THROW(p("s0 s1"), Error);
  EXPECT_THROW(p("99999999999999999999"), Error);
  try {
    p("s0 / 2");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'//'"), std::string::npos) << e.what();
  }
}

// A random tree kept unsimplified: the reference for what the factories build from it.
struct Tree {
  char op;  // 'c' constant, 's' symbol, or + - * / % < > (/ is floor division, < and > are Min and Max)
  int64_t leaf = 0;
  std::shared_ptr<const Tree> a, b;
};

std::shared_ptr<const Tree> random_tree(std::mt19937& rng, int depth) {
  int pick = rng() % (depth == 0 ? 2 : 9);
  if (pick == 0)
    return std::make_shared<Tree>(Tree{'c', static_cast<int64_t>(rng() % 9) - 3, nullptr, nullptr});
  if (pick == 1) return std::make_shared<Tree>(Tree{'s', static_cast<int64_t>(rng() % 3), nullptr, nullptr});
  return std::make_shared<Tree>(
      Tree{"+-*/%<>"[pick - 2], 0, random_tree(rng, depth - 1), random_tree(rng, depth - 1)});
}

// Throws sinter::Error where the tree divides by a constant zero.
ExprPtr build(const Tree& t) {
  if (t.op == 'c') return c(t.leaf);
  if (t.op == 's') return s(t.leaf);
  ExprPtr a = build(*t.a), b = build(*t.b);
  switch (t.op) {
    case '+': return make_add(a, b);
    case '-': return make_sub(a, b);
    case '*': return make_mul(a, b);
    case '/': return make_floordiv(a, b);
    case '%': return make_mod(a, b);
    case '<': return make_min(a, b);
    default: return make_max(a, b);
  }
}

// nullopt where the tree divides by zero.
std::optional<int64_t> eval_tree(const Tree& t, const SymbolValues& x) {
  if (t.op == 'c') return t.leaf;
  if (t.op == 's') return x[t.leaf];
  std::optional<int64_t> a = eval_tree(*t.a, x), b = eval_tree(*t.b, x);
  if (!a || !b || ((t.op == '/' || t.op == '%') && *b == 0)) return std::nullopt;
  switch (t.op) {
    case '+': return *a + *b;
    case '-': return *a - *b;
    case '*': return *a * *b;
    case '/': return SymInt::floordiv(*a, *b);
    case '%': return SymInt::pymod(*a, *b);
    case '<': return std::min(*a, *b);
    default: return std::max(*a, *b);
  }
}

// Expressions built from random trees must evaluate like the unsimplified tree, print text that parses back
// to the same node, stay inside their bound and be multiples of what is_divisible claims.
TEST(Expr, RandomTreesKeepValueAndRoundTrip) {
  std::mt19937 rng(1234);
  std::vector<Range> ranges = {{2, 100}, {2, 64}, {-3, 17}};
  std::vector<SymbolValues> points = {{2, 3, 5},     {7, 2, 11}, {16, 9, 4}, {3, 3, 3},
                                      {100, 64, 17}, {5, 8, -3}, {9, 6, 0}};
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    std::shared_ptr<const Tree> tree = random_tree(rng, 4);
    ExprPtr e;
    try {
      e = build(*tree);
    } catch (const Error&) {
      continue;  // a constant zero divisor
    }
    ASSERT_EQ(parse_expr(e->str()), e);
    for (const SymbolValues& x : points) {
      std::optional<int64_t> want = eval_tree(*tree, x);
      if (!want) continue;  // the unsimplified tree divides by zero here; the simplified one may not
      int64_t got = evaluate(*e, x);
      ++checked;
      ASSERT_EQ(got, *want) << e->str() << " at s0=" << x[0] << " s1=" << x[1] << " s2=" << x[2];
      ASSERT_TRUE(bound(*e, ranges).contains(got)) << e->str() << " at s0=" << x[0] << " s1=" << x[1];
      for (int64_t k : {2, 3, 4}) {
        if (is_divisible(e, k)) {
          ASSERT_EQ(got % k, 0) << e->str() << " claimed divisible by " << k;
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(Expr, EvaluateNeedsEverySymbol) {
  EXPECT_EQ(evaluate(*p("(s0 + 2*1 - 3)//2 + 1"), SymbolValues{224}), 112);
  EXPECT_EQ(evaluate(*p("Max(s0, s1) % 5"), SymbolValues{12, 9}), 2);
  EXPECT_THROW(evaluate(*p("s0 + s3"), SymbolValues{1, 2}), Error);
}

TEST(Expr, FreeSymbolsAndSubstitution) {
  EXPECT_EQ(free_symbols(p("s2*s0 + s2 + Min(s5, 4)")), (std::vector<int64_t>{0, 2, 5}));
  EXPECT_TRUE(free_symbols(c(3)).empty());
  ExprPtr e = p("s0 + s1");
  EXPECT_EQ(substitute(e, {{0, p("2*s1")}}), p("3*s1"));
  EXPECT_EQ(substitute(p("(s0 + 4)//s1"), {{1, c(2)}}), p("s0//2 + 2"));
  EXPECT_EQ(substitute(e, {{7, c(1)}}), e);  // unchanged: the same node
}

TEST(Expr, ExpandMultipliesOutProducts) {
  EXPECT_EQ(expand(p("(s0 + 1)*(s1 + 1)"))->str(), "s0 + s1 + s0*s1 + 1");
  EXPECT_EQ(expand(make_sub(p("(s0 + 1)*s1"), p("s0*s1"))), s(1));
  EXPECT_EQ(expand(s(0)), s(0));
}

TEST(Expr, DivisibilityIsProvable) {
  EXPECT_TRUE(is_divisible(p("4*s0 + 8"), 4));
  EXPECT_FALSE(is_divisible(p("4*s0 + 8"), 8));
  EXPECT_FALSE(is_divisible(p("4*s0 + 6"), 4));
  EXPECT_TRUE(is_divisible(p("6*s0*s1"), 3));
  EXPECT_TRUE(is_divisible(c(0), 7));
  EXPECT_FALSE(is_divisible(s(0), 2));
  std::vector<int64_t> divisors = {2, 4};  // s0 % 2 == 0, s1 % 4 == 0
  EXPECT_TRUE(is_divisible(p("s0*s1"), 8, divisors));
  EXPECT_TRUE(is_divisible(p("3*s0*s1 + 16"), 8, divisors));
  EXPECT_FALSE(is_divisible(p("s0*s1"), 16, divisors));
  EXPECT_TRUE(is_divisible(p("Max(4*s0, 8)"), 4));
  EXPECT_THROW(is_divisible(s(0), 0), Error);
}

TEST(Expr, RangesBoundExpressions) {
  std::vector<Range> r = {{2, kInf}, {2, 8}};
  EXPECT_EQ(bound(*p("s0 - 2"), r), (Range{0, kInf}));
  EXPECT_EQ(bound(*p("(s0 + 2*1 - 3)//2 + 1"), r), (Range{1, kInf}));
  EXPECT_EQ(bound(*p("s0 % 4"), r), (Range{0, 3}));
  EXPECT_EQ(bound(*p("s1 % 16"), r), (Range{2, 8}));
  EXPECT_EQ(bound(*p("-3*s1 + 1"), r), (Range{-23, -5}));
  EXPECT_EQ(bound(*p("Min(s0, s1)"), r), (Range{2, 8}));
  EXPECT_EQ(bound(*p("s1//(s0 + 8)"), r), (Range{0, 0}));
  EXPECT_EQ(bound(*p("s0 - s1"), r), (Range{-6, kInf}));
  EXPECT_EQ(bound(*p("s5"), r), Range{});  // no range known: unbounded
}

TEST(Expr, InterningIsThreadSafe) {
  std::vector<ExprPtr> results(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&results, t] {
      for (int i = 0; i < 500; ++i) results[t] = p("(s0 + 2*s1 - 3)//2 + Min(s2, 4)");
    });
  for (auto& th : threads) th.join();
  for (const ExprPtr& e : results) EXPECT_EQ(e, results[0]);
}

}  // namespace
}  // namespace sinter::sym
