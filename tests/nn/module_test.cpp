// nn::Module: PyTorch's parameter names and order for nested models, train/eval, to(dtype/device) in place,
// state dicts and their errors, registration rules, printing, initialisation bounds.
#include <cmath>

#include "sinter/nn.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

std::vector<std::string> names_of(const nn::NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& [name, t] : named) out.push_back(name);
  return out;
}

// A transformer-style residual block (x + fc2(gelu(fc1(ln(x))))), small.
struct Block : nn::Module {
  nn::LayerNorm ln{8};
  nn::Linear fc1{8, 16}, fc2{16, 8};
  Block() {
    register_module("ln", ln);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return x + fc2(gelu(fc1(ln(x)))); }
};

// Own parameter and buffer registered after a child: PyTorch still lists own entries first.
struct Net : nn::Module {
  nn::Conv2d conv{3, 4, 3};
  nn::BatchNorm2d bn{4};
  nn::Sequential layers{std::make_shared<nn::Linear>(4, 6), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(6, 2)};
  Tensor scale, step;
  Net() {
    register_module("conv", conv);
    scale = register_parameter("scale", ones({2}));
    step = register_buffer("step", zeros({}, TensorOptions(kInt64)));
    register_module("bn", bn);
    register_module("layers", layers);
  }
};

