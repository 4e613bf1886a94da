// Reading and writing .safetensors files: an 8-byte little-endian header length, a JSON header mapping each
// name to {dtype, shape, data_offsets} (plus optional "__metadata__" strings), then the raw little-endian
// data. Loading checks everything against the file before reading a byte of data: header length against the
// file size, each entry's offsets against its dtype and shape (overflow-safe) and the data section, and that
// the tensors tile the data section exactly (no overlaps, gaps or trailing bytes, as the reference
// implementation requires).
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>

#include "nn/json.h"
#include "sinter/nn.h"

namespace sinter::nn {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; so is sinter's memory");

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {{"F32", kFloat32},   {"F64", kFloat64}, {"F16", kFloat16},
                                 {"BF16", kBFloat16}, {"I64", kInt64},   {"I32", kInt32},
                                 {"I8", kInt8},       {"U8", kUInt8},    {"BOOL", kBool}};

const char* safetensors_dtype(DType d) {
  for (const DTypeName& e : kDTypes)
    if (e.dtype == d) return e.name;
  return "?";
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(fmt::format("safetensors file '{}': {}", path, what));
}

std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// One tensor's header entry, checked against its own dtype and shape and the data section's size.
Entry parse_entry(const std::string& path, const std::string& name, const Json& info, uint64_t data_size) {
  auto bad = [&](const std::string& what) { fail(path, fmt::format("tensor \"{}\": {}", name, what)); };
  if (info.kind != Json::Kind::kObject) bad("its header entry is not a JSON object");
  const Json* dtype = info.find("dtype");
  const Json* shape = info.find("shape");
  const Json* offsets = info.find("data_offsets");
  if (!dtype || dtype->kind != Json::Kind::kString) bad("\"dtype\" is missing or not a string");
  if (!shape || shape->kind != Json::Kind::kArray) bad("\"shape\" is missing or not an array");
  if (!offsets || offsets->kind != Json::Kind::kArray || offsets->items.size() != 2)
    bad("\"data_offsets\" is missing or not an array of two numbers");
  Entry e{name, kFloat32, {}, 0, 0};
  const DTypeName* found = nullptr;
  for (const DTypeName& d : kDTypes)
    if (dtype->text == d.name) found = &d;
  if (!found)
    bad(fmt::format("unsupported dtype \"{}\" (supported: F32, F64, F16, BF16, I64, I32, I8, U8, BOOL)",
                    dtype->text));
  e.dtype = found->dtype;
  uint64_t numel = 1;
  for (const Json& dim : shape->items) {
    std::optional<uint64_t> d = dim.as_uint();
    if (!d || *d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad("\"shape\" must hold non-negative integers");
    e.shape.push_back(static_cast<int64_t>(*d));
    if (__builtin_mul_overflow(numel, *d, &numel)) bad(fmt::format("shape {} overflows", shape_str(e.shape)));
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(element_size(e.dtype)), &nbytes) ||
      nbytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    bad(fmt::format("shape {} is too large", shape_str(e.shape)));
  std::optional<uint64_t> b = offsets->items[0].as_uint(), en = offsets->items[1].as_uint();
  if (!b || !en) bad("\"data_offsets\" must be two non-negative integers");
  e.begin = *b, e.end = *en;
  if (e.end < e.begin) bad(fmt::format("data_offsets [{}, {}] are reversed", e.begin, e.end));
  if (e.end - e.begin != nbytes)
    bad(fmt::format("data_offsets [{}, {}] span {} bytes, but dtype {} and shape {} need {} bytes", e.begin,
                    e.end, e.end - e.begin, dtype->text, shape_str(e.shape), nbytes));
  if (e.end > data_size)
    bad(fmt::format("data_offsets [{}, {}] lie outside the data section of {} bytes (truncated file?)",
                    e.begin, e.end, data_size));
  return e;
}

// The tensors must tile [0, data_size) exactly, in offset order.
void check_layout(const std::string& path, std::vector<Entry> entries, uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      fail(path, fmt::format("tensors \"{}\" and \"{}\" overlap (data_offsets [{}, {}] and [{}, {}])",
                             prev->name, e.name, prev->begin, prev->end, e.begin, e.end));
    if (e.begin > covered)
      fail(path, fmt::format("{} unused bytes before tensor \"{}\" at offset {}", e.begin - covered, e.name,
                             covered));
    covered = e.end;
    if (e.end > e.begin || !prev) prev = &e;
  }
  if (covered != data_size)
    fail(path, fmt::format("the data section has {} bytes but its tensors cover {}", data_size, covered));
}

// The header's entries (tiling the data section, checked) and the data section's start, from the file's first
// bytes: `read(offset, n, into)` reads n bytes at offset or returns false.
struct Layout {
  std::vector<Entry> entries;
  uint64_t data_start = 0;
};

template <class Read>
Layout read_layout(const std::string& path, uint64_t file_size, Read read,
                   std::map<std::string, std::string>* metadata) {
  if (file_size < 8)
    fail(path, fmt::format("truncated: {} bytes, too short for the 8-byte header length", file_size));
  unsigned char len_bytes[8];
  if (!read(0, 8, reinterpret_cast<char*>(len_bytes))) fail(path, "cannot read the header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8)
    fail(path, fmt::format("header length {} exceeds the {} bytes that follow it (truncated file?)",
                           header_len, file_size - 8));
  if (header_len > kMaxHeaderBytes)
    fail(path, fmt::format("header length {} exceeds the limit of {} bytes", header_len, kMaxHeaderBytes));
  std::string header(header_len, '\0');
  if (!read(8, header_len, header.data())) fail(path, "cannot read the header");
  Json root;
  try {
    root = parse_json(header);
  } catch (const Error& e) {
    fail(path, fmt::format("header: {}", e.what()));
  }
  if (root.kind != Json::Kind::kObject) fail(path, "header: not a JSON object");

  Layout layout;
  layout.data_start = 8 + header_len;
  const uint64_t data_size = file_size - layout.data_start;
  for (const auto& [name, info] : root.members) {
    if (name == "__metadata__") {
      if (info.kind != Json::Kind::kObject) fail(path, "header: \"__metadata__\" is not an object");
      for (const auto& [k, v] : info.members) {
        if (v.kind != Json::Kind::kString)
          fail(path, fmt::format("header: metadata \"{}\" is not a string", k));
        if (metadata) (*metadata)[k] = v.text;
      }
      continue;
    }
    layout.entries.push_back(parse_entry(path, name, info, data_size));
  }
  check_layout(path, layout.entries, data_size);
  return layout;
}

// Any byte but 0 or 1 would be an invalid C++ bool.
void check_bools(const std::string& path, const Entry& e, const void* data) {
  if (e.dtype != kBool) return;
  const unsigned char* bytes = static_cast<const unsigned char*>(data);
  for (uint64_t i = 0; i < e.end - e.begin; ++i)
    if (bytes[i] > 1)
      fail(path, fmt::format("tensor \"{}\": BOOL element {} holds byte value {}; only 0 and 1 are valid", e.name,
                             i, bytes[i]));
}

// A private mapping of a whole file, unmapped when the last tensor viewing it dies.
struct Mapping {
  void* at = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (at != nullptr) ::munmap(at, size);
  }
};

}  // namespace

