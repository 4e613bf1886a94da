// Tensor: a handle to sizes, strides, an offset and a dtype over shared storage, with PyTorch's semantics.
// A tensor may carry no data ("meta"): shape rules still run, which is how capture traces code without running it.
#pragma once
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "sinter/error.h"
#include "sinter/op_names.h"
#include "sinter/symint.h"
#include "sinter/types.h"

namespace sinter {

class Tensor;
namespace indexing {
class TensorIndex;  // sinter/indexing.h
}

// Allocators hand out memory for one device; CUDA slots in beside the CPU one.
struct DataPtr {
  void* data = nullptr;
  std::function<void(void*)> deleter;  // empty: memory owned elsewhere (from_blob without a deleter)
  bool pinned = false;                 // page-locked host memory from the pinned allocator (cuda.h)
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
};
Allocator& cpu_allocator();
// The allocator for a device type; throws Error when the device is not available in this build.
Allocator& allocator_for(Device device);

// Storage is shared by a tensor and all its views. The version counter goes up on every write, so that
// capture and autograd can tell that a tensor changed.
class Storage {
 public:
  Storage(DataPtr data, size_t nbytes, Device device) : data_(std::move(data)), nbytes_(nbytes), device_(device) {}
  ~Storage() {
    if (data_.deleter) data_.deleter(data_.data);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_.data; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool pinned() const { return data_.pinned; }
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  DataPtr data_;
  size_t nbytes_;
  Device device_;
  std::atomic<uint64_t> version_{0};
};

// What a shape rule computes for one output: everything about a tensor except its data.
struct TensorMeta {
  SymIntList sizes;
  SymIntList strides;
  SymInt offset = 0;
  DType dtype = kFloat32;
  Device device = kCPU;
};

struct TraceState;  // capture's per-tensor record (src/capture); opaque here
namespace autograd {
class Node;  // a backward function (sinter/autograd.h)
}

// A dimension the user declared symbolic for compilation (mark_dynamic), with its allowed range.
struct DynamicDim {
  int64_t dim = 0;
  int64_t min = 2;
  int64_t max = INT64_MAX;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;  // null for a meta tensor
  TensorMeta meta;
  bool requires_grad = false;
  // A 0-dim tensor standing for a C++ number (PyTorch's "wrapped number"): it promotes like a weak scalar.
  // Capture makes host values read at a graph break into such inputs, so a new value needs no recompile.
  bool wrapped_number = false;
  std::vector<DynamicDim> dynamic_dims;  // set by mark_dynamic
  std::shared_ptr<TensorImpl> grad;             // accumulated by backward() (a leaf, or retain_grad())
  std::shared_ptr<autograd::Node> grad_fn;       // the op that made this tensor, for a non-leaf
  uint32_t output_nr = 0;                        // which output of grad_fn this is
  bool retains_grad = false;                     // retain_grad() was called on this non-leaf
  std::weak_ptr<autograd::Node> grad_accumulator;  // a leaf's AccumulateGrad node, while some graph uses it
  std::weak_ptr<TensorImpl> view_base;  // for an eager view: the tensor whose elements it views (not itself a view)
  std::shared_ptr<TraceState> trace;  // set while capture follows this tensor
};

// What a factory makes: dtype, device, requires_grad, pinned_memory, as LibTorch's TensorOptions. A DType or a
// Device converts (zeros({2, 3}, kInt64)); the setters return a changed copy (TensorOptions().dtype(kInt64)
// .device(kCPU)), and the free functions dtype(), device() and requires_grad() start a chain. Without a dtype,
// dtype() is float32 and the factories that infer one from their values (full, arange, tensor) do so; without a
// device, device() is the CPU and to(options) keeps the tensor's device. pinned_memory(true) makes the factories
// allocate page-locked host memory (a CPU tensor; see Tensor::pin_memory).
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(DType dtype) : dtype_(dtype) {}      // NOLINT: converts, as in LibTorch
  TensorOptions(Device device) : device_(device) {}  // NOLINT
  TensorOptions(DeviceType type) : device_(Device(type)) {}  // NOLINT
  TensorOptions(DType dtype, Device device, bool requires_grad = false)
      : dtype_(dtype), device_(device), requires_grad_(requires_grad) {}

  DType dtype() const { return dtype_.value_or(kFloat32); }
  bool has_dtype() const { return dtype_.has_value(); }
  Device device() const { return device_.value_or(kCPU); }
  bool has_device() const { return device_.has_value(); }
  bool requires_grad() const { return requires_grad_; }
  bool pinned_memory() const { return pinned_memory_; }

