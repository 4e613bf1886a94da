// Gradient checks of the nn rows: matrix products of every rank, einsum, normalisations, convolutions, pooling,
// upsampling, attention, losses, embedding and dropout, with broadcasting, size-1 dims and optional arguments
// present and absent.
#include <limits>

#include "autograd/gradcheck.h"
#include "ops/dispatch.h"

namespace sinter::testing {
namespace {

using V = const std::vector<Tensor>&;

Tensor ints(const std::vector<int64_t>& values, const SymIntList& sizes) {
  return tensor(values, TensorOptions(kInt64)).reshape(sizes);
}

void add_matmul_samples(std::vector<GradSample>& s) {
  Tensor a23 = away_from_zero({2, 3}, 101), b34 = away_from_zero({3, 4}, 102);
  s.push_back({OpId::mm, "mm", [](V in) { return mm(in[0], in[1]); }, {a23, b34}, true});
  s.push_back({OpId::bmm, "bmm", [](V in) { return bmm(in[0], in[1]); },
               {away_from_zero({2, 2, 3}, 103), away_from_zero({2, 3, 2}, 104)}});
  auto mat = [&](const char* what, Tensor x, Tensor y, bool twice = false) {
    s.push_back({OpId::matmul, what, [](V in) { return matmul(in[0], in[1]); }, {x, y}, twice});
  };
  mat("matmul 1-D x 1-D", away_from_zero({3}, 105), away_from_zero({3}, 106));
  mat("matmul 1-D x 3-D", away_from_zero({3}, 107), away_from_zero({2, 3, 2}, 108));
  mat("matmul 3-D x 1-D", away_from_zero({2, 2, 3}, 109), away_from_zero({3}, 110));
  mat("matmul 2-D x 2-D", a23, b34);
  mat("matmul broadcast batch with a size-1 dim", away_from_zero({2, 1, 2, 3}, 111), away_from_zero({3, 3, 2}, 112),
      true);
  mat("matmul 2-D x 3-D", a23, away_from_zero({2, 3, 2}, 113));
  s.push_back({OpId::addmm, "addmm broadcast self, beta and alpha",
               [](V in) { return addmm(in[0], in[1], in[2], 0.5, 2.0); },
               {away_from_zero({4}, 114), a23, b34}});
  s.push_back({OpId::addmm, "addmm column self", [](V in) { return addmm(in[0], in[1], in[2]); },
               {away_from_zero({2, 1}, 115), a23, b34}});
  s.push_back({OpId::linear, "linear 3-D input with bias", [](V in) { return linear(in[0], in[1], in[2]); },
               {away_from_zero({2, 3, 4}, 116), away_from_zero({5, 4}, 117), away_from_zero({5}, 118)}, true});
  s.push_back({OpId::linear, "linear 1-D input without bias", [](V in) { return linear(in[0], in[1]); },
               {away_from_zero({4}, 119), away_from_zero({3, 4}, 120)}});
  s.push_back({OpId::linear, "linear 1-D weight, 0-d bias", [](V in) { return linear(in[0], in[1], in[2]); },
               {away_from_zero({2, 4}, 121), away_from_zero({4}, 122), away_from_zero({}, 123)}});
}

void add_einsum_samples(std::vector<GradSample>& s) {
  auto ein = [&](const char* eq, std::vector<Tensor> ts, bool twice = false) {
    std::string equation = eq;
    s.push_back({OpId::einsum, std::string("einsum ") + eq, [equation](V in) { return einsum(equation, in); },
                 std::move(ts), twice});
  };
  ein("ij,jk->ik", {away_from_zero({2, 3}, 131), away_from_zero({3, 4}, 132)}, true);
  ein("bij,bjk", {away_from_zero({2, 2, 3}, 133), away_from_zero({2, 3, 2}, 134)});
  ein("ij->", {away_from_zero({2, 3}, 135)});
  ein("ij->j", {away_from_zero({2, 3}, 136)});
  ein("ijk->kij", {away_from_zero({2, 3, 2}, 137)});
  ein("i,j->ij", {away_from_zero({3}, 138), away_from_zero({2}, 139)});
  ein("ij,ij->i", {away_from_zero({2, 3}, 140), away_from_zero({1, 3}, 141)});
  ein("ij,j->i", {away_from_zero({2, 3}, 142), away_from_zero({1}, 143)});
  ein("...ij,...jk->...ik", {away_from_zero({2, 2, 3}, 144), away_from_zero({3, 2}, 145)});
  ein("b...i,bi", {away_from_zero({2, 3, 2}, 146), away_from_zero({2, 2}, 147)});
  ein("ij,jk,kl->il", {away_from_zero({2, 3}, 148), away_from_zero({3, 2}, 149), away_from_zero({2, 2}, 150)});
}

void add_norm_samples(std::vector<GradSample>& s) {
  Tensor x = away_from_zero({2, 3, 4}, 161);
  s.push_back({OpId::layer_norm, "layer_norm weight and bias",
               [](V in) { return layer_norm(in[0], {4}, in[1], in[2]); },
               {x, away_from_zero({4}, 162), away_from_zero({4}, 163)}, true});
  s.push_back({OpId::layer_norm, "layer_norm over two dims, no weight or bias",
               [](V in) { return layer_norm(in[0], {3, 4}, {}, {}, 1e-3); }, {x}});
  s.push_back({OpId::layer_norm, "layer_norm weight only", [](V in) { return layer_norm(in[0], {4}, in[1]); },
               {away_from_zero({3, 4}, 164), away_from_zero({4}, 165)}});
  s.push_back({OpId::group_norm, "group_norm weight and bias",
               [](V in) { return group_norm(in[0], 2, in[1], in[2]); },
               {away_from_zero({2, 4, 3}, 166), away_from_zero({4}, 167), away_from_zero({4}, 168)}, true});
  s.push_back({OpId::group_norm, "group_norm 2-D, no weight or bias", [](V in) { return group_norm(in[0], 3); },
               {away_from_zero({2, 6}, 169)}});
  s.push_back({OpId::group_norm, "group_norm 4-D, one group", [](V in) { return group_norm(in[0], 1, in[1]); },
               {away_from_zero({1, 4, 2, 2}, 170), away_from_zero({4}, 171)}});
  s.push_back({OpId::rms_norm, "rms_norm weight, default eps", [](V in) { return rms_norm(in[0], {4}, in[1]); },
               {x, away_from_zero({4}, 172)}, true});
  s.push_back({OpId::rms_norm, "rms_norm over two dims, eps", [](V in) { return rms_norm(in[0], {3, 4}, {}, 1e-3); },
               {x}});
  Tensor bx = away_from_zero({3, 2, 2}, 173), bw = away_from_zero({2}, 174), bb = away_from_zero({2}, 175);
  Tensor rm = away_from_zero({2}, 176), rv = positive({2}, 177);
  s.push_back({OpId::batch_norm, "batch_norm training, running stats updated",
               [rm, rv](V in) { return batch_norm(in[0], in[1], in[2], rm.clone(), rv.clone(), true, 0.1, 1e-5); },
               {bx, bw, bb}, true});
  s.push_back({OpId::batch_norm, "batch_norm eval",
               [rm, rv](V in) { return batch_norm(in[0], in[1], in[2], rm, rv, false, 0.1, 1e-3); },
               {bx, bw, bb}});
  s.push_back({OpId::batch_norm, "batch_norm training 2-D, no weight, bias or running stats",
               [](V in) { return batch_norm(in[0], {}, {}, {}, {}, true); }, {away_from_zero({4, 3}, 178)}});
  s.push_back({OpId::batch_norm_functional, "batch_norm_functional training",
               [rm, rv](V in) {
                 return dispatch(OpId::batch_norm_functional,
                                 {in[0], in[1], in[2], rm, rv, true, 0.1, 1e-5}, Loc::current())[0];
               },
               {bx, bw, bb}});
  s.push_back({OpId::batch_norm_functional, "batch_norm_functional eval, no bias",
               [rm, rv](V in) {
                 return dispatch(OpId::batch_norm_functional, {in[0], in[1], Value(), rm, rv, false, 0.1, 1e-5},
                                 Loc::current())[0];
               },
               {bx, bw}});
}

void add_conv_samples(std::vector<GradSample>& s) {
  s.push_back({OpId::conv2d, "conv2d stride, padding, dilation, bias",
               [](V in) { return conv2d(in[0], in[1], in[2], {2, 1}, {1, 0}, {1, 2}); },
               {away_from_zero({2, 2, 5, 5}, 181), away_from_zero({3, 2, 2, 3}, 182), away_from_zero({3}, 183)}});
  s.push_back({OpId::conv2d, "conv2d groups",
               [](V in) { return conv2d(in[0], in[1], {}, {1}, {1}, {1}, 2); },
               {away_from_zero({1, 4, 4, 3}, 184), away_from_zero({4, 2, 3, 2}, 185)}});
  s.push_back({OpId::conv2d, "conv2d unbatched, stride 2",
               [](V in) { return conv2d(in[0], in[1], {}, {2}); },
               {away_from_zero({2, 5, 4}, 186), away_from_zero({3, 2, 2, 2}, 187)}});
  s.push_back({OpId::conv2d, "conv2d small, twice", [](V in) { return conv2d(in[0], in[1], in[2], {1}, {1}); },
               {away_from_zero({1, 1, 3, 3}, 188), away_from_zero({2, 1, 2, 2}, 189), away_from_zero({2}, 190)},
               true});
  s.push_back({OpId::conv1d, "conv1d stride, padding, bias",
               [](V in) { return conv1d(in[0], in[1], in[2], {2}, {1}); },
               {away_from_zero({2, 2, 6}, 191), away_from_zero({3, 2, 3}, 192), away_from_zero({3}, 193)}});
  s.push_back({OpId::conv1d, "conv1d groups and dilation",
               [](V in) { return conv1d(in[0], in[1], {}, {1}, {0}, {2}, 2); },
               {away_from_zero({1, 4, 7}, 194), away_from_zero({2, 2, 2}, 195)}});
  s.push_back({OpId::conv1d, "conv1d unbatched", [](V in) { return conv1d(in[0], in[1]); },
               {away_from_zero({2, 5}, 196), away_from_zero({1, 2, 2}, 197)}});
  s.push_back({OpId::conv1d_padding, "conv1d same, even kernel",
               [](V in) { return conv1d(in[0], in[1], in[2], {1}, kSame); },
               {away_from_zero({1, 2, 6}, 198), away_from_zero({2, 2, 4}, 199), away_from_zero({2}, 200)}});
  s.push_back({OpId::conv1d_padding, "conv1d valid", [](V in) { return conv1d(in[0], in[1], {}, {2}, kValid); },
               {away_from_zero({2, 2, 5}, 201), away_from_zero({1, 2, 2}, 202)}});
  s.push_back({OpId::conv2d_padding, "conv2d same, even kernel and dilation",
               [](V in) { return conv2d(in[0], in[1], {}, {1}, kSame, {1, 2}); },
               {away_from_zero({1, 2, 4, 5}, 203), away_from_zero({2, 2, 2, 3}, 204)}});
  s.push_back({OpId::conv2d_padding, "conv2d valid, stride 2",
               [](V in) { return conv2d(in[0], in[1], in[2], {2}, kValid); },
               {away_from_zero({1, 2, 5, 4}, 205), away_from_zero({2, 2, 2, 2}, 206), away_from_zero({2}, 207)}});
  s.push_back({OpId::conv_transpose2d, "conv_transpose2d stride, padding, output_padding, bias",
               [](V in) { return conv_transpose2d(in[0], in[1], in[2], {2}, {1}, {1}); },
               {away_from_zero({1, 2, 3, 3}, 208), away_from_zero({2, 3, 2, 2}, 209), away_from_zero({3}, 210)},
               true});
  s.push_back({OpId::conv_transpose2d, "conv_transpose2d groups, dilation, stride",
               [](V in) { return conv_transpose2d(in[0], in[1], {}, {1, 2}, {0}, {0}, 2, {2, 1}); },
               {away_from_zero({1, 4, 2, 3}, 211), away_from_zero({4, 1, 3, 2}, 212)}});
  s.push_back({OpId::conv_transpose2d, "conv_transpose2d output_padding past the stride",
               [](V in) { return conv_transpose2d(in[0], in[1], {}, {1}, {0}, {1}, 1, {2}); },
               {away_from_zero({2, 2, 3, 3}, 213), away_from_zero({2, 2, 2, 2}, 214)}});
  s.push_back({OpId::conv2d_weight_grad, "conv2d_weight_grad stride, padding, dilation",
               [](V in) { return conv2d_weight_grad(in[0], {3, 2, 2, 3}, in[1], {2, 1}, {1, 0}, {1, 2}); },
               {away_from_zero({2, 2, 5, 5}, 217), away_from_zero({2, 3, 3, 1}, 218)}});
  s.push_back({OpId::conv2d_weight_grad, "conv2d_weight_grad groups, twice",
               [](V in) { return conv2d_weight_grad(in[0], {4, 2, 3, 2}, in[1], {1}, {1}, {1}, 2); },
               {away_from_zero({1, 4, 4, 3}, 219), away_from_zero({1, 4, 4, 4}, 220)}, true});
  s.push_back({OpId::conv_transpose2d, "conv_transpose2d unbatched",
               [](V in) { return conv_transpose2d(in[0], in[1]); },
               {away_from_zero({2, 3, 2}, 215), away_from_zero({2, 1, 2, 2}, 216)}});
}

void add_pool_samples(std::vector<GradSample>& s) {
  Tensor x = away_from_zero({1, 2, 5, 5}, 221);
  s.push_back({OpId::max_pool2d, "max_pool2d 2x2", [](V in) { return max_pool2d(in[0], {2, 2}); }, {x}, true});
  s.push_back({OpId::max_pool2d, "max_pool2d padding, ceil_mode",
               [](V in) { return max_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}, {1, 1}, true); }, {x}});
  s.push_back({OpId::max_pool2d, "max_pool2d dilation, 3-D input",
               [](V in) { return max_pool2d(in[0], {2, 2}, {1, 2}, {0, 1}, {2, 1}); },
               {away_from_zero({2, 5, 4}, 222)}});
  s.push_back({OpId::avg_pool2d, "avg_pool2d", [](V in) { return avg_pool2d(in[0], {2, 2}); }, {x}, true});
  s.push_back({OpId::avg_pool2d, "avg_pool2d padding, ceil_mode, no pad count",
               [](V in) { return avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}, true, false); }, {x}});
  s.push_back({OpId::avg_pool2d, "avg_pool2d padding counted, ceil_mode",
               [](V in) { return avg_pool2d(in[0], {2, 3}, {2, 2}, {1, 1}, true, true); }, {x}});
  s.push_back({OpId::avg_pool2d, "avg_pool2d divisor_override, 3-D input",
               [](V in) { return avg_pool2d(in[0], {2, 2}, {1, 1}, {0, 0}, false, true, 3); },
               {away_from_zero({2, 3, 4}, 223)}});
  s.push_back({OpId::adaptive_avg_pool2d, "adaptive_avg_pool2d overlapping windows",
               [](V in) { return adaptive_avg_pool2d(in[0], {3, 4}); }, {away_from_zero({1, 2, 5, 7}, 224)}, true});
  s.push_back({OpId::adaptive_avg_pool2d, "adaptive_avg_pool2d to 1x1, 3-D input",
               [](V in) { return adaptive_avg_pool2d(in[0], {1, 1}); }, {away_from_zero({2, 3, 4}, 225)}});
  Tensor u = away_from_zero({1, 2, 3, 4}, 226);
  s.push_back({OpId::upsample_nearest2d, "upsample_nearest2d to a size",
               [](V in) { return interpolate(in[0], SymIntList{5, 7}); }, {u}, true});
  s.push_back({OpId::upsample_nearest2d, "upsample_nearest2d by 2",
               [](V in) { return interpolate(in[0], {}, std::vector<double>{2.0}); }, {u}});
  s.push_back({OpId::upsample_nearest2d, "upsample_nearest2d down",
               [](V in) { return interpolate(in[0], SymIntList{2, 3}); }, {u}});
  s.push_back({OpId::upsample_bilinear2d, "upsample_bilinear2d",
               [](V in) { return interpolate(in[0], SymIntList{5, 6}, {}, "bilinear"); }, {u}, true});
  s.push_back({OpId::upsample_bilinear2d, "upsample_bilinear2d align_corners",
               [](V in) { return interpolate(in[0], SymIntList{4, 7}, {}, "bilinear", true); }, {u}});
  s.push_back({OpId::upsample_bilinear2d, "upsample_bilinear2d scale_factor, down in height",
               [](V in) { return interpolate(in[0], {}, std::vector<double>{0.7, 1.5}, "bilinear"); }, {u}});
}

