// Sizes that are symbolic expressions (s0//2, s0 - 1, (s0 - 2)//2) rather than input symbols: they can be 0 or 1
// although no input symbol is (sizes 0 and 1 are specialised only for the symbols themselves). Broadcasting,
// slicing and reductions must decide for them from the example and guard the decision, so that the compiled
// code is right for every size the guards admit and recompiles for the others.
//
// Every case runs eager and compiled (inductor and aot_eager, Dynamic::kAlways from each starting size and
// Dynamic::kAuto, whose second size recompiles with symbolic sizes) over sizes that put the expressions at 0, 1
// and more, and the results must be eager's: the same values, or a sinter::Error where eager raises one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sinter/compile.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using Ts = std::vector<Tensor>;
using Fn = std::function<Ts(const Ts&)>;
using Make = std::function<Ts(int64_t)>;

constexpr const char* kBackends[] = {"inductor", "aot_eager"};
constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();

// The outcome of one call: outputs, or the text of the sinter::Error it raised.
struct Outcome {
  Ts values;
  std::string error;
};
template <class F>
Outcome run(F&& f, const Ts& in) {
  Outcome o;
  try {
    o.values = f(in);
  } catch (const Error& e) {
    o.error = e.what();
    if (o.error.empty()) o.error = "(empty message)";
  }
  return o;
}

// "" when `got` is eager's `want`, else what differs.
std::string differs(const Outcome& got, const Outcome& want) {
  if (!want.error.empty() || !got.error.empty()) {
    if (!want.error.empty() && !got.error.empty()) return "";
    return want.error.empty() ? "compiled threw: " + got.error : "eager threw, compiled did not: " + want.error;
  }
  if (got.values.size() != want.values.size()) return fmt::format("{} outputs, eager {}", got.values.size(), want.values.size());
  for (size_t i = 0; i < want.values.size(); ++i) {
    ::testing::AssertionResult r = testing::close(got.values[i], want.values[i]);
    if (!r) return fmt::format("output {}: {}", i, r.message());
  }
  return "";
}

// Calls `c` at each size in order and compares with eager; returns the first difference ("" when none).
template <class C>
std::string over_sizes(const C& c, const Fn& f, const Make& make, const std::vector<int64_t>& sizes) {
  for (int64_t n : sizes) {
    Ts in = make(n);
    std::string d = differs(run(c, in), run(f, in));
    if (!d.empty()) return fmt::format("at size {}: {}", n, d);
  }
  return "";
}

// Every backend, kAlways starting from each size, and kAuto over `sizes` in order (the first call compiles static,
// the second recompiles symbolic).
void expect_eager_results(const Fn& f, const Make& make, const std::vector<int64_t>& sizes) {
  for (const char* backend : kBackends) {
    for (size_t start = 0; start < sizes.size(); ++start) {
      std::vector<int64_t> order(sizes.begin() + start, sizes.end());
      order.insert(order.end(), sizes.begin(), sizes.begin() + start);
      auto c = compile(f, {.backend = backend, .dynamic = Dynamic::kAlways});
      std::string d = over_sizes(c, f, make, order);
      EXPECT_EQ(d, "") << backend << ", kAlways, first size " << order[0];
    }
    auto c = compile(f, {.backend = backend, .dynamic = Dynamic::kAuto});
    EXPECT_EQ(over_sizes(c, f, make, sizes), "") << backend << ", kAuto";
  }
}

// ---- broadcasting against a size that is an expression ----

// x.narrow(1, 0, n/2) is [2, 1] for n = 2, 3 and broadcasts against y's 2; for n = 4, 5 it matches.
TEST(SymbolicSizes, BroadcastAgainstNarrowOfHalfSizeIsABroadcast) {
  Fn f = [](const Ts& in) { return Ts{in[0].narrow(1, 0, in[0].size(1) / 2) + in[1]}; };
  expect_eager_results(f, [](int64_t n) { return Ts{random({2, n}, kFloat32, n), random({2}, kFloat32, 7)}; },
                       {2, 4, 3, 5});
}