  TensorOptions dtype(DType dtype) const {
    TensorOptions o = *this;
    o.dtype_ = dtype;
    return o;
  }
  TensorOptions device(Device device) const {
    TensorOptions o = *this;
    o.device_ = device;
    return o;
  }
  TensorOptions requires_grad(bool on) const {
    TensorOptions o = *this;
    o.requires_grad_ = on;
    return o;
  }
  TensorOptions pinned_memory(bool on) const {
    TensorOptions o = *this;
    o.pinned_memory_ = on;
    return o;
  }
  friend bool operator==(const TensorOptions&, const TensorOptions&) = default;

 private:
  std::optional<DType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
  bool pinned_memory_ = false;
};
inline TensorOptions dtype(DType dtype) { return TensorOptions(dtype); }
inline TensorOptions device(Device device) { return TensorOptions(device); }
inline TensorOptions requires_grad(bool on = true) { return TensorOptions().requires_grad(on); }
std::ostream& operator<<(std::ostream& os, const TensorOptions& options);

enum class ReduceMode : uint8_t { kNone, kMean, kSum };

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // Shape and layout.
  int64_t dim() const { return static_cast<int64_t>(meta().sizes.size()); }
  int64_t ndimension() const { return dim(); }
  const SymIntList& sizes() const { return meta().sizes; }
  const SymIntList& strides() const { return meta().strides; }
  SymInt size(int64_t d) const;
  SymInt stride(int64_t d) const;
  SymInt storage_offset() const { return meta().offset; }
  SymInt numel() const { return sym_product(meta().sizes); }
  DType dtype() const { return meta().dtype; }
  DType scalar_type() const { return dtype(); }
  size_t element_size() const { return sinter::element_size(dtype()); }
  Device device() const { return meta().device; }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_floating_point() const { return is_floating(dtype()); }
  bool is_contiguous(MemoryFormat format = MemoryFormat::kContiguous) const;
  // A meta tensor has shape, strides, dtype and device but no data.
  bool has_storage() const { return impl_ && impl_->storage != nullptr; }
  bool is_meta() const { return !has_storage(); }
  const TensorMeta& meta() const;
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  TensorOptions options() const { return TensorOptions(dtype(), device()); }
  uint64_t version() const { return has_storage() ? impl_->storage->version() : 0; }

  // Data access (CPU tensors). data_ptr points at element 0 of this view.
  void* data_ptr() const;
  template <class T>
  T* data_ptr() const { return static_cast<T*>(data_ptr()); }
  // Reading data ends a captured graph (a graph break) and gives host code the real value.
  template <class T>
  T item(Loc loc = Loc::current()) const;
  template <class T>
  std::vector<T> to_vector(Loc loc = Loc::current()) const;
  Scalar item_scalar(Loc loc = Loc::current()) const;
  Scalar item(Loc loc = Loc::current()) const { return item_scalar(loc); }  // LibTorch's untyped item()
  explicit operator bool() const;  // bool(tensor): a one-element tensor's truth
  std::string str() const;         // as PyTorch prints it

