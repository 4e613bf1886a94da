#include "inductor_ops_cases.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/backends.h"
#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "testing.h"

namespace sinter::inductor_ops {

Probe::Probe() {
  auto l = launches;
  auto g = graphs;
  register_backend(kProbeBackend, [l, g](const Graph& graph, const std::vector<Tensor>&) -> CompiledGraph {
    CompileContext ctx = CompileContext::for_graph(graph);
    auto program = ctx.target.kind == TargetKind::kCuda ? backends::compile_for_cuda(graph, ctx)
                                                        : backends::compile_for_cpu(graph, ctx);
    *l = program->launches();
    ++*g;
    return [program](const std::vector<Tensor>& inputs) { return program->run(inputs); };
  }, {.replace = true});
}

std::vector<Tensor> run_all(const std::vector<Case>& cases, const Inputs& in) {
  std::vector<Tensor> out;
  for (const Case& c : cases) out.push_back(c.fn(in));
  return out;
}

void compare(const std::vector<Case>& cases, const std::vector<Tensor>& got, const std::vector<Tensor>& want,
             double rtol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(dtype_name(got[i].dtype()), dtype_name(want[i].dtype())) << cases[i].name;
    EXPECT_TRUE(testing::close(got[i], want[i], rtol)) << cases[i].name;
  }
}

int check_cases(const std::vector<Case>& cases, const Inputs& cpu_in, double rtol, Device device) {
  Probe probe;
  auto all = [&cases](const std::vector<Tensor>& x) { return run_all(cases, x); };
  std::vector<Tensor> want = all(cpu_in);
  Inputs in = cpu_in;
  for (Tensor& t : in) t = t.to(device);
  std::vector<Tensor> got;
  try {
    got = compile(all, {.backend = kProbeBackend})(in);
    for (Tensor& t : got) t = t.to(kCPU);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the table failed as one graph: " << std::string(e.what()).substr(0, 3000);
    for (const Case& c : cases) {  // name the op(s) that fail on their own
      try {
        auto one = [&c](const std::vector<Tensor>& x) { return c.fn(x); };
        compile(one, {.backend = kProbeBackend})(in);
      } catch (const std::exception& e1) {
        ADD_FAILURE() << c.name << ": " << std::string(e1.what()).substr(0, 3000);
      }
    }
    return -1;
  }
  compare(cases, got, want, rtol);
  return *probe.launches;
}

// A fused kernel keeps f16/bf16 intermediates in float (by design), so floor(x * 3) may differ from eager's
// floor(round_to_f16(x * 3)) by one: the discontinuous ops' inputs are computed eagerly.
Inputs float_inputs(const SymIntList& shape, DType dt, const SymIntList& y_shape) {
  Tensor u = testing::random_positive(shape, kFloat64, 0.1, 1.9, 7) - 1.0;
  Tensor x = testing::random(shape, dt, 1);
  return {x, testing::random_positive(shape, dt, 0.1, 4.0, 2), u.to(dt),
          testing::random(y_shape.empty() ? shape : y_shape, dt, 3), x * 3, floor(x * 8) * 0.5, exp(x * 100)};
}

// [0, 10) for uint8.
Inputs int_inputs(const SymIntList& shape, DType dt, const SymIntList& b_shape) {
  Tensor a = testing::random(shape, dt, 4);
  Tensor b = testing::random(b_shape.empty() ? shape : b_shape, dt, 5);
  b = where(b == 0, scalar_tensor(3, dt), b);
  Tensor e = remainder(testing::random(shape, kInt64, 6), 4).to(dt);
  return {a, b, e};
}

