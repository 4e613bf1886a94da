// Element types of the dtypes and dispatch over them: what the tensor layer (item(), from_vector, printing) and
// every eager kernel share.
#pragma once
#include <cstdint>
#include <type_traits>

#include "support/check.h"
#include "sinter/types.h"
#include "tensor/half.h"

namespace sinter {

template <DType D>
struct CppType;
template <> struct CppType<DType::kFloat32> { using type = float; };
template <> struct CppType<DType::kFloat64> { using type = double; };
template <> struct CppType<DType::kFloat16> { using type = Half; };
template <> struct CppType<DType::kBFloat16> { using type = BFloat16; };
template <> struct CppType<DType::kInt64> { using type = int64_t; };
template <> struct CppType<DType::kInt32> { using type = int32_t; };
template <> struct CppType<DType::kInt8> { using type = int8_t; };
template <> struct CppType<DType::kUInt8> { using type = uint8_t; };
template <> struct CppType<DType::kBool> { using type = bool; };

// The type arithmetic happens in: float for float/half/bfloat16, double, int64 for integers, bool.
template <class T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <> struct OpMath<int32_t> { using type = int64_t; };
template <> struct OpMath<int8_t> { using type = int64_t; };
template <> struct OpMath<uint8_t> { using type = int64_t; };
template <class T> using opmath_t = typename OpMath<T>::type;

// Calls f.template operator()<T>() with T the C++ type of `dtype`. Usage:
//   visit_dtype(t.dtype(), [&]<class T>() { ... T* p = t.data_ptr<T>(); ... });
template <class F>
decltype(auto) visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f.template operator()<float>();
    case DType::kFloat64: return f.template operator()<double>();
    case DType::kFloat16: return f.template operator()<Half>();
    case DType::kBFloat16: return f.template operator()<BFloat16>();
    case DType::kInt64: return f.template operator()<int64_t>();
    case DType::kInt32: return f.template operator()<int32_t>();
    case DType::kInt8: return f.template operator()<int8_t>();
    case DType::kUInt8: return f.template operator()<uint8_t>();
    case DType::kBool: return f.template operator()<bool>();
  }
  throw InternalError("visit_dtype: bad dtype");
}
// Only the floating dtypes (others throw a user error naming the dtype).
template <class F>
decltype(auto) visit_floating(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f.template operator()<float>();
    case DType::kFloat64: return f.template operator()<double>();
    case DType::kFloat16: return f.template operator()<Half>();
    case DType::kBFloat16: return f.template operator()<BFloat16>();
    default: break;
  }
  detail::throw_user_error(fmt::format("expected a floating dtype, got {}", dtype_name(dtype)));
}

// Converts any element type to another through the op-math types (bool: nonzero).
template <class To, class From>
inline To cast_to(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<opmath_t<From>>(v) != 0;
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(static_cast<opmath_t<From>>(v)));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<opmath_t<From>>) {
    // Float to integer as C++ (and PyTorch on x86) truncate; out-of-range values are undefined in C++, so go
    // through int64 which covers every target's range.
    auto f = static_cast<opmath_t<From>>(v);
    if (!(f == f)) return To(0);
    if (f >= 9.2e18) return static_cast<To>(INT64_MAX);
    if (f <= -9.2e18) return static_cast<To>(INT64_MIN);
    return static_cast<To>(static_cast<int64_t>(f));
  } else {
    return static_cast<To>(static_cast<opmath_t<From>>(v));
  }
}

}  // namespace sinter