std::map<std::string, Tensor> load_safetensors(const std::string& path,
                                               std::map<std::string, std::string>* metadata) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, fmt::format("cannot open it: {}", std::strerror(errno)));
  f.seekg(0, std::ios::end);
  std::streamoff size_off = f.tellg();
  if (size_off < 0) fail(path, "cannot determine its size");
  auto read = [&](uint64_t offset, uint64_t n, char* into) {
    f.seekg(static_cast<std::streamoff>(offset));
    return static_cast<bool>(f.read(into, static_cast<std::streamsize>(n)));
  };
  const Layout layout = read_layout(path, static_cast<uint64_t>(size_off), read, metadata);
  std::map<std::string, Tensor> out;
  for (const Entry& e : layout.entries) {
    Tensor t = empty(SymIntList(e.shape), TensorOptions(e.dtype));
    const uint64_t nbytes = e.end - e.begin;
    if (nbytes > 0 && !read(layout.data_start + e.begin, nbytes, static_cast<char*>(t.data_ptr())))
      fail(path, fmt::format("truncated while reading tensor \"{}\"", e.name));
    check_bools(path, e, t.data_ptr());
    out.emplace(e.name, std::move(t));
  }
  return out;
}

std::map<std::string, Tensor> map_safetensors(const std::string& path,
                                              std::map<std::string, std::string>* metadata) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, fmt::format("cannot open it: {}", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(st.st_size);
  if (mapping->size > 0) {
    // Private and writable: a write through a tensor changes this process's copy of the page, never the file.
    // Not populated: that would fault every page in for writing, i.e. copy it; reads map the page cache's.
    void* at = ::mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (at == MAP_FAILED) {
      ::close(fd);
      fail(path, fmt::format("cannot map it: {}", std::strerror(errno)));
    }
    mapping->at = at;
    ::madvise(at, mapping->size, MADV_WILLNEED);
  }
  ::close(fd);
  char* base = static_cast<char*>(mapping->at);
  auto read = [&](uint64_t offset, uint64_t n, char* into) {
    if (offset + n > mapping->size) return false;
    std::memcpy(into, base + offset, n);
    return true;
  };
  const Layout layout = read_layout(path, mapping->size, read, metadata);
  std::map<std::string, Tensor> out;
  for (const Entry& e : layout.entries) {
    char* data = base + layout.data_start + e.begin;
    check_bools(path, e, data);
    Tensor t = e.end == e.begin ? empty(SymIntList(e.shape), TensorOptions(e.dtype))
                                : from_blob(data, SymIntList(e.shape), TensorOptions(e.dtype),
                                            [mapping](void*) {});
    out.emplace(e.name, std::move(t));
  }
  return out;
}