std::vector<Case> unary_float_cases() {
  return {
      {"abs", [](const Inputs& i) { return abs(i[0]); }},
      {"neg", [](const Inputs& i) { return neg(i[0]); }},
      {"sign", [](const Inputs& i) { return sign(i[0]); }},
      {"sqrt", [](const Inputs& i) { return sqrt(i[1]); }},
      {"rsqrt", [](const Inputs& i) { return rsqrt(i[1]); }},
      {"exp", [](const Inputs& i) { return exp(i[0]); }},
      {"exp2", [](const Inputs& i) { return exp2(i[0]); }},
      {"expm1", [](const Inputs& i) { return expm1(i[0]); }},
      {"log", [](const Inputs& i) { return log(i[1]); }},
      {"log2", [](const Inputs& i) { return log2(i[1]); }},
      {"log10", [](const Inputs& i) { return log10(i[1]); }},
      {"log1p", [](const Inputs& i) { return log1p(i[1]); }},
      {"sin", [](const Inputs& i) { return sin(i[0]); }},
      {"cos", [](const Inputs& i) { return cos(i[0]); }},
      {"tan", [](const Inputs& i) { return tan(i[2]); }},
      {"asin", [](const Inputs& i) { return asin(i[2]); }},
      {"acos", [](const Inputs& i) { return acos(i[2]); }},
      {"atan", [](const Inputs& i) { return atan(i[0]); }},
      {"sinh", [](const Inputs& i) { return sinh(i[0]); }},
      {"cosh", [](const Inputs& i) { return cosh(i[0]); }},
      {"tanh", [](const Inputs& i) { return tanh(i[0]); }},
      {"asinh", [](const Inputs& i) { return asinh(i[0]); }},
      {"acosh", [](const Inputs& i) { return acosh(i[1] + 1); }},
      {"atanh", [](const Inputs& i) { return atanh(i[2]); }},
      {"sigmoid", [](const Inputs& i) { return sigmoid(i[0]); }},
      {"relu", [](const Inputs& i) { return relu(i[0]); }},
      {"silu", [](const Inputs& i) { return silu(i[0]); }},
      {"mish", [](const Inputs& i) { return mish(i[0]); }},
      {"erf", [](const Inputs& i) { return erf(i[0]); }},
      {"erfc", [](const Inputs& i) { return erfc(i[0]); }},
      {"floor", [](const Inputs& i) { return floor(i[4]); }},
      {"ceil", [](const Inputs& i) { return ceil(i[4]); }},
      {"round (half to even)", [](const Inputs& i) { return round(i[5]); }},
      {"trunc", [](const Inputs& i) { return trunc(i[4]); }},
      {"frac", [](const Inputs& i) { return frac(i[4]); }},
      {"reciprocal", [](const Inputs& i) { return reciprocal(i[1]); }},
      {"square", [](const Inputs& i) { return square(i[0]); }},
      {"isnan", [](const Inputs& i) { return isnan(log(i[2])); }},
      {"isinf", [](const Inputs& i) { return isinf(i[6]); }},
      {"isfinite", [](const Inputs& i) { return isfinite(i[6]); }},
      {"signbit", [](const Inputs& i) { return signbit(i[0]); }},
      {"logical_not", [](const Inputs& i) { return logical_not(i[0] > 0.5); }},
      {"hardsigmoid", [](const Inputs& i) { return hardsigmoid(i[0] * 4); }},
      {"hardswish", [](const Inputs& i) { return hardswish(i[0] * 4); }},
      {"selu", [](const Inputs& i) { return selu(i[0]); }},
      {"gelu", [](const Inputs& i) { return gelu(i[0]); }},
      {"gelu tanh", [](const Inputs& i) { return gelu(i[0], "tanh"); }},
      {"softplus(2, 1)", [](const Inputs& i) { return softplus(i[0], 2, 1); }},
      {"leaky_relu(0.2)", [](const Inputs& i) { return leaky_relu(i[0], 0.2); }},
      {"elu(1.5, 2, 0.5)", [](const Inputs& i) { return elu(i[0], 1.5, 2, 0.5); }},
      {"celu(0.7)", [](const Inputs& i) { return celu(i[0], 0.7); }},
      {"hardtanh(-0.5, 0.7)", [](const Inputs& i) { return hardtanh(i[0], -0.5, 0.7); }},
      {"threshold(0.1, -3)", [](const Inputs& i) { return threshold(i[0], 0.1, -3); }},
      {"clone", [](const Inputs& i) { return clone(i[0] * 2); }},
  };
}

