// nn layers: each forward against the functional op or a plain float64 reference, BatchNorm's running
// statistics, containers' naming, and MultiheadAttention against a hand-written linear/softmax/matmul
// reference.
#include <cmath>

#include "sinter/nn.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

std::vector<int64_t> shape(const Tensor& t) { return t.sizes().hints(); }
Tensor doubles(const std::vector<double>& v, const std::vector<int64_t>& sizes) {
  return from_vector(v, SymIntList(sizes));
}

TEST(NnLayers, LinearMatchesPlainReference) {
  for (bool has_bias : {true, false}) {
    nn::Linear l(3, 5, has_bias);
    Tensor x = random({4, 3}, kFloat32, 1);
    std::vector<double> xv = x.to_vector<double>(), w = l.weight.to_vector<double>(), out(4 * 5);
    std::vector<double> b = has_bias ? l.bias.to_vector<double>() : std::vector<double>(5, 0.0);
    for (int i = 0; i < 4; ++i)
      for (int o = 0; o < 5; ++o) {
        double acc = b[o];
        for (int k = 0; k < 3; ++k) acc += xv[i * 3 + k] * w[o * 3 + k];
        out[i * 5 + o] = acc;
      }
    EXPECT_CLOSE(l(x), doubles(out, {4, 5}));
    // Leading batch dims pass through.
    Tensor x3 = random({2, 4, 3}, kFloat32, 2);
    EXPECT_CLOSE(l(x3), linear(x3, l.weight, l.bias));
    EXPECT_CLOSE(l(testing::non_contiguous(x)), doubles(out, {4, 5}));
    EXPECT_EQ(shape(l(x3)), (std::vector<int64_t>{2, 4, 5}));
  }
  nn::Linear l(3, 5);
  EXPECT_ERROR(l(random({2, 4})), "linear");
  EXPECT_ERROR(nn::Linear(-1, 3), "in_features must be non-negative");
}

TEST(NnLayers, ConvolutionsMatchFunctionalOps) {
  nn::Conv2d c(4, 6, 3, 2, 1, 1, 2);
  EXPECT_EQ(shape(c.weight), (std::vector<int64_t>{6, 2, 3, 3}));
  Tensor x = random({2, 4, 9, 9});
  EXPECT_CLOSE(c(x), conv2d(x, c.weight, c.bias, {2, 2}, {1, 1}, {1, 1}, 2));
  EXPECT_CLOSE(c(testing::non_contiguous(x)), c(x));
  EXPECT_CLOSE(c(x.contiguous(kChannelsLast)), c(x));
  EXPECT_EQ(shape(c(x)), (std::vector<int64_t>{2, 6, 5, 5}));

  nn::Conv2d same(3, 5, {3, 5}, 1, "same", 2, 1, false);
  Tensor y = random({1, 3, 8, 10});
  EXPECT_EQ(shape(same(y)), (std::vector<int64_t>{1, 5, 8, 10}));
  EXPECT_CLOSE(same(y), conv2d(y, same.weight, Tensor(), {1, 1}, kSame, {2, 2}));

  nn::Conv2d reflect(3, 2, 3, 1, 1, 1, 1, true, "reflect");
  EXPECT_CLOSE(reflect(y), conv2d(pad(y, {1, 1, 1, 1}, "reflect"), reflect.weight, reflect.bias));

  nn::Conv1d c1(4, 6, 3, 1, 2, 2);
  Tensor z = random({2, 4, 11});
  EXPECT_EQ(shape(c1.weight), (std::vector<int64_t>{6, 4, 3}));
  EXPECT_CLOSE(c1(z), conv1d(z, c1.weight, c1.bias, {1}, {2}, {2}));
  nn::Conv1d valid(4, 2, 5, 1, kValid);
  EXPECT_EQ(shape(valid(z)), (std::vector<int64_t>{2, 2, 7}));

  nn::ConvTranspose2d ct(4, 6, 3, 2, 1, 1, 2);
  EXPECT_EQ(shape(ct.weight), (std::vector<int64_t>{4, 3, 3, 3}));
  EXPECT_CLOSE(ct(x), conv_transpose2d(x, ct.weight, ct.bias, {2, 2}, {1, 1}, {1, 1}, 2));
  EXPECT_EQ(shape(ct(x)), (std::vector<int64_t>{2, 6, 18, 18}));

  EXPECT_ERROR(nn::Conv2d(3, 4, 3, 1, 0, 1, 2), "in_channels (3) must be divisible by groups (2)");
  EXPECT_ERROR(nn::Conv2d(4, 4, 3, 2, "same"), "not supported for strided convolutions");
  EXPECT_ERROR(nn::Conv2d(4, 4, 3, 1, "full"), "invalid padding string \"full\"");
  EXPECT_ERROR(nn::Conv2d(4, 4, {3, 3, 3}), "kernel_size must be one number or 2 numbers");
  EXPECT_ERROR(nn::Conv2d(4, 4, 3, 1, 0, 1, 1, true, "wrap"), "padding_mode must be one of");
  EXPECT_ERROR(nn::ConvTranspose2d(4, 4, 3, 1, 0, 1), "output padding must be smaller");
}

