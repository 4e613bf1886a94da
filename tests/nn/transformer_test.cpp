// TransformerEncoderLayer and TransformerEncoder: PyTorch's submodule and parameter names, and forward (eval,
// dropout off) against a hand-written composition of the ops, post-norm and pre-norm, with a causal mask and a
// key padding mask.
#include <cmath>
#include <limits>

#include "sinter/nn.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using Names = std::vector<std::string>;

constexpr int64_t kL = 5, kN = 2, kE = 8, kH = 2, kFF = 16;

Names names_of(const nn::NamedTensors& named) {
  Names out;
  for (const auto& [name, t] : named) out.push_back(name);
  return out;
}

// Every parameter gets random values (LayerNorm's ones and the zero biases would hide mistakes).
void randomize(nn::Module& m, uint64_t seed) {
  NoGradGuard no_grad;
  for (auto& [name, p] : m.named_parameters()) Tensor(p).copy_(random(p.sizes(), kFloat32, seed++) * 0.5);
}

Tensor affine(const Tensor& x, const nn::Linear& l) { return matmul(x, l.weight.t()) + l.bias; }

// Self-attention of x (L, N, E): heads as (N, H, L, D), softmax(q k^T / sqrt(D) + mask) v, then out_proj.
// `mask` is additive and broadcasts against (N, H, L, S); undefined for none.
Tensor reference_attention(const nn::MultiheadAttention& mha, const Tensor& x, const Tensor& mask) {
  const int64_t D = kE / kH;
  Tensor qkv = matmul(x, mha.in_proj_weight.t()) + mha.in_proj_bias;
  std::vector<Tensor> parts = qkv.chunk(3, -1);
  auto heads = [&](const Tensor& t) { return t.reshape({kL, kN, kH, D}).permute({1, 2, 0, 3}); };
  Tensor scores = matmul(heads(parts[0]), heads(parts[1]).transpose(-2, -1)) / std::sqrt(static_cast<double>(D));
  if (mask.defined()) scores = scores + mask;
  Tensor out = matmul(softmax(scores, -1), heads(parts[2]));  // (N, H, L, D)
  out = out.permute({2, 0, 1, 3}).reshape({kL, kN, kE});        // (L, N, E)
  return affine(out, mha.out_proj);
}

Tensor reference_layer(const nn::TransformerEncoderLayer& l, const Tensor& src, const Tensor& mask) {
  auto norm = [&](const nn::LayerNorm& n, const Tensor& x) {
    return layer_norm(x, {kE}, n.weight, n.bias, l.layer_norm_eps);
  };
  auto sa = [&](const Tensor& x) { return reference_attention(l.self_attn, x, mask); };
  auto ff = [&](const Tensor& x) {
    Tensor h = affine(x, l.linear1);
    return affine(l.activation == "gelu" ? gelu(h) : relu(h), l.linear2);
  };
  Tensor x = src;
  if (l.norm_first) {
    x = x + sa(norm(l.norm1, x));
    return x + ff(norm(l.norm2, x));
  }
  x = norm(l.norm1, x + sa(x));
  return norm(l.norm2, x + ff(x));
}

// Masks as the reference takes them: additive, broadcasting against (N, H, L, S).
constexpr double kNegInf = -std::numeric_limits<double>::infinity();
Tensor causal_additive() { return triu(full({kL, kL}, kNegInf), 1); }
// Batch 1's last two keys are padding.
Tensor padding_mask() {
  std::vector<bool> pad(kN * kL, false);
  pad[kL + 3] = pad[kL + 4] = true;
  return from_vector(std::vector<uint8_t>(pad.begin(), pad.end()), {kN, kL}).to(kBool);
}
Tensor padding_additive() { return masked_fill(zeros({kN, 1, 1, kL}), padding_mask().view({kN, 1, 1, kL}), kNegInf); }

