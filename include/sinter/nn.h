// sinter::nn — modules as in torch.nn / LibTorch: parameters and buffers with PyTorch's dotted names, shapes,
// defaults and initialisation (so weights saved from PyTorch load by name), state dicts, and .safetensors
// files. Layers only compose the public ops of ops.h; they hold no kernels of their own.
#pragma once
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "sinter/ops.h"

namespace sinter::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// name -> tensor in insertion order, like the OrderedDict PyTorch's state_dict() returns.
class StateDict {
 public:
  StateDict() = default;
  StateDict(const std::map<std::string, Tensor>& entries);  // NOLINT: a plain map converts (sorted order)
  StateDict(std::initializer_list<std::pair<std::string, Tensor>> entries);
  // Adds name, or replaces its tensor in place (keeping its position) when it is already present.
  void insert(const std::string& name, const Tensor& tensor);
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  const Tensor& at(const std::string& name) const;  // throws Error naming the missing key
  Tensor& at(const std::string& name);
  bool erase(const std::string& name);
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;
  const NamedTensors& items() const { return items_; }
  NamedTensors::const_iterator begin() const { return items_.begin(); }
  NamedTensors::const_iterator end() const { return items_.end(); }

 private:
  NamedTensors items_;
  std::map<std::string, size_t> index_;
};

// What load_state_dict(strict = false) reports, as PyTorch's _IncompatibleKeys.
struct LoadResult {
  std::vector<std::string> missing_keys, unexpected_keys;
};

// The base of every layer and of user modules. Derive from it, hold layers as members, register them in the
// constructor, and define `Tensor forward(const Tensor&)` (it overrides the virtual one below, so operator()
// and Sequential reach it). Modules are neither copyable nor movable: the tree keeps pointers to its members.
//
// Parameters are shared handles: the layer's member (`weight`) and the registry hold the same tensor, and
// to() converts it in place, so both stay valid. Assigning a different tensor to the member does not
// re-register it; change values with copy_ or load_state_dict.
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The one-tensor forward. The base throws: a module with another forward signature is called directly.
  virtual Tensor forward(const Tensor& input);
  // Calls forward; an error raised inside the layer names the caller's line (`loc`).
  Tensor operator()(const Tensor& input, Loc loc = Loc::current());

  // ---- registration (names are plain identifiers: no '.', not empty, not used by another kind) ----
  // An undefined tensor registers the name with no value, as PyTorch's register_parameter(name, None).
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // Non-persistent buffers are left out of state_dict().
  Tensor register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  // A member module: the parent refers to it and does not own it.
  template <class M>
  M& register_module(const std::string& name, M& module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module takes an nn::Module");
    add_child(name, &module, nullptr);
    return module;
  }
  // A module the parent shares ownership of.
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module takes an nn::Module");
    add_child(name, module.get(), module);
    return module;
  }

  // ---- traversal (pre-order: own entries, then children in registration order; shared tensors once) ----
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(const std::string& prefix = "", bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(const std::string& prefix = "", bool recurse = true) const;
  std::vector<Module*> children() const;
  std::vector<std::pair<std::string, Module*>> named_children() const;
  std::vector<Module*> modules();  // this module first
  std::vector<std::pair<std::string, Module*>> named_modules(const std::string& prefix = "");
  // Dotted paths, as PyTorch's get_submodule("layers.0") / get_parameter("fc1.weight"); throw Error if
  // absent.
  Module& get_submodule(const std::string& path);
  Tensor get_parameter(const std::string& path);
  Tensor get_buffer(const std::string& path);
  // Calls fn on every module, children first and this module last (PyTorch's apply order).
  Module& apply(const std::function<void(Module&)>& fn);

  // ---- mode ----
  Module& train(bool on = true);  // recursive
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }

  // ---- conversion: every parameter and buffer, in place. to(dtype) converts floating tensors only ----
  Module& to(Device device);
  Module& to(DType dtype);
  Module& to(Device device, DType dtype);

  // ---- weights ----
  // Own parameters, own persistent buffers, then each child's, with dotted names (undefined entries skipped).
  StateDict state_dict(const std::string& prefix = "") const;
  // Copies values into the existing tensors (copy_: dtype and device convert). Shape mismatches always throw;
  // with strict, missing or unexpected keys throw too. Nothing is copied when it throws.
  LoadResult load_state_dict(const StateDict& state, bool strict = true);
  LoadResult load_safetensors(const std::string& path, bool strict = true);

  // ---- printing ----
  // The class name ("Linear", "Block"), for messages and printing.
  virtual std::string name() const;
  // The text inside the parentheses of this module's line, as PyTorch's extra_repr.
  virtual std::string extra_repr() const { return ""; }
  std::string str() const;  // the module tree, printed as PyTorch prints it

 private:
  struct Slot {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };
  struct Child {
    std::string name;
    Module* module;
    std::shared_ptr<Module> owner;  // null for a member module
  };
  void add_child(const std::string& name, Module* module, std::shared_ptr<Module> owner);
  void check_new_name(const std::string& name, const char* kind) const;
  void convert(std::optional<Device> device, std::optional<DType> dtype);
  friend struct ModuleAccess;  // src/nn: reads the slots for state_dict and traversal

  std::vector<Slot> params_, buffers_;
  std::vector<Child> children_;
  bool training_ = true;
};

