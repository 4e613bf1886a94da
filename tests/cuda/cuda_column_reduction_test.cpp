// Column reductions on CUDA (a bias's gradient: the reduced dim strided, the kept one contiguous): lanes across
// 32 consecutive rows, warps along the reduced dim, chunks of it across blocks combined by the block that counts
// last in its tile. Row counts that are not multiples of 32, one and several chunks, several results in one kernel,
// mean/amax/prod, bf16 inputs, symbolic sizes; every result against eager on the CPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda/generated_source.h"
#include "sinter/compile.h"
#include "sinter/cuda.h"
#include "sinter/ops.h"
#include "testing.h"

namespace sinter {
namespace {

using testing::random;

using Fn = std::function<std::vector<Tensor>(const Tensor&)>;

// Compiles f for CUDA, runs it on each input and compares with eager on the CPU; returns the generated source.
std::string check(const Fn& f, const std::vector<Tensor>& inputs, Dynamic dynamic, double rtol = -1) {
  return testing::cuda_source_of([&] {
    auto c = compile(f, {.dynamic = dynamic});
    for (const Tensor& x : inputs) {
      SCOPED_TRACE(x.sizes().str());
      std::vector<Tensor> want = f(x), got = c(x.to(kCUDA));
      EXPECT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size() && i < want.size(); ++i) EXPECT_CLOSE(got[i].to(kCPU), want[i], rtol);
    }
  });
}

constexpr const char* kColumns = "lanes across 32 rows";

TEST(CudaColumnReduction, SumsOverTheLeadingDim) {
  Fn f = [](const Tensor& x) { return std::vector<Tensor>{x.sum(DimList{0})}; };
  // [3, 70]: one chunk per tile; [2000, 45]: rows not a multiple of 32, chunks across blocks; [500, 64]: two tiles.
  std::vector<Tensor> in = {random({3, 70}, kFloat32, 1), random({2000, 45}, kFloat32, 2),
                            random({500, 64}, kFloat32, 3)};
  for (const Tensor& x : in) EXPECT_NE(check(f, {x}, Dynamic::kNever, 1e-4).find(kColumns), std::string::npos);
  // Fewer rows than a tile: the reduced elements across lanes instead (a split row kernel here).
  EXPECT_EQ(check(f, {random({9000, 3}, kFloat32, 8)}, Dynamic::kNever, 1e-4).find(kColumns), std::string::npos);
}

TEST(CudaColumnReduction, SeveralResultsAndOtherReductions) {
  Fn f = [](const Tensor& x) {
    return std::vector<Tensor>{x.sum(DimList{0}), (x * x).sum(DimList{0}), mean(x, DimList{0}), amax(x, DimList{0}),
                               amin(x, DimList{0})};
  };
  std::string src = check(f, {random({777, 33}, kFloat32, 4)}, Dynamic::kNever, 1e-4);
  EXPECT_NE(src.find(kColumns), std::string::npos);
  Fn p = [](const Tensor& x) { return std::vector<Tensor>{prod(x, 0)}; };
  check(p, {testing::random_positive({40, 50}, kFloat32, 0.9, 1.1, 5)}, Dynamic::kNever, 1e-4);
}

TEST(CudaColumnReduction, LeadingDimsOfAThreeDimTensorAndBFloat16) {
  Fn f = [](const Tensor& x) { return std::vector<Tensor>{x.sum(DimList{0, 1})}; };
  check(f, {random({6, 300, 40}, kFloat32, 6)}, Dynamic::kNever, 1e-4);
  Fn g = [](const Tensor& x) { return std::vector<Tensor>{x.to(kFloat32).sum(DimList{0}), x.sum(DimList{0})}; };
  check(g, {random({1500, 96}, kBFloat16, 7)}, Dynamic::kNever, 2e-2);
}

TEST(CudaColumnReduction, SymbolicSizes) {
  Fn f = [](const Tensor& x) { return std::vector<Tensor>{x.sum(DimList{0}), amax(x, DimList{0})}; };
  std::vector<Tensor> in;
  for (int64_t n : {100, 1001, 37}) in.push_back(random({n, n / 3 + 5}, kFloat32, n));
  check(f, in, Dynamic::kAlways, 1e-4);
}

}  // namespace
}  // namespace sinter
