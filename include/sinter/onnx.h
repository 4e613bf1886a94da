// ONNX import: models trained elsewhere run through the same compile() as captured C++ code.
//   auto m = sinter::onnx::load("model.onnx");
//   auto fast = sinter::compile(m, {.backend = "aot_eager"});
//   std::vector<Tensor> outs = fast(inputs);            // inputs in the model's graph-input order
// A Model is a callable: calling it runs the ONNX graph through sinter's ops (eagerly, or recorded by capture
// inside compile(), where its initializers are lifted as graph inputs, or constants with freeze). Shape
// arithmetic on constant or static values (Shape -> Gather -> Concat -> Reshape) is folded on the host.
// to_graph() gives the imported sinter Graph itself, with symbolic sizes for the inputs' named dims.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sinter/graph.h"
#include "sinter/tensor.h"

namespace sinter::onnx {

// The model needs something sinter does not implement (an operator type, a dtype such as float8 or string, a
// sequence or optional value). The message lists every such thing, by name, count and node.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

// A graph input or output as the model declares it.
struct ValueInfo {
  std::string name;
  DType dtype = kFloat32;  // int16/uint16 are held in int32, uint32/uint64 in int64 (uint64 as its bit pattern)
  int32_t onnx_type = 0;   // the declared ONNX element type (TensorProto.DataType), 0 when not declared
  bool has_shape = false;
  std::vector<int64_t> dims;             // -1 where the size is not a number
  std::vector<std::string> dim_params;  // the symbolic name ("batch") where there is one, else ""
  std::string str() const;              // "input: float32[batch, 3, 224, 224]"
};

namespace detail {
struct ModelData;
}

class Model {
 public:
  explicit Model(std::shared_ptr<const detail::ModelData> data);
  // Runs the graph: `inputs` follow inputs() (initializers excluded); returns the graph's outputs in order.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;

  const std::vector<ValueInfo>& inputs() const;   // the inputs a caller provides
  const std::vector<ValueInfo>& outputs() const;
  int64_t opset() const;                          // of the default (ai.onnx) domain
  const std::map<std::string, int>& op_counts() const;  // node count per operator type (subgraphs included)
  // The initializers (weights), by name, in the order the graph declares them.
  const std::vector<std::pair<std::string, Tensor>>& parameters() const;
  std::string summary() const;  // producer, opset, inputs, outputs, operator counts

  // The imported sinter Graph: inputs() first (a named symbolic dim becomes a symbol shared by every input
  // that names it), then one input per parameter (or constants, with freeze), then the ops. Throws Error when
  // the model reads tensor data on the host in a way one graph cannot express (If on a computed condition).
  Graph to_graph(bool freeze = false) const;

 private:
  std::shared_ptr<const detail::ModelData> data_;
};

// Reads and checks a model: the protobuf, its tensors (external data must stay inside the model's folder),
// and that every operator type and dtype is supported (UnsupportedError lists what is not, before anything
// runs). Throws Error for a malformed or hostile file.
Model load(const std::string& path);
// The same from bytes; `base_dir` is where external data files live ("" forbids external data).
Model load_from_bytes(std::string_view bytes, const std::string& base_dir = "");

// A TensorProto file (the input_K.pb / output_K.pb of ONNX test data).
Tensor read_tensor(const std::string& path);
Tensor tensor_from_bytes(std::string_view bytes);
// The ONNX operator types the importer implements (default domain), sorted.
std::vector<std::string> supported_ops();

}  // namespace sinter::onnx