TEST(NnTransformer, EncoderLayerNamesFollowPyTorch) {
  nn::TransformerEncoderLayer l(kE, kH, kFF);
  Names children;
  for (const auto& [name, m] : l.named_children()) children.push_back(name);
  EXPECT_EQ(children,
            (Names{"self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"}));
  EXPECT_EQ(l.state_dict().keys(),
            (Names{"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                   "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                   "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"}));
  EXPECT_EQ(l.linear1.weight.sizes().hints(), (std::vector<int64_t>{kFF, kE}));
  EXPECT_EQ(l.linear2.weight.sizes().hints(), (std::vector<int64_t>{kE, kFF}));
  EXPECT_EQ(l.self_attn.in_proj_weight.sizes().hints(), (std::vector<int64_t>{3 * kE, kE}));

  nn::TransformerEncoderLayer defaults(kE, kH);  // PyTorch's defaults
  EXPECT_EQ(defaults.linear1.out_features, 2048);
  EXPECT_DOUBLE_EQ(defaults.dropout.p, 0.1);
  EXPECT_DOUBLE_EQ(defaults.dropout1.p, 0.1);
  EXPECT_DOUBLE_EQ(defaults.self_attn.dropout, 0.1);
  EXPECT_EQ(defaults.activation, "relu");
  EXPECT_DOUBLE_EQ(defaults.norm1.eps, 1e-5);
  EXPECT_FALSE(defaults.batch_first || defaults.norm_first);

  nn::TransformerEncoderLayer no_bias(kE, kH, kFF, 0.1, "relu", 1e-5, false, false, false);
  EXPECT_EQ(no_bias.state_dict().keys(), (Names{"self_attn.in_proj_weight", "self_attn.out_proj.weight",
                                                "linear1.weight", "linear2.weight", "norm1.weight", "norm2.weight"}));
}

TEST(NnTransformer, EncoderLayerMatchesReferenceWithMasks) {
  Tensor x = random({kL, kN, kE}, kFloat32, 1);
  Tensor causal = nn::generate_square_subsequent_mask(kL);
  Tensor causal_bool = triu(ones({kL, kL}), 1).to(kBool);
  for (bool norm_first : {false, true})
    for (std::string act : {"relu", "gelu"}) {
      SCOPED_TRACE(std::string(norm_first ? "norm_first " : "post-norm ") + act);
      nn::TransformerEncoderLayer l(kE, kH, kFF, 0.1, act, 1e-5, false, norm_first);
      randomize(l, 10);
      l.eval();
      EXPECT_CLOSE(l(x), reference_layer(l, x, Tensor()), 1e-5);
      EXPECT_CLOSE(l(x, causal, {}, true), reference_layer(l, x, causal_additive()), 1e-5);
      EXPECT_CLOSE(l(x, causal), reference_layer(l, x, causal_additive()), 1e-5);
      EXPECT_CLOSE(l(x, causal_bool, {}, true), reference_layer(l, x, causal_additive()), 1e-5);
      EXPECT_CLOSE(l(x, {}, padding_mask()), reference_layer(l, x, padding_additive()), 1e-5);
      EXPECT_CLOSE(l(x, causal, padding_mask(), true),
                   reference_layer(l, x, causal_additive() + padding_additive()), 1e-5);
      EXPECT_CLOSE(l.forward(x, causal, padding_mask()), l(x, causal, padding_mask(), true), 1e-6);
    }
}

TEST(NnTransformer, EncoderLayerBatchFirstAndUnbatched) {
  nn::TransformerEncoderLayer seq_first(kE, kH, kFF, 0.0);
  nn::TransformerEncoderLayer batch_first(kE, kH, kFF, 0.0, "relu", 1e-5, true);
  randomize(seq_first, 20);
  batch_first.load_state_dict(seq_first.state_dict());
  seq_first.eval();
  batch_first.eval();
  Tensor x = random({kL, kN, kE}, kFloat32, 2);
  Tensor expected = seq_first(x, {}, padding_mask());
  EXPECT_CLOSE(batch_first(x.transpose(0, 1), {}, padding_mask()), expected.transpose(0, 1), 1e-5);
  // Unbatched (S, E) is batch 0 of the batched result.
  EXPECT_CLOSE(seq_first(x.select(1, 0)), seq_first(x).select(1, 0), 1e-5);
}

TEST(NnTransformer, DropoutOnlyInTraining) {
  nn::TransformerEncoderLayer l(kE, kH, kFF, 0.5);
  Tensor x = random({kL, kN, kE}, kFloat32, 3);
  l.eval();
  Tensor a = l(x), b = l(x);
  EXPECT_TENSOR_EQ(a, b);
  l.train();
  EXPECT_GT(testing::max_abs_error(l(x), a), 1e-3);
}

