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

}  // namespace
}  // namespace sinter
