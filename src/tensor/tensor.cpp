// Tensor's own members: shape access, layout queries, data access, construction from memory.
#include "sinter/tensor.h"

#include <fmt/format.h>

#include <limits>

#include "tensor/allocator.h"
#include "tensor/cuda_device.h"
#include "tensor/dims.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/read_hook.h"
#include "support/check.h"

namespace sinter {

const TensorMeta& Tensor::meta() const {
  if (!impl_) throw Error("this tensor is undefined (default-constructed); it has no sizes, dtype or data");
  return impl_->meta;
}

namespace {
thread_local ReadHook* tls_read_hook = nullptr;
}  // namespace

ReadHook* current_read_hook() { return tls_read_hook; }
void set_current_read_hook(ReadHook* hook) { tls_read_hook = hook; }

Tensor read_grad_field(const Tensor& owner) {
  if (ReadHook* hook = tls_read_hook; hook && !owner.impl()->trace) return hook->read_grad(owner);
  return owner.impl()->grad ? Tensor(owner.impl()->grad) : Tensor();
}

void write_grad_field(const Tensor& owner, const Tensor& grad) {
  if (ReadHook* hook = tls_read_hook; hook && !owner.impl()->trace) return hook->write_grad(owner, grad);
  owner.impl()->grad = grad.defined() ? grad.impl_ptr() : nullptr;
}

Tensor Tensor::grad() const { return impl_ ? read_grad_field(*this) : Tensor(); }

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a 0-dim tensor accepts dim 0 and -1, as in PyTorch
  SINTER_CHECK(dim >= -n && dim < n, "dim {} is out of range for a tensor of rank {} (expected in [{}, {}])", dim,
               ndim, -n, n - 1);
  return dim < 0 ? dim + n : dim;
}

namespace {
// size(d) and stride(d) do not treat a 0-dim tensor as having one dim (unlike ops' dim arguments, which PyTorch
// wraps with rank 1): there is no size to return, so it is an error, as PyTorch's IndexError.
int64_t wrap_existing_dim(const char* what, int64_t d, int64_t ndim) {
  SINTER_CHECK(ndim > 0, "{}({}): dimension specified as {} but tensor has no dimensions", what, d, d);
  return wrap_dim(d, ndim);
}
}  // namespace

SymInt Tensor::size(int64_t d) const { return meta().sizes[wrap_existing_dim("size", d, dim())]; }
SymInt Tensor::stride(int64_t d) const { return meta().strides[wrap_existing_dim("stride", d, dim())]; }

bool Tensor::is_contiguous(MemoryFormat format) const {
  const TensorMeta& m = meta();
  if (format == MemoryFormat::kChannelsLast) {
    if (m.sizes.size() != 4) return false;
    // Order of dims from innermost: C, W, H, N. Size-1 dims may have any stride, as in PyTorch.
    static constexpr int kOrder[] = {1, 3, 2, 0};
    int64_t expected = 1;
    for (int d : kOrder) {
      int64_t size = m.sizes[d].hint();
      if (size == 0) return true;
      if (size != 1 && m.strides[d].hint() != expected) return false;
      expected *= size;
    }
    return true;
  }
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    int64_t size = m.sizes[d].hint();
    if (size == 0) return true;
    if (size != 1 && m.strides[d].hint() != expected) return false;
    expected *= size;
  }
  return true;
}

void* Tensor::data_ptr() const {
  if (!has_storage()) {
    if (!impl_) throw Error("data_ptr() of an undefined tensor");
    throw Error("data_ptr(): this tensor has no data (it is a meta tensor, e.g. one traced during capture)");
  }
  return static_cast<char*>(impl_->storage->data()) + meta().offset.hint() * static_cast<int64_t>(element_size());
}

Tensor& Tensor::requires_grad_(bool on) {
  SINTER_CHECK(!on || is_floating(dtype()), "only floating point tensors can require gradients (got {})",
               dtype_name(dtype()));
  SINTER_CHECK(on || !impl_->grad_fn,
               "you can only change requires_grad flags of leaf tensors; to use a computed tensor where no gradient "
               "should flow, use its detach()");
  impl_->requires_grad = on;
  return *this;
}