std::ostream& operator<<(std::ostream& os, const Module& module);

// ---- initialisation (torch.nn.init): in place on the tensor, drawing from sinter's default generator ----
namespace init {
Tensor& uniform_(Tensor& t, double a = 0, double b = 1);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1);
Tensor& constant_(Tensor& t, const Scalar& value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
// (fan_in, fan_out) of a weight of rank >= 2: size(1) and size(0) times the receptive field.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
// nonlinearity: linear, conv*, sigmoid, tanh, relu, leaky_relu (param = negative slope, default 0.01), selu.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = {});
// mode: "fan_in" or "fan_out".
Tensor& kaiming_uniform_(Tensor& t, double a = 0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu");
Tensor& kaiming_normal_(Tensor& t, double a = 0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");
Tensor& xavier_uniform_(Tensor& t, double gain = 1);
Tensor& xavier_normal_(Tensor& t, double gain = 1);
}  // namespace init

// ---- linear and convolution ----
struct Linear : Module {
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  void reset_parameters();
  int64_t in_features, out_features;
  Tensor weight, bias;  // [out, in], [out] (bias undefined when disabled)
};

// A convolution layer's padding: a number, one number per spatial dim, or a mode: "same" / "valid" (as in
// PyTorch) or kSame / kValid (as ops.h).
struct ConvPadding {
  ConvPadding(int value) : values{value} {}
  ConvPadding(int64_t value) : values{value} {}
  ConvPadding(std::initializer_list<int64_t> v) : values(v) {}
  ConvPadding(std::vector<int64_t> v) : values(std::move(v)) {}
  ConvPadding(const char* mode) : mode(mode) {}
  ConvPadding(std::string mode) : mode(std::move(mode)) {}
  ConvPadding(sinter::Padding mode) : mode(mode == sinter::Padding::kSame ? "same" : "valid") {}
  std::vector<int64_t> values;  // used when mode is empty
  std::string mode;
};

// Shared by Conv1d, Conv2d and ConvTranspose2d (PyTorch's _ConvNd). Sizes are given as one number or one per
// spatial dim. padding_mode: "zeros", "reflect", "replicate" or "circular" ("zeros" only for the transposed
// form).
struct ConvNd : Module {
  std::string extra_repr() const override;
  void reset_parameters();
  int64_t in_channels, out_channels, groups;
  std::vector<int64_t> kernel_size, stride, padding, dilation, output_padding;
  std::string padding_string;  // "same" or "valid" when padding was given as a string
  std::string padding_mode;
  bool transposed;
  Tensor weight, bias;  // [out, in/groups, *k] ([in, out/groups, *k] when transposed), [out]

 protected:
  ConvNd(int spatial_dims, bool transposed, int64_t in_channels, int64_t out_channels,
         const DimList& kernel_size, const DimList& stride, const ConvPadding& padding,
         const DimList& dilation, int64_t groups, bool bias, const std::string& padding_mode,
         const DimList& output_padding);
  // The input padded explicitly for reflect/replicate modes (zeros mode returns it unchanged).
  Tensor pad_input(const Tensor& input) const;
  Tensor pad_circular(const Tensor& input, const SymIntList& pads) const;
  const char* layer_name() const {
    return transposed ? "ConvTranspose2d" : kernel_size.size() == 1 ? "Conv1d" : "Conv2d";
  }
  bool explicit_padding() const { return padding_mode != "zeros"; }
  sinter::Padding padding_enum() const { return padding_string == "same" ? kSame : kValid; }
};

struct Conv1d : ConvNd {
  Conv1d(int64_t in_channels, int64_t out_channels, const DimList& kernel_size, const DimList& stride = 1,
         const ConvPadding& padding = 0, const DimList& dilation = 1, int64_t groups = 1, bool bias = true,
         const std::string& padding_mode = "zeros");
  Tensor forward(const Tensor& input) override;
};

struct Conv2d : ConvNd {
  Conv2d(int64_t in_channels, int64_t out_channels, const DimList& kernel_size, const DimList& stride = 1,
         const ConvPadding& padding = 0, const DimList& dilation = 1, int64_t groups = 1, bool bias = true,
         const std::string& padding_mode = "zeros");
  Tensor forward(const Tensor& input) override;
};

struct ConvTranspose2d : ConvNd {
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, const DimList& kernel_size,
                  const DimList& stride = 1, const DimList& padding = 0, const DimList& output_padding = 0,
                  int64_t groups = 1, bool bias = true, const DimList& dilation = 1,
                  const std::string& padding_mode = "zeros");
  Tensor forward(const Tensor& input) override;
};

// Rows of `weight` [num_embeddings, embedding_dim] looked up by integer indices. The padding_idx row
// (negative counts from the end) starts as zeros.
struct Embedding : Module {
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = {});
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;  // wrapped to [0, num_embeddings)
  Tensor weight;
};

