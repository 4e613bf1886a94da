// nn::TransformerEncoderLayer and nn::TransformerEncoder, following torch.nn.TransformerEncoderLayer.forward
// (its slow path: the fast path is only a faster way to the same values): self-attention block and
// feed-forward block, each residual, with post-norm (the default) or pre-norm.
#include "nn/util.h"
#include "sinter/nn.h"
#include "support/check.h"

namespace sinter::nn {

// ---- TransformerEncoderLayer ----
TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model_, int64_t nhead_, int64_t dim_feedforward_,
                                                 double dropout_p, std::string activation_, double layer_norm_eps_,
                                                 bool batch_first_, bool norm_first_, bool bias_)
    : d_model(d_model_),
      nhead(nhead_),
      dim_feedforward(dim_feedforward_),
      activation(std::move(activation_)),
      layer_norm_eps(layer_norm_eps_),
      batch_first(batch_first_),
      norm_first(norm_first_),
      bias(bias_),
      self_attn(d_model_, nhead_, dropout_p, bias_, batch_first_),
      linear1(d_model_, dim_feedforward_, bias_),
      dropout(dropout_p),
      linear2(dim_feedforward_, d_model_, bias_),
      norm1(d_model_, layer_norm_eps_, true, bias_),
      norm2(d_model_, layer_norm_eps_, true, bias_),
      dropout1(dropout_p),
      dropout2(dropout_p) {
  SINTER_CHECK(activation == "relu" || activation == "gelu",
               "TransformerEncoderLayer: activation should be relu/gelu, not {}", activation);
  // PyTorch's registration order, so state_dict keys come in its order.
  register_module("self_attn", self_attn);
  register_module("linear1", linear1);
  register_module("dropout", dropout);
  register_module("linear2", linear2);
  register_module("norm1", norm1);
  register_module("norm2", norm2);
  register_module("dropout1", dropout1);
  register_module("dropout2", dropout2);
}

// The submodules are called through forward, not operator(), so that an error names the caller's line.
Tensor TransformerEncoderLayer::self_attention_block(const Tensor& x, const Tensor& mask,
                                                     const Tensor& key_padding_mask, bool is_causal) {
  Tensor out = std::get<0>(self_attn.forward(x, x, x, key_padding_mask, false, mask, is_causal));
  return dropout1.forward(out);
}

Tensor TransformerEncoderLayer::feed_forward_block(const Tensor& x) {
  Tensor h = linear1.forward(x);
  h = activation == "gelu" ? gelu(h, "none", call_site()) : relu(h, call_site());
  return dropout2.forward(linear2.forward(dropout.forward(h)));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src) { return forward(src, Tensor(), Tensor(), false); }

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask,
                                        const Tensor& src_key_padding_mask, bool is_causal) {
  const Loc at = call_site();
  Tensor x = src;
  if (norm_first) {
    // x = x + sa(norm1(x)); x = x + ff(norm2(x))
    x = add(x, self_attention_block(norm1.forward(x), src_mask, src_key_padding_mask, is_causal), 1, at);
    x = add(x, feed_forward_block(norm2.forward(x)), 1, at);
  } else {
    // x = norm1(x + sa(x)); x = norm2(x + ff(x))
    x = norm1.forward(add(x, self_attention_block(x, src_mask, src_key_padding_mask, is_causal), 1, at));
    x = norm2.forward(add(x, feed_forward_block(x), 1, at));
  }
  return x;
}

Tensor TransformerEncoderLayer::operator()(const Tensor& src, const Tensor& src_mask,
                                           const Tensor& src_key_padding_mask, bool is_causal, Loc loc) {
  CallSiteScope scope(loc);
  return forward(src, src_mask, src_key_padding_mask, is_causal);
}

// ---- TransformerEncoder ----
namespace {
// A new layer with `proto`'s construction arguments, dtype, device, weights and mode (PyTorch deep-copies it).
std::shared_ptr<TransformerEncoderLayer> copy_layer(const TransformerEncoderLayer& proto) {
  auto layer = std::make_shared<TransformerEncoderLayer>(
      proto.d_model, proto.nhead, proto.dim_feedforward, proto.dropout.p, proto.activation, proto.layer_norm_eps,
      proto.batch_first, proto.norm_first, proto.bias);
  const Tensor& w = proto.linear1.weight;
  layer->to(w.device(), w.dtype());
  layer->load_state_dict(proto.state_dict());
  layer->train(proto.is_training());
  return layer;
}
}  // namespace

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers_,
                                       std::shared_ptr<Module> norm_)
    : TransformerEncoder([&encoder_layer] { return copy_layer(encoder_layer); }, num_layers_, std::move(norm_)) {}

TransformerEncoder::TransformerEncoder(const LayerFactory& make_layer, int64_t num_layers_,
                                       std::shared_ptr<Module> norm_)
    : num_layers(num_layers_), norm(std::move(norm_)) {
  check_size(num_layers, "num_layers", "TransformerEncoder", true);
  SINTER_CHECK(make_layer != nullptr, "TransformerEncoder: make_layer is empty");
  for (int64_t i = 0; i < num_layers; ++i) {
    std::shared_ptr<TransformerEncoderLayer> layer = make_layer();
    SINTER_CHECK(layer != nullptr, "TransformerEncoder: make_layer returned no layer (for layer {})", i);
    layers.push_back(std::move(layer));
  }
  register_module("layers", layers);
  if (norm) register_module("norm", norm);
}

Tensor TransformerEncoder::forward(const Tensor& src) { return forward(src, Tensor(), Tensor(), false); }

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                   bool is_causal) {
  Tensor x = src;
  for (int64_t i = 0; i < num_layers; ++i) x = layer(i).forward(x, mask, src_key_padding_mask, is_causal);
  if (norm) x = norm->forward(x);
  return x;
}

Tensor TransformerEncoder::operator()(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                      bool is_causal, Loc loc) {
  CallSiteScope scope(loc);
  return forward(src, mask, src_key_padding_mask, is_causal);
}

}  // namespace sinter::nn
