// ShapeEnv and symbolic SymInt: symbols, guards recorded by comparisons, static decisions, specialisation,
// guard evaluation for recompiles, and the thread-local scope.
#include "symbolic/shape_env.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <thread>

#include "sinter/error.h"

namespace sinter::sym {
namespace {

std::vector<std::string> guard_texts(const ShapeEnv& env) {
  std::vector<std::string> out;
  for (const Guard& g : env.guards()) out.push_back(g.text);
  return out;
}

using Texts = std::vector<std::string>;

TEST(ShapeEnv, SymbolsAreNamedInOrder) {
  ShapeEnv env;
  SymInt a = env.create_symbol(8), b = env.create_symbol(3, 2, 64, "x.size(1)");
  EXPECT_TRUE(a.is_symbolic());
  EXPECT_EQ(a.str(), "s0");
  EXPECT_EQ(b.str(), "s1");
  EXPECT_EQ(a.hint(), 8);
  EXPECT_EQ(env.num_symbols(), 2);
  EXPECT_EQ(env.declared_range(1), (Range{2, 64}));
  EXPECT_EQ(env.source(1), "x.size(1)");
  EXPECT_EQ(env.hints(), (SymbolValues{8, 3}));
}

TEST(ShapeEnv, SizesZeroAndOneStayConcrete) {
  ShapeEnv env;
  EXPECT_FALSE(env.create_symbol(0).is_symbolic());
  EXPECT_FALSE(env.create_symbol(1).is_symbolic());
  EXPECT_EQ(env.create_symbol(1).hint(), 1);
  EXPECT_EQ(env.num_symbols(), 0);
  EXPECT_EQ(env.create_symbol(5, 0, 10).str(), "s0");
  EXPECT_EQ(env.declared_range(0).min, 2);  // a range never admits 0 or 1
}

TEST(ShapeEnv, ExampleOutsideDeclaredRangeIsAnError) {
  ShapeEnv env;
  EXPECT_THROW(env.create_symbol(9000, 2, 8192), Error);
  EXPECT_THROW(env.create_symbol(-3), Error);
  EXPECT_THROW(env.create_symbol(5, 10, 4), Error);
  SymInt s = env.create_symbol(100);
  EXPECT_THROW(env.set_range(0, 2, 50), Error);
  env.set_range(0, 64, 4096);
  EXPECT_EQ(env.declared_range(0), (Range{64, 4096}));
}

TEST(ShapeEnv, ComparisonRecordsTheBranchTaken) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt big = env.create_symbol(32), small = env.create_symbol(8);
  EXPECT_TRUE(big > 16);
  EXPECT_FALSE(small > 16);
  EXPECT_TRUE(big != small);  // follows from the two guards' ranges: not recorded
  EXPECT_TRUE(big != small * 3);
  EXPECT_EQ(guard_texts(env), (Texts{"s0 > 16", "s1 <= 16", "s0 != 3*s1"}));
}

TEST(ShapeEnv, GuardsAreDeduplicated) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt a = env.create_symbol(6), b = env.create_symbol(6);
  EXPECT_TRUE(a == b);
  EXPECT_TRUE(b == a);
  EXPECT_TRUE(a * 2 < 100);
  EXPECT_TRUE(a * 2 < 100);
  EXPECT_EQ(guard_texts(env), (Texts{"s0 == s1", "2*s0 < 100"}));
}

TEST(ShapeEnv, RangesDecideWithoutGuards) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt s = env.create_symbol(10, 2, 512);
  EXPECT_TRUE(s >= 2);
  EXPECT_TRUE(s != 1);
  EXPECT_TRUE(s > 0);
  EXPECT_FALSE(s == 0);
  EXPECT_TRUE(s <= 512);
  EXPECT_TRUE((s - 1) / 2 + 1 >= 1);
  EXPECT_TRUE(s % 4 < 4);
  EXPECT_TRUE(s + 1 > s);
  EXPECT_TRUE((s + 1) * s > s * s);  // needs expansion: s*s + s - s*s
  EXPECT_TRUE(env.guards().empty()) << env.guards_str();
}

TEST(ShapeEnv, GuardsNarrowLaterDecisions) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt s = env.create_symbol(32);
  EXPECT_TRUE(s > 16);
  EXPECT_TRUE(s > 10);   // implied by s0 > 16
  EXPECT_TRUE(s >= 17);  // the same fact
  EXPECT_FALSE(s < 5);
  EXPECT_EQ(env.range(0), (Range{17, kInf}));
  EXPECT_EQ(env.declared_range(0), (Range{2, kInf}));
  EXPECT_EQ(guard_texts(env), (Texts{"s0 > 16"}));
}