// x.unflatten(0, {3, -1}) is [3, 1] for 3 elements and broadcasts against y.
TEST(SymbolicSizes, BroadcastAgainstUnflattenedOneIsABroadcast) {
  Fn f = [](const Ts& in) { return Ts{in[1] * in[0].unflatten(0, {3, -1})}; };
  expect_eager_results(
      f, [](int64_t k) { return Ts{random({3 * k}, kFloat32, k), random({k == 1 ? 5 : k}, kFloat32, 8)}; }, {1, 2, 4});
  // The reported form: x [3] times its own [3, 1] unflattening.
  Fn g = [](const Ts& in) { return Ts{in[0] * in[0].unflatten(0, {3, -1})}; };
  expect_eager_results(g, [](int64_t) { return Ts{random({3}, kFloat32, 3)}; }, {3});
}

// narrow(0, 0, n - 1) and slice(0, 0, -1) are [1] for n = 2.
TEST(SymbolicSizes, BroadcastAgainstNarrowOrSliceOfSizeMinusOne) {
  Make make = [](int64_t n) { return Ts{random({n}, kFloat32, n), random({n == 2 ? 3 : n - 1}, kFloat32, 9)}; };
  Fn narrow = [](const Ts& in) { return Ts{in[0].narrow(0, 0, in[0].size(0) - 1) - in[1]}; };
  Fn slice = [](const Ts& in) { return Ts{in[1] * in[0].slice(0, 0, -1)}; };
  Fn both = [](const Ts& in) { return Ts{where(gt(in[0].slice(0, 1), 0), in[1], in[0].narrow(0, 0, in[0].size(0) - 1))}; };
  for (const Fn& f : {narrow, slice, both}) expect_eager_results(f, make, {2, 3, 4});
}

// v = x.slice(0, 2, n - 1, 2) has (n - 2)//2 elements: 0, 0, 1, 1 for n = 2..5, and le(v, cat({v, v})) broadcasts
// it only when it has one. Reading past v there gave nondeterministic results, so the case repeats.
TEST(SymbolicSizes, BroadcastOfSliceAfterRecompileReadsNothingOutOfRange) {
  Fn f = [](const Ts& in) {
    Tensor v = in[0].slice(0, 2, in[0].size(0) - 1, 2).unsqueeze(1);
    return Ts{le(v, cat({v, v}, 0)), v + cat({v, v}, 1)};
  };
  Make make = [](int64_t n) { return Ts{random({n}, kFloat32, n)}; };
  for (int trial = 0; trial < 5; ++trial)
    for (const char* backend : kBackends) {
      auto c = compile(f, {.backend = backend});  // kAuto: 3 static, 2 recompiles symbolic, then 4 and 5
      EXPECT_EQ(over_sizes(c, f, make, {3, 2, 4, 5, 4}), "") << backend;
    }
  expect_eager_results(f, make, {2, 4, 3, 5});
}

// expand and squeeze of a dim whose size is an expression equal to 1.
TEST(SymbolicSizes, ExpandAndSqueezeOfAnExpressionEqualToOne) {
  Make make = [](int64_t n) { return Ts{random({n, 3}, kFloat32, n)}; };
  Fn expand = [](const Ts& in) { return Ts{in[0].narrow(0, 0, in[0].size(0) / 2).expand({4, 3}) * 2}; };
  expect_eager_results(expand, make, {2, 8, 3, 9, 4});
  Fn squeeze = [](const Ts& in) {
    Tensor h = in[0].narrow(0, 0, in[0].size(0) / 2);
    return Ts{exp(h).squeeze(0) + 1, h.squeeze() * h.sum(0)};
  };
  expect_eager_results(squeeze, make, {2, 4, 3, 5});
}

// ---- slice bounds ----