// ---- normalisation ----
// BatchNorm1d takes (N, C) or (N, C, L); BatchNorm2d takes (N, C, H, W). In training the batch's statistics
// normalise and the running ones are updated (momentum none: a cumulative average); in eval the running ones
// are used (batch statistics when track_running_stats is off).
struct BatchNormBase : Module {
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  BatchNormBase(int64_t num_features, double eps, std::optional<double> momentum, bool affine,
                bool track_running_stats);
  virtual void check_input_dim(const Tensor& input) const = 0;
};
struct BatchNorm1d : BatchNormBase {
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true);

 protected:
  void check_input_dim(const Tensor& input) const override;
};
struct BatchNorm2d : BatchNormBase {
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1,
                       bool affine = true, bool track_running_stats = true);

 protected:
  void check_input_dim(const Tensor& input) const override;
};

// A multi-dim normalized_shape is written LayerNorm ln{{2, 3}} or LayerNorm({2, 3}, eps); C++ finds
// LayerNorm({2, 3}) ambiguous (it could also mean a copy of LayerNorm(2, 3.0)).
struct LayerNorm : Module {
  LayerNorm(int64_t normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true);
  LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
            bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::vector<int64_t> normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;
};

struct GroupNorm : Module {
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  int64_t num_groups, num_channels;
  double eps;
  bool affine;
  Tensor weight, bias;
};

// eps none: the input dtype's machine epsilon, as torch.nn.RMSNorm.
struct RMSNorm : Module {
  RMSNorm(int64_t normalized_shape, std::optional<double> eps = {}, bool elementwise_affine = true);
  RMSNorm(std::vector<int64_t> normalized_shape, std::optional<double> eps = {},
          bool elementwise_affine = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::vector<int64_t> normalized_shape;
  std::optional<double> eps;
  bool elementwise_affine;
  Tensor weight;
};

// ---- dropout, activations, reshaping ----
struct Dropout : Module {
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& input) override;  // identity in eval
  std::string extra_repr() const override;
  double p;
};

