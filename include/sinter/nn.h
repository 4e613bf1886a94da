// sinter::nn — modules as in torch.nn / LibTorch: parameters and buffers with PyTorch's dotted names, shapes,
// defaults and initialisation (so weights saved from PyTorch load by name), state dicts, and .safetensors
// files. Layers only compose the public ops of ops.h; they hold no kernels of their own.
#pragma once
#include <deque>
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

#include "sinter/nn_functional.h"  // nn::functional, as torch/nn.h brings torch::nn::functional
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

// `layer->member` on a module value, as on a LibTorch holder: torch::nn::Linear is a holder of LinearImpl, while
// sinter's nn::Linear is the layer itself, so code written either way (`fc->weight`, `fc->forward(x)`) compiles.
#define SINTER_NN_ARROW(Type)             \
  Type* operator->() { return this; }     \
  const Type* operator->() const { return this; }

template <class Impl>
class ModuleHolder;

// What load_state_dict(strict = false) reports, as PyTorch's _IncompatibleKeys.
struct LoadResult {
  std::vector<std::string> missing_keys, unexpected_keys;
};

// The base of every layer and of user modules. Derive from it, hold layers as members, register them in the
// constructor, and define `Tensor forward(const Tensor&)` (it overrides the virtual one below, so operator()
// and Sequential reach it). Modules are neither copyable nor movable: the tree keeps pointers to its members.
//
// Parameters are shared handles, and to() converts them in place, so every handle stays valid. The built-in
// layers register a pointer to each member (`register_parameter("weight", &weight)`), so their registry reads
// the member: assigning it another tensor re-registers that tensor, as it is (requires_grad unchanged). That
// is how weights are tied: after `head->weight = wte->weight`, parameters() lists the shared tensor once,
// forward uses it, state_dict() saves it under both names (as PyTorch does), and load_state_dict copies both
// names' values into it. A tensor registered by value is the registry's own handle: assigning the member it
// was copied into changes nothing there (change values with copy_ or load_state_dict).
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  // Layers with members of their own return their own type (SINTER_NN_ARROW).
  Module* operator->() { return this; }
  const Module* operator->() const { return this; }

  // The one-tensor forward. The base throws: a module with another forward signature is called directly.
  virtual Tensor forward(const Tensor& input);
  // Calls forward; an error raised inside the layer names the caller's line (`loc`).
  Tensor operator()(const Tensor& input, Loc loc = Loc::current());

  // ---- registration (names are plain identifiers: no '.', not empty, not used by another kind) ----
  // An undefined tensor registers the name with no value, as PyTorch's register_parameter(name, None).
  // Registering a name again replaces its entry in place; when that entry reads a member, the member is
  // assigned.
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // Non-persistent buffers are left out of state_dict().
  Tensor register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  // The registry reads `*member` from now on (see above). The member must live as long as this module: a
  // field of it, or of a container it owns whose elements don't move.
  Tensor& register_parameter(const std::string& name, Tensor* member, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor* member, bool persistent = true);
  // A member module: the parent refers to it and does not own it.
  template <class M>
    requires std::is_base_of_v<Module, M>
  M& register_module(const std::string& name, M& module) {
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
  // A holder (SINTER_MODULE): the parent shares its module. Returns it, so `fc = register_module("fc",
  // Fc(3, 4));` keeps the member holder and the child the same module.
  template <class Impl>
  std::shared_ptr<Impl> register_module(const std::string& name, const ModuleHolder<Impl>& holder) {
    add_child(name, holder.ptr().get(), holder.ptr());
    return holder.ptr();
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
  // Every parameter's gradient dropped (set_to_none, the default, as PyTorch 2) or zeroed in place.
  void zero_grad(bool set_to_none = true);

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

 protected:
  // Removes the parameter, buffer or child called `name` (containers' pop and clear); false when there is none.
  bool unregister(const std::string& name);
  std::shared_ptr<Module> child_owner(const std::string& name) const;  // null when borrowed or absent

 private:
  struct Slot {
    std::string name;
    Tensor value;             // the registry's own handle, when registered by value
    Tensor* member = nullptr;  // else the member it reads
    bool persistent = true;
    const Tensor& tensor() const { return member ? *member : value; }
    Tensor& tensor() { return member ? *member : value; }
  };
  Tensor& add_slot(std::vector<Slot>& slots, const std::string& name, Tensor* member, Tensor value,
                   bool persistent);
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

// While alive, errors raised inside layers name `loc` (the user's call of a module) instead of a line of sinter.
// Module::operator() and module holders set one around forward.
class CallSiteScope {
 public:
  explicit CallSiteScope(const Loc& loc);
  ~CallSiteScope();
  CallSiteScope(const CallSiteScope&) = delete;
  CallSiteScope& operator=(const CallSiteScope&) = delete;

 private:
  std::optional<Loc> previous_;
};

// ---- holders: LibTorch's ModuleHolder and TORCH_MODULE ----
// A shared-ownership handle to a module. `SINTER_MODULE(Net);` after `struct NetImpl : nn::Module {...}` defines
// Net as a holder of NetImpl, as TORCH_MODULE does: `Net net(args...)` constructs a NetImpl (`Net net;` a
// default-constructed one, `Net net{nullptr}` an empty holder to assign later); copies share the module;
// `net->member`, `*net`, `net.get()`, `net.ptr()`; `net(x...)` calls NetImpl's forward with those arguments.
template <class Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;
  ModuleHolder()
    requires std::is_default_constructible_v<Impl>
      : impl_(std::make_shared<Impl>()) {}
  ModuleHolder(std::nullptr_t) {}  // NOLINT: Net net = nullptr, as in LibTorch
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT: from register_module
  template <class Head, class... Tail>
    requires(!std::is_same_v<std::decay_t<Head>, std::nullptr_t> &&
             !std::is_base_of_v<ModuleHolder, std::decay_t<Head>> &&
             !std::is_same_v<std::decay_t<Head>, std::shared_ptr<Impl>> &&
             std::is_constructible_v<Impl, Head, Tail...>)
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Impl>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

  Impl* operator->() const { return checked(); }
  Impl& operator*() const { return *checked(); }
  Impl* get() const { return checked(); }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }
  // One tensor: forward's errors name the caller's line, as Module::operator() does.
  template <class T>
    requires(std::is_same_v<std::remove_cvref_t<T>, Tensor> &&
             requires(Impl& m, T&& t) { m.forward(std::forward<T>(t)); })
  decltype(auto) operator()(T&& input, Loc loc = Loc::current()) const {
    CallSiteScope site(loc);
    return checked()->forward(std::forward<T>(input));
  }
  template <class... Args>
    requires(!(sizeof...(Args) == 1 && (std::is_same_v<std::remove_cvref_t<Args>, Tensor> && ...)))
  decltype(auto) operator()(Args&&... args) const {
    return checked()->forward(std::forward<Args>(args)...);
  }

 private:
  Impl* checked() const {
    if (!impl_) throw Error("empty module holder: it was made from nullptr and not assigned a module since");
    return impl_.get();
  }
  std::shared_ptr<Impl> impl_;
};

