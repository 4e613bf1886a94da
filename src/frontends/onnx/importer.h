// The importer's internals: the decoded model with its tensors, the executor that runs ONNX nodes through
// sinter's ops, and the one table that maps each ONNX operator type to an import function.
// Internal to src/frontends/onnx.
#pragma once
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "frontends/onnx/proto.h"
#include "ops/dispatch.h"
#include "sinter/onnx.h"
#include "sinter/ops.h"

namespace sinter::onnx {

// TensorProto -> Tensor (CPU). `base_dir` resolves external data ("" forbids it). Throws UnsupportedError for
// dtypes sinter lacks, Error for inconsistent or hostile contents.
Tensor to_tensor(const proto::TensorProto& t, const std::string& base_dir, const std::string& what);
// ONNX elem_type -> DType; UnsupportedError for the ones sinter lacks.
DType to_dtype(int32_t onnx_type, const std::string& what);
bool dtype_supported(int32_t onnx_type);
int32_t onnx_type_of(DType t);

// ---- Integer types sinter's tensors lack (narrow_ints.cpp) ----
// int16 and uint16 are held in int32, uint32 in int64 (every value exactly), uint64 in int64 as its two's
// complement bit pattern (exact for and/or/xor/shifts and wrapping add/sub/mul; comparisons, division and
// conversions need the unsigned forms below). The importer carries the declared type with each value (Val::type)
// and reduces results to the declared width where an op can leave it.
bool emulated_type(int32_t onnx_type);  // int16, uint16, uint32, uint64
int onnx_type_bits(int32_t onnx_type);  // of an integer type
bool onnx_type_unsigned(int32_t onnx_type);
// Raw little-endian values of an emulated type -> the wider dtype to_dtype() gives (int32 or int64).
void widen_raw(int32_t onnx_type, const void* src, uint64_t numel, void* dst);
// An integer tensor reduced modulo 2^bits into the range of `onnx_type`, in that type's dtype (ints wrap, as
// ONNX's reference does). Any other type: cast to its dtype.
Tensor wrap_to_type(const Tensor& t, int32_t onnx_type);
// uint64 held as int64 bit patterns: unsigned a < b; elementwise unsigned max/min; remainder (divisor 0 gives 0);
// to a floating dtype; shifts (amounts of 64 or more give 0).
Tensor uint64_lt(const Tensor& a, const Tensor& b);
Tensor uint64_max(const Tensor& a, const Tensor& b, bool max);
Tensor uint64_mod(const Tensor& a, const Tensor& b);
Tensor uint64_to_floating(const Tensor& t, DType d);
Tensor uint64_shift(const Tensor& x, const Tensor& y, bool left);
// Shift of unsigned values of at most 32 bits held in any integer dtype; the result is in x's dtype.
Tensor small_uint_shift(const Tensor& x, const Tensor& y, int bits, bool left);

namespace detail {
struct ModelData {
  proto::Model proto;
  std::string base_dir;
  int64_t opset = 0;
  std::vector<ValueInfo> inputs, outputs;
  std::vector<std::pair<std::string, Tensor>> parameters;
  std::map<std::string, int> op_counts;
  // Tensors held by attributes (Constant's value, ConstantOfShape's fill), decoded once at load.
  std::unordered_map<const proto::TensorProto*, Tensor> attr_tensors;
  // Copies of those tensors on the devices the model has run on (NodeCtx::in), made once per device.
  struct DeviceCopies {
    std::mutex mutex;
    std::unordered_set<const TensorImpl*> persistent;  // attr_tensors' impls (alive with the model), filled lazily
    std::map<std::pair<const TensorImpl*, std::string>, Tensor> copies;
  };
  mutable DeviceCopies device_copies;
};
}  // namespace detail

// One value flowing between nodes: a tensor, and whether its contents are known without the graph inputs
// (initializers, constants and what is computed from them only). Known values are folded on the host.
// A sequence (SequenceConstruct, SplitToSequence, ...) is resolved while importing: its elements are values
// like any other, held in `seq` (t is then undefined), and it is known when all of them are. Sequences never
// reach a graph: they may not be graph inputs or outputs, nor enter or leave subgraphs.
struct Val {
  Tensor t;
  bool known = false;
  int32_t type = 0;  // the declared ONNX type where it is emulated (int16/uint16/uint32/uint64), else 0
  std::shared_ptr<const std::vector<Val>> seq;
  bool is_seq() const { return seq != nullptr; }
  static Val sequence(std::vector<Val> items);
};

class Executor;

// What an import function sees of one node.
class NodeCtx {
 public:
  // `device`: where the node computes (that of its computed inputs; the CPU when there are none).
  NodeCtx(Executor& exec, const proto::Node& node, std::vector<Val>& inputs, int64_t opset, Device device = kCPU)
      : exec_(exec), node_(node), inputs_(inputs), opset_(opset), device_(device) {}
  const proto::Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  Executor& executor() { return exec_; }