TEST(NnLayers, EmbeddingLooksUpRowsAndZeroesPaddingRow) {
  nn::Embedding e(10, 4, -1);
  EXPECT_EQ(*e.padding_idx, 9);
  EXPECT_TENSOR_EQ(e.weight.select(0, 9), zeros({4}));
  Tensor idx = from_vector(std::vector<int64_t>{3, 9, 0, 3, 7, 1}, {2, 3});
  Tensor out = e(idx);
  EXPECT_EQ(shape(out), (std::vector<int64_t>{2, 3, 4}));
  std::vector<int64_t> iv = idx.to_vector<int64_t>();
  for (int i = 0; i < 6; ++i) EXPECT_TENSOR_EQ(out.flatten(0, 1).select(0, i), e.weight.select(0, iv[i]));
  EXPECT_ERROR(nn::Embedding(10, 4, 10), "padding_idx 10 must be within num_embeddings");
}

// Per-channel mean and biased / unbiased variance of (N, C, H, W).
void channel_stats(const Tensor& x, int64_t c, std::vector<double>& mean, std::vector<double>& var_b,
                   std::vector<double>& var_u) {
  std::vector<double> v = x.to_vector<double>();
  int64_t n = x.size(0), hw = x.size(2) * x.size(3), count = n * hw;
  mean.assign(c, 0), var_b.assign(c, 0), var_u.assign(c, 0);
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < hw; ++j) mean[ch] += v[(i * c + ch) * hw + j];
    mean[ch] /= count;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < hw; ++j) var_b[ch] += std::pow(v[(i * c + ch) * hw + j] - mean[ch], 2);
    var_u[ch] = var_b[ch] / (count - 1);
    var_b[ch] /= count;
  }
}

Tensor normalize_channels(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& var,
                          double eps) {
  std::vector<double> v = x.to_vector<double>();
  int64_t c = x.size(1), hw = x.size(2) * x.size(3);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t ch = (static_cast<int64_t>(i) / hw) % c;
    v[i] = (v[i] - mean[ch]) / std::sqrt(var[ch] + eps);
  }
  return doubles(v, shape(x));
}

