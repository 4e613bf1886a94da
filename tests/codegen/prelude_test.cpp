// The prelude's math, compiled the way generated kernels are (through the kernel cache with the host toolchain):
// accuracy in ulps against double-precision <cmath> over >1M points including edge cases, exact float16/bfloat16
// conversions, and a check that the loops really vectorise (time against the same unit built without vectorising).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>

#include "codegen/cpp/prelude.h"
#include "codegen/cpp/toolchain.h"
#include "support/cache_files.h"
#include "codegen/cpp/kernel_cache.h"

namespace sinter::codegen::cpp {
namespace {

using codegen::cpp::CompiledObject;
using UnaryFn = void (*)(const float*, float*, long long);
using BinaryFn = void (*)(const float*, const float*, float*, long long);
using ToHalfFn = void (*)(const float*, uint16_t*, long long);
using FromHalfFn = void (*)(const uint16_t*, float*, long long);

const char* const kUnary[] = {"exp",   "expm1", "exp2", "log",   "log1p", "log2", "tanh",  "sigmoid", "erf",
                              "sqrt",  "rsqrt", "abs",  "floor", "ceil",  "sin",  "cos",   "round",   "trunc",
                              "asinh", "acosh", "atanh"};
const char* const kBinary[] = {"max", "min", "pow"};

std::string test_unit() {
  std::string src(prelude());
  for (const char* f : kUnary)
    src += fmt::format(
        "extern \"C\" void t_{0}(const float* __restrict x, float* __restrict y, sn_i64 n) {{\n"
        "#pragma omp simd\n  for (sn_i64 i = 0; i < n; ++i) y[i] = sn_{0}(x[i]);\n}}\n", f);
  for (const char* f : kBinary)
    src += fmt::format(
        "extern \"C\" void t_{0}(const float* __restrict a, const float* __restrict b, float* __restrict y, sn_i64 n) "
        "{{\n#pragma omp simd\n  for (sn_i64 i = 0; i < n; ++i) y[i] = sn_{0}(a[i], b[i]);\n}}\n", f);
  for (const char* h : {"bf16", "f16"})
    src += fmt::format(
        "extern \"C\" void t_f32_to_{0}(const float* __restrict x, sn_u16* __restrict y, sn_i64 n) {{\n"
        "#pragma omp simd\n  for (sn_i64 i = 0; i < n; ++i) y[i] = sn_f32_to_{0}(x[i]);\n}}\n"
        "extern \"C\" void t_{0}_to_f32(const sn_u16* __restrict x, float* __restrict y, sn_i64 n) {{\n"
        "#pragma omp simd\n  for (sn_i64 i = 0; i < n; ++i) y[i] = sn_{0}_to_f32(x[i]);\n}}\n", h);
  return src;
}

// One compiled copy of the unit for the whole suite, in a private cache directory.
class Prelude : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char templ[] = "/tmp/sinter-prelude-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = new std::string(templ);
    setenv("SINTER_CACHE_DIR", dir_->c_str(), 1);
    obj_ = new CompiledObject(codegen::cpp::compile_and_load({test_unit()}, "prelude_test"));
  }
  static void TearDownTestSuite() {
    delete obj_;
    codegen::cpp::clear_memory_cache();
    support::remove_tree(*dir_);
    unsetenv("SINTER_CACHE_DIR");
    delete dir_;
  }
  template <class F>
  static F fn(const std::string& name) {
    return reinterpret_cast<F>(obj_->library->symbol("t_" + name));
  }
  static inline std::string* dir_ = nullptr;
  static inline CompiledObject* obj_ = nullptr;
};

// Inputs: edge cases, random bit patterns over all finite floats, and dense uniform ranges where functions curve.
std::vector<float> test_inputs() {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {0.0f, -0.0f, inf, -inf, nan, -nan, 1.0f, -1.0f, 0.5f, 2.0f, 88.72f, 88.73f, 88.8f,
                          -87.3f, -103.9f, -104.0f, -104.5f, 89.0f, 1e-45f, -1e-45f, 1e-40f, 1.17549435e-38f,
                          3.4028235e38f, -3.4028235e38f, 1e-8f, -1e-8f, 0.34657359f, -0.34657359f, 9.0f, 10.0f,
                          -9.0f, 3.9f, 4.0f, -4.0f, 0.99999994f, 1.0000001f, -0.99999994f, 65504.0f, 1e20f, -1e20f};
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 600000; ++i) {
    uint32_t u = bits(rng);
    if (((u >> 23) & 0xff) == 0xff) continue;
    x.push_back(std::bit_cast<float>(u));
  }
  for (auto [lo, hi, count] : {std::tuple{-110.0f, 110.0f, 200000}, {-12.0f, 12.0f, 200000}, {-1.0f, 1.0f, 100000},
                               {-1e-3f, 1e-3f, 50000}, {0.0f, 4.0f, 100000}})
    for (int i = 0; i < count; ++i) x.push_back(std::uniform_real_distribution<float>(lo, hi)(rng));
  return x;
}