void save_safetensors(const std::string& path, const StateDict& tensors,
                      const std::map<std::string, std::string>& metadata) {
  struct Item {
    std::string name;
    Tensor data;  // CPU, contiguous
  };
  std::vector<Item> items;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") fail(path, "the name \"__metadata__\" is reserved for the header's metadata");
    if (!t.defined()) fail(path, fmt::format("tensor \"{}\" is undefined", name));
    if (t.is_meta()) fail(path, fmt::format("tensor \"{}\" has no data (a meta tensor)", name));
    items.push_back({name, t.to(kCPU).contiguous()});
  }
  // Larger elements first, then by name (as the reference writer): every tensor's offset stays aligned to its
  // element size, and the header, padded with spaces, starts the data section at a multiple of 64 bytes (so a
  // mapped file's tensors are as aligned as their sizes allow).
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.data.element_size() != b.data.element_size()) return a.data.element_size() > b.data.element_size();
    return a.name < b.name;
  });
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      header += (first ? "" : ",") + json_quote(k) + ":" + json_quote(v);
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const Item& it : items) {
    uint64_t nbytes = static_cast<uint64_t>(it.data.numel().hint()) * it.data.element_size();
    header +=
        fmt::format("{}{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                    header.size() > 1 ? "," : "", json_quote(it.name), safetensors_dtype(it.data.dtype()),
                    fmt::join(it.data.sizes().hints(), ","), offset, offset + nbytes);
    offset += nbytes;
  }
  header += "}";
  header.append((64 - (8 + header.size()) % 64) % 64, ' ');

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail(path, fmt::format("cannot open it for writing: {}", std::strerror(errno)));
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i)
    len_bytes[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  f.write(reinterpret_cast<const char*>(len_bytes), 8);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const Item& it : items) {
    std::streamsize nbytes = static_cast<std::streamsize>(it.data.numel().hint() * it.data.element_size());
    if (nbytes > 0) f.write(static_cast<const char*>(it.data.data_ptr()), nbytes);
  }
  f.close();
  if (!f) fail(path, fmt::format("writing failed: {}", std::strerror(errno)));
}

}  // namespace sinter::nn