TEST(ShapeEnv, GuardsImplyRelationsOfTheSameExpression) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt a = env.create_symbol(8), b = env.create_symbol(128);
  EXPECT_TRUE(a * b > 100);  // ranges say nothing of a product: recorded
  EXPECT_TRUE(a * b + 7 > 57);
  EXPECT_TRUE(a * b >= 101);
  EXPECT_FALSE(a * b <= 50);
  EXPECT_TRUE(a * b != 100);
  EXPECT_FALSE(a * b == 7);
  EXPECT_TRUE(a * b == 1024);  // recorded; then decides the rest exactly
  EXPECT_TRUE(a * b < 2000);
  EXPECT_FALSE(1024 != b * a);
  EXPECT_EQ(guard_texts(env), (Texts{"s0*s1 > 100", "s0*s1 == 1024"}));
  EXPECT_FALSE(env.evaluate_guards(SymbolValues{8, 127}));
  EXPECT_TRUE(b == 128);  // s1 becomes 128 everywhere, the facts included
  EXPECT_TRUE(a * 128 > 100);
  EXPECT_EQ(env.guards().size(), 3u);
}

TEST(ShapeEnv, FailedGuardNamesItself) {
  ShapeEnv env;
  {
    ShapeEnvScope scope(&env);
    SymInt s = env.create_symbol(32, 2, kInf, "x.size(0)");
    SymInt t = env.create_symbol(4);
    EXPECT_TRUE(s > 16);
    EXPECT_TRUE(s * t == 128);
  }
  EXPECT_TRUE(env.evaluate_guards(SymbolValues{32, 4}));
  EXPECT_FALSE(env.evaluate_guards(SymbolValues{64, 4}));
  GuardCheck check = env.evaluate_guards(SymbolValues{12, 4});
  EXPECT_FALSE(check);
  EXPECT_EQ(check.failed, "s0 > 16");
  EXPECT_EQ(check.message, "s0 > 16 is false for s0 = 12 (x.size(0))");
  check = env.evaluate_guards(SymbolValues{64, 3});
  EXPECT_EQ(check.failed, "s0*s1 == 128");
  EXPECT_EQ(check.message, "s0*s1 == 128 is false for s0 = 64 (x.size(0)), s1 = 3");
  EXPECT_THROW(env.evaluate_guards(SymbolValues{32}), InternalError);
}

TEST(ShapeEnv, DeclaredRangesAreGuards) {
  ShapeEnv env;
  env.create_symbol(100, 2, 8192, "x.size(1)");
  env.create_symbol(7);
  EXPECT_EQ(env.guards_str(), "2 <= s0 <= 8192\ns1 >= 2\n");
  GuardCheck check = env.evaluate_guards(SymbolValues{9000, 7});
  EXPECT_EQ(check.failed, "2 <= s0 <= 8192");
  EXPECT_EQ(check.message, "2 <= s0 <= 8192 is false for s0 = 9000 (x.size(1))");
  EXPECT_EQ(env.evaluate_guards(SymbolValues{100, 1}).failed, "s1 >= 2");  // size 1 would be specialised
}

TEST(ShapeEnv, SpecialisingRecordsEqualityAndFoldsLaterArithmetic) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt s = env.create_symbol(5), t = env.create_symbol(6);
  int64_t v = s;
  EXPECT_EQ(v, 5);
  EXPECT_EQ(guard_texts(env), (Texts{"s0 == 5 (specialised by int64_t(SymInt))"}));
  SymInt u = s + t;  // s0 is now known to be 5
  EXPECT_EQ(u.str(), "s1 + 5");
  EXPECT_FALSE((s * 2).is_symbolic());
  EXPECT_EQ((s * 2).hint(), 10);
  EXPECT_EQ(s.guard_int(), 5);  // no second guard
  EXPECT_EQ(env.guards().size(), 1u);
  EXPECT_FALSE(env.evaluate_guards(SymbolValues{6, 6}));
}

TEST(ShapeEnv, EqualSymbolsMerge) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt a = env.create_symbol(6, 2, 100), b = env.create_symbol(6, 4, kInf);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE((a - b).is_symbolic());  // s1 is replaced by s0 from now on
  EXPECT_EQ((b * 2).str(), "2*s0");
  EXPECT_EQ(env.range(0), (Range{4, 100}));  // both ranges apply to the survivor
  EXPECT_TRUE(a <= 100);
  EXPECT_EQ(env.guards().size(), 1u);
  EXPECT_FALSE(env.evaluate_guards(SymbolValues{6, 7}));
}