  // Autograd (sinter/autograd.h). requires_grad_ is for leaves; a non-leaf requires grad because its inputs do.
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  Tensor& requires_grad_(bool on = true);
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;  // an undefined tensor clears it; else sizes and dtype must match
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  bool is_leaf() const { return !impl_ || !impl_->grad_fn; }
  uint32_t output_nr() const { return impl_ ? impl_->output_nr : 0; }
  // Keeps the gradient of a non-leaf in .grad() after backward (a no-op on a leaf).
  void retain_grad() const;
  bool retains_grad() const { return impl_ && impl_->retains_grad; }
  // Gradients of this tensor with respect to the leaves it was computed from, accumulated into their .grad().
  // gradient: the gradient of this tensor (omitted: ones, for a one-element tensor only).
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = {}, bool create_graph = false,
                const std::vector<Tensor>& inputs = {}) const;

  // Views.
  Tensor view(const SymIntList& size, Loc loc = Loc::current()) const;
  Tensor reshape(const SymIntList& size, Loc loc = Loc::current()) const;
  Tensor view_as(const Tensor& other, Loc loc = Loc::current()) const;
  // A view of the same elements outside the autograd graph (no grad_fn, no requires_grad), as LibTorch's
  // detach(); detach_() takes this tensor itself out of the graph.
  Tensor detach(Loc loc = Loc::current()) const;
  Tensor& detach_();
  Tensor reshape_as(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor permute(const DimList& dims, Loc loc = Loc::current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1, Loc loc = Loc::current()) const;
  Tensor t(Loc loc = Loc::current()) const;
  Tensor mT(Loc loc = Loc::current()) const;
  Tensor expand(const SymIntList& size, Loc loc = Loc::current()) const;
  Tensor expand_as(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor squeeze(Loc loc = Loc::current()) const;
  Tensor squeeze(const DimList& dims, Loc loc = Loc::current()) const;
  Tensor unsqueeze(int64_t dim, Loc loc = Loc::current()) const;
  Tensor narrow(int64_t dim, const SymInt& start, const SymInt& length, Loc loc = Loc::current()) const;
  Tensor slice(int64_t dim, std::optional<SymInt> start = {}, std::optional<SymInt> end = {}, const SymInt& step = 1,
               Loc loc = Loc::current()) const;
  Tensor select(int64_t dim, const SymInt& index, Loc loc = Loc::current()) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1, Loc loc = Loc::current()) const;
  Tensor unflatten(int64_t dim, const SymIntList& sizes, Loc loc = Loc::current()) const;
  Tensor as_strided(const SymIntList& size, const SymIntList& stride, std::optional<SymInt> offset = {},
                    Loc loc = Loc::current()) const;
  std::vector<Tensor> split(const SymInt& split_size, int64_t dim = 0, Loc loc = Loc::current()) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0, Loc loc = Loc::current()) const;
  std::vector<Tensor> split(const SymIntList& sizes, int64_t dim = 0, Loc loc = Loc::current()) const;
  std::vector<Tensor> split(std::initializer_list<SymInt> sizes, int64_t dim = 0, Loc loc = Loc::current()) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0, Loc loc = Loc::current()) const;
  std::vector<Tensor> unbind(int64_t dim = 0, Loc loc = Loc::current()) const;
  Tensor operator[](int64_t index) const;  // select(0, index)
  // LibTorch's indexing (sinter/indexing.h): x.index({Slice(), 0}) is Python's x[:, 0]; a list of tensors alone
  // is advanced indexing (an undefined tensor is `:`).
  Tensor index(std::initializer_list<indexing::TensorIndex> indices, Loc loc = Loc::current()) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices, Loc loc = Loc::current()) const;
  Tensor index(const std::vector<Tensor>& indices, Loc loc = Loc::current()) const;

  // Copies and conversions.
  Tensor contiguous(MemoryFormat format = MemoryFormat::kContiguous, Loc loc = Loc::current()) const;
  Tensor clone(std::optional<MemoryFormat> format = {}, Loc loc = Loc::current()) const;
  // non_blocking, as PyTorch's: a copy between pinned host memory (pin_memory()) and a CUDA tensor is queued on
  // the device's stream and returns at once; kernels sinter launches on the device afterwards run after it. From
  // or to pageable memory the copy is synchronous. A copy to pinned host memory has not landed when it returns:
  // synchronize (cuda::current_stream().synchronize(), a cuda::Event, cuda::synchronize()) before reading the
  // destination. The source of a copy from the host must not be written until the copy has completed. A copy
  // that converts dtype or layout on the way to the device is staged in pinned memory and queued; one from the
  // device that does so is synchronous. On the simulated device every copy is done when it returns.
  // to(..., non_blocking=true) from a CUDA tensor to the CPU returns a pinned tensor (as PyTorch does); with
  // copy=true, to() copies even when nothing changes.
  Tensor& copy_(const Tensor& src, Loc loc = Loc::current());
  Tensor& copy_(const Tensor& src, bool non_blocking, Loc loc = Loc::current());
  Tensor to(DType dtype, Loc loc = Loc::current()) const;
  Tensor to(Device device, Loc loc = Loc::current()) const;
  Tensor to(Device device, DType dtype, Loc loc = Loc::current()) const;
  Tensor to(MemoryFormat format, Loc loc = Loc::current()) const;
  Tensor to(const TensorOptions& options, Loc loc = Loc::current()) const;
  Tensor to(DType dtype, bool non_blocking, bool copy = false, Loc loc = Loc::current()) const;
  Tensor to(Device device, bool non_blocking, bool copy = false, Loc loc = Loc::current()) const;
  Tensor to(Device device, DType dtype, bool non_blocking, bool copy = false, Loc loc = Loc::current()) const;
  Tensor to(const TensorOptions& options, bool non_blocking, bool copy = false, Loc loc = Loc::current()) const;
  // Page-locked host memory, as PyTorch's: pin_memory() returns a CPU tensor with self's sizes, dtype and strides
  // (dense strides where self has broadcast dims) in memory from the pinned host allocator, or self when it is
  // pinned already. It throws Error for a CUDA tensor, and where no CUDA device can be used (the simulated
  // device's pinned memory is ordinary host memory). is_pinned() says whether a tensor's memory came from it.
  Tensor pin_memory(Loc loc = Loc::current()) const;
  bool is_pinned() const { return has_storage() && storage()->pinned(); }
  Tensor cpu(Loc loc = Loc::current()) const { return to(kCPU, loc); }
  Tensor cuda(Loc loc = Loc::current()) const { return to(kCUDA, loc); }
  Tensor float_(Loc loc = Loc::current()) const { return to(kFloat32, loc); }

  // In-place ops (they bump the storage's version counter and write through views).
  Tensor& fill_(const Scalar& value, Loc loc = Loc::current());
  Tensor& zero_(Loc loc = Loc::current());
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current());
  Tensor& add_(const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current());
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current());
  Tensor& sub_(const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current());
  Tensor& mul_(const Tensor& other, Loc loc = Loc::current());
  Tensor& mul_(const Scalar& other, Loc loc = Loc::current());
  Tensor& div_(const Tensor& other, Loc loc = Loc::current());
  Tensor& div_(const Scalar& other, Loc loc = Loc::current());
  Tensor& pow_(const Scalar& exponent, Loc loc = Loc::current());
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = {}, Loc loc = Loc::current());
  // One in-place form per unary op with one (x.sin_(), x.relu_(), ...): the op's result written into self, which
  // must be able to hold its dtype.
