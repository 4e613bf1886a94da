// load(): decode, check everything the model needs against what sinter implements (reporting every unsupported
// operator type by name, count and node before anything runs), decode its tensors, and wrap it as a callable.
#include <fmt/format.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "frontends/onnx/importer.h"
#include "frontends/onnx/schema.h"
#include "support/check.h"
#include "support/mapped_file.h"

namespace sinter::onnx {
namespace fs = std::filesystem;

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    register_elementwise(t);
    register_shape_ops(t);
    register_nn_ops(t);
    register_reduce_ops(t);
    register_index_ops(t);
    register_control_ops(t);
    register_resize_ops(t);
    register_dropout_ops(t);
    register_sequence_ops(t);
    register_quantize_ops(t);
    register_misc_ops(t);
    register_rnn_ops(t);
    register_gradient_ops(t);
    return t;
  }();
  return table;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : op_table()) names.push_back(name);
  return names;
}

std::string ValueInfo::str() const {
  std::vector<std::string> d;
  for (size_t i = 0; i < dims.size(); ++i)
    d.push_back(!dim_params[i].empty() ? dim_params[i] : dims[i] >= 0 ? std::to_string(dims[i]) : "?");
  std::string type = emulated_type(onnx_type) ? fmt::format("{} (held as {})", proto::data_type_name(onnx_type), dtype_name(dtype))
                                              : std::string(dtype_name(dtype));
  return fmt::format("{}: {}[{}]", name, type, has_shape ? fmt::format("{}", fmt::join(d, ", ")) : "...");
}

namespace {

// Everything the model needs that sinter lacks, gathered over the whole model (subgraphs too).
struct Problems {
  std::map<std::string, std::vector<std::string>> ops;  // op type -> node names
  std::set<std::string> other;