  size_t num_inputs() const { return inputs_.size(); }
  bool has(size_t i) const { return i < inputs_.size() && inputs_[i].t.defined(); }
  // Input i (UnsupportedError for a sequence). An input on the host of a node that computes on another device
  // comes as a copy on that device (made once per model and device for initializers and constants); its values
  // on the host stay where they are (ints, doubles).
  const Tensor& in(size_t i) const;
  Device device() const { return device_; }
  // Options for a tensor the import function makes to compute with (arange, full, zeros): on the node's device.
  TensorOptions options(DType dtype) const { return TensorOptions(dtype).device(device_); }
  // A tensor made on the host (from_vector of computed indices or weights) where the node computes.
  Tensor here(const Tensor& host) const;
  // Input i as a sequence (Error when it is a tensor), and output i set to a sequence (the import function
  // returns an undefined tensor in its place).
  const std::vector<Val>& seq(size_t i) const;
  void set_seq_out(size_t i, std::vector<Val> items) {
    if (seq_outs_.size() <= i) seq_outs_.resize(i + 1);
    seq_outs_[i] = Val::sequence(std::move(items));
  }
  const std::vector<Val>& seq_outs() const { return seq_outs_; }
  const Val& val(size_t i) const { return inputs_.at(i); }
  bool known(size_t i) const { return has(i) && inputs_[i].known; }
  // Input i's ONNX type: the declared one for emulated types, else the one of its dtype.
  int32_t type(size_t i) const;
  // Sets output i's ONNX type (Cast does); others get the type of the first input of the same dtype.
  void set_out_type(size_t i, int32_t t) {
    if (out_types_.size() <= i) out_types_.resize(i + 1, 0);
    out_types_[i] = t;
  }
  const std::vector<int32_t>& out_types() const { return out_types_; }
  // The values of input i on the host (known values directly; a computed one is read, a graph break).
  std::vector<int64_t> ints(size_t i) const;
  std::vector<double> doubles(size_t i) const;
  int64_t int_at(size_t i) const;
  double double_at(size_t i) const;

  bool has_attr(std::string_view name) const { return node_.attr(name) != nullptr; }
  int64_t attr_int(std::string_view name, int64_t def) const;
  double attr_float(std::string_view name, double def) const;
  std::string attr_str(std::string_view name, const std::string& def) const;
  std::vector<int64_t> attr_ints(std::string_view name, std::vector<int64_t> def = {}) const;
  std::vector<double> attr_floats(std::string_view name, std::vector<double> def = {}) const;
  Tensor attr_tensor(std::string_view name) const;  // undefined when absent
  const proto::Graph* attr_graph(std::string_view name) const;

  [[noreturn]] void fail(const std::string& why) const;
  [[noreturn]] void unsupported(const std::string& why) const;

