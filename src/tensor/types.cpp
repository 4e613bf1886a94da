// Names and properties of dtypes, devices and scalars.
#include "sinter/types.h"

#include <fmt/format.h>

#include <ostream>

#include "support/check.h"

namespace sinter {

size_t element_size(DType t) {
  switch (t) {
    case DType::kFloat64:
    case DType::kInt64: return 8;
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return 1;
  }
  return 0;
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kBool: return "bool";
  }
  return "?";
}

bool is_floating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16;
}

bool is_integral(DType t, bool include_bool) {
  return t == DType::kInt64 || t == DType::kInt32 || t == DType::kInt8 || t == DType::kUInt8 ||
         (include_bool && t == DType::kBool);
}

DType parse_dtype(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"float32", kFloat32}, {"float", kFloat32}, {"f32", kFloat32},    {"float64", kFloat64}, {"double", kFloat64},
      {"f64", kFloat64},     {"float16", kFloat16}, {"half", kFloat16}, {"f16", kFloat16},     {"fp16", kFloat16},
      {"bfloat16", kBFloat16}, {"bf16", kBFloat16}, {"int64", kInt64},  {"long", kInt64},      {"int32", kInt32},
      {"int", kInt32},       {"int8", kInt8},       {"uint8", kUInt8},  {"bool", kBool}};
  if (name.starts_with("torch.")) name.remove_prefix(6);
  for (const Alias& a : kAliases)
    if (a.name == name) return a.dtype;
  throw Error(fmt::format("unknown dtype '{}' (known: float32, float64, float16, bfloat16, int64, int32, int8, "
                          "uint8, bool)",
                          name));
}

std::string Device::str() const {
  return type == DeviceType::kCPU ? std::string("cpu") : fmt::format("cuda:{}", index);
}

Device parse_device(std::string_view name) {
  if (name == "cpu") return kCPU;
  if (name == "cuda") return kCUDA;
  if (name.starts_with("cuda:")) {
    int index = 0;
    for (char c : name.substr(5)) {
      if (c < '0' || c > '9') throw Error(fmt::format("unknown device '{}' (expected cpu, cuda or cuda:N)", name));
      index = index * 10 + (c - '0');
    }
    return Device(DeviceType::kCUDA, index);
  }
  throw Error(fmt::format("unknown device '{}' (expected cpu, cuda or cuda:N)", name));
}

DType Scalar::default_dtype() const {
  switch (kind_) {
    case Kind::kDouble: return kFloat32;
    case Kind::kInt: return kInt64;
    case Kind::kBool: return kBool;
  }
  return kFloat32;
}

std::string Scalar::str() const {
  switch (kind_) {
    case Kind::kDouble: {
      // Always readable back as a float: 1.0, not 1.
      std::string s = fmt::format("{}", d_);
      if (s.find_first_of(".eni") == std::string::npos) s += ".0";
      return s;
    }
    case Kind::kInt: return fmt::format("{}", i_);
    case Kind::kBool: return i_ ? "True" : "False";
  }
  return "?";
}

}  // namespace sinter