// x[1::2] is slice(0, 1, INT64_MAX, 2); split specialises the size in the same graph.
TEST(SymbolicSizes, SliceToInt64MaxBesideSplit) {
  Fn f = [](const Ts& in) { return Ts{in[0].split(1, 0)[0], in[0].slice(0, 1, INT64_MAX, 2)}; };
  expect_eager_results(f, [](int64_t n) { return Ts{random({n, 2}, kFloat32, n)}; }, {2, 3, 5});
}

// Slice and narrow bounds that are negative, huge or out of range, against symbolic sizes.
TEST(SymbolicSizes, SliceBoundsOutOfRangeClampAsEager) {
  Fn f = [](const Ts& in) {
    const Tensor& x = in[0];
    SymInt n = x.size(0);
    return Ts{x.slice(0, kMin, kMax),        x.slice(0, -kMax, 2),         x.slice(0, kMax - 1, kMax),
              x.slice(0, -1, kMax, 3),       x.slice(0, 2, -2),            x.slice(0, n, n + 5),
              x.slice(0, n - 1, kMax, kMax), x.slice(0, -n - 7, -n + 1, 2), x.slice(0, {}, -3),
              x.slice(0, 1 - n),             x.narrow(0, n / 2, n - n / 2),  x.narrow(0, -1, 1),
              x.select(0, -1),               x.select(0, n / 2),           x.chunk(3, 0).back(),
              x.split(2, 0).back(),          x.slice(0, 1, kMax, 2).slice(0, 0, -1) + 1};
  };
  expect_eager_results(f, [](int64_t n) { return Ts{random({n, 2}, kFloat32, n)}; }, {2, 3, 4, 7});
}

// ---- reductions over a dim whose size is an expression equal to 0 ----

// narrow(0, n/3, n/3) is empty for n = 2: softmax gives [], sum and prod their identity, mean NaN, and amax the
// error eager raises (it has no identity).
TEST(SymbolicSizes, ReductionsOverAnExpressionEqualToZero) {
  Make make = [](int64_t n) { return Ts{random({n, 2}, kFloat32, n)}; };
  auto third = [](const Tensor& x) { return x.narrow(0, x.size(0) / 3, x.size(0) / 3); };
  Fn soft = [third](const Ts& in) {
    Tensor t = third(in[0]);
    return Ts{softmax(t, 0), log_softmax(t, 0), softmax(t.t(), 1) * 2, logsumexp(t, {0})};
  };
  expect_eager_results(soft, make, {2, 3, 6, 4});
  Fn sums = [third](const Ts& in) {
    Tensor t = third(in[0]);
    return Ts{t.sum(0), prod(t, 0), t.mean(DimList{0}), t.sum(), (t * 2).sum(DimList{0}, true) + in[0].sum(0)};
  };
  expect_eager_results(sums, make, {2, 3, 6, 4});
  Fn amax = [third](const Ts& in) { return Ts{third(in[0]).amax(DimList{0})}; };
  expect_eager_results(amax, make, {2, 3, 6, 4});
  EXPECT_ERROR(compile(amax, {.dynamic = Dynamic::kAlways})(make(2)), "non-zero size");
}

// Pointwise kernels over an iteration domain that is empty because an expression is 0.
TEST(SymbolicSizes, PointwiseOverAnExpressionEqualToZero) {
  Fn f = [](const Ts& in) {
    Tensor t = in[0].narrow(1, 1, (in[0].size(1) - 2) / 2);
    return Ts{exp(t) + t.unsqueeze(0), cat({t, t * 2}, 1), t.t().contiguous(), t.reshape({-1})};
  };
  expect_eager_results(f, [](int64_t n) { return Ts{random({3, n}, kFloat32, n)}; }, {2, 3, 4, 6});
}

// ---- randomized: chains of views over symbolic sizes, combined by broadcasting ops ----

// A size argument written against the size n of the dim it applies to: (mul * n) / div + add, or INT64_MAX.
struct Form {
  int64_t mul = 0, div = 1, add = 0;
  bool huge = false;
  SymInt of(const SymInt& n) const { return huge ? SymInt(INT64_MAX) : n * mul / div + add; }
  std::string str() const {
    return huge ? "INT64_MAX" : fmt::format("{}*n/{}{:+d}", mul, div, add);
  }
};

