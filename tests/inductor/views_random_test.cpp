// Random chains of pointwise ops, view ops and in-place writes through views of computed values, on inputs of
// random layouts, compiled under the inductor and aot_eager, static and with symbolic shapes, against eager:
// values, sizes and the strides of every output. Fixed seed; all chains of a round run as one compiled function
// (one C++ compile per entry), and a failing round is re-run chain by chain to name the chain.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "sinter/sinter.h"
#include "testing.h"
#include "view_checks.h"

namespace sinter {
namespace {

using view_checks::Layout;
using In = std::vector<Tensor>;

// One step of a chain, as plain numbers: the interpreter turns them into a valid op for the current rank and
// sizes, so eager and capture take the same steps (size comparisons become guards).
struct Step {
  int kind;     // what to do (see apply())
  int a, b, c;  // its parameters, reduced modulo what the current tensor allows
};

struct Chain {
  int input;  // which input (each input has its own layout)
  std::vector<Step> steps;
  std::string text;  // what it did, for failure messages (filled by the eager run)
};

enum Kind {
  kPointwise,
  kSlice,
  kNarrow,
  kSelect,
  kChunk,
  kSplit,
  kUnbind,
  kViewSplit,
  kReshape,
  kFlatten,
  kUnflatten,
  kTranspose,
  kPermute,
  kMT,
  kUnsqueeze,
  kSqueeze,
  kExpand,
  kWrite,  // an in-place op on a view of the current value, then continue with the value or the view
  kNumKinds
};

int64_t pick(int v, int64_t n) { return n <= 0 ? 0 : static_cast<int64_t>(v) % n; }

// The tensor the chain works on, and whether its elements may share memory (an expand: eager refuses to write
// there, so writes are skipped until a pointwise op makes a fresh value).
struct State {
  Tensor t;
  bool overlapping = false;
  std::string text;
};

Tensor pointwise(const Tensor& t, int which) {
  switch (which % 5) {
    case 0: return sin(t);
    case 1: return tanh(t) * 1.5;
    case 2: return sigmoid(t) - 0.5;
    case 3: return t * 0.5 + 0.25;
    default: return neg(t);
  }
}

// A view of `t` chosen by (a, b, c); rank and sizes decide which views apply. Appends what it did to `text`.
Tensor view_step(const Tensor& t, int kind, int a, int b, int c, bool& overlapping, std::string& text) {
  int64_t r = t.dim();
  int64_t d = pick(a, r);
  auto size = [&](int64_t dim) { return t.size(dim); };
  switch (kind) {
    case kSlice:
      if (r == 0) break;
      text += fmt::format(".slice({}, size/3, end, {})", d, 1 + b % 2);
      return t.slice(d, size(d) / 3, std::nullopt, 1 + b % 2);
    case kNarrow:
      if (r == 0) break;
      text += fmt::format(".narrow({}, size/4, size - size/2)", d);
      return t.narrow(d, size(d) / 4, size(d) - size(d) / 2);
    case kSelect:
      if (r < 2 || size(d) == 0) break;
      text += fmt::format(".select({}, size/2)", d);
      return t.select(d, size(d) / 2);
    case kChunk: {
      if (r == 0) break;
      std::vector<Tensor> parts = t.chunk(2 + b % 2, d);
      text += fmt::format(".chunk({}, {})[{}]", 2 + b % 2, d, c % 2 ? "last" : "0");
      return c % 2 ? parts.back() : parts.front();
    }
    case kSplit: {
      if (r == 0 || size(d) < 2) break;
      std::vector<Tensor> parts = t.split(size(d) / 2, d);
      text += fmt::format(".split(size/2, {})[{}]", d, c % 2 ? "last" : "0");
      return c % 2 ? parts.back() : parts.front();
    }
    case kUnbind: {
      if (r < 2 || size(d) == 0) break;
      std::vector<Tensor> parts = t.unbind(d);
      text += fmt::format(".unbind({})[{}]", d, c % 2 ? "last" : "0");
      return c % 2 ? parts.back() : parts.front();
    }
    case kViewSplit: {
      // Splitting one dim in two is a view of any layout.
      if (r == 0 || r >= 4 || size(d) % 2 != 0) break;
      SymIntList s = t.sizes();
      s[d] = size(d) / 2;
      s.insert(s.begin() + d, SymInt(2));
      text += fmt::format(".view(dim {} split in [2, size/2])", d);
      return t.view(s);
    }
    case kReshape: {
      if (r < 2) break;
      // Merge dims d and d+1 (a copy where the layout does not allow a view).
      int64_t e = std::min<int64_t>(d, r - 2);
      SymIntList s;
      for (int64_t i = 0; i < r; ++i) {
        if (i == e + 1) continue;
        s.push_back(i == e ? size(e) * size(e + 1) : size(i));
      }
      text += fmt::format(".reshape(merge {} and {})", e, e + 1);
      return t.reshape(s);
    }
    case kFlatten:
      if (r < 1) break;
      text += ".flatten()";
      return t.flatten();
    case kUnflatten: {
      if (r == 0 || r >= 4) break;
      bool even = size(d) % 2 == 0;
      text += fmt::format(".unflatten({}, {{{}, -1}})", d, even ? 2 : 1);
      return t.unflatten(d, {even ? 2 : 1, -1});
    }
    case kTranspose:
      if (r < 2) break;
      text += fmt::format(".transpose({}, {})", d, pick(b, r));
      return t.transpose(d, pick(b, r));
    case kPermute: {
      if (r < 2) break;
      DimList dims;
      for (int64_t i = 0; i < r; ++i) dims.push_back(i);
      std::mt19937 g(static_cast<uint32_t>(a * 31 + b));
      std::shuffle(dims.begin(), dims.end(), g);
      text += fmt::format(".permute({})", fmt::join(dims, ","));
      return t.permute(dims);
    }
    case kMT:
      if (r < 2) break;
      text += ".mT()";
      return t.mT();
    case kUnsqueeze:
      if (r >= 4) break;
      text += fmt::format(".unsqueeze({})", pick(a, r + 1));
      return t.unsqueeze(pick(a, r + 1));
    case kSqueeze:
      if (r == 0) break;
      if (size(d) == 1) {
        text += fmt::format(".squeeze({})", d);
        return t.squeeze(DimList{d});
      }
      text += ".squeeze()";
      return t.squeeze();
    case kExpand: {
      if (r >= 4) break;
      SymIntList s = t.sizes();
      s.insert(s.begin(), SymInt(2 + b % 2));
      text += fmt::format(".unsqueeze(0).expand({} x)", 2 + b % 2);
      overlapping = true;
      return t.unsqueeze(0).expand(s);
    }
    default: break;
  }
  return t;
}

// Runs a chain on its input: a pointwise op first (the chain works on computed values), then its steps. Returns
// the final value and the last value a pointwise op made (which writes through later views changed).
std::vector<Tensor> run_chain(const Chain& chain, const In& inputs, std::string* text) {
  State s{pointwise(inputs[chain.input], chain.input), false, "pointwise(x)"};
  Tensor base = s.t;
  for (const Step& st : chain.steps) {
    if (st.kind == kPointwise) {
      s.t = base = pointwise(s.t, st.a);
      s.overlapping = false;
      s.text += fmt::format(" -> pointwise {}", st.a % 5);
    } else if (st.kind == kWrite) {
      bool overlap = s.overlapping;
      std::string vtext;
      Tensor v = view_step(s.t, kSlice + st.b % (kExpand - kSlice), st.a, st.b / 3, st.c, overlap, vtext);
      if (overlap) continue;  // eager refuses to write into elements that share memory
      switch (st.c % 5) {
        case 0: v.add_(1.0); vtext += ".add_(1)"; break;
        case 1: v.mul_(-2.0); vtext += ".mul_(-2)"; break;
        case 2: v.masked_fill_(gt(v, 0.0), -0.75); vtext += ".masked_fill_(v > 0, -0.75)"; break;
        case 3: v.copy_(cos(v)); vtext += ".copy_(cos(v))"; break;
        default: v.add_(v); vtext += ".add_(itself)"; break;
      }
      s.text += " -> write v = value" + vtext;
      if (st.a % 2) {
        s.t = v;
        s.text += ", continue with v";
      }
    } else {
      s.t = view_step(s.t, st.kind, st.a, st.b, st.c, s.overlapping, s.text);
    }
  }
  if (text) *text = s.text;
  return {s.t, base};
}

Chain random_chain(std::mt19937& rng, int num_inputs) {
  Chain c;
  c.input = static_cast<int>(rng() % num_inputs);
  int n = 2 + static_cast<int>(rng() % 5);
  for (int i = 0; i < n; ++i) {
    Step s{static_cast<int>(rng() % kNumKinds), static_cast<int>(rng() % 97), static_cast<int>(rng() % 89),
           static_cast<int>(rng() % 83)};
    if (rng() % 4 == 0) s.kind = kWrite;  // writes are the point: more of them
    c.steps.push_back(s);
  }
  return c;
}

// One input per layout, rank 3, sizes [a, b, c].
In make_inputs(const std::vector<int64_t>& sizes, uint64_t seed) {
  In in;
  for (size_t l = 0; l < view_checks::kAllLayouts.size(); ++l)
    in.push_back(view_checks::make_input(sizes, view_checks::kAllLayouts[l], seed + l));
  return in;
}

TEST(ViewsRandom, ChainsOfViewsAndWritesMatchEager) {
  constexpr int kChains = 200;
  std::mt19937 rng(20261201);
  std::vector<Chain> chains;
  int num_inputs = static_cast<int>(view_checks::kAllLayouts.size());
  for (int i = 0; i < kChains; ++i) chains.push_back(random_chain(rng, num_inputs));
  auto run_all = [&chains](const In& in) {
    std::vector<Tensor> out;
    for (const Chain& c : chains)
      for (const Tensor& t : run_chain(c, in, nullptr)) out.push_back(t);
    return out;
  };
  // The sizes of the calls: kAuto compiles the first static and recompiles on the second with symbols.
  const std::vector<std::vector<int64_t>> sizes = {{4, 6, 5}, {6, 4, 7}};
  int failures = 0;
  for (const std::string& backend : view_checks::kBackends) {
    for (const view_checks::Policy& policy : view_checks::kPolicies) {
      auto compiled = compile(run_all, {.backend = backend, .dynamic = policy.dynamic});
      for (size_t k = 0; k < sizes.size(); ++k) {
        std::string where = fmt::format("{}, {}, sizes [{}]", backend, policy.name, fmt::join(sizes[k], ", "));
        In in = make_inputs(sizes[k], 100 * k);
        std::vector<Tensor> want = run_all(in), got;
        std::string diff;
        try {
          got = compiled(in);
          diff = view_checks::compare_outputs(got, want, backend == "aot_eager");
        } catch (const std::exception& e) {
          diff = std::string("compiled threw: ") + e.what();
        }
        if (diff.empty()) continue;
        // Name the chains that fail, each compiled on its own.
        for (const Chain& c : chains) {
          std::string text;
          std::vector<Tensor> w = run_chain(c, in, &text);
          std::string d;
          try {
            auto one = compile([&c](const In& i) { return run_chain(c, i, nullptr); },
                               {.backend = backend, .dynamic = policy.dynamic == Dynamic::kAuto ? Dynamic::kAlways
                                                                                                 : policy.dynamic});
            d = view_checks::compare_outputs(one(in), w, backend == "aot_eager");
          } catch (const std::exception& e) {
            d = std::string("compiled threw: ") + e.what();
          }
          if (d.empty()) continue;
          ADD_FAILURE() << where << ", " << view_checks::layout_name(view_checks::kAllLayouts[c.input])
                        << " input: " << text << "\n" << d;
          if (++failures >= 10) return;
        }
      }
    }
  }
}

}  // namespace
}  // namespace sinter