TEST(NnModule, BlockParameterNamesMatchPyTorch) {
  Block b;
  EXPECT_EQ(names_of(b.named_parameters()), (std::vector<std::string>{"ln.weight", "ln.bias", "fc1.weight",
                                                                      "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(b.state_dict().keys(), names_of(b.named_parameters()));
  EXPECT_EQ(b.parameters().size(), 6u);
  EXPECT_EQ(b.fc1.weight.sizes().hints(), (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(b.fc1.bias.sizes().hints(), (std::vector<int64_t>{16}));
  EXPECT_TRUE(b.fc1.weight.requires_grad());
  EXPECT_TRUE(b.get_parameter("fc1.weight").is_same(b.fc1.weight));
}

TEST(NnModule, NestedNamesAndOrderMatchPyTorch) {
  Net n;
  EXPECT_EQ(
      names_of(n.named_parameters()),
      (std::vector<std::string>{"scale", "conv.weight", "conv.bias", "bn.weight", "bn.bias",
                                "layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"}));
  EXPECT_EQ(
      names_of(n.named_buffers()),
      (std::vector<std::string>{"step", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}));
  EXPECT_EQ(
      n.state_dict().keys(),
      (std::vector<std::string>{"scale", "step", "conv.weight", "conv.bias", "bn.weight", "bn.bias",
                                "bn.running_mean", "bn.running_var", "bn.num_batches_tracked",
                                "layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"}));
  std::vector<std::string> mods;
  for (auto& [name, m] : n.named_modules()) mods.push_back(name);
  EXPECT_EQ(mods, (std::vector<std::string>{"", "conv", "bn", "layers", "layers.0", "layers.1", "layers.2"}));
  std::vector<std::string> kids;
  for (auto& [name, m] : n.named_children()) kids.push_back(name);
  EXPECT_EQ(kids, (std::vector<std::string>{"conv", "bn", "layers"}));
  EXPECT_EQ(names_of(n.named_parameters("", false)), (std::vector<std::string>{"scale"}));
  EXPECT_EQ(names_of(n.named_parameters("model")).front(), "model.scale");
  EXPECT_EQ(n.state_dict("model").keys().back(), "model.layers.2.bias");
  EXPECT_EQ(n.modules().size(), 7u);
  EXPECT_FALSE(n.step.requires_grad());
  EXPECT_EQ(&n.get_submodule("layers.2"), &n.layers[2]);
  EXPECT_TRUE(n.get_buffer("bn.running_var").is_same(n.bn.running_var));
}

TEST(NnModule, SharedModulesAndParametersAreListedOnce) {
  struct Tied : nn::Module {
    nn::Linear a{2, 2};
    Tied() {
      register_module("a", a);
      register_module("b", a);
    }
  } t;
  EXPECT_EQ(names_of(t.named_parameters()), (std::vector<std::string>{"a.weight", "a.bias"}));
  // state_dict keeps every name, as PyTorch's does.
  EXPECT_EQ(t.state_dict().keys(), (std::vector<std::string>{"a.weight", "a.bias", "b.weight", "b.bias"}));
  EXPECT_EQ(t.modules().size(), 2u);
}

TEST(NnModule, DisabledBiasAndNonPersistentBuffersAreSkipped) {
  nn::Linear l(3, 5, false);
  EXPECT_FALSE(l.bias.defined());
  EXPECT_EQ(names_of(l.named_parameters()), (std::vector<std::string>{"weight"}));
  struct WithCache : nn::Module {
    WithCache() {
      register_buffer("kept", zeros({2}));
      register_buffer("cache", zeros({2}), false);
    }
  } w;
  EXPECT_EQ(names_of(w.named_buffers()), (std::vector<std::string>{"kept", "cache"}));
  EXPECT_EQ(w.state_dict().keys(), (std::vector<std::string>{"kept"}));
}

TEST(NnModule, TrainAndEvalPropagate) {
  Net n;
  EXPECT_TRUE(n.is_training());
  n.eval();
  for (nn::Module* m : n.modules()) EXPECT_FALSE(m->is_training()) << m->name();
  n.layers.train();
  EXPECT_FALSE(n.is_training());
  EXPECT_TRUE(n.layers[0].is_training());
  n.train();
  for (nn::Module* m : n.modules()) EXPECT_TRUE(m->is_training()) << m->name();
}

TEST(NnModule, ToDTypeConvertsFloatingTensorsInPlace) {
  Net n;
  Tensor w = n.conv.weight;  // a handle taken before the conversion
  Tensor before = n.conv.weight.clone();
  n.to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_TRUE(w.is_same(n.conv.weight));
  EXPECT_TRUE(n.get_parameter("conv.weight").is_same(w));
  EXPECT_CLOSE(w, before.to(kFloat64), 0);
  for (auto& [name, t] : n.named_parameters()) EXPECT_EQ(t.dtype(), kFloat64) << name;
  EXPECT_EQ(n.bn.running_mean.dtype(), kFloat64);
  EXPECT_EQ(n.bn.num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(n.step.dtype(), kInt64);
  EXPECT_TRUE(w.requires_grad());
  n.to(kCPU, kBFloat16);
  EXPECT_EQ(n.layers.at<nn::Linear>(2).weight.dtype(), kBFloat16);
  EXPECT_EQ(n.step.dtype(), kInt64);
  EXPECT_ERROR(n.to(kInt64), "only accepts floating point dtypes", "int64");
}

TEST(NnModule, ToSameDeviceKeepsStorage) {
  nn::Linear l(3, 4);
  auto storage = l.weight.storage();
  l.to(kCPU);
  EXPECT_EQ(l.weight.storage(), storage);
  l.to(kFloat32);
  EXPECT_EQ(l.weight.storage(), storage);
}

TEST(NnModule, ForwardThroughCallOperator) {
  Block b;
  Tensor x = random({2, 8});
  Tensor expected =
      x + linear(gelu(linear(layer_norm(x, {8}, b.ln.weight, b.ln.bias), b.fc1.weight, b.fc1.bias)),
                 b.fc2.weight, b.fc2.bias);
  EXPECT_CLOSE(b(x), expected);
  struct NoForward : nn::Module {
  } m;
  EXPECT_ERROR(m(x), "NoForward has no forward(const Tensor&)");
}

TEST(NnModule, LayerErrorsNameTheCallersLine) {
  nn::Linear l(3, 4);
  Tensor x = random({2, 5});
  EXPECT_ERROR(l(x), "linear", "in_features", "module_test.cpp");
  nn::BatchNorm2d bn(3);
  EXPECT_ERROR(bn(x), "expected 4D input", "module_test.cpp");
  nn::MultiheadAttention mha(4, 2);
  EXPECT_ERROR(mha(x, x, x), "embedding dimension of 4", "module_test.cpp");
}

TEST(NnModule, RunsInLowPrecisionAfterTo) {
  Block b;
  Tensor x = random({3, 8}, kFloat32, 5);
  Tensor expected = b(x);
  nn::StateDict saved;
  for (const auto& [name, t] : b.state_dict()) saved.insert(name, t.clone());
  for (DType dt : {kBFloat16, kFloat16, kFloat64}) {
    b.to(dt);
    Tensor y = b(x.to(dt));
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_CLOSE(y, expected, dt == kFloat64 ? 1e-5 : 2e-2);
    b.to(kFloat32).load_state_dict(saved);  // undo the rounding of the low-precision copy
  }
}

TEST(NnModule, SharedOwnershipChildren) {
  struct Owner : nn::Module {
    std::shared_ptr<nn::Linear> head;
    Owner() { head = register_module("head", std::make_shared<nn::Linear>(2, 3)); }
  } o;
  EXPECT_EQ(names_of(o.named_parameters()), (std::vector<std::string>{"head.weight", "head.bias"}));
  EXPECT_EQ(&o.get_submodule("head"), o.head.get());
}

TEST(NnModule, LoadStateDictRoundTrip) {
  Net a, b;
  a.bn.running_mean.fill_(0.5);
  a.step.fill_(7);
  Tensor w = b.conv.weight;
  nn::LoadResult r = b.load_state_dict(a.state_dict());
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(r.unexpected_keys.empty());
  for (const auto& [name, t] : a.state_dict()) EXPECT_TENSOR_EQ(b.state_dict().at(name), t);
  EXPECT_TRUE(w.is_same(b.conv.weight));               // loaded into the existing tensors
  EXPECT_FALSE(b.conv.weight.is_same(a.conv.weight));  // by copying, not sharing
  // A plain std::map converts too; values convert to the module's dtype.
  Block c, d;
  d.to(kFloat64);
  std::map<std::string, Tensor> m;
  for (const auto& [name, t] : c.state_dict()) m[name] = t;
  d.load_state_dict(m);
  EXPECT_EQ(d.fc1.weight.dtype(), kFloat64);
  EXPECT_CLOSE(d.fc1.weight, c.fc1.weight.to(kFloat64), 0);
}

TEST(NnModule, LoadStateDictErrorsNameKeys) {
  Block a, b;
  nn::StateDict sd = a.state_dict();
  sd.erase("fc1.bias");
  sd.insert("fc3.weight", zeros({2}));
  Tensor before = b.fc1.weight.clone();
  EXPECT_ERROR(b.load_state_dict(sd), "Error(s) in loading state_dict for Block",
               "Missing key(s) in state_dict: \"fc1.bias\"",
               "Unexpected key(s) in state_dict: \"fc3.weight\"");
  EXPECT_TENSOR_EQ(b.fc1.weight, before);  // nothing copied when it throws
  nn::LoadResult r = b.load_state_dict(sd, false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"fc1.bias"}));
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"fc3.weight"}));
  EXPECT_TENSOR_EQ(b.fc1.weight, a.fc1.weight);
  // A shape mismatch throws even when not strict.
  nn::StateDict bad = a.state_dict();
  bad.insert("fc2.weight", zeros({8, 15}));
  EXPECT_ERROR(b.load_state_dict(bad, false), "size mismatch for fc2.weight", "[8, 15]", "[8, 16]");
  bad.insert("fc2.weight", Tensor());
  EXPECT_ERROR(b.load_state_dict(bad), "\"fc2.weight\" is an undefined tensor");
}

TEST(NnModule, RegistrationRules) {
  struct M : nn::Module {
  } m;
  EXPECT_ERROR(m.register_parameter("a.b", zeros({1})), "can't contain \".\"");
  EXPECT_ERROR(m.register_buffer("", zeros({1})), "name can't be empty");
  m.register_parameter("w", zeros({1}));
  EXPECT_ERROR(m.register_buffer("w", zeros({1})), "attribute \"w\" already exists");
  nn::Linear l(1, 1);
  EXPECT_ERROR(m.register_module("w", l), "attribute \"w\" already exists");
  // Re-registering the same kind replaces the entry in place.
  m.register_parameter("w", ones({3}));
  EXPECT_EQ(m.parameters().size(), 1u);
  EXPECT_EQ(m.parameters()[0].sizes().hints(), (std::vector<int64_t>{3}));
  EXPECT_ERROR(m.get_submodule("x.y"), "M has no submodule \"x\"");
  EXPECT_ERROR(m.get_parameter("v"), "M has no parameter \"v\"");
  EXPECT_ERROR(m.register_module("self", m), "can't be registered as its own child");
}

TEST(NnModule, ApplyVisitsChildrenFirst) {
  Block b;
  std::vector<std::string> seen;
  b.apply([&](nn::Module& m) { seen.push_back(m.name()); });
  EXPECT_EQ(seen, (std::vector<std::string>{"LayerNorm", "Linear", "Linear", "Block"}));
}

TEST(NnModule, PrintsLikePyTorch) {
  EXPECT_EQ(nn::Linear(3, 5).str(), "Linear(in_features=3, out_features=5, bias=True)");
  Block b;
  EXPECT_EQ(b.str(),
            "Block(\n"
            "  (ln): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
            "  (fc1): Linear(in_features=8, out_features=16, bias=True)\n"
            "  (fc2): Linear(in_features=16, out_features=8, bias=True)\n"
            ")");
  nn::Sequential s{std::make_shared<nn::Conv2d>(3, 8, 3, 2, 1, 1, 1, false), std::make_shared<nn::ReLU>()};
  EXPECT_EQ(s.str(),
            "Sequential(\n"
            "  (0): Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)\n"
            "  (1): ReLU()\n"
            ")");
  EXPECT_EQ(nn::BatchNorm2d(4).str(),
            "BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  EXPECT_EQ(nn::Dropout(0.1).str(), "Dropout(p=0.1, inplace=False)");
}

TEST(NnModule, StateDictKeepsInsertionOrder) {
  nn::StateDict sd{{"b", zeros({1})}, {"a", ones({1})}};
  sd.insert("c", zeros({2}));
  sd.insert("b", ones({3}));  // replaced in place
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(sd.at("b").sizes().hints(), (std::vector<int64_t>{3}));
  EXPECT_TRUE(sd.erase("a"));
  EXPECT_FALSE(sd.erase("a"));
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"b", "c"}));
  EXPECT_TRUE(sd.contains("c"));
  EXPECT_ERROR(sd.at("zz"), "state dict has no key \"zz\"");
}

