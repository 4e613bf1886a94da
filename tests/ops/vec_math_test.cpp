// The AVX-512 kernels of vec_math.h against float64 references: exp, sigmoid, silu and gelu over the whole
// float range (a sweep of bit patterns of both signs) and at their special values (infinities, NaN, subnormal
// results, the overflow edge), plain and with streaming stores; the bfloat16 kernels exhaustively against the
// float ones; softmax's exp pass; and the ops that use them (unary ops, softmax and log_softmax rows) at sizes
// around the vector width, strided, in place and streamed. Skipped on CPUs without AVX-512.
#include "ops/vec_math.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

#include "ops/loops.h"
#include "ops/reduce_math.h"
#include "testing.h"

namespace sinter {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
const std::vector<int64_t> kSizes = {0, 1, 15, 16, 17, 1000003};

#define SKIP_WITHOUT_AVX512() \
  if (!vec::available()) GTEST_SKIP() << "no AVX-512 (or SINTER_VEC_MATH=0)"

// Every 401st bit pattern of each sign (finite and not), plus the edges named in vec_math.h.
std::vector<float> sweep() {
  std::vector<float> xs;
  for (uint64_t b = 0; b < 0x80000000u; b += 401) {
    float f;
    const uint32_t bits = static_cast<uint32_t>(b);
    std::memcpy(&f, &bits, 4);
    xs.push_back(f);
    xs.push_back(-f);
  }
  for (float v : {0.f, -0.f, kInf, -kInf, kNan, -kNan, 88.72283f, 88.7228394f, 88.8f, 89.f, 89.5f, -87.3f, -87.5f,
                  -95.f, -103.9f, -103.97f, -104.f, -104.5f, -150.f, 1e-30f, -1e-30f, 1e-45f, 0.5f, -0.5f,
                  3.92f * 1.41421356f})
    xs.push_back(v);
  for (float v = -110.f; v <= 100.f; v += 0.013f) xs.push_back(v);
  return xs;
}

// Spacing of floats at |w| (2^-149 for subnormals).
double float_ulp(double w) {
  const double a = std::fabs(w);
  if (a < std::ldexp(1.0, -126)) return std::ldexp(1.0, -149);
  return std::ldexp(1.0, std::ilogb(a) - 23);
}

// |got - want| in units of the float spacing at want; 0 when both are NaN, or both the same infinity, or
// want overflows float and got is inf.
double ulps(float got, double want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : 1e30;
  if (std::fabs(want) > 3.4028235677973366e38) return got == std::copysign(kInf, want) ? 0 : 1e30;
  if (std::isinf(got)) return 1e30;
  return std::fabs(static_cast<double>(got) - want) / float_ulp(want);
}

using Kernel = void (*)(const float*, float*, int64_t, bool);

// Runs k over xs, once with ordinary stores and once streaming into a 64-byte-aligned array; both results must
// be the same bits.
std::vector<float> run(Kernel k, const std::vector<float>& xs) {
  const int64_t n = static_cast<int64_t>(xs.size());
  std::vector<float> plain(xs.size());
  k(xs.data(), plain.data(), n, false);
  std::unique_ptr<float, decltype(&std::free)> aligned(
      static_cast<float*>(std::aligned_alloc(64, (xs.size() * 4 + 63) / 64 * 64)), &std::free);
  k(xs.data(), aligned.get(), n, true);
  loops::stream_fence();
  EXPECT_EQ(std::memcmp(plain.data(), aligned.get(), xs.size() * 4), 0);
  return plain;
}

using KernelAs = void (*)(vec::Division, const float*, float*, int64_t);
const vec::Division kDivisions[] = {vec::Division::kDivide, vec::Division::kReciprocal};
const char* name(vec::Division d) { return d == vec::Division::kDivide ? "divide" : "reciprocal"; }

// k in division form d over xs; the form in use also through its public kernel, which must give the same bits.
std::vector<float> run_as(KernelAs k, vec::Division d, Kernel in_use, const std::vector<float>& xs) {
  std::vector<float> y(xs.size());
  k(d, xs.data(), y.data(), static_cast<int64_t>(xs.size()));
  if (d == vec::division()) EXPECT_EQ(std::memcmp(run(in_use, xs).data(), y.data(), xs.size() * 4), 0);
  return y;
}

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

TEST(VecMath, ExpWithinOneUlpOverTheWholeRange) {
  SKIP_WITHOUT_AVX512();
  const std::vector<float> xs = sweep();
  const std::vector<float> ys = run(&vec::exp, xs);
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double e = ulps(ys[i], std::exp(static_cast<double>(xs[i])));
    worst = std::max(worst, e);
    ASSERT_LE(e, 1.5) << "exp(" << xs[i] << ") = " << ys[i];
  }
  RecordProperty("worst_ulps", std::to_string(worst));
  // Exact special values.
  std::vector<float> s = {kInf, -kInf, 0.f, -0.f, 89.f, 1000.f, -104.f, -1000.f, kNan};
  std::vector<float> r = run(&vec::exp, s);
  EXPECT_EQ(r[0], kInf);
  EXPECT_EQ(r[1], 0.f);
  EXPECT_EQ(r[2], 1.f);
  EXPECT_EQ(r[3], 1.f);
  EXPECT_EQ(r[4], kInf);
  EXPECT_EQ(r[5], kInf);
  EXPECT_EQ(r[6], 0.f);
  EXPECT_EQ(r[7], 0.f);
  EXPECT_TRUE(std::isnan(r[8]));
  // Subnormal results are rounded once (scalef), not flushed: exp(-100) = 3.72e-44.
  std::vector<float> sub = run(&vec::exp, {-100.f, -90.f, -87.5f});
  EXPECT_LE(ulps(sub[0], std::exp(-100.0)), 1.0);
  EXPECT_LE(ulps(sub[1], std::exp(-90.0)), 1.0);
  EXPECT_GT(sub[1], 0.f);
}