TEST(NnLayers, BatchNorm2dUpdatesRunningStatsInTrainAndUsesThemInEval) {
  nn::BatchNorm2d bn(3);
  Tensor x = random({4, 3, 5, 5}, kFloat32, 3) * 2.0 + 1.0;
  std::vector<double> mean, var_b, var_u;
  channel_stats(x, 3, mean, var_b, var_u);
  EXPECT_CLOSE(bn(x), normalize_channels(x, mean, var_b, 1e-5));
  std::vector<double> rm(3), rv(3);
  for (int c = 0; c < 3; ++c) rm[c] = 0.1 * mean[c], rv[c] = 0.9 + 0.1 * var_u[c];
  EXPECT_CLOSE(bn.running_mean, doubles(rm, {3}));
  EXPECT_CLOSE(bn.running_var, doubles(rv, {3}));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  bn.eval();
  Tensor y = random({2, 3, 4, 4}, kFloat32, 4);
  EXPECT_CLOSE(bn(y), normalize_channels(y, rm, rv, 1e-5));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);  // eval leaves the statistics alone
  EXPECT_CLOSE(bn.running_mean, doubles(rm, {3}));
  // Affine weights apply after normalisation.
  NoGradGuard no_grad;
  bn.weight.fill_(2.0);
  bn.bias.fill_(0.5);
  EXPECT_CLOSE(bn(y), normalize_channels(y, rm, rv, 1e-5) * 2.0 + 0.5);
  EXPECT_ERROR(bn(random({2, 3})), "BatchNorm2d: expected 4D input (got 2D input)");
}

TEST(NnLayers, BatchNormCumulativeAverageAndUntrackedStats) {
  nn::BatchNorm2d bn(2, 1e-5, std::nullopt);
  Tensor a = random({3, 2, 2, 2}, kFloat32, 5), b = random({3, 2, 2, 2}, kFloat32, 6) + 3.0;
  bn(a);
  bn(b);
  std::vector<double> ma, mb, vb, vu;
  channel_stats(a, 2, ma, vb, vu);
  channel_stats(b, 2, mb, vb, vu);
  EXPECT_CLOSE(bn.running_mean, doubles({(ma[0] + mb[0]) / 2, (ma[1] + mb[1]) / 2}, {2}));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);

  nn::BatchNorm2d free_bn(2, 1e-5, 0.1, false, false);
  EXPECT_TRUE(free_bn.named_buffers().empty());
  EXPECT_TRUE(free_bn.named_parameters().empty());
  free_bn.eval();  // no running stats: eval still uses the batch's
  std::vector<double> m, v_b, v_u;
  channel_stats(a, 2, m, v_b, v_u);
  EXPECT_CLOSE(free_bn(a), normalize_channels(a, m, v_b, 1e-5));

  nn::BatchNorm1d bn1(3);
  Tensor x = random({5, 3});
  EXPECT_CLOSE(bn1(x), batch_norm(x, bn1.weight, bn1.bias, Tensor(), Tensor(), true, 0.1, 1e-5));
  EXPECT_ERROR(bn1(random({2, 3, 4, 4})), "expected 2D or 3D input (got 4D input)");
}