// Distance in ulps of the float result from the exact (double) value; ulps of the binade, subnormal spacing below.
double ulp_error(float y, double ref) {
  if (std::isnan(ref)) return std::isnan(y) ? 0 : 1e9;
  float rounded = float(ref);
  if (std::isinf(rounded) || std::isinf(y)) return y == rounded ? 0 : 1e9;
  int e = std::max(std::ilogb(ref == 0 ? 1e-45 : ref), -126);
  return std::abs(double(y) - ref) / std::ldexp(1.0, e - 23);
}

double sigmoid_ref(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }

double reference(const std::string& f, double x) {
  if (f == "exp") return std::exp(x);
  if (f == "expm1") return std::expm1(x);
  if (f == "exp2") return std::exp2(x);
  if (f == "log") return std::log(x);
  if (f == "log1p") return std::log1p(x);
  if (f == "log2") return std::log2(x);
  if (f == "tanh") return std::tanh(x);
  if (f == "sigmoid") return sigmoid_ref(x);
  if (f == "erf") return std::erf(x);
  if (f == "sqrt") return std::sqrt(x);
  if (f == "rsqrt") return 1 / std::sqrt(x);
  if (f == "abs") return std::abs(x);
  if (f == "floor") return std::floor(x);
  if (f == "ceil") return std::ceil(x);
  if (f == "sin") return std::sin(x);
  if (f == "cos") return std::cos(x);
  if (f == "round") return std::nearbyint(x);
  if (f == "trunc") return std::trunc(x);
  if (f == "asinh") return std::asinh(x);
  if (f == "acosh") return std::acosh(x);
  if (f == "atanh") return std::atanh(x);
  return NAN;
}

struct Worst {
  double ulps = 0;
  float at = 0;
  float got = 0;
};

Worst measure(UnaryFn fn, const std::string& name, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  fn(x.data(), y.data(), (long long)x.size());
  Worst w;
  for (size_t i = 0; i < x.size(); ++i) {
    double e = ulp_error(y[i], reference(name, x[i]));
    if (e > w.ulps || std::isnan(e)) w = {e, x[i], y[i]};
  }
  return w;
}

TEST_F(Prelude, TranscendentalsAreWithinTwoUlps) {
  std::vector<float> x = test_inputs();
  ASSERT_GT(x.size(), 1000000u);
  for (const char* f : {"exp", "expm1", "exp2", "log", "log1p", "log2", "tanh", "sigmoid", "erf"}) {
    Worst w = measure(fn<UnaryFn>(f), f, x);
    std::printf("[ measure  ] sn_%-8s max error %.3f ulp (at x=%.9g: got %.9g, exact %.9g)\n", f, w.ulps, w.at, w.got,
                reference(f, w.at));
    EXPECT_LE(w.ulps, 2.0) << "sn_" << f << " at x=" << w.at;
  }
  for (const char* f : {"asinh", "acosh", "atanh"}) {  // composed from sn_log1p/sn_log: one more rounding or two
    Worst w = measure(fn<UnaryFn>(f), f, x);
    std::printf("[ measure  ] sn_%-8s max error %.3f ulp (at x=%.9g: got %.9g, exact %.9g)\n", f, w.ulps, w.at, w.got,
                reference(f, w.at));
    EXPECT_LE(w.ulps, 3.0) << "sn_" << f << " at x=" << w.at;
  }
}

TEST_F(Prelude, ClangBuildIsAsAccurate) {
  if (access("/usr/bin/clang++", X_OK) != 0) GTEST_SKIP() << "no clang++";
  setenv("SINTER_CXX", "clang++", 1);
  CompiledObject clang;
  try {
    clang = codegen::cpp::compile_and_load({test_unit()}, "prelude_clang");
  } catch (...) {
    unsetenv("SINTER_CXX");
    throw;
  }
  unsetenv("SINTER_CXX");
  std::vector<float> x = test_inputs();
  for (const char* f : {"exp", "expm1", "log", "log1p", "tanh", "sigmoid", "erf"}) {
    Worst w = measure(reinterpret_cast<UnaryFn>(clang.library->symbol(std::string("t_") + f)), f, x);
    std::printf("[ measure  ] clang++ sn_%-8s max error %.3f ulp\n", f, w.ulps);
    EXPECT_LE(w.ulps, 2.0) << "clang++ sn_" << f << " at x=" << w.at;
  }
}