void add_attention_samples(std::vector<GradSample>& s) {
  Tensor q = away_from_zero({1, 2, 3, 4}, 231), k = away_from_zero({1, 2, 5, 4}, 232), v = away_from_zero({1, 2, 5, 3}, 233);
  s.push_back({OpId::scaled_dot_product_attention, "sdpa",
               [](V in) { return scaled_dot_product_attention(in[0], in[1], in[2]); }, {q, k, v}, true});
  s.push_back({OpId::scaled_dot_product_attention, "sdpa causal, scale",
               [](V in) { return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true, 0.3); },
               {away_from_zero({2, 4, 3}, 234), away_from_zero({2, 4, 3}, 235), away_from_zero({2, 4, 2}, 236)}});
  Tensor keep = tensor({true, false, true, true, false, false, false, false, false, false, true, true, false, true, true},
                       TensorOptions(kBool))
                    .reshape({3, 5});  // row 1 masks every key out
  s.push_back({OpId::scaled_dot_product_attention, "sdpa bool mask with a fully masked row",
               [](V in) { return scaled_dot_product_attention(in[0], in[1], in[2], in[3]); }, {q, k, v, keep}});
  s.push_back({OpId::scaled_dot_product_attention, "sdpa float mask, broadcast",
               [](V in) { return scaled_dot_product_attention(in[0], in[1], in[2], in[3]); },
               {q, k, v, away_from_zero({1, 3, 5}, 237)}});
  s.push_back({OpId::scaled_dot_product_attention, "sdpa grouped-query heads",
               [](V in) { return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, false, {}, true); },
               {away_from_zero({1, 4, 2, 3}, 238), away_from_zero({1, 2, 3, 3}, 239), away_from_zero({1, 2, 3, 2}, 240)}});
  s.push_back({OpId::scaled_dot_product_attention, "sdpa broadcast batch",
               [](V in) { return scaled_dot_product_attention(in[0], in[1], in[2]); },
               {away_from_zero({2, 2, 2, 3}, 241), away_from_zero({2, 3, 3}, 242), away_from_zero({1, 3, 2}, 243)}});
}