TEST(ShapeEnv, RelationBetweenSymbolsPrints) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt a = env.create_symbol(12), b = env.create_symbol(6);
  EXPECT_TRUE(a == b * 2);
  EXPECT_EQ(guard_texts(env), (Texts{"s0 == 2*s1"}));
  EXPECT_TRUE(env.evaluate_guards(SymbolValues{20, 10}));
  EXPECT_EQ(env.evaluate_guards(SymbolValues{20, 9}).failed, "s0 == 2*s1");
}

TEST(ShapeEnv, ConvOutputSize) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt h = env.create_symbol(224);
  int64_t padding = 1, kernel = 3, stride = 2;
  SymInt out = (h + 2 * padding - kernel) / stride + 1;
  EXPECT_EQ(out.str(), "(s0 - 1)//2 + 1");
  EXPECT_EQ(out.hint(), 112);
  EXPECT_EQ(evaluate(*out.expr(), SymbolValues{225}), 113);
  EXPECT_TRUE(out > 0);  // the shape rule's check is decided by the range: no guard
  SymInt pooled = (out - 2) / 2 + 1;
  EXPECT_EQ(pooled.str(), "((s0 - 1)//2 - 1)//2 + 1");
  EXPECT_EQ(pooled.hint(), 56);
  EXPECT_TRUE(env.guards().empty()) << env.guards_str();
}

TEST(ShapeEnv, ViewMinusOneDividesNumel) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt b = env.create_symbol(8), t = env.create_symbol(5);
  SymInt numel = sym_product({b, t, 12, 64});
  EXPECT_EQ(numel.str(), "768*s0*s1");
  EXPECT_EQ((numel / 768).str(), "s0*s1");
  EXPECT_EQ((numel / (b * 64)).str(), "12*s1");
  EXPECT_EQ(numel % 768, 0);  // divisible: no guard
  SymInt padded = sym_product({b, t + 1});
  EXPECT_EQ((padded / (t + 1)).str(), "s0");
  EXPECT_TRUE(env.guards().empty()) << env.guards_str();
}

TEST(ShapeEnv, DivisibilityGuardIsRemembered) {
  ShapeEnv env;
  ShapeEnvScope scope(&env);
  SymInt s = env.create_symbol(64);
  EXPECT_FALSE(env.is_divisible(s.expr(), 8));
  EXPECT_TRUE(s % 8 == 0);  // e.g. codegen asking for a vector width
  EXPECT_EQ(guard_texts(env), (Texts{"s0 % 8 == 0"}));
  EXPECT_TRUE(env.is_divisible((s * 3 + 16).expr(), 8));
  EXPECT_TRUE((s * 2) % 4 == 0);  // follows: no new guard
  EXPECT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(env.evaluate_guards(SymbolValues{60}).failed, "s0 % 8 == 0");
}

TEST(ShapeEnv, StaticallyKnownRecordsNothing) {
  ShapeEnv env;
  SymInt s = env.create_symbol(10);
  EXPECT_EQ(env.statically_known(Rel::kLe, make_const(2), s.expr()), true);
  EXPECT_EQ(env.statically_known(Rel::kLt, s.expr(), make_const(16)), std::nullopt);
  EXPECT_EQ(env.statically_known(Rel::kEq, s.expr(), make_const(1)), false);
  EXPECT_TRUE(env.guards().empty());
  EXPECT_THROW(env.add_guard(Rel::kLt, s.expr(), make_const(3)), InternalError);  // false for the example
}

