// The benchmark workloads of bench/WORKLOADS.md (CPU shapes) and the built-in models they use, shared by
// `sinter bench --device cpu` and `sinter demo`. bench/vs_torch.py defines the same functions in PyTorch; a
// change here must be made there too, or the ratios it prints compare different things.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "sinter/compile.h"
#include "sinter/sinter.h"

namespace sinter::tools {

// Pre-LN transformer block: x + proj(causal_sdpa(qkv(ln1(x)))), then x + fc2(gelu(fc1(ln2(x)))).
struct GptBlock : nn::Module {
  int64_t heads;
  nn::LayerNorm ln1, ln2;
  nn::Linear qkv, proj, fc1, fc2;
  GptBlock(int64_t d, int64_t h);
  Tensor forward(const Tensor& x) override;
};

// relu(x + bn2(conv3x3(relu(bn1(conv3x3(x)))))), bias-free convolutions as in torchvision's BasicBlock.
struct ResNetBlock : nn::Module {
  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d bn1, bn2;
  explicit ResNetBlock(int64_t c);
  Tensor forward(const Tensor& x) override;
  void randomize_bn_stats();  // eval with running mean 0 / var 1 would hide the normalisation's arithmetic
};

// Linear(D, H) -> GELU -> Linear(H, D).
struct Mlp : nn::Module {
  nn::Linear fc1, fc2;
  Mlp(int64_t d, int64_t h);
  Tensor forward(const Tensor& x) override;
};

// The functions of the workloads that are not modules (bench/WORKLOADS.md's definitions), shared by the CPU
// bench (make_workload) and the GPU one (tools/bench_cuda.cpp), which call them at their own shapes and dtypes.
Tensor pointwise_fn(const Tensor& x);                                                     // pointwise
Tensor ln_gelu_fn(const Tensor& x, const Tensor& r, const Tensor& weight, const Tensor& bias);  // ln_gelu
Tensor softmax_fn(const Tensor& x);                                                       // softmax
// naive_attention: softmax(q @ k^T * scale, -1) @ v, scale = head_dim ** -0.5 (a constant of the graph).
Tensor naive_attention_fn(const Tensor& q, const Tensor& k, const Tensor& v, double scale);
Tensor small_ops_fn(Tensor x, const Tensor& w);                                           // small_ops

// A workload compiled with some options: one call on its inputs, and the compiled function's statistics.
struct CompiledRun {
  std::function<std::vector<Tensor>()> call;
  std::function<CompileStats()> stats;
};

struct Workload {
  std::string name;
  std::string dtype = "f32";
  std::string shape;  // a short description for the table
  double bytes = 0;   // minimum bytes moved (each input read once, each output written once); 0: not reported
  double flops = 0;   // floating-point operations per call; 0: not reported
  std::function<std::vector<Tensor>()> eager;
  std::function<CompiledRun(const CompileOptions&)> compile;
  std::shared_ptr<void> owner;  // keeps the modules alive as long as the closures above
};

// CompileStats::kernels_per_call is being added with the inductor backend; read it only where it exists, so
// this file builds before and after.
template <class S>
std::optional<double> kernels_per_call(const S& s) {
  if constexpr (requires { s.kernels_per_call; }) {
    using K = std::decay_t<decltype(s.kernels_per_call)>;
    if constexpr (std::is_arithmetic_v<K>)
      return static_cast<double>(s.kernels_per_call);
    else if constexpr (requires { s.kernels_per_call.has_value(); }) {
      if (s.kernels_per_call.has_value()) return static_cast<double>(*s.kernels_per_call);
    }
  }
  return std::nullopt;
}

// dynamic_mlp's model and batch sizes (WORKLOADS.md): one compiled function called on each size in turn.
constexpr int64_t kMlpDim = 1024, kMlpHidden = 4096;
std::vector<int64_t> dynamic_mlp_batches();

// The workload names in WORKLOADS.md's order; dynamic_mlp, which is not a single call, is the last.
std::vector<std::string> workload_names();
// Builds a workload with fresh random inputs (seeded, so every process makes the same ones). dynamic_mlp is
// not made here (bench_workloads.cpp drives it); an unknown name throws Error listing the known ones.
Workload make_workload(const std::string& name);

}  // namespace sinter::tools