void add_loss_samples(std::vector<GradSample>& s) {
  Tensor logits = away_from_zero({3, 4}, 251), w = positive({4}, 252);
  Tensor target = ints({1, 3, 0}, {3});
  s.push_back({OpId::cross_entropy_loss, "cross_entropy mean",
               [](V in) { return cross_entropy(in[0], in[1]); }, {logits, target}, true});
  s.push_back({OpId::cross_entropy_loss, "cross_entropy weight, ignored target, smoothing, mean",
               [](V in) { return cross_entropy(in[0], in[1], in[2], "mean", 3, 0.2); }, {logits, target, w}, true});
  s.push_back({OpId::cross_entropy_loss, "cross_entropy weight, sum",
               [](V in) { return cross_entropy(in[0], in[1], in[2], "sum"); }, {logits, target, w}});
  s.push_back({OpId::cross_entropy_loss, "cross_entropy 4-D none, ignore -100, smoothing",
               [](V in) { return cross_entropy(in[0], in[1], {}, "none", -100, 0.1); },
               {away_from_zero({2, 3, 2, 1}, 253), ints({0, 2, -100, 1}, {2, 2, 1})}});
  s.push_back({OpId::cross_entropy_loss, "cross_entropy probabilities, weight, smoothing",
               [](V in) { return cross_entropy(in[0], in[1], in[2], "mean", -100, 0.1); },
               {logits, positive({3, 4}, 254, 0.1, 1.0), w}});
  s.push_back({OpId::cross_entropy_loss, "cross_entropy probabilities, none",
               [](V in) { return cross_entropy(in[0], in[1], {}, "none"); },
               {logits, positive({3, 4}, 255, 0.1, 1.0)}});
  s.push_back({OpId::cross_entropy_loss, "cross_entropy 1-D input", [](V in) { return cross_entropy(in[0], in[1]); },
               {away_from_zero({4}, 256), scalar_tensor(2, kInt64)}});
  s.push_back({OpId::nll_loss, "nll_loss mean", [](V in) { return nll_loss(in[0], in[1]); }, {logits, target}});
  s.push_back({OpId::nll_loss, "nll_loss weight, ignored target, mean",
               [](V in) { return nll_loss(in[0], in[1], in[2], "mean", 0); }, {logits, target, w}});
  s.push_back({OpId::nll_loss, "nll_loss 3-D none", [](V in) { return nll_loss(in[0], in[1], {}, "none"); },
               {away_from_zero({2, 3, 2}, 257), ints({0, 2, 1, 1}, {2, 2})}});
  s.push_back({OpId::nll_loss, "nll_loss weight, sum", [](V in) { return nll_loss(in[0], in[1], in[2], "sum"); },
               {logits, target, w}});
  s.push_back({OpId::mse_loss, "mse_loss mean, broadcast target", [](V in) { return mse_loss(in[0], in[1]); },
               {logits, away_from_zero({4}, 258)}, true});
  s.push_back({OpId::mse_loss, "mse_loss sum", [](V in) { return mse_loss(in[0], in[1], "sum"); },
               {away_from_zero({1, 4}, 259), logits}});
  s.push_back({OpId::mse_loss, "mse_loss none", [](V in) { return mse_loss(in[0], in[1], "none"); },
               {logits, away_from_zero({3, 1}, 260)}});
}