TEST(NnLayers, NormsMatchPlainReferences) {
  Tensor x = random({2, 3, 4}, kFloat32, 7);
  std::vector<double> v = x.to_vector<double>();
  // LayerNorm over the last two dims and RMSNorm over the last one.
  nn::LayerNorm ln{{3, 4}};
  NoGradGuard no_grad;
  ln.weight.copy_(random({3, 4}, kFloat32, 8));
  ln.bias.copy_(random({3, 4}, kFloat32, 9));
  std::vector<double> w = ln.weight.to_vector<double>(), b = ln.bias.to_vector<double>(), out(v.size());
  for (int n = 0; n < 2; ++n) {
    double mean = 0, var = 0;
    for (int i = 0; i < 12; ++i) mean += v[n * 12 + i] / 12;
    for (int i = 0; i < 12; ++i) var += std::pow(v[n * 12 + i] - mean, 2) / 12;
    for (int i = 0; i < 12; ++i)
      out[n * 12 + i] = (v[n * 12 + i] - mean) / std::sqrt(var + 1e-5) * w[i] + b[i];
  }
  EXPECT_CLOSE(ln(x), doubles(out, {2, 3, 4}));
  nn::LayerNorm no_bias(4, 1e-6, true, false);
  EXPECT_FALSE(no_bias.bias.defined());
  EXPECT_CLOSE(no_bias(x), layer_norm(x, {4}, no_bias.weight, Tensor(), 1e-6));

  nn::RMSNorm rms(4, 1e-6);
  rms.weight.copy_(random({4}, kFloat32, 10));
  std::vector<double> rw = rms.weight.to_vector<double>();
  for (int r = 0; r < 6; ++r) {
    double ms = 0;
    for (int i = 0; i < 4; ++i) ms += v[r * 4 + i] * v[r * 4 + i] / 4;
    for (int i = 0; i < 4; ++i) out[r * 4 + i] = v[r * 4 + i] / std::sqrt(ms + 1e-6) * rw[i];
  }
  EXPECT_CLOSE(rms(x), doubles(out, {2, 3, 4}));

  // GroupNorm: 2 groups over 4 channels of (2, 4, 3).
  nn::GroupNorm gn(2, 4);
  Tensor g = random({2, 4, 3}, kFloat32, 11);
  gn.weight.copy_(random({4}, kFloat32, 12));
  std::vector<double> gv = g.to_vector<double>(), gw = gn.weight.to_vector<double>(), gout(gv.size());
  for (int n = 0; n < 2; ++n)
    for (int grp = 0; grp < 2; ++grp) {
      int base = n * 12 + grp * 6;
      double mean = 0, var = 0;
      for (int i = 0; i < 6; ++i) mean += gv[base + i] / 6;
      for (int i = 0; i < 6; ++i) var += std::pow(gv[base + i] - mean, 2) / 6;
      for (int i = 0; i < 6; ++i)
        gout[base + i] = (gv[base + i] - mean) / std::sqrt(var + 1e-5) * gw[grp * 2 + i / 3];
    }
  EXPECT_CLOSE(gn(g), doubles(gout, {2, 4, 3}));
  EXPECT_ERROR(nn::GroupNorm(3, 4), "num_channels (4) must be divisible by num_groups (3)");
}

TEST(NnLayers, DropoutIsIdentityInEvalAndScalesInTrain) {
  nn::Dropout d(0.5);
  Tensor x = testing::random_positive({1000}, kFloat32);
  Tensor y = d(x);
  std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  int zeros_seen = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0)
      ++zeros_seen;
    else
      EXPECT_NEAR(yv[i], 2 * xv[i], 1e-5 * xv[i]);
  }
  EXPECT_GT(zeros_seen, 400);
  EXPECT_LT(zeros_seen, 600);
  d.eval();
  EXPECT_TENSOR_EQ(d(x), x);
  EXPECT_ERROR(nn::Dropout(1.5), "dropout probability has to be between 0 and 1");
}

TEST(NnLayers, ActivationsMatchFunctionalOps) {
  // A plain shape, one with a size-1 dim seen through a transposed (non-contiguous) view, and an empty one.
  for (Tensor x : {random({3, 5}, kFloat32, 13), testing::non_contiguous(random({4, 1, 3}, kFloat32, 14)),
                   random({0, 3})}) {
    std::vector<double> v = x.to_vector<double>(), relu_ref, sig_ref, silu_ref;
    for (double e : v) {
      relu_ref.push_back(std::max(e, 0.0));
      sig_ref.push_back(1 / (1 + std::exp(-e)));
      silu_ref.push_back(e / (1 + std::exp(-e)));
    }
    EXPECT_CLOSE(nn::ReLU()(x), doubles(relu_ref, shape(x)));
    EXPECT_CLOSE(nn::Sigmoid()(x), doubles(sig_ref, shape(x)));
    EXPECT_CLOSE(nn::SiLU()(x), doubles(silu_ref, shape(x)));
    EXPECT_CLOSE(nn::GELU()(x), gelu(x));
    EXPECT_CLOSE(nn::GELU("tanh")(x), gelu(x, "tanh"));
    EXPECT_CLOSE(nn::Tanh()(x), tanh(x));
    EXPECT_CLOSE(nn::Hardswish()(x), hardswish(x));
    EXPECT_CLOSE(nn::Mish()(x), mish(x));
    EXPECT_CLOSE(nn::Softmax(1)(x), softmax(x, 1));
    EXPECT_CLOSE(nn::LogSoftmax(-1)(x), log_softmax(x, -1));
    EXPECT_CLOSE(nn::LeakyReLU(0.2)(x), leaky_relu(x, 0.2));
    EXPECT_CLOSE(nn::Softplus(2.0, 10.0)(x), softplus(x, 2.0, 10.0));
    EXPECT_CLOSE(nn::ELU(0.5)(x), elu(x, 0.5));
  }
  Tensor x = random({3, 5}, kFloat32, 13);
  EXPECT_TRUE(nn::Identity()(x).is_same(x));
  EXPECT_EQ(shape(nn::Flatten()(random({2, 3, 4, 5}))), (std::vector<int64_t>{2, 60}));
  EXPECT_EQ(shape(nn::Flatten(0, 1)(random({2, 3, 4}))), (std::vector<int64_t>{6, 4}));
  EXPECT_ERROR(nn::GELU("fast"), "approximate must be");
}

