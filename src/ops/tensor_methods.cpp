// Tensor's methods (views, conversions, in-place ops) and the free operators; the functional op methods are in
// tensor_op_methods.cpp.
// Methods call the free functions of ops.h; in-place methods dispatch their `_` rows. Operators cannot take a
// defaulted source location, so they pass an empty one and errors they raise say the location is unknown.
#include "ops/copy.h"
#include "ops/dispatch.h"
#include "ops/index_loop.h"  // strides_like_channels_last
#include "sinter/ops.h"
#include "support/check.h"
#include "tensor/allocator.h"

namespace sinter {

namespace {

// Operators have no caller location (a default argument cannot follow an operator's operands).
constexpr Loc kNoLoc{};

// The memory format PyTorch suggests for a tensor: channels-last when its strides look it, else contiguous.
MemoryFormat suggest_memory_format(const Tensor& t) {
  return strides_like_channels_last(t) ? MemoryFormat::kChannelsLast : MemoryFormat::kContiguous;
}

// PyTorch's to() returns self when nothing would change (to_will_alias) unless asked to copy, else one
// _to_copy. A copy to the CPU lands in pinned memory when `pinned` (options with pinned_memory) or when it is a
// non-blocking copy from a CUDA tensor, so that it can be queued (PyTorch's _to_copy pins its result then too);
// under capture the traced copy has no memory to pin.
Tensor to_impl(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device,
               std::optional<MemoryFormat> format, bool non_blocking, bool copy, const Loc& loc,
               bool pinned = false) {
  bool same_dtype = !dtype || *dtype == self.dtype();
  bool same_device = !device || *device == self.device();
  bool same_format = !format || *format == MemoryFormat::kPreserve || suggest_memory_format(self) == *format;
  if (same_dtype && same_device && same_format && !copy) return self;
  bool to_cpu = device ? device->is_cpu() : self.is_cpu();
  SINTER_CHECK_AT(loc, !pinned || to_cpu, "only dense CPU tensors can be pinned (the options ask for a {} tensor in "
                  "pinned memory)", device ? device->str() : self.device().str());
  Args args{self, dtype, device, format, non_blocking};
  if ((pinned || (non_blocking && self.is_cuda() && to_cpu)) && !current_hook())
    return run_pinned(OpId::to_copy, std::move(args), loc);
  return dispatch1(OpId::to_copy, std::move(args), loc);
}

std::optional<DType> options_dtype(const TensorOptions& options) {
  return options.has_dtype() ? std::optional<DType>(options.dtype()) : std::nullopt;
}
std::optional<Device> options_device(const TensorOptions& options) {
  return options.has_device() ? std::optional<Device>(options.device()) : std::nullopt;
}

}  // namespace

// ---- views ----
Tensor Tensor::view(const SymIntList& size, Loc loc) const { return sinter::view(*this, size, loc); }
Tensor Tensor::reshape(const SymIntList& size, Loc loc) const { return sinter::reshape(*this, size, loc); }
Tensor Tensor::view_as(const Tensor& other, Loc loc) const { return sinter::view(*this, other.sizes(), loc); }
Tensor Tensor::reshape_as(const Tensor& other, Loc loc) const {
  return sinter::reshape(*this, other.sizes(), loc);
}
Tensor Tensor::permute(const DimList& dims, Loc loc) const { return sinter::permute(*this, dims, loc); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1, Loc loc) const {
  return sinter::transpose(*this, dim0, dim1, loc);
}
Tensor Tensor::t(Loc loc) const { return sinter::t(*this, loc); }
// x.mT -> transpose(x, -2, -1), for matrices and batches of them.
Tensor Tensor::mT(Loc loc) const {
  SINTER_CHECK_AT(loc, dim() >= 2,
                  "mT is only supported on matrices or batches of matrices, got a {}-D tensor", dim());
  return sinter::transpose(*this, -2, -1, loc);
}
Tensor Tensor::expand(const SymIntList& size, Loc loc) const { return sinter::expand(*this, size, loc); }
Tensor Tensor::expand_as(const Tensor& other, Loc loc) const {
  return sinter::expand(*this, other.sizes(), loc);
}
Tensor Tensor::squeeze(Loc loc) const { return sinter::squeeze(*this, loc); }
Tensor Tensor::squeeze(const DimList& dims, Loc loc) const { return sinter::squeeze(*this, dims, loc); }
Tensor Tensor::unsqueeze(int64_t dim, Loc loc) const { return sinter::unsqueeze(*this, dim, loc); }
Tensor Tensor::narrow(int64_t dim, const SymInt& start, const SymInt& length, Loc loc) const {
  return sinter::narrow(*this, dim, start, length, loc);
}
Tensor Tensor::slice(int64_t dim, std::optional<SymInt> start, std::optional<SymInt> end, const SymInt& step,
                     Loc loc) const {
  return sinter::slice(*this, dim, std::move(start), std::move(end), step, loc);
}
Tensor Tensor::select(int64_t dim, const SymInt& index, Loc loc) const {
  return sinter::select(*this, dim, index, loc);
}
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim, Loc loc) const {
  return sinter::flatten(*this, start_dim, end_dim, loc);
}
Tensor Tensor::unflatten(int64_t dim, const SymIntList& sizes, Loc loc) const {
  return sinter::unflatten(*this, dim, sizes, loc);
}
Tensor Tensor::as_strided(const SymIntList& size, const SymIntList& stride, std::optional<SymInt> offset,
                          Loc loc) const {
  return sinter::as_strided(*this, size, stride, std::move(offset), loc);
}
std::vector<Tensor> Tensor::split(const SymInt& split_size, int64_t dim, Loc loc) const {
  return sinter::split(*this, split_size, dim, loc);
}
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim, Loc loc) const {
  return sinter::split(*this, SymInt(split_size), dim, loc);
}
std::vector<Tensor> Tensor::split(const SymIntList& sizes, int64_t dim, Loc loc) const {
  return sinter::split(*this, sizes, dim, loc);
}
std::vector<Tensor> Tensor::split(std::initializer_list<SymInt> sizes, int64_t dim, Loc loc) const {
  return sinter::split(*this, SymIntList(sizes), dim, loc);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim, Loc loc) const {
  return sinter::chunk(*this, chunks, dim, loc);
}
std::vector<Tensor> Tensor::unbind(int64_t dim, Loc loc) const { return sinter::unbind(*this, dim, loc); }
Tensor Tensor::operator[](int64_t index) const { return sinter::select(*this, 0, index, kNoLoc); }