TEST(NnTransformer, EncoderCopiesItsPrototypeAndAppliesTheNorm) {
  nn::TransformerEncoderLayer proto(kE, kH, kFF, 0.1, "gelu", 1e-5, false, true);
  randomize(proto, 30);
  proto.eval();
  nn::TransformerEncoder enc(proto, 3, std::make_shared<nn::LayerNorm>(kE));
  EXPECT_EQ(enc.layers.size(), 3u);
  Names keys = enc.state_dict().keys();
  EXPECT_EQ(keys.size(), 3u * 12 + 2);
  EXPECT_EQ(keys.front(), "layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(keys[12], "layers.1.self_attn.in_proj_weight");
  EXPECT_EQ(keys.back(), "norm.bias");
  for (int64_t i = 0; i < 3; ++i) {
    nn::TransformerEncoderLayer& layer = enc.layer(i);
    EXPECT_TRUE(layer.norm_first);
    EXPECT_EQ(layer.activation, "gelu");
    EXPECT_FALSE(layer.is_training());
    EXPECT_TENSOR_EQ(layer.linear1.weight, proto.linear1.weight);  // copied values (PyTorch deep-copies)
    EXPECT_FALSE(layer.linear1.weight.is_same(proto.linear1.weight));
  }
  randomize(enc, 40);
  enc.eval();
  Tensor x = random({kL, kN, kE}, kFloat32, 4);
  Tensor causal = nn::generate_square_subsequent_mask(kL);
  Tensor mask = causal_additive() + padding_additive();
  Tensor expected = x;
  for (int64_t i = 0; i < 3; ++i) expected = reference_layer(enc.layer(i), expected, mask);
  auto& norm = dynamic_cast<nn::LayerNorm&>(*enc.norm);
  expected = layer_norm(expected, {kE}, norm.weight, norm.bias);
  EXPECT_CLOSE(enc(x, causal, padding_mask(), true), expected, 1e-5);
  EXPECT_CLOSE(enc(x, causal, padding_mask()), expected, 1e-5);
}

TEST(NnTransformer, EncoderFromAFactoryWithoutNorm) {
  int made = 0;
  nn::TransformerEncoder enc(
      [&] {
        ++made;
        return std::make_shared<nn::TransformerEncoderLayer>(kE, kH, kFF, 0.0);
      },
      2);
  EXPECT_EQ(made, 2);
  EXPECT_EQ(enc.norm, nullptr);
  Names children;
  for (const auto& [name, m] : enc.named_children()) children.push_back(name);
  EXPECT_EQ(children, (Names{"layers"}));
  EXPECT_FALSE(testing::equal(enc.layer(0).linear1.weight, enc.layer(1).linear1.weight));  // fresh each
  enc.eval();
  Tensor x = random({kL, kN, kE}, kFloat32, 5);
  EXPECT_CLOSE(enc(x), enc.layer(1)(enc.layer(0)(x)), 1e-6);
  EXPECT_CLOSE(enc.forward(x), reference_layer(enc.layer(1), reference_layer(enc.layer(0), x, Tensor()), Tensor()),
               1e-5);
}

TEST(NnTransformer, ErrorsNameTheProblem) {
  EXPECT_ERROR(nn::TransformerEncoderLayer(kE, kH, kFF, 0.1, "tanh"), "activation should be relu/gelu, not tanh");
  EXPECT_ERROR(nn::TransformerEncoderLayer(kE, 3), "embed_dim (8) must be divisible by num_heads (3)");
  nn::TransformerEncoderLayer l(kE, kH, kFF);
  Tensor x = random({kL, kN, kE});
  EXPECT_ERROR(l(x, {}, {}, true), "need attn_mask", "transformer_test.cpp");
  EXPECT_ERROR(l(random({kL, kN, 4})), "embedding dimension of 8", "transformer_test.cpp");
  EXPECT_ERROR(nn::TransformerEncoder([] { return std::shared_ptr<nn::TransformerEncoderLayer>(); }, 2),
               "make_layer returned no layer");
}

}  // namespace
}  // namespace sinter