#define SINTER_UNARY_INPLACE_METHOD(X, name) Tensor& name##_(Loc loc = Loc::current());
  SINTER_UNARY_INPLACE_NAMES(SINTER_UNARY_INPLACE_METHOD, _)
#undef SINTER_UNARY_INPLACE_METHOD
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value, Loc loc = Loc::current());
  Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false,
                     Loc loc = Loc::current());
  // x.index_put_({Slice(1, None), 0}, v) is Python's x[1:, 0] = v (v broadcast to the indexed shape).
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& values,
                     Loc loc = Loc::current());
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value,
                     Loc loc = Loc::current());
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                     Loc loc = Loc::current());
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value,
                     Loc loc = Loc::current());
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src, Loc loc = Loc::current());
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src, Loc loc = Loc::current());
  Tensor& uniform_(double from = 0, double to = 1, Loc loc = Loc::current());
  Tensor& normal_(double mean = 0, double std = 1, Loc loc = Loc::current());

  // The ops as methods, as LibTorch's Tensor has them (x.sin(), x.max(1), x.where(mask, y)); each calls the free
  // function of ops.h with self first.
#define SINTER_UNARY_METHOD(X, name) Tensor name(Loc loc = Loc::current()) const;
  SINTER_UNARY_NAMES(SINTER_UNARY_METHOD, _)
#undef SINTER_UNARY_METHOD
#define SINTER_BINARY_TS_METHOD(X, name)                                   \
  Tensor name(const Tensor& other, Loc loc = Loc::current()) const; \
  Tensor name(const Scalar& other, Loc loc = Loc::current()) const;
  SINTER_BINARY_TS_NAMES(SINTER_BINARY_TS_METHOD, _)
#undef SINTER_BINARY_TS_METHOD
#define SINTER_BINARY_T_METHOD(X, name) Tensor name(const Tensor& other, Loc loc = Loc::current()) const;
  SINTER_BINARY_T_NAMES(SINTER_BINARY_T_METHOD, _)
