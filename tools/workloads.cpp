#include "workloads.h"

#include <fmt/format.h>

#include <cmath>

namespace sinter::tools {

GptBlock::GptBlock(int64_t d, int64_t h)
    : heads(h), ln1(d), ln2(d), qkv(d, 3 * d), proj(d, d), fc1(d, 4 * d), fc2(4 * d, d) {
  register_module("ln1", ln1);
  register_module("qkv", qkv);
  register_module("proj", proj);
  register_module("ln2", ln2);
  register_module("fc1", fc1);
  register_module("fc2", fc2);
}

Tensor GptBlock::forward(const Tensor& x) {
  SymInt b = x.size(0), s = x.size(1), d = x.size(2);
  std::vector<Tensor> q_k_v =
      qkv(ln1(x)).view({b, s, 3, heads, d / heads}).permute({2, 0, 3, 1, 4}).unbind(0);
  Tensor a = scaled_dot_product_attention(q_k_v[0], q_k_v[1], q_k_v[2], {}, 0.0, /*is_causal=*/true);
  Tensor h = x + proj(a.transpose(1, 2).reshape({b, s, d}));
  return h + fc2(gelu(fc1(ln2(h))));
}

ResNetBlock::ResNetBlock(int64_t c)
    : conv1(c, c, 3, 1, 1, 1, 1, false), conv2(c, c, 3, 1, 1, 1, 1, false), bn1(c), bn2(c) {
  register_module("conv1", conv1);
  register_module("bn1", bn1);
  register_module("conv2", conv2);
  register_module("bn2", bn2);
}

Tensor ResNetBlock::forward(const Tensor& x) { return relu(x + bn2(conv2(relu(bn1(conv1(x)))))); }

void ResNetBlock::randomize_bn_stats() {
  for (nn::BatchNorm2d* bn : {&bn1, &bn2}) {
    int64_t c = bn->num_features;
    bn->running_mean.copy_(randn({c}) * 0.1);
    bn->running_var.copy_(rand({c}) * 0.5 + 0.75);
    bn->weight.copy_(rand({c}) * 0.5 + 0.75);
    bn->bias.copy_(randn({c}) * 0.1);
  }
}

Mlp::Mlp(int64_t d, int64_t h) : fc1(d, h), fc2(h, d) {
  register_module("fc1", fc1);
  register_module("fc2", fc2);
}

Tensor Mlp::forward(const Tensor& x) { return fc2(gelu(fc1(x))); }

Tensor pointwise_fn(const Tensor& x) { return sigmoid(x * 1.5 + 0.5) * tanh(x) + relu(x); }

Tensor ln_gelu_fn(const Tensor& x, const Tensor& r, const Tensor& weight, const Tensor& bias) {
  return gelu(layer_norm(x + r, {x.size(-1)}, weight, bias));
}

Tensor softmax_fn(const Tensor& x) { return softmax(x * 0.125, -1); }

Tensor naive_attention_fn(const Tensor& q, const Tensor& k, const Tensor& v, double scale) {
  return matmul(softmax(matmul(q, k.transpose(-2, -1)) * scale, -1), v);
}

Tensor small_ops_fn(Tensor x, const Tensor& w) {
  for (int i = 0; i < 10; ++i) {
    x = relu(x * 0.9 + 0.1);
    x = x - x.mean({-1}, /*keepdim=*/true);
    x = tanh(x) + w;
  }
  return x;
}

std::vector<int64_t> dynamic_mlp_batches() { return {1, 7, 33, 64, 100, 257, 512, 999, 2048, 3}; }

std::vector<std::string> workload_names() {
  return {"pointwise",       "ln_gelu",      "softmax",   "mlp",        "gpt_block",
          "naive_attention", "resnet_block", "small_ops", "dynamic_mlp"};
}

namespace {

std::vector<Tensor> as_list(Tensor t) { return {std::move(t)}; }
std::vector<Tensor> as_list(std::vector<Tensor> t) { return t; }

// Fills in eager and compile for fn(args...). `make` turns CompileOptions into a sinter::Compiled (of the
// function, or of a module through compile(module) so that its parameters and training flag are handled as a
// module's).
template <class Fn, class Make, class... T>
void bind(Workload& w, Fn fn, Make make, T... args) {
  w.eager = [fn, args...] { return as_list(fn(args...)); };
  w.compile = [make, args...](const CompileOptions& options) {
    auto compiled = make(options);
    return CompiledRun{[compiled, args...] { return as_list(compiled(args...)); },
                       [compiled] { return compiled.stats(); }};
  };
}

template <class Fn, class... T>
void bind_fn(Workload& w, Fn fn, T... args) {
  bind(
      w, fn, [fn](const CompileOptions& o) { return sinter::compile(fn, o); }, args...);
}

template <class M>
void bind_module(Workload& w, std::shared_ptr<M> m, const Tensor& x) {
  m->eval();
  w.owner = m;
  M* raw = m.get();
  bind(
      w, [raw](const Tensor& in) { return raw->forward(in); },
      [raw](const CompileOptions& o) { return sinter::compile(*raw, o); }, x);
}

std::string dims(std::initializer_list<int64_t> d) {
  std::string out;
  for (int64_t v : d) out += (out.empty() ? "" : "x") + std::to_string(v);
  return out;
}

}  // namespace

Workload make_workload(const std::string& name) {
  manual_seed(1234);
  Workload w;
  w.name = name;
  if (name == "pointwise") {
    int64_t n = int64_t{16} << 20;
    w.shape = fmt::format("[{}]", n);
    w.bytes = 2.0 * 4 * n;
    bind_fn(w, pointwise_fn, randn({n}));
  } else if (name == "ln_gelu") {
    int64_t n = 4096, d = 1024;
    w.shape = dims({n, d});
    w.bytes = 4.0 * (3 * n * d + 2 * d);
    Tensor weight = rand({d}) + 0.5, bias = randn({d}) * 0.1;
    bind_fn(
        w, [weight, bias](const Tensor& x, const Tensor& r) { return ln_gelu_fn(x, r, weight, bias); },
        randn({n, d}), randn({n, d}));
  } else if (name == "softmax") {
    int64_t n = 8192, d = 1024;
    w.shape = dims({n, d});
    w.bytes = 2.0 * 4 * n * d;
    bind_fn(w, softmax_fn, randn({n, d}));
  } else if (name == "mlp") {
    int64_t t = 512, d = kMlpDim, h = kMlpHidden;
    w.shape = fmt::format("T{} D{} H{}", t, d, h);
    w.flops = 2.0 * 2 * t * d * h;
    bind_module(w, std::make_shared<Mlp>(d, h), randn({t, d}));
  } else if (name == "gpt_block") {
    int64_t b = 1, s = 256, d = 768, heads = 12;
    w.shape = fmt::format("B{} S{} D{} H{}", b, s, d, heads);
    // 12 D^2 multiply-adds per token in the four linears, plus q k^T and p v over the full S x S square
    // (causal masking skips half of it; counted in full, as PyTorch's flop counter does).
    w.flops = 2.0 * 12 * b * s * d * d + 4.0 * b * s * s * d;
    bind_module(w, std::make_shared<GptBlock>(d, heads), randn({b, s, d}));
  } else if (name == "naive_attention") {
    int64_t b = 1, heads = 12, s = 256, d = 64;
    w.shape = fmt::format("B{} H{} S{} D{}", b, heads, s, d);
    w.flops = 4.0 * b * heads * s * s * d;
    double scale = 1.0 / std::sqrt(static_cast<double>(d));
    bind_fn(
        w,
        [scale](const Tensor& q, const Tensor& k, const Tensor& v) { return naive_attention_fn(q, k, v, scale); },
        randn({b, heads, s, d}), randn({b, heads, s, d}), randn({b, heads, s, d}));
  } else if (name == "resnet_block") {
    int64_t n = 8, c = 64, hw = 56;
    w.shape = fmt::format("N{} C{} {}x{} NHWC", n, c, hw, hw);
    w.flops = 2 * 2.0 * n * hw * hw * c * c * 9;
    auto block = std::make_shared<ResNetBlock>(c);
    block->randomize_bn_stats();
    bind_module(w, block, randn({n, c, hw, hw}).contiguous(kChannelsLast));
  } else if (name == "small_ops") {
    int64_t n = 64;
    w.shape = dims({n, n});
    w.bytes = 3.0 * 4 * n * n;
    bind_fn(w, small_ops_fn, randn({n, n}), randn({n, n}));
  } else {
    std::string known;
    for (const std::string& k : workload_names()) known += (known.empty() ? "" : ", ") + k;
    throw Error(fmt::format("unknown workload '{}' (known: {})", name, known));
  }
  return w;
}

}  // namespace sinter::tools
