// Compiled outputs have eager's strides also where a decomposition's result would lay out otherwise and the sizes
// are expressions of symbols that may be 0: softmax of a transposed conv output is contiguous in eager, and stays
// so compiled (found by sinter fuzz, seed 111 case 2246: the dense check compared (s1 - 3)//2 + 1 with
// Max(1, (s1 - 3)//2 + 1) and kept the transposed layout). Three more from sinter fuzz on the 16-core host: an
// elementwise op's layout decided at the example's sizes must be guarded (a size-1 dim at the example made a
// permuted input look contiguous, seed 405 case 982); a decomposed softmax/log_softmax keeps its contiguous
// layout when guards made two symbols equal (seed 412 case 495) and after a chunk of its output (seed 412 case
// 148, where chunk specialised the size). And two of layouts whose strides are products in another form than the
// sizes' (Max(1, size), and a factor the guards made 1).
#include <gtest/gtest.h>

#include <tuple>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(OutputStrides, SoftmaxOfATransposedConvOutputUnderSymbolicSizes) {
  Tensor w = testing::random({2, 1, 3, 3}, kFloat32, 1);
  auto f = [&w](const Tensor& x) { return softmax(conv2d(x, w, {}, {2, 2}, {1, 1}, {2, 2}).transpose(2, 0), -3); };
  for (const char* backend : {"inductor", "aot_eager"}) {
    auto c = compile(f, {.backend = backend, .dynamic = Dynamic::kAlways});
    for (int64_t h : {7, 9, 12}) {
      Tensor x = testing::random({1, 1, h, h + 2}, kFloat32, h);
      Tensor want = f(x), got = c(x);
      EXPECT_EQ(got.strides().hints(), want.strides().hints()) << backend << " h=" << h;
      EXPECT_CLOSE(got, want);
    }
  }
}

// A chunk of a concatenation is a view with the concatenation's strides, which eager computes with
// Max(1, size) of a symbolic conv output width: the concatenation is stored in that (dense) layout so the chunk
// keeps eager's strides (sinter fuzz seed 2026120704 case 1516, where it came out contiguous).
TEST(OutputStrides, AChunkOfAConcatenationUnderSymbolicSizes) {
  Tensor w = testing::random({2, 1, 3, 3}, kFloat32, 2);
  auto f = [&w](const Tensor& x) {
    Tensor y = conv2d(x, w, {}, {2, 2}, {1, 1}, {2, 2});
    return cat({y, y}, 2).chunk(3, -2)[0];
  };
  for (const char* backend : {"inductor", "aot_eager"}) {
    for (Dynamic dynamic : {Dynamic::kAuto, Dynamic::kAlways}) {
      auto c = compile(f, {.backend = backend, .dynamic = dynamic});
      for (int64_t wd : {3, 5, 8, 4}) {
        Tensor x = testing::random({1, 1, 3, wd}, kFloat32, wd);
        Tensor want = f(x), got = c(x);
        EXPECT_EQ(got.sizes().hints(), want.sizes().hints()) << backend << " w=" << wd;
        EXPECT_EQ(got.strides().hints(), want.strides().hints()) << backend << " w=" << wd;
        EXPECT_CLOSE(got, want);
      }
    }
  }
}

// A size the guards made 1 (a stride-2 conv's output height at the example) stays a factor of the strides of the
// dims outside it: the concatenation is still stored in its graph layout, and a flatten of it is a view (sinter
// fuzz seed 2026120705 case 1347 stopped with "view of a value whose layout differs from the graph's").
TEST(OutputStrides, AFlattenOfAConcatenationWhoseSizeTheGuardsMadeOne) {
  Tensor w = testing::random({1, 1, 1, 1}, kFloat32, 3), b = testing::random({1}, kFloat32, 4);
  auto f = [&](const Tensor& x) {
    Tensor y = conv2d(x, w, b, {2, 2});
    return cat({y, y}, 1).flatten(0, 3);
  };
  for (const char* backend : {"inductor", "aot_eager"}) {
    auto c = compile(f, {.backend = backend, .dynamic = Dynamic::kAlways});
    for (int64_t h : {2, 5, 2}) {
      Tensor x = testing::random({1, 1, h, h}, kFloat32, h);
      EXPECT_CLOSE(c(x), f(x)) << backend << " h=" << h;
    }
  }
}