TEST(VecMath, SigmoidAndSiluAccurateOverTheWholeRange) {
  SKIP_WITHOUT_AVX512();
  const std::vector<float> xs = sweep();
  for (vec::Division d : kDivisions) {
    SCOPED_TRACE(name(d));
    const std::vector<float> sg = run_as(&vec::sigmoid_as, d, &vec::sigmoid, xs);
    const std::vector<float> sl = run_as(&vec::silu_as, d, &vec::silu, xs);
    for (size_t i = 0; i < xs.size(); ++i) {
      const double x = xs[i];
      // e^-|x| (1 ulp), the quotient and for x < 0 a product: measured 2.4 (divide) and 2.8 ulp at worst.
      ASSERT_LE(ulps(sg[i], sigmoid_ref(x)), 3.5) << "sigmoid(" << xs[i] << ") = " << sg[i];
      // silu's product adds one rounding (3.4 ulp measured). Below x = -87.3, e^x is subnormal and has lost
      // bits before the product scales it back up: there the error is relative 1e-5 or a few subnormal steps.
      const double want = x * sigmoid_ref(x);
      if (std::isinf(x) && x < 0) {
        EXPECT_TRUE(std::isnan(sl[i]));  // -inf * 0, as x / (1 + exp(-x)) gives
        continue;
      }
      if (!(x < -87.3))
        ASSERT_LE(ulps(sl[i], want), 4.5) << "silu(" << xs[i] << ") = " << sl[i];
      else
        ASSERT_LE(std::fabs(sl[i] - want), 1e-5 * std::fabs(want) + 64 * std::ldexp(1.0, -149))
            << "silu(" << xs[i] << ")";
    }
  }
  std::vector<float> r = run(&vec::sigmoid, {kInf, -kInf, 0.f, -0.f, kNan, 100.f, -100.f, -1000.f});
  EXPECT_EQ(r[0], 1.f);
  EXPECT_EQ(r[1], 0.f);
  EXPECT_EQ(r[2], 0.5f);
  EXPECT_EQ(r[3], 0.5f);
  EXPECT_TRUE(std::isnan(r[4]));
  EXPECT_EQ(r[5], 1.f);
  EXPECT_GT(r[6], 0.f);  // e^-100 / (1 + e^-100): a subnormal, not 0
  EXPECT_EQ(r[7], 0.f);
}