void add_embedding_dropout_samples(std::vector<GradSample>& s) {
  Tensor table = away_from_zero({5, 3}, 261);
  Tensor idx = ints({1, 4, 1, 2, 0, 2}, {2, 3});
  s.push_back({OpId::embedding, "embedding repeated rows", [](V in) { return embedding(in[0], in[1]); },
               {table, idx}, true});
  // The padding row gets no gradient although the forward reads it (PyTorch's rule; EmbeddingPaddingRowGetsNoGradient
  // checks that), so the finite differences are taken with a padding_idx the indices do not hit.
  s.push_back({OpId::embedding, "embedding padding_idx", [](V in) { return embedding(in[0], in[1], 3); },
               {table, idx}});
  s.push_back({OpId::embedding, "embedding 0-d index", [](V in) { return embedding(in[0], in[1]); },
               {table, scalar_tensor(3, kInt64)}});
  Tensor x = away_from_zero({3, 4}, 262);
  s.push_back({OpId::dropout, "dropout training (fixed seed)",
               [](V in) {
                 manual_seed(11);
                 return dropout(in[0], 0.4, true);
               },
               {x}, true});
  s.push_back({OpId::dropout, "dropout eval", [](V in) { return dropout(in[0], 0.4, false); }, {x}});
  s.push_back({OpId::dropout, "dropout p=0", [](V in) { return dropout(in[0], 0.0, true); }, {x}});
  s.push_back({OpId::dropout, "dropout p=1", [](V in) { return dropout(in[0], 1.0, true) + in[0]; }, {x}});
}

}  // namespace

