#include "function_cases.h"

#include "sinter/nn.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter::corpus {
namespace {

using testing::random;

Ts pair(const TensorPair& p) { return {std::get<0>(p), std::get<1>(p)}; }

FunctionCase fixed(FunctionCase c) {
  c.fixed_dtypes = true;
  return c;
}

}  // namespace

std::vector<FunctionCase> inductor_cases() {
  auto mlp_inputs = [](DType dt) {
    return Ts{random({64, 128}, dt), random({512, 128}, dt, 1), random({512}, dt, 2), random({128, 512}, dt, 3),
              random({128}, dt, 4)};
  };
  auto conv_inputs = [](DType dt) {
    return Ts{random({2, 16, 9, 11}, dt).contiguous(MemoryFormat::kChannelsLast), random({24, 16, 3, 3}, dt, 1),
              random({24, 24, 3, 3}, dt, 2), random({24}, dt, 3), random({24}, dt, 4), random({24}, dt, 5),
              random({24, 16, 1, 1}, dt, 6)};
  };
  auto dw_inputs = [](DType dt) {
    return Ts{random({2, 20, 10, 13}, dt).contiguous(MemoryFormat::kChannelsLast), random({20, 1, 3, 3}, dt, 1),
              random({20}, dt, 2), random({20}, dt, 3)};
  };
  auto x678 = [](DType dt) { return Ts{random({6, 7, 8}, dt)}; };
  auto x468 = [](DType dt) { return Ts{random({4, 6, 8}, dt)}; };
  auto ints = [](DType) { return Ts{arange(0, 24, 1, TensorOptions(kInt64)).view({4, 6})}; };
  std::vector<FunctionCase> c = {
      {"pointwise chain", [](const Ts& i) {
         Tensor y = i[0];
         for (int k = 0; k < 10; ++k) y = (k % 2 ? sigmoid(y) : y * 1.1 + 0.1);
         return Ts{y};
       }, [](DType dt) { return Ts{random({1000, 37}, dt)}; }, kFloat32, 1},
      {"workload pointwise", [](const Ts& i) { return Ts{sigmoid(i[0] * 1.5 + 0.5) * tanh(i[0]) + relu(i[0])}; },
       [](DType dt) { return Ts{random({100003}, dt)}; }, kFloat32, 1},
      {"softmax", [](const Ts& i) { return Ts{softmax(i[0] * 0.125, -1)}; },
       [](DType dt) { return Ts{random({64, 1000}, dt)}; }, kFloat32, 1},
      {"layer_norm gelu", [](const Ts& i) { return Ts{gelu(layer_norm(i[0] + i[1], {256}, i[2], i[3]))}; },
       [](DType dt) {
         return Ts{random({64, 256}, dt), random({64, 256}, dt, 1), random({256}, dt, 2), random({256}, dt, 3)};
       }, kFloat32, 1},
      // Size-1 dims (batch 1) must index the row statistics the same way when they are stored and loaded.
      {"layer_norm with size-1 dims", [](const Ts& i) { return Ts{layer_norm(i[0], {96}, i[1], i[2])}; },
       [](DType dt) { return Ts{random({1, 48, 96}, dt), random({96}, dt, 2), random({96}, dt, 3)}; }, kFloat32, 1},
      {"residual layer_norm of a linear",
       [](const Ts& i) { return Ts{layer_norm(i[0] + linear(i[0], i[1], i[2]), {96}, i[3], i[2])}; },
       [](DType dt) {
         return Ts{random({64, 96}, dt), random({96, 96}, dt, 1), random({96}, dt, 2), random({96}, dt, 3)};
       }, kFloat32, 1, false, false, true},
      // qkv projection -> heads split -> permute -> unbind: the copy that materialises the permuted heads walks
      // the GEMM's elements in the GEMM's own order. GEMM(+epilogue), bmm, sum*v (and at most one copy).
      {"qkv heads of a linear", [](const Ts& i) {
         std::vector<Tensor> qkv = linear(i[0], i[1], i[2]).view({2, 16, 3, 4, 16}).permute({2, 0, 3, 1, 4}).unbind(0);
         return Ts{matmul(qkv[0], qkv[1].transpose(-2, -1)).sum(DimList{-1}, true) * qkv[2]};
       }, [](DType dt) { return Ts{random({2, 16, 64}, dt), random({192, 64}, dt, 1), random({192}, dt, 2)}; },
       kFloat32, 4, true, false, true},
      {"mlp", [](const Ts& i) { return Ts{linear(gelu(linear(i[0], i[1], i[2])), i[3], i[4])}; }, mlp_inputs,
       kFloat32, 2, false, false, true},
      // Three channels-last convs, every element-wise op in an epilogue; y's conv moves down past the shortcut's.
      {"conv block", [](const Ts& i) {
         Tensor sc = i[4].view({1, 24, 1, 1}), sh = i[5].view({1, 24, 1, 1});
         Tensor h = relu(conv2d(i[0], i[1], i[3], {1, 1}, {1, 1}) * sc + sh);
         Tensor y = conv2d(h, i[2], {}, {1, 1}, {1, 1});
         Tensor shortcut = conv2d(i[0], i[6]);
         return Ts{relu(y * sc + sh + shortcut)};
       }, conv_inputs, kFloat32, 3, false, false, true},
      {"strided conv", [](const Ts& i) { return Ts{sigmoid(conv2d(i[0], i[1], i[3], {2, 2}, {0, 1}, {1, 2}))}; },
       conv_inputs, kFloat32, 1, false, false, true},
      // Depthwise channels-last convs (one channel per group; 20 channels: a vector and a masked tail) run their
      // element-wise consumers on each finished output row: one kernel each.
      {"depthwise conv", [](const Ts& i) {
         Tensor sc = i[3].view({1, 20, 1, 1});
         return Ts{hardtanh(conv2d(i[0], i[1], i[2], {1, 1}, {1, 1}, {1, 1}, 20) * sc, 0, 6) + i[0]};
       }, dw_inputs, kFloat32, 1, false, false, true},
      {"strided depthwise conv", [](const Ts& i) {
         return Ts{sigmoid(conv2d(i[0], i[1], {}, {2, 2}, {2, 1}, {2, 1}, 20))};
       }, dw_inputs, kFloat32, 1, false, false, true},
      // A contiguous (NCHW) conv is an ordinary extern, then the relu.
      {"nchw conv", [](const Ts& i) { return Ts{relu(conv2d(i[0].contiguous(), i[1], {}, {1, 1}, {1, 1}))}; },
       conv_inputs, kFloat32, 2, false, false, true},
      // The GEMM moves down past the column sums of z, next to its epilogue relu(y + s).
      {"gemm beside a reduction", [](const Ts& i) {
         Tensor y = matmul(i[0], i[1]);
         Tensor s = exp(i[2]).sum(DimList{0});
         return Ts{relu(y + s)};
       }, [](DType dt) { return Ts{random({64, 32}, dt), random({32, 48}, dt, 1), random({80, 48}, dt, 2)}; },
       kFloat32, 2, false, false, true},
      {"small ops", [](const Ts& i) {
         Tensor x = i[0];
         for (int k = 0; k < 10; ++k) {
           x = relu(x * 0.9 + 0.1);
           x = x - x.mean(-1, true);
           x = tanh(x) + i[1];
         }
         return Ts{x};
       }, [](DType dt) { return Ts{random({64, 64}, dt), random({64, 64}, dt, 1)}; }, kFloat32, 10, true},
      {"sum all", [](const Ts& i) { return Ts{i[0].sum()}; }, x678},
      {"sum dim 0", [](const Ts& i) { return Ts{sum(i[0], DimList{0})}; }, x678},
      {"sum dim 1 keepdim", [](const Ts& i) { return Ts{sum(i[0], DimList{1}, true)}; }, x678},
      {"amax dims 0,2", [](const Ts& i) { return Ts{amax(i[0], DimList{0, 2})}; }, x678},
      {"amin keepdim + x", [](const Ts& i) { return Ts{amin(i[0], DimList{2}, true) + i[0]}; }, x678},
      {"mean dim -1", [](const Ts& i) { return Ts{mean(i[0], DimList{-1}) * 2}; }, x678},
      {"permute contiguous", [](const Ts& i) { return Ts{(i[0].permute({2, 0, 1}) * 2).contiguous()}; }, x468},
      {"transpose", [](const Ts& i) { return Ts{i[0].transpose(0, 2) + 1}; }, x468},
      {"view split", [](const Ts& i) { return Ts{i[0].view({4, 2, 3, 8}).sum(DimList{2})}; }, x468},
      {"select * narrow", [](const Ts& i) { return Ts{i[0].select(1, 2) * i[0].narrow(1, 1, 1).squeeze(1)}; }, x468},
      {"unsqueeze expand", [](const Ts& i) { return Ts{exp(i[0]).unsqueeze(0).expand({3, 4, 6, 8}) + 1}; }, x468},
      // The inner view (select at storage offset 45) is stored, and the outer one (narrow at offset 55) must
      // index that buffer from its own start (offset 10), not from the graph's storage.
      {"view of a stored view", [](const Ts& i) {
         Tensor xw = add(matmul(i[0], i[1].t()), i[2]);
         return Ts{mul(narrow(select(xw, 0, 1), -1, 10, 5), i[3]) + sigmoid(narrow(select(xw, 0, 0), -1, 5, 5))};
       }, [](DType dt) { return Ts{random({2, 3, 3}, dt), random({15, 3}, dt), random({15}, dt), random({3, 5}, dt)}; },
       kFloat32, -1, false, false, true},
      {"non-contiguous and broadcast inputs", [](const Ts& i) { return Ts{i[0] * i[1] - i[1].sigmoid()}; },
       [](DType dt) { return Ts{testing::non_contiguous(random({16, 9}, dt)), random({9}, dt)}; }},
      {"bf16 gelu", [](const Ts& i) { return Ts{gelu(i[0] * i[1] + 1.5)}; },
       [](DType dt) { return Ts{random({32, 64}, dt), random({64}, dt, 1)}; }, kBFloat16},
      {"bf16 softmax", [](const Ts& i) { return Ts{softmax(i[0], -1)}; },
       [](DType dt) { return Ts{random({32, 64}, dt)}; }, kBFloat16},
      fixed({"int remainder", [](const Ts& i) { return Ts{remainder(i[0] * 3 + 1, 5)}; }, ints}),
      fixed({"int where", [](const Ts& i) { return Ts{where(i[0] > 7, i[0], i[0] * 2)}; }, ints}),
      fixed({"int sum", [](const Ts& i) { return Ts{i[0].sum()}; }, ints}),
      {"conv extern", [](const Ts& i) { return Ts{relu(conv2d(i[0], i[1]) + 1)}; },
       [](DType dt) { return Ts{random({2, 3, 8, 8}, dt), random({4, 3, 3, 3}, dt, 1)}; }, kFloat32, -1, false,
       false, true},
      {"cat extern", [](const Ts& i) { return Ts{cat({i[0] * 2, i[0] + 1}, 1)}; },
       [](DType dt) { return Ts{random({2, 3, 8, 8}, dt)}; }},
  };
  return c;
}