  std::string str() const {
    std::vector<std::string> parts;
    for (const auto& [op, nodes] : ops) {
      std::vector<std::string> shown(nodes.begin(), nodes.begin() + std::min<size_t>(nodes.size(), 5));
      parts.push_back(fmt::format("{} ({} node{}: {}{})", op, nodes.size(), nodes.size() == 1 ? "" : "s",
                                  fmt::join(shown, ", "), nodes.size() > 5 ? ", ..." : ""));
    }
    std::string msg;
    if (!parts.empty()) msg = fmt::format("unsupported ONNX operators: {}", fmt::join(parts, "; "));
    for (const std::string& o : other) msg += (msg.empty() ? "" : "; ") + o;
    return msg;
  }
};

void check_type(const proto::ValueInfo& v, const char* role, Problems& p) {
  using K = proto::TypeProto::Kind;
  switch (v.type.kind) {
    case K::kTensor:
      if (v.type.elem_type != 0 && !dtype_supported(v.type.elem_type))
        p.other.insert(fmt::format("{} '{}' has dtype {}, which sinter does not support", role, v.name,
                                   proto::data_type_name(v.type.elem_type)));
      break;
    case K::kSequence: p.other.insert(fmt::format("{} '{}' is a sequence (not supported)", role, v.name)); break;
    case K::kOptional: p.other.insert(fmt::format("{} '{}' is an optional (not supported)", role, v.name)); break;
    case K::kMap: p.other.insert(fmt::format("{} '{}' is a map (not supported)", role, v.name)); break;
    case K::kSparse: p.other.insert(fmt::format("{} '{}' is a sparse tensor (not supported)", role, v.name)); break;
    case K::kNone: break;
  }
}

void check_tensor(const proto::TensorProto& t, const std::string& where, Problems& p) {
  if (!dtype_supported(t.data_type))
    p.other.insert(fmt::format("{} has dtype {}, which sinter does not support", where,
                               proto::data_type_name(t.data_type)));
}

void check_graph(const proto::Graph& g, detail::ModelData& d, Problems& p, int depth) {
  SINTER_CHECK(depth < 32, "invalid ONNX model: subgraphs nested more than 32 deep");
  if (g.has_sparse_initializers) p.other.insert("sparse initializers (not supported)");
  for (const proto::TensorProto& t : g.initializers) check_tensor(t, fmt::format("initializer '{}'", t.name), p);
  for (const proto::ValueInfo& v : g.inputs) check_type(v, "input", p);
  for (const proto::ValueInfo& v : g.outputs) check_type(v, "output", p);
  for (const proto::Node& n : g.nodes) {
    std::string name = n.name.empty() ? fmt::format("#{}", &n - g.nodes.data()) : n.name;
    std::string op = op_key(n);
    ++d.op_counts[op];
    if (!find_entry(n)) p.ops[op].push_back(name);
    for (const proto::Attribute& a : n.attributes) {
      if (!a.ref_attr_name.empty()) p.other.insert("attribute references (functions) are not supported");
      if (a.has_sparse) p.other.insert("sparse tensor attributes are not supported");
      if (a.t) check_tensor(*a.t, fmt::format("node '{}' attribute '{}'", name, a.name), p);
      for (const proto::TensorProto& t : a.tensors) check_tensor(t, fmt::format("node '{}' attribute '{}'", name, a.name), p);
      if (a.g) check_graph(*a.g, d, p, depth + 1);
      for (const auto& sub : a.graphs) check_graph(*sub, d, p, depth + 1);
    }
  }
}

void decode_tensors(const proto::Graph& g, detail::ModelData& d, bool top) {
  for (const proto::TensorProto& t : g.initializers) {
    Tensor v = to_tensor(t, d.base_dir, "initializer");
    d.attr_tensors[&t] = v;
    if (top) d.parameters.emplace_back(t.name, v);
  }
  for (const proto::Node& n : g.nodes) {
    for (const proto::Attribute& a : n.attributes) {
      if (a.t) d.attr_tensors[a.t.get()] = to_tensor(*a.t, d.base_dir, fmt::format("attribute '{}'", a.name));
      if (a.g) decode_tensors(*a.g, d, false);
      for (const auto& sub : a.graphs) decode_tensors(*sub, d, false);
    }
  }
}

// The TensorProtos' raw_data views point into the bytes being loaded, which the model does not keep: every tensor
// is a sinter Tensor by now, and no view may outlive those bytes.
void forget_raw_data(proto::Graph& g) {
  for (proto::TensorProto& t : g.initializers) t.raw_data = {};
  for (proto::Node& n : g.nodes)
    for (proto::Attribute& a : n.attributes) {
      if (a.t) a.t->raw_data = {};
      for (proto::TensorProto& t : a.tensors) t.raw_data = {};
      if (a.g) forget_raw_data(*a.g);
      for (auto& sub : a.graphs) forget_raw_data(*sub);
    }
}

ValueInfo value_info(const proto::ValueInfo& v) {
  ValueInfo out;
  out.name = v.name;
  out.dtype = v.type.elem_type == 0 ? kFloat32 : to_dtype(v.type.elem_type, v.name);
  out.onnx_type = v.type.elem_type;
  out.has_shape = v.type.has_shape;
  for (const proto::Dim& dim : v.type.shape) {
    out.dims.push_back(dim.value ? *dim.value : -1);
    out.dim_params.push_back(dim.value ? "" : dim.param);
  }
  return out;
}

}  // namespace

Model load_from_bytes(std::string_view bytes, const std::string& base_dir) {
  auto d = std::make_shared<detail::ModelData>();
  d->proto = proto::decode_model(bytes);
  validate_model(d->proto);  // an invalid graph is refused before what sinter supports is looked at
  d->base_dir = base_dir;
  bool found = false;
  for (const proto::OpsetId& o : d->proto.opsets) {
    if (o.domain.empty() || o.domain == "ai.onnx") {
      d->opset = o.version;
      found = true;
    }
  }
  // Models from before opset_import (IR version 1-2) are opset 1; validate_model checked the range.
  if (!found) d->opset = 1;

  Problems problems;
  if (d->proto.has_functions) problems.other.insert("model-local functions (not supported)");
  check_graph(d->proto.graph, *d, problems, 0);
  if (!problems.ops.empty() || !problems.other.empty()) throw UnsupportedError(problems.str());

  decode_tensors(d->proto.graph, *d, true);
  forget_raw_data(d->proto.graph);
  std::set<std::string> init_names;
  for (const proto::TensorProto& t : d->proto.graph.initializers) init_names.insert(t.name);
  for (const proto::ValueInfo& v : d->proto.graph.inputs)
    if (!init_names.count(v.name)) d->inputs.push_back(value_info(v));
  for (const proto::ValueInfo& v : d->proto.graph.outputs) d->outputs.push_back(value_info(v));
  return Model(std::move(d));
}