std::vector<GradSample> nn_samples() {
  std::vector<GradSample> s;
  add_matmul_samples(s);
  add_einsum_samples(s);
  add_norm_samples(s);
  add_conv_samples(s);
  add_pool_samples(s);
  add_attention_samples(s);
  add_loss_samples(s);
  add_embedding_dropout_samples(s);
  return s;
}

namespace {

TEST(NnGrad, EverySample) {
  check_samples(nn_samples());
}

TEST(NnGrad, EmbeddingPaddingRowGetsNoGradient) {
  Tensor table = away_from_zero({5, 3}, 263).requires_grad_(true);
  sum(embedding(table, ints({1, 2, 2, 0}, {4}), 2)).backward();
  Tensor expected = tensor({1.0, 1.0, 0.0, 0.0, 0.0}, kFloat64).unsqueeze(1).expand({5, 3});
  EXPECT_TRUE(equal(table.grad(), expected)) << table.grad();
}

// The derivatives that are not implemented say so when backward reaches them.
TEST(NnGrad, UnsupportedDerivativesAreErrors) {
  Tensor a = away_from_zero({3, 3}, 271).requires_grad_(true);
  EXPECT_ERROR(sum(einsum("ii->i", {a})).backward(), "einsum", "repeated subscript");
  Tensor q = away_from_zero({1, 2, 3}, 272).requires_grad_(true);
  EXPECT_ERROR(sum(scaled_dot_product_attention(q, q, q, {}, 0.5)).backward(), "dropout_p", "not implemented");
}

}  // namespace
}  // namespace sinter::testing
