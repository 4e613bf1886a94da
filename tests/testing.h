// Shared test helpers: float64 references, random inputs, layouts, tolerance checks.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sinter/sinter.h"

namespace sinter::testing {

// Relative error ||a - b|| / ||b|| computed in float64 (both tensors converted); NaNs in the same places match.
double rel_error(const Tensor& actual, const Tensor& expected);
// Largest elementwise |a - b| (float64).
double max_abs_error(const Tensor& actual, const Tensor& expected);
// Default relative tolerance for a dtype: float32 1e-5, float64 1e-12, half/bfloat16 1e-2, integers exact.
double tolerance(DType dtype);

// Same sizes, and values within rtol (relative error as above) or exactly equal for integer/bool dtypes.
::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, double rtol = -1);
#define EXPECT_CLOSE(actual, expected, ...) EXPECT_TRUE(::sinter::testing::close((actual), (expected), ##__VA_ARGS__))
// Values equal exactly (compared as float64), sizes equal.
::testing::AssertionResult equal(const Tensor& actual, const Tensor& expected);
#define EXPECT_TENSOR_EQ(actual, expected) EXPECT_TRUE(::sinter::testing::equal((actual), (expected)))

// Random test data: normal values for floating dtypes, integers in [-10, 10) ([0, 10) unsigned), bools.
Tensor random(const SymIntList& sizes, DType dtype = kFloat32, uint64_t seed = 0);
// Positive floating values in [lo, hi), for log/sqrt-like ops.
Tensor random_positive(const SymIntList& sizes, DType dtype = kFloat32, double lo = 0.1, double hi = 4.0,
                       uint64_t seed = 0);
// The same values as `t` laid out non-contiguously (a transposed buffer, or every second element).
Tensor non_contiguous(const Tensor& t);

// The dtypes a test loops over.
// The meta of a graph input built by hand (the graph fills in dense strides).
inline TensorMeta meta(SymIntList sizes, DType dtype = kFloat32, Device device = kCPU) {
  return TensorMeta{std::move(sizes), {}, 0, dtype, device};
}

inline const std::vector<DType> kFloatingDTypes = {kFloat32, kFloat64, kFloat16, kBFloat16};
inline const std::vector<DType> kIntegralDTypes = {kInt64, kInt32, kInt8, kUInt8};
inline const std::vector<DType> kAllDTypes = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64,
                                              kInt32,   kInt8,    kUInt8,   kBool};

// Runs `fn`, expects sinter::Error whose message contains every one of `needles`.
template <class F>
::testing::AssertionResult throws_error(F&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
  } catch (const sinter::Error& e) {
    std::string msg = e.what();
    for (const std::string& n : needles)
      if (msg.find(n) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks \"" << n << "\":\n" << msg;
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a different exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}
#define EXPECT_ERROR(stmt, ...) EXPECT_TRUE(::sinter::testing::throws_error([&] { stmt; }, {__VA_ARGS__}))

}  // namespace sinter::testing