Model load(const std::string& path) {
  std::error_code ec;
  SINTER_CHECK(fs::is_regular_file(path, ec), "onnx::load: '{}' is not a readable file", path);
  uint64_t size = fs::file_size(path, ec);
  SINTER_CHECK(!ec, "onnx::load: cannot size '{}': {}", path, ec.message());
  // Protobuf messages are limited to 2 GiB; bigger models keep their weights in external data files.
  SINTER_CHECK(size < (uint64_t{1} << 31), "onnx::load: '{}' is {} bytes, more than a protobuf can hold", path, size);
  // Mapped rather than read: a fresh process's first call saves the copy and the page faults of a heap buffer
  // as large as the model.
  support::MappedFile file(path, "onnx::load");
  std::string dir = fs::path(path).parent_path().string();
  return load_from_bytes(file.bytes(), dir.empty() ? "." : dir);
}

// ---- Model ----

Model::Model(std::shared_ptr<const detail::ModelData> data) : data_(std::move(data)) {}
const std::vector<ValueInfo>& Model::inputs() const { return data_->inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return data_->outputs; }
int64_t Model::opset() const { return data_->opset; }
const std::map<std::string, int>& Model::op_counts() const { return data_->op_counts; }
const std::vector<std::pair<std::string, Tensor>>& Model::parameters() const { return data_->parameters; }

std::vector<Tensor> Model::operator()(const std::vector<Tensor>& inputs) const {
  SINTER_CHECK(inputs.size() == data_->inputs.size(), "ONNX model takes {} inputs ({}), got {}",
               data_->inputs.size(),
               fmt::join([&] {
                 std::vector<std::string> s;
                 for (const ValueInfo& v : data_->inputs) s.push_back(v.str());
                 return s;
               }(), "; "),
               inputs.size());
  std::vector<Val> vals;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& vi = data_->inputs[i];
    SINTER_CHECK(inputs[i].defined(), "ONNX model input '{}' is undefined", vi.name);
    SINTER_CHECK(inputs[i].dtype() == vi.dtype, "ONNX model input '{}' must be {}, got {}", vi.name,
                 dtype_name(vi.dtype), dtype_name(inputs[i].dtype()));
    if (vi.has_shape) {
      SINTER_CHECK(inputs[i].dim() == static_cast<int64_t>(vi.dims.size()), "ONNX model input '{}' must be {}, got {} dims",
                   vi.name, vi.str(), inputs[i].dim());
    }
    vals.push_back(Val{inputs[i], false});
  }
  Executor ex(*data_);
  std::vector<Val> outs = ex.run(data_->proto.graph, vals);
  std::vector<Tensor> result;
  for (Val& v : outs) result.push_back(std::move(v.t));
  return result;
}

std::string Model::summary() const {
  std::ostringstream os;
  os << fmt::format("ONNX model (ir {}, opset {}, producer '{}')\n", data_->proto.ir_version, data_->opset,
                    data_->proto.producer_name);
  for (const ValueInfo& v : data_->inputs) os << "  input  " << v.str() << "\n";
  for (const ValueInfo& v : data_->outputs) os << "  output " << v.str() << "\n";
  int64_t params = 0;
  for (const auto& [name, t] : data_->parameters) params += t.numel().hint();
  os << fmt::format("  {} initializers ({} values)\n", data_->parameters.size(), params);
  std::vector<std::string> ops;
  for (const auto& [op, n] : data_->op_counts) ops.push_back(fmt::format("{} x{}", op, n));
  os << fmt::format("  operators: {}\n", fmt::join(ops, ", "));
  return os.str();
}

}  // namespace sinter::onnx