// ---- copies and conversions ----
Tensor Tensor::contiguous(MemoryFormat format, Loc loc) const {
  return sinter::contiguous(*this, format, loc);
}
Tensor Tensor::clone(std::optional<MemoryFormat> format, Loc loc) const {
  return sinter::clone(*this, format, loc);
}
Tensor& Tensor::copy_(const Tensor& src, Loc loc) { return copy_(src, false, loc); }
Tensor& Tensor::copy_(const Tensor& src, bool non_blocking, Loc loc) {
  dispatch1(OpId::copy_, {*this, src, non_blocking}, loc);
  return *this;
}
Tensor Tensor::to(DType dtype, Loc loc) const { return to(dtype, false, false, loc); }
Tensor Tensor::to(Device device, Loc loc) const { return to(device, false, false, loc); }
Tensor Tensor::to(Device device, DType dtype, Loc loc) const { return to(device, dtype, false, false, loc); }
Tensor Tensor::to(MemoryFormat format, Loc loc) const {
  return to_impl(*this, std::nullopt, std::nullopt, format, false, false, loc);
}
Tensor Tensor::to(const TensorOptions& options, Loc loc) const { return to(options, false, false, loc); }
Tensor Tensor::to(DType dtype, bool non_blocking, bool copy, Loc loc) const {
  return to_impl(*this, dtype, std::nullopt, std::nullopt, non_blocking, copy, loc);
}
Tensor Tensor::to(Device device, bool non_blocking, bool copy, Loc loc) const {
  return to_impl(*this, std::nullopt, device, std::nullopt, non_blocking, copy, loc);
}
Tensor Tensor::to(Device device, DType dtype, bool non_blocking, bool copy, Loc loc) const {
  return to_impl(*this, dtype, device, std::nullopt, non_blocking, copy, loc);
}
// What options leave unset is kept, as LibTorch's to(TensorOptions); pinned_memory pins a copy to the host.
Tensor Tensor::to(const TensorOptions& options, bool non_blocking, bool copy, Loc loc) const {
  return to_impl(*this, options_dtype(options), options_device(options), std::nullopt, non_blocking, copy, loc,
                 options.pinned_memory());
}

Tensor Tensor::pin_memory(Loc loc) const {
  SINTER_CHECK_AT(loc, defined(), "pin_memory() of an undefined tensor");
  SINTER_CHECK_AT(loc, is_cpu(), "cannot pin a {} tensor: only dense CPU tensors can be pinned", device().str());
  if (is_pinned()) return *this;
  // The copy reads the data: under capture that is a graph break, as any host read.
  Tensor src = *this;
  if (ReadHook* hook = current_read_hook()) src = hook->materialize(*this, "pin_memory()", loc);
  SINTER_CHECK_AT(loc, src.has_storage(), "pin_memory(): this tensor has no data (a meta tensor)");
  TensorMeta m = src.meta();
  m.offset = 0;
  bool broadcast = false;
  for (int64_t d = 0; d < dim(); ++d) broadcast = broadcast || (m.sizes[d].hint() > 1 && m.strides[d].hint() == 0);
  if (broadcast) m.strides = contiguous_strides(m.sizes);
  Tensor out = empty_pinned(m);
  copy_strided(out, src);
  return out;
}