enum class StepKind { kNarrow, kSlice, kUnsqueeze, kUnflatten, kExpand, kSelect, kSqueeze, kTranspose };
struct Step {
  StepKind kind;
  int64_t dim = 0;
  Form a, b;  // narrow: start, length; slice: start, end; select: index
  int64_t k = 1;  // slice: step; unflatten: the given factor; expand: the new size
  bool flag = false;  // slice: no start; unflatten: the factor comes second
};

Tensor apply(const Step& s, const Tensor& t) {
  int64_t r = t.dim();
  if (r == 0 && s.kind != StepKind::kUnsqueeze) return t;  // the chains only view tensors with dims
  int64_t d = r == 0 ? 0 : ((s.dim % r) + r) % r;
  switch (s.kind) {
    case StepKind::kNarrow: return t.narrow(d, s.a.of(t.size(d)), s.b.of(t.size(d)));
    case StepKind::kSlice:
      return t.slice(d, s.flag ? std::optional<SymInt>() : s.a.of(t.size(d)), s.b.of(t.size(d)), s.k);
    case StepKind::kUnsqueeze: return t.unsqueeze(((s.dim % (r + 1)) + r + 1) % (r + 1));
    case StepKind::kUnflatten: return t.unflatten(d, s.flag ? SymIntList{-1, s.k} : SymIntList{s.k, -1});
    case StepKind::kExpand: {
      SymIntList sizes = t.sizes();
      sizes[d] = s.k;
      return t.expand(sizes);
    }
    case StepKind::kSelect: return t.select(d, s.a.of(t.size(d)));
    case StepKind::kSqueeze: return t.squeeze(d);
    case StepKind::kTranspose: return t.transpose(0, d);
  }
  return t;
}

std::string describe(const Step& s) {
  switch (s.kind) {
    case StepKind::kNarrow: return fmt::format("narrow({}, {}, {})", s.dim, s.a.str(), s.b.str());
    case StepKind::kSlice:
      return fmt::format("slice({}, {}, {}, {})", s.dim, s.flag ? "None" : s.a.str(), s.b.str(), s.k);
    case StepKind::kUnsqueeze: return fmt::format("unsqueeze({})", s.dim);
    case StepKind::kUnflatten: return fmt::format("unflatten({}, {})", s.dim, s.flag ? "{-1, k}" : "{k, -1}");
    case StepKind::kExpand: return fmt::format("expand(dim {} to {})", s.dim, s.k);
    case StepKind::kSelect: return fmt::format("select({}, {})", s.dim, s.a.str());
    case StepKind::kSqueeze: return fmt::format("squeeze({})", s.dim);
    case StepKind::kTranspose: return fmt::format("transpose(0, {})", s.dim);
  }
  return "?";
}

// Two chains from x (the second may continue the first) and a broadcasting op between them.
struct Case {
  std::vector<Step> first, second;
  bool second_from_first = false;
  int op = 0;  // add, mul, le, where, add-then-sum
  Tensor eval(const Tensor& x) const {
    Tensor a = x;
    for (const Step& s : first) a = apply(s, a);
    Tensor b = second_from_first ? a : x;
    for (const Step& s : second) b = apply(s, b);
    switch (op) {
      case 0: return a + b;
      case 1: return b * a;
      case 2: return le(a, b);
      case 3: return where(gt(b, 0), a, b * 2);
      default: return (a + b).abs().sum();
    }
  }
  std::string str() const {
    std::string out = "a = x";
    for (const Step& s : first) out += "." + describe(s);
    out += second_from_first ? "; b = a" : "; b = x";
    for (const Step& s : second) out += "." + describe(s);
    return out + fmt::format("; op {}", op);
  }
};