namespace {
// Host code reading data: while capture is active the hook turns the read into a graph break and gives back a
// real tensor with the values (on the device the program put them on).
Tensor readable(const Tensor& t, std::string_view what, const Loc& loc) {
  if (!t.defined()) detail::throw_user_error_at(loc, fmt::format("{} of an undefined tensor", what));
  Tensor r = t;
  if (ReadHook* hook = current_read_hook()) r = hook->materialize(t, what, loc);
  if (r.is_meta())
    detail::throw_user_error_at(loc, fmt::format("{}: this tensor has no data (a meta tensor)", what));
  return r.is_cuda() ? cuda::host_values(r) : r;
}
}  // namespace

template <class T>
T Tensor::item(Loc loc) const {
  Tensor t = readable(*this, "item()", loc);
  SINTER_CHECK_AT(loc, t.numel().hint() == 1, "item(): a tensor with {} elements cannot be converted to a scalar",
                  t.numel().hint());
  return visit_dtype(t.dtype(), [&]<class S>() -> T { return cast_to<T>(*t.data_ptr<S>()); });
}

Scalar Tensor::item_scalar(Loc loc) const {
  Tensor t = readable(*this, "item()", loc);
  SINTER_CHECK_AT(loc, t.numel().hint() == 1, "item(): a tensor with {} elements cannot be converted to a scalar",
                  t.numel().hint());
  if (is_floating(t.dtype())) return Scalar(t.item<double>(loc));
  if (t.dtype() == kBool) return Scalar(t.item<bool>(loc));
  return Scalar(t.item<int64_t>(loc));
}

template <class T>
std::vector<T> Tensor::to_vector(Loc loc) const {
  // Walked by its strides (a contiguous() here would dispatch, and under capture be recorded).
  Tensor t = readable(*this, "to_vector()", loc);
  int64_t n = t.numel().hint();
  std::vector<T> out(static_cast<size_t>(n));
  std::vector<int64_t> sizes = t.sizes().hints(), strides = t.strides().hints(), index(sizes.size(), 0);
  visit_dtype(t.dtype(), [&]<class S>() {
    const S* p = t.data_ptr<S>();
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      out[i] = cast_to<T>(p[at]);
      for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
        at += strides[d];
        if (++index[d] < sizes[d]) break;
        at -= strides[d] * sizes[d];
        index[d] = 0;
      }
    }
  });
  return out;
}

Tensor::operator bool() const {
  Tensor t = readable(*this, "bool(tensor)", Loc());
  if (t.numel().hint() != 1)
    throw Error(fmt::format("bool(tensor): the truth value of a tensor with {} elements is ambiguous",
                            t.numel().hint()));
  return t.item<bool>(Loc());
}

#define SINTER_INSTANTIATE_READS(T)                  \
  template T Tensor::item<T>(Loc) const;             \
  template std::vector<T> Tensor::to_vector<T>(Loc) const;
SINTER_INSTANTIATE_READS(float)
SINTER_INSTANTIATE_READS(double)
SINTER_INSTANTIATE_READS(int64_t)
SINTER_INSTANTIATE_READS(int32_t)
SINTER_INSTANTIATE_READS(int8_t)
SINTER_INSTANTIATE_READS(uint8_t)
SINTER_INSTANTIATE_READS(bool)
#undef SINTER_INSTANTIATE_READS

SymIntList contiguous_strides(const SymIntList& sizes, MemoryFormat format) {
  SymIntList strides(sizes.size(), SymInt(1));
  if (format == MemoryFormat::kChannelsLast && sizes.size() == 4) {
    // N, H, W, C in memory.
    strides[1] = 1;
    strides[3] = sym_max(sizes[1], 1);
    strides[2] = strides[3] * sym_max(sizes[3], 1);
    strides[0] = strides[2] * sym_max(sizes[2], 1);
    return strides;
  }
  SymInt s = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s = s * sym_max(sizes[d], 1);
  }
  return strides;
}

namespace {
// Bytes needed to hold every element a (sizes, strides, offset) view can reach.
size_t storage_bytes(const TensorMeta& m) {
  int64_t last = m.offset.hint();
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    int64_t size = m.sizes[d].hint();
    if (size == 0) return 0;
    last += (size - 1) * m.strides[d].hint();
  }
  return static_cast<size_t>(last + 1) * element_size(m.dtype);
}

