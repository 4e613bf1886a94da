// Tensor's functional op methods (x.sin(), x.max(1), x.where(mask, y), ...): each calls the free function of
// ops.h with self first, so a method and its function cannot differ.
#include "sinter/ops.h"

namespace sinter {

namespace {

// The method forms take plain dim lists, where an empty list means every dim.
OptDims all_if_empty(const DimList& dims) { return dims.empty() ? OptDims() : OptDims(dims); }

}  // namespace

// ---- pointwise ----
#define SINTER_DEFINE_UNARY_METHOD(_, name) \
  Tensor Tensor::name(Loc loc) const { return sinter::name(*this, loc); }
SINTER_UNARY_NAMES(SINTER_DEFINE_UNARY_METHOD, _)
SINTER_DEFINE_UNARY_METHOD(_, relu6)
#undef SINTER_DEFINE_UNARY_METHOD
#define SINTER_DEFINE_BINARY_METHOD(_, name)                                                                    \
  Tensor Tensor::name(const Tensor& other, Loc loc) const { return sinter::name(*this, other, loc); }
#define SINTER_DEFINE_BINARY_TS_METHOD(_, name)                                                                 \
  SINTER_DEFINE_BINARY_METHOD(_, name)                                                                          \
  Tensor Tensor::name(const Scalar& other, Loc loc) const { return sinter::name(*this, other, loc); }
SINTER_BINARY_TS_NAMES(SINTER_DEFINE_BINARY_TS_METHOD, _)
SINTER_BINARY_T_NAMES(SINTER_DEFINE_BINARY_METHOD, _)
SINTER_DEFINE_BINARY_METHOD(_, matmul)
SINTER_DEFINE_BINARY_METHOD(_, mm)
SINTER_DEFINE_BINARY_METHOD(_, bmm)
SINTER_DEFINE_BINARY_METHOD(_, masked_select)
#undef SINTER_DEFINE_BINARY_TS_METHOD
#undef SINTER_DEFINE_BINARY_METHOD
Tensor Tensor::add(const Tensor& other, const Scalar& alpha, Loc loc) const {
  return sinter::add(*this, other, alpha, loc);
}
Tensor Tensor::add(const Scalar& other, const Scalar& alpha, Loc loc) const {
  return sinter::add(*this, other, alpha, loc);
}
Tensor Tensor::sub(const Tensor& other, const Scalar& alpha, Loc loc) const {
  return sinter::sub(*this, other, alpha, loc);
}
Tensor Tensor::sub(const Scalar& other, const Scalar& alpha, Loc loc) const {
  return sinter::sub(*this, other, alpha, loc);
}
Tensor Tensor::div(const Tensor& other, const std::optional<std::string>& rounding_mode, Loc loc) const {
  return sinter::div(*this, other, rounding_mode, loc);
}
Tensor Tensor::div(const Scalar& other, const std::optional<std::string>& rounding_mode, Loc loc) const {
  return sinter::div(*this, other, rounding_mode, loc);
}
Tensor Tensor::pow(const Scalar& exponent, Loc loc) const { return sinter::pow(*this, exponent, loc); }
Tensor Tensor::pow(const Tensor& exponent, Loc loc) const { return sinter::pow(*this, exponent, loc); }
Tensor Tensor::gelu(const std::string& approximate, Loc loc) const { return sinter::gelu(*this, approximate, loc); }
Tensor Tensor::softplus(const Scalar& beta, const Scalar& threshold, Loc loc) const {
  return sinter::softplus(*this, beta, threshold, loc);
}
Tensor Tensor::leaky_relu(const Scalar& negative_slope, Loc loc) const {
  return sinter::leaky_relu(*this, negative_slope, loc);
}
Tensor Tensor::elu(const Scalar& alpha, Loc loc) const { return sinter::elu(*this, alpha, 1, 1, loc); }
Tensor Tensor::hardtanh(const Scalar& min_val, const Scalar& max_val, Loc loc) const {
  return sinter::hardtanh(*this, min_val, max_val, loc);
}
Tensor Tensor::logit(std::optional<double> eps, Loc loc) const { return sinter::logit(*this, eps, loc); }
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf,
                          Loc loc) const {
  return sinter::nan_to_num(*this, nan, posinf, neginf, loc);
}
Tensor Tensor::where(const Tensor& condition, const Tensor& other, Loc loc) const {
  return sinter::where(condition, *this, other, loc);
}
Tensor Tensor::where(const Tensor& condition, const Scalar& other, Loc loc) const {
  return sinter::where(condition, *this, other, loc);
}
Tensor Tensor::lerp(const Tensor& end, const Scalar& weight, Loc loc) const {
  return sinter::lerp(*this, end, weight, loc);
}
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight, Loc loc) const {
  return sinter::lerp(*this, end, weight, loc);
}
Tensor Tensor::addcmul(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value, Loc loc) const {
  return sinter::addcmul(*this, tensor1, tensor2, value, loc);
}
Tensor Tensor::addcdiv(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value, Loc loc) const {
  return sinter::addcdiv(*this, tensor1, tensor2, value, loc);
}
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max, Loc loc) const {
  return sinter::clamp(*this, min, max, loc);
}
Tensor Tensor::clamp_min(const Scalar& min, Loc loc) const { return sinter::clamp_min(*this, min, loc); }
Tensor Tensor::clamp_max(const Scalar& max, Loc loc) const { return sinter::clamp_max(*this, max, loc); }
Tensor Tensor::addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha, Loc loc) const {
  return sinter::addmm(*this, mat1, mat2, beta, alpha, loc);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value, Loc loc) const {
  return sinter::masked_fill(*this, mask, value, loc);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value, Loc loc) const {
  return sinter::masked_fill(*this, mask, value, loc);
}