std::vector<FunctionCase> capture_cases() {
  auto one = [](SymIntList sizes) { return [sizes](DType dt) { return Ts{random(sizes, dt, 1)}; }; };
  auto two = [](SymIntList a, SymIntList b) {
    return [a, b](DType dt) { return Ts{random(a, dt, 1), random(b, dt, 2)}; };
  };
  return {
      // views
      {"view permute contiguous chain",
       [](const Ts& i) { return Ts{i[0].view({4, 6}).permute({1, 0}).contiguous().view({-1}) * 2}; }, one({2, 2, 6})},
      {"transpose then matmul", [](const Ts& i) { return Ts{matmul(i[0].t(), i[1])}; }, two({5, 3}, {5, 4}),
       kFloat32, -1, false, false, true},
      {"slice narrow select", [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{x.slice(0, 1, 5, 2) + x.narrow(0, 0, 2) * x.select(1, 3).narrow(0, 0, 2).unsqueeze(1)};
       }, one({6, 4})},
      {"unsqueeze squeeze expand",
       [](const Ts& i) { return Ts{i[0].unsqueeze(0).expand({3, 4, 5}).sum({0}) + i[0].squeeze()}; }, one({4, 5})},
      {"split chunk cat", [](const Ts& i) {
         std::vector<Tensor> parts = i[0].chunk(3, 1);
         std::vector<Tensor> halves = i[0].split(2, 0);
         return Ts{cat({parts[2], parts[0]}, 1), halves[1].relu()};
       }, one({4, 9})},
      {"unbind and stack", [](const Ts& i) { return Ts{stack(i[0].unbind(1), 0).exp()}; }, one({3, 4})},
      {"flatten unflatten", [](const Ts& i) { return Ts{i[0].flatten(1).unflatten(1, {3, 4}).sum({2})}; },
       one({2, 3, 4})},
      {"sigmoid of a transpose", [](const Ts& i) { return Ts{i[0].sigmoid() + 1}; },
       [](DType dt) { return Ts{random({8, 6}, dt, 1).t()}; }},
      {"square of a stepped slice", [](const Ts& i) { return Ts{i[0] * i[0]}; },
       [](DType dt) { return Ts{random({8, 6}, dt, 1).slice(0, 0, 8, 2)}; }},
      // reductions
      {"sum mean keepdim", [](const Ts& i) { return Ts{i[0].sum({0, 2}, true) + i[0].mean({1}, true).sum()}; },
       one({3, 4, 5})},
      {"amax amin argmax argmin",
       [](const Ts& i) { return Ts{i[0].amax({1}), i[0].amin({0}), i[0].argmax(1), argmin(i[0])}; }, one({4, 6})},
      {"max dim keepdim", [](const Ts& i) { return pair(max(i[0], 1, true)); }, one({5, 3})},
      {"var std logsumexp",
       [](const Ts& i) { return Ts{i[0].var({1}), i[0].std({0}, true, 0), logsumexp(i[0], {1})}; }, one({4, 7})},
      {"cumsum norm", [](const Ts& i) { return Ts{cumsum(i[0], 1), norm(i[0])}; }, one({3, 5})},
      fixed({"int32 prod", [](const Ts& i) { return Ts{prod(i[0])}; },
             [](DType) { return Ts{random({5}, kInt32, 2)}; }}),
      {"all any of comparisons",
       [](const Ts& i) { return Ts{all(i[0] > -5), any(i[0] > 1), any(i[0] >= 0, {1})}; }, one({4, 5})},
      {"topk", [](const Ts& i) { return pair(topk(i[0], 3)); }, one({4, 8})},
      {"sort descending", [](const Ts& i) { return pair(sort(i[0], 0, true)); },
       [](DType dt) { return Ts{random({6, 2}, dt, 2)}; }},
      // pointwise and dtypes
      {"unary chain", [](const Ts& i) { return Ts{tanh(log1p(exp(i[0]).abs())).sigmoid() - sin(i[0])}; },
       one({17})},
      {"weak scalars", [](const Ts& i) { return Ts{i[0] * 1.5 + 2}; }, one({8}), kBFloat16},
      fixed({"int64 weak scalars", [](const Ts& i) { return Ts{(i[0] * 1.5) / 3}; },
             [](DType) { return Ts{random({8}, kInt64, 2)}; }}),
      {"where clamp masked_fill",
       [](const Ts& i) { return Ts{where(i[0] > i[1], i[0], i[1]).clamp(-0.5, 0.5).masked_fill(i[0] < -1, 7.0)}; },
       two({5, 5}, {5, 5})},
      fixed({"int float promotion", [](const Ts& i) { return Ts{i[0] + i[1]}; },
             [](DType) { return Ts{random({6}, kInt32, 1), random({6}, kFloat64, 2)}; }}),
      {"gelu softmax chain", [](const Ts& i) { return Ts{gelu(i[0] * i[0] + 1).softmax(-1)}; }, one({3, 8}),
       kBFloat16},
      {"sqrt rsqrt", [](const Ts& i) { return Ts{i[0].sqrt().rsqrt()}; },
       [](DType dt) { return Ts{testing::random_positive({9}, dt)}; }, kFloat16},
      fixed({"integer arithmetic",
             [](const Ts& i) { return Ts{remainder(i[0], i[1]), floor_divide(i[0], i[1]), remainder(i[0], 3)}; },
             [](DType) {
               return Ts{random({7}, kInt64, 1), testing::random_positive({7}, kFloat32, 1, 5).to(kInt64)};
             }}),
      fixed({"logical and bitwise", [](const Ts& i) { return Ts{logical_and(i[0] > 0, i[1] > 0), i[0] & i[1], ~i[0]}; },
             [](DType) { return Ts{random({6}, kInt32, 1), random({6}, kInt32, 2)}; }}),
      {"pow variants", [](const Ts& i) { return Ts{i[0].pow(2) + pow(i[0].abs(), 0.5) + pow(2.0, i[0])}; },
       one({10})},
      // reordering
      {"pad tril triu roll flip", [](const Ts& i) {
         const Tensor& x = i[0];
         return Ts{pad(x, {1, 2}), tril(x, -1) + triu(x), roll(x, {1}, {0}), x.flip({1})};
       }, one({4, 4})},
      {"three outputs and an unused input", [](const Ts& i) { return Ts{i[0] + i[1], i[0] - i[1], i[0] * i[1]}; },
       [](DType dt) { return Ts{random({3}, dt, 1), random({3}, dt, 2), random({3}, dt, 3)}; }},
      {"empty sum", [](const Ts& i) { return Ts{i[0].sum({0}) + 1}; }, one({0, 3})},
      {"zero-dim", [](const Ts& i) { return Ts{i[0] * i[0] + 2}; },
       [](DType dt) { return Ts{scalar_tensor(1.5, dt)}; }},
  };
}