std::vector<Case> binary_float_cases() {
  return {
      {"add", [](const Inputs& i) { return i[0] + i[3]; }},
      {"add alpha", [](const Inputs& i) { return add(i[0], i[3], 2.5); }},
      {"sub alpha", [](const Inputs& i) { return sub(i[0], i[3], -3); }},
      {"rsub", [](const Inputs& i) { return rsub(i[0], 2, 3); }},
      {"mul", [](const Inputs& i) { return i[0] * i[3]; }},
      {"div", [](const Inputs& i) { return i[0] / i[1]; }},
      {"div trunc", [](const Inputs& i) { return div(i[4], i[3], "trunc"); }},
      {"div floor", [](const Inputs& i) { return div(i[4], i[3], "floor"); }},
      {"floor_divide", [](const Inputs& i) { return floor_divide(i[4], i[3]); }},
      {"fmod", [](const Inputs& i) { return fmod(i[4], i[3]); }},
      {"remainder", [](const Inputs& i) { return remainder(i[4], i[3]); }},
      {"remainder scalar", [](const Inputs& i) { return remainder(i[4], -1.5); }},
      {"pow tensor", [](const Inputs& i) { return pow(i[1], i[3]); }},
      {"pow 2", [](const Inputs& i) { return pow(i[0], 2); }},
      {"pow 3", [](const Inputs& i) { return pow(i[0], 3); }},
      {"pow 0.5", [](const Inputs& i) { return pow(i[1], 0.5); }},
      {"pow -1", [](const Inputs& i) { return pow(i[1], -1); }},
      {"pow 1.7", [](const Inputs& i) { return pow(i[1], 1.7); }},
      {"pow scalar base", [](const Inputs& i) { return pow(2.0, i[3]); }},
      {"pow scalar base 0.9", [](const Inputs& i) { return pow(0.9, i[1]); }},
      {"atan2", [](const Inputs& i) { return atan2(i[0], i[3]); }},
      {"maximum", [](const Inputs& i) { return maximum(i[0], i[3]); }},
      {"minimum", [](const Inputs& i) { return minimum(i[0], i[3]); }},
      {"hypot", [](const Inputs& i) { return hypot(i[0], i[3]); }},
      {"copysign", [](const Inputs& i) { return copysign(i[1], i[3]); }},
      {"eq", [](const Inputs& i) { return eq(floor(i[0]), floor(i[3])); }},
      {"ne", [](const Inputs& i) { return ne(floor(i[0]), floor(i[3])); }},
      {"lt", [](const Inputs& i) { return lt(i[0], i[3]); }},
      {"le", [](const Inputs& i) { return le(i[0], i[3]); }},
      {"gt scalar", [](const Inputs& i) { return gt(i[0], 0.5); }},
      {"ge", [](const Inputs& i) { return ge(i[0], i[3]); }},
      {"logical_and", [](const Inputs& i) { return logical_and(i[0], i[3]); }},
      {"logical_or", [](const Inputs& i) { return logical_or(i[0] > 0, i[3] > 0); }},
      {"logical_xor", [](const Inputs& i) { return logical_xor(i[0] > 0, i[3]); }},
      {"where", [](const Inputs& i) { return where(i[0] > 0, i[0], i[3]); }},
      {"where scalar", [](const Inputs& i) { return where(i[3] > 0, 1.5, i[0]); }},
      {"masked_fill", [](const Inputs& i) { return masked_fill(i[0], i[3] > 0, 2.5); }},
      {"clamp", [](const Inputs& i) { return clamp(i[0], -0.5, 0.5); }},
      {"clamp tensors", [](const Inputs& i) { return clamp(i[0], i[3] - 1, i[3] + 1); }},
      {"clamp_min", [](const Inputs& i) { return clamp_min(i[0], 0.25); }},
      {"clamp_max", [](const Inputs& i) { return clamp_max(i[3], 0.25); }},
      {"lerp scalar", [](const Inputs& i) { return lerp(i[0], i[3], 0.3); }},
      {"lerp tensor", [](const Inputs& i) { return lerp(i[0], i[3], i[2]); }},
      {"addcmul", [](const Inputs& i) { return addcmul(i[0], i[3], i[2], 0.5); }},
      {"addcdiv", [](const Inputs& i) { return addcdiv(i[0], i[3], i[1], 2); }},
      {"to int32", [](const Inputs& i) { return (i[0] * 10).to(kInt32); }},
      {"to bool", [](const Inputs& i) { return floor(i[3]).to(kBool); }},
      {"to float64", [](const Inputs& i) { return i[0].to(kFloat64) * i[3].to(kFloat64); }},
      {"to bfloat16", [](const Inputs& i) { return (i[0] * 3).to(kBFloat16); }},
  };
}

