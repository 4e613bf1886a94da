// The keyed and parameter containers: ModuleDict names children by key, ParameterList and ParameterDict register
// their entries as parameters ("0", "1", ... / by key), with PyTorch's dotted names, order and printing.
#include "sinter/nn.h"
#include "nn_testing.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using testing::Names;
using testing::names_of;

TEST(NnContainers, ModuleDictNamesChildrenByKeyInInsertionOrder) {
  nn::ModuleDict d{{"fc", std::make_shared<nn::Linear>(4, 3)}, {"act", std::make_shared<nn::ReLU>()}};
  nn::Linear borrowed(3, 2);
  d.insert("out", borrowed);
  EXPECT_EQ(d.size(), 3u);
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d.keys(), (Names{"fc", "act", "out"}));
  EXPECT_TRUE(d.contains("act"));
  EXPECT_FALSE(d.contains("relu"));
  EXPECT_EQ(names_of(d.named_parameters()), (Names{"fc.weight", "fc.bias", "out.weight", "out.bias"}));
  EXPECT_EQ(d.state_dict().keys(), names_of(d.named_parameters()));
  EXPECT_EQ(&d.at<nn::Linear>("out"), &borrowed);
  EXPECT_EQ(d["fc"].name(), "Linear");
  EXPECT_EQ(&d.get_submodule("act"), &d["act"]);
  EXPECT_EQ(d.values().size(), 3u);
  Names seen;
  for (const auto& [key, m] : d) seen.push_back(key + ":" + m->name());
  EXPECT_EQ(seen, (Names{"fc:Linear", "act:ReLU", "out:Linear"}));

  // A present key is replaced in place; update inserts pair by pair.
  d.insert("act", std::make_shared<nn::GELU>());
  EXPECT_EQ(d.keys(), (Names{"fc", "act", "out"}));
  EXPECT_EQ(d["act"].name(), "GELU");
  EXPECT_EQ(d.named_children().size(), 3u);
  d.update({{"fc", std::make_shared<nn::Linear>(4, 5)}, {"norm", std::make_shared<nn::LayerNorm>(5)}});
  EXPECT_EQ(d.keys(), (Names{"fc", "act", "out", "norm"}));
  EXPECT_EQ(d.at<nn::Linear>("fc").out_features, 5);

  Tensor x = random({2, 4});
  const auto& fc = d.at<nn::Linear>("fc");
  const auto& norm = d.at<nn::LayerNorm>("norm");
  EXPECT_CLOSE(d["norm"](d["act"](d["fc"](x))), layer_norm(gelu(linear(x, fc.weight, fc.bias)), {5}, norm.weight,
                                                                    norm.bias));
  EXPECT_EQ(d.str(),
            "ModuleDict(\n"
            "  (fc): Linear(in_features=4, out_features=5, bias=True)\n"
            "  (act): GELU(approximate='none')\n"
            "  (out): Linear(in_features=3, out_features=2, bias=True)\n"
            "  (norm): LayerNorm((5,), eps=1e-05, elementwise_affine=True)\n"
            ")");
}

TEST(NnContainers, ModuleDictInAModelGivesDottedNames) {
  struct Heads : nn::Module {
    nn::Linear trunk{4, 4};
    nn::ModuleDict heads;
    Heads() {
      register_module("trunk", trunk);
      heads.insert("cls", std::make_shared<nn::Linear>(4, 3));
      heads.insert("box", std::make_shared<nn::Linear>(4, 2, false));
      register_module("heads", heads);
    }
  } m;
  EXPECT_EQ(m.state_dict().keys(),
            (Names{"trunk.weight", "trunk.bias", "heads.cls.weight", "heads.cls.bias", "heads.box.weight"}));
  EXPECT_TRUE(m.get_parameter("heads.box.weight").is_same(m.heads.at<nn::Linear>("box").weight));
}