TEST(NnLayers, PoolsMatchFunctionalOpsAndReference) {
  Tensor x = random({2, 3, 6, 6}, kFloat32, 14);
  nn::MaxPool2d mp(2);
  EXPECT_EQ(mp.stride, (std::vector<int64_t>{2, 2}));
  std::vector<double> v = x.to_vector<double>(), ref;
  for (int nc = 0; nc < 6; ++nc)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        double m = -INFINITY;
        for (int di = 0; di < 2; ++di)
          for (int dj = 0; dj < 2; ++dj) m = std::max(m, v[nc * 36 + (2 * i + di) * 6 + 2 * j + dj]);
        ref.push_back(m);
      }
  EXPECT_CLOSE(mp(x), doubles(ref, {2, 3, 3, 3}));
  nn::MaxPool2d mp2({3, 2}, DimList{1, 2}, {1, 0}, 1, true);
  EXPECT_CLOSE(mp2(x), max_pool2d(x, {3, 2}, {1, 2}, {1, 0}, {1, 1}, true));
  nn::AvgPool2d ap(3, 2, 1, false, false);
  EXPECT_CLOSE(ap(x), avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, false, false));
  nn::AdaptiveAvgPool2d gap(1);
  EXPECT_CLOSE(gap(x), mean(x, DimList{2, 3}, true));
  nn::AdaptiveAvgPool2d aap({2, 3});
  EXPECT_CLOSE(aap(x), adaptive_avg_pool2d(x, {2, 3}));
}

TEST(NnLayers, SequentialAndModuleListNameMembersByIndex) {
  nn::Sequential seq{std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>()};
  nn::Linear& last = seq.emplace_back<nn::Linear>(8, 2);
  nn::Tanh tanh_layer;
  seq.push_back(tanh_layer);  // borrowed
  EXPECT_EQ(seq.size(), 4u);
  std::vector<std::string> names;
  for (auto& [name, t] : seq.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = random({3, 4});
  auto& first = seq.at<nn::Linear>(0);
  EXPECT_CLOSE(seq(x), tanh(linear(relu(linear(x, first.weight, first.bias)), last.weight, last.bias)));
  EXPECT_EQ(&seq[-1], &tanh_layer);
  EXPECT_ERROR(seq[4], "index 4 is out of range for Sequential of size 4");
  EXPECT_ERROR(seq.at<nn::Conv2d>(0), "Sequential entry 0 is a Linear");

  struct Stack : nn::Module {
    nn::ModuleList layers;
    Stack() {
      for (int i = 0; i < 3; ++i) layers.emplace_back<nn::Linear>(2, 2);
      register_module("layers", layers);
    }
  } s;
  names.clear();
  for (auto& [name, t] : s.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.1.weight",
                                             "layers.1.bias", "layers.2.weight", "layers.2.bias"}));
  int count = 0;
  for (nn::Module* m : s.layers) count += m->name() == "Linear";
  EXPECT_EQ(count, 3);
  EXPECT_ERROR(s.layers(x), "ModuleList has no forward");
}