std::vector<Case> int_cases(DType dt) {
  std::vector<Case> c = {
      {"add", [](const Inputs& i) { return i[0] + i[1]; }},
      {"add alpha", [](const Inputs& i) { return add(i[0], i[1], 3); }},
      {"sub", [](const Inputs& i) { return i[0] - i[1]; }},
      {"rsub", [](const Inputs& i) { return rsub(i[0], 2); }},
      {"mul", [](const Inputs& i) { return i[0] * i[1]; }},
      {"mul wraps", [](const Inputs& i) { return i[0] * i[1] * 100; }},
      {"div -> float", [](const Inputs& i) { return i[0] / i[1]; }},
      {"div trunc", [](const Inputs& i) { return div(i[0], i[1], "trunc"); }},
      {"div floor", [](const Inputs& i) { return div(i[0], i[1], "floor"); }},
      {"floor_divide", [](const Inputs& i) { return floor_divide(i[0], i[1]); }},
      {"floor_divide scalar", [](const Inputs& i) { return floor_divide(i[0], 4); }},
      {"fmod", [](const Inputs& i) { return fmod(i[0], i[1]); }},
      {"remainder", [](const Inputs& i) { return remainder(i[0], i[1]); }},
      {"remainder scalar", [](const Inputs& i) { return remainder(i[0], 3); }},
      {"pow tensor", [](const Inputs& i) { return pow(i[0], i[2]); }},
      {"pow 2", [](const Inputs& i) { return pow(i[0], 2); }},
      {"pow 3", [](const Inputs& i) { return pow(i[1], 3); }},
      {"pow wraps", [](const Inputs& i) { return pow(i[0] + 13, 17); }},
      {"pow scalar base", [](const Inputs& i) { return pow(3, i[2]); }},
      {"pow float scalar base", [](const Inputs& i) { return pow(0.5, i[2]); }},
      {"maximum", [](const Inputs& i) { return maximum(i[0], i[1]); }},
      {"minimum", [](const Inputs& i) { return minimum(i[0], i[1]); }},
      {"bitwise_and", [](const Inputs& i) { return bitwise_and(i[0], i[1]); }},
      {"bitwise_or", [](const Inputs& i) { return bitwise_or(i[0], i[1]); }},
      {"bitwise_xor", [](const Inputs& i) { return bitwise_xor(i[0], i[1]); }},
      {"bitwise_and scalar", [](const Inputs& i) { return bitwise_and(i[0], 6); }},
      {"bitwise_not", [](const Inputs& i) { return bitwise_not(i[0]); }},
      {"eq", [](const Inputs& i) { return i[0] == i[1]; }},
      {"ne", [](const Inputs& i) { return i[0] != i[1]; }},
      {"lt", [](const Inputs& i) { return i[0] < i[1]; }},
      {"le", [](const Inputs& i) { return i[0] <= i[1]; }},
      {"gt 2.5", [](const Inputs& i) { return i[0] > 2.5; }},
      {"ge", [](const Inputs& i) { return i[0] >= i[1]; }},
      {"where", [](const Inputs& i) { return where(i[0] > i[1], i[0], i[1]); }},
      {"where scalar", [](const Inputs& i) { return where(i[0] > 3, i[0], 7); }},
      {"clamp", [](const Inputs& i) { return clamp(i[0], 1, 4); }},
      {"abs", [](const Inputs& i) { return abs(i[0]); }},
      {"neg", [](const Inputs& i) { return neg(i[0]); }},
      {"sign", [](const Inputs& i) { return sign(i[0]); }},
      {"relu", [](const Inputs& i) { return relu(i[0]); }},
      {"square", [](const Inputs& i) { return square(i[0]); }},
      {"floor (identity)", [](const Inputs& i) { return floor(i[0]) + ceil(i[1]) + round(i[2]) + trunc(i[0]); }},
      {"* 1.5 -> float", [](const Inputs& i) { return i[0] * 1.5; }},
      {"+ 2 keeps dtype", [](const Inputs& i) { return i[0] + 2; }},
      {"sqrt -> float", [](const Inputs& i) { return sqrt(abs(i[0])); }},
      {"to float", [](const Inputs& i) { return i[0].to(kFloat32) * 0.5; }},
      {"to bool", [](const Inputs& i) { return i[0].to(kBool); }},
      {"logical_and", [](const Inputs& i) { return logical_and(i[0], i[1]); }},
  };
  if (dt == kUInt8) {  // unsigned: subtraction below zero wraps
    c.push_back({"sub wraps", [](const Inputs& i) { return i[1] - i[0] - 20; }});
  }
  return c;
}