Form random_form(std::mt19937_64& rng) {
  static const Form kForms[] = {{0, 1, 0},  {0, 1, 1},  {1, 2, 0},  {1, 3, 0},  {1, 1, -1}, {1, 1, -2},
                                {1, 2, -1}, {1, 1, 0},  {0, 1, -1}, {0, 1, 2},  {-1, 1, 0}, {1, 2, 1},
                                {0, 1, 0, true}, {2, 3, -1}};
  return kForms[rng() % std::size(kForms)];
}

Step random_step(std::mt19937_64& rng) {
  Step s;
  s.kind = static_cast<StepKind>(rng() % 8);
  s.dim = static_cast<int64_t>(rng() % 4) - 2;
  s.a = random_form(rng);
  s.b = random_form(rng);
  s.flag = rng() % 3 == 0;
  switch (s.kind) {
    case StepKind::kSlice: s.k = 1 + static_cast<int64_t>(rng() % 3); break;
    case StepKind::kUnflatten: s.k = 1 + static_cast<int64_t>(rng() % 3); break;
    case StepKind::kExpand: s.k = 2 + static_cast<int64_t>(rng() % 3); break;
    default: break;
  }
  return s;
}

// Random cases that eager evaluates without error at every size (the others are drawn again), compared with
// eager at every size.
TEST(SymbolicSizes, RandomViewChainsWithBroadcastingMatchEager) {
  const std::vector<int64_t> sizes = {2, 5, 3, 4, 7};
  std::vector<Tensor> xs;
  for (int64_t n : sizes) xs.push_back(random({n, 3}, kFloat32, static_cast<uint64_t>(n)));
  std::mt19937_64 rng(20261201);
  std::vector<Case> cases;
  int drawn = 0;
  while (cases.size() < 300) {
    ++drawn;
    Case c;
    c.second_from_first = rng() % 2 == 0;
    for (size_t i = 0, n = 1 + rng() % 3; i < n; ++i) c.first.push_back(random_step(rng));
    for (size_t i = 0, n = 1 + rng() % 2; i < n; ++i) c.second.push_back(random_step(rng));
    c.op = static_cast<int>(rng() % 5);
    bool ok = true;
    for (const Tensor& x : xs) {
      try {
        c.eval(x);
      } catch (const Error&) {
        ok = false;
        break;
      }
    }
    if (ok) cases.push_back(std::move(c));
  }
  // One graph per batch (one output per case). aot_eager checks every case under kAlways and kAuto; the
  // inductor, whose compiles are the cost (each size recompiles, the cases' guards differing), the first
  // kInductorCases under kAlways.
  constexpr size_t kBatch = 100, kInductorCases = 60;
  auto check = [&](const std::vector<Case>& batch, const char* backend, Dynamic dyn) {
    Fn f = [batch](const Ts& in) {
      Ts out;
      for (const Case& c : batch) out.push_back(c.eval(in[0]));
      return out;
    };
    auto compiled = compile(f, {.backend = backend, .dynamic = dyn});
    for (size_t i = 0; i < sizes.size(); ++i) {
      Outcome got = run(compiled, {xs[i]});
      if (!got.error.empty()) {
        ADD_FAILURE() << backend << " at size " << sizes[i] << ": " << got.error;
        return;
      }
      for (size_t j = 0; j < batch.size(); ++j) {
        ::testing::AssertionResult r = testing::close(got.values[j], batch[j].eval(xs[i]));
        EXPECT_TRUE(r) << backend << (dyn == Dynamic::kAlways ? " kAlways" : " kAuto") << ", size " << sizes[i]
                       << ": " << batch[j].str();
      }
    }
  };
  for (size_t first = 0; first < cases.size(); first += kBatch) {
    std::vector<Case> batch(cases.begin() + first, cases.begin() + std::min(cases.size(), first + kBatch));
    check(batch, "aot_eager", Dynamic::kAlways);
    check(batch, "aot_eager", Dynamic::kAuto);
  }
  check(std::vector<Case>(cases.begin(), cases.begin() + kInductorCases), "inductor", Dynamic::kAlways);
  RecordProperty("drawn", drawn);
}

}  // namespace
}  // namespace sinter