#undef SINTER_BINARY_T_METHOD
  Tensor add(const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current()) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current()) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1, Loc loc = Loc::current()) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1, Loc loc = Loc::current()) const;
  Tensor div(const Tensor& other, const std::optional<std::string>& rounding_mode, Loc loc = Loc::current()) const;
  Tensor div(const Scalar& other, const std::optional<std::string>& rounding_mode, Loc loc = Loc::current()) const;
  Tensor pow(const Scalar& exponent, Loc loc = Loc::current()) const;
  Tensor pow(const Tensor& exponent, Loc loc = Loc::current()) const;
  Tensor relu6(Loc loc = Loc::current()) const;
  Tensor gelu(const std::string& approximate = "none", Loc loc = Loc::current()) const;
  Tensor softplus(const Scalar& beta = 1, const Scalar& threshold = 20, Loc loc = Loc::current()) const;
  Tensor leaky_relu(const Scalar& negative_slope = 0.01, Loc loc = Loc::current()) const;
  Tensor elu(const Scalar& alpha = 1, Loc loc = Loc::current()) const;
  Tensor hardtanh(const Scalar& min_val = -1, const Scalar& max_val = 1, Loc loc = Loc::current()) const;
  Tensor logit(std::optional<double> eps = {}, Loc loc = Loc::current()) const;
  Tensor nan_to_num(std::optional<double> nan = {}, std::optional<double> posinf = {},
                    std::optional<double> neginf = {}, Loc loc = Loc::current()) const;
  // self.where(condition, other) is where(condition, self, other).
  Tensor where(const Tensor& condition, const Tensor& other, Loc loc = Loc::current()) const;
  Tensor where(const Tensor& condition, const Scalar& other, Loc loc = Loc::current()) const;
  Tensor lerp(const Tensor& end, const Scalar& weight, Loc loc = Loc::current()) const;
  Tensor lerp(const Tensor& end, const Tensor& weight, Loc loc = Loc::current()) const;
  Tensor addcmul(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1,
                 Loc loc = Loc::current()) const;
  Tensor addcdiv(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1,
                 Loc loc = Loc::current()) const;
  Tensor clamp_min(const Scalar& min, Loc loc = Loc::current()) const;
  Tensor clamp_max(const Scalar& max, Loc loc = Loc::current()) const;
  Tensor matmul(const Tensor& other, Loc loc = Loc::current()) const;
  Tensor mm(const Tensor& mat2, Loc loc = Loc::current()) const;
  Tensor bmm(const Tensor& mat2, Loc loc = Loc::current()) const;
  Tensor addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1, const Scalar& alpha = 1,
               Loc loc = Loc::current()) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = {}, Loc loc = Loc::current()) const;
  Tensor sum(std::optional<DType> dtype = {}, Loc loc = Loc::current()) const;
  Tensor sum(const DimList& dim, bool keepdim = false, std::optional<DType> dtype = {}, Loc loc = Loc::current()) const;
  Tensor mean(std::optional<DType> dtype = {}, Loc loc = Loc::current()) const;
  Tensor mean(const DimList& dim, bool keepdim = false, std::optional<DType> dtype = {}, Loc loc = Loc::current()) const;
  Tensor prod(std::optional<DType> dtype = {}, Loc loc = Loc::current()) const;
  Tensor amax(const DimList& dim = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor amin(const DimList& dim = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor max(Loc loc = Loc::current()) const;
  Tensor min(Loc loc = Loc::current()) const;
  Tensor argmax(std::optional<int64_t> dim = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor argmin(std::optional<int64_t> dim = {}, bool keepdim = false, Loc loc = Loc::current()) const;
  // (values, indices) along a dim, as torch.max(input, dim).
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<DType> dtype = {}, Loc loc = Loc::current()) const;
  Tensor all(const DimList& dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor any(const DimList& dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor norm(const std::optional<Scalar>& p = 2, const DimList& dim = {}, bool keepdim = false,
              Loc loc = Loc::current()) const;
  Tensor logsumexp(const DimList& dim, bool keepdim = false, Loc loc = Loc::current()) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = {}, Loc loc = Loc::current()) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = {}, Loc loc = Loc::current()) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false, Loc loc = Loc::current()) const;
  Tensor argsort(int64_t dim = -1, bool descending = false, Loc loc = Loc::current()) const;
  std::tuple<Tensor, Tensor> topk(const SymInt& k, int64_t dim = -1, bool largest = true, bool sorted = true,
                                  Loc loc = Loc::current()) const;
  // As torch.var(input, dim, correction, keepdim): correction defaults to 1 (Bessel's); an empty dim is every dim.
  Tensor var(const DimList& dim = {}, const std::optional<Scalar>& correction = {}, bool keepdim = false,
             Loc loc = Loc::current()) const;
  Tensor std(const DimList& dim = {}, const std::optional<Scalar>& correction = {}, bool keepdim = false,
             Loc loc = Loc::current()) const;
  Tensor softmax(int64_t dim, std::optional<DType> dtype = {}, Loc loc = Loc::current()) const;
  Tensor log_softmax(int64_t dim, std::optional<DType> dtype = {}, Loc loc = Loc::current()) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value, Loc loc = Loc::current()) const;
  Tensor index_select(int64_t dim, const Tensor& index, Loc loc = Loc::current()) const;
  Tensor gather(int64_t dim, const Tensor& index, Loc loc = Loc::current()) const;
  Tensor repeat(const SymIntList& repeats, Loc loc = Loc::current()) const;
  Tensor flip(const DimList& dims, Loc loc = Loc::current()) const;
  Tensor tril(int64_t diagonal = 0, Loc loc = Loc::current()) const;
  Tensor triu(int64_t diagonal = 0, Loc loc = Loc::current()) const;
  Tensor all(Loc loc = Loc::current()) const;
  Tensor any(Loc loc = Loc::current()) const;
  Tensor nonzero(Loc loc = Loc::current()) const;
  Tensor masked_select(const Tensor& mask, Loc loc = Loc::current()) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value, Loc loc = Loc::current()) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src, Loc loc = Loc::current()) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value, Loc loc = Loc::current()) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src, Loc loc = Loc::current()) const;
  Tensor roll(const SymIntList& shifts, const DimList& dims = {}, Loc loc = Loc::current()) const;
  Tensor movedim(const DimList& source, const DimList& destination, Loc loc = Loc::current()) const;
  Tensor swapaxes(int64_t axis0, int64_t axis1, Loc loc = Loc::current()) const { return transpose(axis0, axis1, loc); }
  Tensor swapdims(int64_t dim0, int64_t dim1, Loc loc = Loc::current()) const { return transpose(dim0, dim1, loc); }
  // other's dtype (and device, for to(other)).
  Tensor type_as(const Tensor& other, Loc loc = Loc::current()) const { return to(other.dtype(), loc); }
  Tensor to(const Tensor& other, Loc loc = Loc::current()) const { return to(other.device(), other.dtype(), loc); }
  Tensor to(const Tensor& other, bool non_blocking, bool copy = false, Loc loc = Loc::current()) const {
    return to(other.device(), other.dtype(), non_blocking, copy, loc);
  }
  // Factories of self's dtype and device unless options say otherwise, as LibTorch's new_* methods.
  Tensor new_empty(const SymIntList& size, std::optional<TensorOptions> options = {}, Loc loc = Loc::current()) const;
  Tensor new_zeros(const SymIntList& size, std::optional<TensorOptions> options = {}, Loc loc = Loc::current()) const;
  Tensor new_ones(const SymIntList& size, std::optional<TensorOptions> options = {}, Loc loc = Loc::current()) const;
  Tensor new_full(const SymIntList& size, const Scalar& fill_value, std::optional<TensorOptions> options = {},
                  Loc loc = Loc::current()) const;

 private:
  TensorOptions merged_options(const std::optional<TensorOptions>& options) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Operators follow PyTorch: broadcasting, type promotion, C++ numbers as weak scalars.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator~(const Tensor& a);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, const Scalar& b);