TEST(VecMath, GeluWithinItsBoundOverTheWholeRange) {
  SKIP_WITHOUT_AVX512();
  const std::vector<float> xs = sweep();
  for (vec::Division d : kDivisions) {
    SCOPED_TRACE(name(d));
    const std::vector<float> ys = run_as(&vec::gelu_as, d, &vec::gelu, xs);
    for (size_t i = 0; i < xs.size(); ++i) {
      const double x = xs[i], want = gelu_ref(x);
      if (std::isnan(x) || (std::isinf(x) && x < 0)) {
        EXPECT_TRUE(std::isnan(ys[i])) << xs[i];  // -inf * 0, as 0.5 * x * (1 + erf(x)) gives
        continue;
      }
      if (std::isinf(want) || std::fabs(x) > 1e38) {
        EXPECT_EQ(ys[i], static_cast<float>(want)) << xs[i];
        continue;
      }
      ASSERT_LE(std::fabs(ys[i] - want), 3e-7 * std::max(1.0, std::fabs(x)) + 2e-7 * std::fabs(want))
          << "gelu(" << xs[i] << ") = " << ys[i];
    }
  }
  std::vector<float> r = run(&vec::gelu, {kInf, 0.f, -0.f, -5.6f, -10.f, 5.6f, 1e30f, 30.f});
  EXPECT_EQ(r[0], kInf);
  EXPECT_EQ(r[1], 0.f);
  EXPECT_EQ(r[2], 0.f);
  EXPECT_EQ(r[3], 0.f);
  EXPECT_EQ(r[4], 0.f);
  EXPECT_EQ(r[5], 5.6f);
  EXPECT_EQ(r[6], 1e30f);
  EXPECT_EQ(r[7], 30.f);
}

// Arrays of every length up to a few vectors, at every offset within a vector: the masked tail must neither
// change the values nor write past the end.
TEST(VecMath, TailsAndOffsetsWriteExactlyTheirElements) {
  SKIP_WITHOUT_AVX512();
  std::vector<float> src(128);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.37f - 20.f;
  for (Kernel k : {&vec::exp, &vec::sigmoid, &vec::silu, &vec::gelu}) {
    std::vector<float> whole(src.size());
    k(src.data(), whole.data(), static_cast<int64_t>(src.size()), false);
    for (int64_t off = 0; off < 16; ++off) {
      for (int64_t n = 0; n <= 50; ++n) {
        std::vector<float> out(src.size(), -7.f);
        k(src.data() + off, out.data() + off, n, (off & 1) != 0);
        loops::stream_fence();
        for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
          if (i >= off && i < off + n)
            ASSERT_EQ(out[i], whole[i]) << "n " << n << " off " << off << " i " << i;
          else
            ASSERT_EQ(out[i], -7.f) << "n " << n << " off " << off << " wrote " << i;
        }
      }
    }
  }
}

// The bfloat16 kernels give the float kernel's result rounded by loops::f32_to_bf16, for all 65536 inputs.
TEST(VecMath, Bf16KernelsAreTheFloatKernelsRounded) {
  SKIP_WITHOUT_AVX512();
  std::vector<uint16_t> in(65536 + 5);  // + 5: a tail shorter than a vector
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint16_t>(i);
  std::vector<float> f(in.size());
  for (size_t i = 0; i < in.size(); ++i) f[i] = loops::bf16_to_f32(in[i]);
  const int64_t n = static_cast<int64_t>(in.size());
  struct Pair {
    Kernel f32;
    void (*bf16)(const uint16_t*, uint16_t*, int64_t);
  };
  for (Pair p : {Pair{&vec::exp, &vec::exp_bf16}, Pair{&vec::sigmoid, &vec::sigmoid_bf16},
                 Pair{&vec::silu, &vec::silu_bf16}, Pair{&vec::gelu, &vec::gelu_bf16}}) {
    std::vector<float> yf(in.size());
    p.f32(f.data(), yf.data(), n, false);
    std::vector<uint16_t> y(in.size());
    p.bf16(in.data(), y.data(), n);
    for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(y[i], loops::f32_to_bf16(yf[i])) << "input bits " << in[i];
  }
}

