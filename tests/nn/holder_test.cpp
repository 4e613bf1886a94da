// A small model written the LibTorch way: Impl classes, SINTER_MODULE holders, register_module of holders, and
// `->` on holders and on built-in layer values.
#include <fmt/format.h>

#include "sinter/compile.h"
#include "sinter/nn.h"
#include "nn_testing.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;
using testing::Names;
using testing::names_of;

// forward takes its tensor by value and does not override Module::forward, as LibTorch code often has it: the
// holder calls it directly.
struct MlpImpl : nn::Module {
  MlpImpl(int64_t in, int64_t hidden, int64_t out) : fc1(in, hidden), fc2(hidden, out) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(Tensor x) { return fc2->forward(relu(fc1->forward(x))); }
  nn::Linear fc1, fc2;
};
SINTER_MODULE(Mlp);

struct NetImpl : nn::Module {
  NetImpl() {
    mlp = register_module("mlp", Mlp(8, 16, 4));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(4));
  }
  Tensor forward(const Tensor& x) override { return norm->forward(mlp(x)); }
  Mlp mlp{nullptr};
  std::shared_ptr<nn::LayerNorm> norm;
};
SINTER_MODULE(Net);

static_assert(std::is_constructible_v<Mlp, int, int, int>);
static_assert(!std::is_default_constructible_v<Mlp>);  // MlpImpl needs arguments
static_assert(std::is_default_constructible_v<Net>);
static_assert(std::is_same_v<Net::Impl, NetImpl>);

TEST(NnHolder, ModelWrittenTheLibTorchWay) {
  Net net;
  EXPECT_EQ(names_of(net->named_parameters()), (Names{"mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight",
                                                      "mlp.fc2.bias", "norm.weight", "norm.bias"}));
  EXPECT_EQ(net->mlp->fc1->weight.sizes().hints(), (std::vector<int64_t>{16, 8}));
  Tensor x = random({3, 8});
  const nn::Linear& fc1 = net->mlp->fc1;
  const nn::Linear& fc2 = net->mlp->fc2;
  Tensor expected = layer_norm(linear(relu(linear(x, fc1.weight, fc1.bias)), fc2.weight, fc2.bias), {4},
                               net->norm->weight, net->norm->bias);
  EXPECT_CLOSE(net(x), expected);
  EXPECT_CLOSE(net->forward(x), expected);
  EXPECT_CLOSE((*net)(x), expected);  // the module itself, through Module::operator()
  EXPECT_CLOSE(net->mlp(x), linear(relu(linear(x, fc1.weight, fc1.bias)), fc2.weight, fc2.bias));
  EXPECT_EQ(net->name(), "NetImpl");
  net->eval();
  EXPECT_FALSE(net->mlp->is_training());
}

TEST(NnHolder, CompileTakesAHolderAsItsModule) {
  Net net;
  Tensor x = random({3, 8});
  Tensor want = net(x);
  auto fast = compile(net);  // the module's training flags guarded, the module kept alive by the result
  EXPECT_CLOSE(fast(x), want);
  net->eval();
  EXPECT_CLOSE(fast(x), want);
  EXPECT_EQ(fast.stats().compiles, 2) << "train() and eval() are separate entries";
  auto kept = compile(Mlp(8, 4, 2));  // a temporary holder: the compiled function shares ownership
  EXPECT_EQ(kept(x).sizes().vec(), (std::vector<int64_t>{3, 2}));
}

TEST(NnHolder, CopiesShareOneModule) {
  Mlp a(2, 3, 1);
  Mlp b = a;
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(&*a, a.ptr().get());
  NoGradGuard no_grad;  // parameters are written in place outside autograd
  b->fc1.weight.fill_(0.5);
  EXPECT_TENSOR_EQ(a->fc1.weight, full({3, 2}, 0.5));
  EXPECT_EQ(a.ptr().use_count(), 2);

  // register_module shares ownership with the parent, for a temporary or a named holder.
  struct Parent : nn::Module {
    Mlp kept{nullptr};
    Parent(const Mlp& shared) {
      kept = register_module("kept", Mlp(2, 2, 2));
      register_module("shared", shared);
    }
  };
  auto parent = std::make_unique<Parent>(a);
  EXPECT_EQ(a.ptr().use_count(), 3);
  EXPECT_EQ(&parent->get_submodule("shared"), a.get());
  EXPECT_EQ(&parent->get_submodule("kept"), parent->kept.get());
  Mlp kept = parent->kept;
  parent.reset();
  EXPECT_EQ(kept.ptr().use_count(), 1);  // the parent's share is gone; the module lives on in `kept`
  EXPECT_EQ(a.ptr().use_count(), 2);
}

TEST(NnHolder, EmptyHolderThrowsOnUse) {
  Mlp empty{nullptr};
  EXPECT_TRUE(empty.is_empty());
  EXPECT_FALSE(static_cast<bool>(empty));
  EXPECT_ERROR(empty->fc1, "empty module holder");
  EXPECT_ERROR(empty(random({1, 2})), "empty module holder");
  struct M : nn::Module {
  } m;
  EXPECT_ERROR(m.register_module("x", empty), "register_module(\"x\") got a null module");
  empty = Mlp(2, 2, 2);
  EXPECT_FALSE(empty.is_empty());
}

TEST(NnHolder, ArrowWorksOnBuiltInLayerValues) {
  nn::Linear fc(3, 2);
  Tensor x = random({4, 3});
  EXPECT_CLOSE(fc->forward(x), linear(x, fc->weight, fc->bias));
  nn::Conv2d conv(1, 2, 3);
  EXPECT_EQ(conv->weight.sizes().hints(), (std::vector<int64_t>{2, 1, 3, 3}));
  nn::MultiheadAttention mha(4, 2);
  Tensor q = random({5, 1, 4});
  EXPECT_CLOSE(std::get<0>(mha->forward(q, q, q)), std::get<0>(mha(q, q, q)));
  nn::ReLU act;
  EXPECT_TENSOR_EQ(act->forward(x), relu(x));  // a layer without members of its own: Module's arrow
  const nn::LayerNorm ln(3);
  EXPECT_EQ(ln->normalized_shape, (std::vector<int64_t>{3}));
  // Holders go into containers as shared members.
  nn::Sequential seq;
  Mlp mlp(3, 4, 2);
  seq.push_back(mlp);
  nn::ModuleDict dict;
  dict.insert("mlp", mlp);
  EXPECT_EQ(&seq[0], mlp.get());
  EXPECT_EQ(&dict["mlp"], mlp.get());
  EXPECT_EQ(mlp.ptr().use_count(), 3);
}

}  // namespace
}  // namespace sinter

namespace sinter {
namespace {

// An error inside a holder's module names the line that called the holder, as with Module::operator().
TEST(NnHolder, ErrorsNameTheCallersLine) {
  Mlp mlp(8, 16, 4);
  Tensor wrong = random({3, 5});
  int line = __LINE__ + 2;
  try {
    mlp(wrong);
    FAIL() << "a [3, 5] input to Linear(8, 16) should throw";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(fmt::format("holder_test.cpp:{}", line)), std::string::npos) << msg;
    EXPECT_EQ(msg.find("nn.h"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace sinter
