// End-to-end capture tests, part 1: MLPs, attention, normalisation, convolution and losses. Every function
// runs eagerly, then compiled with aot_eager and with the eager backend (the capture call and a guard hit),
// and the results must be identical, dtype and sizes included.
#include <cmath>

#include "sinter/compile.h"
#include "testing.h"

using namespace sinter;
namespace st = sinter::testing;

namespace {

std::vector<Tensor> flat(const Tensor& t) { return {t}; }
std::vector<Tensor> flat(const std::vector<Tensor>& v) { return v; }
template <class... T>
std::vector<Tensor> flat(const std::tuple<T...>& t) {
  return std::apply([](const auto&... x) { return std::vector<Tensor>{x...}; }, t);
}

::testing::AssertionResult same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " outputs, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].defined() != want[i].defined())
      return ::testing::AssertionFailure() << "output " << i << " definedness";
    if (!got[i].defined()) continue;
    if (got[i].dtype() != want[i].dtype())
      return ::testing::AssertionFailure() << "output " << i << " dtype " << dtype_name(got[i].dtype());
    auto r = st::equal(got[i], want[i]);
    if (!r) return r << " (output " << i << ")";
  }
  return ::testing::AssertionSuccess();
}

// Eager, then aot_eager and the eager backend, twice each; identical results.
template <class Fn, class... A>
void expect_compiles_exactly(Fn fn, const A&... args) {
  std::vector<Tensor> want = flat(fn(args...));
  for (const char* backend : {"aot_eager", "eager"}) {
    auto compiled = compile(fn, {.backend = backend});
    for (int call = 0; call < 2; ++call)
      EXPECT_TRUE(same(flat(compiled(args...)), want)) << "backend " << backend << ", call " << call;
  }
}

Tensor rnd(const SymIntList& sizes, uint64_t seed, DType dtype = kFloat32) {
  return st::random(sizes, dtype, seed);
}

}  // namespace

// ---- MLPs and matrix products ----

TEST(CaptureNn, TwoLayerMlp) {
  Tensor w1 = rnd({32, 16}, 1), b1 = rnd({32}, 2), w2 = rnd({8, 32}, 3), b2 = rnd({8}, 4);
  expect_compiles_exactly([&](const Tensor& x) { return linear(relu(linear(x, w1, b1)), w2, b2); },
                          rnd({5, 16}, 5));
}

TEST(CaptureNn, MlpWithTanhGelu) {
  Tensor w1 = rnd({24, 12}, 1), w2 = rnd({12, 24}, 2);
  expect_compiles_exactly([&](const Tensor& x) { return x + linear(gelu(linear(x, w1), "tanh"), w2); },
                          rnd({3, 7, 12}, 3));
}

TEST(CaptureNn, SiluGatedMlpWithMatmul) {
  expect_compiles_exactly([](const Tensor& x, const Tensor& wg, const Tensor& wu,
                             const Tensor& wd) { return matmul(silu(matmul(x, wg)) * matmul(x, wu), wd); },
                          rnd({6, 10}, 1), rnd({10, 20}, 2), rnd({10, 20}, 3), rnd({20, 10}, 4));
}

TEST(CaptureNn, AddmmAndBmm) {
  expect_compiles_exactly(
      [](const Tensor& c, const Tensor& a, const Tensor& b) { return addmm(c, a, b, 0.5, 2.0); },
      rnd({4, 6}, 1), rnd({4, 5}, 2), rnd({5, 6}, 3));
  expect_compiles_exactly([](const Tensor& a, const Tensor& b) { return bmm(a, b).relu(); },
                          rnd({3, 4, 5}, 4), rnd({3, 5, 2}, 5));
}

TEST(CaptureNn, BroadcastMatmulAndEinsum) {
  expect_compiles_exactly([](const Tensor& a, const Tensor& b) { return matmul(a, b); }, rnd({2, 3, 4, 5}, 1),
                          rnd({5, 6}, 2));
  expect_compiles_exactly(
      [](const Tensor& a, const Tensor& b) {
        return einsum("bij,bjk->bik", {a, b});
      },
      rnd({2, 3, 4}, 3), rnd({2, 4, 5}, 4));
}

// ---- attention ----

TEST(CaptureNn, ScaledDotProductAttention) {
  expect_compiles_exactly(
      [](const Tensor& q, const Tensor& k, const Tensor& v) { return scaled_dot_product_attention(q, k, v); },
      rnd({2, 4, 8, 16}, 1), rnd({2, 4, 8, 16}, 2), rnd({2, 4, 8, 16}, 3));
}