void check_sizes(const SymIntList& sizes) {
  __int128 total = 1;
  for (const SymInt& s : sizes) {
    if (s.hint() < 0) throw Error(fmt::format("negative size {} in sizes {}", s.hint(), sizes.str()));
    total *= s.hint();
    if (total > std::numeric_limits<int64_t>::max() / 16)
      throw Error(fmt::format("sizes {} overflow: too many elements", sizes.str()));
  }
}
}  // namespace

Tensor empty_from_meta(const TensorMeta& meta, bool with_data) {
  if (with_data) return empty_with_allocator(meta, allocator_for(meta.device));
  check_sizes(meta.sizes);
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = meta;
  return Tensor(std::move(impl));
}

Tensor empty_with_allocator(const TensorMeta& meta, Allocator& allocator) {
  check_sizes(meta.sizes);
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = meta;
  size_t nbytes = storage_bytes(meta);
  impl->storage = std::make_shared<Storage>(allocator.allocate(nbytes), nbytes, meta.device);
  return Tensor(std::move(impl));
}

Tensor empty_pinned(const TensorMeta& meta) {
  SINTER_CHECK(meta.device.is_cpu(), "only dense CPU tensors can be pinned, not a {} tensor", meta.device.str());
  return empty_with_allocator(meta, cuda::pinned_allocator());
}

Tensor from_blob(void* data, const SymIntList& sizes, const SymIntList& strides, const TensorOptions& options,
                 std::function<void(void*)> deleter) {
  SINTER_CHECK(sizes.size() == strides.size(), "from_blob: sizes {} and strides {} differ in rank", sizes.str(),
               strides.str());
  check_sizes(sizes);
  TensorMeta meta{sizes, strides, 0, options.dtype(), options.device()};
  size_t nbytes = storage_bytes(meta);
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = std::move(meta);
  impl->storage = std::make_shared<Storage>(DataPtr{data, std::move(deleter)}, nbytes, options.device());
  impl->requires_grad = options.requires_grad();
  return Tensor(std::move(impl));
}

Tensor from_blob(void* data, const SymIntList& sizes, const TensorOptions& options,
                 std::function<void(void*)> deleter) {
  return from_blob(data, sizes, contiguous_strides(sizes), options, std::move(deleter));
}

template <class T>
DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return kFloat32;
  else if constexpr (std::is_same_v<T, double>) return kFloat64;
  else if constexpr (std::is_same_v<T, Half>) return kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return kBFloat16;
  else if constexpr (std::is_same_v<T, int64_t>) return kInt64;
  else if constexpr (std::is_same_v<T, int32_t>) return kInt32;
  else if constexpr (std::is_same_v<T, int8_t>) return kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>) return kUInt8;
  else if constexpr (std::is_same_v<T, bool>) return kBool;
  else static_assert(sizeof(T) == 0, "no dtype for this C++ type");
}

template <class T>
Tensor from_vector(const std::vector<T>& values, const SymIntList& sizes, std::optional<DType> dtype) {
  SymIntList shape = sizes.empty() ? SymIntList{static_cast<int64_t>(values.size())} : sizes;
  check_sizes(shape);
  SINTER_CHECK(sym_product(shape).hint() == static_cast<int64_t>(values.size()),
               "from_vector: {} values do not fill sizes {}", values.size(), shape.str());
  DType target = dtype.value_or(dtype_of<T>());
  Tensor out = empty_from_meta({shape, contiguous_strides(shape), 0, target, kCPU});
  visit_dtype(target, [&]<class D>() {
    D* p = out.data_ptr<D>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = cast_to<D>(static_cast<T>(values[i]));
  });
  return out;
}

#define SINTER_INSTANTIATE_VECTOR(T)                                                                  \
  template DType dtype_of<T>();                                                                      \
  template Tensor from_vector<T>(const std::vector<T>&, const SymIntList&, std::optional<DType>);
SINTER_INSTANTIATE_VECTOR(float)
SINTER_INSTANTIATE_VECTOR(double)
SINTER_INSTANTIATE_VECTOR(int64_t)
SINTER_INSTANTIATE_VECTOR(int32_t)
SINTER_INSTANTIATE_VECTOR(int8_t)
SINTER_INSTANTIATE_VECTOR(uint8_t)
SINTER_INSTANTIATE_VECTOR(bool)
#undef SINTER_INSTANTIATE_VECTOR

}  // namespace sinter
