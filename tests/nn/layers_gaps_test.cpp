// nn layers' PyTorch options beyond the basics: MultiheadAttention with keys and values of other widths
// (kdim/vdim: separate q/k/v projection weights, PyTorch's names), and convolutions with circular padding
// (checked against an input wrapped by index_select, eagerly and compiled).
#include <cmath>

#include "sinter/compile.h"
#include "sinter/nn.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

std::vector<int64_t> shape(const Tensor& t) { return t.sizes().hints(); }

TEST(NnLayersGaps, MultiheadAttentionKdimVdimParametersFollowPyTorch) {
  nn::MultiheadAttention m(8, 2, 0.0, true, false, 6, 5);
  std::vector<std::string> names;
  for (auto& [name, t] : m.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                             "out_proj.weight", "out_proj.bias"}));
  EXPECT_FALSE(m.in_proj_weight.defined());
  EXPECT_EQ(shape(m.q_proj_weight), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(shape(m.k_proj_weight), (std::vector<int64_t>{8, 6}));
  EXPECT_EQ(shape(m.v_proj_weight), (std::vector<int64_t>{8, 5}));
  EXPECT_EQ(shape(m.in_proj_bias), (std::vector<int64_t>{24}));
  EXPECT_EQ(m.kdim, 6);
  EXPECT_EQ(m.vdim, 5);
  // kdim = vdim = embed_dim keeps the packed weight.
  nn::MultiheadAttention same(8, 2, 0.0, true, false, 8, 8);
  EXPECT_TRUE(same.in_proj_weight.defined());
  EXPECT_FALSE(same.k_proj_weight.defined());
  EXPECT_EQ(same.named_parameters().size(), 4u);
  EXPECT_ERROR(nn::MultiheadAttention(8, 2, 0.0, true, false, 0), "kdim");
}

TEST(NnLayersGaps, MultiheadAttentionKdimVdimMatchesReference) {
  const int64_t N = 2, L = 3, S = 4, E = 8, H = 2, KD = 6, VD = 5, d = E / H;
  for (bool batch_first : {false, true}) {
    nn::MultiheadAttention m(E, H, 0.0, true, batch_first, KD, VD);
    NoGradGuard no_grad;
    m.in_proj_bias.copy_(random({3 * E}, kFloat32, 30));
    m.out_proj.bias.copy_(random({E}, kFloat32, 31));
    Tensor q = random({N, L, E}, kFloat32, 32), k = random({N, S, KD}, kFloat32, 33),
           v = random({N, S, VD}, kFloat32, 34);
    // Plain float64 reference from batch-first inputs.
    Tensor b = m.in_proj_bias.to(kFloat64);
    auto project = [&](const Tensor& x, const Tensor& w, int part, int64_t len) {
      Tensor y = linear(x.to(kFloat64), w.to(kFloat64), b.narrow(0, part * E, E));
      return y.reshape({N, len, H, d}).permute({0, 2, 1, 3});
    };
    Tensor qh = project(q, m.q_proj_weight, 0, L), kh = project(k, m.k_proj_weight, 1, S),
           vh = project(v, m.v_proj_weight, 2, S);
    Tensor p = softmax(matmul(qh, kh.transpose(-2, -1)) / std::sqrt(static_cast<double>(d)), -1);
    Tensor heads = matmul(p, vh).permute({0, 2, 1, 3}).reshape({N, L, E});
    Tensor ref = linear(heads, m.out_proj.weight.to(kFloat64), m.out_proj.bias.to(kFloat64));

    auto to_module = [&](const Tensor& t) { return batch_first ? t : t.transpose(0, 1); };
    for (bool need : {false, true}) {
      auto [out, w] = m(to_module(q), to_module(k), to_module(v), {}, need);
      EXPECT_CLOSE(to_module(out), ref) << "need_weights " << need;
      if (need) EXPECT_CLOSE(w, p.mean(DimList{1}));
    }
    EXPECT_ERROR(m(to_module(q), to_module(v), to_module(v)), "key of shape", "key embedding 6");
    EXPECT_ERROR(m(to_module(q), to_module(k), to_module(k)), "value embedding 5");
  }
  // Unbatched inputs, and compiled.
  nn::MultiheadAttention m(E, H, 0.0, true, false, KD, VD);
  Tensor q = random({L, E}, kFloat32, 40), k = random({S, KD}, kFloat32, 41), v = random({S, VD}, kFloat32, 42);
  Tensor eager = std::get<0>(m(q, k, v));
  EXPECT_EQ(shape(eager), (std::vector<int64_t>{L, E}));
  auto c = compile([&m](const Tensor& a, const Tensor& b2, const Tensor& c2) { return std::get<0>(m(a, b2, c2)); },
                   {.backend = "aot_eager"});
  EXPECT_TENSOR_EQ(c(q, k, v), eager);
}