 private:
  Executor& exec_;
  const proto::Node& node_;
  std::vector<Val>& inputs_;
  int64_t opset_;
  Device device_;
  mutable std::vector<Tensor> moved_;  // in(i)'s device copies
  std::vector<int32_t> out_types_;
  std::vector<Val> seq_outs_;
};

using ImportFn = std::function<std::vector<Tensor>(NodeCtx&)>;
struct OpEntry {
  ImportFn fn;
  bool random = false;  // never folded (draws from the generator)
  bool host = false;    // runs its own subgraphs (If, Loop, Scan): never folded as a whole
  bool known_output = false;  // the output is known on the host whatever the inputs (Shape, Size)
};
using OpTable = std::map<std::string, OpEntry, std::less<>>;
const OpTable& op_table();
// The families, one file each.
void register_elementwise(OpTable& t);
void register_shape_ops(OpTable& t);
void register_nn_ops(OpTable& t);
void register_reduce_ops(OpTable& t);
void register_index_ops(OpTable& t);
void register_control_ops(OpTable& t);
void register_resize_ops(OpTable& t);
void register_dropout_ops(OpTable& t);
void register_sequence_ops(OpTable& t);
void register_quantize_ops(OpTable& t);
void register_misc_ops(OpTable& t);
void register_rnn_ops(OpTable& t);
// Operators of other domains are keyed "domain::Op" (ai.onnx.preview.training::Gradient).
void register_gradient_ops(OpTable& t);
std::string op_key(const proto::Node& n);
// The entry that imports `n`: the table's, else for a node of another domain whose "domain::op_type" is a
// registered custom op (sinter/library.h), one that calls that op (ops_custom.cpp). Null when there is none.
const OpEntry* find_entry(const proto::Node& n);

// Runs graphs of one model. Values of enclosing graphs are visible in subgraphs (If/Loop bodies).
class Executor {
 public:
  explicit Executor(const detail::ModelData& model) : model_(model) {}
  // Runs `g` with its declared inputs bound to `inputs` (in order); returns its outputs.
  std::vector<Val> run(const proto::Graph& g, const std::vector<Val>& inputs);
  const detail::ModelData& model() const { return model_; }
  Tensor attr_tensor(const proto::TensorProto* t) const;

  // For nodes that re-run part of the graph around them (Gradient): the graph being run, a value visible in it
  // (nullptr when none), and one node evaluated on given input values as run() does (folded on the host when
  // they are all known); returns its outputs, one per node output ("" outputs give an undefined value).
  const proto::Graph& current_graph() const;
  const Val* find(const std::string& name) const;
  std::vector<Val> eval_node(const proto::Node& n, std::vector<Val> ins);
  // A known value on `device`, made with no capture hook (a real tensor, a constant of a traced call): once per
  // model and device for an initializer or attribute tensor, once per run for a value folded from them.
  Tensor on_device(const Tensor& t, Device device);

 private:
  struct Scope {
    std::unordered_map<std::string, Val> values;
    const Scope* parent = nullptr;
  };
  const Val* lookup(const Scope& s, const std::string& name) const;
  void run_node(const proto::Node& n, Scope& scope);

  const detail::ModelData& model_;
  std::map<std::pair<const TensorImpl*, std::string>, std::pair<Tensor, Tensor>> run_copies_;  // (source, copy)
  std::vector<Scope*> scopes_;
  std::vector<const proto::Graph*> graphs_;  // parallel to scopes_
};

// Helpers shared by the families.
int64_t norm_axis(int64_t axis, int64_t rank, const NodeCtx& c);
// ONNX's multidirectional broadcasting result dtype rules are the inputs' own (ONNX never promotes): the
// families call sinter ops and cast back where PyTorch's promotion would widen.
Tensor cast_to(const Tensor& t, DType d);
// Runs `fn` with no capture hook: for values computed on the host (folding, shape arithmetic).
template <class Fn>
auto on_host(Fn&& fn) {
  HookScope no_hook(nullptr);
  return fn();
}

}  // namespace sinter::onnx
