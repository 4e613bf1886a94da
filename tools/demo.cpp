// `sinter demo`: runs the built-in models eagerly (a GPT-style transformer block and a small ResNet-style CNN),
// checks them against a float64 run of the same weights, and prints what ran and how long it took.
#include <fmt/format.h>

#include <cmath>

#include "bench_util.h"
#include "sinter/sinter.h"
#include "tools.h"

namespace sinter::tools {
namespace {

// Pre-LN transformer block: x + proj(causal_sdpa(qkv(ln1(x)))), then x + fc2(gelu(fc1(ln2(x)))).
struct GptBlock : nn::Module {
  int64_t heads;
  nn::LayerNorm ln1, ln2;
  nn::Linear qkv, proj, fc1, fc2;
  GptBlock(int64_t d, int64_t h)
      : heads(h), ln1(d), ln2(d), qkv(d, 3 * d), proj(d, d), fc1(d, 4 * d), fc2(4 * d, d) {
    register_module("ln1", ln1);
    register_module("qkv", qkv);
    register_module("proj", proj);
    register_module("ln2", ln2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override {
    int64_t b = x.size(0), s = x.size(1), d = x.size(2);
    std::vector<Tensor> q_k_v = qkv(ln1(x)).view({b, s, 3, heads, d / heads}).permute({2, 0, 3, 1, 4}).unbind(0);
    Tensor a = scaled_dot_product_attention(q_k_v[0], q_k_v[1], q_k_v[2], {}, 0.0, /*is_causal=*/true);
    Tensor h = x + proj(a.transpose(1, 2).reshape({b, s, d}));
    return h + fc2(gelu(fc1(ln2(h))));
  }
};

// relu(x + bn2(conv3x3(relu(bn1(conv3x3(x)))))), then a pooled classifier head.
struct ResNetBlock : nn::Module {
  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d bn1, bn2;
  nn::Linear head;
  explicit ResNetBlock(int64_t c)
      : conv1(c, c, 3, 1, 1, 1, 1, false), conv2(c, c, 3, 1, 1, 1, 1, false), bn1(c), bn2(c), head(c, 10) {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    register_module("head", head);
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = relu(x + bn2(conv2(relu(bn1(conv1(x))))));
    return head(adaptive_avg_pool2d(y, {1, 1}).flatten(1));
  }
};

// Runs the model in float32 and in float64 (same weights) and reports time and the relative difference.
template <class M>
void run(const std::string& name, M& model, const Tensor& x, const std::string& what) {
  model.eval();
  Tensor y = model(x);
  double ms = time_ms([&] { (void)model(x); }, 10, 2);
  model.to(kFloat64);
  Tensor ref = model(x.to(kFloat64));
  model.to(kFloat32);
  double err = norm(y.to(kFloat64) - ref).item<double>() / norm(ref).item<double>();
  int64_t params = 0;
  for (const Tensor& p : model.parameters()) params += p.numel().hint();
  fmt::print("{}\n  {}\n  input {} -> output {}, {} parameters\n  eager: {:.3f} ms per call ({} threads), "
             "relative error vs float64: {:.2e}\n\n",
             name, what, x.sizes().str(), y.sizes().str(), params, ms, get_num_threads(), err);
}

}  // namespace

int demo() {
  manual_seed(0);
  fmt::print("sinter demo: built-in models, run eagerly on the CPU\n\n");
  GptBlock block(256, 8);
  run("GPT block", block, randn({2, 128, 256}),
      "pre-LN: x + proj(causal_sdpa(qkv(ln1(x)))); x + fc2(gelu(fc1(ln2(x)))), D 256, 8 heads");
  ResNetBlock cnn(32);
  run("ResNet block", cnn, randn({4, 32, 28, 28}),
      "relu(x + bn2(conv3x3(relu(bn1(conv3x3(x)))))) -> avgpool -> linear, C 32, 28x28");
  fmt::print("compiling (sinter::compile) comes with the capture and inductor stages.\n");
  return 0;
}

}  // namespace sinter::tools