std::vector<Case> reduction_cases() {
  return {
      {"sum", [](const Inputs& i) { return i[0].sum(); }},
      {"sum dim 0", [](const Inputs& i) { return sum(i[0], DimList{0}); }},
      {"sum dims 0,2 keepdim", [](const Inputs& i) { return sum(i[0], DimList{0, 2}, true); }},
      {"sum dim 1 of non-contiguous", [](const Inputs& i) { return sum(i[2], DimList{1}); }},
      {"sum -> float64", [](const Inputs& i) { return sum(i[0], DimList{2}, false, kFloat64); }},
      {"mean dim -1", [](const Inputs& i) { return mean(i[0], DimList{-1}); }},
      {"mean", [](const Inputs& i) { return i[0].mean(); }},
      {"mean keepdim + x", [](const Inputs& i) { return i[0] - mean(i[0], DimList{1}, true); }},
      {"amax dim 1", [](const Inputs& i) { return amax(i[0], DimList{1}); }},
      {"amax all", [](const Inputs& i) { return amax(i[0]); }},
      {"amin dims 0,2", [](const Inputs& i) { return amin(i[0], DimList{0, 2}); }},
      {"amin keepdim non-contiguous", [](const Inputs& i) { return amin(i[2], DimList{2}, true); }},
      {"prod dim 2", [](const Inputs& i) { return prod(i[1], 2); }},
      {"prod", [](const Inputs& i) { return prod(i[1]); }},
      {"sum of a product", [](const Inputs& i) { return sum(i[0] * i[1], DimList{-1}); }},
      {"max (all)", [](const Inputs& i) { return max(i[0]); }},
  };
}

Inputs composite_inputs(DType dt) {
  using testing::random;
  return {random({4, 6, 32}, dt, 1),
          random({32}, dt, 2),
          random({32}, dt, 3),
          random({2, 4, 5, 6}, dt, 4),
          random({4}, dt, 5),
          random({4}, dt, 6),
          random({4}, dt, 7),
          testing::random_positive({4}, dt, 0.5, 2.0, 8),
          random({4, 6, 32}, dt, 9),
          testing::random_positive({4, 6, 32}, dt, 0.5, 2.0, 10),
          testing::random_positive({4, 6, 32}, dt, 0.05, 0.95, 11)};
}