TEST(CaptureNn, CausalAttention) {
  expect_compiles_exactly(
      [](const Tensor& q, const Tensor& k, const Tensor& v) {
        return scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
      },
      rnd({1, 2, 6, 8}, 4), rnd({1, 2, 6, 8}, 5), rnd({1, 2, 6, 8}, 6));
}

TEST(CaptureNn, SoftmaxQkTransposeV) {
  expect_compiles_exactly(
      [](const Tensor& q, const Tensor& k, const Tensor& v) {
        double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
        return matmul(softmax(matmul(q, k.transpose(-2, -1)) * scale, -1), v);
      },
      rnd({2, 5, 8}, 1), rnd({2, 5, 8}, 2), rnd({2, 5, 8}, 3));
}

TEST(CaptureNn, MaskedAttentionWithTril) {
  expect_compiles_exactly(
      [](const Tensor& q, const Tensor& k, const Tensor& v) {
        int64_t n = q.size(-2);
        Tensor mask = tril(ones({n, n}, TensorOptions(kBool)));
        Tensor scores = matmul(q, k.mT()).masked_fill(~mask, -INFINITY);
        return matmul(softmax(scores, -1), v);
      },
      rnd({3, 4, 8}, 1), rnd({3, 4, 8}, 2), rnd({3, 4, 8}, 3));
}

TEST(CaptureNn, MultiHeadSplitAndMerge) {
  Tensor wqkv = rnd({48, 16}, 7), wo = rnd({16, 16}, 8);
  expect_compiles_exactly(
      [&](const Tensor& x) {
        auto b = x.size(0), t = x.size(1);
        std::vector<Tensor> qkv = linear(x, wqkv).split(16, -1);
        auto heads = [&](const Tensor& y) { return y.view({b, t, 4, 4}).transpose(1, 2); };
        Tensor o = scaled_dot_product_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), {}, 0.0, true);
        return linear(o.transpose(1, 2).reshape({b, t, 16}), wo);
      },
      rnd({2, 5, 16}, 9));
}

// ---- normalisation ----

TEST(CaptureNn, LayerNormRmsNormGroupNorm) {
  Tensor w = rnd({8}, 1), b = rnd({8}, 2);
  expect_compiles_exactly([&](const Tensor& x) { return layer_norm(x, {8}, w, b); }, rnd({4, 3, 8}, 3));
  expect_compiles_exactly([&](const Tensor& x) { return rms_norm(x, {8}, w, 1e-6); }, rnd({4, 8}, 4));
  expect_compiles_exactly([&](const Tensor& x) { return group_norm(x, 2, w, b); }, rnd({2, 8, 3, 3}, 5));
}

TEST(CaptureNn, BatchNormEvalFunctional) {
  Tensor mean = rnd({3}, 1), var = st::random_positive({3}), w = rnd({3}, 2), b = rnd({3}, 3);
  expect_compiles_exactly([&](const Tensor& x) { return batch_norm(x, w, b, mean, var, false); },
                          rnd({4, 3, 5}, 4));
}

TEST(CaptureNn, HandWrittenLayerNorm) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        Tensor mu = x.mean({-1}, true);
        Tensor var = ((x - mu) * (x - mu)).mean({-1}, true);
        return (x - mu) * (var + 1e-5).rsqrt();
      },
      rnd({6, 10}, 1));
}

TEST(CaptureNn, SoftmaxAndLogSoftmax) {
  expect_compiles_exactly([](const Tensor& x) { return std::make_tuple(softmax(x, 1), log_softmax(x, 0)); },
                          rnd({5, 7}, 1));
}

// ---- convolution, pooling, losses, embedding ----

TEST(CaptureNn, ConvReluMaxPool) {
  Tensor w = rnd({4, 3, 3, 3}, 1), b = rnd({4}, 2);
  expect_compiles_exactly([&](const Tensor& x) { return max_pool2d(relu(conv2d(x, w, b, {1}, {1})), {2}); },
                          rnd({2, 3, 8, 8}, 3));
}

TEST(CaptureNn, AvgAndAdaptivePool) {
  expect_compiles_exactly(
      [](const Tensor& x) {
        return avg_pool2d(x, {2}) + adaptive_avg_pool2d(x, {4, 4});
      },
      rnd({1, 2, 8, 8}, 1));
}