// ---- reductions, scans, sorting ----
Tensor Tensor::sum(std::optional<DType> dtype, Loc loc) const { return sinter::sum(*this, dtype, loc); }
Tensor Tensor::sum(const DimList& dim, bool keepdim, std::optional<DType> dtype, Loc loc) const {
  return sinter::sum(*this, all_if_empty(dim), keepdim, dtype, loc);
}
Tensor Tensor::mean(std::optional<DType> dtype, Loc loc) const { return sinter::mean(*this, dtype, loc); }
Tensor Tensor::mean(const DimList& dim, bool keepdim, std::optional<DType> dtype, Loc loc) const {
  return sinter::mean(*this, all_if_empty(dim), keepdim, dtype, loc);
}
Tensor Tensor::prod(std::optional<DType> dtype, Loc loc) const { return sinter::prod(*this, dtype, loc); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<DType> dtype, Loc loc) const {
  return sinter::prod(*this, dim, keepdim, dtype, loc);
}
Tensor Tensor::amax(const DimList& dim, bool keepdim, Loc loc) const { return sinter::amax(*this, dim, keepdim, loc); }
Tensor Tensor::amin(const DimList& dim, bool keepdim, Loc loc) const { return sinter::amin(*this, dim, keepdim, loc); }
Tensor Tensor::max(Loc loc) const { return sinter::max(*this, loc); }
Tensor Tensor::min(Loc loc) const { return sinter::min(*this, loc); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim, Loc loc) const {
  return sinter::max(*this, dim, keepdim, loc);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim, Loc loc) const {
  return sinter::min(*this, dim, keepdim, loc);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim, Loc loc) const {
  return sinter::argmax(*this, dim, keepdim, loc);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim, Loc loc) const {
  return sinter::argmin(*this, dim, keepdim, loc);
}
Tensor Tensor::var(const DimList& dim, const std::optional<Scalar>& correction, bool keepdim, Loc loc) const {
  return sinter::var(*this, all_if_empty(dim), correction, keepdim, loc);
}
Tensor Tensor::std(const DimList& dim, const std::optional<Scalar>& correction, bool keepdim, Loc loc) const {
  return sinter::std(*this, all_if_empty(dim), correction, keepdim, loc);
}
Tensor Tensor::all(Loc loc) const { return sinter::all(*this, loc); }
Tensor Tensor::any(Loc loc) const { return sinter::any(*this, loc); }
Tensor Tensor::all(const DimList& dim, bool keepdim, Loc loc) const { return sinter::all(*this, dim, keepdim, loc); }
Tensor Tensor::any(const DimList& dim, bool keepdim, Loc loc) const { return sinter::any(*this, dim, keepdim, loc); }
Tensor Tensor::norm(const std::optional<Scalar>& p, const DimList& dim, bool keepdim, Loc loc) const {
  return sinter::norm(*this, p, dim, keepdim, loc);
}
Tensor Tensor::logsumexp(const DimList& dim, bool keepdim, Loc loc) const {
  return sinter::logsumexp(*this, dim, keepdim, loc);
}
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype, Loc loc) const {
  return sinter::cumsum(*this, dim, dtype, loc);
}
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype, Loc loc) const {
  return sinter::cumprod(*this, dim, dtype, loc);
}
Tensor Tensor::softmax(int64_t dim, std::optional<DType> dtype, Loc loc) const {
  return sinter::softmax(*this, dim, dtype, loc);
}
Tensor Tensor::log_softmax(int64_t dim, std::optional<DType> dtype, Loc loc) const {
  return sinter::log_softmax(*this, dim, dtype, loc);
}
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, Loc loc) const {
  return sinter::sort(*this, dim, descending, loc);
}
Tensor Tensor::argsort(int64_t dim, bool descending, Loc loc) const {
  return sinter::argsort(*this, dim, descending, loc);
}
std::tuple<Tensor, Tensor> Tensor::topk(const SymInt& k, int64_t dim, bool largest, bool sorted, Loc loc) const {
  return sinter::topk(*this, k, dim, largest, sorted, loc);
}
Tensor Tensor::nonzero(Loc loc) const { return sinter::nonzero(*this, loc); }