// Multi-head attention written out plainly in float64 from batch-first inputs: per-head projections by
// linear, scores = q k^T / sqrt(d) + mask, softmax, weighted sum, heads concatenated, output projection.
struct MhaRef {
  Tensor out, weights;  // (N, L, E), (N, H, L, S)
};
MhaRef mha_reference(nn::MultiheadAttention& m, const Tensor& q, const Tensor& k, const Tensor& v,
                     const Tensor& additive_mask /* (N, H, L, S) or undefined */) {
  int64_t E = m.embed_dim, H = m.num_heads, d = E / H, N = q.size(0), L = q.size(1), S = k.size(1);
  Tensor w = m.in_proj_weight.to(kFloat64), b = m.in_proj_bias.to(kFloat64);
  auto project = [&](const Tensor& x, int part, int64_t len) {
    Tensor y = linear(x.to(kFloat64), w.narrow(0, part * E, E), b.narrow(0, part * E, E));
    return y.reshape({N, len, H, d}).permute({0, 2, 1, 3});  // (N, H, len, d)
  };
  Tensor qh = project(q, 0, L), kh = project(k, 1, S), vh = project(v, 2, S);
  Tensor scores = matmul(qh, kh.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
  if (additive_mask.defined()) scores = scores + additive_mask.to(kFloat64);
  Tensor p = softmax(scores, -1);
  Tensor heads = matmul(p, vh).permute({0, 2, 1, 3}).reshape({N, L, E});
  return {linear(heads, m.out_proj.weight.to(kFloat64), m.out_proj.bias.to(kFloat64)), p};
}

TEST(NnLayers, MultiheadAttentionParametersFollowPyTorch) {
  nn::MultiheadAttention m(8, 2);
  std::vector<std::string> names;
  for (auto& [name, t] : m.named_parameters()) names.push_back(name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(shape(m.in_proj_weight), (std::vector<int64_t>{24, 8}));
  EXPECT_EQ(shape(m.in_proj_bias), (std::vector<int64_t>{24}));
  EXPECT_EQ(shape(m.out_proj.weight), (std::vector<int64_t>{8, 8}));
  nn::MultiheadAttention nb(8, 2, 0.0, false);
  EXPECT_EQ(nb.named_parameters().size(), 2u);
  EXPECT_ERROR(nn::MultiheadAttention(10, 3), "embed_dim (10) must be divisible by num_heads (3)");
}

TEST(NnLayers, MultiheadAttentionMatchesReference) {
  const int64_t N = 2, L = 3, S = 5, E = 8, H = 2;
  for (bool batch_first : {false, true}) {
    nn::MultiheadAttention m(E, H, 0.0, true, batch_first);
    NoGradGuard no_grad;
    m.in_proj_bias.copy_(random({3 * E}, kFloat32, 20));  // non-zero biases, to check where they go
    m.out_proj.bias.copy_(random({E}, kFloat32, 21));
    Tensor q = random({N, L, E}, kFloat32, 22), k = random({N, S, E}, kFloat32, 23),
           v = random({N, S, E}, kFloat32, 24);
    auto to_module = [&](const Tensor& t) { return batch_first ? t : t.transpose(0, 1); };
    auto from_module = [&](const Tensor& t) { return batch_first ? t : t.transpose(0, 1); };

    // Cross-attention, no mask, with and without the weights.
    MhaRef ref = mha_reference(m, q, k, v, Tensor());
    auto [out, w] = m(to_module(q), to_module(k), to_module(v));
    EXPECT_FALSE(w.defined());
    EXPECT_CLOSE(from_module(out), ref.out);
    auto [out2, w2] = m(to_module(q), to_module(k), to_module(v), {}, true);
    EXPECT_CLOSE(from_module(out2), ref.out);
    EXPECT_CLOSE(w2, ref.weights.mean(DimList{1}));
    auto [out3, w3] = m(to_module(q), to_module(k), to_module(v), {}, true, {}, false, false);
    EXPECT_CLOSE(w3, ref.weights);

    // Key padding (bool, true = ignore) and a float attention mask together.
    Tensor kpm = from_vector(std::vector<int64_t>{0, 0, 0, 1, 1, 0, 1, 0, 0, 0}, {N, S}) != 0;
    Tensor am = random({L, S}, kFloat32, 25);
    Tensor additive =
        am.view({1, 1, L, S}) + masked_fill(zeros({N, 1, 1, S}), kpm.view({N, 1, 1, S}), -INFINITY);
    MhaRef masked = mha_reference(m, q, k, v, additive);
    for (bool need : {false, true}) {
      auto [mo, mw] = m(to_module(q), to_module(k), to_module(v), kpm, need, am);
      EXPECT_CLOSE(from_module(mo), masked.out) << "need_weights " << need;
    }

    // Self-attention (one packed projection) with a causal mask.
    Tensor x = random({N, L, E}, kFloat32, 26);
    Tensor causal = nn::generate_square_subsequent_mask(L);
    MhaRef self = mha_reference(m, x, x, x, causal.view({1, 1, L, L}));
    Tensor xm = to_module(x);
    auto [so, sw] = m(xm, xm, xm, {}, false, causal, true);
    EXPECT_CLOSE(from_module(so), self.out);
    Tensor bool_causal = isinf(causal);  // the same mask as bool
    auto [so2, sw2] = m(xm, xm, xm, {}, true, bool_causal);
    EXPECT_CLOSE(from_module(so2), self.out);
  }
}

TEST(NnLayers, MultiheadAttentionInBFloat16WithFloatMask) {
  nn::MultiheadAttention m(8, 2, 0.0, true, true);
  Tensor x = random({2, 4, 8}, kFloat32, 32);
  Tensor mask = random({4, 4}, kFloat32, 33);
  auto [expected, unused] = m(x, x, x, {}, false, mask);
  m.to(kBFloat16);
  Tensor xb = x.to(kBFloat16);
  for (bool need : {false, true}) {
    auto [out, w] = m(xb, xb, xb, {}, need, mask);  // the float32 mask follows the query's dtype
    EXPECT_EQ(out.dtype(), kBFloat16);
    EXPECT_CLOSE(out, expected, 3e-2);
  }
}

TEST(NnLayers, MultiheadAttentionUnbatchedAndErrors) {
  nn::MultiheadAttention m(6, 3);
  Tensor q = random({4, 6}, kFloat32, 30), kv = random({7, 6}, kFloat32, 31);
  auto [out, w] = m(q, kv, kv, {}, true);
  MhaRef ref = mha_reference(m, q.unsqueeze(0), kv.unsqueeze(0), kv.unsqueeze(0), Tensor());
  EXPECT_CLOSE(out, ref.out.squeeze(DimList{0}));
  EXPECT_CLOSE(w, ref.weights.mean(DimList{1}).squeeze(DimList{0}));
  EXPECT_EQ(shape(w), (std::vector<int64_t>{4, 7}));

  Tensor x = random({4, 2, 6});
  EXPECT_ERROR(m(random({4, 2, 5}), x, x), "was expecting embedding dimension of 6, but got 5");
  EXPECT_ERROR(m(x, x, x, {}, false, {}, true), "need attn_mask if specifying the is_causal hint");
  EXPECT_ERROR(m(x, x, x, zeros({4, 2}, TensorOptions(kBool))), "expecting key_padding_mask shape of [2, 4]");
  EXPECT_ERROR(m(x, x, x, {}, false, zeros({3, 4})),
               "The shape of the 2D attn_mask is [3, 4], but should be [4, 4].");
  EXPECT_ERROR(m(x, x, x, {}, false, zeros({4, 4}, TensorOptions(kInt64))),
               "only bool and floating types of attn_mask");
  EXPECT_ERROR(m(random({2, 2, 2, 6}), x, x), "received 4-D query tensor");
}

}  // namespace
}  // namespace sinter