// ---- in place ----
Tensor& Tensor::fill_(const Scalar& value, Loc loc) {
  dispatch1(OpId::fill__Scalar, {*this, value}, loc);
  return *this;
}
Tensor& Tensor::zero_(Loc loc) {
  dispatch1(OpId::zero_, {*this}, loc);
  return *this;
}
Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha, Loc loc) {
  dispatch1(OpId::add__Tensor, {*this, other, alpha}, loc);
  return *this;
}
Tensor& Tensor::add_(const Scalar& other, const Scalar& alpha, Loc loc) {
  dispatch1(OpId::add__Scalar, {*this, other, alpha}, loc);
  return *this;
}
Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha, Loc loc) {
  dispatch1(OpId::sub__Tensor, {*this, other, alpha}, loc);
  return *this;
}
Tensor& Tensor::sub_(const Scalar& other, const Scalar& alpha, Loc loc) {
  dispatch1(OpId::sub__Scalar, {*this, other, alpha}, loc);
  return *this;
}
Tensor& Tensor::mul_(const Tensor& other, Loc loc) {
  dispatch1(OpId::mul__Tensor, {*this, other}, loc);
  return *this;
}
Tensor& Tensor::mul_(const Scalar& other, Loc loc) {
  dispatch1(OpId::mul__Scalar, {*this, other}, loc);
  return *this;
}
Tensor& Tensor::div_(const Tensor& other, Loc loc) {
  dispatch1(OpId::div__Tensor, {*this, other}, loc);
  return *this;
}
Tensor& Tensor::div_(const Scalar& other, Loc loc) {
  dispatch1(OpId::div__Scalar, {*this, other}, loc);
  return *this;
}
Tensor& Tensor::pow_(const Scalar& exponent, Loc loc) {
  dispatch1(OpId::pow__Scalar, {*this, exponent}, loc);
  return *this;
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max, Loc loc) {
  dispatch1(OpId::clamp_, {*this, min, max}, loc);
  return *this;
}
#define SINTER_DEFINE_UNARY_INPLACE(_, name)     \
  Tensor& Tensor::name##_(Loc loc) {              \
    dispatch1(OpId::name##_, {*this}, loc);       \
    return *this;                                 \
  }
SINTER_UNARY_INPLACE_NAMES(SINTER_DEFINE_UNARY_INPLACE, _)
#undef SINTER_DEFINE_UNARY_INPLACE
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value, Loc loc) {
  dispatch1(OpId::masked_fill__Scalar, {*this, mask, value}, loc);
  return *this;
}
Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate,
                           Loc loc) {
  dispatch1(OpId::index_put_, {*this, indices, values, accumulate}, loc);
  return *this;
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src, Loc loc) {
  dispatch1(OpId::scatter__src, {*this, dim, index, src}, loc);
  return *this;
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src, Loc loc) {
  dispatch1(OpId::scatter_add_, {*this, dim, index, src}, loc);
  return *this;
}
Tensor& Tensor::uniform_(double from, double to, Loc loc) {
  dispatch1(OpId::uniform_, {*this, from, to}, loc);
  return *this;
}
Tensor& Tensor::normal_(double mean, double std, Loc loc) {
  dispatch1(OpId::normal_, {*this, mean, std}, loc);
  return *this;
}

// ---- operators: C++ numbers are weak scalars, as Python numbers are in PyTorch ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b, 1, kNoLoc); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b, 1, kNoLoc); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b, kNoLoc); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b, kNoLoc); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b, 1, kNoLoc); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b, 1, kNoLoc); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b, kNoLoc); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b, kNoLoc); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a, 1, kNoLoc); }
// s - t -> rsub(t, s).
Tensor operator-(const Scalar& a, const Tensor& b) { return rsub(b, a, 1, kNoLoc); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a, kNoLoc); }
// s / t -> reciprocal(t) * s, as PyTorch's __rtruediv__ (an integer t gives a float result).
Tensor operator/(const Scalar& a, const Tensor& b) { return mul(reciprocal(b, kNoLoc), a, kNoLoc); }
Tensor operator-(const Tensor& a) { return neg(a, kNoLoc); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b, kNoLoc); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b, kNoLoc); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b, kNoLoc); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b, kNoLoc); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b, kNoLoc); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b, kNoLoc); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b, kNoLoc); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b, kNoLoc); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b, kNoLoc); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b, kNoLoc); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b, kNoLoc); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b, kNoLoc); }
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b, kNoLoc); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b, kNoLoc); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b, kNoLoc); }
Tensor operator~(const Tensor& a) { return bitwise_not(a, kNoLoc); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b, 1, kNoLoc); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b, 1, kNoLoc); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b, kNoLoc); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b, kNoLoc); }
Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b, 1, kNoLoc); }
Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b, 1, kNoLoc); }
Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b, kNoLoc); }
Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b, kNoLoc); }

}  // namespace sinter