std::vector<Case> composite_cases() {
  // i[0] x [4, 6, 32], i[1] w [32], i[2] b [32], i[3] x4 [2, 4, 5, 6], i[4..7] per-channel weight, bias, running
  // mean and var [4], i[8] t like x, i[9] q positive like x, i[10] r in (0.05, 0.95) like x.
  return {
      {"softmax -1", [](const Inputs& i) { return softmax(i[0], -1); }},
      {"softmax 1", [](const Inputs& i) { return softmax(i[0], 1); }},
      {"log_softmax -1", [](const Inputs& i) { return log_softmax(i[0], -1); }},
      {"log_softmax 0", [](const Inputs& i) { return log_softmax(i[0], 0); }},
      {"layer_norm w b", [](const Inputs& i) { return layer_norm(i[0], {32}, i[1], i[2]); }},
      {"layer_norm 2 dims", [](const Inputs& i) { return layer_norm(i[0], {6, 32}); }},
      {"rms_norm w", [](const Inputs& i) { return rms_norm(i[0], {32}, i[1]); }},
      {"rms_norm eps", [](const Inputs& i) { return rms_norm(i[0], {32}, {}, 1e-3); }},
      {"group_norm w b", [](const Inputs& i) { return group_norm(i[3], 2, i[4], i[5]); }},
      {"group_norm", [](const Inputs& i) { return group_norm(i[3], 4); }},
      {"batch_norm eval", [](const Inputs& i) { return batch_norm(i[3], i[4], i[5], i[6], i[7], false); }},
      {"gelu", [](const Inputs& i) { return gelu(i[0]); }},
      {"gelu tanh", [](const Inputs& i) { return gelu(i[0], "tanh"); }},
      {"silu", [](const Inputs& i) { return silu(i[0]); }},
      {"mish", [](const Inputs& i) { return mish(i[0]); }},
      {"softplus", [](const Inputs& i) { return softplus(i[0] * 10); }},
      {"softplus(2, 1)", [](const Inputs& i) { return softplus(i[0], 2, 1); }},
      {"hardswish", [](const Inputs& i) { return hardswish(i[0] * 4); }},
      {"hardsigmoid", [](const Inputs& i) { return hardsigmoid(i[0] * 4); }},
      {"leaky_relu", [](const Inputs& i) { return leaky_relu(i[0], 0.1); }},
      {"elu", [](const Inputs& i) { return elu(i[0], 0.5, 1.5, 2); }},
      {"celu", [](const Inputs& i) { return celu(i[0], 0.5); }},
      {"selu", [](const Inputs& i) { return selu(i[0]); }},
      {"hardtanh", [](const Inputs& i) { return hardtanh(i[0], -0.3, 0.6); }},
      {"logsumexp -1", [](const Inputs& i) { return logsumexp(i[0], {-1}); }},
      {"logsumexp 0,1 keepdim", [](const Inputs& i) { return logsumexp(i[0], {0, 1}, true); }},
      {"var -1", [](const Inputs& i) { return var(i[0], DimList{-1}); }},
      {"std 0 correction 0", [](const Inputs& i) { return std(i[0], {0}, 0); }},
      {"var all", [](const Inputs& i) { return var(i[0]); }},
      {"mse_loss", [](const Inputs& i) { return mse_loss(i[0], i[8]); }},
      {"mse_loss sum", [](const Inputs& i) { return mse_loss(i[0], i[8], "sum"); }},
      {"mse_loss none", [](const Inputs& i) { return mse_loss(i[0], i[8], "none"); }},
      {"addcmul", [](const Inputs& i) { return addcmul(i[0], i[8], i[9], 0.5); }},
      {"addcdiv", [](const Inputs& i) { return addcdiv(i[0], i[8], i[9], 2); }},
      {"lerp scalar", [](const Inputs& i) { return lerp(i[0], i[8], 0.7); }},
      {"lerp tensor", [](const Inputs& i) { return lerp(i[0], i[8], i[10]); }},
      {"logit", [](const Inputs& i) { return logit(i[10]); }},
      {"logit eps", [](const Inputs& i) { return logit(i[0], 0.1); }},
      {"square", [](const Inputs& i) { return square(i[0]); }},
      {"dropout eval", [](const Inputs& i) { return dropout(i[0], 0.5, false) * 2; }},
  };
}

