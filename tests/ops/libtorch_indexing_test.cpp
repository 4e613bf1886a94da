// LibTorch's indexing spelled as LibTorch users write it (x.index({Slice(), 0}), x.index_put_({...}, v)), checked
// against the same selection written with sinter's view ops, eager and compiled.
#include <gtest/gtest.h>

#include "sinter/sinter.h"
#include "testing.h"

namespace sinter {
namespace {

using namespace sinter::indexing;

Tensor sample() { return arange(24, kFloat32).view({2, 3, 4}); }

TEST(LibTorchIndexing, BasicIndicesAreViews) {
  Tensor x = sample();
  EXPECT_TENSOR_EQ(x.index({Slice(), 0}), x.select(1, 0));
  EXPECT_TENSOR_EQ(x.index({1}), x[1]);
  EXPECT_TENSOR_EQ(x.index({-1, Slice(1, None), Slice(None, None, 2)}), x[1].slice(0, 1).slice(1, 0, {}, 2));
  EXPECT_TENSOR_EQ(x.index({"...", 2}), x.select(2, 2));
  EXPECT_TENSOR_EQ(x.index({Ellipsis, Slice(None, -1)}), x.slice(2, 0, -1));
  EXPECT_EQ(x.index({None}).sizes().vec(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(x.index({Slice(), None, 0}).sizes().vec(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(x.index({true}).sizes().vec(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(x.index({false}).sizes().vec(), (std::vector<int64_t>{0, 2, 3, 4}));
  Tensor v = x.index({0, Slice(), 1});
  EXPECT_EQ(v.storage().get(), x.storage().get()) << "basic indexing returns a view";
}

TEST(LibTorchIndexing, TensorIndicesAreAdvanced) {
  Tensor x = sample();
  Tensor idx = tensor({2, 0});
  EXPECT_TENSOR_EQ(x.index({Slice(), idx}), index_select(x, 1, idx));
  EXPECT_TENSOR_EQ(x.index({0, Slice(), idx}), index_select(x[0], 1, idx));
  Tensor mask = x > 10;
  EXPECT_TENSOR_EQ(x.index({mask}), masked_select(x, mask));
  Tensor row_mask = tensor({true, false});
  EXPECT_TENSOR_EQ(x.index({row_mask}), x.slice(0, 0, 1));
  EXPECT_TENSOR_EQ(x.index({Slice(), Slice(), tensor({3})}), x.slice(2, 3, 4));
  EXPECT_TENSOR_EQ(x.index(std::vector<Tensor>{Tensor(), idx}), index_select(x, 1, idx)) << "the op's spelling";
}

TEST(LibTorchIndexing, BadIndicesAreClearErrors) {
  Tensor x = sample();
  EXPECT_ERROR(x.index({0, 0, 0, 0}), "too many indices for tensor of dimension 3");
  EXPECT_ERROR(x.index({Ellipsis, "..."}), "single ellipsis");
  EXPECT_ERROR(x.index({5}), "select", "5");
  EXPECT_ERROR(x.index({"x"}), "\"...\"");
}

TEST(LibTorchIndexing, IndexPutWritesThroughTheIndices) {
  Tensor x = zeros({3, 4});
  x.index_put_({Slice(), 0}, 5);
  x.index_put_({1, Slice(1, None)}, tensor({1.0, 2.0, 3.0}));
  x.index_put_({2}, ones({1, 4}));  // leading 1s of the value dropped, as PyTorch does
  x.index_put_({x < 0}, -1);       // no element selected: nothing changes
  Tensor expect = tensor({{5.0, 0.0, 0.0, 0.0}, {5.0, 1.0, 2.0, 3.0}, {1.0, 1.0, 1.0, 1.0}});
  EXPECT_TENSOR_EQ(x, expect);
  x.index_put_({x > 2}, 0);
  EXPECT_TENSOR_EQ(x, where(expect > 2, Scalar(0.0), expect));
  Tensor y = zeros({2, 3});
  y.index_put_({Slice(), tensor({0, 2})}, tensor({7.0, 8.0}));
  EXPECT_TENSOR_EQ(y, tensor({{7.0, 0.0, 8.0}, {7.0, 0.0, 8.0}}));
  EXPECT_ERROR(y.index_put_({0}, ones({4})), "3", "4");
}

TEST(LibTorchIndexing, CompiledIndexingMatchesEager) {
  auto fn = [](const Tensor& a) {
    Tensor t = a.clone();
    t.index_put_({Slice(), 0}, t.index({Slice(), -1}) * 2);
    t.index_put_({t > 20}, 0);
    return t.index({Slice(1, None), None, Ellipsis}) + t.index({0});
  };
  Tensor a = sample();
  for (const char* backend : {"aot_eager", "inductor"}) {
    auto f = compile(fn, {.backend = backend});
    EXPECT_TENSOR_EQ(f(a), fn(a)) << backend;
  }
}

}  // namespace
}  // namespace sinter