// Runs f compiled on each of `inputs` in order (one compiled function: the first call compiles, later ones
// recompile or reuse) and compares strides and values with eager.
template <class F>
void expect_strides_like_eager(F f, const std::vector<std::vector<Tensor>>& inputs, Dynamic dynamic) {
  for (const char* backend : {"inductor", "aot_eager"}) {
    auto c = compile(f, {.backend = backend, .dynamic = dynamic});
    for (const std::vector<Tensor>& in : inputs) {
      Tensor want = std::apply(f, std::tuple(in[0], in[1])), got = c(in[0], in[1]);
      EXPECT_EQ(got.strides().hints(), want.strides().hints()) << backend << " sizes " << in[1].sizes().str();
      EXPECT_CLOSE(got, want);
    }
  }
}

// contiguous() of a strided slice whose size is 1 at the first call (s0 // 2 at s0 = 2) returned the slice itself
// for every later size too, with its stride 2 (sinter fuzz seed 2026120710 case 5341): the decision is guarded.
TEST(OutputStrides, ContiguousOfASliceThatWasOneElement) {
  auto f = [](const Tensor& unused, const Tensor& x) { return x.slice(0, 0, -1, 2).contiguous(); };
  std::vector<std::vector<Tensor>> inputs;
  for (int64_t n : {2, 4, 7, 3}) inputs.push_back({Tensor(), arange(n)});
  expect_strides_like_eager(f, inputs, Dynamic::kAlways);
  inputs.clear();
  for (int64_t n : {5, 2, 9}) inputs.push_back({Tensor(), testing::random({n, 3}, kFloat32, n).t()});
  expect_strides_like_eager([](const Tensor& unused, const Tensor& x) { return x.contiguous() * 2; }, inputs,
                            Dynamic::kAlways);
}

TEST(OutputStrides, ALayoutFoundAtTheExampleHoldsForOtherSizes) {
  auto f = [](const Tensor& unused, const Tensor& x) {
    return log1p(abs(x.narrow(0, 1, x.size(0) - 1).permute({1, 2, 0}))) + 0 * unused.sum();
  };
  std::vector<std::vector<Tensor>> in;
  for (int64_t n : {2, 3, 4})
    in.push_back({testing::random({1}, kFloat32, 1), testing::random({n, n, n}, kFloat32, n)});
  expect_strides_like_eager(f, in, Dynamic::kAlways);
}

TEST(OutputStrides, DecomposedSoftmaxesStayContiguousUnderGuards) {
  auto logsm = [](const Tensor& e, const Tensor& x) { return pow(log_softmax(x, 0), e); };
  auto sm = [](const Tensor& e, const Tensor& x) {
    Tensor s = softmax(x, 2);
    s.chunk(1, 2);
    return s * e.sum();
  };
  for (Dynamic dynamic : {Dynamic::kAuto, Dynamic::kAlways}) {
    std::vector<std::vector<Tensor>> a, b;
    for (int64_t n : {2, 3}) {
      a.push_back({testing::random({n}, kFloat32, 2), testing::random({n, n, n}, kFloat32, n).transpose(2, 1)});
      b.push_back(
          {testing::random({n}, kFloat32, 3), testing::random({n, n, n, n}, kFloat32, n).permute({0, 3, 1, 2})});
    }
    expect_strides_like_eager(logsm, a, dynamic);
    expect_strides_like_eager(sm, b, dynamic);
  }
}

// chunk of a symbolic size into equal pieces keeps it symbolic (no recompile per size).
TEST(OutputStrides, ChunkIntoEqualPiecesKeepsTheSizeSymbolic) {
  auto f = [](const Tensor& x) {
    std::vector<Tensor> parts = x.chunk(2, 1);
    return parts[0].sum(1) * parts.back().sum(1);
  };
  auto c = compile(f, {.dynamic = Dynamic::kAlways});
  for (int64_t n : {4, 6, 8, 10}) {
    Tensor x = testing::random({3, n}, kFloat32, n);
    EXPECT_CLOSE(c(x), f(x));
  }
  EXPECT_EQ(c.stats().recompiles, 0);
  Tensor odd = testing::random({3, 5}, kFloat32, 5);
  EXPECT_CLOSE(c(odd), f(odd));  // uneven pieces: a recompile, then the right sizes
}

}  // namespace
}  // namespace sinter
