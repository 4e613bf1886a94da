// Weight tying as LibTorch users write it (`head->weight = wte->weight`): the built-in layers' registry reads
// their members, so the tied tensor is one parameter, forward uses it, and state dicts save and load both names
// as PyTorch does.
#include <unistd.h>

#include <cstdio>

#include "sinter/nn.h"
#include "nn_testing.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using testing::Names;
using testing::names_of;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "sinter_nn_tying_" + std::to_string(::getpid()) + "_" + name + ".safetensors";
}

// GPT-2's tie: the output projection is the token embedding.
struct TinyLM : nn::Module {
  nn::Embedding wte{16, 8};
  nn::LayerNorm ln_f{8};
  nn::Linear lm_head{8, 16, false};
  TinyLM() {
    register_module("wte", wte);
    register_module("ln_f", ln_f);
    register_module("lm_head", lm_head);
    lm_head->weight = wte->weight;
  }
  Tensor forward(const Tensor& idx) override { return lm_head(ln_f(wte(idx))); }
};

Tensor token_ids() { return from_vector(std::vector<int64_t>{3, 15, 0, 7, 7, 1}, {2, 3}); }

TEST(NnWeightTying, TiedWeightIsOneParameterAndForwardUsesIt) {
  TinyLM m;
  EXPECT_EQ(names_of(m.named_parameters()), (Names{"wte.weight", "ln_f.weight", "ln_f.bias"}));
  EXPECT_EQ(m.parameters().size(), 3u);
  EXPECT_TRUE(m.get_parameter("lm_head.weight").is_same(m.wte.weight));
  nn::StateDict sd = m.state_dict();
  EXPECT_EQ(sd.keys(), (Names{"wte.weight", "ln_f.weight", "ln_f.bias", "lm_head.weight"}));
  EXPECT_TRUE(sd.at("lm_head.weight").is_same(sd.at("wte.weight")));

  Tensor idx = token_ids();
  Tensor h = layer_norm(embedding(m.wte.weight, idx), {8}, m.ln_f.weight, m.ln_f.bias);
  EXPECT_CLOSE(m(idx), linear(h, m.wte.weight));
  // Writing through either name changes both.
  NoGradGuard no_grad;
  m.lm_head.weight.fill_(0.25);
  EXPECT_TENSOR_EQ(m.wte.weight, full({16, 8}, 0.25));
}

TEST(NnWeightTying, StateDictOfTiedModelLoadsAndKeepsTheTie) {
  TinyLM a, b, c;
  // A copy (as from a file): both names hold equal values in separate tensors.
  nn::StateDict copied;
  for (const auto& [name, t] : a.state_dict()) copied.insert(name, t.clone());
  EXPECT_TRUE(b.load_state_dict(copied).missing_keys.empty());
  EXPECT_TENSOR_EQ(b.wte.weight, a.wte.weight);
  EXPECT_TRUE(b.lm_head.weight.is_same(b.wte.weight));
  EXPECT_EQ(b.parameters().size(), 3u);
  // The dict itself, sharing one tensor under two names.
  c.load_state_dict(a.state_dict());
  EXPECT_TENSOR_EQ(c.lm_head.weight, a.wte.weight);
  // Through a .safetensors file.
  TinyLM d;
  std::string path = temp_path("tied");
  nn::save_safetensors(path, a.state_dict());
  d.load_safetensors(path);
  std::remove(path.c_str());
  EXPECT_TENSOR_EQ(d.wte.weight, a.wte.weight);
  EXPECT_TRUE(d.lm_head.weight.is_same(d.wte.weight));
  Tensor idx = token_ids();
  EXPECT_CLOSE(d(idx), a(idx));
  // A dict without the tied copy is missing a key, as in PyTorch.
  nn::StateDict partial = a.state_dict();
  partial.erase("lm_head.weight");
  EXPECT_ERROR(d.load_state_dict(partial), "Missing key(s) in state_dict: \"lm_head.weight\"");
  EXPECT_EQ(d.load_state_dict(partial, false).missing_keys, (Names{"lm_head.weight"}));
}

TEST(NnWeightTying, ToConvertsTheSharedTensorOnce) {
  TinyLM m;
  m.to(kFloat64);
  EXPECT_EQ(m.lm_head.weight.dtype(), kFloat64);
  EXPECT_TRUE(m.lm_head.weight.is_same(m.wte.weight));
  Tensor idx = token_ids();
  EXPECT_EQ(m(idx).dtype(), kFloat64);
}

TEST(NnWeightTying, AssigningAMemberReRegistersIt) {
  nn::Linear l(3, 4);
  Tensor w = zeros({4, 3});
  l.weight = w;
  EXPECT_TRUE(l.get_parameter("weight").is_same(w));
  EXPECT_TRUE(l.parameters()[0].is_same(w));
  EXPECT_TENSOR_EQ(l(random({2, 3})), l.bias.expand({2, 4}));
  l.bias = Tensor();  // as `self.bias = None`: the entry has no value
  EXPECT_EQ(names_of(l.named_parameters()), (Names{"weight"}));
  EXPECT_EQ(l.state_dict().keys(), (Names{"weight"}));
  // Buffers of the built-in layers too.
  nn::BatchNorm1d bn(3);
  Tensor mean = full({3}, 0.5);
  bn.running_mean = mean;
  EXPECT_TRUE(bn.get_buffer("running_mean").is_same(mean));
  EXPECT_TRUE(bn.state_dict().at("running_mean").is_same(mean));
  // Registering the name again by value assigns the member.
  l.register_parameter("weight", ones({4, 3}));
  EXPECT_TENSOR_EQ(l.weight, ones({4, 3}));
  EXPECT_TRUE(l.weight.is_same(l.get_parameter("weight")));
  EXPECT_TRUE(l.weight.requires_grad());
}

TEST(NnWeightTying, UserModulesChooseByValueOrByMember) {
  struct ByValue : nn::Module {
    Tensor w;
    ByValue() { w = register_parameter("w", zeros({2})); }
  } by_value;
  by_value.w = ones({2});  // the registry keeps its own handle
  EXPECT_TENSOR_EQ(by_value.get_parameter("w"), zeros({2}));

  struct ByMember : nn::Module {
    Tensor w = zeros({2});
    Tensor steps = zeros({}, TensorOptions(kInt64));
    ByMember() {
      register_parameter("w", &w);
      register_buffer("steps", &steps);
    }
  } by_member;
  EXPECT_TRUE(by_member.w.requires_grad());
  by_member.w = ones({2});
  EXPECT_TRUE(by_member.get_parameter("w").is_same(by_member.w));
  by_member.steps = full({}, 3, TensorOptions(kInt64));
  EXPECT_EQ(by_member.state_dict().at("steps").item<int64_t>(), 3);
  EXPECT_ERROR(by_member.register_parameter("v", static_cast<Tensor*>(nullptr)), "null member pointer");
  EXPECT_ERROR(by_member.register_buffer("w", &by_member.w), "attribute \"w\" already exists");
}

}  // namespace
}  // namespace sinter