TEST_F(Prelude, SimpleFunctionsAreExactOrNearly) {
  std::vector<float> x = test_inputs();
  for (const char* f : {"sqrt", "abs", "floor", "ceil", "round", "trunc"})
    EXPECT_LE(measure(fn<UnaryFn>(f), f, x).ulps, 0.5) << f;
  EXPECT_LE(measure(fn<UnaryFn>("rsqrt"), "rsqrt", x).ulps, 1.5);  // 1/sqrt(x): two roundings
  std::vector<float> moderate;  // the C library's sinf/cosf: accurate everywhere, checked where double is exact
  for (float v : x)
    if (std::abs(v) < 1e4f || !std::isfinite(v)) moderate.push_back(v);
  EXPECT_LE(measure(fn<UnaryFn>("sin"), "sin", moderate).ulps, 1.0);
  EXPECT_LE(measure(fn<UnaryFn>("cos"), "cos", moderate).ulps, 1.0);
}

TEST_F(Prelude, EdgeCasesMatchTorch) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {-105.0f, -104.5f, 88.8f, 89.0f, 1e30f, -1e30f, nan, 0.0f, -0.0f};
  std::vector<float> y(x.size());
  fn<UnaryFn>("exp")(x.data(), y.data(), x.size());
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], inf);
  EXPECT_EQ(y[3], inf);
  EXPECT_EQ(y[4], inf);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_TRUE(std::isnan(y[6]));
  EXPECT_EQ(y[7], 1.0f);
  fn<UnaryFn>("tanh")(x.data(), y.data(), x.size());
  EXPECT_EQ(y[0], -1.0f);
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_TRUE(std::isnan(y[6]));
  EXPECT_TRUE(std::signbit(y[8]) && y[8] == 0.0f);
  fn<UnaryFn>("sigmoid")(x.data(), y.data(), x.size());
  EXPECT_EQ(y[0], float(sigmoid_ref(-105.0)));  // tiny but not NaN: stable for large |x|
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_TRUE(std::isnan(y[6]));
  std::vector<float> a = {1.0f, nan, 2.0f, -0.0f, inf}, b = {nan, 1.0f, 3.0f, 5.0f, 1.0f};
  std::vector<float> out(a.size());
  fn<BinaryFn>("max")(a.data(), b.data(), out.data(), a.size());
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));  // NaN-propagating like torch.maximum
  EXPECT_EQ(out[2], 3.0f);
  EXPECT_EQ(out[4], inf);
  fn<BinaryFn>("min")(a.data(), b.data(), out.data(), a.size());
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
  EXPECT_EQ(out[2], 2.0f);
  std::vector<float> base = {2.0f, -2.0f, 0.0f, 4.0f, -8.0f, nan}, ex = {10.0f, 3.0f, -1.0f, 0.5f, 1.0f / 3, 0.0f};
  out.resize(base.size());
  fn<BinaryFn>("pow")(base.data(), ex.data(), out.data(), base.size());
  EXPECT_EQ(out[0], 1024.0f);
  EXPECT_EQ(out[1], -8.0f);
  EXPECT_EQ(out[2], inf);
  EXPECT_EQ(out[3], 2.0f);
  EXPECT_TRUE(std::isnan(out[4]));
  EXPECT_EQ(out[5], 1.0f);
}

// Independent references: the nearest representable value found by comparing distances in double.
uint16_t bf16_reference(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);
  uint32_t lo = u & 0xffff0000u;
  double dlo = std::bit_cast<float>(lo);
  double step = std::ldexp(1.0, std::max(std::ilogb(dlo == 0 ? 1e-45 : dlo), -126) - 7);
  double dhi = std::abs(dlo) + step;  // magnitude of the next bf16 away from zero (2^128 for the top one)
  double d_lo = std::abs(double(f) - dlo), d_hi = std::abs(std::abs(double(f)) - dhi);
  bool up = d_hi < d_lo || (d_hi == d_lo && ((lo >> 16) & 1));
  return uint16_t((lo >> 16) + (up ? 1 : 0));
}

double f16_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

uint16_t f16_reference(float f) {
  if (std::isnan(f)) return 0;  // checked separately
  double a = std::abs(double(f));
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  // Nearest of all finite halves of this sign (ties to even), infinity beyond 65520.
  if (a >= 65520.0) return sign | 0x7c00;
  uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) {  // the largest half <= a
    uint16_t mid = uint16_t((lo + hi + 1) / 2);
    if (f16_value(mid) <= a) lo = mid;
    else hi = uint16_t(mid - 1);
  }
  if (lo == 0x7bff) return sign | lo;
  double dl = a - f16_value(lo), dh = f16_value(uint16_t(lo + 1)) - a;
  return sign | ((dh < dl || (dh == dl && (lo & 1))) ? uint16_t(lo + 1) : lo);
}