Tensor& operator-=(Tensor& a, const Scalar& b);
Tensor& operator*=(Tensor& a, const Scalar& b);
Tensor& operator/=(Tensor& a, const Scalar& b);

// Contiguous strides for sizes, or channels-last strides (rank 4) for kChannelsLast.
SymIntList contiguous_strides(const SymIntList& sizes, MemoryFormat format = MemoryFormat::kContiguous);
// A new tensor of the given meta's sizes/strides/dtype/device; meta-only when `with_data` is false.
Tensor empty_from_meta(const TensorMeta& meta, bool with_data = true);
// Wraps existing memory (not copied). `deleter` runs when the last view dies; none means the caller owns it.
Tensor from_blob(void* data, const SymIntList& sizes, const TensorOptions& options = {},
                 std::function<void(void*)> deleter = {});
Tensor from_blob(void* data, const SymIntList& sizes, const SymIntList& strides, const TensorOptions& options = {},
                 std::function<void(void*)> deleter = {});
// Copies a vector into a new tensor of the element type's dtype (or `dtype` when given), reshaped to `sizes`.
template <class T>
Tensor from_vector(const std::vector<T>& values, const SymIntList& sizes = {}, std::optional<DType> dtype = {});

// The dtype that C++ element type T maps to.
template <class T>
DType dtype_of();

}  // namespace sinter