struct Identity : Module {
  Tensor forward(const Tensor& input) override { return input; }
};
struct ReLU : Module {
  Tensor forward(const Tensor& input) override;
};
struct GELU : Module {
  explicit GELU(std::string approximate = "none");  // "none" or "tanh"
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::string approximate;
};
struct SiLU : Module {
  Tensor forward(const Tensor& input) override;
};
struct Tanh : Module {
  Tensor forward(const Tensor& input) override;
};
struct Sigmoid : Module {
  Tensor forward(const Tensor& input) override;
};
struct Hardswish : Module {
  Tensor forward(const Tensor& input) override;
};
struct Mish : Module {
  Tensor forward(const Tensor& input) override;
};
struct Softmax : Module {
  explicit Softmax(int64_t dim);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  int64_t dim;
};
struct LogSoftmax : Module {
  explicit LogSoftmax(int64_t dim);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  int64_t dim;
};
struct LeakyReLU : Module {
  explicit LeakyReLU(double negative_slope = 0.01);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double negative_slope;
};
struct Softplus : Module {
  explicit Softplus(double beta = 1.0, double threshold = 20.0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double beta, threshold;
};
struct ELU : Module {
  explicit ELU(double alpha = 1.0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double alpha;
};
struct Flatten : Module {
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};

// ---- pooling (stride none: the kernel size, as PyTorch) ----
struct MaxPool2d : Module {
  MaxPool2d(const DimList& kernel_size, std::optional<DimList> stride = {}, const DimList& padding = 0,
            const DimList& dilation = 1, bool ceil_mode = false);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool ceil_mode;
};
struct AvgPool2d : Module {
  AvgPool2d(const DimList& kernel_size, std::optional<DimList> stride = {}, const DimList& padding = 0,
            bool ceil_mode = false, bool count_include_pad = true,
            std::optional<int64_t> divisor_override = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};
struct AdaptiveAvgPool2d : Module {
  explicit AdaptiveAvgPool2d(const DimList& output_size);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::vector<int64_t> output_size;
};

// ---- containers ----
// Children named "0", "1", ... in order. Members may be owned (shared_ptr, emplace_back) or borrowed (a
// module that lives elsewhere, e.g. a member of the parent).
struct ModuleList : Module {
  ModuleList() = default;
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  void push_back(Module& module);
  template <class M, class... ArgTypes>
  M& emplace_back(ArgTypes&&... args) {
    auto m = std::make_shared<M>(std::forward<ArgTypes>(args)...);
    push_back(m);
    return *m;
  }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  Module& operator[](int64_t index) const;  // negative counts from the end; throws Error when out of range
  // The entry as its layer type; throws Error when it is another type.
  template <class M>
  M& at(int64_t index) const {
    M* m = dynamic_cast<M*>(&(*this)[index]);
    if (!m) throw_wrong_type(index);
    return *m;
  }
  std::vector<Module*>::const_iterator begin() const { return items_.begin(); }
  std::vector<Module*>::const_iterator end() const { return items_.end(); }

 private:
  [[noreturn]] void throw_wrong_type(int64_t index) const;
  std::vector<Module*> items_;
};

// Runs its members' one-tensor forwards in order.
struct Sequential : ModuleList {
  using ModuleList::ModuleList;
  Tensor forward(const Tensor& input) override;
};

// ---- attention ----
// torch.nn.MultiheadAttention with packed input projections: in_proj_weight [3E, E], in_proj_bias [3E],
// out_proj (a Linear E -> E). With kdim or vdim other than embed_dim (keys and values of other widths) the
// projections are separate, as in PyTorch: q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight
// [E, vdim], and in_proj_weight is undefined. Inputs are (L, N, E) — (N, L, E) with batch_first — or unbatched
// (L, E); key is (S, N, kdim), value (S, N, vdim).
// key_padding_mask (N, S): true / -inf drops a key. attn_mask (L, S) or (N * num_heads, L, S): bool (true =
// not allowed) or float (added). is_causal is a hint that attn_mask is causal and, as in PyTorch, needs
// attn_mask. Returns (output, weights); weights (averaged over heads unless average_attn_weights is off) only
// when need_weights, else undefined. Without need_weights the output comes from scaled_dot_product_attention.
struct MultiheadAttention : Module {
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool batch_first = false, std::optional<int64_t> kdim = {}, std::optional<int64_t> vdim = {});
  using Module::forward;  // keeps the one-tensor form visible (it throws: attention takes query, key, value)
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = false,
                                     const Tensor& attn_mask = {}, bool is_causal = false,
                                     bool average_attn_weights = true);
  std::tuple<Tensor, Tensor> operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                        const Tensor& key_padding_mask = {}, bool need_weights = false,
                                        const Tensor& attn_mask = {}, bool is_causal = false,
                                        bool average_attn_weights = true, Loc loc = Loc::current());
  int64_t embed_dim, num_heads, head_dim, kdim, vdim;
  double dropout;
  bool batch_first;
  Tensor in_proj_weight, in_proj_bias;
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;  // defined only when kdim or vdim differs from embed_dim
  bool same_embed_dims() const { return kdim == embed_dim && vdim == embed_dim; }
  Linear out_proj;
};

// A float (sz, sz) mask with -inf above the diagonal and 0 elsewhere (nn.Transformer's helper).
Tensor generate_square_subsequent_mask(int64_t sz, const TensorOptions& options = {});

// ---- .safetensors files ----
// Reads every tensor (F32, F64, F16, BF16, I64, I32, I8, U8, BOOL) onto the CPU. A truncated or corrupt file
// throws Error naming the file and the problem. `metadata`, when given, receives the __metadata__ strings.
std::map<std::string, Tensor> load_safetensors(const std::string& path,
                                               std::map<std::string, std::string>* metadata = nullptr);
// Writes the tensors (any device or layout; stored contiguous, little-endian) with optional metadata.
void save_safetensors(const std::string& path, const StateDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace sinter::nn
