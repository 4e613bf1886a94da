// max-autotune on CUDA (runtime/cuda_autotune.cpp): each generated kernel that may run twice on its buffers is
// launched in every candidate configuration on its first launch, with a progress line, and the result is the
// default mode's bit for bit (tests/cuda/cuda_corpus_test.cpp checks that over the whole corpus).
#include <gtest/gtest.h>

#include <cstring>

#include "sinter/compile.h"
#include "sinter/cuda.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

TEST(CudaAutotune, FirstLaunchMeasuresEachKernelOnceAndSaysSo) {
  auto fn = [](const Tensor& x, const Tensor& y) { return softmax(x * y + 1, -1) - sigmoid(y); };
  Tensor x = testing::random({33, 70}, kFloat32, 1).to(kCUDA), y = testing::random({70}, kFloat32, 2).to(kCUDA);
  auto tuned = compile(fn, {.mode = Mode::kMaxAutotune});
  ::testing::internal::CaptureStderr();
  Tensor first = tuned(x, y);
  Tensor second = tuned(x, y);
  std::string err = ::testing::internal::GetCapturedStderr();
  size_t at = err.find("[sinter] max-autotune graph_");
  ASSERT_NE(at, std::string::npos) << err;
  EXPECT_EQ(err.find("[sinter] max-autotune graph_", at + 1), std::string::npos) << "measured twice:\n" << err;
  Tensor want = compile(fn)(x, y).cpu();
  for (const Tensor& got : {first.cpu(), second.cpu()})
    EXPECT_EQ(std::memcmp(got.data_ptr(), want.data_ptr(), want.numel().hint() * sizeof(float)), 0);
}

// Kernels that store parts of one buffer (a concatenation) or write over an extern's result (a scatter, an
// accumulating index_put) keep their values under max-autotune.
TEST(CudaAutotune, ConcatenationsAndScattersKeepTheirValues) {
  auto fn = [](const Tensor& x, const Tensor& y, const Tensor& idx, const Tensor& rows) {
    Tensor c = cat({relu(x), y * 2, sigmoid(x)}, 0) + 1;
    Tensor s = scatter(x * 3, 1, idx, y);
    Tensor p = index_put(x, {rows}, y * 0.5, true);  // rows repeat: accumulated
    return std::vector<Tensor>{c, s, p};
  };
  Tensor x = testing::random({4, 6}, kFloat32, 1).to(kCUDA), y = testing::random({4, 6}, kFloat32, 2).to(kCUDA);
  Tensor idx = tensor({0, 2, 1, 3, 5, 4, 1, 0, 2, 3, 4, 5, 5, 4, 3, 2, 1, 0, 0, 1, 2, 3, 4, 5}, kInt64)
                   .view({4, 6})
                   .to(kCUDA);
  Tensor rows = tensor({1, 3, 1, 0}, kInt64).to(kCUDA);
  std::vector<Tensor> want = compile(fn)(x, y, idx, rows);
  std::vector<Tensor> eager = fn(x.cpu(), y.cpu(), idx.cpu(), rows.cpu());
  ::testing::internal::CaptureStderr();
  std::vector<Tensor> got = compile(fn, {.mode = Mode::kMaxAutotune})(x, y, idx, rows);
  ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Tensor g = got[i].cpu().contiguous(), w = want[i].cpu().contiguous();
    EXPECT_EQ(std::memcmp(g.data_ptr(), w.data_ptr(), w.numel().hint() * w.element_size()), 0) << i;
    EXPECT_CLOSE(g, eager[i]) << i;
  }
}

}  // namespace
}  // namespace sinter