std::vector<Case> view_cases() {
  return {
      {"permute", [](const Inputs& i) { return i[0].permute({2, 0, 1}) * 2; }},
      {"permute of lazy, contiguous", [](const Inputs& i) { return (i[0] + 1).permute({1, 2, 0}).contiguous(); }},
      {"transpose", [](const Inputs& i) { return i[0].transpose(0, 2) + 1; }},
      {"view split", [](const Inputs& i) { return i[0].view({4, 2, 3, 10}).sum(DimList{2}); }},
      {"view merge of input", [](const Inputs& i) { return i[0].view({24, 10}) * 3; }},
      {"view merge of lazy", [](const Inputs& i) { return (i[0] * 2).view({24, 10}) + 1; }},
      {"reshape of transposed", [](const Inputs& i) { return (i[0] * 2).transpose(0, 1).reshape({6, 40}) + 1; }},
      {"flatten", [](const Inputs& i) { return i[0].flatten(1) * 2; }},
      {"select * narrow", [](const Inputs& i) { return i[0].select(1, 2) * i[0].narrow(1, 1, 1).squeeze(1); }},
      {"select negative", [](const Inputs& i) { return exp(i[0]).select(2, -1); }},
      {"stepped slice", [](const Inputs& i) { return i[0].slice(2, 1, 9, 3) + 1; }},
      {"unsqueeze expand", [](const Inputs& i) { return exp(i[0]).unsqueeze(0).expand({3, 4, 6, 10}) + 1; }},
      {"t of select", [](const Inputs& i) { return i[0].select(0, 1).t() * 2; }},
      {"movedim", [](const Inputs& i) { return movedim(i[0] * 2, {0}, {2}) - 1; }},
      {"unbind", [](const Inputs& i) { return unbind(i[0] * 2, 1)[2] + 1; }},
      {"chunk", [](const Inputs& i) { return i[0].chunk(2, 2)[1] * 3; }},
      {"split of lazy", [](const Inputs& i) { return split(i[0] + 1, 3, 1)[1] * 2; }},
      {"expand of a reduction", [](const Inputs& i) { return i[0].sum(DimList{1}, true).expand({4, 6, 10}) * i[0]; }},
      {"squeeze of size-1 dim", [](const Inputs& i) { return (i[0].narrow(0, 2, 1) * 2).squeeze(0); }},
  };
}

std::vector<Case> nan_cases() {
  return {
      {"maximum", [](const Inputs& i) { return maximum(i[0], i[1]); }},
      {"minimum", [](const Inputs& i) { return minimum(i[0], i[1]); }},
      {"amax dim -1", [](const Inputs& i) { return amax(i[0], DimList{-1}); }},
      {"amin dim 0", [](const Inputs& i) { return amin(i[1], DimList{0}); }},
      {"amax all", [](const Inputs& i) { return amax(i[0]); }},
      {"amin all", [](const Inputs& i) { return amin(i[1]); }},
      {"relu", [](const Inputs& i) { return relu(i[0]); }},
      {"clamp", [](const Inputs& i) { return clamp(i[0], -1, 1); }},
      {"clamp_min", [](const Inputs& i) { return clamp_min(i[0], 0); }},
      {"clamp NaN bounds", [](const Inputs& i) { return clamp(i[0], i[1], i[1] + 1); }},
      {"hardtanh", [](const Inputs& i) { return hardtanh(i[0]); }},
      {"threshold", [](const Inputs& i) { return threshold(i[0], 0.5, -7); }},
      {"leaky_relu", [](const Inputs& i) { return leaky_relu(i[0]); }},
      {"elu", [](const Inputs& i) { return elu(i[0]); }},
      {"sigmoid tanh", [](const Inputs& i) { return sigmoid(i[0]) + tanh(i[1]); }},
      {"exp", [](const Inputs& i) { return exp(i[0]); }},
      {"isnan isinf isfinite",
       [](const Inputs& i) { return isnan(i[0]) + isinf(i[0]) * 2 + isfinite(i[1]) * 4 + signbit(i[1]) * 8; }},
      {"sign", [](const Inputs& i) { return sign(i[0]); }},
      {"sum dim 1", [](const Inputs& i) { return sum(i[0], DimList{1}); }},
      {"mean dim 0", [](const Inputs& i) { return mean(i[1], DimList{0}); }},
      {"softmax", [](const Inputs& i) { return softmax(i[0], -1); }},
      {"where isnan", [](const Inputs& i) { return where(isnan(i[0]), 0.0, i[0]); }},
      {"compare", [](const Inputs& i) { return (i[0] == i[0]) + (i[0] < i[1]) * 2 + (i[0] != i[1]) * 4; }},
      {"inf * 0", [](const Inputs& i) { return i[0] * 0; }},
      {"rounding", [](const Inputs& i) { return floor(i[0]) + ceil(i[1]) + round(i[0]) + trunc(i[1]); }},
  };
}