#define SINTER_MODULE(Name)                                      \
  class Name : public ::sinter::nn::ModuleHolder<Name##Impl> {   \
   public:                                                       \
    using ::sinter::nn::ModuleHolder<Name##Impl>::ModuleHolder;  \
    using Impl = Name##Impl;                                     \
  }

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
  SINTER_NN_ARROW(Linear)
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
  SINTER_NN_ARROW(ConvNd)
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
  SINTER_NN_ARROW(Embedding)
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
  SINTER_NN_ARROW(BatchNormBase)
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
  SINTER_NN_ARROW(LayerNorm)
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
  SINTER_NN_ARROW(GroupNorm)
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
  SINTER_NN_ARROW(RMSNorm)
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
  SINTER_NN_ARROW(Dropout)
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
  SINTER_NN_ARROW(GELU)
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
  SINTER_NN_ARROW(Softmax)
  explicit Softmax(int64_t dim);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  int64_t dim;
};
struct LogSoftmax : Module {
  SINTER_NN_ARROW(LogSoftmax)
  explicit LogSoftmax(int64_t dim);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  int64_t dim;
};
struct LeakyReLU : Module {
  SINTER_NN_ARROW(LeakyReLU)
  explicit LeakyReLU(double negative_slope = 0.01);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double negative_slope;
};
struct Softplus : Module {
  SINTER_NN_ARROW(Softplus)
  explicit Softplus(double beta = 1.0, double threshold = 20.0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double beta, threshold;
};
struct ELU : Module {
  SINTER_NN_ARROW(ELU)
  explicit ELU(double alpha = 1.0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double alpha;
};
struct Flatten : Module {
  SINTER_NN_ARROW(Flatten)
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};

// ---- pooling (stride none: the kernel size, as PyTorch) ----
struct MaxPool2d : Module {
  SINTER_NN_ARROW(MaxPool2d)
  MaxPool2d(const DimList& kernel_size, std::optional<DimList> stride = {}, const DimList& padding = 0,
            const DimList& dilation = 1, bool ceil_mode = false);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool ceil_mode;
};
struct AvgPool2d : Module {
  SINTER_NN_ARROW(AvgPool2d)
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
  SINTER_NN_ARROW(AdaptiveAvgPool2d)
  explicit AdaptiveAvgPool2d(const DimList& output_size);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  std::vector<int64_t> output_size;
};

// ---- containers ----
// Children named "0", "1", ... in order. Members may be owned (shared_ptr, emplace_back) or borrowed (a
// module that lives elsewhere, e.g. a member of the parent).
struct ModuleList : Module {
  SINTER_NN_ARROW(ModuleList)
  ModuleList() = default;
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  void push_back(Module& module);
  template <class Impl>
  void push_back(const ModuleHolder<Impl>& module) {
    push_back(std::shared_ptr<Module>(module.ptr()));
  }
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

using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

// Children named by key, in insertion order (torch.nn.ModuleDict). Inserting a key that is present replaces
// its module and keeps its place. Members may be owned or borrowed, as in ModuleList. Keys are module names:
// not empty, no '.'.
struct ModuleDict : Module {
  SINTER_NN_ARROW(ModuleDict)
  using Items = std::vector<std::pair<std::string, Module*>>;
  ModuleDict() = default;
  ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules);
  explicit ModuleDict(const NamedModules& modules);
  void insert(const std::string& key, std::shared_ptr<Module> module);
  void insert(const std::string& key, Module& module);
  template <class Impl>
  void insert(const std::string& key, const ModuleHolder<Impl>& module) {
    insert(key, std::shared_ptr<Module>(module.ptr()));
  }
  void update(const NamedModules& modules);  // insert, pair by pair
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  bool contains(const std::string& key) const;
  std::vector<std::string> keys() const;
  std::vector<Module*> values() const;
  const Items& items() const { return items_; }
  // Removes `key` and returns its module (not owning it when it was borrowed); throws Error when absent.
  std::shared_ptr<Module> pop(const std::string& key);
  void clear();
  Module& operator[](const std::string& key) const;  // throws Error naming the key when absent
  // The entry as its layer type; throws Error when it is another type.
  template <class M>
  M& at(const std::string& key) const {
    M* m = dynamic_cast<M*>(&(*this)[key]);
    if (!m) throw_wrong_type(key);
    return *m;
  }
  Items::const_iterator begin() const { return items_.begin(); }
  Items::const_iterator end() const { return items_.end(); }

