// The small value types every layer shares: dtypes, devices, memory formats and scalars.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace sinter {

enum class DType : uint8_t { kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kInt8, kUInt8, kBool };
inline constexpr int kNumDTypes = 9;

inline constexpr DType kFloat32 = DType::kFloat32, kFloat = DType::kFloat32;
inline constexpr DType kFloat64 = DType::kFloat64, kDouble = DType::kFloat64;
inline constexpr DType kFloat16 = DType::kFloat16, kHalf = DType::kFloat16;
inline constexpr DType kBFloat16 = DType::kBFloat16;
inline constexpr DType kInt64 = DType::kInt64, kLong = DType::kInt64;
inline constexpr DType kInt32 = DType::kInt32, kInt = DType::kInt32;
inline constexpr DType kInt8 = DType::kInt8, kChar = DType::kInt8;
inline constexpr DType kUInt8 = DType::kUInt8, kByte = DType::kUInt8;
inline constexpr DType kBool = DType::kBool;

size_t element_size(DType t);
std::string_view dtype_name(DType t);  // "float32", as PyTorch prints it after "torch."
std::ostream& operator<<(std::ostream& os, DType t);  // dtype_name
bool is_floating(DType t);
bool is_integral(DType t, bool include_bool = false);
DType parse_dtype(std::string_view name);  // "float32", "bf16", "int64", ...; throws Error if unknown

enum class DeviceType : uint8_t { kCPU, kCUDA };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;
  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}
  bool is_cpu() const { return type == DeviceType::kCPU; }
  bool is_cuda() const { return type == DeviceType::kCUDA; }
  friend bool operator==(const Device&, const Device&) = default;
  std::string str() const;  // "cpu", "cuda:0"
};
inline constexpr Device kCPU{DeviceType::kCPU};
inline constexpr Device kCUDA{DeviceType::kCUDA};
Device parse_device(std::string_view name);

enum class MemoryFormat : uint8_t { kContiguous, kChannelsLast, kPreserve };
inline constexpr MemoryFormat kContiguousFormat = MemoryFormat::kContiguous;
inline constexpr MemoryFormat kChannelsLast = MemoryFormat::kChannelsLast;
inline constexpr MemoryFormat kPreserveFormat = MemoryFormat::kPreserve;

// A number passed where PyTorch takes a Python number. C++ literals are weak scalars in type promotion:
// x * 1.5 on a bfloat16 tensor stays bfloat16; an integer tensor times 1.5 becomes the default float dtype.
class Scalar {
 public:
  enum class Kind : uint8_t { kDouble, kInt, kBool };
  constexpr Scalar() : kind_(Kind::kInt), i_(0) {}
  constexpr Scalar(double v) : kind_(Kind::kDouble), d_(v) {}
  constexpr Scalar(float v) : kind_(Kind::kDouble), d_(v) {}
  constexpr Scalar(int v) : kind_(Kind::kInt), i_(v) {}
  constexpr Scalar(long v) : kind_(Kind::kInt), i_(v) {}
  constexpr Scalar(long long v) : kind_(Kind::kInt), i_(v) {}
  constexpr Scalar(unsigned v) : kind_(Kind::kInt), i_(v) {}
  constexpr Scalar(unsigned long v) : kind_(Kind::kInt), i_(static_cast<int64_t>(v)) {}
  constexpr Scalar(bool v) : kind_(Kind::kBool), i_(v) {}

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::kDouble; }
  bool is_integral() const { return kind_ == Kind::kInt; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  double to_double() const { return kind_ == Kind::kDouble ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::kDouble ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::kDouble ? d_ != 0 : i_ != 0; }
  // The dtype PyTorch gives a tensor made from this number: float32 (the default), int64 or bool.
  DType default_dtype() const;
  std::string str() const;
  friend bool operator==(const Scalar& a, const Scalar& b) {
    return a.kind_ == b.kind_ && (a.kind_ == Kind::kDouble ? a.d_ == b.d_ : a.i_ == b.i_);
  }

 private:
  Kind kind_;
  union {
    double d_;
    int64_t i_;
  };
};

}  // namespace sinter