TEST(NnContainers, ModuleDictErrorsNameTheKey) {
  nn::ModuleDict d{{"fc", std::make_shared<nn::Linear>(2, 2)}};
  EXPECT_ERROR(d["head"], "ModuleDict has no key \"head\"", "[fc]");
  EXPECT_ERROR(d.at<nn::Conv2d>("fc"), "ModuleDict entry \"fc\" is a Linear");
  EXPECT_ERROR(d.insert("a.b", std::make_shared<nn::ReLU>()), "can't contain \".\"");
  EXPECT_ERROR(d.insert("", std::make_shared<nn::ReLU>()), "name can't be empty");
  EXPECT_ERROR(d.insert("x", std::shared_ptr<nn::Module>()), "got a null module");
  EXPECT_EQ(d.keys(), (Names{"fc"}));
}

TEST(NnContainers, ParameterListRegistersEntriesByIndex) {
  struct Model : nn::Module {
    nn::ParameterList plist{zeros({2, 3}), ones({3})};
    Model() { register_module("plist", plist); }
  } m;
  m.plist.append(full({4}, 2.0));
  EXPECT_EQ(m.plist.size(), 3u);
  EXPECT_EQ(names_of(m.named_parameters()), (Names{"plist.0", "plist.1", "plist.2"}));
  EXPECT_EQ(m.state_dict().keys(), (Names{"plist.0", "plist.1", "plist.2"}));
  EXPECT_EQ(m.parameters().size(), 3u);
  for (const Tensor& p : m.plist) EXPECT_TRUE(p.requires_grad());
  EXPECT_TRUE(m.get_parameter("plist.1").is_same(m.plist[1]));
  EXPECT_TRUE(m.plist[-1].is_same(m.plist[2]));
  EXPECT_TENSOR_EQ(m.plist[2], full({4}, 2.0));

  // The registry reads the entries: assigning one re-registers it.
  Tensor t = ones({5});
  m.plist[0] = t;
  EXPECT_TRUE(m.get_parameter("plist.0").is_same(t));
  EXPECT_EQ(m.state_dict().at("plist.0").sizes().hints(), (std::vector<int64_t>{5}));

  // load_state_dict writes into the entries; to() converts them in place.
  nn::StateDict sd{{"plist.0", full({5}, 7.0)}, {"plist.1", full({3}, 8.0)}, {"plist.2", full({4}, 9.0)}};
  m.load_state_dict(sd);
  EXPECT_TENSOR_EQ(t, full({5}, 7.0));
  EXPECT_TENSOR_EQ(m.plist[1], full({3}, 8.0));
  m.to(kFloat64);
  EXPECT_EQ(m.plist[1].dtype(), kFloat64);
  EXPECT_ERROR(m.plist[3], "index 3 is out of range for ParameterList of size 3");

  nn::ParameterList extended(std::vector<Tensor>{zeros({2, 3})});
  extended.extend({ones({3}), zeros({})});
  EXPECT_EQ(extended.str(),
            "ParameterList(\n"
            "    (0): Parameter containing: [torch.float32 of size 2x3]\n"
            "    (1): Parameter containing: [torch.float32 of size 3]\n"
            "    (2): Parameter containing: [torch.float32 of size ]\n"
            ")");
}