 private:
  [[noreturn]] void throw_wrong_type(const std::string& key) const;
  Items items_;
};

// Parameters named "0", "1", ... (torch.nn.ParameterList), each registered with requires_grad on. The registry
// reads the entries, so `plist[0] = t` replaces parameter "0". Iterates over the tensors.
struct ParameterList : Module {
  SINTER_NN_ARROW(ParameterList)
  ParameterList() = default;
  ParameterList(std::initializer_list<Tensor> params);
  explicit ParameterList(const std::vector<Tensor>& params);
  void append(const Tensor& param);
  void extend(const std::vector<Tensor>& params);
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // Negative counts from the end; throws Error when out of range.
  Tensor& operator[](int64_t index);
  const Tensor& operator[](int64_t index) const;
  std::deque<Tensor>::const_iterator begin() const { return entries_.begin(); }
  std::deque<Tensor>::const_iterator end() const { return entries_.end(); }
  std::string extra_repr() const override;  // as PyTorch: one "(i): Parameter containing: [...]" line each

 private:
  std::deque<Tensor> entries_;  // a deque, so the registry's pointers stay valid as it grows
};

// Parameters named by key, in insertion order (torch.nn.ParameterDict), each registered with requires_grad on.
// Inserting a present key replaces its tensor and keeps its place; `pdict["w"] = t` does the same. Iterates
// over (key, tensor) pairs.
struct ParameterDict : Module {
  SINTER_NN_ARROW(ParameterDict)
  using Item = std::pair<const std::string, Tensor>;
  ParameterDict() = default;
  ParameterDict(std::initializer_list<std::pair<std::string, Tensor>> params);
  explicit ParameterDict(const NamedTensors& params);
  void insert(const std::string& key, const Tensor& param);
  void update(const NamedTensors& params);  // insert, pair by pair
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  bool contains(const std::string& key) const;
  std::vector<std::string> keys() const;
  std::vector<Tensor> values() const;
  NamedTensors items() const;
  Tensor pop(const std::string& key);  // removes `key` and returns its tensor; throws Error when absent
  void clear();
  Tensor& operator[](const std::string& key);  // throws Error naming the key when absent (insert adds)
  const Tensor& operator[](const std::string& key) const;
  std::deque<Item>::const_iterator begin() const { return entries_.begin(); }
  std::deque<Item>::const_iterator end() const { return entries_.end(); }
  std::string extra_repr() const override;