// ---- indexing, reordering ----
Tensor Tensor::index_select(int64_t dim, const Tensor& index, Loc loc) const {
  return sinter::index_select(*this, dim, index, loc);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index, Loc loc) const {
  return sinter::gather(*this, dim, index, loc);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src, Loc loc) const {
  return sinter::scatter(*this, dim, index, src, loc);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value, Loc loc) const {
  return sinter::scatter(*this, dim, index, value, loc);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src, Loc loc) const {
  return sinter::scatter_add(*this, dim, index, src, loc);
}
Tensor Tensor::repeat(const SymIntList& repeats, Loc loc) const { return sinter::repeat(*this, repeats, loc); }
Tensor Tensor::roll(const SymIntList& shifts, const DimList& dims, Loc loc) const {
  return sinter::roll(*this, shifts, dims, loc);
}
Tensor Tensor::movedim(const DimList& source, const DimList& destination, Loc loc) const {
  return sinter::movedim(*this, source, destination, loc);
}
Tensor Tensor::flip(const DimList& dims, Loc loc) const { return sinter::flip(*this, dims, loc); }
Tensor Tensor::tril(int64_t diagonal, Loc loc) const { return sinter::tril(*this, diagonal, loc); }
Tensor Tensor::triu(int64_t diagonal, Loc loc) const { return sinter::triu(*this, diagonal, loc); }

// ---- factories like self: options given override self's, a dtype left unset stays self's ----
TensorOptions Tensor::merged_options(const std::optional<TensorOptions>& options) const {
  if (!options) return this->options();
  return options->has_dtype() ? *options : options->dtype(dtype());
}
Tensor Tensor::new_empty(const SymIntList& size, std::optional<TensorOptions> options, Loc loc) const {
  return sinter::empty(size, merged_options(options), loc);
}
Tensor Tensor::new_zeros(const SymIntList& size, std::optional<TensorOptions> options, Loc loc) const {
  return sinter::zeros(size, merged_options(options), loc);
}
Tensor Tensor::new_ones(const SymIntList& size, std::optional<TensorOptions> options, Loc loc) const {
  return sinter::ones(size, merged_options(options), loc);
}
Tensor Tensor::new_full(const SymIntList& size, const Scalar& fill_value, std::optional<TensorOptions> options,
                        Loc loc) const {
  return sinter::full(size, fill_value, merged_options(options), loc);
}

}  // namespace sinter