TEST(VecMath, ExpShiftSumMatchesFloat64) {
  SKIP_WITHOUT_AVX512();
  for (int64_t n : {0, 1, 15, 16, 17, 31, 33, 255, 257, 2047, 2049, 4097, 1000003}) {
    std::vector<float> x = (testing::random({n}, kFloat32, static_cast<uint64_t>(n)) * 4.0).to_vector<float>();
    if (n > 3) x[2] = -kInf;  // exp(-inf - m) = 0
    float m = -kInf;
    for (float v : x) m = std::max(m, v);
    double want = 0;
    for (float v : x) want += std::exp(static_cast<double>(v) - m);
    std::vector<float> y(x.size(), -1.f);
    const double got_stored = vec::exp_shift_sum(x.data(), y.data(), n, m);
    const double got_sum = vec::exp_shift_sum(x.data(), nullptr, n, m);
    EXPECT_NEAR(got_stored, want, 1e-6 * want) << n;
    EXPECT_EQ(got_stored, got_sum) << n;
    for (int64_t i = 0; i < n; ++i) {
      const double e = std::exp(static_cast<double>(x[i]) - m);
      ASSERT_LE(std::fabs(y[i] - e), 6e-7 * e) << n << " " << i;
    }
    std::vector<float> inplace = x;  // y may be x
    EXPECT_EQ(vec::exp_shift_sum(inplace.data(), inplace.data(), n, m), got_stored);
    EXPECT_EQ(inplace, y);
  }
  // Down to results below float's smallest normal: 6e-7 relative, then subnormal steps. Maxima within 40 of 0
  // take exp_row_v, the others exp_le0_fast_v (x - m is exact here for those: Sterbenz).
  for (float m : {0.f, 39.5f, -40.f, 40.5f, -41.f, 1e4f}) {
    std::vector<float> deep(4097), ey(deep.size());
    const float step = std::fabs(m) > 200 ? 0 : 0.02683f;  // m .. m - 109.9
    for (size_t i = 0; i < deep.size(); ++i) deep[i] = m - step * static_cast<float>(i);
    if (step == 0) std::iota(deep.begin(), deep.end(), m - 4096.f);
    vec::exp_shift_sum(deep.data(), ey.data(), static_cast<int64_t>(deep.size()), m);
    for (size_t i = 0; i < deep.size(); ++i) {
      const double e = std::exp(static_cast<double>(deep[i]) - m);
      ASSERT_LE(std::fabs(ey[i] - e), 6e-7 * e + std::ldexp(1.0, -149)) << m << " " << deep[i];
    }
  }
  std::vector<float> with_nan = {1.f, kNan, 2.f};
  EXPECT_TRUE(std::isnan(vec::exp_shift_sum(with_nan.data(), nullptr, 3, 2.f)));
}

// The eager ops on these kernels, against the same ops in float64, with the op tests' tolerance.
TEST(VecMath, UnaryOpsMatchFloat64AtEverySize) {
  for (int64_t n : kSizes) {
    Tensor x = testing::random({n}, kFloat32, 7) * 6.0;
    Tensor x64 = x.to(kFloat64);
    EXPECT_CLOSE(exp(x), exp(x64).to(kFloat32));
    EXPECT_CLOSE(sigmoid(x), sigmoid(x64).to(kFloat32));
    EXPECT_CLOSE(silu(x), silu(x64).to(kFloat32));
    EXPECT_CLOSE(gelu(x), gelu(x64).to(kFloat32));
    // Strided input (gathered into float buffers), in place, and bfloat16 through the same kernels.
    Tensor nc = testing::non_contiguous(x);
    EXPECT_CLOSE(sigmoid(nc), sigmoid(x64).to(kFloat32));
    EXPECT_CLOSE(gelu(nc), gelu(x64).to(kFloat32));
    Tensor y = x.clone();
    y.sigmoid_();
    EXPECT_TENSOR_EQ(y, sigmoid(x));
    EXPECT_TENSOR_EQ(sigmoid(x.to(kBFloat16)), sigmoid(x.to(kBFloat16).to(kFloat32)).to(kBFloat16));
    EXPECT_TENSOR_EQ(gelu(x.to(kFloat16)), gelu(x.to(kFloat16).to(kFloat32)).to(kFloat16));
  }
  // Integer inputs of sigmoid and exp compute in float through the same kernels.
  Tensor i = arange(-120, 120);
  EXPECT_TENSOR_EQ(sigmoid(i), sigmoid(i.to(kFloat32)));
  EXPECT_CLOSE(exp(i), exp(i.to(kFloat64)).to(kFloat32));
}