TEST(NnContainers, ParameterDictRegistersEntriesByKey) {
  struct Model : nn::Module {
    nn::ParameterDict pd{{"alpha", ones({2})}, {"beta", zeros({3})}};
    Model() { register_module("pd", pd); }
  } m;
  m.pd.insert("gamma", full({1}, 3.0));
  EXPECT_EQ(m.pd.keys(), (Names{"alpha", "beta", "gamma"}));
  EXPECT_EQ(names_of(m.named_parameters()), (Names{"pd.alpha", "pd.beta", "pd.gamma"}));
  EXPECT_EQ(m.state_dict().keys(), (Names{"pd.alpha", "pd.beta", "pd.gamma"}));
  EXPECT_TRUE(m.pd.contains("beta"));
  EXPECT_FALSE(m.pd.contains("delta"));
  EXPECT_TRUE(m.pd["gamma"].requires_grad());
  EXPECT_TRUE(m.get_parameter("pd.gamma").is_same(m.pd["gamma"]));

  // Assigning an entry, or inserting a present key, replaces the parameter and keeps its place.
  Tensor b = ones({4});
  m.pd["beta"] = b;
  EXPECT_TRUE(m.get_parameter("pd.beta").is_same(b));
  m.pd.insert("alpha", zeros({7}));
  EXPECT_EQ(m.pd.keys(), (Names{"alpha", "beta", "gamma"}));
  EXPECT_EQ(m.get_parameter("pd.alpha").sizes().hints(), (std::vector<int64_t>{7}));
  EXPECT_TRUE(m.get_parameter("pd.alpha").requires_grad());
  m.pd.update({{"gamma", full({2}, 1.0)}, {"delta", zeros({1})}});
  EXPECT_EQ(m.pd.keys(), (Names{"alpha", "beta", "gamma", "delta"}));

  Names seen;
  for (const auto& [key, t] : m.pd) seen.push_back(key + ":" + std::to_string(t.numel().hint()));
  EXPECT_EQ(seen, (Names{"alpha:7", "beta:4", "gamma:2", "delta:1"}));
  EXPECT_EQ(names_of(m.pd.items()), m.pd.keys());
  EXPECT_TRUE(m.pd.values()[1].is_same(b));

  EXPECT_ERROR(m.pd["epsilon"], "ParameterDict has no key \"epsilon\"", "insert adds one");
  EXPECT_ERROR(m.pd.insert("a.b", zeros({1})), "can't contain \".\"");
  EXPECT_EQ(m.pd.size(), 4u);  // the rejected key left nothing behind
  EXPECT_EQ(nn::ParameterDict({{"w", zeros({2, 2})}}).str(),
            "ParameterDict(  (w): Parameter containing: [torch.float32 of size 2x2])");
}

}  // namespace
}  // namespace sinter

namespace sinter {
namespace {

TEST(NnContainers, ModuleDictPopAndClearUnregister) {
  nn::Linear member(2, 2);
  nn::ModuleDict d{{"fc", std::make_shared<nn::Linear>(4, 3)}, {"act", std::make_shared<nn::ReLU>()}};
  d.insert("member", member);
  std::shared_ptr<nn::Module> fc = d.pop("fc");
  EXPECT_EQ(fc->name(), "Linear");
  EXPECT_EQ(fc.use_count(), 1);  // the dict gave its ownership away
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"act", "member"}));
  EXPECT_EQ(d.named_parameters().size(), 2u);  // member.weight, member.bias
  EXPECT_EQ(d.pop("member").get(), &member);   // borrowed: a non-owning pointer
  EXPECT_ERROR(d.pop("fc"), "pop", "fc", "act");
  d.clear();
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(d.named_children().empty());
  d.insert("fc", fc);  // the key may be used again
  EXPECT_EQ(d.named_parameters().size(), 2u);
}

TEST(NnContainers, ParameterDictPopAndClearUnregister) {
  nn::ParameterDict p{{"a", ones({2})}, {"b", zeros({3})}, {"c", full({1}, 5.0)}};
  Tensor b = p.pop("b");
  EXPECT_EQ(b.sizes(), (SymIntList{3}));
  EXPECT_EQ(p.keys(), (std::vector<std::string>{"a", "c"}));
  nn::NamedTensors named = p.named_parameters();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[1].first, "c");
  p["c"] = full({1}, 7.0);  // the registry still reads the moved entry
  EXPECT_EQ(p.named_parameters()[1].second.item<float>(), 7.0f);
  EXPECT_ERROR(p.pop("b"), "pop", "b");
  p.clear();
  EXPECT_TRUE(p.empty());
  EXPECT_TRUE(p.named_parameters().empty());
}

}  // namespace
}  // namespace sinter