TEST(CaptureNn, CrossEntropyAndMse) {
  Tensor target = from_vector<int64_t>({1, 0, 3, 2});
  expect_compiles_exactly([&](const Tensor& logits) { return cross_entropy(logits, target); },
                          rnd({4, 5}, 1));
  expect_compiles_exactly([](const Tensor& a, const Tensor& b) { return mse_loss(a, b); }, rnd({4, 5}, 2),
                          rnd({4, 5}, 3));
}

TEST(CaptureNn, EmbeddingLookup) {
  Tensor table = rnd({10, 4}, 1);
  expect_compiles_exactly([&](const Tensor& idx) { return embedding(table, idx).sum({1}); },
                          from_vector<int64_t>({1, 3, 3, 9, 0, 2}, {2, 3}));
}

// ---- modules ----

TEST(CaptureNn, LinearModuleAndSequential) {
  manual_seed(1);
  nn::Linear lin(6, 4);
  Tensor x = rnd({3, 6}, 2);
  Tensor want = lin(x);
  for (const char* backend : {"aot_eager", "eager"}) {
    auto c = compile(lin, {.backend = backend});
    EXPECT_TRUE(same({c(x)}, {want}));
    EXPECT_TRUE(same({c(x)}, {want}));
  }
  auto seq = std::make_shared<nn::Sequential>();
  seq->emplace_back<nn::Linear>(6, 8);
  seq->emplace_back<nn::ReLU>();
  seq->emplace_back<nn::Linear>(8, 2);
  Tensor want2 = (*seq)(x);
  auto c = compile(*seq);
  EXPECT_TRUE(same({c(x)}, {want2}));
  EXPECT_TRUE(same({c(x)}, {want2}));
}

namespace {
// A GPT-like block: pre-norm causal self-attention and an MLP, each with a residual.
struct Block : nn::Module {
  nn::LayerNorm ln1{16}, ln2{16};
  nn::Linear qkv{16, 48}, proj{16, 16}, fc1{16, 64}, fc2{64, 16};
  Block() {
    register_module("ln1", ln1);
    register_module("qkv", qkv);
    register_module("proj", proj);
    register_module("ln2", ln2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override {
    auto b = x.size(0), t = x.size(1);
    std::vector<Tensor> parts = qkv(ln1(x)).split(16, -1);
    auto heads = [&](const Tensor& y) { return y.view({b, t, 2, 8}).transpose(1, 2); };
    Tensor a = scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), {}, 0.0, true);
    Tensor h = x + proj(a.transpose(1, 2).reshape({b, t, 16}));
    return h + fc2(gelu(fc1(ln2(h)), "tanh"));
  }
};
}  // namespace

TEST(CaptureNn, GptBlockModule) {
  manual_seed(3);
  Block block;
  block.eval();
  Tensor x = rnd({2, 6, 16}, 4), x2 = rnd({3, 9, 16}, 5);
  Tensor want = block(x), want2 = block(x2);
  for (const char* backend : {"aot_eager", "eager"}) {
    auto c = compile(block, {.backend = backend});
    EXPECT_TRUE(same({c(x)}, {want}));
    EXPECT_TRUE(same({c(x2)}, {want2}));
    EXPECT_TRUE(same({c(x)}, {want}));
  }
}

TEST(CaptureNn, GptBlockExplainNamesParameters) {
  manual_seed(3);
  Block block;
  ExplainOutput e = explain(block, rnd({2, 6, 16}, 4));
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_NE(e.graphs[0].find("%qkv.weight"), std::string::npos) << e.graphs[0];
  EXPECT_NE(e.graphs[0].find("scaled_dot_product_attention"), std::string::npos);
}

TEST(CaptureNn, MultiheadAttentionReturnsUndefinedWeights) {
  manual_seed(2);
  nn::MultiheadAttention mha(16, 4, 0.0, true, /*batch_first=*/true);
  mha.eval();
  expect_compiles_exactly([&](const Tensor& q) { return mha(q, q, q); }, rnd({2, 5, 16}, 1));
  expect_compiles_exactly([&](const Tensor& q) { return mha(q, q, q, {}, /*need_weights=*/true); },
                          rnd({2, 5, 16}, 2));
}

TEST(CaptureNn, ReturningAParameterOrAnArgumentItself) {
  manual_seed(2);
  nn::Linear lin(3, 2);
  auto c = compile([&](const Tensor& x) { return std::make_tuple(x, lin.weight, lin(x)); });
  Tensor x = rnd({4, 3}, 1);
  auto [a, w, y] = c(x);
  EXPECT_TRUE(a.is_same(x) || a.storage() == x.storage());
  EXPECT_EQ(w.storage(), lin.weight.storage());
  EXPECT_TRUE(same({y}, {lin(x)}));
}