// Outputs of at least loops::kStreamMinBytes are written by the kernels with streaming stores: the same bits
// as the kernel gives into an ordinary array, on one thread or many.
TEST(VecMath, StreamedOutputsEqualTheKernel) {
  SKIP_WITHOUT_AVX512();
  const int64_t n = loops::kStreamMinBytes / 4 + 1237;
  Tensor x = testing::random({n}, kFloat32, 3) * 10.0;
  const std::vector<float> xv = x.to_vector<float>();
  std::vector<float> want(xv.size());
  vec::sigmoid(xv.data(), want.data(), n, false);
  for (int threads : {1, 0}) {
    set_num_threads(threads);
    EXPECT_EQ(sigmoid(x).to_vector<float>(), want);
    EXPECT_EQ(sigmoid(x.narrow(0, 1, n - 1)).to_vector<float>(), std::vector<float>(want.begin() + 1, want.end()));
  }
  set_num_threads(0);
}

TEST(VecMath, SoftmaxRowsMatchFloat64AtEverySize) {
  for (int64_t n : {1, 15, 16, 17, 2049, 4097, 1000003}) {
    Tensor x = testing::random({2, n}, kFloat32, 9) * 5.0;
    Tensor x64 = x.to(kFloat64);
    EXPECT_CLOSE(softmax(x, -1), softmax(x64, -1).to(kFloat32)) << n;
    EXPECT_CLOSE(log_softmax(x, -1), log_softmax(x64, -1).to(kFloat32)) << n;
  }
  // Special values: -inf entries weigh nothing, a row of -inf is NaN (as in PyTorch), +inf and NaN make NaN.
  Tensor s = from_vector(std::vector<float>{0.f, -kInf, 1.f, -kInf, -kInf, -kInf, kInf, 0.f, 1.f, kNan, 0.f, 1.f},
                         {4, 3});
  std::vector<float> r = softmax(s, -1).to_vector<float>();
  EXPECT_NEAR(r[0], 1.0 / (1.0 + std::exp(1.0)), 1e-7);
  EXPECT_EQ(r[1], 0.f);
  EXPECT_NEAR(r[2], 1.0 / (1.0 + std::exp(-1.0)), 1e-7);
  for (int i = 3; i < 12; ++i) EXPECT_TRUE(std::isnan(r[i])) << i;
  std::vector<float> l = log_softmax(s, -1).to_vector<float>();
  EXPECT_EQ(l[1], -kInf);
  EXPECT_NEAR(l[2], -std::log1p(std::exp(-1.0)), 1e-6);
}

}  // namespace
}  // namespace sinter

namespace sinter {
namespace {

// vec::lane_sum is reduce::lane_sum_leaf<float> in AVX-512: the same bits at every length (tails included),
// with values of mixed magnitudes (where the order of additions shows), infinities and NaN.
TEST(VecMath, LaneSumHasTheBitsOfTheScalarLeaf) {
  if (!vec::available()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::vector<float> x(2100);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(static_cast<float>(i) * 1.7f) * std::pow(10.f, static_cast<float>(i % 9) - 4.f);
  for (int64_t off : {0, 3})
    for (int64_t n = 0; n + off <= 2048; n += (n < 70 ? 1 : 37)) {
      const float want = reduce::lane_sum_leaf<float>(x.data() + off, n, [](float v) { return v; });
      const float got = vec::lane_sum(x.data() + off, n);
      ASSERT_EQ(std::memcmp(&want, &got, 4), 0) << off << " " << n << ": " << want << " vs " << got;
    }
  std::vector<float> special = {1.f, kInf, 2.f, -kInf};
  EXPECT_TRUE(std::isnan(vec::lane_sum(special.data(), 4)));
  special[1] = kNan;
  EXPECT_TRUE(std::isnan(vec::lane_sum(special.data(), 3)));
}

// row_max (attention's softmax): every length and offset against a plain loop, -inf for an empty or all -inf
// row, NaN wherever a NaN sits (also in a masked tail).
TEST(VecMath, RowMaxEveryTailAndNan) {
  if (!vec::available()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.37f) * 100.0f;
  for (int64_t off : {0, 1, 5})
    for (int64_t n = 0; n + off <= 200; ++n) {
      float want = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < n; ++i) want = std::max(want, x[static_cast<size_t>(off + i)]);
      EXPECT_EQ(vec::row_max(x.data() + off, n), want) << off << " " << n;
    }
  std::vector<float> inf(70, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(vec::row_max(inf.data(), 70), -std::numeric_limits<float>::infinity());
  for (size_t at : {0u, 17u, 63u, 64u, 69u}) {
    std::vector<float> y = inf;
    y[at] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(vec::row_max(y.data(), 70))) << at;
  }
}

}  // namespace
}  // namespace sinter