// The guarantee recompiles rest on: for any sizes that pass the guards, every comparison made during capture
// has the answer it had for the example. Random comparisons over three symbols, replayed at every point of a
// grid.
TEST(ShapeEnv, RandomComparisonsReplayUnderGuards) {
  std::mt19937 rng(42);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  for (int round = 0; round < 60; ++round) {
    ShapeEnv env;
    ShapeEnvScope scope(&env);
    std::vector<SymInt> syms;
    for (int i = 0; i < 3; ++i)
      syms.push_back(env.create_symbol(std::vector<int64_t>{4, 4, 6, 8, 12}[pick(5)]));
    std::function<ExprPtr(int)> gen = [&](int depth) -> ExprPtr {
      int k = pick(depth == 0 ? 2 : 8);
      if (k == 0) return make_const(pick(6));
      if (k == 1) return syms[pick(3)].expr();
      ExprPtr a = gen(depth - 1), b = gen(depth - 1);
      switch (k) {
        case 2: return make_add(a, b);
        case 3: return make_sub(a, b);
        case 4: return make_mul(a, b);
        case 5: return make_floordiv(a, make_const(1 + pick(4)));
        case 6: return make_mod(a, make_const(1 + pick(4)));
        default: return pick(2) ? make_min(a, b) : make_max(a, b);
      }
    };
    // The same question asked of SymInts during capture and of plain values on replay.
    auto ask = [](int op, const auto& x, const auto& y) -> bool {
      switch (op) {
        case 0: return x == y;
        case 1: return x != y;
        case 2: return x < y;
        case 3: return x <= y;
        case 4: return x > y;
        case 5: return x >= y;
        default: return x % 2 == 0;
      }
    };
    struct Asked {
      ExprPtr a, b;
      int op;
      bool answer;
    };
    std::vector<Asked> asked;
    for (int i = 0; i < 25; ++i) {
      ExprPtr a = gen(2), b = pick(3) ? make_const(pick(12)) : gen(2);
      int op = pick(7);
      bool answer = ask(op, SymInt(a, evaluate(*a, env.hints())), SymInt(b, evaluate(*b, env.hints())));
      asked.push_back({a, b, op, answer});
    }
    int passing = 0;
    for (int64_t u = 2; u <= 13; ++u)
      for (int64_t v = 2; v <= 13; ++v)
        for (int64_t w = 2; w <= 13; ++w) {
          SymbolValues at = {u, v, w};
          if (!env.evaluate_guards(at)) continue;
          ++passing;
          for (const Asked& q : asked) {
            bool answer = ask(q.op, evaluate(*q.a, at), evaluate(*q.b, at));
            ASSERT_EQ(answer, q.answer) << "op " << q.op << " on " << q.a->str() << " and " << q.b->str()
                                        << " at (" << u << ", " << v << ", " << w << ")\nguards:\n"
                                        << env.guards_str();
          }
        }
    EXPECT_GE(passing, 1);  // the example itself
  }
}

TEST(SymInt, OutsideCaptureComparesHints) {
  ShapeEnv env;
  SymInt s = env.create_symbol(10);
  ASSERT_EQ(current_shape_env(), nullptr);
  EXPECT_TRUE(s > 5);
  EXPECT_EQ(static_cast<int64_t>(s), 10);
  EXPECT_TRUE(env.guards().empty());
}

TEST(SymInt, ArithmeticKeepsHints) {
  ShapeEnv env;
  SymInt s = env.create_symbol(10), t = env.create_symbol(3);
  SymInt e = (s + 3) * 2 - t;
  EXPECT_EQ(e.str(), "2*s0 - s1 + 6");
  EXPECT_EQ(e.hint(), 23);
  EXPECT_EQ((-s).hint(), -10);
  EXPECT_EQ((s / t).hint(), 3);
  EXPECT_EQ((s % t).hint(), 1);
  EXPECT_EQ(sym_min(s, t).str(), "Min(s0, s1)");
  EXPECT_EQ(sym_max(s, t).hint(), 10);
  EXPECT_FALSE((s - s).is_symbolic());
  EXPECT_EQ(SymIntList({2, s, t + 1}).str(), "[2, s0, s1 + 1]");
  EXPECT_EQ(SymIntList({2, s, t + 1}).hints(), (std::vector<int64_t>{2, 10, 4}));
  EXPECT_THROW(s / (t - 3), Error);  // divides by zero for the example
}

TEST(SymInt, ScopeIsPerThreadAndNests) {
  ShapeEnv outer, inner;
  SymInt a = outer.create_symbol(10);
  {
    ShapeEnvScope s1(&outer);
    EXPECT_EQ(current_shape_env(), &outer);
    std::thread([&] {
      EXPECT_EQ(current_shape_env(), nullptr);
      EXPECT_TRUE(a > 3 * 2 + 1);  // no env on this thread: no guard
    }).join();
    {
      ShapeEnvScope s2(&inner);
      EXPECT_EQ(current_shape_env(), &inner);
    }
    EXPECT_EQ(current_shape_env(), &outer);
    EXPECT_TRUE(a > 7);
  }
  EXPECT_EQ(current_shape_env(), nullptr);
  EXPECT_EQ(guard_texts(outer), (Texts{"s0 > 7"}));
}

}  // namespace
}  // namespace sinter::sym
