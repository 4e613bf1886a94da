// TensorProto <-> Tensor: dtypes, the typed and raw data fields, and external data files, which must stay
// inside the model's folder (no absolute paths, no "..", no symlink that leaves it) and be exactly as long as
// the tensor's dims say.
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "frontends/onnx/importer.h"
#include "support/check.h"

namespace sinter::onnx {
namespace fs = std::filesystem;

bool dtype_supported(int32_t t) {
  switch (t) {
    case proto::kDtFloat: case proto::kDtDouble: case proto::kDtFloat16: case proto::kDtBFloat16: case proto::kDtInt64: case proto::kDtInt32: case proto::kDtInt8:
    case proto::kDtUInt8: case proto::kDtBool: return true;
    case proto::kDtInt16: case proto::kDtUInt16: case proto::kDtUInt32: case proto::kDtUInt64: return true;  // held wider
    default: return false;
  }
}

DType to_dtype(int32_t t, const std::string& what) {
  switch (t) {
    case proto::kDtFloat: return kFloat32;
    case proto::kDtDouble: return kFloat64;
    case proto::kDtFloat16: return kFloat16;
    case proto::kDtBFloat16: return kBFloat16;
    case proto::kDtInt64: return kInt64;
    case proto::kDtInt32: return kInt32;
    case proto::kDtInt8: return kInt8;
    case proto::kDtUInt8: return kUInt8;
    case proto::kDtBool: return kBool;
    // sinter's tensors have no such dtype: these are held in a wider one (see emulated_type in importer.h).
    case proto::kDtInt16: case proto::kDtUInt16: return kInt32;
    case proto::kDtUInt32: case proto::kDtUInt64: return kInt64;
    default:
      throw UnsupportedError(fmt::format("{}: ONNX dtype {} is not supported by sinter", what, proto::data_type_name(t)));
  }
}

int32_t onnx_type_of(DType t) {
  switch (t) {
    case DType::kFloat32: return proto::kDtFloat;
    case DType::kFloat64: return proto::kDtDouble;
    case DType::kFloat16: return proto::kDtFloat16;
    case DType::kBFloat16: return proto::kDtBFloat16;
    case DType::kInt64: return proto::kDtInt64;
    case DType::kInt32: return proto::kDtInt32;
    case DType::kInt8: return proto::kDtInt8;
    case DType::kUInt8: return proto::kDtUInt8;
    case DType::kBool: return proto::kDtBool;
  }
  return proto::kDtUndefined;
}

namespace {

uint64_t parse_u64(const std::string& s, const std::string& what) {
  SINTER_CHECK(!s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos,
               "{}: external data field '{}' is not a non-negative integer", what, s);
  return std::stoull(s);
}

// Resolves an external data location inside `base_dir`, refusing anything that leaves it.
fs::path safe_path(const std::string& base_dir, const std::string& location, const std::string& what) {
  SINTER_CHECK(!base_dir.empty(), "{}: external data ('{}') is not allowed when the model is loaded from bytes",
               what, location);
  SINTER_CHECK(!location.empty() && location.find('\0') == std::string::npos, "{}: empty external data location",
               what);
  fs::path rel(location);
  SINTER_CHECK(rel.is_relative() && !rel.has_root_name() && !rel.has_root_directory(),
               "{}: external data location '{}' is absolute; it must be relative to the model's folder", what,
               location);
  for (const fs::path& part : rel)
    SINTER_CHECK(part != "..", "{}: external data location '{}' leaves the model's folder", what, location);
  std::error_code ec;
  fs::path base = fs::canonical(base_dir, ec);
  SINTER_CHECK(!ec, "{}: the model's folder '{}' cannot be resolved: {}", what, base_dir, ec.message());
  fs::path full = fs::canonical(base / rel, ec);
  SINTER_CHECK(!ec, "{}: external data file '{}' cannot be opened: {}", what, location, ec.message());
  // canonical() resolved every symlink: the real file must still lie under the real folder.
  auto [b, f] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  SINTER_CHECK(b == base.end(), "{}: external data location '{}' resolves to '{}', outside the model's folder",
               what, location, full.string());
  SINTER_CHECK(fs::is_regular_file(full, ec), "{}: external data '{}' is not a regular file", what, location);
  return full;
}

struct ExternalSource {
  fs::path path;
  uint64_t offset = 0;
};

// Checks an external reference completely (place, length) before anything is allocated for it.
ExternalSource check_external(const proto::TensorProto& t, const std::string& base_dir, const std::string& what,
                              uint64_t nbytes) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto& [k, v] : t.external_data) {
    if (k == "location") location = v;
    else if (k == "offset") offset = parse_u64(v, what);
    else if (k == "length") length = parse_u64(v, what);
  }
  fs::path path = safe_path(base_dir, location, what);
  if (length)
    SINTER_CHECK(*length == nbytes, "{}: external data length {} does not match the tensor's {} bytes", what,
                 *length, nbytes);
  std::error_code ec;
  uint64_t size = fs::file_size(path, ec);
  SINTER_CHECK(!ec, "{}: cannot stat external data '{}'", what, location);
  SINTER_CHECK(offset <= size && nbytes <= size - offset,
               "{}: external data '{}' holds {} bytes, the tensor needs {} at offset {}", what, location, size,
               nbytes, offset);
  return {path, offset};
}