// x wrapped around circularly by `pad` on both sides of its last two dims, built by index_select.
Tensor wrap2d(const Tensor& x, int64_t ph, int64_t pw) {
  auto indices = [](int64_t n, int64_t p) {
    std::vector<int64_t> idx;
    for (int64_t i = -p; i < n + p; ++i) idx.push_back(((i % n) + n) % n);
    return from_vector(idx, {static_cast<int64_t>(idx.size())});
  };
  Tensor y = index_select(x, -2, indices(x.size(-2), ph));
  return index_select(y, -1, indices(x.size(-1), pw));
}

TEST(NnLayersGaps, Conv2dCircularPaddingWrapsAround) {
  Tensor x = random({2, 3, 5, 6}, kFloat32, 1);
  nn::Conv2d c(3, 4, 3, 1, 1, 1, 1, true, "circular");
  EXPECT_CLOSE(c(x), conv2d(wrap2d(x, 1, 1), c.weight, c.bias));
  EXPECT_EQ(shape(c(x)), (std::vector<int64_t>{2, 4, 5, 6}));
  // Per-dim padding and stride.
  nn::Conv2d s(3, 2, {3, 5}, 2, {1, 2}, 1, 1, false, "circular");
  EXPECT_CLOSE(s(x), conv2d(wrap2d(x, 1, 2), s.weight, Tensor(), {2, 2}));
  // padding="same" with an even kernel pads (0, 1) per dim: left total/2, right the rest.
  nn::Conv2d same(3, 2, 2, 1, "same", 1, 1, false, "circular");
  Tensor wrapped = wrap2d(x, 1, 1).narrow(-2, 1, 6).narrow(-1, 1, 7);  // one extra row and column at the end
  EXPECT_CLOSE(same(x), conv2d(wrapped, same.weight, Tensor()));
  EXPECT_EQ(same.extra_repr(), "3, 2, kernel_size=(2, 2), stride=(1, 1), padding=same, bias=False, padding_mode=circular");
  // Unbatched input.
  EXPECT_CLOSE(c(x.select(0, 1)), conv2d(wrap2d(x, 1, 1), c.weight, c.bias).select(0, 1));
  // Wrapping more than once is an error, as in PyTorch.
  nn::Conv2d big(3, 2, 3, 1, 4, 1, 1, true, "circular");
  EXPECT_ERROR(big(random({1, 3, 3, 3})), "circular padding (4, 4)", "more than once");
  // Conv1d too.
  nn::Conv1d c1(3, 2, 3, 1, 2, 1, 1, true, "circular");
  Tensor z = random({2, 3, 7}, kFloat32, 2);
  Tensor z4 = wrap2d(z.unsqueeze(2), 0, 2).squeeze(DimList{2});
  EXPECT_CLOSE(c1(z), conv1d(z4, c1.weight, c1.bias));
}

TEST(NnLayersGaps, Conv2dCircularPaddingCompiles) {
  NoGradGuard no_grad;  // inference: one symbolic entry for every size
  nn::Conv2d c(3, 4, 3, 1, 1, 1, 1, true, "circular");
  auto f = compile(c, {.backend = "aot_eager", .dynamic = Dynamic::kAlways});
  for (int64_t hw : {5, 8, 6}) {
    Tensor x = random({2, 3, hw, hw + 1}, kFloat32, hw);
    EXPECT_TENSOR_EQ(f(x), c(x)) << hw;
  }
  EXPECT_EQ(f.stats().compiles, 1);
  // The other padding modes compile too.
  for (const char* mode : {"reflect", "replicate"}) {
    nn::Conv2d m(3, 2, 3, 1, 1, 1, 1, true, mode);
    Tensor x = random({1, 3, 6, 5}, kFloat32, 9);
    EXPECT_TENSOR_EQ(compile(m, {.backend = "aot_eager"})(x), m(x)) << mode;
  }
}

}  // namespace
}  // namespace sinter
