// The ONNX protobuf messages sinter reads, decoded straight from the wire format with every length checked
// (no libprotobuf, no generated classes: the GPU image has no ONNX library and hostile files must fail cleanly).
// Only the fields the importer uses are kept; unknown fields are skipped by wire type. Field numbers are
// onnx.proto's. Internal to src/frontends/onnx.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sinter::onnx::proto {

// Bounds the decoder's allocations: a file of N bytes never makes the decoder allocate much more than a small
// multiple of N, however its lengths lie (packed repeated fields are counted against the bytes they occupy).
struct Budget {
  uint64_t bytes_left;   // remaining allocation allowance
  int depth_left = 64;   // nested graphs (If/Loop bodies) and messages
};

// ONNX's TensorProto.DataType values.
enum DataType : int32_t {
  kDtUndefined = 0, kDtFloat = 1, kDtUInt8 = 2, kDtInt8 = 3, kDtUInt16 = 4, kDtInt16 = 5, kDtInt32 = 6, kDtInt64 = 7,
  kDtString = 8, kDtBool = 9, kDtFloat16 = 10, kDtDouble = 11, kDtUInt32 = 12, kDtUInt64 = 13, kDtComplex64 = 14,
  kDtComplex128 = 15, kDtBFloat16 = 16, kDtFloat8E4M3FN = 17, kDtFloat8E4M3FNUZ = 18, kDtFloat8E5M2 = 19,
  kDtFloat8E5M2FNUZ = 20, kDtUInt4 = 21, kDtInt4 = 22, kDtFloat4E2M1 = 23,
};
std::string data_type_name(int32_t t);

struct TensorProto {
  std::vector<int64_t> dims;
  int32_t data_type = 0;
  std::string name;
  // A view into the bytes decoded (never copied: a model's weights are most of it): valid only while they are.
  // onnx::load_from_bytes turns every tensor into a sinter Tensor and then clears the views.
  std::string_view raw_data;
  std::vector<float> float_data;
  std::vector<int32_t> int32_data;
  std::vector<int64_t> int64_data;
  std::vector<double> double_data;
  std::vector<uint64_t> uint64_data;
  size_t string_count = 0;  // strings are not kept: sinter has no string dtype
  bool external = false;    // data_location == EXTERNAL
  std::vector<std::pair<std::string, std::string>> external_data;  // location, offset, length, checksum
  bool has_segment = false;
};

struct Dim {
  std::optional<int64_t> value;
  std::string param;  // dim_param ("batch"), empty when unnamed
};
struct TypeProto {
  enum class Kind { kNone, kTensor, kSequence, kMap, kOptional, kSparse } kind = Kind::kNone;
  int32_t elem_type = 0;
  bool has_shape = false;
  std::vector<Dim> shape;
};
struct ValueInfo {
  std::string name;
  TypeProto type;
};

struct Graph;
struct Attribute {
  enum Type : int32_t {
    kUndefined = 0, kFloat = 1, kInt = 2, kString = 3, kTensor = 4, kGraph = 5, kFloats = 6, kInts = 7,
    kStrings = 8, kTensors = 9, kGraphs = 10, kSparseTensor = 11, kSparseTensors = 12, kTypeProto = 13,
    kTypeProtos = 14,
  };
  std::string name;
  std::string ref_attr_name;
  int32_t type = 0;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::shared_ptr<TensorProto> t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<TensorProto> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
  bool has_sparse = false;
};

struct Node {
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::string name;
  std::string op_type;
  std::string domain;
  std::vector<Attribute> attributes;
  const Attribute* attr(std::string_view name) const;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<TensorProto> initializers;
  bool has_sparse_initializers = false;
  std::vector<ValueInfo> inputs, outputs, value_infos;
};

struct OpsetId {
  std::string domain;
  int64_t version = 0;
};

struct Model {
  int64_t ir_version = 0;
  std::vector<OpsetId> opsets;
  std::string producer_name;
  Graph graph;
  bool has_graph = false;
  bool has_functions = false;
};

// Decoders. Each throws sinter::Error naming the message and field on malformed input.
Model decode_model(std::string_view bytes);
TensorProto decode_tensor(std::string_view bytes);

}  // namespace sinter::onnx::proto