TEST_F(Prelude, HalfAndBfloat16ConversionsRoundToNearestEven) {
  // Every 16-bit pattern to float32.
  std::vector<uint16_t> all(65536);
  for (int i = 0; i < 65536; ++i) all[i] = uint16_t(i);
  std::vector<float> wide(65536);
  fn<FromHalfFn>("bf16_to_f32")(all.data(), wide.data(), 65536);
  for (int i = 0; i < 65536; ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(wide[i]), uint32_t(i) << 16) << i;
  fn<FromHalfFn>("f16_to_f32")(all.data(), wide.data(), 65536);
  for (int i = 0; i < 65536; ++i) {
    double v = f16_value(uint16_t(i));
    if (std::isnan(v)) ASSERT_TRUE(std::isnan(wide[i])) << i;
    else ASSERT_EQ(double(wide[i]), v) << i;
  }
  // Float32 to half and bfloat16: random patterns, every half value, and every midpoint between halves (ties).
  std::vector<float> x = test_inputs();
  for (int i = 0; i < 0x7c00; ++i) {
    x.push_back(float(f16_value(uint16_t(i))));
    x.push_back(float((f16_value(uint16_t(i)) + f16_value(uint16_t(i + 1))) / 2));
    x.push_back(-x.back());
  }
  std::vector<uint16_t> h(x.size());
  fn<ToHalfFn>("f32_to_f16")(x.data(), h.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      ASSERT_TRUE(std::isnan(f16_value(h[i]))) << x[i];
      continue;
    }
    ASSERT_EQ(h[i], f16_reference(x[i])) << "f32_to_f16(" << x[i] << ")";
  }
  fn<ToHalfFn>("f32_to_bf16")(x.data(), h.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(h[i], bf16_reference(x[i])) << "f32_to_bf16(" << x[i] << ")";
}

double time_per_element_ns(UnaryFn f, const std::vector<float>& x, std::vector<float>& y) {
  double best = 1e9;
  for (int trial = 0; trial < 7; ++trial) {
    auto t0 = std::chrono::steady_clock::now();
    for (int rep = 0; rep < 200; ++rep) f(x.data(), y.data(), (long long)x.size());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s / (200.0 * x.size()) * 1e9);
  }
  return best;
}

TEST_F(Prelude, LoopsVectorise) {
  // The same unit without vectorisation (and, on AVX-512 hosts, with 256-bit vectors) for comparison.
  CompiledObject scalar = codegen::cpp::compile_and_load({test_unit()}, "prelude_scalar",
                                                    {.extra_flags = {"-fno-tree-vectorize", "-fno-openmp-simd"}});
  bool avx512 = host_cpu_features().avx512;
  CompiledObject wide;
  if (avx512)
    wide = codegen::cpp::compile_and_load({test_unit()}, "prelude_256", {.extra_flags = {"-mprefer-vector-width=256"}});
  std::vector<float> x(4096), y(4096);
  std::mt19937 rng(7);
  for (float& v : x) v = std::uniform_real_distribution<float>(-8, 8)(rng);
  double exp_speedup = 0;
  for (const char* f : {"exp", "log", "tanh", "sigmoid", "erf", "expm1", "log1p"}) {
    std::vector<float> in = x;
    if (std::string(f).rfind("log", 0) == 0)
      for (float& v : in) v = std::abs(v) + 0.01f;
    double vec = time_per_element_ns(fn<UnaryFn>(f), in, y);
    double sca = time_per_element_ns(reinterpret_cast<UnaryFn>(scalar.library->symbol(std::string("t_") + f)), in, y);
    double w512 = avx512 ? time_per_element_ns(reinterpret_cast<UnaryFn>(wide.library->symbol(std::string("t_") + f)), in, y) : 0;
    std::printf("[ measure  ] sn_%-8s vectorised %.3f ns/elem, scalar %.3f ns/elem: %.1fx%s\n", f, vec, sca, sca / vec,
                avx512 ? fmt::format(" (256-bit vectors: {:.3f} ns/elem)", w512).c_str() : "");
    if (std::string(f) == "exp") exp_speedup = sca / vec;
  }
  if (host_cpu_features().avx2) {
    EXPECT_GE(exp_speedup, 3.0);
  }
}

}  // namespace
}  // namespace sinter::codegen::cpp