 private:
  int64_t index_of(const std::string& key) const;  // -1 when absent
  void reregister();  // after entries_ changed in the middle: every entry registered again at its new place
  std::deque<Item> entries_;  // a deque, so the registry's pointers stay valid as it grows
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
  SINTER_NN_ARROW(MultiheadAttention)
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

// ---- transformer ----
// torch.nn.TransformerEncoderLayer: self-attention, then a feed-forward block linear2(dropout(activation(
// linear1(x)))), each in a residual connection with a LayerNorm after it (norm_first off, the default) or
// before it. activation: "relu" or "gelu". src is (S, N, E), (N, S, E) with batch_first, or unbatched (S, E);
// src_mask and src_key_padding_mask are MultiheadAttention's attn_mask and key_padding_mask, and is_causal is
// its hint (it needs src_mask). Submodules and parameters carry PyTorch's names, in its order.
struct TransformerEncoderLayer : Module {
  SINTER_NN_ARROW(TransformerEncoderLayer)
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048, double dropout = 0.1,
                          std::string activation = "relu", double layer_norm_eps = 1e-5, bool batch_first = false,
                          bool norm_first = false, bool bias = true);
  Tensor forward(const Tensor& src) override;
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  using Module::operator();
  Tensor operator()(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                    bool is_causal = false, Loc loc = Loc::current());
  // The construction arguments (the dropout probability is dropout.p).
  int64_t d_model, nhead, dim_feedforward;
  std::string activation;
  double layer_norm_eps;
  bool batch_first, norm_first, bias;
  MultiheadAttention self_attn;
  Linear linear1;
  Dropout dropout;
  Linear linear2;
  LayerNorm norm1, norm2;
  Dropout dropout1, dropout2;

 private:
  Tensor self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& key_padding_mask,
                              bool is_causal);
  Tensor feed_forward_block(const Tensor& x);
};

// torch.nn.TransformerEncoder: num_layers encoder layers (children "layers.0", "layers.1", ...) run in turn with
// the same masks, then `norm` when given (child "norm"). The layers are either made by `make_layer`, or built
// with `encoder_layer`'s construction arguments and given a copy of its weights and mode, as PyTorch's
// deepcopy. is_causal is passed to every layer as given (PyTorch also guesses it from the mask's values; a
// hint changes no result).
struct TransformerEncoder : Module {
  SINTER_NN_ARROW(TransformerEncoder)
  using LayerFactory = std::function<std::shared_ptr<TransformerEncoderLayer>()>;
  TransformerEncoder(const TransformerEncoderLayer& encoder_layer, int64_t num_layers,
                     std::shared_ptr<Module> norm = nullptr);
  TransformerEncoder(const LayerFactory& make_layer, int64_t num_layers, std::shared_ptr<Module> norm = nullptr);
  Tensor forward(const Tensor& src) override;
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  using Module::operator();
  Tensor operator()(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                    bool is_causal = false, Loc loc = Loc::current());
  TransformerEncoderLayer& layer(int64_t index) const { return layers.at<TransformerEncoderLayer>(index); }
  int64_t num_layers;
  ModuleList layers;
  std::shared_ptr<Module> norm;  // null when not given
};

// A float (sz, sz) mask with -inf above the diagonal and 0 elsewhere (nn.Transformer's helper).
Tensor generate_square_subsequent_mask(int64_t sz, const TensorOptions& options = {});

// ---- .safetensors files ----
// Reads every tensor (F32, F64, F16, BF16, I64, I32, I8, U8, BOOL) onto the CPU. A truncated or corrupt file
// throws Error naming the file and the problem. `metadata`, when given, receives the __metadata__ strings.
std::map<std::string, Tensor> load_safetensors(const std::string& path,
                                               std::map<std::string, std::string>* metadata = nullptr);
// The same tensors without copying them: views of one private mapping of the file (no read into the heap; the
// pages come from the page cache), which stays mapped while any of them lives. Writes to them change this
// process's copy only, never the file. The same checks as load_safetensors.
std::map<std::string, Tensor> map_safetensors(const std::string& path,
                                              std::map<std::string, std::string>* metadata = nullptr);
// Writes the tensors (any device or layout; stored contiguous, little-endian) with optional metadata.
void save_safetensors(const std::string& path, const StateDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace sinter::nn

#include "sinter/nn_loss.h"  // the loss modules (L1Loss, CrossEntropyLoss, ...), which build on Module above
