// nn::MultiheadAttention, following torch.nn.functional.multi_head_attention_forward step by step: packed
// input projection, masks made additive and merged, heads split, scaled_dot_product_attention (or, when the
// weights are wanted, the explicit softmax(q k^T / sqrt(d) + mask) v), heads merged, output projection.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "nn/util.h"
#include "sinter/nn.h"
#include "support/check.h"

namespace sinter::nn {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A bool mask (true = masked out) becomes an additive float mask of `dtype` (the query's).
Tensor additive_mask(const Tensor& mask, const char* what, DType dtype, const Loc& at) {
  if (!mask.defined()) return mask;
  SINTER_CHECK_AT(at, mask.dtype() == kBool || mask.is_floating_point(),
                  "MultiheadAttention: only bool and floating types of {} are supported, got {}", what,
                  dtype_name(mask.dtype()));
  // A float mask takes the query's dtype, so adding it neither promotes the scores nor trips attention's check.
  if (mask.dtype() != kBool) return mask.to(dtype);
  return masked_fill(zeros(mask.sizes(), TensorOptions(dtype).device(mask.device())), mask, kNegInf);
}

std::string shape_str(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

}  // namespace

MultiheadAttention::MultiheadAttention(int64_t embed, int64_t heads, double dropout_, bool has_bias,
                                       bool first, std::optional<int64_t> kdim_, std::optional<int64_t> vdim_)
    : embed_dim(embed),
      num_heads(heads),
      head_dim(0),
      kdim(kdim_.value_or(embed)),
      vdim(vdim_.value_or(embed)),
      dropout(dropout_),
      batch_first(first),
      out_proj(embed, embed, has_bias) {
  check_size(embed, "embed_dim", "MultiheadAttention");
  check_size(heads, "num_heads", "MultiheadAttention");
  SINTER_CHECK(embed % heads == 0, "MultiheadAttention: embed_dim ({}) must be divisible by num_heads ({})",
               embed, heads);
  SINTER_CHECK(dropout >= 0 && dropout <= 1, "MultiheadAttention: dropout must be between 0 and 1, got {}",
               dropout);
  check_size(kdim, "kdim", "MultiheadAttention");
  check_size(vdim, "vdim", "MultiheadAttention");
  head_dim = embed / heads;
  // Registration order is PyTorch's, so state_dict keys come in its order.
  if (same_embed_dims()) {
    in_proj_weight = empty({3 * embed, embed});
    register_parameter("in_proj_weight", &in_proj_weight);
    init::xavier_uniform_(in_proj_weight);
  } else {
    q_proj_weight = empty({embed, embed});
    register_parameter("q_proj_weight", &q_proj_weight);
    k_proj_weight = empty({embed, kdim});
    register_parameter("k_proj_weight", &k_proj_weight);
    v_proj_weight = empty({embed, vdim});
    register_parameter("v_proj_weight", &v_proj_weight);
    for (Tensor* w : {&q_proj_weight, &k_proj_weight, &v_proj_weight}) init::xavier_uniform_(*w);
  }
  in_proj_bias = has_bias ? zeros({3 * embed}) : Tensor();
  register_parameter("in_proj_bias", &in_proj_bias);
  register_module("out_proj", out_proj);
  if (out_proj.bias.defined()) init::zeros_(out_proj.bias);
}

std::tuple<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                       const Tensor& value, const Tensor& key_padding_mask,
                                                       bool need_weights, const Tensor& attn_mask,
                                                       bool is_causal, bool average_attn_weights) {
  const Loc at = call_site();
  const int64_t qdim = query.dim();
  SINTER_CHECK_AT(
      at, qdim == 2 || qdim == 3,
      "MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received {}-D query tensor",
      qdim);
  SINTER_CHECK_AT(
      at, key.dim() == qdim && value.dim() == qdim,
      "MultiheadAttention: for {}-D query, expected key and value to be {}-D but found {}-D and {}-D tensors",
      qdim, qdim, key.dim(), value.dim());
  const bool batched = qdim == 3;
  // Work in (L, N, E); unbatched inputs get N = 1.
  Tensor q = query, k = key, v = value, kpm = key_padding_mask;
  if (batched && batch_first) {
    q = q.transpose(1, 0), k = k.transpose(1, 0), v = v.transpose(1, 0);
  } else if (!batched) {
    q = q.unsqueeze(1), k = k.unsqueeze(1), v = v.unsqueeze(1);
    if (kpm.defined()) kpm = kpm.unsqueeze(0);
  }
  const int64_t L = q.sizes()[0].guard_int(), N = q.sizes()[1].guard_int(), E = q.sizes()[2].guard_int();
  const int64_t S = k.sizes()[0].guard_int(), H = num_heads;
  SINTER_CHECK_AT(at, E == embed_dim,
                  "MultiheadAttention: was expecting embedding dimension of {}, but got {}", embed_dim, E);
  SINTER_CHECK_AT(at, k.sizes()[0] == v.sizes()[0] && k.sizes()[1] == v.sizes()[1],
                  "MultiheadAttention: key's sequence and batch dims {} do not match value's {}", key.sizes().str(),
                  value.sizes().str());
  SINTER_CHECK_AT(
      at, k.sizes()[1] == N && k.sizes()[2] == kdim,
      "MultiheadAttention: key of shape {} does not fit query of shape {} (batch {}, key embedding {})",
      key.sizes().str(), query.sizes().str(), N, kdim);
  SINTER_CHECK_AT(at, v.sizes()[2] == vdim,
                  "MultiheadAttention: value of shape {} does not have the value embedding {}", value.sizes().str(),
                  vdim);

  // Masks: is_causal is only a hint about attn_mask, as in PyTorch.
  SINTER_CHECK_AT(
      at, !is_causal || attn_mask.defined(),
      "MultiheadAttention: need attn_mask if specifying the is_causal hint (generate_square_subsequent_mask "
      "makes one)");
  Tensor mask;
  bool sdpa_causal = false;
  if (is_causal && !kpm.defined() && !need_weights) {
    sdpa_causal = true;  // the mask is causal, and nothing else needs merging into it
  } else {
    mask = additive_mask(attn_mask, "attn_mask", q.dtype(), at);
    if (mask.defined()) {
      std::vector<int64_t> shape = mask.sizes().hints();
      if (mask.dim() == 2) {
        SINTER_CHECK_AT(at, shape == std::vector<int64_t>({L, S}),
                        "The shape of the 2D attn_mask is {}, but should be {}.", shape_str(shape),
                        shape_str({L, S}));
        mask = mask.unsqueeze(0);
      } else {
        SINTER_CHECK_AT(at, mask.dim() == 3, "attn_mask's dimension {} is not supported", mask.dim());
        SINTER_CHECK_AT(at, shape == std::vector<int64_t>({N * H, L, S}),
                        "The shape of the 3D attn_mask is {}, but should be {}.", shape_str(shape),
                        shape_str({N * H, L, S}));
      }
    }
  }
  if (kpm.defined()) {
    kpm = additive_mask(kpm, "key_padding_mask", q.dtype(), at);
    SINTER_CHECK_AT(at, kpm.sizes().hints() == std::vector<int64_t>({N, S}),
                    "expecting key_padding_mask shape of {}, but got {}", shape_str({N, S}),
                    key_padding_mask.sizes().str());
    kpm = kpm.view({N, 1, 1, S}).expand({N, H, 1, S}).reshape({N * H, 1, S});
    mask = mask.defined() ? mask + kpm : kpm;
  }

  // Input projections: one GEMM for self-attention, three otherwise (the same values either way).
  Tensor qp, kp, vp;
  if (same_embed_dims() && query.is_same(key) && key.is_same(value)) {
    auto parts = linear(q, in_proj_weight, in_proj_bias, at).chunk(3, -1);
    qp = parts[0], kp = parts[1], vp = parts[2];
  } else {
    std::vector<Tensor> w = same_embed_dims() ? in_proj_weight.chunk(3, 0)
                                              : std::vector<Tensor>{q_proj_weight, k_proj_weight, v_proj_weight};
    std::vector<Tensor> b(3);
    if (in_proj_bias.defined()) b = in_proj_bias.chunk(3, 0);
    qp = linear(q, w[0], b[0], at), kp = linear(k, w[1], b[1], at), vp = linear(v, w[2], b[2], at);
  }
  // (L, N, E) -> (N * H, L, head_dim)
  qp = qp.reshape({L, N * H, head_dim}).transpose(0, 1);
  kp = kp.reshape({S, N * H, head_dim}).transpose(0, 1);
  vp = vp.reshape({S, N * H, head_dim}).transpose(0, 1);
  const double p = is_training() ? dropout : 0.0;

  Tensor out, weights;
  if (!need_weights) {
    if (mask.defined()) mask = mask.sizes()[0] == 1 ? mask.unsqueeze(0) : mask.view({N, H, -1, S});
    out =
        scaled_dot_product_attention(qp.reshape({N, H, L, head_dim}), kp.reshape({N, H, S, head_dim}),
                                     vp.reshape({N, H, S, head_dim}), mask, p, sdpa_causal, std::nullopt, false, at);
    out = out.permute({2, 0, 1, 3}).reshape({L * N, E});  // (L, N, H, head_dim) rows
  } else {
    Tensor scores = matmul(qp * (1.0 / std::sqrt(static_cast<double>(head_dim))), kp.transpose(-2, -1));
    if (mask.defined()) scores = scores + mask;
    weights = softmax(scores, -1);
    if (p > 0) weights = sinter::dropout(weights, p, true);
    out = matmul(weights, vp).transpose(0, 1).reshape({L * N, E});
    weights = weights.view({N, H, L, S});
    if (average_attn_weights) weights = weights.mean(DimList{1});
    if (!batched) weights = weights.squeeze(DimList{0});
  }
  out = linear(out, out_proj.weight, out_proj.bias, at).view({L, N, E});
  if (batched && batch_first) out = out.transpose(1, 0);
  if (!batched) out = out.squeeze(DimList{1});
  return {out, weights};
}

std::tuple<Tensor, Tensor> MultiheadAttention::operator()(const Tensor& query, const Tensor& key,
                                                          const Tensor& value, const Tensor& key_padding_mask,
                                                          bool need_weights, const Tensor& attn_mask,
                                                          bool is_causal, bool average_attn_weights,
                                                          Loc loc) {
  CallSiteScope scope(loc);
  return forward(query, key, value, key_padding_mask, need_weights, attn_mask, is_causal,
                 average_attn_weights);
}

Tensor generate_square_subsequent_mask(int64_t sz, const TensorOptions& options) {
  check_size(sz, "sz", "generate_square_subsequent_mask", true);
  return triu(full({sz, sz}, kNegInf, options), 1);
}

}  // namespace sinter::nn
