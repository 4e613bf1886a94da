// The protobuf wire-format decoder for ONNX's messages (see proto.h). Every read is bounds-checked against the
// enclosing message, every allocation is charged to a budget proportional to the file's size, and nesting is
// limited, so a truncated or hostile file ends in sinter::Error, never in a crash or an unbounded allocation.
#include "frontends/onnx/proto.h"

#include <fmt/format.h>

#include <cstring>

#include "support/check.h"

namespace sinter::onnx::proto {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

class Reader {
 public:
  Reader(std::string_view data, Budget& budget, const char* what) : data_(data), budget_(budget), what_(what) {}

  bool done() const { return pos_ >= data_.size(); }

  // Reads a field key; returns false at the end of the message.
  bool next(uint32_t& field, uint32_t& wire) {
    if (done()) return false;
    uint64_t key = varint();
    field = static_cast<uint32_t>(key >> 3);
    wire = static_cast<uint32_t>(key & 7);
    if (field == 0 || key >> 3 > 0x1fffffff) fail("a field number of 0 or out of range");
    if (wire != kVarint && wire != kFixed64 && wire != kLen && wire != kFixed32)
      fail(fmt::format("field {} has wire type {}, which ONNX never uses", field, wire));
    return true;
  }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) fail("a varint runs past the end of the data (truncated file?)");
      uint8_t b = static_cast<uint8_t>(data_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a varint longer than 10 bytes");
  }
  uint32_t fixed32() {
    need(4);
    uint32_t v;
    std::memcpy(&v, data_.data() + pos_, 4);
    pos_ += 4;
    return v;
  }
  uint64_t fixed64() {
    need(8);
    uint64_t v;
    std::memcpy(&v, data_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  std::string_view bytes() {
    uint64_t n = varint();
    if (n > data_.size() - pos_)
      fail(fmt::format("a length of {} bytes runs past the end of the data ({} left; truncated file?)", n,
                       data_.size() - pos_));
    std::string_view s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string string() {
    std::string_view s = bytes();
    charge(s.size());
    return std::string(s);
  }
  void skip(uint32_t wire) {
    switch (wire) {
      case kVarint: varint(); break;
      case kFixed64: need(8), pos_ += 8; break;
      case kFixed32: need(4), pos_ += 4; break;
      case kLen: bytes(); break;
      default: fail("an unknown wire type");
    }
  }
  void expect(uint32_t wire, uint32_t want, uint32_t field) {
    if (wire != want) fail(fmt::format("field {} has wire type {}, expected {}", field, wire, want));
  }

  // Repeated scalars: packed (one length-delimited run) or one element per key.
  template <class T, class Read>
  void repeated(std::vector<T>& out, uint32_t wire, uint32_t scalar_wire, uint32_t field, Read read) {
    if (wire == kLen) {
      std::string_view run = bytes();
      Reader sub(run, budget_, what_);
      // At most one element per byte: charge that many up front so a lying run cannot allocate more.
      size_t max_count = scalar_wire == kVarint ? run.size() : run.size() / (scalar_wire == kFixed32 ? 4 : 8);
      charge(max_count * sizeof(T));
      if (scalar_wire != kVarint && run.size() % (scalar_wire == kFixed32 ? 4 : 8) != 0)
        fail(fmt::format("packed field {} has {} bytes, not a multiple of the element size", field, run.size()));
      out.reserve(out.size() + max_count);
      while (!sub.done()) out.push_back(read(sub));
    } else {
      expect(wire, scalar_wire, field);
      charge(sizeof(T));
      out.push_back(read(*this));
    }
  }

  void charge(uint64_t n) {
    if (n > budget_.bytes_left)
      fail("the file describes more data than its size allows (a corrupted or hostile length)");
    budget_.bytes_left -= n;
  }
  Budget& budget() { return budget_; }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(fmt::format("invalid ONNX protobuf ({}): {}", what_, why));
  }

 private:
  void need(size_t n) {
    if (data_.size() - pos_ < n) fail("a fixed-size field runs past the end of the data (truncated file?)");
  }
  std::string_view data_;
  size_t pos_ = 0;
  Budget& budget_;
  const char* what_;
};

float as_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
double as_double(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

// Decodes a nested message: limits depth and charges the struct's own size.
template <class T, class Fn>
void nested(Reader& r, Budget& budget, const char* what, T& out, Fn decode_fn) {
  if (--budget.depth_left < 0) r.fail(fmt::format("messages nested too deeply (at {})", what));
  r.charge(sizeof(T));
  Reader sub(r.bytes(), budget, what);
  decode_fn(sub, out);
  ++budget.depth_left;
}

void decode_tensor(Reader& r, TensorProto& t) {
  uint32_t f, w;
  while (r.next(f, w)) {
    switch (f) {
      case 1: r.repeated(t.dims, w, kVarint, f, [](Reader& s) { return static_cast<int64_t>(s.varint()); }); break;
      case 2: r.expect(w, kVarint, f), t.data_type = static_cast<int32_t>(r.varint()); break;
      case 3: t.has_segment = true, r.skip(w); break;
      case 4: r.repeated(t.float_data, w, kFixed32, f, [](Reader& s) { return as_float(s.fixed32()); }); break;
      case 5: r.repeated(t.int32_data, w, kVarint, f, [](Reader& s) { return static_cast<int32_t>(s.varint()); }); break;
      case 6: r.expect(w, kLen, f), r.bytes(), ++t.string_count; break;
      case 7: r.repeated(t.int64_data, w, kVarint, f, [](Reader& s) { return static_cast<int64_t>(s.varint()); }); break;
      case 8: r.expect(w, kLen, f), t.name = r.string(); break;
      case 9: r.expect(w, kLen, f), t.raw_data = r.bytes(); break;
      case 10: r.repeated(t.double_data, w, kFixed64, f, [](Reader& s) { return as_double(s.fixed64()); }); break;
      case 11: r.repeated(t.uint64_data, w, kVarint, f, [](Reader& s) { return s.varint(); }); break;
      case 13: {
        r.expect(w, kLen, f);
        std::pair<std::string, std::string> kv;
        nested(r, r.budget(), "StringStringEntryProto", kv, [](Reader& s, auto& out) {
          uint32_t f2, w2;
          while (s.next(f2, w2)) {
            if (f2 == 1 && w2 == kLen) out.first = s.string();
            else if (f2 == 2 && w2 == kLen) out.second = s.string();
            else s.skip(w2);
          }
        });
        t.external_data.push_back(std::move(kv));
        break;
      }
      case 14: r.expect(w, kVarint, f), t.external = r.varint() == 1; break;
      default: r.skip(w);
    }
  }
}

void decode_type(Reader& r, TypeProto& t) {
  uint32_t f, w;
  while (r.next(f, w)) {
    if (f == 1 && w == kLen) {
      t.kind = TypeProto::Kind::kTensor;
      nested(r, r.budget(), "TypeProto.Tensor", t, [](Reader& s, TypeProto& out) {
        uint32_t f2, w2;
        while (s.next(f2, w2)) {
          if (f2 == 1 && w2 == kVarint) {
            out.elem_type = static_cast<int32_t>(s.varint());
          } else if (f2 == 2 && w2 == kLen) {
            out.has_shape = true;
            nested(s, s.budget(), "TensorShapeProto", out.shape, [](Reader& s3, std::vector<Dim>& dims) {
              uint32_t f3, w3;
              while (s3.next(f3, w3)) {
                if (f3 != 1 || w3 != kLen) {
                  s3.skip(w3);
                  continue;
                }
                Dim d;
                nested(s3, s3.budget(), "TensorShapeProto.Dimension", d, [](Reader& s4, Dim& dim) {
                  uint32_t f4, w4;
                  while (s4.next(f4, w4)) {
                    if (f4 == 1 && w4 == kVarint) dim.value = static_cast<int64_t>(s4.varint());
                    else if (f4 == 2 && w4 == kLen) dim.param = s4.string();
                    else s4.skip(w4);
                  }
                });
                dims.push_back(std::move(d));
              }
            });
          } else {
            s.skip(w2);
          }
        }
      });
    } else if (w == kLen && (f == 4 || f == 5 || f == 9 || f == 8)) {
      t.kind = f == 4 ? TypeProto::Kind::kSequence
               : f == 5 ? TypeProto::Kind::kMap
               : f == 9 ? TypeProto::Kind::kOptional
                        : TypeProto::Kind::kSparse;
      r.skip(w);
    } else {
      r.skip(w);
    }
  }
}

void decode_value_info(Reader& r, ValueInfo& v) {
  uint32_t f, w;
  while (r.next(f, w)) {
    if (f == 1 && w == kLen) v.name = r.string();
    else if (f == 2 && w == kLen) nested(r, r.budget(), "TypeProto", v.type, decode_type);
    else r.skip(w);
  }
}

void decode_graph(Reader& r, Graph& g);

void decode_attribute(Reader& r, Attribute& a) {
  uint32_t f, w;
  while (r.next(f, w)) {
    switch (f) {
      case 1: r.expect(w, kLen, f), a.name = r.string(); break;
      case 21: r.expect(w, kLen, f), a.ref_attr_name = r.string(); break;
      case 20: r.expect(w, kVarint, f), a.type = static_cast<int32_t>(r.varint()); break;
      case 2: r.expect(w, kFixed32, f), a.f = as_float(r.fixed32()); break;
      case 3: r.expect(w, kVarint, f), a.i = static_cast<int64_t>(r.varint()); break;
      case 4: r.expect(w, kLen, f), a.s = r.string(); break;
      case 5:
        r.expect(w, kLen, f);
        a.t = std::make_shared<TensorProto>();
        nested(r, r.budget(), "TensorProto", *a.t, [](Reader& s, TensorProto& t) { decode_tensor(s, t); });
        break;
      case 6:
        r.expect(w, kLen, f);
        a.g = std::make_shared<Graph>();
        nested(r, r.budget(), "GraphProto", *a.g, decode_graph);
        break;
      case 7: r.repeated(a.floats, w, kFixed32, f, [](Reader& s) { return as_float(s.fixed32()); }); break;
      case 8: r.repeated(a.ints, w, kVarint, f, [](Reader& s) { return static_cast<int64_t>(s.varint()); }); break;
      case 9: r.expect(w, kLen, f), a.strings.push_back(r.string()); break;
      case 10:
        r.expect(w, kLen, f);
        a.tensors.emplace_back();
        nested(r, r.budget(), "TensorProto", a.tensors.back(), [](Reader& s, TensorProto& t) { decode_tensor(s, t); });
        break;
      case 11:
        r.expect(w, kLen, f);
        a.graphs.push_back(std::make_shared<Graph>());
        nested(r, r.budget(), "GraphProto", *a.graphs.back(), decode_graph);
        break;
      case 22:
      case 23: a.has_sparse = true, r.skip(w); break;
      default: r.skip(w);
    }
  }
}

void decode_node(Reader& r, Node& n) {
  uint32_t f, w;
  while (r.next(f, w)) {
    switch (f) {
      case 1: r.expect(w, kLen, f), r.charge(sizeof(std::string)), n.inputs.push_back(r.string()); break;
      case 2: r.expect(w, kLen, f), r.charge(sizeof(std::string)), n.outputs.push_back(r.string()); break;
      case 3: r.expect(w, kLen, f), n.name = r.string(); break;
      case 4: r.expect(w, kLen, f), n.op_type = r.string(); break;
      case 7: r.expect(w, kLen, f), n.domain = r.string(); break;
      case 5:
        r.expect(w, kLen, f);
        n.attributes.emplace_back();
        nested(r, r.budget(), "AttributeProto", n.attributes.back(), decode_attribute);
        break;
      default: r.skip(w);
    }
  }
}

void decode_graph(Reader& r, Graph& g) {
  uint32_t f, w;
  while (r.next(f, w)) {
    switch (f) {
      case 1:
        r.expect(w, kLen, f);
        g.nodes.emplace_back();
        nested(r, r.budget(), "NodeProto", g.nodes.back(), decode_node);
        break;
      case 2: r.expect(w, kLen, f), g.name = r.string(); break;
      case 5:
        r.expect(w, kLen, f);
        g.initializers.emplace_back();
        nested(r, r.budget(), "TensorProto", g.initializers.back(), [](Reader& s, TensorProto& t) { decode_tensor(s, t); });
        break;
      case 15: g.has_sparse_initializers = true, r.skip(w); break;
      case 11:
      case 12:
      case 13: {
        r.expect(w, kLen, f);
        auto& list = f == 11 ? g.inputs : f == 12 ? g.outputs : g.value_infos;
        list.emplace_back();
        nested(r, r.budget(), "ValueInfoProto", list.back(), decode_value_info);
        break;
      }
      default: r.skip(w);
    }
  }
}

void decode_model(Reader& r, Model& m) {
  uint32_t f, w;
  while (r.next(f, w)) {
    switch (f) {
      case 1: r.expect(w, kVarint, f), m.ir_version = static_cast<int64_t>(r.varint()); break;
      case 2: r.expect(w, kLen, f), m.producer_name = r.string(); break;
      case 7:
        r.expect(w, kLen, f);
        m.has_graph = true;
        nested(r, r.budget(), "GraphProto", m.graph, decode_graph);
        break;
      case 8: {
        r.expect(w, kLen, f);
        m.opsets.emplace_back();
        nested(r, r.budget(), "OperatorSetIdProto", m.opsets.back(), [](Reader& s, OpsetId& o) {
          uint32_t f2, w2;
          while (s.next(f2, w2)) {
            if (f2 == 1 && w2 == kLen) o.domain = s.string();
            else if (f2 == 2 && w2 == kVarint) o.version = static_cast<int64_t>(s.varint());
            else s.skip(w2);
          }
        });
        break;
      }
      case 25: m.has_functions = true, r.skip(w); break;
      default: r.skip(w);
    }
  }
}

// Decoded structures are a bounded multiple of the input: a few pointers' worth of bookkeeping per input byte.
Budget budget_for(std::string_view bytes) { return Budget{16 * static_cast<uint64_t>(bytes.size()) + (16u << 20)}; }

}  // namespace

std::string data_type_name(int32_t t) {
  static const char* names[] = {"undefined", "float",        "uint8",          "int8",       "uint16",
                                "int16",     "int32",        "int64",          "string",     "bool",
                                "float16",   "double",       "uint32",         "uint64",     "complex64",
                                "complex128", "bfloat16",    "float8e4m3fn",   "float8e4m3fnuz", "float8e5m2",
                                "float8e5m2fnuz", "uint4",   "int4",           "float4e2m1"};
  if (t >= 0 && t < static_cast<int32_t>(std::size(names))) return names[t];
  return fmt::format("data type {}", t);
}

const Attribute* Node::attr(std::string_view attr_name) const {
  for (const Attribute& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

Model decode_model(std::string_view bytes) {
  Budget budget = budget_for(bytes);
  Reader r(bytes, budget, "ModelProto");
  Model m;
  decode_model(r, m);
  SINTER_CHECK(m.has_graph, "invalid ONNX model: the ModelProto has no graph (is this an ONNX model file?)");
  return m;
}

TensorProto decode_tensor(std::string_view bytes) {
  Budget budget = budget_for(bytes);
  Reader r(bytes, budget, "TensorProto");
  TensorProto t;
  decode_tensor(r, t);
  return t;
}

}  // namespace sinter::onnx::proto