std::vector<BreakCase> break_cases() {
  auto seeded = [](SymIntList sizes) {
    return [sizes](DType dt, uint64_t i) { return Ts{random(sizes, dt, i + 1)}; };
  };
  return {
      {"item fed back", [](const Ts& i) {
         double s = i[0].sum().item<double>();
         return Ts{(i[0] * s - s) / (s + 1.5)};
       }, seeded({4, 3}), 3},
      {"branch on data", [](const Ts& i) {
         Tensor y = i[0] * 2;
         if (bool(y.sum() > 0)) return Ts{y.relu() + 1};
         return Ts{y.neg().exp()};
       }, seeded({5}), 4},
      {"host values in pow clamp where masked_fill", [](const Ts& i) {
         const Tensor& x = i[0];
         double m = x.abs().max().item<double>();
         Tensor y = pow(x.abs() + 1, m).clamp(-m, m) + pow(x, 2.0);
         return Ts{where(x > 0, y, m).masked_fill(x < -m / 2, m / 3) / m};
       }, seeded({7}), 3},
  };
}

std::vector<SizedCase> dynamic_cases() {
  return {
      {"softmax + row sums", [](const Ts& i) { return Ts{softmax(i[0] * 2, -1) + i[0].sum(DimList{1}, true)}; },
       [](DType dt, int64_t n) { return Ts{random({n, n + 3}, dt)}; }, {3, 17, 64, 5}},
      {"reshape with size arithmetic",
       [](const Ts& i) { return Ts{i[0].reshape({i[0].size(0) * i[0].size(1), -1}).mean({1})}; },
       [](DType dt, int64_t n) { return Ts{random({n, 4, 5}, dt, static_cast<uint64_t>(n))}; }, {3, 7, 9}},
      {"softmax + layer_norm * sum",
       [](const Ts& i) { return Ts{softmax(i[0] * 2, -1) + layer_norm(i[0], {24}, i[1]) * i[0].sum()}; },
       [](DType dt, int64_t m) { return Ts{random({m, 24}, dt, static_cast<uint64_t>(m)), random({24}, dt, 9)}; },
       {4, 7, 30, 5}},
  };
}

}  // namespace sinter::corpus