Inputs nan_inputs(DType dt) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  std::vector<double> xs = {nan, 1.0, -2.0, inf, -inf, 0.5, nan, -0.25, 3.0, 0.0, -inf, 2.0,
                            1.5, nan, 0.75, -1.0, 4.0, inf, -3.0, 0.1, 0.2, -0.3, 0.4, -0.5};
  std::vector<double> ys = {0.0, nan, nan, 1.0, 2.0, -inf, 3.0, inf, -1.0, nan, 0.5, -2.0,
                            nan, 1.0, -0.5, 2.5, nan, 0.0, -inf, inf, 1.0, 2.0, 3.0, 4.0};
  return {from_vector(xs, {4, 6}, dt), from_vector(ys, {4, 6}, dt)};
}

Inputs division_inputs(DType dt) {
  if (is_floating(dt)) {
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> as = {1.0, -1.0, 7.5, -7.5, 7.5, -7.5, 0.3, 5.0, -1.0, 1.0, 0.0, -0.0, 2.0, 1e10};
    std::vector<double> bs = {0.1, 0.1, 2.0, 2.0, -2.0, -2.0, 0.1, 0.5, inf, -inf, 3.0, 3.0, 0.0, 3.3};
    return {from_vector(as, {14}, dt), from_vector(bs, {14}, dt)};
  }
  std::vector<int64_t> a = {7, -7, 7, -7, 6, -6, 0, 1, -1, 13, -13, 9}, b = {2, 2, -2, -2, 3, -3, 5, -1, 7, -4, 4, 1};
  a.push_back(dt == kInt64 ? std::numeric_limits<int64_t>::min() : dt == kInt32 ? INT32_MIN : -128);
  b.push_back(-1);
  return {from_vector(a, {13}, dt), from_vector(b, {13}, dt)};
}

std::vector<Case> division_cases() {
  return {
      {"remainder", [](const Inputs& i) { return remainder(i[0], i[1]); }},
      {"fmod", [](const Inputs& i) { return fmod(i[0], i[1]); }},
      {"floor_divide", [](const Inputs& i) { return floor_divide(i[0], i[1]); }},
      {"div trunc", [](const Inputs& i) { return div(i[0], i[1], "trunc"); }},
      {"div floor", [](const Inputs& i) { return div(i[0], i[1], "floor"); }},
      {"div", [](const Inputs& i) { return div(i[0], i[1]); }},
      {"remainder by 3", [](const Inputs& i) { return remainder(i[0], 3); }},
      {"remainder by -3", [](const Inputs& i) { return remainder(i[0], -3); }},
      {"floor_divide by -2", [](const Inputs& i) { return floor_divide(i[0], -2); }},
      {"fmod by -3", [](const Inputs& i) { return fmod(i[0], -3); }},
  };
}

std::vector<Case> symbolic_cases() {
  return {
      {"broadcast", [](const Inputs& i) { return i[0] * i[1] + 1; }},
      {"softmax", [](const Inputs& i) { return softmax(i[0], -1); }},
      {"sum dim 0", [](const Inputs& i) { return sum(i[0], DimList{0}); }},
      {"amax keepdim - x", [](const Inputs& i) { return amax(i[0], DimList{1}, true) - i[0]; }},
      {"mean", [](const Inputs& i) { return i[0].mean(); }},
      {"layer_norm", [](const Inputs& i) { return layer_norm(i[0], {i[0].size(1)}, i[1], i[1]); }},
      {"view(-1)", [](const Inputs& i) { return i[0].view({-1}) * 2; }},
      {"t", [](const Inputs& i) { return i[0].t() * 2; }},
      {"narrow", [](const Inputs& i) { return i[0].narrow(1, 1, 1) + i[0]; }},
      {"bf16 gelu", [](const Inputs& i) { return gelu(i[2]) * 1.5; }},
      {"bf16 sum", [](const Inputs& i) { return sum(i[2], DimList{1}); }},
      {"int remainder", [](const Inputs& i) { return remainder(i[3], 3) + floor_divide(i[3], -4); }},
      {"int sum", [](const Inputs& i) { return i[3].sum(DimList{0}); }},
  };
}

}  // namespace sinter::inductor_ops