// kaiming_uniform(a = sqrt(5)) gives weights and biases in +-1/sqrt(fan_in), as torch.nn.
void expect_within(const Tensor& t, double bound) {
  double max_abs = 0;
  for (double v : t.to_vector<double>()) max_abs = std::max(max_abs, std::fabs(v));
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, bound * 0.5);  // spread over the range, not zeros
}

TEST(NnModule, InitialisationMatchesTorchNn) {
  nn::Linear l(16, 64);
  expect_within(l.weight, 1.0 / 4);
  expect_within(l.bias, 1.0 / 4);
  nn::Conv2d c(4, 64, 3);
  expect_within(c.weight, 1.0 / 6);
  expect_within(c.bias, 1.0 / 6);
  nn::ConvTranspose2d ct(64, 4, 3);  // fan_in = out_channels * k * k
  EXPECT_EQ(ct.weight.sizes().hints(), (std::vector<int64_t>{64, 4, 3, 3}));
  expect_within(ct.weight, 1.0 / 6);
  nn::MultiheadAttention mha(16, 4);
  expect_within(mha.in_proj_weight, std::sqrt(6.0 / (16 + 48)));
  EXPECT_EQ(mha.in_proj_bias.abs().max().item<float>(), 0.0f);
  EXPECT_EQ(mha.out_proj.bias.abs().max().item<float>(), 0.0f);
  nn::Embedding e(1000, 64);
  std::vector<double> v = e.weight.to_vector<double>();
  double mean = 0, sq = 0;
  for (double x : v) mean += x, sq += x * x;
  mean /= v.size();
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(sq / v.size()), 1.0, 0.02);
  nn::LayerNorm ln{{2, 3}};  // LayerNorm({2, 3}) alone is ambiguous in C++ (it could be a copy)
  EXPECT_TENSOR_EQ(ln.weight, ones({2, 3}));
  EXPECT_TENSOR_EQ(ln.bias, zeros({2, 3}));
  EXPECT_EQ(nn::init::calculate_fan_in_and_fan_out(c.weight), (std::pair<int64_t, int64_t>{36, 576}));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(1.0 / 3));
  EXPECT_ERROR(nn::init::calculate_gain("swish"), "Unsupported nonlinearity");
  Tensor vec = zeros({3});
  EXPECT_ERROR(nn::init::xavier_uniform_(vec), "fewer than 2 dimensions");
}

}  // namespace
}  // namespace sinter
