// A tiny protobuf writer for tests: builds ONNX ModelProto/TensorProto bytes field by field (the field numbers
// are onnx.proto's), so tests need no ONNX library and can write malformed files on purpose.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace sinter::onnx_writer {

inline std::string varint(uint64_t v) {
  std::string s;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    s += static_cast<char>(v ? b | 0x80 : b);
  } while (v);
  return s;
}
inline std::string key(int field, int wire) { return varint(static_cast<uint64_t>(field) << 3 | wire); }
inline std::string field_varint(int f, int64_t v) { return key(f, 0) + varint(static_cast<uint64_t>(v)); }
inline std::string field_bytes(int f, const std::string& b) { return key(f, 2) + varint(b.size()) + b; }

inline std::string attr_int(const std::string& name, int64_t v) {
  return field_bytes(5, field_bytes(1, name) + field_varint(3, v) + field_varint(20, 2));
}
inline std::string attr_float(const std::string& name, float v) {
  std::string bits(4, '\0');
  std::memcpy(bits.data(), &v, 4);
  return field_bytes(5, field_bytes(1, name) + key(2, 5) + bits + field_varint(20, 1));
}
inline std::string attr_string(const std::string& name, const std::string& v) {
  return field_bytes(5, field_bytes(1, name) + field_bytes(4, v) + field_varint(20, 3));
}
inline std::string attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  std::string a = field_bytes(1, name);
  for (int64_t x : v) a += field_varint(8, x);
  return field_bytes(5, a + field_varint(20, 7));
}
inline std::string attr_strings(const std::string& name, const std::vector<std::string>& v) {
  std::string a = field_bytes(1, name);
  for (const std::string& x : v) a += field_bytes(9, x);
  return field_bytes(5, a + field_varint(20, 8));
}
// A NodeProto as a GraphProto field; `attrs` are attr_* results.
inline std::string node(const std::vector<std::string>& in, const std::vector<std::string>& out, const std::string& op,
                        const std::string& name = "", const std::string& attrs = "") {
  std::string n;
  for (const auto& s : in) n += field_bytes(1, s);
  for (const auto& s : out) n += field_bytes(2, s);
  if (!name.empty()) n += field_bytes(3, name);
  n += field_bytes(4, op) + attrs;
  return field_bytes(1, n);
}
// The same in another operator domain ("ai.onnx.preview.training").
inline std::string domain_node(const std::string& domain, const std::vector<std::string>& in,
                               const std::vector<std::string>& out, const std::string& op, const std::string& attrs = "") {
  std::string n;
  for (const auto& s : in) n += field_bytes(1, s);
  for (const auto& s : out) n += field_bytes(2, s);
  n += field_bytes(4, op) + attrs + field_bytes(7, domain);
  return field_bytes(1, n);
}
inline std::string tensor_header(const std::string& name, const std::vector<int64_t>& dims, int type) {
  std::string t;
  for (int64_t d : dims) t += field_varint(1, d);
  return t + field_varint(2, type) + field_bytes(8, name);
}
inline std::string float_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  std::string raw(v.size() * 4, '\0');
  if (!v.empty()) std::memcpy(raw.data(), v.data(), raw.size());
  return tensor_header(name, dims, 1) + field_bytes(9, raw);
}
inline std::string int64_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  std::string raw(v.size() * 8, '\0');
  if (!v.empty()) std::memcpy(raw.data(), v.data(), raw.size());
  return tensor_header(name, dims, 7) + field_bytes(9, raw);
}
inline std::string external_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::string& location) {
  std::string entry = field_bytes(1, "location") + field_bytes(2, location);
  return tensor_header(name, dims, 1) + field_bytes(13, entry) + field_varint(14, 1);
}
// A ValueInfoProto as graph field `f` (11 input, 12 output); dims -1 are unknown (named by `params` when given);
// no dims means no shape.
inline std::string value_info(int f, const std::string& name, int elem, const std::vector<int64_t>& dims,
                              const std::vector<std::string>& params = {}) {
  std::string tt = field_varint(1, elem);
  if (!dims.empty()) {
    std::string shape;
    for (size_t i = 0; i < dims.size(); ++i) {
      std::string d = dims[i] >= 0 ? field_varint(1, dims[i])
                                   : (i < params.size() && !params[i].empty() ? field_bytes(2, params[i]) : "");
      shape += field_bytes(1, d);
    }
    tt += field_bytes(2, shape);
  }
  return field_bytes(f, field_bytes(1, name) + field_bytes(2, field_bytes(1, tt)));
}
inline std::string model(const std::string& graph, int64_t opset,
                         const std::vector<std::pair<std::string, int64_t>>& other_opsets = {}) {
  std::string m = field_varint(1, 8) + field_bytes(7, graph) + field_bytes(8, field_bytes(1, "") + field_varint(2, opset));
  for (const auto& [domain, version] : other_opsets)
    m += field_bytes(8, field_bytes(1, domain) + field_varint(2, version));
  return m;
}
inline std::string double_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<double>& v) {
  std::string raw(v.size() * 8, '\0');
  if (!v.empty()) std::memcpy(raw.data(), v.data(), raw.size());
  return tensor_header(name, dims, 11) + field_bytes(9, raw);
}

}  // namespace sinter::onnx_writer