void read_external(const ExternalSource& src, const std::string& what, void* dst, uint64_t nbytes) {
  std::ifstream in(src.path, std::ios::binary);
  SINTER_CHECK(in.good(), "{}: cannot open external data '{}'", what, src.path.string());
  in.seekg(static_cast<std::streamoff>(src.offset));
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(nbytes));
  SINTER_CHECK(in.gcount() == static_cast<std::streamsize>(nbytes), "{}: short read from external data '{}'",
               what, src.path.string());
}

template <class Dst, class Src>
void copy_typed(const std::vector<Src>& src, void* dst) {
  Dst* out = static_cast<Dst*>(dst);
  for (size_t i = 0; i < src.size(); ++i) {
    if constexpr (std::is_same_v<Dst, bool>) out[i] = src[i] != 0;
    else out[i] = static_cast<Dst>(src[i]);
  }
}

}  // namespace

Tensor to_tensor(const proto::TensorProto& t, const std::string& base_dir, const std::string& what_in) {
  std::string what = t.name.empty() ? what_in : fmt::format("{} '{}'", what_in, t.name);
  if (t.data_type == proto::kDtString) throw UnsupportedError(fmt::format("{}: string tensors are not supported", what));
  DType dtype = to_dtype(t.data_type, what);
  SINTER_CHECK(!t.has_segment, "{}: segmented tensors are not supported", what);
  SINTER_CHECK(t.dims.size() <= 64, "{}: {} dims is more than any real tensor has", what, t.dims.size());
  uint64_t numel = 1;
  SymIntList sizes;
  for (int64_t d : t.dims) {
    SINTER_CHECK(d >= 0, "{}: negative dimension {}", what, d);
    SINTER_CHECK(d == 0 || numel <= (uint64_t{1} << 48) / static_cast<uint64_t>(d),
                 "{}: dims {} describe more elements than fit in memory", what, fmt::join(t.dims, "x"));
    numel *= static_cast<uint64_t>(d);
    sizes.push_back(d);
  }
  // The bytes in the file are of the ONNX type; an emulated type is widened after reading.
  size_t esize = emulated_type(t.data_type) ? static_cast<size_t>(onnx_type_bits(t.data_type) / 8) : element_size(dtype);
  uint64_t nbytes = numel * esize;

  // Check the data before allocating: the allocation is then bounded by bytes that really exist.
  auto check_count = [&](size_t n, const char* field) {
    SINTER_CHECK(n == numel, "{}: {} holds {} values, the dims {} need {}", what, field, n,
                 fmt::format("[{}]", fmt::join(t.dims, ", ")), numel);
  };
  ExternalSource external;
  if (t.external) {
    external = check_external(t, base_dir, what, nbytes);
  } else if (!t.raw_data.empty() || numel == 0) {
    SINTER_CHECK(t.raw_data.size() == nbytes, "{}: raw_data holds {} bytes, the dims {} of {} need {}", what,
                 t.raw_data.size(), fmt::format("[{}]", fmt::join(t.dims, ", ")), dtype_name(dtype), nbytes);
  } else {
    switch (t.data_type) {
      case proto::kDtFloat: check_count(t.float_data.size(), "float_data"); break;
      case proto::kDtDouble: check_count(t.double_data.size(), "double_data"); break;
      case proto::kDtInt64: check_count(t.int64_data.size(), "int64_data"); break;
      case proto::kDtUInt32: case proto::kDtUInt64: check_count(t.uint64_data.size(), "uint64_data"); break;
      default: check_count(t.int32_data.size(), "int32_data"); break;
    }
  }

  Tensor out = on_host([&] { return empty(sizes, TensorOptions(dtype)); });
  void* dst = out.data_ptr();
  if (emulated_type(t.data_type) && (t.external || !t.raw_data.empty())) {
    std::string bytes;
    if (t.external) {
      bytes.resize(nbytes);
      read_external(external, what, bytes.data(), nbytes);
    }
    widen_raw(t.data_type, t.external ? bytes.data() : t.raw_data.data(), numel, dst);
  } else if (t.external) {
    read_external(external, what, dst, nbytes);
  } else if (!t.raw_data.empty()) {
    std::memcpy(dst, t.raw_data.data(), nbytes);
    if (dtype == kBool) {
      uint8_t* b = static_cast<uint8_t*>(dst);
      for (uint64_t i = 0; i < numel; ++i) b[i] = b[i] != 0;  // a bool byte other than 0/1 is undefined behaviour
    }
  } else if (numel > 0) {
    switch (t.data_type) {
      case proto::kDtFloat: copy_typed<float>(t.float_data, dst); break;
      case proto::kDtDouble: copy_typed<double>(t.double_data, dst); break;
      case proto::kDtInt64: copy_typed<int64_t>(t.int64_data, dst); break;
      case proto::kDtInt32: copy_typed<int32_t>(t.int32_data, dst); break;
      case proto::kDtInt8: copy_typed<int8_t>(t.int32_data, dst); break;
      case proto::kDtUInt8: copy_typed<uint8_t>(t.int32_data, dst); break;
      case proto::kDtBool: copy_typed<bool>(t.int32_data, dst); break;
      case proto::kDtFloat16:
      case proto::kDtBFloat16: copy_typed<uint16_t>(t.int32_data, dst); break;  // the bit patterns
      // Emulated types (int32_data holds int16/uint16 values, uint64_data uint32/uint64): truncate to the declared
      // width first, as a value outside it is not of the type; uint64 keeps its bit pattern in int64.
      case proto::kDtInt16: copy_typed<int32_t>(std::vector<int16_t>(t.int32_data.begin(), t.int32_data.end()), dst); break;
      case proto::kDtUInt16: copy_typed<int32_t>(std::vector<uint16_t>(t.int32_data.begin(), t.int32_data.end()), dst); break;
      case proto::kDtUInt32: copy_typed<int64_t>(std::vector<uint32_t>(t.uint64_data.begin(), t.uint64_data.end()), dst); break;
      case proto::kDtUInt64: copy_typed<int64_t>(t.uint64_data, dst); break;
      default: SINTER_INTERNAL_ASSERT(false, "unhandled dtype {}", t.data_type);
    }
  }
  return out;
}

Tensor tensor_from_bytes(std::string_view bytes) {
  proto::TensorProto t = proto::decode_tensor(bytes);
  return to_tensor(t, "", "tensor");
}

Tensor read_tensor(const std::string& path) {
  std::error_code ec;
  SINTER_CHECK(fs::is_regular_file(path, ec), "read_tensor: '{}' is not a readable file", path);
  uint64_t size = fs::file_size(path, ec);
  SINTER_CHECK(!ec && size < (uint64_t{1} << 40), "read_tensor: cannot size '{}'", path);
  std::string bytes(size, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  SINTER_CHECK(in.gcount() == static_cast<std::streamsize>(size), "read_tensor: short read of '{}'", path);
  proto::TensorProto t = proto::decode_tensor(bytes);
  return to_tensor(t, fs::path(path).parent_path().string(), fmt::format("tensor file '{}'", path));
}

}  // namespace sinter::onnx
